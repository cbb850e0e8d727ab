//! The picker's pages as markup ([`crate::web::monitors::picker`] decides what they show): the address field,
//! a monitor's page that could not be fetched, a page no longer kept, and the picker itself
//! (the XPath fields with the engine's value, the click mode for `picker.js`, "Use this" and
//! the sandboxed frame). They carry a policy of their own that allows the frame and the value
//! requests.

use crate::web::assets::PICKER_JS;
use crate::web::monitors::pick_store::{KEPT_FOR, Pick};
use crate::web::shared::format::display_name;
use crate::web::shared::layout::page_with_scripts;
use crate::web::shared::session::Session;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};
use serde::Deserialize;
use wachet::Monitor;

/// The picker page's policy: the interface's own, plus its frame and the value requests.
const PAGE_CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                        frame-src 'self'; connect-src 'self'; form-action 'self'; \
                        frame-ancestors 'none'; base-uri 'none'";
/// Where "Use this" leads: the new-monitor form for an address, the monitor's edit form for a
/// monitor, with the XPaths in the query.
pub(crate) fn use_link(pick: &Pick, query: &PickQuery) -> String {
    let x_path = query.x_path.as_deref().unwrap_or("");
    let exclude = query.exclude_x_path.as_deref().unwrap_or("");
    match pick.monitor.as_ref().and_then(|m| m.id.as_deref()) {
        Some(id) => format!(
            "/monitors/{id}/edit?{}",
            serde_urlencoded::to_string([("xPath", x_path), ("excludeXPath", exclude)])
                .unwrap_or_default()
        ),
        None => format!(
            "/monitors/new?{}",
            serde_urlencoded::to_string([
                ("url", pick.url.as_str()),
                ("xPath", x_path),
                ("excludeXPath", exclude)
            ])
            .unwrap_or_default()
        ),
    }
}
/// Why a token finds nothing, said the same way for every cause.
pub(crate) fn gone_text() -> String {
    format!(
        "This page is no longer kept (pages are kept for {} minutes, and only the last few of each person). Load it again.",
        KEPT_FOR.as_secs() / 60
    )
}

/// The page for a token that is unknown, expired or another user's: all alike.
pub(crate) fn gone(session: &Session) -> Response {
    let main = html! {
        section.card.message {
            h1 { "This page is no longer kept" }
            p { (gone_text()) }
            p { a.button href="/monitors/pick" { "Load a page" } }
        }
    };
    with_csp(
        StatusCode::NOT_FOUND,
        page_with_scripts("Page no longer kept", Some(session), &[], main),
    )
}

fn with_csp(status: StatusCode, markup: Markup) -> Response {
    let mut response = (status, markup).into_response();
    response.headers_mut().insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(PAGE_CSP),
    );
    response
}

fn breadcrumbs(monitor: Option<&Monitor>) -> Markup {
    html! {
        nav.breadcrumbs aria-label="Breadcrumbs" {
            ol {
                li { a href="/" { "All monitors" } }
                @if let Some(monitor) = monitor {
                    li { a href={ "/monitors/" (monitor.id.as_deref().unwrap_or("")) } { (display_name(monitor)) } }
                }
                li { a aria-current="page" href="/monitors/pick" { "Pick with the mouse" } }
            }
        }
    }
}

/// The address field (first visit, a link from elsewhere, or a page that could not be
/// fetched, with the reason at the field).
pub(crate) fn address_page(
    session: &Session,
    url: &str,
    failed: Option<&Failed>,
    status: StatusCode,
) -> Response {
    let invalid = failed.is_some();
    let main = html! {
        (breadcrumbs(None))
        div.page-head { h1 { "Pick what to watch" } }
        form.card.pick-address method="get" action="/monitors/pick" {
            div.quick-row {
                div.field.grow {
                    label for="pick-url" { "URL" }
                    input #pick-url type="url" name="url" required value=(url)
                        placeholder="https://example.com/page"
                        aria-invalid=[invalid.then_some("true")]
                        aria-describedby=(if invalid { "pick-url-error" } else { "pick-url-hint" });
                }
                button.button.primary type="submit" { "Load the page" }
            }
            @if let Some(failed) = failed {
                p.field-error #pick-url-error { (failed.message) }
            } @else {
                p.hint #pick-url-hint { "The page is fetched as a check fetches it, then shown without its scripts: click what to watch in it." }
            }
        }
    };
    with_csp(
        status,
        page_with_scripts("Pick what to watch", Some(session), &[], main),
    )
}

