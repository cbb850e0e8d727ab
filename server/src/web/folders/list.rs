//! The monitors list: the root (`/`) or a folder (`/folders/{id}`) with breadcrumbs, its
//! subfolders with their recursive counts, its monitors with their state (the error of a
//! failed check), last check, last change and a strip of their last checks, the quick-add
//! form, which stores a monitor through the API's own `PUT /task` code (the same validation),
//! and the search and filters: the API's own search (`GET /task/search`) narrowed to failed or
//! paused monitors, in this folder (and below) or everywhere, all kept in the address
//! (`?q=tea&state=failed&scope=all`). The monitors sit in the bulk actions' form
//! ([`crate::web::folders::bulk`]). Another user's folder is the same 404 page as an unknown id.

use crate::ops::Ctx;
use crate::ops::{OpError, folders as folder_ops, history, monitors};
use crate::store::{FeedScope, TimePage};
use crate::web::folders::bulk::Done;
use crate::web::shared::clock::Now;
use crate::web::shared::error::PageError;
use crate::web::shared::extract::SignedInForm;
use crate::web::shared::format::linkable;
use crate::web::shared::once;
use crate::web::shared::pages;
use crate::web::shared::session::{self, Session};
use crate::web::shared::tree::{self, name_of};
use crate::web::shared::words::state_of;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use serde::Deserialize;
use wachet::model::{Alert, AlertType, ClientData, Monitor};

/// Most items shown on one folder page (subfolders and monitors together).
const PAGE_ITEMS: u32 = 500;
/// The quick-add's recurrence: every hour.
const QUICK_ADD_RECURRENCE: i32 = 3600;
/// Checks shown in a monitor's strip.
pub(crate) const STRIP: u32 = 10;
/// Strips read from the store at once.
const STRIP_READS: usize = 8;

/// What the quick-add form shows: the URL typed and what was wrong with it.
#[derive(Debug, Default)]
struct QuickAdd {
    url: String,
    error: Option<String>,
}

/// Which monitors the list shows by state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum StateFilter {
    #[default]
    Any,
    Failed,
    Paused,
}

/// The list's address query.
#[derive(Debug, Default, Deserialize)]
struct ListQuery {
    q: Option<String>,
    state: Option<String>,
    scope: Option<String>,
    done: Option<String>,
    n: Option<u32>,
}

/// The search and filters as the address gives them.
#[derive(Debug, Default)]
struct Filters {
    q: String,
    state: StateFilter,
    /// Everywhere rather than in this folder and below.
    everywhere: bool,
    /// What the API said of the search expression.
    error: Option<String>,
}

impl Filters {
    fn active(&self) -> bool {
        !self.q.trim().is_empty() || self.state != StateFilter::Any
    }

    /// The address query that keeps them (`q=..&state=..`), empty when none is set.
    fn query(&self) -> String {
        let mut pairs = form_urlencoded::Serializer::new(String::new());
        if !self.q.is_empty() {
            pairs.append_pair("q", &self.q);
        }
        match self.state {
            StateFilter::Any => {}
            StateFilter::Failed => {
                pairs.append_pair("state", "failed");
            }
            StateFilter::Paused => {
                pairs.append_pair("state", "paused");
            }
        }
        if self.everywhere {
            pairs.append_pair("scope", "all");
        }
        pairs.finish()
    }
}

