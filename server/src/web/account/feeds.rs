//! Atom feeds of changes: of all of a user's monitors (`/feeds/all.atom`), of a folder with its
//! subfolders (`/feeds/folders/{id}.atom`) and of one monitor (`/feeds/monitors/{id}.atom`),
//! each read with the secret of that feed (`?key=`, looked up by its SHA-256), so a feed reader
//! follows without a session; the owner's signed-in browser needs no key. A wrong, renewed or
//! removed secret, or a secret of another feed, is the same 404 as an unknown id. Entries are
//! the changes the history holds: time, monitor name, the difference in short, a link to the
//! difference page. The document is written with maud, which escapes `&`, `<`, `>` and `"`;
//! characters XML 1.0 forbids even escaped (most control characters) are dropped first.
//! Also here: the feed's part of the monitor's and folder's pages ([`feed_parts`]): a "Create
//! a feed" form, or the whole address with its secret (kept sealed with the service's key to be
//! shown again, [`crate::secrets::Sealer`]) to copy and renew, announced in the page's head
//! by a `<link rel="alternate">` that a feed reader can fetch.
//!
//! A feed is read without a session, so its cost is bounded here ([`FeedWork`]): requests per
//! client network and per feed are rate limited (429 with `Retry-After`), a feed's entries are
//! gathered in turns (two per feed owner at once, half the cores in all), and each change's
//! summary is computed once (its difference bounded like a difference page's) and kept, and
//! the document is kept until a newer change arrives: a feed fetched again costs a look at its
//! latest change, and a new change costs one difference.

use crate::ops::Ctx;
use crate::ops::feeds::{self, Shown};
use crate::store::{FeedChange, FeedScope};
use crate::web::shared::error::PageError;
use crate::web::shared::pages;
use crate::web::shared::session::{self, Session};
use axum::extract::{ConnectInfo, Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};
use serde::Deserialize;
use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use wachet::model::DiffOperation;

/// Entries in a feed: the latest changes.
const ENTRIES: u32 = 50;
/// Characters of removed or added text shown in an entry.
const SUMMARY_CHARS: usize = 300;
/// Longest `key` looked at; ours are 43 characters.
const MAX_KEY_LEN: usize = 256;
/// Feed requests a second from one client network (an IPv4 address, an IPv6 /64), and the
/// burst above it: a reader polls every few minutes, a guesser is slowed to this.
const PER_NETWORK: (u32, u32) = (5, 20);
/// Requests a second for one feed, and the burst: many readers of one feed are fine.
const PER_FEED: (u32, u32) = (10, 40);
/// Feeds of one owner gathered at once; more wait for them.
const GATHERS_PER_OWNER: usize = 2;
/// How long a feed request waits for its turn before answering 429.
const TURN_WAIT: Duration = Duration::from_secs(20);
/// Change summaries kept (each at most a few hundred characters).
const KEPT_SUMMARIES: usize = 20_000;
/// Feed documents kept (each 50 entries of a few hundred characters); past it they are
/// forgotten all at once and made again when asked for.
const KEPT_DOCUMENTS: usize = 1_000;

/// What bounds the work of feeds: rate limits, turns and the summaries computed.
pub struct FeedWork {
    networks: governor::DefaultKeyedRateLimiter<std::net::IpAddr>,
    feeds: governor::DefaultKeyedRateLimiter<String>,
    turns: Arc<crate::web::shared::turns::Turns>,
    summaries: Mutex<SummaryCache>,
    /// Documents by feed and address, with the latest change they hold.
    documents: Mutex<HashMap<String, (String, Arc<String>)>>,
}

impl std::fmt::Debug for FeedWork {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FeedWork").finish_non_exhaustive()
    }
}

fn quota((rate, burst): (u32, u32)) -> governor::Quota {
    let rate = NonZeroU32::new(rate).unwrap_or(NonZeroU32::MIN);
    governor::Quota::per_second(rate).allow_burst(NonZeroU32::new(burst).unwrap_or(rate))
}

