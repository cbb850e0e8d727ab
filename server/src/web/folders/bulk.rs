//! Bulk actions on the monitors ticked in the list (`POST /monitors/bulk`): pause, resume and
//! "check now" store each monitor through the API's own `PUT /task` code (storing a monitor
//! schedules its check at once, which is what "check now" is); "move" asks for the folder,
//! then moves through the API's `POST /folder/move` code (all or nothing); "delete" first
//! states how many monitors, history entries and notifications go, then deletes each through
//! the API's `DELETE /task/{id}` code. Every id must be the user's, or nothing is changed and
//! the answer is the 404 page. Then back to the list the form came from (post, redirect, get)
//! with a notice of what was done.

use crate::ops::Ctx;
use crate::web::monitors::delete::{Count, what_goes};
use crate::web::monitors::show::RESUME_RECURRENCE;
use crate::web::shared::error::PageError;
use crate::web::shared::extract::signed_in_form;
use crate::web::shared::form::Form;
use crate::web::shared::format::display_name;
use crate::web::shared::layout::page;
use crate::web::shared::pages;
use crate::web::shared::session::Session;
use crate::web::shared::tree;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use wachet::model::{Monitor, MoveRequest};

/// Most monitors one action takes, as the API's move.
pub(crate) const MAX_SELECTED: usize = 1000;
/// Largest bulk form: 1,000 ids and the rest.
pub(crate) const MAX_BULK_BYTES: usize = 64 * 1024;
/// Longest address of the list to return to.
const MAX_BACK: usize = 2048;

/// The posted fields, as pairs: `id` comes once per ticked monitor.
type Pairs = Vec<(String, String)>;

/// What a bulk form says.
struct Bulk {
    csrf: Option<String>,
    back: String,
    action: String,
    folder: Option<String>,
    ids: Vec<String>,
}

fn read(pairs: Pairs) -> Bulk {
    let mut bulk = Bulk {
        csrf: None,
        back: "/".to_string(),
        action: String::new(),
        folder: None,
        ids: Vec::new(),
    };
    for (name, value) in pairs {
        match name.as_str() {
            "csrf" => bulk.csrf = Some(value),
            "back" => bulk.back = safe_back(&value),
            "action" => bulk.action = value,
            "folder" => bulk.folder = Some(value),
            "id" if !bulk.ids.contains(&value) => bulk.ids.push(value),
            _ => {}
        }
    }
    bulk
}

/// The list to go back to: a path of this site, else the root (never another site's address).
fn safe_back(back: &str) -> String {
    let ours = back.starts_with('/')
        && !back.starts_with("//")
        && back.len() <= MAX_BACK
        && !back.contains(['\\', '\r', '\n', '#']);
    if ours {
        back.to_string()
    } else {
        "/".to_string()
    }
}

/// `back` with the notice of what was done.
fn back_with(back: &str, done: Done, n: usize) -> String {
    let separator = if back.contains('?') { '&' } else { '?' };
    format!("{back}{separator}done={}&n={n}", done.param())
}

/// The selected monitors, every one the user's (else the 404 page: nothing is changed).
async fn selected(
    state: &Ctx,
    session: &Session,
    ids: &[String],
) -> Result<Vec<Monitor>, Response> {
    if ids.is_empty() {
        return Err(crate::web::shared::pages::bad_request(
            session,
            "No monitor was selected, so nothing was changed. Tick the monitors to act on first.",
        ));
    }
    if ids.len() > MAX_SELECTED {
        return Err(crate::web::shared::pages::bad_request(
            session,
            &format!(
                "At most {MAX_SELECTED} monitors can be changed at once; nothing was changed."
            ),
        ));
    }
    let mut monitors = Vec::with_capacity(ids.len());
    for id in ids {
        match crate::ops::monitors::stored(state, &session.user, id).await {
            Ok(monitor) => monitors.push(monitor),
            Err(err) => return Err(pages::from_error(err.into(), Some(session))),
        }
    }
    Ok(monitors)
}

/// A bulk form from the signed-in user with the monitors it selected, or the page to answer.
async fn selection(
    state: &Ctx,
    headers: &HeaderMap,
    pairs: Pairs,
) -> Result<(Bulk, Session, Vec<Monitor>), Response> {
    let bulk = read(pairs);
    let session = signed_in_form(state, headers, bulk.csrf.as_deref()).await?;
    let monitors = selected(state, &session, &bulk.ids).await?;
    Ok((bulk, session, monitors))
}

/// `POST /monitors/bulk`.
pub async fn act(
    State(state): State<Ctx>,
    headers: HeaderMap,
    Form(pairs): Form<Pairs>,
) -> Response {
    let (bulk, session, monitors) = match selection(&state, &headers, pairs).await {
        Ok(selection) => selection,
        Err(response) => return response,
    };
    match bulk.action.as_str() {
        "pause" => store_each(&state, &session, &bulk.back, monitors, Done::Paused).await,
        "resume" => store_each(&state, &session, &bulk.back, monitors, Done::Resumed).await,
        "check" => store_each(&state, &session, &bulk.back, monitors, Done::Checking).await,
        "move" => ask_folder(&state, &session, &bulk, &monitors, None).await,
        "delete" => confirm_delete(&state, &session, &bulk, &monitors).await,
        _ => crate::web::shared::pages::bad_request(
            &session,
            "That action is unknown; nothing was changed.",
        ),
    }
}

