//! The difference between two history entries of a monitor
//! (`/monitors/{id}/diff?from=A&to=B`, entries named as [`EntryKey`]s; without `to`, the
//! latest change; without `from`, the value before `to`), computed by the engine's word diff
//! ([`wachet::diff::diff`]) and shown inline: deletions in `<del>`, insertions in `<ins>`,
//! unchanged runs of more than a few lines folded into a `<details>`, and each change an
//! anchor (`#change-1`, …) with links to the previous and next, so the keyboard walks them.
//! A malformed or unknown entry is a 400 page saying which; another user's monitor is the
//! 404 page. Values of many megabytes give a bounded page in bounded time: they are diffed by
//! lines first (word by word only inside changed lines), long unchanged runs and long changes
//! are cut short, the page's markup is bounded (each change counted with its links), and the
//! page says so and where the whole values are. The work runs on the blocking pool in turns
//! ([`Diffs`]): two pages per user at once, CPU work on half the cores in all, and a page of a
//! pair of entries already computed comes from a bounded cache (entries never change).

use crate::ops::Ctx;
use crate::store::{TimeKey, TimePage};
use crate::web::monitors::history::{EntryKey, Subject, value_before};
use crate::web::shared::clock::Now;
use crate::web::shared::difference::bounded_diff;
use crate::web::shared::error::PageError;
use crate::web::shared::extract::own_monitor;
use crate::web::shared::format::head;
use crate::web::shared::format::size_in_words;
use crate::web::shared::layout::page;
use crate::web::shared::pages;
use crate::web::shared::pages::{bad_entry, bad_request};
use crate::web::shared::session::Session;
use crate::web::shared::turns::Turns;
use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use maud::{Markup, PreEscaped, html};
use serde::Deserialize;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use wachet::model::{ClientData, DiffElement, DiffOperation};

/// Lines of context kept beside a change when the unchanged run between is folded.
const CONTEXT_LINES: usize = 3;
/// An unchanged run longer than this shows only its two ends.
const LONG_SAME_BYTES: usize = 16 * 1024;
/// Bytes kept at each end of a long unchanged run.
const SAME_END_BYTES: usize = 2 * 1024;
/// Bytes shown of one side of a change.
const CHANGE_BYTES: usize = 32 * 1024;
/// Bytes of markup a column of the difference shows (text as escaped, each change with its
/// anchor and links); the changes after are counted, not shown.
const SHOWN_BYTES: usize = 200 * 1024;
/// Bytes of markup one change adds around its text (its anchor, `<del>`/`<ins>`, its links).
const CHANGE_MARKUP_BYTES: usize = 400;
/// Difference pages one user may have computed at once; more wait for them.
const DIFFS_PER_USER: usize = 2;
/// Difference pages computed at once in all (their CPU work is bounded apart, see [`Diffs`]).
const DIFFS_IN_ALL: usize = 32;
/// How long a page waits for its turn before answering "try again".
const TURN_WAIT: Duration = Duration::from_secs(30);
/// Bytes of rendered differences kept.
const CACHE_BYTES: usize = 32 * 1024 * 1024;

/// The turns of difference pages and the cache of those computed lately.
#[derive(Debug)]
pub struct Diffs {
    /// Pages being made, per user and in all (from reading the values to the markup).
    pages: Arc<Turns>,
    /// Diffs being computed at once: half the cores, the rest left to the API's requests.
    cpu: tokio::sync::Semaphore,
    cache: Mutex<Cache>,
}

impl Default for Diffs {
    fn default() -> Self {
        Diffs {
            pages: Arc::new(Turns::new(DIFFS_PER_USER, DIFFS_IN_ALL)),
            cpu: tokio::sync::Semaphore::new(Turns::half_the_cores()),
            cache: Mutex::default(),
        }
    }
}

/// A difference as shown, whatever page it is on.
#[derive(Debug)]
struct Rendered {
    body: String,
    count: usize,
    cut: bool,
}

