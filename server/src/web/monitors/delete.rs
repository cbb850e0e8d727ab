//! Deleting a monitor: a confirmation page (`GET /monitors/{id}/delete`) stating what goes
//! with it (its history entries, those of its crawled pages, its notifications), then the
//! form's post, which deletes through the operation the API's `DELETE /task/{id}` calls and returns to the
//! monitor's folder. Another user's monitor is the same 404 page as an unknown id.

use crate::ops::Ctx;
pub(crate) use crate::ops::monitors::{Count, what_goes};
use crate::web::shared::error::PageError;
use crate::web::shared::extract::SignedInForm;
use crate::web::shared::extract::{ActionForm, own_monitor};
use crate::web::shared::format::display_name;
use crate::web::shared::layout::page;
use crate::web::shared::pages;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Redirect, Response};
use maud::html;

/// `GET /monitors/{id}/delete`: what would go, and the button.
pub async fn confirm(
    State(state): State<Ctx>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let (session, monitor) = match own_monitor(&state, &headers, &id).await {
        Ok(found) => found,
        Err(response) => return response,
    };
    let (entries, notifications) = match what_goes(&state, &session.user, &id).await {
        Ok(counts) => counts,
        Err(err) => return pages::from_error(err.into(), Some(&session)),
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

/// `POST /monitors/{id}/delete`: deletes through [`crate::ops::monitors::delete`], then
/// back to the monitor's folder.
pub async fn delete(
    State(state): State<Ctx>,
    Path(id): Path<String>,
    SignedInForm { session, form: _ }: SignedInForm<ActionForm>,
) -> Response {
    let folder = match crate::ops::monitors::stored(&state, &session.user, &id).await {
        Ok(monitor) => monitor.folder_id,
        Err(err) => return pages::from_error(err.into(), Some(&session)),
    };
    let deleted = crate::ops::monitors::delete(&state, &session.user, &id)
        .await
        .map_err(PageError::from);
    match deleted {
        Ok(_) => Redirect::to(&folder.map_or_else(|| "/".to_string(), |f| format!("/folders/{f}")))
            .into_response(),
        Err(err) => pages::from_error(err, Some(&session)),
    }
}
