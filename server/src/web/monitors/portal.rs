//! A Portal monitor's crawled pages: the list on its page and its history (each page with its
//! state: checked fine, failed with the error, or left out of the last crawl, and the noise
//! masks it learned), read through
//! the API's own `GET /task/{id}/pages`, and each page's own history and differences
//! (`/monitors/{id}/pages/{page}/history` and `/diff`), which are the monitor's pages of
//! [`crate::web::monitors::history`] and [`crate::web::monitors::diff`] over the page's entries. A page id that is not one
//! of the monitor's is the same 404 page as an unknown one.

use crate::ops::Ctx;
use crate::web::monitors::diff;
use crate::web::monitors::history::{self, Subject};
use crate::web::monitors::pages::pages_of;
use crate::web::shared::extract::own_monitor;
use crate::web::shared::format::display_name;
use crate::web::shared::pages;
use crate::web::shared::session::Session;
use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Redirect, Response};
use wachet::model::ClientJobType;

/// The signed-in user's Portal monitor `id` with its page `page`, as a [`Subject`]; or the
/// response to give instead (sign-in, or the 404 page).
async fn own_page(
    state: &Ctx,
    headers: &HeaderMap,
    id: &str,
    page: &str,
) -> Result<(Session, Subject), Response> {
    let (session, monitor) = own_monitor(state, headers, id).await?;
    if monitor.job_type != ClientJobType::Portal {
        return Err(pages::not_found(Some(&session)));
    }
    let pages = pages_of(state, &session, &monitor).await?;
    let Some(found) = pages.into_iter().find(|p| p.id.as_deref() == Some(page)) else {
        return Err(pages::not_found(Some(&session)));
    };
    let url = found.url.clone().unwrap_or_default();
    let subject = Subject {
        entries: page.to_string(),
        base: format!("/monitors/{id}/pages/{page}"),
        name: found.name.filter(|n| !n.is_empty()).unwrap_or(url),
        parent: Some((
            format!("/monitors/{id}"),
            display_name(&monitor).to_string(),
        )),
        data: found.data,
    };
    Ok((session, subject))
}

/// `GET /monitors/{id}/pages/{page}`: a page's place is its history.
pub async fn page(
    State(state): State<Ctx>,
    headers: HeaderMap,
    Path((id, page)): Path<(String, String)>,
) -> Response {
    match own_page(&state, &headers, &id, &page).await {
        Ok((_, subject)) => Redirect::to(&format!("{}/history", subject.base)).into_response(),
        Err(response) => response,
    }
}

/// `GET /monitors/{id}/pages/{page}/history`.
pub async fn page_history(
    State(state): State<Ctx>,
    headers: HeaderMap,
    Path((id, page)): Path<(String, String)>,
    RawQuery(query): RawQuery,
) -> Response {
    match own_page(&state, &headers, &id, &page).await {
        Ok((session, subject)) => {
            history::show(&state, &session, &subject, query.as_deref(), None).await
        }
        Err(response) => response,
    }
}

/// `GET /monitors/{id}/pages/{page}/history/latest`: the page's newest entries, for the live
/// updates of its history.
pub async fn page_history_latest(
    State(state): State<Ctx>,
    headers: HeaderMap,
    Path((id, page)): Path<(String, String)>,
    RawQuery(query): RawQuery,
) -> Response {
    match own_page(&state, &headers, &id, &page).await {
        Ok((session, subject)) => {
            history::latest_of(&state, &session, &subject, query.as_deref()).await
        }
        Err(response) => response,
    }
}

/// `GET /monitors/{id}/pages/{page}/diff`.
pub async fn page_diff(
    State(state): State<Ctx>,
    axum::Extension(diffs): axum::Extension<std::sync::Arc<diff::Diffs>>,
    headers: HeaderMap,
    Path((id, page)): Path<(String, String)>,
    RawQuery(query): RawQuery,
) -> Response {
    match own_page(&state, &headers, &id, &page).await {
        Ok((session, subject)) => {
            diff::show_of(&state, &diffs, &session, &subject, query.as_deref()).await
        }
        Err(response) => response,
    }
}