impl Default for FeedWork {
    fn default() -> Self {
        FeedWork {
            networks: governor::RateLimiter::keyed(quota(PER_NETWORK)),
            feeds: governor::RateLimiter::keyed(quota(PER_FEED)),
            turns: Arc::new(crate::web::shared::turns::Turns::new(
                GATHERS_PER_OWNER,
                crate::web::shared::turns::Turns::half_the_cores(),
            )),
            summaries: Mutex::default(),
            documents: Mutex::default(),
        }
    }
}

/// Summaries by change (its entry's key), the oldest going first.
#[derive(Default)]
struct SummaryCache {
    order: VecDeque<String>,
    kept: HashMap<String, Arc<Summary>>,
}

impl FeedWork {
    /// Seconds to wait when `key`'s limiter has no request left.
    fn limited<K: std::hash::Hash + Eq + Clone>(
        limiter: &governor::DefaultKeyedRateLimiter<K>,
        key: &K,
    ) -> Option<u64> {
        use governor::clock::Clock;
        if limiter.len() > 100_000 {
            limiter.retain_recent();
        }
        limiter.check_key(key).err().map(|not_until| {
            let wait = not_until.wait_time_from(governor::clock::DefaultClock::default().now());
            wait.as_secs().max(1)
        })
    }

    fn summary(&self, key: &str) -> Option<Arc<Summary>> {
        self.lock().kept.get(key).cloned()
    }

    fn keep(&self, key: String, summary: Arc<Summary>) {
        let mut cache = self.lock();
        if cache.kept.insert(key.clone(), summary).is_none() {
            cache.order.push_back(key);
        }
        while cache.order.len() > KEPT_SUMMARIES {
            if let Some(oldest) = cache.order.pop_front() {
                cache.kept.remove(&oldest);
            }
        }
    }

    fn documents(&self) -> std::sync::MutexGuard<'_, HashMap<String, (String, Arc<String>)>> {
        self.documents
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, SummaryCache> {
        self.summaries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// 429 for a feed reader, with the wait.
fn too_many(seconds: u64) -> Response {
    let mut response = (
        StatusCode::TOO_MANY_REQUESTS,
        format!("Too many requests for feeds; try again in {seconds} s.\n"),
    )
        .into_response();
    if let Ok(value) = HeaderValue::from_str(&seconds.to_string()) {
        response.headers_mut().insert(header::RETRY_AFTER, value);
    }
    response
}

/// The user's feed of `scope` as the page shows it (a lookup failure shows none).
async fn feed_state(
    state: &Ctx,
    headers: &HeaderMap,
    session: &Session,
    scope: &FeedScope,
) -> Shown {
    let base = crate::origin::base_url(headers, &state.settings().web);
    feeds::shown(state, &session.user, scope, &base)
        .await
        .unwrap_or(Shown::None)
}

/// A folder's or monitor's page with its feed: announced in the head (the whole address with
/// its secret, which a feed reader fetches without a session) and offered in the page by the
/// `#feed` section: "Create a feed", or the address with copy and renew.
pub struct FeedParts {
    /// The `<link rel="alternate">` for the head, or nothing.
    pub head: Markup,
    /// The section for the page.
    pub section: Markup,
}

/// [`FeedParts`] of `scope` for a page titled `title`; the feed is renewed through a form that
/// comes back to `back` (a path of this service).
pub async fn feed_parts(
    state: &Ctx,
    headers: &HeaderMap,
    session: &Session,
    scope: &FeedScope,
    title: &str,
    back: &str,
) -> FeedParts {
    let found = feed_state(state, headers, session, scope).await;
    let target = match scope {
        FeedScope::All => "all".to_string(),
        FeedScope::Folder(id) => format!("folder:{id}"),
        FeedScope::Monitor(id) => format!("monitor:{id}"),
    };
    let what = match scope {
        FeedScope::All => "all your monitors",
        FeedScope::Folder(_) => "the monitors in this folder and its subfolders",
        FeedScope::Monitor(_) => "this monitor",
    };
    let renew_form = |label: &str, primary: bool| {
        html! {
            form.feed-renew method="post" action="/feeds/renew" {
                input type="hidden" name="csrf" value=(session.csrf);
                input type="hidden" name="target" value=(target);
                input type="hidden" name="back" value=(back);
                @if primary {
                    button.button.primary type="submit" { (label) }
                } @else {
                    button.button type="submit" { (label) }
                }
            }
        }
    };
    let head = match &found {
        Shown::Address(url) => html! {
            link rel="alternate" type="application/atom+xml" title={ "Changes of " (title) }
                href=(url);
        },
        Shown::None | Shown::Hidden => html! {},
    };
    let section = html! {
        section #feed aria-labelledby="feed-title" {
            h2 #feed-title { "Feed" }
            div.card.feed-panel {
                @match &found {
                    Shown::None => {
                        p.hint { "Follow the changes of " (what) " in a feed reader, without signing in." }
                        (renew_form("Create a feed", true))
                    }
                    Shown::Address(url) => {
                        label.feed-label for="feed-url" { "Atom feed address" }
                        div.feed-row {
                            input #feed-url.secret-value type="text" readonly value=(url)
                                aria-describedby="feed-hint";
                            button.button.copy type="button" data-copy="feed-url" hidden { "Copy" }
                            (renew_form("Renew address", false))
                        }
                        p.hint #feed-hint {
                            "Paste it into your feed reader to follow " (what)
                            ". Anyone with this address can read the feed; renewing it stops the old address."
                        }
                    }
                    Shown::Hidden => {
                        p.hint {
                            "This feed's address was made before addresses could be shown again, so it "
                            "cannot be shown. Renew it to get an address to copy; the old one stops working."
                        }
                        (renew_form("Renew address", true))
                    }
                }
            }
        }
    };
    FeedParts { head, section }
}

