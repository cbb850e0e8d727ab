//! The preview of a monitor before it is saved (`POST /monitors/preview`, the form's
//! "Preview" button): the form's values validated by the API's own code, then checked now by
//! the engine (the service's [`wachet::Checker`], so its limits and network policy apply),
//! nothing stored. The form comes back with, beneath it, the value the monitor would store
//! (cut past [`MAX_SHOWN_CHARS`]) or the engine's error; a Portal monitor's pages are streamed
//! as the crawl finds them, in a chunked page that renders as it arrives without scripts (at
//! most [`MAX_PAGES_SHOWN`] pages, for at most [`CRAWL_TIME`]). Each user may start
//! [`PER_MINUTE`] previews a minute and run [`IN_FLIGHT`] at once.

use crate::ops::Ctx;
use crate::tabs::Use;
use crate::web::monitors::edit::posted;
use crate::web::monitors::form::{self as monitor_form, Problems};
use crate::web::monitors::page::{Choices, form_page};
use crate::web::shared::error::PageError;
use crate::web::shared::form::Form;
use crate::web::shared::pages;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use maud::{Markup, PreEscaped, html};
use std::collections::{HashMap, VecDeque};
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};
use wachet::model::ClientJobType;
use wachet::{CheckOutcome, CrawlEvent, CrawledPage};

/// Longest part of a value shown; the rest is cut with a note.
pub const MAX_SHOWN_CHARS: usize = 20_000;
/// Most pages of a Portal preview listed.
pub const MAX_PAGES_SHOWN: usize = 100;
/// Longest a Portal preview crawls.
pub const CRAWL_TIME: Duration = Duration::from_secs(60);
/// Longest a single-page preview waits for the engine (which bounds its own fetches and
/// renders well within this).
const CHECK_TIME: Duration = Duration::from_secs(120);
/// Previews a user may start in a minute, and run at once.
pub const PER_MINUTE: usize = 10;
pub const IN_FLIGHT: usize = 2;
/// Users whose counts are kept before the idle ones are forgotten.
const MAX_USERS: usize = 10_000;
/// Where the streamed pages go in a Portal preview's page. It is markup of ours, never
/// user data (which maud escapes, so it can hold no `<!--`).
const MARKER: &str = "<!--wachet:pages-->";

/// `POST /monitors/preview`.
pub async fn preview(
    State(state): State<Ctx>,
    headers: HeaderMap,
    Form(pairs): Form<Vec<(String, String)>>,
) -> Response {
    let (session, posted) = match posted(&state, &headers, pairs).await {
        Ok(found) => found,
        Err(response) => return response,
    };
    let token = posted.token;
    let mut fields = posted.fields;
    fields.compact();
    if let Some(id) = &fields.id
        && let Err(err) = crate::ops::monitors::stored(&state, &session.user, id).await
    {
        return pages::from_error(err.into(), Some(&session));
    }
    let choices = match Choices::load(&state, &session, &fields.folder).await {
        Ok(choices) => choices,
        Err(err) => return pages::from_error(err, Some(&session)),
    };
    let show = |status: StatusCode, problems: &Problems, below: Markup| {
        (
            status,
            form_page(
                &state,
                &session,
                &choices,
                &fields,
                problems,
                token.as_deref(),
                below,
            ),
        )
            .into_response()
    };
    let monitor = match fields.to_monitor() {
        Ok(monitor) => monitor,
        Err(problems) => return show(StatusCode::BAD_REQUEST, &problems, html! {}),
    };
    let turn = match Turn::take(&session.user) {
        Ok(turn) => turn,
        Err(refused) => {
            return show(
                StatusCode::TOO_MANY_REQUESTS,
                &Problems::default(),
                section(html! { p.alert { (refused.to_string()) } }),
            );
        }
    };
    let monitor = match crate::ops::monitors::validate(&state, monitor).await {
        Ok(monitor) => monitor,
        Err(crate::ops::OpError::Invalid { detail, errors }) => {
            let mut problems = monitor_form::from_error(errors, &fields);
            if problems.is_empty() {
                problems.add("form", detail);
            }
            return show(StatusCode::BAD_REQUEST, &problems, html! {});
        }
        Err(other) => return pages::from_op(other, Some(&session)),
    };
    // A rendered preview renders in the user's own tabs, counted with their checks'; one is
    // taken now, so a user whose tabs are all held is told at once.
    let gate = match monitor.dynamic_content {
        true => match state.browser_tabs().open(&session.user, Use::Preview).await {
            Ok(gate) => Some(gate),
            Err(refused) => {
                return show(
                    StatusCode::TOO_MANY_REQUESTS,
                    &Problems::default(),
                    section(html! { p.alert { (refused.to_string()) } }),
                );
            }
        },
        false => None,
    };
    let checker = state.checker().clone();
    let portal = monitor.job_type == ClientJobType::Portal;
    // Compiling is CPU work; validation just did it within its bounds, so this is as cheap.
    let prepared = match tokio::task::spawn_blocking(move || checker.prepare(&monitor)).await {
        Ok(Ok(prepared)) => match gate {
            Some(gate) => prepared.with_tabs(gate),
            None => prepared,
        },
        Ok(Err(invalid)) => {
            let errors =
                invalid
                    .errors
                    .into_iter()
                    .fold(std::collections::BTreeMap::new(), |mut map, e| {
                        map.entry(e.field).or_insert_with(Vec::new).push(e.message);
                        map
                    });
            let problems = monitor_form::from_error(errors, &fields);
            return show(StatusCode::BAD_REQUEST, &problems, html! {});
        }
        Err(err) => {
            return pages::from_error(
                PageError::Internal(format!("preparing a preview: {err}")),
                Some(&session),
            );
        }
    };
    if portal {
        let page = form_page(
            &state,
            &session,
            &choices,
            &fields,
            &Problems::default(),
            token.as_deref(),
            section(html! {
                p.hint {
                    "The pages the crawl finds, as it finds them (at most " (MAX_PAGES_SHOWN)
                    ", for at most " (CRAWL_TIME.as_secs()) " s). Nothing is saved."
                }
                (PreEscaped(MARKER))
            }),
        )
        .into_string();
        return stream_crawl(&state, page, prepared, turn);
    }
    let checker = state.checker().clone();
    let outcome = tokio::time::timeout(CHECK_TIME, checker.check_prepared(&prepared)).await;
    drop((turn, prepared));
    let result = match outcome {
        Ok(outcome) => outcome_markup(&outcome),
        Err(_) => html! {
            p.alert { "The check did not finish within " (CHECK_TIME.as_secs()) " s." }
        },
    };
    show(StatusCode::OK, &Problems::default(), section(result))
}

