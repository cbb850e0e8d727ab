//! Where a folder's notifications go (`/folders/{id}/notifications`): the endpoints the folder
//! names for the monitors inside it and in its subfolders that name none of their own, and,
//! when it names none, where they go instead (the folder above that names some, or the user's
//! own endpoints), so a person sees where an endpoint comes from. One endpoint a line, its
//! schedule after it (`Webhook https://… | every 30 min | quiet 22:00-07:00`). Stored through
//! the API's own folder code (`POST /folder` with `notificationEndpoints`): the same validation
//! and sealing; the templates the API gave an endpoint stay.

use crate::ops::Ctx;
use crate::web::shared::error::PageError;
use crate::web::shared::extract::{SignedIn, SignedInForm};
use crate::web::shared::layout::page;
use crate::web::shared::pages;
use crate::web::shared::schedule;
use crate::web::shared::session::Session;
use crate::web::shared::tree::name_of;
use crate::web::shared::words::endpoint_words;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use serde::Deserialize;
use wachet::model::{Folder, MessagingServiceType, NotificationEndpoint};

/// The endpoints in the form's words: one a line, its type, its value and when its messages
/// go when not at once.
fn lines(list: &[NotificationEndpoint]) -> String {
    list.iter()
        .map(|endpoint| {
            let when = schedule::words(endpoint);
            match when.is_empty() {
                true => endpoint_words(endpoint),
                false => format!("{} | {when}", endpoint_words(endpoint)),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The endpoints of the form's lines (`Webhook https://…`, `Email a@b.example`, `Url tgram://…`,
/// each maybe followed by ` | every 30 min`, ` | daily at 08:00`, ` | quiet 22:00-07:00`), or
/// what a line says wrong.
fn parse(text: &str) -> Result<Vec<NotificationEndpoint>, String> {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .map(|line| {
            let mut parts = line.split(" | ");
            let endpoint = parts.next().unwrap_or(line).trim();
            let (kind, value) = endpoint
                .split_once(char::is_whitespace)
                .unwrap_or((endpoint, ""));
            let kind = MessagingServiceType::parse(kind).ok_or_else(|| {
                format!("“{line}” starts with no endpoint type (such as Webhook, Email or Url).")
            })?;
            let mut endpoint = NotificationEndpoint::new(kind, Some(value.trim().to_string()));
            schedule::from_words(&mut endpoint, parts)?;
            Ok(endpoint)
        })
        .collect()
}

/// The folder `id` of the user with its own endpoints, and where its monitors' notifications
/// go when it names none: (the folder above naming some, or `None` for the user's own, and
/// those endpoints).
async fn load(
    state: &Ctx,
    user: &str,
    id: &str,
) -> Result<(Folder, Option<String>, Vec<NotificationEndpoint>), PageError> {
    let listing = crate::ops::folders::list(state, user, Some(id), 1, None).await?;
    let folder = listing.path.last().cloned().ok_or(PageError::NotFound)?;
    let above = match folder.parent_id.as_deref() {
        Some(parent) => crate::ops::folders::inherited_endpoints(state, user, Some(parent)).await?,
        None => None,
    };
    Ok(match above {
        Some((name, list)) => (folder, Some(name), list),
        None => {
            let own = crate::ops::endpoints::get(state, user).await?;
            (folder, None, own.notification_endpoints)
        }
    })
}

fn form(
    session: &Session,
    id: &str,
    (folder, from, fallback): &(Folder, Option<String>, Vec<NotificationEndpoint>),
    text: &str,
    error: Option<&str>,
) -> Markup {
    let invalid = error.is_some();
    html! {
        section.card.message.folder-form {
            h1 { "Notifications of “" (name_of(folder)) "”" }
            p {
                "Monitors in this folder and its subfolders that name no endpoints of their own notify these. "
                "Without any here, they notify "
                @match from {
                    Some(name) => { "the endpoints of the folder “" (name) "”" },
                    None => { "your own endpoints" },
                }
                @if fallback.is_empty() { " (none yet)." } @else { ": " (lines(fallback).replace('\n', ", ")) "." }
            }
            form method="post" action={ "/folders/" (id) "/notifications" } {
                input type="hidden" name="csrf" value=(session.csrf);
                div.field {
                    label for="folder-endpoints" { "Endpoints, one a line: type, then URL or address" }
                    textarea #folder-endpoints name="endpoints" rows="5" spellcheck="false"
                        placeholder="Webhook https://example.com/hook"
                        aria-invalid=[invalid.then_some("true")]
                        aria-describedby=(if invalid { "folder-endpoints-error" } else { "folder-endpoints-hint" }) { (text) }
                    @if let Some(error) = error {
                        p.field-error #folder-endpoints-error { (error) }
                    } @else {
                        p.hint #folder-endpoints-hint {
                            "Types: "
                            (crate::notify::channel::offered().map(|kind| kind.name()).collect::<Vec<_>>().join(", "))
                            " (Url: a notification URL such as tgram://…). After an endpoint, when its messages go if not at once: "
                            code { "| every 30 min" } ", " code { "| daily at 08:00" } ", " code { "| quiet 22:00-07:00" }
                            " (in your time zone). Empty: none here."
                        }
                    }
                }
                div.actions {
                    button.button.primary type="submit" { "Save" }
                    a.button href={ "/folders/" (id) } { "Cancel" }
                }
            }
        }
    }
}

fn show(session: &Session, status: StatusCode, main: Markup) -> Response {
    (status, page("Folder notifications", Some(session), main)).into_response()
}

/// `GET /folders/{id}/notifications`.
pub async fn page_of(
    State(state): State<Ctx>,
    SignedIn(session): SignedIn,
    Path(id): Path<String>,
) -> Response {
    match load(&state, &session.user, &id).await {
        Ok(loaded) => {
            let text = lines(
                loaded
                    .0
                    .notification_endpoints
                    .as_deref()
                    .unwrap_or_default(),
            );
            show(
                &session,
                StatusCode::OK,
                form(&session, &id, &loaded, &text, None),
            )
        }
        Err(err) => pages::from_error(err, Some(&session)),
    }
}

/// The field of the form.
#[derive(Debug, Default, Deserialize)]
pub struct EndpointsForm {
    endpoints: Option<String>,
}

/// `POST /folders/{id}/notifications`: replaces the folder's endpoints (an empty field clears
/// them); back to the folder, or the form with what was refused.
pub async fn save(
    State(state): State<Ctx>,
    Path(id): Path<String>,
    SignedInForm {
        session,
        form: posted,
    }: SignedInForm<EndpointsForm>,
) -> Response {
    let loaded = match load(&state, &session.user, &id).await {
        Ok(loaded) => loaded,
        Err(err) => return pages::from_error(err, Some(&session)),
    };
    let text = posted.endpoints.unwrap_or_default();
    let refused = |message: &str| {
        show(
            &session,
            StatusCode::BAD_REQUEST,
            form(&session, &id, &loaded, &text, Some(message)),
        )
    };
    let mut list = match parse(&text) {
        Ok(list) => list,
        Err(message) => return refused(&message),
    };
    // The form edits an endpoint's kind, value and schedule; the templates the API gave it
    // stay.
    if let Some(stored) = loaded.0.notification_endpoints.as_deref() {
        crate::ops::endpoints::keep_extensions(&mut list, stored);
    }
    let folder = Folder {
        id: Some(id.clone()),
        name: loaded.0.name.clone(),
        notification_endpoints: Some(list),
        ..Folder::default()
    };
    match crate::ops::folders::save(&state, &session.user, &folder).await {
        Ok(_) => Redirect::to(&format!("/folders/{id}")).into_response(),
        Err(err @ crate::ops::OpError::Invalid { .. }) => {
            let message = match &err {
                crate::ops::OpError::Invalid { errors, .. } => errors
                    .iter()
                    .next()
                    .map(|(field, messages)| {
                        let line = field
                            .strip_prefix("notificationEndpoints[")
                            .and_then(|rest| rest.split(']').next())
                            .and_then(|n| n.parse::<usize>().ok())
                            .map_or(String::new(), |n| format!("Line {}: ", n + 1));
                        format!("{line}{}", messages.join("; "))
                    })
                    .unwrap_or_default(),
                _ => String::new(),
            };
            refused(&message)
        }
        Err(err) => pages::from_error(err.into(), Some(&session)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_name_a_type_then_a_value() {
        let list = parse("Webhook https://a.example/h\n\n  email Ann@b.example \n").unwrap();
        assert_eq!(list.len(), 2);
        assert_eq!(list[1].kind, MessagingServiceType::Email);
        assert_eq!(
            lines(&list),
            "Webhook https://a.example/h\nEmail Ann@b.example"
        );
        assert!(
            parse("https://a.example/h")
                .unwrap_err()
                .contains("no endpoint type")
        );
        let held = parse("Webhook https://a.example/h | every 30 min | quiet 22:00-07:00").unwrap();
        assert_eq!(
            lines(&held),
            "Webhook https://a.example/h | every 30 min | quiet 22:00-07:00"
        );
        assert!(
            parse("Webhook https://a.example/h | weekly")
                .unwrap_err()
                .contains("weekly")
        );
    }
}