/// `GET /`: the root folder.
pub async fn root(
    State(state): State<Ctx>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Response {
    show(&state, &headers, None, query.as_deref()).await
}

/// `GET /folders/{id}`.
pub async fn folder(
    State(state): State<Ctx>,
    headers: HeaderMap,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> Response {
    show(&state, &headers, Some(&id), query.as_deref()).await
}

async fn show(
    state: &Ctx,
    headers: &HeaderMap,
    folder: Option<&str>,
    query: Option<&str>,
) -> Response {
    let session = match session::current(state, headers).await {
        Ok(Some(session)) => session,
        Ok(None) => return Redirect::to("/signin").into_response(),
        Err(err) => return pages::from_error(err, None),
    };
    let query: ListQuery = match serde_urlencoded::from_str(query.unwrap_or("")) {
        Ok(query) => query,
        Err(_) => {
            return crate::web::shared::pages::bad_request(
                &session,
                "The address of this list could not be read.",
            );
        }
    };
    let state_filter = match query.state.as_deref().unwrap_or("") {
        "" | "all" => StateFilter::Any,
        "failed" => StateFilter::Failed,
        "paused" => StateFilter::Paused,
        _ => {
            return crate::web::shared::pages::bad_request(
                &session,
                "The filter “state” must be failed, paused or empty.",
            );
        }
    };
    let filters = Filters {
        q: query.q.unwrap_or_default(),
        state: state_filter,
        everywhere: folder.is_some() && query.scope.as_deref() == Some("all"),
        error: None,
    };
    let notice = query
        .done
        .as_deref()
        .and_then(Done::parse)
        .map(|done| done.sentence(query.n.unwrap_or(0)));
    let view = View {
        headers,
        folder,
        quick: QuickAdd::default(),
        filters,
        notice,
    };
    listing(state, &session, view, StatusCode::OK).await
}

/// What one rendering of the list shows.
struct View<'a> {
    /// The request's headers: the feed's address is written with the host it came to.
    headers: &'a HeaderMap,
    folder: Option<&'a str>,
    quick: QuickAdd,
    filters: Filters,
    notice: Option<String>,
}

/// The monitors the search and filters select, with the folder path of each (when searching
/// everywhere), and whether the API's search stopped at its most results.
async fn search(
    state: &Ctx,
    session: &Session,
    folder: Option<&str>,
    filters: &mut Filters,
) -> Result<(Vec<Monitor>, Option<tree::Tree>, bool), PageError> {
    let found = monitors::search(state, &session.user, &filters.q).await;
    let found = match found {
        Ok(found) => found,
        Err(OpError::Invalid { detail, errors }) => {
            let message = errors
                .get("query")
                .and_then(|m| m.first())
                .cloned()
                .unwrap_or(detail);
            filters.error = Some(format!("The search {message}."));
            return Ok((Vec::new(), None, false));
        }
        Err(other) => return Err(other.into()),
    };
    let truncated = found.len() >= monitors::MAX_SEARCH_RESULTS as usize;
    // Everywhere: the tree names each monitor's folder. In a folder: the tree says what lies
    // below it.
    let start = if filters.everywhere { None } else { folder };
    let tree = tree::walk(state, &session.user, start, false).await?;
    let within = |m: &Monitor| match (filters.everywhere, folder) {
        (true, _) | (_, None) => true,
        (false, Some(folder)) => m
            .folder_id
            .as_deref()
            .is_some_and(|f| f == folder || tree.contains(f)),
    };
    let selected = found
        .into_iter()
        .filter(|m| within(m))
        .filter(|m| match filters.state {
            StateFilter::Any => true,
            StateFilter::Failed => !is_paused(m) && error_of(m).is_some(),
            StateFilter::Paused => is_paused(m),
        })
        .collect();
    Ok((selected, Some(tree), truncated))
}

fn is_paused(monitor: &Monitor) -> bool {
    monitor.recurrence_in_seconds.unwrap_or(0) == 0
}

fn error_of(monitor: &Monitor) -> Option<&str> {
    monitor.data.as_ref().and_then(|d| d.error.as_deref())
}

/// The last [`STRIP`] checks of `id`, oldest first; none when the history cannot be read (the
/// strip is a hint, the page does not fail for it).
pub(crate) async fn strip_of(state: &Ctx, user: &str, id: &str) -> Vec<ClientData> {
    let page = TimePage {
        limit: STRIP,
        ..TimePage::default()
    };
    match history::entries(state, user, id, &page).await {
        Ok(rows) => {
            let mut data: Vec<ClientData> = rows
                .into_iter()
                .take(STRIP as usize)
                .map(|(_, data)| data)
                .collect();
            data.reverse();
            data
        }
        Err(err) => {
            tracing::warn!(%err, task = %id, "cannot read a monitor's last checks");
            Vec::new()
        }
    }
}

async fn strips(state: &Ctx, user: &str, monitors: &[Monitor]) -> Vec<Vec<ClientData>> {
    let mut strips = Vec::with_capacity(monitors.len());
    for chunk in monitors.chunks(STRIP_READS) {
        let reads: Vec<_> = chunk
            .iter()
            .map(|m| strip_of(state, user, m.id.as_deref().unwrap_or_default()))
            .collect();
        strips.extend(futures::future::join_all(reads).await);
    }
    strips
}

async fn listing(state: &Ctx, session: &Session, view: View<'_>, status: StatusCode) -> Response {
    let View {
        headers,
        folder,
        quick,
        mut filters,
        notice,
    } = view;
    // The folder itself (breadcrumbs, counts), and its items when not searching.
    let limit = if filters.active() { 1 } else { PAGE_ITEMS };
    let listing = match folder_ops::contents(state, &session.user, folder, None, limit).await {
        Ok(listing) => listing,
        Err(err) => return pages::from_op(err, Some(session)),
    };
    let (monitors, tree, truncated) = if filters.active() {
        match search(state, session, folder, &mut filters).await {
            Ok(found) => found,
            Err(err) => return pages::from_error(err, Some(session)),
        }
    } else {
        (
            listing.tasks.iter().map(|t| t.to_monitor()).collect(),
            None,
            listing.next.is_some(),
        )
    };
    let status = if filters.error.is_some() {
        StatusCode::BAD_REQUEST
    } else {
        status
    };
    let strips = strips(state, &session.user, &monitors).await;
    let title = listing
        .path
        .last()
        .map(|f| name_of(f).to_string())
        .unwrap_or_else(|| "All monitors".to_string());
    let now = Now::of(session);
    let here = folder.map_or_else(|| "/".to_string(), |id| format!("/folders/{id}"));
    let back = match filters.query() {
        q if q.is_empty() => here.clone(),
        q => format!("{here}?{q}"),
    };
    let new_link = match folder {
        Some(id) => format!("/monitors/new?folder={id}"),
        None => "/monitors/new".to_string(),
    };
    let new_folder = match folder {
        Some(id) => format!("/folders/new?parent={id}"),
        None => "/folders/new".to_string(),
    };
    let scope = folder.map_or(FeedScope::All, |id| FeedScope::Folder(id.to_string()));
    let feed =
        crate::web::account::feeds::feed_parts(state, headers, session, &scope, &title, &here)
            .await;
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
            div.grow {
                h1 { (title) }
                @if let Some(current) = listing.path.last() {
                    p.folder-counts { (counts_in_words(current)) }
                }
            }
            div.actions {
                a.button.primary href=(new_link) { "New monitor" }
                a.button href=(new_folder) { "New folder" }
                @if let Some(id) = folder {
                    a.button href={ "/folders/" (id) "/notifications" } { "Notifications" }
                    a.button href={ "/folders/" (id) "/rename" } { "Rename" }
                    a.button href={ "/folders/" (id) "/move" } { "Move" }
                    a.button.danger-quiet href={ "/folders/" (id) "/delete" } { "Delete" }
                }
            }
        }
        @if let Some(notice) = &notice {
            p.notice role="status" { (notice) }
        }
        (quick_add_form(session, folder, &quick))
        (search_form(folder, &filters, &here))
        @if !filters.active() && !listing.subfolders.is_empty() {
            section aria-labelledby="folders-title" {
                h2 #folders-title { "Folders" }
                ul.folders {
                    @for f in &listing.subfolders {
                        li {
                            a.folder href={ "/folders/" (f.id.as_deref().unwrap_or("")) } {
                                span.folder-name { (name_of(f)) }
                                span.counts { (counts_in_words(f)) }
                            }
                        }
                    }
                }
            }
        }
        section aria-labelledby="monitors-title" {
            @if filters.active() {
                h2 #monitors-title {
                    (monitors.len()) " " (if monitors.len() == 1 { "monitor matches" } else { "monitors match" })
                }
            } @else {
                h2 #monitors-title { "Monitors" }
            }
            @if monitors.is_empty() {
                @if filters.active() {
                    p.empty { "No monitor matches. " a href=(here) { "Show all" } }
                } @else {
                    p.empty { "No monitors here yet. Paste the address of a page above to watch it." }
                }
            } @else {
                form #bulk method="post" action="/monitors/bulk" {
                    input type="hidden" name="csrf" value=(session.csrf);
                    input type="hidden" name="back" value=(back);
                    (bulk_bar())
                    ul.monitors.rows {
                        @for (m, strip) in monitors.iter().zip(&strips) {
                            @let place = match (&tree, filters.everywhere || folder.is_none()) {
                                (Some(tree), true) => Some(m.folder_id.as_deref().and_then(|f| tree.path_of(f)).unwrap_or("All monitors")),
                                _ => None,
                            };
                            (monitor_row(m, strip, now, place))
                        }
                    }
                }
            }
            @if truncated {
                p.hint { "Only the first " (if filters.active() { monitors::MAX_SEARCH_RESULTS } else { PAGE_ITEMS }) " are shown; narrow the search to see others." }
            }
        }
        (feed.section)
    };
    let page = crate::web::shared::layout::page_with_head(
        &title,
        Some(session),
        &[&crate::web::assets::LIVE_JS],
        feed.head,
        main,
    );
    (status, page).into_response()
}

