//! Deleting a monitor: a confirmation page (`GET /monitors/{id}/delete`) stating what goes
//! with it (its history entries, those of its crawled pages, its notifications), then the
//! form's post, which deletes through the API's own `DELETE /task/{id}` code and returns to the
//! monitor's folder. Another user's monitor is the same 404 page as an unknown id.

use super::form::Form;
use super::layout::page;
use super::monitor::{ActionForm, display_name, own_monitor, signed_in_form};
use super::pages;
use crate::api::AppState;
use crate::api::auth::CurrentUser;
use crate::store::{StoreError, TimeKey, TimePage};
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Redirect, Response};
use maud::html;
use wachet::model::ClientJobType;

/// Most rows counted for the confirmation; past it the page says "more than".
const COUNT_CAP: u64 = 10_000;
/// Rows read per query while counting.
const COUNT_PAGE: u32 = 500;

/// A count, and whether it stopped at [`COUNT_CAP`].
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Count {
    pub(super) n: u64,
    pub(super) capped: bool,
}

impl Count {
    pub(super) fn add(&mut self, other: Count) {
        self.n = (self.n + other.n).min(COUNT_CAP);
        self.capped |= other.capped || self.n >= COUNT_CAP;
    }

    pub(super) fn words(self, one: &str, many: &str) -> String {
        let noun = if self.n == 1 && !self.capped {
            one
        } else {
            many
        };
        if self.capped {
            format!("more than {} {noun}", COUNT_CAP)
        } else {
            format!("{} {noun}", self.n)
        }
    }
}

/// Counts the rows of a newest-first list by reading it a page at a time, up to the cap.
async fn count_rows<F, Fut>(mut page_of: F) -> Result<Count, StoreError>
where
    F: FnMut(TimePage) -> Fut,
    Fut: std::future::Future<Output = Result<Vec<TimeKey>, StoreError>>,
{
    let mut count = Count::default();
    let mut after = None;
    loop {
        let keys = page_of(TimePage {
            after: after.clone(),
            limit: COUNT_PAGE,
            ..TimePage::default()
        })
        .await?;
        // Stores return up to `limit + 1` rows; the extra one is the next page's first.
        let more = keys.len() > COUNT_PAGE as usize;
        let taken = keys.len().min(COUNT_PAGE as usize);
        count.n += taken as u64;
        if count.n >= COUNT_CAP {
            count.n = COUNT_CAP;
            count.capped = true;
            return Ok(count);
        }
        if !more {
            return Ok(count);
        }
        after = keys.get(taken - 1).cloned();
    }
}

/// What goes with monitor `id`: history entries (its own and its pages'), notifications.
pub(super) async fn what_goes(
    state: &AppState,
    user: &str,
    id: &str,
) -> Result<(Count, Count), StoreError> {
    let store = state.store();
    let entries_of = |series: String| async move {
        count_rows(|page| {
            let series = series.clone();
            async move {
                Ok(store
                    .entries(user, &series, &page)
                    .await?
                    .into_iter()
                    .map(|(key, _)| key)
                    .collect())
            }
        })
        .await
    };
    let mut entries = entries_of(id.to_string()).await?;
    let monitor = store.task(user, id).await?;
    if monitor.job_type == ClientJobType::Portal {
        for crawled in store.task_pages(user, id).await? {
            if entries.capped {
                break;
            }
            if let Some(page_id) = crawled.id {
                entries.add(entries_of(page_id).await?);
            }
        }
    }
    let notifications = count_rows(|page| async move {
        Ok(store
            .notifications(user, Some(id), &page, false)
            .await?
            .into_iter()
            .map(|(key, _)| key)
            .collect())
    })
    .await?;
    Ok((entries, notifications))
}

/// `GET /monitors/{id}/delete`: what would go, and the button.
pub async fn confirm(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let (session, monitor) = match own_monitor(&state, &headers, &id).await {
        Ok(found) => found,
        Err(response) => return response,
    };
    let (entries, notifications) = match what_goes(&state, &session.user, &id).await {
        Ok(counts) => counts,
        Err(err) => return pages::from_api(err.into(), Some(&session)),
    };
    let name = display_name(&monitor);
    let base = format!("/monitors/{id}");
    let main = html! {
        section.card.message {
            h1 { "Delete " (name) "?" }
            p {
                "This deletes the monitor with "
                strong.history-count { (entries.words("history entry", "history entries")) }
                " and "
                strong.notification-count { (notifications.words("notification", "notifications")) }
                ". It cannot be undone."
            }
            div.actions {
                form method="post" action={ (base) "/delete" } {
                    input type="hidden" name="csrf" value=(session.csrf);
                    button.button.danger type="submit" { "Delete the monitor" }
                }
                a.button href=(base) { "Keep it" }
            }
        }
    };
    page(&format!("Delete {name}?"), Some(&session), main).into_response()
}

/// `POST /monitors/{id}/delete`: deletes through [`crate::api::tasks::delete_task`], then
/// back to the monitor's folder.
pub async fn delete(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Form(form): Form<ActionForm>,
) -> Response {
    let session = match signed_in_form(&state, &headers, form.csrf.as_deref()).await {
        Ok(session) => session,
        Err(response) => return response,
    };
    let folder = match state.store().task(&session.user, &id).await {
        Ok(monitor) => monitor.folder_id,
        Err(err) => return pages::from_api(err.into(), Some(&session)),
    };
    let deleted = crate::api::tasks::delete_task(
        State(state.clone()),
        CurrentUser(session.user.clone()),
        Path(id),
    )
    .await;
    match deleted {
        Ok(_) => Redirect::to(&folder.map_or_else(|| "/".to_string(), |f| format!("/folders/{f}")))
            .into_response(),
        Err(err) => pages::from_api(err, Some(&session)),
    }
}
