//! History: endpoint 6, the check results of a monitor or of one crawled page, newest first,
//! with the diff against the previous value on request.

use super::AppState;
use super::auth::CurrentUser;
use super::body::{ApiJson, ApiQuery};
use super::problem::{ApiError, Problem};
use crate::store::{TimeKey, TimePage};
use axum::extract::{Path, State};
use serde::Deserialize;
use wachet::model::{ClientData, ClientDataRange};

/// How far back a diff looks past the page for the previous value (past failed checks).
const DIFF_LOOKBACK: u32 = 100;

/// Query of the history listing.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
pub struct DataQuery {
    /// Oldest check time included (ISO 8601).
    from: Option<String>,
    /// Newest check time included (ISO 8601).
    to: Option<String>,
    /// Entries per page, 1 to 500, default 50.
    count: Option<i64>,
    /// Fill `diff` of each entry with the change against the previous value.
    #[serde(default)]
    return_diff: bool,
    /// Where the next page starts, from the previous page.
    continuation_token: Option<String>,
}

/// Endpoint 6: one page of history, newest first.
#[utoipa::path(get, path = "/thirdparty/v1/data/list/{id}", tag = "data",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "Monitor id, or the id of a page of a Portal monitor"), DataQuery),
    responses(
        (status = 200, description = "History entries, newest first", body = ClientDataRange),
        (status = 400, description = "Bad count, date or continuation token", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "No valid token", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such monitor or page", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_data(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<DataQuery>,
) -> Result<ApiJson<ClientDataRange>, ApiError> {
    let cursors = &state.inner.cursors;
    let scope = format!("data:{user}:{id}");
    let page = cursors.time_page(
        &scope,
        query.from.as_deref(),
        query.to.as_deref(),
        query.count,
        query.continuation_token.as_deref(),
    )?;
    let mut rows = state.store().entries(&user, &id, &page).await?;
    let (older, next) = cursors.page_end(&scope, &mut rows, page.limit);
    if query.return_diff {
        // The entries just past the page hold the previous value of the page's oldest entry;
        // when they hold none (failed checks, or the page ends the range), look further back.
        let mut previous = older.iter().find_map(|(_, d)| d.raw.clone());
        if previous.is_none()
            && let Some((last, _)) = older.last().or(rows.last())
        {
            let back = TimePage {
                after: Some(last.clone()),
                limit: DIFF_LOOKBACK,
                ..TimePage::default()
            };
            let back = state.store().entries(&user, &id, &back).await?;
            previous = back.into_iter().find_map(|(_, d)| d.raw);
        }
        // Diffing is CPU work (up to 500 values): keep it off the async threads.
        rows = tokio::task::spawn_blocking(move || {
            fill_diffs(&mut rows, previous);
            rows
        })
        .await
        .map_err(|err| ApiError::Internal(format!("diff: {err}")))?;
    }
    Ok(ApiJson(ClientDataRange {
        data: Some(rows.into_iter().map(|(_, data)| data).collect()),
        continuation_token: next,
    }))
}

/// Gives each entry with a value its diff against the previous value (newest first in `rows`;
/// `before` is the value preceding the oldest). Failed checks have no diff and are skipped.
fn fill_diffs(rows: &mut [(TimeKey, ClientData)], before: Option<String>) {
    let mut previous = before;
    for (_, data) in rows.iter_mut().rev() {
        if let Some(raw) = &data.raw {
            data.diff = Some(wachet::diff::diff(previous.as_deref().unwrap_or(""), raw));
            previous = Some(raw.clone());
        }
    }
}
