//! The pages of a Portal monitor as a section of its page and of its history: each crawled
//! page with its state and latest check.

use crate::ops::Ctx;
use crate::web::shared::clock::Now;
use crate::web::shared::format::linkable;
use crate::web::shared::pages;
use crate::web::shared::session::Session;
use axum::response::Response;
use maud::{Markup, html};
use wachet::Monitor;
use wachet::model::{ClientJobType, ClientPage};

/// Most pages listed; a crawl visits at most 500 by default.
const MAX_LISTED: usize = 500;

/// The monitor's pages through the operation the API answers with (so exactly what it gives).
pub(crate) async fn pages_of(
    state: &Ctx,
    session: &Session,
    monitor: &Monitor,
) -> Result<Vec<ClientPage>, Response> {
    let id = monitor.id.clone().unwrap_or_default();
    crate::ops::monitors::pages(state, &session.user, &id)
        .await
        .map_err(|err| pages::from_op(err, Some(session)))
}

/// How a page fared in the monitor's last crawl: a badge's class and label.
fn state_of(monitor: &Monitor, page: &ClientPage) -> (&'static str, &'static str) {
    let Some(data) = &page.data else {
        return ("badge pending", "Not checked yet");
    };
    // A crawl stamps the monitor when it starts and each page when it is fetched: a page
    // stamped before the monitor's last successful crawl was not fetched in it.
    let last_crawl = monitor
        .data
        .as_ref()
        .filter(|d| d.error.is_none())
        .map(|d| (d.last_check_timestamp, d.raw.as_deref().unwrap_or("")));
    if let Some((crawled_at, list)) = last_crawl
        && data.last_check_timestamp < crawled_at
    {
        let url = page.url.as_deref().unwrap_or("");
        return if list.lines().any(|line| line == url) {
            ("badge paused", "Left out")
        } else {
            ("badge paused", "No longer found")
        };
    }
    match data.error {
        Some(_) => ("badge failed", "Failed"),
        None => ("badge ok", "OK"),
    }
}

/// The pages of a Portal monitor as a section of its page or history; `None` for a
/// SinglePage monitor.
pub(crate) async fn pages_section(
    state: &Ctx,
    session: &Session,
    monitor: &Monitor,
) -> Result<Option<Markup>, Response> {
    if monitor.job_type != ClientJobType::Portal {
        return Ok(None);
    }
    let pages = pages_of(state, session, monitor).await?;
    let id = monitor.id.as_deref().unwrap_or("");
    let now = Now::of(session);
    Ok(Some(html! {
        section aria-labelledby="pages-title" {
            h2 #pages-title { "Pages (" (pages.len()) ")" }
            @if pages.is_empty() {
                p.empty { "No pages yet: they are listed after the first crawl." }
            } @else {
                ul.monitors.portal-pages {
                    @for page in pages.iter().take(MAX_LISTED) {
                        @let (class, label) = state_of(monitor, page);
                        @let url = page.url.as_deref().unwrap_or("");
                        @let data = page.data.as_ref();
                        li.monitor {
                            div.monitor-main {
                                a.monitor-name href={ "/monitors/" (id) "/pages/" (page.id.as_deref().unwrap_or("")) "/history" } {
                                    (page.name.as_deref().filter(|n| !n.is_empty()).unwrap_or(url))
                                }
                                @if linkable(url) {
                                    a.monitor-url href=(url) rel="noopener noreferrer" { (url) }
                                } @else {
                                    span.monitor-url { (url) }
                                }
                                @if label == "Left out" {
                                    p.portal-note { "Not fetched in the last crawl; still one of the monitor's pages." }
                                } @else if let Some(error) = data.and_then(|d| d.error.as_deref()) {
                                    p.monitor-error { (error) }
                                }
                                @if let Some(masks) = page.noise.as_ref().filter(|m| !m.is_empty()) {
                                    details.page-noise {
                                        summary {
                                            "Ignores " (masks.len()) " learned noise "
                                            (if masks.len() == 1 { "mask" } else { "masks" })
                                        }
                                        ul {
                                            @for mask in masks {
                                                li {
                                                    code.pattern { (mask.pattern) }
                                                    @if let Some(example) = &mask.example {
                                                        br;
                                                        "It masked: " q.example { (example) }
                                                    }
                                                }
                                            }
                                        }
                                        p.hint { "Learned from this page's checks; they apply to this page only. To switch one off, add its pattern in the monitor's Noise section, unticked." }
                                    }
                                }
                            }
                            span class=(class) { (label) }
                            dl.times {
                                div { dt { "Last check" } dd { (now.when(data.map(|d| d.last_check_timestamp))) } }
                                div { dt { "Last change" } dd { (now.when(data.and_then(|d| d.value_changed_timestamp))) } }
                            }
                        }
                    }
                }
                @if pages.len() > MAX_LISTED {
                    p.hint { "Only the first " (MAX_LISTED) " pages are listed." }
                }
            }
        }
    }))
}