/// Pauses, resumes or re-stores (to check at once) each monitor through the API's own code.
/// Monitors already as asked are left alone (a double submit changes nothing more); a paused
/// monitor is not checked now (resume it first).
async fn store_each(
    state: &Ctx,
    session: &Session,
    back: &str,
    monitors: Vec<Monitor>,
    done: Done,
) -> Response {
    let mut changed = 0;
    for mut monitor in monitors {
        let running = monitor.recurrence_in_seconds.unwrap_or(0) > 0;
        match (done, running) {
            (Done::Paused, true) => monitor.recurrence_in_seconds = Some(0),
            (Done::Resumed, false) => {
                monitor.recurrence_in_seconds =
                    Some(RESUME_RECURRENCE.max(state.settings().min_recurrence));
            }
            (Done::Checking, true) => {}
            _ => continue,
        }
        monitor.data = None;
        let name = display_name(&monitor).to_string();
        let stored = crate::ops::monitors::save(state, &session.user, monitor)
            .await
            .map_err(PageError::from);
        match stored {
            Ok(_) => changed += 1,
            // Deleted meanwhile (another tab): nothing left to change.
            Err(PageError::NotFound) => {}
            // A monitor the API no longer accepts as stored (the server's settings changed
            // since): the page says exactly what was done and what was not.
            Err(PageError::BadRequest { detail, errors }) => {
                let reason = crate::web::shared::error::first_message(detail, &errors);
                return crate::web::shared::pages::bad_request(
                    session,
                    &format!(
                        "{} “{name}” could not be stored ({reason}); it and the monitors after it \
                         were left as they were. Edit it, then try again.",
                        done.sentence(changed as u32),
                    ),
                );
            }
            Err(err) => return pages::from_error(err, Some(session)),
        }
    }
    Redirect::to(&back_with(back, done, changed)).into_response()
}

/// The hidden fields that carry the selection to the next step.
fn carried(session: &Session, back: &str, ids: &[String]) -> Markup {
    html! {
        input type="hidden" name="csrf" value=(session.csrf);
        input type="hidden" name="back" value=(back);
        @for id in ids { input type="hidden" name="id" value=(id); }
    }
}

fn names(monitors: &[Monitor]) -> Markup {
    html! {
        ul.selected-names {
            @for m in monitors.iter().take(20) { li { (display_name(m)) } }
            @if monitors.len() > 20 { li.muted { "and " (monitors.len() - 20) " more" } }
        }
    }
}

fn monitors_word(n: usize) -> String {
    format!("{n} {}", if n == 1 { "monitor" } else { "monitors" })
}