/// Rendered differences by their pair of entries and layout, the oldest going first past
/// [`CACHE_BYTES`].
#[derive(Debug, Default)]
struct Cache {
    order: VecDeque<String>,
    rendered: HashMap<String, Arc<Rendered>>,
    bytes: usize,
}

impl Diffs {
    fn cached(&self, key: &str) -> Option<Arc<Rendered>> {
        self.cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .rendered
            .get(key)
            .cloned()
    }

    fn keep(&self, key: String, rendered: Arc<Rendered>) {
        let mut cache = self
            .cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if cache.rendered.contains_key(&key) || rendered.body.len() > CACHE_BYTES / 8 {
            return;
        }
        cache.bytes += rendered.body.len();
        cache.order.push_back(key.clone());
        cache.rendered.insert(key, rendered);
        while cache.bytes > CACHE_BYTES {
            let Some(oldest) = cache.order.pop_front() else {
                break;
            };
            if let Some(gone) = cache.rendered.remove(&oldest) {
                cache.bytes -= gone.body.len();
            }
        }
    }
}

#[derive(Debug, Default, Deserialize)]
struct DiffQuery {
    from: Option<String>,
    to: Option<String>,
    view: Option<String>,
}

/// One side of the difference: its entry (none for the empty value before the first) and value.
struct Side {
    key: Option<TimeKey>,
    data: Option<ClientData>,
    value: String,
}

