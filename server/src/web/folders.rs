//! The monitors list: the root (`/`) or a folder (`/folders/{id}`) with breadcrumbs, its
//! subfolders with their recursive counts, its monitors with their state, and the quick-add
//! form, which stores a monitor through the API's own `PUT /task` code (the same validation).
//! Another user's folder is the same 404 page as an unknown id.

use super::form::Form;

use super::pages;
use super::session::{self, Session};
use crate::api::AppState;
use crate::api::auth::CurrentUser;
use crate::api::body::ApiJson;
use crate::api::problem::ApiError;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use chrono::{DateTime, Utc};
use maud::{Markup, html};
use serde::Deserialize;
use wachet::model::{Alert, AlertType, Folder, Monitor};

/// Most items shown on one folder page (subfolders and monitors together).
const PAGE_ITEMS: u32 = 500;
/// The quick-add's recurrence: every hour.
const QUICK_ADD_RECURRENCE: i32 = 3600;

/// What the quick-add form shows: the URL typed and what was wrong with it.
#[derive(Debug, Default)]
struct QuickAdd {
    url: String,
    error: Option<String>,
}

/// `GET /`: the root folder.
pub async fn root(State(state): State<AppState>, headers: HeaderMap) -> Response {
    show(&state, &headers, None).await
}

/// `GET /folders/{id}`.
pub async fn folder(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    show(&state, &headers, Some(&id)).await
}

async fn show(state: &AppState, headers: &HeaderMap, folder: Option<&str>) -> Response {
    match session::current(state, headers).await {
        Ok(Some(session)) => {
            listing(state, &session, folder, QuickAdd::default(), StatusCode::OK).await
        }
        Ok(None) => Redirect::to("/signin").into_response(),
        Err(err) => pages::from_api(err, None),
    }
}

async fn listing(
    state: &AppState,
    session: &Session,
    folder: Option<&str>,
    quick: QuickAdd,
    status: StatusCode,
) -> Response {
    let listing = match state
        .store()
        .list_folder(&session.user, folder, None, PAGE_ITEMS)
        .await
    {
        Ok(listing) => listing,
        Err(err) => return pages::from_api(err.into(), Some(session)),
    };
    let title = listing
        .path
        .last()
        .and_then(|f| f.name.clone())
        .unwrap_or_else(|| "All monitors".to_string());
    let now = Utc::now();
    let new_link = match folder {
        Some(id) => format!("/monitors/new?folder={id}"),
        None => "/monitors/new".to_string(),
    };
    let main = html! {
        nav.breadcrumbs aria-label="Breadcrumbs" {
            ol {
                @if listing.path.is_empty() {
                    li { a href="/" aria-current="page" { "All monitors" } }
                } @else {
                    li { a href="/" { "All monitors" } }
                    @for (i, f) in listing.path.iter().enumerate() {
                        li {
                            @let href = format!("/folders/{}", f.id.as_deref().unwrap_or(""));
                            @if i + 1 == listing.path.len() {
                                a href=(href) aria-current="page" { (name_of(f)) }
                            } @else {
                                a href=(href) { (name_of(f)) }
                            }
                        }
                    }
                }
            }
        }
        div.page-head {
            h1 { (title) }
            a.button.primary href=(new_link) { "New monitor" }
        }
        (quick_add_form(session, folder, &quick))
        @if !listing.subfolders.is_empty() {
            section aria-labelledby="folders-title" {
                h2 #folders-title { "Folders" }
                ul.folders {
                    @for f in &listing.subfolders {
                        li {
                            a.folder href={ "/folders/" (f.id.as_deref().unwrap_or("")) } {
                                span.folder-name { (name_of(f)) }
                                span.counts {
                                    (f.count) " " (if f.count == 1 { "monitor" } else { "monitors" })
                                    @if f.failed_count > 0 { " · " span.count-failed { (f.failed_count) " failed" } }
                                    @if f.paused_count > 0 { " · " (f.paused_count) " paused" }
                                }
                            }
                        }
                    }
                }
            }
        }
        section aria-labelledby="monitors-title" {
            h2 #monitors-title { "Monitors" }
            @if listing.tasks.is_empty() {
                p.empty { "No monitors here yet. Paste the address of a page above to watch it." }
            } @else {
                ul.monitors {
                    @for m in &listing.tasks { (monitor_row(m, now)) }
                }
            }
            @if listing.next.is_some() {
                p.hint { "Only the first " (PAGE_ITEMS) " items are shown." }
            }
        }
    };
    (
        status,
        super::feeds::page_for_folder(state, session, folder, &title, &[], main).await,
    )
        .into_response()
}