/// A monitor's page could not be fetched (or the link came from elsewhere): say why, offer to
/// try again.
pub(crate) fn retry_page(
    session: &Session,
    monitor: &Monitor,
    failed: Option<&Failed>,
    status: StatusCode,
) -> Response {
    let id = monitor.id.as_deref().unwrap_or("");
    let main = html! {
        (breadcrumbs(Some(monitor)))
        section.card.message {
            h1 { "Pick what to watch" }
            @if let Some(failed) = failed {
                p { "The page of this monitor could not be fetched:" }
                p.alert #pick-error { (failed.message) }
            } @else {
                p { "Fetch the page of " (display_name(monitor)) " to pick in it?" }
            }
            div.actions {
                a.button.primary href={ "/monitors/" (id) "/pick" } { (if failed.is_some() { "Try again" } else { "Load the page" }) }
                a.button href={ "/monitors/" (id) } { "Back to the monitor" }
            }
        }
    };
    with_csp(
        status,
        page_with_scripts("Pick what to watch", Some(session), &[], main),
    )
}

/// The picker proper: the fields, what they give, "Use this" and the page in its frame.
pub(crate) fn picker_page(
    session: &Session,
    token: &str,
    pick: &Pick,
    query: &PickQuery,
    tried: &Tried,
) -> Response {
    let x_path = query.x_path.as_deref().unwrap_or("");
    let exclude = query.exclude_x_path.as_deref().unwrap_or("");
    let error_of = |field: &str| {
        tried
            .field_errors
            .iter()
            .find(|(f, _)| f == field)
            .map(|(_, m)| m.as_str())
    };
    let x_error = error_of("xPath");
    let exclude_error = error_of("excludeXPath");
    let main = html! {
        (breadcrumbs(pick.monitor.as_ref()))
        div.page-head {
            div.grow {
                h1 { "Pick what to watch" }
                p.pick-source {
                    "Fetched "
                    @if crate::web::shared::format::linkable(&pick.final_url) {
                        a href=(pick.final_url) rel="noopener noreferrer" { (pick.final_url) }
                    } @else { (pick.final_url) }
                    (if pick.rendered { ", rendered in a browser" } else { "" })
                    ". Kept for " (KEPT_FOR.as_secs() / 60) " minutes."
                }
            }
            a.button.primary #use-this href=(use_link(pick, query)) { "Use this" }
        }
        div.pick-layout {
            div.pick-controls {
                form.card.pick-form #pick-form method="get" action="/monitors/pick" {
                    input type="hidden" name="token" value=(token);
                    div.field {
                        label for="pick-xpath" { "xPath" }
                        input #pick-xpath type="text" name="xPath" value=(x_path) spellcheck="false" autocomplete="off"
                            placeholder="//*[@id=\"price\"]"
                            aria-invalid=[x_error.map(|_| "true")]
                            aria-describedby=(if x_error.is_some() { "pick-xpath-error" } else { "pick-xpath-hint" });
                        @if let Some(message) = x_error {
                            p.field-error #pick-xpath-error { (message) }
                        } @else {
                            p.hint #pick-xpath-hint { "What to watch; empty watches the whole page's text." }
                        }
                    }
                    div.field {
                        label for="pick-exclude" { "excludeXPath" }
                        input #pick-exclude type="text" name="excludeXPath" value=(exclude) spellcheck="false" autocomplete="off"
                            aria-invalid=[exclude_error.map(|_| "true")]
                            aria-describedby=(if exclude_error.is_some() { "pick-exclude-error" } else { "pick-exclude-hint" });
                        @if let Some(message) = exclude_error {
                            p.field-error #pick-exclude-error { (message) }
                        } @else {
                            p.hint #pick-exclude-hint { "What to leave out before xPath is applied (ads, dates, counters)." }
                        }
                    }
                    button.button #pick-try type="submit" { "Try" }
                }
                fieldset.card.pick-mode #pick-mode hidden {
                    legend { "A click in the page picks" }
                    label { input type="radio" name="pick-mode" value="watch" checked; " what to watch" }
                    label { input type="radio" name="pick-mode" value="ignore"; " what to ignore" }
                    p.hint { "Hover shows the element; a click proposes its XPath and highlights everything it matches." }
                }
                section.card.pick-result #pick-result aria-live="polite" aria-labelledby="pick-result-title" {
                    h2 #pick-result-title { "What a check would store" }
                    p #pick-count { (count_text(tried)) }
                    @if let Some(error) = &tried.error {
                        p.alert #pick-error { (error) }
                    }
                    @if let Some(value) = &tried.value {
                        pre.value #pick-value { (value) }
                    } @else {
                        pre.value #pick-value hidden {}
                    }
                }
            }
            div.pick-view {
                iframe #pick-frame.pick-frame src={ "/monitors/pick/frame/" (token) }
                    sandbox="allow-same-origin" title="The fetched page, without its scripts" {}
            }
        }
    };
    with_csp(
        StatusCode::OK,
        page_with_scripts("Pick what to watch", Some(session), &[&PICKER_JS], main),
    )
}