/// The page asking where to move the selected monitors, with `error` at the field.
async fn ask_folder(
    state: &Ctx,
    session: &Session,
    bulk: &Bulk,
    monitors: &[Monitor],
    error: Option<&str>,
) -> Response {
    let tree = match tree::walk(state, &session.user, None, false).await {
        Ok(tree) => tree,
        Err(err) => return pages::from_error(err.into(), Some(session)),
    };
    let invalid = error.is_some();
    let title = format!("Move {}", monitors_word(monitors.len()));
    let main = html! {
        section.card.message.folder-form {
            h1 { (title) }
            (names(monitors))
            form method="post" action="/monitors/bulk/move" {
                (carried(session, &bulk.back, &bulk.ids))
                div.field {
                    label for="move-folder" { "Into the folder" }
                    select #move-folder name="folder"
                        aria-invalid=[invalid.then_some("true")]
                        aria-describedby=[invalid.then_some("move-folder-error")] {
                        option value="" { "All monitors (top level)" }
                        @for f in &tree.folders {
                            option value=(f.id) { (f.path) }
                        }
                    }
                    @if let Some(error) = error {
                        p.field-error #move-folder-error { (error) }
                    }
                }
                div.actions {
                    button.button.primary type="submit" { "Move" }
                    a.button href=(bulk.back) { "Cancel" }
                }
            }
        }
    };
    let status = if invalid {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    (status, page(&title, Some(session), main)).into_response()
}

/// `POST /monitors/bulk/move`: moves through [`crate::ops::folders::move_items`], then to the
/// folder they went to.
pub async fn move_to(
    State(state): State<Ctx>,
    headers: HeaderMap,
    Form(pairs): Form<Pairs>,
) -> Response {
    let (bulk, session, monitors) = match selection(&state, &headers, pairs).await {
        Ok(selection) => selection,
        Err(response) => return response,
    };
    let target = bulk.folder.clone().filter(|f| !f.is_empty());
    let moved = crate::ops::folders::move_items(
        &state,
        &session.user,
        &MoveRequest {
            task_ids: Some(bulk.ids.clone()),
            folder_ids: None,
            folder_id: target.clone(),
        },
    )
    .await
    .map_err(PageError::from);
    match moved {
        Ok(_) => {
            let to = target.map_or_else(|| "/".to_string(), |id| format!("/folders/{id}"));
            Redirect::to(&back_with(&to, Done::Moved, monitors.len())).into_response()
        }
        // The folder was deleted meanwhile (the monitors were checked just before).
        Err(PageError::NotFound) => {
            ask_folder(
                &state,
                &session,
                &bulk,
                &monitors,
                Some("That folder no longer exists; choose another. Nothing was moved."),
            )
            .await
        }
        Err(err) => pages::from_error(err, Some(&session)),
    }
}

/// The page stating what deleting the selected monitors takes with them.
async fn confirm_delete(
    state: &Ctx,
    session: &Session,
    bulk: &Bulk,
    monitors: &[Monitor],
) -> Response {
    let (mut entries, mut notifications) = (Count::default(), Count::default());
    for id in &bulk.ids {
        if entries.capped && notifications.capped {
            break;
        }
        match what_goes(state, &session.user, id).await {
            Ok((e, n)) => {
                entries.add(e);
                notifications.add(n);
            }
            Err(err) => return pages::from_error(err.into(), Some(session)),
        }
    }
    let title = format!("Delete {}?", monitors_word(monitors.len()));
    let main = html! {
        section.card.message {
            h1 { (title) }
            p.what-goes {
                "This deletes "
                strong.monitor-count { (monitors_word(monitors.len())) }
                " with "
                strong.history-count { (entries.words("history entry", "history entries")) }
                " and "
                strong.notification-count { (notifications.words("notification", "notifications")) }
                ". It cannot be undone."
            }
            (names(monitors))
            div.actions {
                form method="post" action="/monitors/bulk/delete" {
                    (carried(session, &bulk.back, &bulk.ids))
                    button.button.danger type="submit" { "Delete " (monitors_word(monitors.len())) }
                }
                a.button href=(bulk.back) { "Keep them" }
            }
        }
    };
    page(&title, Some(session), main).into_response()
}

/// `POST /monitors/bulk/delete`: deletes each through [`crate::ops::monitors::delete`]
/// (one already gone, a double submit, is skipped), then back to the list.
pub async fn delete(
    State(state): State<Ctx>,
    headers: HeaderMap,
    Form(pairs): Form<Pairs>,
) -> Response {
    let bulk = read(pairs);
    let session = match signed_in_form(&state, &headers, bulk.csrf.as_deref()).await {
        Ok(session) => session,
        Err(response) => return response,
    };
    if bulk.ids.is_empty() || bulk.ids.len() > MAX_SELECTED {
        return crate::web::shared::pages::bad_request(
            &session,
            "No monitor was selected, so nothing was changed.",
        );
    }
    let mut deleted = 0;
    for id in &bulk.ids {
        let result = crate::ops::monitors::delete(&state, &session.user, id)
            .await
            .map_err(PageError::from);
        match result {
            Ok(_) => deleted += 1,
            Err(PageError::NotFound) => {}
            Err(err) => return pages::from_error(err, Some(&session)),
        }
    }
    Redirect::to(&back_with(&bulk.back, Done::Deleted, deleted)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_paths_of_this_site_are_gone_back_to() {
        for ours in ["/", "/folders/x?q=tea&state=failed", "/?scope=all"] {
            assert_eq!(safe_back(ours), ours);
        }
        for theirs in [
            "//evil.example/",
            "https://evil.example/",
            "/\\evil.example",
            "javascript:alert(1)",
            "",
            "/a\r\nSet-Cookie: x=1",
        ] {
            assert_eq!(safe_back(theirs), "/", "{theirs:?}");
        }
        assert_eq!(back_with("/?q=a", Done::Paused, 2), "/?q=a&done=paused&n=2");
        assert_eq!(back_with("/", Done::Deleted, 1), "/?done=deleted&n=1");
    }
}

/// What a bulk action just did, for the notice at the top of the list.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Done {
    Paused,
    Resumed,
    Checking,
    Moved,
    Deleted,
}

impl Done {
    pub(crate) fn param(self) -> &'static str {
        match self {
            Done::Paused => "paused",
            Done::Resumed => "resumed",
            Done::Checking => "checking",
            Done::Moved => "moved",
            Done::Deleted => "deleted",
        }
    }

    pub(crate) fn parse(text: &str) -> Option<Done> {
        [
            Done::Paused,
            Done::Resumed,
            Done::Checking,
            Done::Moved,
            Done::Deleted,
        ]
        .into_iter()
        .find(|d| d.param() == text)
    }

    pub(crate) fn sentence(self, n: u32) -> String {
        let monitors = if n == 1 { "monitor" } else { "monitors" };
        match self {
            Done::Paused => format!("{n} {monitors} paused."),
            Done::Resumed => format!("{n} {monitors} resumed."),
            Done::Checking => format!("{n} {monitors} will be checked in a moment."),
            Done::Moved => format!("{n} {monitors} moved here."),
            Done::Deleted => format!("{n} {monitors} deleted."),
        }
    }
}