/// The form renewing a feed from its folder's or monitor's page.
#[derive(Debug, Default, Deserialize)]
pub struct RenewForm {
    target: Option<String>,
    back: Option<String>,
}

/// `POST /feeds/renew`: creates the user's feed of `target` (`all`, `folder:{id}`,
/// `monitor:{id}`) or gives it a new secret (the old address stops working), then back to the
/// page it was asked from, which shows the address. Another user's folder or monitor is the
/// same 404 page as an unknown one.
pub async fn renew(
    State(state): State<Ctx>,
    headers: HeaderMap,
    crate::web::shared::extract::SignedInForm { session, form }: crate::web::shared::extract::SignedInForm<RenewForm>,
) -> Response {
    let target = form.target.as_deref().unwrap_or("");
    let (kind, id) = target.split_once(':').unwrap_or((target, ""));
    let Ok(scope) = feeds::scope(Some(kind), Some(id.to_string())) else {
        return pages::bad_input(StatusCode::BAD_REQUEST, "Choose what the feed follows.");
    };
    let base = crate::origin::base_url(&headers, &state.settings().web);
    if let Err(err) = feeds::renew(&state, &session.user, &scope, &base).await {
        return pages::from_op(err, Some(&session));
    }
    // Back to the page asked from, only ever a path of this service.
    let back = form
        .back
        .filter(|back| back.starts_with('/') && !back.starts_with("//") && !back.contains('\\'))
        .unwrap_or_else(|| match &scope {
            FeedScope::All => "/".to_string(),
            FeedScope::Folder(id) => format!("/folders/{id}"),
            FeedScope::Monitor(id) => format!("/monitors/{id}"),
        });
    let back = back.split('#').next().unwrap_or("/").to_string();
    axum::response::Redirect::to(&format!("{back}#feed")).into_response()
}

/// The query of a feed.
#[derive(Debug, Default, Deserialize)]
pub struct FeedQuery {
    key: Option<String>,
}

