//! Atom feeds of changes: of all of a user's monitors (`/feeds/all.atom`), of a folder with its
//! subfolders (`/feeds/folders/{id}.atom`) and of one monitor (`/feeds/monitors/{id}.atom`),
//! each read with the secret of that feed (`?key=`, kept only as its SHA-256), so a feed reader
//! follows without a session; the owner's signed-in browser needs no key. A wrong, renewed or
//! removed secret, or a secret of another feed, is the same 404 as an unknown id. Entries are
//! the changes the history holds: time, monitor name, the difference in short, a link to the
//! difference page. The document is written with maud, which escapes `&`, `<`, `>` and `"`;
//! characters XML 1.0 forbids even escaped (most control characters) are dropped first.
//! Also here: the `<link rel="alternate">` that the monitor's and folder's pages carry when a
//! feed of theirs exists.

use super::WebSettings;
use super::assets::Asset;
use super::layout::page_with_head;
use super::pages;
use super::session::{self, Session};
use crate::api::AppState;
use crate::store::{FeedChange, FeedScope, FeedStore};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};
use serde::Deserialize;
use wachet::model::DiffOperation;

/// Entries in a feed: the latest changes.
const ENTRIES: u32 = 50;
/// Characters of removed or added text shown in an entry.
const SUMMARY_CHARS: usize = 300;
/// Longest `key` looked at; ours are 43 characters.
const MAX_KEY_LEN: usize = 256;

/// Where the feed of `scope` is served (without its secret).
pub fn feed_path(scope: &FeedScope) -> String {
    match scope {
        FeedScope::All => "/feeds/all.atom".to_string(),
        FeedScope::Folder(id) => format!("/feeds/folders/{id}.atom"),
        FeedScope::Monitor(id) => format!("/feeds/monitors/{id}.atom"),
    }
}

/// The address of this service as the request reached it: the public URL when one is set,
/// else the `Host` the browser used (https when a proxy in front says so).
pub fn base_url(headers: &HeaderMap, settings: &WebSettings) -> String {
    if let Some(public) = settings.public_url.as_deref() {
        return public.trim_end_matches('/').to_string();
    }
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .filter(|host| {
            host.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b))
        })
        .unwrap_or("localhost");
    let scheme = if session::secure(headers, settings) {
        "https"
    } else {
        "http"
    };
    format!("{scheme}://{host}")
}

/// The feed's whole URL with its secret, for a feed reader.
pub fn feed_url(
    headers: &HeaderMap,
    settings: &WebSettings,
    scope: &FeedScope,
    secret: &str,
) -> String {
    format!(
        "{}{}?key={secret}",
        base_url(headers, settings),
        feed_path(scope)
    )
}

/// A whole page like [`super::layout::page_with_scripts`], announcing the feed of `scope` in
/// its head when the user has one (a lookup failure only leaves the announcement out).
pub async fn page_with_feed(
    feeds: &dyn FeedStore,
    session: &Session,
    scope: FeedScope,
    title: &str,
    scripts: &[&Asset],
    main: Markup,
) -> Markup {
    let exists = feeds
        .feeds(&session.user)
        .await
        .map(|feeds| feeds.iter().any(|feed| feed.scope == scope))
        .unwrap_or(false);
    let head = html! {
        @if exists {
            link rel="alternate" type="application/atom+xml" title={ "Changes of " (title) }
                href=(feed_path(&scope));
        }
    };
    page_with_head(title, Some(session), scripts, head, main)
}

/// [`page_with_feed`] for a folder's page (`None`: the root, whose feed is of all monitors).
pub async fn page_for_folder(
    feeds: &dyn FeedStore,
    session: &Session,
    folder: Option<&str>,
    title: &str,
    scripts: &[&Asset],
    main: Markup,
) -> Markup {
    let scope = folder.map_or(FeedScope::All, |id| FeedScope::Folder(id.to_string()));
    page_with_feed(feeds, session, scope, title, scripts, main).await
}

/// The query of a feed.
#[derive(Debug, Default, Deserialize)]
pub struct FeedQuery {
    key: Option<String>,
}

