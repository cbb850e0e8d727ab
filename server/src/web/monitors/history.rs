//! A monitor's history (`/monitors/{id}/history`): every check, newest first, 50 a page with
//! the API's continuation tokens (a token of `GET /data/list/{id}` works here too), each with
//! its time, an excerpt of its value or its error, and a link to the change it made when its
//! value differs from the one before. Entries are named in links by their store key
//! (`{millis}-{id}`, see [`EntryKey`]), which the difference page reads back.

use crate::ops::Ctx;
use crate::store::{TimeKey, TimePage};
use crate::web::assets::LIVE_JS;
use crate::web::shared::clock::Now;
use crate::web::shared::error::PageError;
use crate::web::shared::extract::own_monitor;
use crate::web::shared::format::display_name;
use crate::web::shared::layout::page_with_scripts;
use crate::web::shared::pages;
use crate::web::shared::pages::bad_entry;
use crate::web::shared::pages::bad_request;
use crate::web::shared::session::Session;
use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::{Html, IntoResponse, Response};
use maud::html;
use serde::Deserialize;
use wachet::model::ClientData;

/// Entries on one page, as the API's default.
const PAGE_SIZE: u32 = 50;
/// How far back the value before an entry is looked for (past failed checks), as the API's
/// diff does.
pub(crate) const LOOKBACK: u32 = 100;
/// Characters of a value shown in the list.
const EXCERPT_CHARS: usize = 160;
/// Characters shown before the first difference of a changed value.
const EXCERPT_CONTEXT: usize = 40;

/// How a page's URL names one history entry: its check time in milliseconds and its id, both
/// from the store's key, written `{millis}-{id}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EntryKey(pub TimeKey);

impl EntryKey {
    pub(crate) fn to_param(&self) -> String {
        format!("{}-{}", self.0.at, self.0.id)
    }

    /// Reads `{millis}-{id}`; `None` for anything else.
    pub(crate) fn parse(text: &str) -> Option<EntryKey> {
        let (at, id) = text.split_once('-')?;
        let digits =
            |s: &str| !s.is_empty() && s.len() <= 19 && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(at) || !digits(id) {
            return None;
        }
        Some(EntryKey(TimeKey {
            at: at.parse().ok()?,
            id: id.to_string(),
        }))
    }
}

/// The query of the history page.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct HistoryQuery {
    continuation_token: Option<String>,
}

/// The newest entry with a value older than `key`, within [`LOOKBACK`] entries.
pub(crate) async fn value_before(
    state: &Ctx,
    user: &str,
    id: &str,
    key: &TimeKey,
) -> Result<Option<(TimeKey, String)>, PageError> {
    let page = TimePage {
        after: Some(key.clone()),
        limit: LOOKBACK,
        ..TimePage::default()
    };
    let older = crate::ops::history::entries(state, user, id, &page).await?;
    Ok(older
        .into_iter()
        .find_map(|(key, data)| data.raw.map(|raw| (key, raw))))
}

/// Whose history a page shows: a monitor's own, or one crawled page's of a Portal monitor.
pub(crate) struct Subject {
    /// The id its entries are stored under (the monitor's, or the page's).
    pub entries: String,
    /// Where its history and difference pages are (`/monitors/{id}` or
    /// `/monitors/{id}/pages/{page}`).
    pub base: String,
    /// Its name as shown.
    pub name: String,
    /// For a crawled page: its monitor's address and name, for the breadcrumbs.
    pub parent: Option<(String, String)>,
    /// Its latest check.
    pub data: Option<ClientData>,
}

impl Subject {
    /// The monitor the subject belongs to (itself, or a crawled page's monitor), as live
    /// updates name it: the second segment of [`Subject::base`].
    pub(crate) fn monitor_id(&self) -> &str {
        self.base.split('/').nth(2).unwrap_or("")
    }

    /// A monitor's own history.
    pub(crate) fn monitor(monitor: &wachet::Monitor) -> Subject {
        let id = monitor.id.clone().unwrap_or_default();
        Subject {
            base: format!("/monitors/{id}"),
            entries: id,
            name: display_name(monitor).to_string(),
            parent: None,
            data: monitor.data.clone(),
        }
    }
}