/// What went wrong finding an entry: a page for the user, or an error of the store.
enum Lookup {
    Bad(&'static str),
    Failed(PageError),
}

/// The entry `key` of monitor `id`, with its value.
async fn entry(
    state: &Ctx,
    user: &str,
    id: &str,
    key: &TimeKey,
) -> Result<(TimeKey, ClientData, String), Lookup> {
    let page = TimePage {
        from: Some(key.at),
        to: Some(key.at),
        limit: 20,
        after: None,
    };
    let rows = crate::ops::history::entries(state, user, id, &page)
        .await
        .map_err(|err| Lookup::Failed(err.into()))?;
    let Some((found, data)) = rows.into_iter().find(|(k, _)| k == key) else {
        return Err(Lookup::Bad("names no check of this monitor"));
    };
    let Some(value) = data.raw.clone() else {
        return Err(Lookup::Bad("names a failed check, which has no value"));
    };
    Ok((found, data, value))
}

/// The entry where the monitor's value last changed.
async fn latest_change(
    state: &Ctx,
    user: &str,
    id: &str,
    changed_at: i64,
) -> Result<Option<(TimeKey, ClientData, String)>, PageError> {
    let page = TimePage {
        to: Some(changed_at),
        limit: 1,
        ..TimePage::default()
    };
    let rows = crate::ops::history::entries(state, user, id, &page).await?;
    Ok(rows
        .into_iter()
        .find_map(|(key, data)| data.raw.clone().map(|raw| (key, data, raw))))
}

/// `GET /monitors/{id}/diff`.
pub async fn show(
    State(state): State<Ctx>,
    axum::Extension(diffs): axum::Extension<Arc<Diffs>>,
    headers: HeaderMap,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> Response {
    let (session, monitor) = match own_monitor(&state, &headers, &id).await {
        Ok(found) => found,
        Err(response) => return response,
    };
    show_of(
        &state,
        &diffs,
        &session,
        &Subject::monitor(&monitor),
        query.as_deref(),
    )
    .await
}

/// The difference page of `subject` (a monitor, or a crawled page of one).
pub(crate) async fn show_of(
    state: &Ctx,
    diffs: &Diffs,
    session: &Session,
    subject: &Subject,
    query: Option<&str>,
) -> Response {
    let id = subject.entries.as_str();
    let Ok(query) = serde_urlencoded::from_str::<DiffQuery>(query.unwrap_or("")) else {
        return bad_request(
            session,
            "The address of this page is malformed: give “from” and “to” at most once each.",
        );
    };
    let mut keys = [None, None];
    for (slot, (field, text)) in keys
        .iter_mut()
        .zip([("from", &query.from), ("to", &query.to)])
    {
        if let Some(text) = text.as_deref().filter(|t| !t.is_empty()) {
            match EntryKey::parse(text) {
                Some(key) => *slot = Some(key.0),
                None => {
                    return bad_entry(
                        session,
                        field,
                        "is not the name of a check (a history link gives one)",
                    );
                }
            }
        }
    }
    let [from_key, to_key] = keys;
    let view = match query.view.as_deref() {
        None | Some("" | "inline") => View::Inline,
        Some("split") => View::Split,
        Some(_) => {
            return bad_entry(session, "view", "is neither “inline” nor “split”");
        }
    };
    let user = session.user.clone();
    // A user's pages wait for that user's own turns: many at once delay only them, and their
    // values are read only a few at a time.
    let Some(_turn) = diffs.pages.take(&user, TURN_WAIT).await else {
        return busy(session);
    };
    // The newer side: the entry asked for, else the latest change.
    let to = match to_key {
        Some(key) => match entry(state, &user, id, &key).await {
            Ok(found) => Some(found),
            Err(Lookup::Bad(problem)) => return bad_entry(session, "to", problem),
            Err(Lookup::Failed(err)) => return pages::from_error(err, Some(session)),
        },
        None => {
            let changed = subject
                .data
                .as_ref()
                .and_then(|d| d.value_changed_timestamp)
                .map(|t| t.timestamp_millis());
            match changed {
                Some(at) => match latest_change(state, &user, id, at).await {
                    Ok(found) => found,
                    Err(err) => return pages::from_error(err, Some(session)),
                },
                None => None,
            }
        }
    };
    let name = subject.name.as_str();
    let base = subject.base.clone();
    let Some((to_key, to_data, to_value)) = to else {
        let main = html! {
            (breadcrumbs(&base, name))
            section.card.message {
                h1 { "No value yet" }
                p { "This monitor has no successful check yet, so there is nothing to compare." }
                p { a.button href={ (base) "/history" } { "History" } }
            }
        };
        return page(&format!("Changes of {name}"), Some(session), main).into_response();
    };
    // The older side: the entry asked for, else the value before the newer one.
    let from = match from_key {
        Some(key) => match entry(state, &user, id, &key).await {
            Ok((key, data, value)) => Side {
                key: Some(key),
                data: Some(data),
                value,
            },
            Err(Lookup::Bad(problem)) => return bad_entry(session, "from", problem),
            Err(Lookup::Failed(err)) => return pages::from_error(err, Some(session)),
        },
        None => match value_before(state, &user, id, &to_key).await {
            Ok(Some((key, value))) => Side {
                data: None,
                key: Some(key),
                value,
            },
            Ok(None) => Side {
                key: None,
                data: None,
                value: String::new(),
            },
            Err(err) => return pages::from_error(err, Some(session)),
        },
    };
    let to = Side {
        key: Some(to_key),
        data: Some(to_data),
        value: to_value,
    };
    let param = |key: &Option<TimeKey>| {
        key.as_ref()
            .map_or_else(|| "-".to_string(), |k| EntryKey(k.clone()).to_param())
    };
    let cache_key = format!(
        "{user}\n{id}\n{}\n{}\n{view:?}",
        param(&from.key),
        param(&to.key)
    );
    let rendered = match diffs.cached(&cache_key) {
        Some(rendered) => rendered,
        None => {
            // Diffing large values is CPU work: off the async threads, on half the cores.
            let Ok(Ok(_cpu)) = tokio::time::timeout(TURN_WAIT, diffs.cpu.acquire()).await else {
                return busy(session);
            };
            // Another request for the same pair may have computed it meanwhile.
            if let Some(rendered) = diffs.cached(&cache_key) {
                return page_of(session, subject, &from, &to, &rendered, view);
            }
            let (old, new) = (from.value.clone(), to.value.clone());
            let work = tokio::task::spawn_blocking(move || {
                let elements = bounded_diff(&old, &new);
                let (body, count, cut) = render(&elements, view);
                Rendered {
                    body: body.into_string(),
                    count,
                    cut,
                }
            });
            match work.await {
                Ok(rendered) => {
                    let rendered = Arc::new(rendered);
                    diffs.keep(cache_key, rendered.clone());
                    rendered
                }
                Err(err) => {
                    return pages::from_error(
                        PageError::Internal(format!("diff: {err}")),
                        Some(session),
                    );
                }
            }
        }
    };
    page_of(session, subject, &from, &to, &rendered, view)
}

/// The difference page around a rendered difference.
fn page_of(
    session: &Session,
    subject: &Subject,
    from: &Side,
    to: &Side,
    rendered: &Rendered,
    view: View,
) -> Response {
    let id = subject.entries.as_str();
    let name = subject.name.as_str();
    let base = subject.base.clone();
    let (count, cut) = (rendered.count, rendered.cut);
    let body = PreEscaped(rendered.body.as_str());
    let large = from.value.len().max(to.value.len());
    let link = |view: &str| {
        let mut query = vec![];
        if let Some(key) = &from.key {
            query.push(format!("from={}", EntryKey(key.clone()).to_param()));
        }
        if let Some(key) = &to.key {
            query.push(format!("to={}", EntryKey(key.clone()).to_param()));
        }
        query.push(format!("view={view}"));
        format!("{base}/diff?{}", query.join("&"))
    };
    let main = html! {
        (breadcrumbs(&base, name))
        div.page-head {
            h1 { "Changes of " (name) }
            a.button href={ (base) "/history" } { "History" }
        }
        div.card.diff-head {
            p.sides {
                span { span.legend.legend-del { "Before" } " " (side_label(from, Now::of(session))) }
                span { span.legend.legend-ins { "After" } " " (side_label(to, Now::of(session))) }
            }
            @if from.key.is_none() {
                p.hint { "This is the first value of the monitor: all of it is new." }
            }
            @if cut {
                p.hint.cut {
                    "These values are large (up to " (size_in_words(large)) "), so parts of the "
                    "difference are cut short here, each place saying what it leaves out. "
                    "The whole values are in the API's history: "
                    code { "GET /thirdparty/v1/data/list/" (id) } "."
                }
            }
            p.change-count {
                @match count {
                    0 => "No difference between these two values.",
                    1 => { "1 change. " a href="#change-1" { "Go to it" } },
                    n => { (n) " changes. " a href="#change-1" { "Go to the first" } },
                }
            }
        }
        nav.views aria-label="Layout" {
            @if view == View::Inline {
                a href=(link("inline")) aria-current="page" { "Inline" }
                a href=(link("split")) { "Side by side" }
            } @else {
                a href=(link("inline")) { "Inline" }
                a href=(link("split")) aria-current="page" { "Side by side" }
            }
        }
        (body)
    };
    crate::web::shared::layout::page_with_scripts(
        &format!("Changes of {name}"),
        Some(session),
        &[&crate::web::assets::DIFF_JS],
        main,
    )
    .into_response()
}

/// 429 with a wait: the user's other difference pages (or everyone's) are still being made.
fn busy(session: &Session) -> Response {
    pages::too_many(TURN_WAIT.as_secs(), Some(session))
}

fn breadcrumbs(base: &str, name: &str) -> Markup {
    html! {
        nav.breadcrumbs aria-label="Breadcrumbs" {
            ol {
                li { a href="/" { "All monitors" } }
                li { a href=(base) { (name) } }
                li { a href={ (base) "/history" } { "History" } }
                li { a href="" aria-current="page" { "Changes" } }
            }
        }
    }
}

fn side_label(side: &Side, now: Now) -> Markup {
    let at = side
        .data
        .as_ref()
        .map(|d| d.last_check_timestamp)
        .or_else(|| {
            side.key
                .as_ref()
                .and_then(|k| chrono::DateTime::from_timestamp_millis(k.at))
        });
    match at {
        Some(at) => html! {
            (now.exact_time(at))
        },
        None => html! { "(nothing)" },
    }
}

/// How the difference is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum View {
    /// One text, deletions and insertions in place.
    Inline,
    /// The old value beside the new (stacked on narrow screens).
    Split,
}

/// Which sides of a change a column shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Column {
    Both,
    Old,
    New,
}