fn name_of(folder: &Folder) -> &str {
    folder.name.as_deref().unwrap_or("(unnamed)")
}

fn quick_add_form(session: &Session, folder: Option<&str>, quick: &QuickAdd) -> Markup {
    let invalid = quick.error.is_some();
    html! {
        form.card.quick-add method="post" action="/monitors/quick-add" aria-labelledby="quick-title" {
            h2 #quick-title.visually-hidden { "Quick add" }
            input type="hidden" name="csrf" value=(session.csrf);
            @if let Some(id) = folder { input type="hidden" name="folder" value=(id); }
            div.quick-row {
                div.field.grow {
                    label for="quick-url" { "URL" }
                    input #quick-url type="url" name="url" required
                        placeholder="https://example.com/page" value=(quick.url)
                        aria-invalid=[invalid.then_some("true")]
                        aria-describedby=(if invalid { "quick-url-error" } else { "quick-url-hint" });
                }
                button.button.primary type="submit" { "Add monitor" }
            }
            @if let Some(error) = &quick.error {
                p.field-error #quick-url-error { (error) }
            } @else {
                p.hint #quick-url-hint { "Checked every hour; you are told of every change." }
            }
        }
    }
}

/// The state of a monitor as a badge's class and label: paused, not checked yet, failed, ok.
pub(super) fn state_of(monitor: &Monitor) -> (&'static str, &'static str) {
    let paused = monitor.recurrence_in_seconds.unwrap_or(0) == 0;
    let error = monitor.data.as_ref().and_then(|d| d.error.as_deref());
    match (paused, &monitor.data, error) {
        (true, _, _) => ("badge paused", "Paused"),
        (false, None, _) => ("badge pending", "Not checked yet"),
        (false, Some(_), Some(_)) => ("badge failed", "Failed"),
        (false, Some(_), None) => ("badge ok", "OK"),
    }
}

fn monitor_row(monitor: &Monitor, now: DateTime<Utc>) -> Markup {
    let url = monitor.url.as_deref().unwrap_or("");
    let name = monitor
        .name
        .as_deref()
        .filter(|n| !n.is_empty())
        .unwrap_or(url);
    let paused = monitor.recurrence_in_seconds.unwrap_or(0) == 0;
    let error = monitor.data.as_ref().and_then(|d| d.error.as_deref());
    let (class, label) = state_of(monitor);
    // Only web addresses become links: a stored value never becomes a `javascript:` link.
    let linkable = linkable(url);
    html! {
        li.monitor {
            div.monitor-main {
                @if let Some(id) = &monitor.id {
                    a.monitor-name href={ "/monitors/" (id) } { (name) }
                } @else {
                    span.monitor-name { (name) }
                }
                @if linkable {
                    a.monitor-url href=(url) rel="noopener noreferrer nofollow" { (url) }
                } @else {
                    span.monitor-url { (url) }
                }
                @if let (false, Some(error)) = (paused, error) {
                    p.monitor-error { (error) }
                }
            }
            span class=(class) { (label) }
            dl.times {
                div { dt { "Last check" } dd { (when(monitor.data.as_ref().map(|d| d.last_check_timestamp), now)) } }
                div { dt { "Last change" } dd { (when(monitor.data.as_ref().and_then(|d| d.value_changed_timestamp), now)) } }
            }
        }
    }
}