/// `GET /feeds/all.atom`.
pub async fn all(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(query): Query<FeedQuery>,
) -> Response {
    serve(&state, &headers, FeedScope::All, query).await
}

/// `GET /feeds/folders/{id}.atom`.
pub async fn folder(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(file): Path<String>,
    Query(query): Query<FeedQuery>,
) -> Response {
    serve_file(&state, &headers, &file, FeedScope::Folder, query).await
}

/// `GET /feeds/monitors/{id}.atom`.
pub async fn monitor(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(file): Path<String>,
    Query(query): Query<FeedQuery>,
) -> Response {
    serve_file(&state, &headers, &file, FeedScope::Monitor, query).await
}

/// The feed of the folder or monitor `file` names (`{id}.atom`), or the 404 page.
async fn serve_file(
    state: &AppState,
    headers: &HeaderMap,
    file: &str,
    scope: fn(String) -> FeedScope,
    query: FeedQuery,
) -> Response {
    match file.strip_suffix(".atom") {
        Some(id) => serve(state, headers, scope(id.to_string()), query).await,
        None => pages::not_found(None),
    }
}

/// Whose feed of `scope` the request may read: the owner of the feed whose secret it carries,
/// or (without a key) the signed-in user who has a feed of that scope.
async fn reader(
    state: &AppState,
    headers: &HeaderMap,
    scope: &FeedScope,
    key: Option<&str>,
) -> Result<Option<String>, crate::api::problem::ApiError> {
    match key.filter(|key| !key.is_empty()) {
        Some(key) if key.len() <= MAX_KEY_LEN => {
            let hash = crate::secrets::sha256_hex(key);
            Ok(state
                .store()
                .feed_by_secret(&hash)
                .await?
                .filter(|feed| &feed.scope == scope)
                .map(|feed| feed.user_id))
        }
        Some(_) => Ok(None),
        None => {
            let Some(session) = session::current(state, headers).await? else {
                return Ok(None);
            };
            let feeds = state.store().feeds(&session.user).await?;
            Ok(feeds
                .iter()
                .any(|feed| &feed.scope == scope)
                .then_some(session.user))
        }
    }
}

async fn serve(
    state: &AppState,
    headers: &HeaderMap,
    scope: FeedScope,
    query: FeedQuery,
) -> Response {
    let user = match reader(state, headers, &scope, query.key.as_deref()).await {
        Ok(Some(user)) => user,
        Ok(None) => return pages::not_found(None),
        Err(err) => return pages::from_api(err, None),
    };
    let title = match state.store().feeds(&user).await {
        Ok(feeds) => feeds
            .into_iter()
            .find(|feed| feed.scope == scope)
            .and_then(|feed| feed.name),
        Err(err) => return pages::from_api(err.into(), None),
    };
    let changes = match state.store().feed_changes(&user, &scope, ENTRIES).await {
        Ok(changes) => changes,
        Err(err) => return pages::from_api(err.into(), None),
    };
    // Differences are CPU work (values up to the store's cut each): off the async threads.
    let summaries = match tokio::task::spawn_blocking(move || {
        changes
            .into_iter()
            .map(|change| {
                let summary = summary(&change);
                (change, summary)
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
    let base = base_url(headers, &state.settings().web);
    let title = match (&scope, title) {
        (FeedScope::All, _) => "All monitors".to_string(),
        (_, Some(name)) => name,
        (_, None) => "(unnamed)".to_string(),
    };
    let body = document(&base, &scope, &title, &summaries);
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

/// What a change removed and added, in short.
struct Summary {
    removed: String,
    added: String,
}

fn summary(change: &FeedChange) -> Summary {
    let mut removed = String::new();
    let mut added = String::new();
    for element in wachet::diff::diff(&change.previous, &change.current) {
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
    entries: &[(FeedChange, Summary)],
) -> String {
    let updated = entries
        .first()
        .map_or_else(|| rfc3339(0), |(change, _)| rfc3339(change.key.at));
    let page = match scope {
        FeedScope::All => format!("{base}/"),
        FeedScope::Folder(id) => format!("{base}/folders/{id}"),
        FeedScope::Monitor(id) => format!("{base}/monitors/{id}"),
    };
    let feed_id = format!("{base}{}", feed_path(scope));
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
