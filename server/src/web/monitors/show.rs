//! A monitor's page (`/monitors/{id}`): its name, URL, state with the error of a failed check,
//! last check and change, the current value, its settings in brief, the way to its history,
//! its Atom feed ([`crate::web::account::feeds::feed_parts`]), and pausing and resuming, which store the monitor through the API's own `PUT /task` code
//! (recurrence 0 pauses; resuming restores an hour, or the service's minimum if longer).
//! Another user's monitor is the same 404 page as an unknown id.

use crate::ops::Ctx;
use crate::web::assets::LIVE_JS;
use crate::web::shared::clock::Now;
use crate::web::shared::error::PageError;
use crate::web::shared::extract::ActionForm;
use crate::web::shared::extract::SignedInForm;
use crate::web::shared::extract::own_monitor;
use crate::web::shared::format::display_name;
use crate::web::shared::format::linkable;
use crate::web::shared::pages;
use crate::web::shared::session::Session;
use crate::web::shared::words::alert_in_words;
use crate::web::shared::words::recurrence_in_words;
use crate::web::shared::words::state_of;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use wachet::model::Monitor;

/// The recurrence a resumed monitor gets: every hour.
pub(crate) const RESUME_RECURRENCE: i32 = 3600;
/// Bytes of the current value the page shows (a value may be 10 MB): the page stays light and
/// the whole value is one API call away.
const SHOWN_VALUE_BYTES: usize = 200 * 1024;

/// `GET /monitors/{id}`.
pub async fn show(
    State(state): State<Ctx>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let (session, mut monitor) = match own_monitor(&state, &headers, &id).await {
        Ok(found) => found,
        Err(response) => return response,
    };
    // Without the live workers the page still shows, only without the location's notice.
    let _ =
        crate::ops::monitors::annotate_locations(&state, std::slice::from_mut(&mut monitor)).await;
    // The folder path for the breadcrumbs; a folder deleted meanwhile only shortens them.
    let folders = match &monitor.folder_id {
        Some(folder) => crate::ops::folders::contents(&state, &session.user, Some(folder), None, 1)
            .await
            .map(|listing| listing.path)
            .unwrap_or_default(),
        None => Vec::new(),
    };
    let crawled = match crate::web::monitors::pages::pages_section(&state, &session, &monitor).await
    {
        Ok(pages) => pages,
        Err(response) => return response,
    };
    let name = display_name(&monitor);
    let url = monitor.url.as_deref().unwrap_or("");
    let paused = monitor.recurrence_in_seconds.unwrap_or(0) == 0;
    let now = Now::of(&session);
    let base = format!("/monitors/{id}");
    let scope = crate::store::FeedScope::Monitor(id.clone());
    let feed =
        crate::web::account::feeds::feed_parts(&state, &headers, &session, &scope, name, &base)
            .await;
    let main = html! {
        nav.breadcrumbs aria-label="Breadcrumbs" {
            ol {
                li { a href="/" { "All monitors" } }
                @for folder in &folders {
                    li { a href={ "/folders/" (folder.id.as_deref().unwrap_or("")) } { (folder.name.as_deref().unwrap_or("(unnamed)")) } }
                }
                li { a href=(base) aria-current="page" { (name) } }
            }
        }
        div.page-head {
            div.grow {
                h1.monitor-title { (name) }
                @if linkable(url) {
                    a.monitor-url href=(url) rel="noopener noreferrer" { (url) }
                } @else {
                    span.monitor-url { (url) }
                }
            }
            div.actions {
                a.button href={ (base) "/history" } { "History" }
                a.button href={ (base) "/edit" } { "Edit" }
                a.button href={ (base) "/pick" } { "Pick with the mouse" }
                form method="post" action={ (base) (if paused { "/resume" } else { "/pause" }) } {
                    input type="hidden" name="csrf" value=(session.csrf);
                    button.button.primary type="submit" { (if paused { "Resume" } else { "Pause" }) }
                }
                a.button.danger-quiet href={ (base) "/delete" } { "Delete" }
            }
        }
        (live_part(&id, &monitor, now))
        @if let Some(crawled) = crawled { (crawled) }
        section aria-labelledby="settings-title" {
            h2 #settings-title { "Settings" }
            (settings(&monitor))
        }
        (feed.section)
    };
    crate::web::shared::layout::page_with_head(name, Some(&session), &[&LIVE_JS], feed.head, main)
        .into_response()
}