/// "3 matches, 1 excluded", or what to do when nothing was tried.
pub(crate) fn count_text(tried: &Tried) -> String {
    if !tried.asked {
        return "Click an element of the page, or write an xPath and try it.".into();
    }
    if !tried.field_errors.is_empty() {
        return "Correct the XPath to try it.".into();
    }
    let plural = |n: usize, one: &str, many: &str| {
        if n == 1 {
            format!("1 {one}")
        } else {
            format!("{n} {many}")
        }
    };
    let mut parts = Vec::new();
    match tried.matched {
        _ if tried.whole_page => parts.push("the whole page's text".into()),
        Some(n) => parts.push(plural(n, "match", "matches")),
        None => parts.push("xPath gives a single value".into()),
    }
    if let Some(n) = tried.excluded {
        parts.push(plural(n, "node excluded", "nodes excluded"));
    }
    parts.join(", ")
}

/// Why a page could not be fetched for picking, in words for the page.
#[derive(Debug)]
pub(crate) struct Failed {
    pub(crate) message: String,
    pub(crate) status: StatusCode,
}

impl Failed {
    pub(crate) fn new(status: StatusCode, message: impl Into<String>) -> Failed {
        Failed {
            message: message.into(),
            status,
        }
    }
}

/// The picker page's address.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PickQuery {
    pub(crate) url: Option<String>,
    pub(crate) token: Option<String>,
    pub(crate) x_path: Option<String>,
    pub(crate) exclude_x_path: Option<String>,
}

impl PickQuery {
    pub(crate) fn read(query: Option<&str>) -> Option<PickQuery> {
        serde_urlencoded::from_str(query.unwrap_or("")).ok()
    }
}

/// What trying an xPath on a kept page gave.
#[derive(Debug, Default)]
pub(crate) struct Tried {
    /// Whether anything was tried (an xPath or excludeXPath was given).
    pub(crate) asked: bool,
    /// Whether the xPath was empty (the value is the whole page's text).
    pub(crate) whole_page: bool,
    /// Problems of the fields, as the API's validation words them.
    pub(crate) field_errors: Vec<(String, String)>,
    /// The value (at most [`SHOWN_VALUE_CHARS`] of it).
    pub(crate) value: Option<String>,
    /// Why there is no value, in a check's words.
    pub(crate) error: Option<String>,
    pub(crate) matched: Option<usize>,
    pub(crate) excluded: Option<usize>,
}