/// `GET /feeds/all.atom`.
pub async fn all(
    State(state): State<Ctx>,
    axum::Extension(work): axum::Extension<Arc<FeedWork>>,
    ConnectInfo(client): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Query(query): Query<FeedQuery>,
) -> Response {
    let request = Request {
        state: &state,
        work: &work,
        client,
        headers: &headers,
    };
    serve(&request, FeedScope::All, query).await
}

/// `GET /feeds/folders/{id}.atom`.
pub async fn folder(
    State(state): State<Ctx>,
    axum::Extension(work): axum::Extension<Arc<FeedWork>>,
    ConnectInfo(client): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Path(file): Path<String>,
    Query(query): Query<FeedQuery>,
) -> Response {
    let request = Request {
        state: &state,
        work: &work,
        client,
        headers: &headers,
    };
    serve_file(&request, &file, FeedScope::Folder, query).await
}

/// `GET /feeds/monitors/{id}.atom`.
pub async fn monitor(
    State(state): State<Ctx>,
    axum::Extension(work): axum::Extension<Arc<FeedWork>>,
    ConnectInfo(client): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Path(file): Path<String>,
    Query(query): Query<FeedQuery>,
) -> Response {
    let request = Request {
        state: &state,
        work: &work,
        client,
        headers: &headers,
    };
    serve_file(&request, &file, FeedScope::Monitor, query).await
}

/// A feed request: the service, the bounds on feeds, and who asks.
struct Request<'a> {
    state: &'a Ctx,
    work: &'a FeedWork,
    client: SocketAddr,
    headers: &'a HeaderMap,
}

/// The feed of the folder or monitor `file` names (`{id}.atom`), or the 404 page.
async fn serve_file(
    request: &Request<'_>,
    file: &str,
    scope: fn(String) -> FeedScope,
    query: FeedQuery,
) -> Response {
    match file.strip_suffix(".atom") {
        Some(id) => serve(request, scope(id.to_string()), query).await,
        None => pages::not_found(None),
    }
}

/// Whose feed of `scope` the request may read: the owner of the feed whose secret it carries,
/// or (without a key) the signed-in user who has a feed of that scope.
async fn reader(
    state: &Ctx,
    headers: &HeaderMap,
    scope: &FeedScope,
    key: Option<&str>,
) -> Result<Option<String>, PageError> {
    match key.filter(|key| !key.is_empty()) {
        Some(key) if key.len() <= MAX_KEY_LEN => {
            Ok(feeds::reader(state, scope, Some(key), None).await?)
        }
        Some(_) => Ok(None),
        None => {
            let Some(session) = session::current(state, headers).await? else {
                return Ok(None);
            };
            Ok(feeds::reader(state, scope, None, Some(&session.user)).await?)
        }
    }
}