/// The longest end of `text` of at most `max` bytes starting at a character boundary.
fn tail(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

/// Bytes of markup `text` becomes: each character that is escaped counts as its escape.
fn weight(text: &str) -> usize {
    text.len()
        + 5 * text
            .bytes()
            .filter(|b| matches!(b, b'<' | b'>' | b'&' | b'"'))
            .count()
}

/// The parts as shown: long unchanged runs reduced to their ends, long changes to their
/// start, and nothing past [`SHOWN_BYTES`] but the number of changes left. Whether anything
/// was cut.
fn bound<'a>(parts: Vec<Part<'a>>) -> (Vec<Part<'a>>, bool) {
    let mut shown: Vec<Part<'a>> = Vec::with_capacity(parts.len());
    let mut bytes = 0usize;
    let mut cut = false;
    let changes = parts
        .iter()
        .filter(|p| matches!(p, Part::Change(..)))
        .count();
    let mut seen = 0;
    for part in parts {
        if bytes > SHOWN_BYTES {
            cut = true;
            shown.push(Part::Rest(changes - seen));
            break;
        }
        match part {
            Part::Same(text) if text.len() > LONG_SAME_BYTES => {
                cut = true;
                // Whole lines at each end, when the run has lines.
                let start = head(text, SAME_END_BYTES);
                let start = start.rfind('\n').map_or(start, |at| &start[..=at]);
                let end = tail(text, SAME_END_BYTES);
                let end = end.find('\n').map_or(end, |at| &end[at + 1..]);
                bytes += weight(start) + weight(end) + CHANGE_MARKUP_BYTES;
                shown.push(Part::Same(start));
                shown.push(Part::Left(text.len() - start.len() - end.len(), false));
                shown.push(Part::Same(end));
            }
            Part::Change(deleted, inserted) => {
                seen += 1;
                bytes += CHANGE_MARKUP_BYTES;
                let mut side = |text: Option<&'a str>| {
                    text.map(|text| {
                        let start = head(text, CHANGE_BYTES);
                        bytes += weight(start);
                        (start, text.len() - start.len())
                    })
                };
                let (deleted, inserted) = (side(deleted), side(inserted));
                shown.push(Part::Change(
                    deleted.map(|(text, _)| text),
                    inserted.map(|(text, _)| text),
                ));
                let left = deleted.map_or(0, |(_, n)| n) + inserted.map_or(0, |(_, n)| n);
                if left > 0 {
                    cut = true;
                    shown.push(Part::Left(left, true));
                }
            }
            other => {
                if let Part::Same(text) = other {
                    bytes += weight(text);
                }
                shown.push(other);
            }
        }
    }
    (shown, cut)
}