/// "3 monitors · 1 failed · 2 paused".
fn counts_in_words(folder: &wachet::model::Folder) -> Markup {
    html! {
        (folder.count) " " (if folder.count == 1 { "monitor" } else { "monitors" })
        @if folder.failed_count > 0 { " · " span.count-failed { (folder.failed_count) " failed" } }
        @if folder.paused_count > 0 { " · " (folder.paused_count) " paused" }
    }
}

fn search_form(folder: Option<&str>, filters: &Filters, here: &str) -> Markup {
    let invalid = filters.error.is_some();
    html! {
        form.card.search method="get" action=(here) role="search" aria-label="Search and filter" {
            div.search-row {
                div.field.grow {
                    label for="search-q" { "Search" }
                    input #search-q type="search" name="q" value=(filters.q)
                        placeholder="Name, URL or note"
                        aria-invalid=[invalid.then_some("true")]
                        aria-describedby=[invalid.then_some("search-q-error")];
                }
                div.field {
                    label for="search-state" { "Show" }
                    select #search-state name="state" {
                        option value="" selected[filters.state == StateFilter::Any] { "All monitors" }
                        option value="failed" selected[filters.state == StateFilter::Failed] { "Failed" }
                        option value="paused" selected[filters.state == StateFilter::Paused] { "Paused" }
                    }
                }
                @if folder.is_some() {
                    div.field {
                        label for="search-scope" { "Where" }
                        select #search-scope name="scope" {
                            option value="folder" selected[!filters.everywhere] { "In this folder" }
                            option value="all" selected[filters.everywhere] { "Everywhere" }
                        }
                    }
                }
                div.search-buttons {
                    button.button type="submit" { "Search" }
                    @if filters.active() {
                        a.button.quiet href=(here) { "Clear" }
                    }
                }
            }
            @if let Some(error) = &filters.error {
                p.field-error #search-q-error { (error) }
            }
        }
    }
}