async fn serve(request: &Request<'_>, scope: FeedScope, query: FeedQuery) -> Response {
    let (state, headers, work) = (request.state, request.headers, request.work);
    // Guessed keys from one network are slowed before any lookup.
    let network = crate::ops::limits::client_network(request.client.ip());
    if let Some(seconds) = FeedWork::limited(&work.networks, &network) {
        return too_many(seconds);
    }
    let user = match reader(state, headers, &scope, query.key.as_deref()).await {
        Ok(Some(user)) => user,
        Ok(None) => return pages::not_found(None),
        Err(err) => return pages::from_error(err, None),
    };
    let feed_key = format!("{user}\n{}", feeds::path(&scope));
    if let Some(seconds) = FeedWork::limited(&work.feeds, &feed_key) {
        return too_many(seconds);
    }
    // The owner's feeds are gathered a few at a time: many readers of one user's feeds wait
    // for that user's turns, never for another's.
    let Some(_turn) = work.turns.take(&user, TURN_WAIT).await else {
        return too_many(TURN_WAIT.as_secs());
    };
    let title = match feeds::list(state, &user).await {
        Ok(feeds) => feeds
            .into_iter()
            .find(|feed| feed.scope == scope)
            .and_then(|feed| feed.name),
        Err(err) => return pages::from_op(err, None),
    };
    let base = crate::origin::base_url(headers, &state.settings().web);
    // The document made for the latest change is served until a newer change arrives.
    let document_key = format!("{feed_key}\n{base}\n{title:?}");
    let latest = match feeds::changes(state, &user, &scope, 1).await {
        Ok(changes) => changes.first().map(summary_key).unwrap_or_default(),
        Err(err) => return pages::from_op(err, None),
    };
    let kept = work
        .documents()
        .get(&document_key)
        .filter(|(at, _)| *at == latest)
        .map(|(_, body)| body.clone());
    if let Some(body) = kept {
        return atom(body.as_str().to_owned());
    }
    let changes = match feeds::changes(state, &user, &scope, ENTRIES).await {
        Ok(changes) => changes,
        Err(err) => return pages::from_op(err, None),
    };
    // Each change is summarised once: those kept are taken, the new ones computed (a bounded
    // difference each, CPU work off the async threads) and kept.
    let mut summaries: Vec<(FeedChange, Option<Arc<Summary>>)> = changes
        .into_iter()
        .map(|change| {
            let kept = work.summary(&summary_key(&change));
            (change, kept)
        })
        .collect();
    if summaries.iter().any(|(_, kept)| kept.is_none()) {
        summaries = match tokio::task::spawn_blocking(move || {
            summaries
                .into_iter()
                .map(|(change, kept)| {
                    let summary = kept.unwrap_or_else(|| Arc::new(summary(&change)));
                    (change, Some(summary))
                })
                .collect::<Vec<_>>()
        })
        .await
        {
            Ok(summaries) => summaries,
            Err(err) => {
                tracing::error!(%err, "feed summaries failed");
                return pages::internal_error();
            }
        };
    }
    let summaries: Vec<(FeedChange, Arc<Summary>)> = summaries
        .into_iter()
        .filter_map(|(change, summary)| {
            let summary = summary?;
            work.keep(summary_key(&change), summary.clone());
            Some((change, summary))
        })
        .collect();
    let title = match (&scope, title) {
        (FeedScope::All, _) => "All monitors".to_string(),
        (_, Some(name)) => name,
        (_, None) => "(unnamed)".to_string(),
    };
    let body = document(&base, &scope, &title, &summaries);
    let newest = summaries
        .first()
        .map(|(change, _)| summary_key(change))
        .unwrap_or_default();
    {
        let mut documents = work.documents();
        if documents.len() >= KEPT_DOCUMENTS {
            documents.clear();
        }
        documents.insert(document_key, (newest, Arc::new(body.clone())));
    }
    atom(body)
}

/// The answer carrying a feed document.
fn atom(body: String) -> Response {
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/atom+xml; charset=utf-8"),
        )],
        body,
    )
        .into_response()
}

/// What names a change for its kept summary: its monitor and its entry (entries never change).
fn summary_key(change: &FeedChange) -> String {
    format!("{}\n{}\n{}", change.task_id, change.key.at, change.key.id)
}

/// What a change removed and added, in short.
struct Summary {
    removed: String,
    added: String,
}

fn summary(change: &FeedChange) -> Summary {
    let mut removed = String::new();
    let mut added = String::new();
    // Bounded like a difference page: large values are diffed by lines first.
    for element in crate::web::shared::difference::bounded_diff(&change.previous, &change.current) {
        let text = element.text.as_deref().unwrap_or("");
        let into = match element.operation {
            DiffOperation::Delete => &mut removed,
            DiffOperation::Insert => &mut added,
            DiffOperation::Equal => continue,
        };
        if into.chars().count() >= SUMMARY_CHARS {
            continue;
        }
        if !into.is_empty() {
            into.push_str(" … ");
        }
        into.push_str(text.trim());
    }
    Summary {
        removed: short(&removed),
        added: short(&added),
    }
}