/// `GET /monitors/{id}/history`; a Portal monitor's also lists its pages.
pub async fn history(
    State(state): State<Ctx>,
    headers: HeaderMap,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> Response {
    let (session, monitor) = match own_monitor(&state, &headers, &id).await {
        Ok(found) => found,
        Err(response) => return response,
    };
    let pages = match crate::web::monitors::pages::pages_section(&state, &session, &monitor).await {
        Ok(pages) => pages,
        Err(response) => return response,
    };
    show(
        &state,
        &session,
        &Subject::monitor(&monitor),
        query.as_deref(),
        pages,
    )
    .await
}

/// The history of `subject`, with `above` (a Portal monitor's pages) before the checks.
pub(crate) async fn show(
    state: &Ctx,
    session: &Session,
    subject: &Subject,
    query: Option<&str>,
    above: Option<maud::Markup>,
) -> Response {
    let Ok(query) = serde_urlencoded::from_str::<HistoryQuery>(query.unwrap_or("")) else {
        return bad_request(session, "The address of this page is malformed.");
    };
    let id = &subject.entries;
    let scope = format!("data:{}:{id}", session.user);
    let page_of = match state.cursors().time_page(
        &scope,
        None,
        None,
        Some(i64::from(PAGE_SIZE)),
        query.continuation_token.as_deref(),
    ) {
        Ok(page) => page,
        Err(_) => {
            return bad_request(
                session,
                "The continuation token is not one of this history (it may be from another list, or damaged). Start from the newest check.",
            );
        }
    };
    let mut rows = match crate::ops::history::entries(state, &session.user, id, &page_of).await {
        Ok(rows) => rows,
        Err(err) => return pages::from_op(err, Some(session)),
    };
    let (older, next) = state.cursors().page_end(&scope, &mut rows, page_of.limit);
    // The value before the page's oldest entry decides whether that entry changed anything.
    let mut previous = older.into_iter().find_map(|(_, d)| d.raw);
    if previous.is_none()
        && let Some((last, _)) = rows.last()
    {
        match value_before(state, &session.user, id, last).await {
            Ok(found) => previous = found.map(|(_, raw)| raw),
            Err(err) => return pages::from_error(err, Some(session)),
        }
    }
    let changed = changes(&rows, previous);
    let name = subject.name.as_str();
    let base = subject.base.as_str();
    let now = Now::of(session);
    // Only the newest page grows as checks finish; older pages stay as they were.
    let live = query.continuation_token.is_none();
    let main = html! {
        nav.breadcrumbs aria-label="Breadcrumbs" {
            ol {
                li { a href="/" { "All monitors" } }
                @if let Some((href, parent)) = &subject.parent {
                    li { a href=(href) { (parent) } }
                }
                li { a href=(base) { (name) } }
                li { a href={ (base) "/history" } aria-current="page" { "History" } }
            }
        }
        div.page-head {
            h1 { "History of " (name) }
            a.button href={ (base) "/diff" } { "Latest change" }
        }
        @if let Some(above) = above { (above) }
        @if rows.is_empty() {
            p.empty.history-empty { "No checks yet." }
        }
        @if live {
            ol.history data-monitor=(subject.monitor_id()) data-live-history={ (base) "/history/latest" } {
                (entries(base, &rows, &changed, now))
            }
        } @else if !rows.is_empty() {
            ol.history { (entries(base, &rows, &changed, now)) }
        }
        @if let Some(token) = next {
            p.pager {
                a.button href={ (base) "/history?continuationToken=" (token) } { "Older checks" }
            }
        }
    };
    page_with_scripts(
        &format!("History of {name}"),
        Some(session),
        &[&LIVE_JS],
        main,
    )
    .into_response()
}

/// The `li` of each entry of `rows` (newest first), `changed` as [`changes`] gives it.
fn entries(
    base: &str,
    rows: &[(TimeKey, ClientData)],
    changed: &[(bool, usize)],
    now: Now,
) -> maud::Markup {
    html! {
        @for ((key, data), changed) in rows.iter().zip(changed) {
            li.entry id={ "check-" (EntryKey(key.clone()).to_param()) } {
                div.entry-time {
                    (now.exact_time(data.last_check_timestamp))
                    span.muted { (now.when(Some(data.last_check_timestamp))) }
                }
                div.entry-body {
                    @if let Some(error) = &data.error {
                        p.entry-error { span.badge.failed { "Failed" } " " (error) }
                    } @else if let Some(raw) = &data.raw {
                        p.excerpt { (excerpt(raw, changed.1)) }
                    }
                }
                div.entry-link {
                    @if changed.0 {
                        a href={ (base) "/diff?to=" (EntryKey(key.clone()).to_param()) } { "changes" }
                    } @else if data.raw.is_some() {
                        span.muted { "unchanged" }
                    }
                }
            }
        }
    }
}

/// The query of the newest entries' fragment.
#[derive(Debug, Default, Deserialize)]
struct LatestQuery {
    /// The newest entry the page shows; entries after it are sent.
    after: Option<String>,
}

/// `GET /monitors/{id}/history/latest?after={key}`: the entries newer than `after`, as an
/// `ol` of the history page's own items, for the live updates to put at the top.
pub async fn latest(
    State(state): State<Ctx>,
    headers: HeaderMap,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> Response {
    let (session, monitor) = match own_monitor(&state, &headers, &id).await {
        Ok(found) => found,
        Err(response) => return response,
    };
    latest_of(
        &state,
        &session,
        &Subject::monitor(&monitor),
        query.as_deref(),
    )
    .await
}

/// The fragment of [`latest`] for `subject` (a monitor, or a Portal monitor's page).
pub(crate) async fn latest_of(
    state: &Ctx,
    session: &Session,
    subject: &Subject,
    query: Option<&str>,
) -> Response {
    let Ok(query) = serde_urlencoded::from_str::<LatestQuery>(query.unwrap_or("")) else {
        return bad_request(session, "The address of this page is malformed.");
    };
    let after = match query.after.as_deref().map(EntryKey::parse) {
        None => None,
        Some(Some(key)) => Some(key.0),
        Some(None) => return bad_entry(session, "after", "is not an entry of this history"),
    };
    let id = &subject.entries;
    let page_of = TimePage {
        limit: PAGE_SIZE,
        ..TimePage::default()
    };
    let mut rows = match crate::ops::history::entries(state, &session.user, id, &page_of).await {
        Ok(rows) => rows,
        Err(err) => return pages::from_op(err, Some(session)),
    };
    // What the page already shows is not sent again; past a page of new checks, the newest
    // page is sent whole.
    if let Some(at) = rows.iter().position(|(key, _)| Some(key) == after.as_ref()) {
        rows.truncate(at + 1);
    }
    let previous = match rows.last() {
        Some((last, _)) => match value_before(state, &session.user, id, last).await {
            Ok(found) => found.map(|(_, raw)| raw),
            Err(err) => return pages::from_error(err, Some(session)),
        },
        None => None,
    };
    let changed = changes(&rows, previous);
    // The entry the page already has only served to decide whether the next one changed.
    let shown = if after.is_some() && rows.last().map(|(key, _)| key) == after.as_ref() {
        rows.len() - 1
    } else {
        rows.len()
    };
    let fragment = html! {
        ol.history data-monitor=(subject.monitor_id()) {
            (entries(&subject.base, &rows[..shown], &changed[..shown], Now::of(session)))
        }
    };
    Html(fragment.into_string()).into_response()
}

/// For each entry (newest first), whether its value differs from the value before it, and
/// where its excerpt starts: at the first difference of the change that made this value
/// (unchanged repeats keep the offset of their change). `before` is the value preceding the
/// oldest; the first value ever is a change from nothing.
fn changes(rows: &[(TimeKey, ClientData)], before: Option<String>) -> Vec<(bool, usize)> {
    let mut previous = before;
    let mut focus = 0;
    let mut out = vec![(false, 0); rows.len()];
    for (i, (_, data)) in rows.iter().enumerate().rev() {
        if let Some(raw) = &data.raw {
            // Spelling alone (white space, quotes, entities, ...) is no change.
            let changed = !previous
                .as_deref()
                .is_some_and(|old| wachet::normalize::same(old, raw));
            if changed {
                focus = previous.as_deref().map_or(0, |old| common_prefix(old, raw));
            }
            out[i] = (changed, focus);
            previous = Some(raw.clone());
        }
    }
    out
}

/// Bytes of `new` equal to the start of `old`, on a character boundary.
fn common_prefix(old: &str, new: &str) -> usize {
    old.char_indices()
        .zip(new.chars())
        .find(|((_, a), b)| a != b)
        .map_or_else(|| old.len().min(new.len()), |((at, _), _)| at)
}

/// A short excerpt of a value, on one line, starting a little before byte `from` (where it
/// changed) so the change shows.
fn excerpt(raw: &str, from: usize) -> String {
    let start = raw
        .get(..from)
        .unwrap_or("")
        .char_indices()
        .rev()
        .nth(EXCERPT_CONTEXT)
        .map_or(0, |(at, _)| at);
    let mut words = raw[start..].split_whitespace();
    // Begin at a word: a cut word reads as a typo.
    if raw[..start]
        .chars()
        .next_back()
        .is_some_and(|c| !c.is_whitespace())
    {
        words.next();
    }
    let flat: String = words.collect::<Vec<_>>().join(" ");
    if flat.is_empty() {
        return "(empty)".to_string();
    }
    let lead = if start > 0 { "…" } else { "" };
    match flat.char_indices().nth(EXCERPT_CHARS) {
        Some((cut, _)) => format!("{lead}{}…", &flat[..cut]),
        None => format!("{lead}{flat}"),
    }
}