/// The state, last check and change, error and current value of monitor `id`: the part of its
/// page that live updates redraw ([`crate::web::monitors::live`]).
pub(crate) fn live_part(id: &str, monitor: &Monitor, now: Now) -> Markup {
    let (class, label) = state_of(monitor);
    let data = monitor.data.as_ref();
    html! {
        div #live-monitor data-monitor=(id) data-live={ "/monitors/" (id) "/status" } {
            section.card.status aria-labelledby="status-title" {
                h2 #status-title.visually-hidden { "State" }
                div.status-row {
                    span class=(class) { (label) }
                    dl.times {
                        div.last-check { dt { "Last check" } dd { (now.when(data.map(|d| d.last_check_timestamp))) } }
                        div.last-change { dt { "Last change" } dd { (now.when(data.and_then(|d| d.value_changed_timestamp))) } }
                    }
                }
                @if let Some(error) = data.and_then(|d| d.error.as_deref()) {
                    p.alert.check-error { (error) }
                }
                @if let Some(notice) = monitor.noise_notice.as_deref() {
                    p.notice.noise-notice { strong { "Noise: " } (notice) }
                }
                @if let Some(notice) = monitor.location_notice.as_deref() {
                    p.notice.location-notice { strong { "Not checked: " } (notice) }
                }
            }
            section aria-labelledby="value-title" {
                h2 #value-title { "Current value" }
                @match data.and_then(|d| d.raw.as_deref()) {
                    Some(value) if !value.is_empty() => {
                        @let shown = crate::web::shared::format::head(value, SHOWN_VALUE_BYTES);
                        // Focusable, so that a long value scrolls with the keyboard too.
                        pre.value tabindex="0" aria-labelledby="value-title" { (shown) }
                        @if shown.len() < value.len() {
                            p.hint.cut {
                                "Only the first " (crate::web::shared::format::size_in_words(shown.len()))
                                " of this value (" (crate::web::shared::format::size_in_words(value.len()))
                                ") are shown. The whole value is in the API's answer to "
                                code { "GET /thirdparty/v1/task/" (id) } "."
                            }
                        }
                    },
                    Some(_) => p.empty { "The value is empty." },
                    None => p.empty { "No value yet." },
                }
            }
        }
    }
}

fn settings(monitor: &Monitor) -> Markup {
    let alerts = monitor.alerts.as_deref().unwrap_or_default();
    html! {
        dl.card.settings {
            div { dt { "Checked" } dd { (recurrence_in_words(monitor.recurrence_in_seconds.unwrap_or(0))) } }
            div { dt { "xPath" } dd { (code_or_none(monitor.x_path.as_deref(), "the whole page")) } }
            div { dt { "excludeXPath" } dd { (code_or_none(monitor.exclude_x_path.as_deref(), "nothing excluded")) } }
            div { dt { "Regex" } dd { (code_or_none(monitor.regex.as_deref(), "none")) } }
            div {
                dt { "Alerts" }
                dd {
                    @if alerts.is_empty() {
                        "none"
                    } @else {
                        ul.plain { @for alert in alerts { li { (alert_in_words(alert)) } } }
                    }
                }
            }
            div { dt { "Noise" } dd { (noise_in_words(monitor)) } }
            @if monitor.dynamic_content {
                div { dt { "Rendering" } dd { "in a browser" (if monitor.scroll_page { ", scrolled to the bottom" } else { "" }) } }
            }
            @if let Some(note) = monitor.note.as_deref().filter(|n| !n.is_empty()) {
                div { dt { "Note" } dd.note { (note) } }
            }
        }
    }
}

/// The monitor's noise masks and line order in a few words: "2 masks (1 learned, 1 off); lines
/// compared as a set".
fn noise_in_words(monitor: &Monitor) -> String {
    let masks = monitor.noise.as_deref().unwrap_or_default();
    let learned = masks.iter().filter(|m| m.learned).count();
    let off = masks.iter().filter(|m| !m.active).count();
    let mut words = match masks.len() {
        0 => "nothing masked".to_string(),
        1 => "1 mask".to_string(),
        n => format!("{n} masks"),
    };
    if !masks.is_empty() {
        let mut parts = vec![format!("{learned} learned")];
        if off > 0 {
            parts.push(format!("{off} off"));
        }
        words.push_str(&format!(" ({})", parts.join(", ")));
    }
    if monitor.compare_lines == Some(wachet::model::LineOrder::Set) {
        words.push_str("; lines compared as a set");
    }
    words
}

fn code_or_none(value: Option<&str>, none: &str) -> Markup {
    match value.filter(|v| !v.trim().is_empty()) {
        Some(value) => html! { code { (value) } },
        None => html! { span.muted { (none) } },
    }
}

/// `POST /monitors/{id}/pause`.
pub async fn pause(
    State(state): State<Ctx>,
    Path(id): Path<String>,
    SignedInForm { session, .. }: SignedInForm<ActionForm>,
) -> Response {
    set_recurrence(&state, &session, &id, false).await
}

/// `POST /monitors/{id}/resume`.
pub async fn resume(
    State(state): State<Ctx>,
    Path(id): Path<String>,
    SignedInForm { session, .. }: SignedInForm<ActionForm>,
) -> Response {
    set_recurrence(&state, &session, &id, true).await
}

/// Stores the monitor with its recurrence set (through [`crate::ops::monitors::save`], so
/// with the API's validation), then back to its page (post, redirect, get).
async fn set_recurrence(state: &Ctx, session: &Session, id: &str, resume: bool) -> Response {
    let mut monitor = match crate::ops::monitors::stored(state, &session.user, id).await {
        Ok(monitor) => monitor,
        Err(err) => return pages::from_error(err.into(), Some(session)),
    };
    let running = monitor.recurrence_in_seconds.unwrap_or(0) > 0;
    // A double submit, or a second tab: already as asked, nothing to store.
    if running != resume {
        monitor.recurrence_in_seconds = Some(if resume {
            RESUME_RECURRENCE.max(state.settings().min_recurrence)
        } else {
            0
        });
        monitor.data = None;
        let stored = crate::ops::monitors::save(state, &session.user, monitor)
            .await
            .map_err(PageError::from);
        if let Err(err) = stored {
            return pages::from_error(err, Some(session));
        }
    }
    Redirect::to(&format!("/monitors/{id}")).into_response()
}