fn short(text: &str) -> String {
    if text.chars().count() <= SUMMARY_CHARS {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(SUMMARY_CHARS).collect();
    cut.push('…');
    cut
}

/// `text` without the characters XML 1.0 does not allow even as references.
fn xml_text(text: &str) -> String {
    text.chars()
        .filter(|&c| {
            matches!(c, '\t' | '\n' | '\r')
                || ('\u{20}'..='\u{D7FF}').contains(&c)
                || ('\u{E000}'..='\u{FFFD}').contains(&c)
                || c >= '\u{10000}'
        })
        .collect()
}

fn rfc3339(millis: i64) -> String {
    chrono::DateTime::from_timestamp_millis(millis)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn document(
    base: &str,
    scope: &FeedScope,
    title: &str,
    entries: &[(FeedChange, Arc<Summary>)],
) -> String {
    let updated = entries
        .first()
        .map_or_else(|| rfc3339(0), |(change, _)| rfc3339(change.key.at));
    let page = match scope {
        FeedScope::All => format!("{base}/"),
        FeedScope::Folder(id) => format!("{base}/folders/{id}"),
        FeedScope::Monitor(id) => format!("{base}/monitors/{id}"),
    };
    let feed_id = format!("{base}{}", feeds::path(scope));
    // Empty elements are written open and closed (`{}`): maud writes `<link ...>` otherwise,
    // which is no XML.
    let markup = html! {
        feed xmlns="http://www.w3.org/2005/Atom" {
            title { (xml_text(&format!("Changes of {title} · wachet"))) }
            id { (xml_text(&feed_id)) }
            link rel="alternate" type="text/html" href=(xml_text(&page)) {}
            updated { (updated) }
            generator { "wachet" }
            @for (change, summary) in entries {
                @let name = change.task_name.as_deref().filter(|n| !n.is_empty()).unwrap_or(&change.url);
                @let link = format!("{base}/monitors/{}/diff?to={}-{}", change.task_id, change.key.at, change.key.id);
                entry {
                    title { (xml_text(&format!("{name} changed"))) }
                    id { "urn:wachet:change:" (xml_text(&change.key.id)) }
                    link rel="alternate" type="text/html" href=(xml_text(&link)) {}
                    updated { (rfc3339(change.key.at)) }
                    author { name { "wachet" } }
                    summary type="text" { (xml_text(&summary_text(summary))) }
                    content type="html" { (xml_text(&content_html(change, summary).into_string())) }
                }
            }
        }
    };
    format!(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n{}",
        markup.into_string()
    )
}

fn summary_text(summary: &Summary) -> String {
    match (summary.removed.is_empty(), summary.added.is_empty()) {
        (false, false) => format!("Removed: {}\nAdded: {}", summary.removed, summary.added),
        (false, true) => format!("Removed: {}", summary.removed),
        (true, false) => format!("Added: {}", summary.added),
        (true, true) => "Only spacing changed.".to_string(),
    }
}

/// The entry's HTML (escaped by maud here, then again as the element's text).
fn content_html(change: &FeedChange, summary: &Summary) -> Markup {
    html! {
        p { (change.url) }
        @if !summary.removed.is_empty() { p { "Removed: " del { (summary.removed) } } }
        @if !summary.added.is_empty() { p { "Added: " ins { (summary.added) } } }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_text_drops_what_xml_forbids_and_keeps_the_rest() {
        assert_eq!(xml_text("a\u{0}b\u{8}c\td\u{FFFE}é😀"), "abc\tdé😀");
    }

    #[test]
    fn a_summary_names_what_went_and_what_came() {
        let change = FeedChange {
            task_id: "1".into(),
            task_name: None,
            url: "http://x/".into(),
            key: crate::store::TimeKey {
                at: 0,
                id: "2".into(),
            },
            previous: "price 3.50 today".into(),
            current: "price 3.90 today".into(),
        };
        let summary = summary(&change);
        assert_eq!(summary_text(&summary), "Removed: 3.50\nAdded: 3.90");
    }
}