fn section(content: Markup) -> Markup {
    html! {
        section.card.preview #preview aria-labelledby="preview-title" {
            h2 #preview-title { "Preview" }
            (content)
        }
    }
}

/// The value a check gives, cut, or its error in the engine's words.
fn outcome_markup(outcome: &CheckOutcome) -> Markup {
    html! {
        @if let Some(error) = outcome.data.error.as_deref() {
            p.alert.preview-error { "The check failed: " (error) }
        } @else {
            p { "The value the monitor would store now:" }
            (value_markup(outcome.data.raw.as_deref().unwrap_or("")))
        }
        dl.preview-facts {
            @if let Some(status) = outcome.status { div { dt { "HTTP status" } dd { (status) } } }
            @if let Some(url) = outcome.final_url.as_deref() { div { dt { "Address" } dd { (url) } } }
            @if let Some(kind) = outcome.content_type.as_deref() { div { dt { "Content type" } dd { (kind) } } }
        }
        p.hint { "Nothing was saved. Save the monitor to keep checking." }
    }
}

fn value_markup(value: &str) -> Markup {
    let cut = value.char_indices().nth(MAX_SHOWN_CHARS).map(|(at, _)| at);
    html! {
        @if value.is_empty() {
            p.empty { "The value is empty: the XPath or regex matched nothing but empty text." }
        } @else {
            pre.value.preview-value { (&value[..cut.unwrap_or(value.len())]) }
            @if cut.is_some() {
                p.hint.preview-cut {
                    "Only the first " (MAX_SHOWN_CHARS) " characters are shown; the value has "
                    (value.chars().count()) " characters (" (value.len()) " bytes)."
                }
            }
        }
    }
}

fn page_item(page: &CrawledPage) -> Markup {
    html! {
        li.crawled {
            span.crawled-url { (page.url) }
            @if let Some(title) = page.title.as_deref().filter(|t| !t.is_empty()) {
                span.crawled-title { (title) }
            }
            @if let Some(error) = page.data.error.as_deref() {
                span.crawled-error { (error) }
            } @else if let Some(status) = page.status {
                span.muted { "HTTP " (status) }
            }
        }
    }
}