/// Whether a stored URL may become a link: only web addresses, never `javascript:`.
pub(super) fn linkable(url: &str) -> bool {
    url.starts_with("http://") || url.starts_with("https://")
}

/// A time as "5 min ago", with the exact time for hovering and machines.
pub(super) fn when(at: Option<DateTime<Utc>>, now: DateTime<Utc>) -> Markup {
    let Some(at) = at else {
        return html! { "never" };
    };
    let seconds = (now - at).num_seconds().max(0);
    let relative = match seconds {
        0..60 => "just now".to_string(),
        60..3600 => format!("{} min ago", seconds / 60),
        3600..86_400 => format!("{} h ago", seconds / 3600),
        _ => format!("{} d ago", seconds / 86_400),
    };
    html! {
        time datetime=(at.to_rfc3339()) title=(at.format("%Y-%m-%d %H:%M:%S UTC").to_string()) { (relative) }
    }
}

/// The fields of the form.
#[derive(Debug, Default, Deserialize)]
pub struct QuickAddForm {
    csrf: Option<String>,
    url: Option<String>,
    folder: Option<String>,
}

/// `POST /monitors/quick-add`: a monitor of the URL named after its host, checked every hour
/// (or the service's minimum, if longer), alerting on every change, stored through
/// [`crate::api::tasks::put_task`]; then back to the folder (post, redirect, get).
pub async fn quick_add(
    State(state): State<AppState>,
    headers: HeaderMap,
    Form(form): Form<QuickAddForm>,
) -> Response {
    let session = match session::current(&state, &headers).await {
        Ok(Some(session)) => session,
        Ok(None) => return Redirect::to("/signin").into_response(),
        Err(err) => return pages::from_api(err, None),
    };
    if !session::same_origin(&headers, &state.settings().web)
        || !session::csrf_matches(&session, form.csrf.as_deref())
    {
        return pages::form_refused(Some(&session));
    }
    let folder = form.folder.filter(|f| !f.is_empty());
    let url = form.url.unwrap_or_default().trim().to_string();
    let host = url
        .parse::<axum::http::Uri>()
        .ok()
        .and_then(|uri| uri.host().map(str::to_string));
    let monitor = Monitor {
        name: Some(host.unwrap_or_else(|| url.clone())),
        recurrence_in_seconds: Some(QUICK_ADD_RECURRENCE.max(state.settings().min_recurrence)),
        alerts: Some(vec![Alert {
            kind: AlertType::NotEq,
            value: None,
            parameters: None,
        }]),
        folder_id: folder.clone(),
        ..Monitor::new(url.clone())
    };
    let stored = crate::api::tasks::put_task(
        State(state.clone()),
        CurrentUser(session.user.clone()),
        ApiJson(monitor),
    )
    .await;
    match stored {
        Ok(_) => {
            Redirect::to(&folder.map_or_else(|| "/".to_string(), |id| format!("/folders/{id}")))
                .into_response()
        }
        Err(ApiError::BadRequest { detail, errors }) => {
            // The URL's own message at the field; any other field's (a quota) there too, since
            // the URL is the only thing this form asks for.
            let message = match errors.get("url").and_then(|messages| messages.first()) {
                Some(message) => format!("This URL cannot be watched: {message}."),
                None => errors
                    .values()
                    .next()
                    .and_then(|messages| messages.first())
                    .cloned()
                    .unwrap_or(detail),
            };
            let quick = QuickAdd {
                url,
                error: Some(message),
            };
            listing(
                &state,
                &session,
                folder.as_deref(),
                quick,
                StatusCode::BAD_REQUEST,
            )
            .await
        }
        Err(other) => pages::from_api(other, Some(&session)),
    }
}
