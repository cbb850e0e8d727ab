//! History: the check results of a monitor or of one crawled page, newest first, a page at a
//! time (with the diff of each value against the one before, on request), and the raw pages
//! of entries the web interface's history, diff and list views read.

use super::paging::PageQuery;
use super::{Ctx, OpError, UserId};
use crate::store::{TimeKey, TimePage};
use wachet::model::{ClientData, ClientDataRange};

/// How far back a diff looks past the page for the previous value (past failed checks).
const DIFF_LOOKBACK: u32 = 100;

/// One page of the history of the user's monitor or crawled page `id`, newest first, with the
/// token of the next page; each value with its diff against the previous one when `diffs`.
pub async fn page(
    ctx: &Ctx,
    user: &UserId,
    id: &str,
    query: PageQuery<'_>,
    diffs: bool,
) -> Result<ClientDataRange, OpError> {
    let cursors = ctx.cursors();
    let scope = format!("data:{user}:{id}");
    let page = cursors.time_page(&scope, query.from, query.to, query.count, query.token)?;
    let mut rows = ctx.store().entries(user, id, &page).await?;
    let (older, next) = cursors.page_end(&scope, &mut rows, page.limit);
    if diffs {
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
            let back = ctx.store().entries(user, id, &back).await?;
            previous = back.into_iter().find_map(|(_, d)| d.raw);
        }
        // Diffing is CPU work (up to 500 values): keep it off the async threads.
        rows = tokio::task::spawn_blocking(move || {
            fill_diffs(&mut rows, previous);
            rows
        })
        .await
        .map_err(|err| OpError::Internal(format!("diff: {err}")))?;
    }
    Ok(ClientDataRange {
        data: Some(rows.into_iter().map(|(_, data)| data).collect()),
        continuation_token: next,
    })
}

/// The entries of the user's monitor or crawled page `id` that `page` selects, newest first,
/// each with its key (up to `page.limit + 1`, as the store returns them, so a caller can tell
/// whether more follow).
pub async fn entries(
    ctx: &Ctx,
    user: &UserId,
    id: &str,
    page: &TimePage,
) -> Result<Vec<(TimeKey, ClientData)>, OpError> {
    Ok(ctx.store().entries(user, id, page).await?)
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