/// The bulk actions' buttons. "Select all" and the count are hidden until the script shows
/// them: without it, each monitor is ticked by hand.
fn bulk_bar() -> Markup {
    html! {
        div.bulk-bar role="group" aria-labelledby="bulk-title" {
            span #bulk-title.bulk-title { "With the selected:" }
            label.select-all hidden { input #select-all type="checkbox"; " Select all" }
            span #bulk-count.bulk-count hidden aria-live="polite" {}
            div.bulk-buttons {
                button.button.quiet type="submit" name="action" value="pause" { "Pause" }
                button.button.quiet type="submit" name="action" value="resume" { "Resume" }
                button.button.quiet type="submit" name="action" value="check" { "Check now" }
                button.button.quiet type="submit" name="action" value="move" { "Move…" }
                button.button.quiet.danger-quiet type="submit" name="action" value="delete" { "Delete…" }
            }
        }
    }
}

fn quick_add_form(session: &Session, folder: Option<&str>, quick: &QuickAdd) -> Markup {
    let invalid = quick.error.is_some();
    html! {
        form.card.quick-add method="post" action="/monitors/quick-add" aria-labelledby="quick-title" {
            h2 #quick-title.visually-hidden { "Quick add" }
            input type="hidden" name="csrf" value=(session.csrf);
            input type="hidden" name=(once::FIELD) value=(once::fresh());
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

/// One check in a strip: its class and words.
fn mark(data: &ClientData) -> (&'static str, &'static str) {
    if data.error.is_some() {
        ("mark failed", "failed")
    } else if data.value_changed_timestamp == Some(data.last_check_timestamp) {
        ("mark changed", "changed")
    } else {
        ("mark unchanged", "unchanged")
    }
}

/// The last checks as marks, oldest first, each with its words for those who do not see it.
fn strip(checks: &[ClientData], now: Now) -> Markup {
    html! {
        @if checks.is_empty() {
            span.strip.strip-empty { span.visually-hidden { "No checks yet" } }
        } @else {
            ol.strip aria-label={ "Last " (checks.len()) " checks, oldest first" } {
                @for data in checks {
                    @let (class, words) = mark(data);
                    @let at = now.exact(data.last_check_timestamp);
                    li class=(class) title={ (at) ": " (words) } {
                        span.visually-hidden { (words) }
                    }
                }
            }
        }
    }
}

/// A row of the list: the box that selects it for the bulk actions, name, URL, folder (when
/// searching everywhere), error, strip, state, last check and change. The live updates fetch
/// the same row ([`crate::web::monitors::live`]).
pub(crate) fn monitor_row(
    monitor: &Monitor,
    checks: &[ClientData],
    now: Now,
    place: Option<&str>,
) -> Markup {
    let url = monitor.url.as_deref().unwrap_or("");
    let name = monitor
        .name
        .as_deref()
        .filter(|n| !n.is_empty())
        .unwrap_or(url);
    let paused = is_paused(monitor);
    let error = error_of(monitor);
    let (class, label) = state_of(monitor);
    let id = monitor.id.as_deref().unwrap_or("");
    // Only web addresses become links: a stored value never becomes a `javascript:` link.
    let linkable = linkable(url);
    html! {
        li.monitor.row #{ "monitor-" (id) } data-monitor=(id) data-live={ "/monitors/" (id) "/row" } {
            span.select {
                input #{ "select-" (id) } type="checkbox" name="id" value=(id);
                label.visually-hidden for={ "select-" (id) } { "Select " (name) }
            }
            div.monitor-main {
                a.monitor-name href={ "/monitors/" (id) } { (name) }
                @if linkable {
                    a.monitor-url href=(url) rel="noopener noreferrer nofollow" { (url) }
                } @else {
                    span.monitor-url { (url) }
                }
                @if let Some(place) = place {
                    span.monitor-folder { "in " (place) }
                }
                @if let (false, Some(error)) = (paused, error) {
                    p.monitor-error { (error) }
                }
            }
            (strip(checks, now))
            span class=(class) { (label) }
            dl.times {
                div.last-check { dt { "Last check" } dd { (now.when(monitor.data.as_ref().map(|d| d.last_check_timestamp))) } }
                div.last-change { dt { "Last change" } dd { (now.when(monitor.data.as_ref().and_then(|d| d.value_changed_timestamp))) } }
            }
        }
    }
}

/// The fields of the form.
#[derive(Debug, Default, Deserialize)]
pub struct QuickAddForm {
    url: Option<String>,
    folder: Option<String>,
    once: Option<String>,
}

/// `POST /monitors/quick-add`: a monitor of the URL named after its host and path until its
/// first check reads its page's title ([`crate::schedule::naming`]), checked every hour
/// (or the service's minimum, if longer), alerting on every change, stored through
/// [`crate::ops::monitors::save`]; then back to the folder (post, redirect, get).
pub async fn quick_add(
    State(state): State<Ctx>,
    headers: HeaderMap,
    SignedInForm { session, form }: SignedInForm<QuickAddForm>,
) -> Response {
    // A second submit of the same form (a double click) answers as the first did.
    let mut turn = match once::go_on(&session, form.once.as_deref()).await {
        Ok(turn) => turn,
        Err(response) => return response,
    };
    let folder = form.folder.filter(|f| !f.is_empty());
    let url = form.url.unwrap_or_default().trim().to_string();
    let monitor = Monitor {
        // Named after its host and path until its first check reads its page's title.
        name: Some(crate::schedule::naming::name_from_url(&url)),
        recurrence_in_seconds: Some(QUICK_ADD_RECURRENCE.max(state.settings().min_recurrence)),
        alerts: Some(vec![Alert {
            kind: AlertType::NotEq,
            value: None,
            parameters: None,
            remind_every_seconds: None,
        }]),
        folder_id: folder.clone(),
        ..Monitor::new(url.clone())
    };
    let stored = crate::ops::monitors::save(&state, &session.user, monitor)
        .await
        .map_err(PageError::from);
    // Marked in the store as the service's name, which the page's title replaces; a failure
    // only leaves the name to the person.
    if let Ok(created) = &stored
        && let Some(id) = created.id.as_deref()
        && let Err(err) = monitors::name_automatically(&state, &session.user, id).await
    {
        tracing::warn!(%err, "cannot mark the quick-added monitor's name as automatic");
    }
    match stored {
        Ok(_) => {
            let location = folder.map_or_else(|| "/".to_string(), |id| format!("/folders/{id}"));
            turn.done(&location);
            Redirect::to(&location).into_response()
        }
        Err(PageError::BadRequest { detail, errors }) => {
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
            let view = View {
                headers: &headers,
                folder: folder.as_deref(),
                quick,
                filters: Filters::default(),
                notice: None,
            };
            listing(&state, &session, view, StatusCode::BAD_REQUEST).await
        }
        Err(other) => pages::from_error(other, Some(&session)),
    }
}