/// The diff as markup, with the number of changes (runs of deletions and insertions between
/// unchanged text) and whether it was cut short.
fn render(elements: &[DiffElement], view: View) -> (Markup, usize, bool) {
    // Group into unchanged runs and changes (a delete and/or an insert between them).
    let mut parts: Vec<Part> = Vec::new();
    for element in elements {
        let text = element.text.as_deref().unwrap_or("");
        match (element.operation, parts.last_mut()) {
            (DiffOperation::Equal, _) => parts.push(Part::Same(text)),
            (DiffOperation::Insert, Some(Part::Change(_, inserted @ None))) => {
                *inserted = Some(text);
            }
            (DiffOperation::Delete, _) => parts.push(Part::Change(Some(text), None)),
            (DiffOperation::Insert, _) => parts.push(Part::Change(None, Some(text))),
        }
    }
    let total = parts
        .iter()
        .filter(|p| matches!(p, Part::Change(..)))
        .count();
    let (parts, cut) = bound(parts);
    let markup = match view {
        View::Inline => html! {
            div.diff.card role="region" aria-label="Difference" { (column(&parts, total, Column::Both)) }
        },
        View::Split => html! {
            div.split {
                section.side aria-labelledby="side-old" {
                    h2 #side-old { span.legend.legend-del { "Before" } }
                    div.diff.card { (column(&parts, total, Column::Old)) }
                }
                section.side aria-labelledby="side-new" {
                    h2 #side-new { span.legend.legend-ins { "After" } }
                    div.diff.card { (column(&parts, total, Column::New)) }
                }
            }
        },
    };
    (markup, total, cut)
}