/// The page in chunks: everything before [`MARKER`], each page as the crawl finishes it, a
/// summary, and the rest of the page. A client that goes away drops the body, which ends the
/// task and with it the crawl.
fn stream_crawl(
    state: &Ctx,
    page: String,
    prepared: wachet::PreparedMonitor,
    turn: Turn,
) -> Response {
    let (head, tail) = match page.split_once(MARKER) {
        Some((head, tail)) => (head.to_string(), tail.to_string()),
        None => (page, String::new()),
    };
    let (sender, receiver) = tokio::sync::mpsc::channel::<String>(8);
    let checker = state.checker().clone();
    tokio::spawn(async move {
        let _turn = turn;
        if sender.send(head).await.is_err() {
            return;
        }
        let mut crawl = checker.crawl_prepared(&prepared);
        let deadline = tokio::time::Instant::now() + CRAWL_TIME;
        let mut shown = 0usize;
        let mut found = 0usize;
        let mut start_error: Option<String> = None;
        let mut finished = false;
        if sender
            .send("<ol class=\"crawled-pages\">".into())
            .await
            .is_err()
        {
            return;
        }
        loop {
            // A reader that went away ends the crawl now, not at its next page.
            let next = tokio::select! {
                () = sender.closed() => return,
                next = tokio::time::timeout_at(deadline, crawl.next()) => next,
            };
            let event = match next {
                Ok(Some(event)) => event,
                Ok(None) => {
                    finished = true;
                    break;
                }
                Err(_) => break,
            };
            match event {
                CrawlEvent::Page { page, .. } => {
                    found += 1;
                    if page.depth == 0 {
                        start_error = page.data.error.clone();
                    }
                    if shown < MAX_PAGES_SHOWN {
                        shown += 1;
                        if sender.send(page_item(&page).into_string()).await.is_err() {
                            return;
                        }
                    }
                }
                CrawlEvent::Finished(_) => {
                    finished = true;
                    break;
                }
                _ => {}
            }
        }
        drop(crawl);
        let summary = html! {
            @if let Some(error) = &start_error {
                p.alert.preview-error { "The check failed: " (error) }
            }
            p.crawl-summary role="status" {
                @if finished { "The crawl finished: " } @else { "The crawl was stopped after " (CRAWL_TIME.as_secs()) " s: " }
                (found) (if found == 1 { " page found" } else { " pages found" })
                @if found > shown { ", the first " (shown) " shown" }
                ". Nothing was saved."
            }
        };
        let _ = sender
            .send(format!("</ol>{}{tail}", summary.into_string()))
            .await;
    });
    let body = futures::stream::unfold(receiver, |mut receiver| async move {
        receiver.recv().await.map(|chunk| {
            (
                Ok::<Bytes, std::convert::Infallible>(Bytes::from(chunk)),
                receiver,
            )
        })
    });
    let mut response = Body::from_stream(body).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    response
}

/// A user's previews: when the recent ones started, and how many run.
#[derive(Debug, Default)]
struct Usage {
    started: VecDeque<Instant>,
    running: usize,
}

static USAGE: LazyLock<Mutex<HashMap<String, Usage>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// Why a preview was refused.
#[derive(Debug, thiserror::Error)]
enum Refused {
    #[error("Too many previews: at most {PER_MINUTE} a minute. Try again in {0} s.")]
    Rate(u64),
    #[error("{IN_FLIGHT} previews are still running. Wait for one to finish, then try again.")]
    Busy,
}

/// A running preview of a user, counted until dropped.
struct Turn {
    user: String,
}

impl Turn {
    fn take(user: &str) -> Result<Turn, Refused> {
        let mut all = USAGE
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let minute = Duration::from_secs(60);
        if all.len() >= MAX_USERS {
            all.retain(|_, usage| {
                usage.running > 0 || usage.started.back().is_some_and(|at| at.elapsed() < minute)
            });
        }
        let usage = all.entry(user.to_string()).or_default();
        while usage
            .started
            .front()
            .is_some_and(|at| at.elapsed() >= minute)
        {
            usage.started.pop_front();
        }
        if usage.running >= IN_FLIGHT {
            return Err(Refused::Busy);
        }
        if usage.started.len() >= PER_MINUTE {
            let wait = usage
                .started
                .front()
                .map_or(60, |at| minute.saturating_sub(at.elapsed()).as_secs() + 1);
            return Err(Refused::Rate(wait));
        }
        usage.started.push_back(Instant::now());
        usage.running += 1;
        Ok(Turn {
            user: user.to_string(),
        })
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        let mut all = USAGE
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(usage) = all.get_mut(&self.user) {
            usage.running = usage.running.saturating_sub(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_value_is_shown_cut_with_a_note() {
        let value = "é".repeat(MAX_SHOWN_CHARS + 5);
        let html = value_markup(&value).into_string();
        assert!(
            html.contains("Only the first 20000 characters"),
            "{}",
            &html[html.len() - 300..]
        );
        assert!(html.len() < MAX_SHOWN_CHARS * 2 + 1000);
    }

    #[test]
    fn previews_are_limited_per_user() {
        let user = "preview-limit-test-user";
        let first = Turn::take(user).unwrap();
        let second = Turn::take(user).unwrap();
        assert!(matches!(Turn::take(user), Err(Refused::Busy)));
        drop(first);
        drop(second);
        for _ in 2..PER_MINUTE {
            drop(Turn::take(user).unwrap());
        }
        assert!(matches!(Turn::take(user), Err(Refused::Rate(_))));
        assert!(Turn::take("another-preview-user").is_ok());
    }
}