/// A run of a diff: unchanged text, or what was deleted and what was inserted in its place.
enum Part<'a> {
    Same(&'a str),
    Change(Option<&'a str>, Option<&'a str>),
    /// Bytes not shown here: of an unchanged run (`false`) or of the change before (`true`).
    Left(usize, bool),
    /// The number of changes not shown at all, past what a page shows.
    Rest(usize),
}

/// One column of the diff. The changes are anchors with previous and next links in the
/// column holding the new value (or the only one); the old column of a split view has
/// none, so each anchor exists once.
fn column(parts: &[Part], total: usize, which: Column) -> Markup {
    let last = parts.len().saturating_sub(1);
    let numbers: Vec<usize> = parts
        .iter()
        .scan(0, |n, p| {
            if matches!(p, Part::Change(..)) {
                *n += 1;
            }
            Some(*n)
        })
        .collect();
    let anchors = which != Column::Old;
    // A page cut short has fewer anchors than changes: the last shown links to no next.
    let shown = numbers.last().copied().unwrap_or(0);
    html! {
        @for (i, part) in parts.iter().enumerate() {
            @match part {
                Part::Same(text) => (unchanged(text, i > 0, i < last)),
                Part::Left(bytes, false) => {
                    span.left.muted { "… " (size_in_words(*bytes)) " unchanged, not shown here …\n" }
                }
                Part::Left(bytes, true) => {
                    span.left.muted { " … and " (size_in_words(*bytes)) " more of this change, not shown here … " }
                }
                Part::Rest(changes) => {
                    p.left.muted {
                        "The rest of the difference is not shown: it is longer than a page shows"
                        @match changes {
                            0 => ".",
                            1 => " (1 more change).",
                            n => { " (" (n) " more changes)." },
                        }
                    }
                }
                Part::Change(deleted, inserted) => {
                    @let n = numbers[i];
                    @let deleted = deleted.filter(|_| which != Column::New);
                    @let inserted = inserted.filter(|_| which != Column::Old);
                    @if anchors {
                        span.change id={ "change-" (n) } tabindex="-1" {
                            @if let Some(d) = deleted { del { (d) } }
                            @if let Some(ins) = inserted { ins { (ins) } }
                        }
                        span.change-nav {
                            @if n > 1 {
                                a href={ "#change-" (n - 1) } aria-label={ "Previous change (" (n - 1) " of " (total) ")" } { "↑" }
                            }
                            @if n < shown {
                                a href={ "#change-" (n + 1) } aria-label={ "Next change (" (n + 1) " of " (total) ")" } { "↓" }
                            }
                        }
                    } @else {
                        span.change {
                            @if let Some(d) = deleted { del { (d) } }
                        }
                    }
                }
            }
        }
    }
}

/// An unchanged run: whole when short, else the lines next to the changes around it with
/// the rest folded. `before`/`after`: whether a change precedes or follows it.
fn unchanged(text: &str, before: bool, after: bool) -> Markup {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let head = if before { CONTEXT_LINES } else { 0 };
    let tail = if after { CONTEXT_LINES } else { 0 };
    // Folding fewer than a few lines hides nothing worth the click.
    if lines.len() <= head + tail + CONTEXT_LINES {
        return html! { (text) };
    }
    let folded = lines.len() - head - tail;
    let (start, rest) = lines.split_at(head);
    let (middle, end) = rest.split_at(folded);
    html! {
        (start.concat())
        details.fold {
            summary { (folded) " unchanged lines" }
            (middle.concat())
        }
        (end.concat())
    }
}
