//! One browser tab and one render in it: navigate with the monitor's request applied to the
//! main document, wait until the DOM is quiet, scroll when asked, serialize the DOM. Images,
//! fonts and media (and stylesheets, when set) are refused through Fetch-domain patterns on the
//! tab; JavaScript dialogs are dismissed; a crash is noticed.

use super::pending::{InFlight, LongPolls, Waits, waited_for};
use super::steps::{StepFailure, StepRun};
use super::{RenderSettings, scripts};
use crate::fetch::{FetchError, FetchRequest, FetchedPage};
use base64::Engine as _;
use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::browser::BrowserContextId;
use chromiumoxide::cdp::browser_protocol::fetch::{
    ContinueRequestParams, EnableParams, EventRequestPaused, FailRequestParams, HeaderEntry,
    RequestPattern, RequestStage,
};
use chromiumoxide::cdp::browser_protocol::inspector::EventTargetCrashed;
use chromiumoxide::cdp::browser_protocol::network::{
    ErrorReason, EventLoadingFailed, EventLoadingFinished, EventRequestWillBeSent,
    EventResponseReceived, ResourceType,
};
use chromiumoxide::cdp::browser_protocol::page::{
    AddScriptToEvaluateOnNewDocumentParams, EventFrameNavigated, EventFrameStartedLoading,
    EventJavascriptDialogOpening, HandleJavaScriptDialogParams, NavigateParams, ScriptIdentifier,
};
use chromiumoxide::cdp::browser_protocol::target::CreateTargetParams;
use chromiumoxide::cdp::js_protocol::heap_profiler::CollectGarbageParams;
use chromiumoxide::cdp::js_protocol::runtime::EvaluateParams;
use futures::StreamExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;

/// Time allowed for one short DevTools command (create a tab, enable a domain, ...).
pub(crate) const COMMAND_TIMEOUT: Duration = Duration::from_secs(10);

/// What went wrong in a tab, and so what to do with it.
#[derive(Debug)]
pub(crate) enum TabError {
    /// The tab's renderer crashed: replace the tab, retry once.
    Crashed,
    /// The browser stopped answering: relaunch, retry once.
    BrowserGone(String),
    /// The page failed; the tab may be wedged (`discard`), the error is the check's.
    Page { error: FetchError, discard: bool },
    /// A browser step failed (the error is the check's, said with the step's name).
    Step(StepFailure),
}

/// The monitor's request, applied to the first main-frame document request.
struct MainRequest {
    method: String,
    headers: Vec<(String, String)>,
    body: Option<String>,
}

/// URLs of responses remembered per render at most (to match the egress's cuts).
const MAX_LOADED_URLS: usize = 2048;

struct TabState {
    main_request: Mutex<Option<MainRequest>>,
    /// Status, URL and MIME type of the latest main-frame document response.
    response: Mutex<Option<(u16, String, String)>>,
    /// URLs of the responses of the current render.
    loaded: Mutex<Vec<String>>,
    /// Scripts, fetches and XHRs of the current render still loading.
    in_flight: InFlight,
    crashed: AtomicBool,
    /// Tells waits that the renderer crashed, so they end at once.
    crash_signal: tokio::sync::watch::Sender<bool>,
    /// The URL of the document the main frame last committed to.
    committed: tokio::sync::watch::Sender<Option<String>>,
    /// Navigations the main frame started, counted (a step's click may start one).
    started: tokio::sync::watch::Sender<u64>,
}

impl Default for TabState {
    fn default() -> Self {
        TabState {
            main_request: Mutex::new(None),
            response: Mutex::new(None),
            loaded: Mutex::new(Vec::new()),
            in_flight: InFlight::default(),
            crashed: AtomicBool::new(false),
            crash_signal: tokio::sync::watch::Sender::new(false),
            committed: tokio::sync::watch::Sender::new(None),
            started: tokio::sync::watch::Sender::new(0),
        }
    }
}

/// The URLs a tab's current render loaded.
pub(crate) struct LoadedUrls(Arc<TabState>);

impl LoadedUrls {
    /// The URLs so far.
    pub fn get(&self) -> Vec<String> {
        self.0.loaded.lock().map(|l| l.clone()).unwrap_or_default()
    }
}

/// Renders after which a tab is replaced, a bound on whatever a renderer keeps from page to page.
const RENDERS_PER_TAB: u32 = 100;

/// Renders between two forced garbage collections in a tab: a reused renderer otherwise grows
/// by about 0.5 MB a page (garbage of the pages before, collected too lazily). Every 3rd
/// render instead of every 10th: 19 MB less in the 300-page crawl at the same speed and CPU.
const RENDERS_PER_GC: u32 = 3;

/// What `Page.navigate` answered: an error text, or a failure of the call.
type NavigateAnswer = Result<Option<String>, chromiumoxide::error::CdpError>;

/// A tab with its event listeners.
pub(crate) struct Tab {
    page: Page,
    state: Arc<TabState>,
    listeners: Vec<JoinHandle<()>>,
    renders: u32,
    /// chromiumoxide's wait for the last navigation, when the render went on without it.
    navigation: Option<JoinHandle<NavigateAnswer>>,
    /// The resource types refused.
    blocked: Vec<ResourceType>,
    /// Whether documents are paused too, for a request that changes its main document.
    documents_paused: bool,
    /// Scripts restoring a kept session's local storage, removed once the page loaded.
    pub(super) storage_scripts: Vec<ScriptIdentifier>,
}

impl Drop for Tab {
    fn drop(&mut self) {
        for l in &self.listeners {
            l.abort();
        }
        if let Some(n) = &self.navigation {
            n.abort();
        }
    }
}

/// How a navigation went on.
enum Navigation {
    /// chromiumoxide's navigation ended (every frame loaded, or an error).
    Answered(Result<NavigateAnswer, tokio::task::JoinError>),
    /// The main frame committed a new document at this URL.
    Committed(Option<String>),
}

async fn within<T, E: std::fmt::Display>(
    what: &str,
    limit: Duration,
    fut: impl std::future::Future<Output = Result<T, E>>,
) -> Result<T, TabError> {
    match tokio::time::timeout(limit, fut).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(TabError::BrowserGone(format!("{what}: {e}"))),
        Err(_) => Err(TabError::BrowserGone(format!(
            "{what}: no answer within {} s",
            limit.as_secs()
        ))),
    }
}

/// Calls `on_event` for each `E` event of `page`, in a task of its own (the handle, aborted
/// with the tab).
async fn listen<E>(
    page: &Page,
    what: &str,
    mut on_event: impl FnMut(&E) + Send + 'static,
) -> Result<JoinHandle<()>, TabError>
where
    E: chromiumoxide::cdp::IntoEventKind + Unpin + Send + Sync + 'static,
{
    let mut events = within(
        &format!("listening to {what}"),
        COMMAND_TIMEOUT,
        page.event_listener::<E>(),
    )
    .await?;
    Ok(tokio::spawn(async move {
        while let Some(event) = events.next().await {
            on_event(&event);
        }
    }))
}

impl Tab {
    /// Opens a tab in `context` with its interception and listeners.
    pub async fn open(
        browser: &chromiumoxide::Browser,
        context: &BrowserContextId,
        settings: &RenderSettings,
    ) -> Result<Tab, TabError> {
        let params = CreateTargetParams::builder()
            .url("about:blank")
            .browser_context_id(context.clone())
            .build()
            .map_err(TabError::BrowserGone)?;
        let page = within("opening a tab", COMMAND_TIMEOUT, browser.new_page(params)).await?;
        let mut blocked = vec![ResourceType::Image, ResourceType::Font, ResourceType::Media];
        if settings.block_stylesheets {
            blocked.push(ResourceType::Stylesheet);
        }
        let patterns = interception_patterns(&blocked, false);
        let state = Arc::new(TabState::default());
        let mut listeners = Vec::new();

        let paused = within(
            "listening to requests",
            COMMAND_TIMEOUT,
            page.event_listener::<EventRequestPaused>(),
        )
        .await?;
        let (p, s, refused) = (page.clone(), state.clone(), blocked.clone());
        listeners.push(tokio::spawn(async move {
            let mut paused = paused;
            while let Some(event) = paused.next().await {
                let _ = answer_paused(&p, &s, &event, &refused).await;
            }
        }));

        let (main_frame, s) = (page.target_id().as_ref().to_string(), state.clone());
        let on_response = move |event: &EventResponseReceived| {
            if let Ok(mut loaded) = s.loaded.lock()
                && loaded.len() < MAX_LOADED_URLS
            {
                loaded.push(event.response.url.clone());
            }
            let is_main = event
                .frame_id
                .as_ref()
                .is_some_and(|f| f.as_ref() == main_frame);
            if event.r#type == ResourceType::Document && is_main {
                let r = &event.response;
                let status = u16::try_from(r.status).unwrap_or(0);
                if let Ok(mut slot) = s.response.lock() {
                    *slot = Some((status, r.url.clone(), r.mime_type.clone()));
                }
            }
        };
        listeners.push(listen(&page, "responses", on_response).await?);

        // Starts and ends are read by one task, starts first: the browser sends a request's
        // start before its end, so a fast request is never seen ending before it began (it
        // would then look open until the deadline, like a request that hangs).
        let mut sent = within(
            "listening to requests sent",
            COMMAND_TIMEOUT,
            page.event_listener::<EventRequestWillBeSent>(),
        )
        .await?;
        let mut finished = within(
            "listening to requests finished",
            COMMAND_TIMEOUT,
            page.event_listener::<EventLoadingFinished>(),
        )
        .await?;
        let mut failed = within(
            "listening to requests failed",
            COMMAND_TIMEOUT,
            page.event_listener::<EventLoadingFailed>(),
        )
        .await?;
        let s = state.clone();
        listeners.push(tokio::spawn(async move {
            loop {
                tokio::select! {
                    biased;
                    Some(event) = sent.next() => {
                        if waited_for(event.r#type.as_ref()) {
                            s.in_flight.started(event.request_id.as_ref(), &event.request.url);
                        }
                    }
                    Some(event) = finished.next() => {
                        s.in_flight.ended(event.request_id.as_ref(), true);
                    }
                    Some(event) = failed.next() => {
                        s.in_flight.ended(event.request_id.as_ref(), false);
                    }
                    else => return,
                }
            }
        }));

        let dialogs = within(
            "listening to dialogs",
            COMMAND_TIMEOUT,
            page.event_listener::<EventJavascriptDialogOpening>(),
        )
        .await?;
        let p = page.clone();
        listeners.push(tokio::spawn(async move {
            let mut dialogs = dialogs;
            while dialogs.next().await.is_some() {
                let dismiss = p.execute(HandleJavaScriptDialogParams::new(false));
                let _ = tokio::time::timeout(COMMAND_TIMEOUT, dismiss).await;
            }
        }));

        let s = state.clone();
        let on_navigated = move |event: &EventFrameNavigated| {
            if event.frame.parent_id.is_none() {
                s.committed.send_replace(Some(event.frame.url.clone()));
            }
        };
        listeners.push(listen(&page, "navigations", on_navigated).await?);

        let (main_frame, s) = (page.target_id().as_ref().to_string(), state.clone());
        let on_loading = move |event: &EventFrameStartedLoading| {
            if event.frame_id.as_ref() == main_frame {
                s.started.send_modify(|n| *n += 1);
            }
        };
        listeners.push(listen(&page, "loads", on_loading).await?);

        let s = state.clone();
        let on_crash = move |_: &EventTargetCrashed| {
            s.crashed.store(true, Ordering::Release);
            s.crash_signal.send_replace(true);
        };
        listeners.push(listen(&page, "crashes", on_crash).await?);

        let enable = EnableParams {
            patterns: Some(patterns),
            handle_auth_requests: None,
        };
        within(
            "enabling interception",
            COMMAND_TIMEOUT,
            page.execute(enable),
        )
        .await?;
        let instrument = AddScriptToEvaluateOnNewDocumentParams::new(scripts::INSTRUMENT);
        within(
            "instrumenting the tab",
            COMMAND_TIMEOUT,
            page.execute(instrument),
        )
        .await?;
        Ok(Tab {
            page,
            state,
            listeners,
            renders: 0,
            navigation: None,
            blocked,
            documents_paused: false,
            storage_scripts: Vec::new(),
        })
    }

    /// Whether the tab has rendered enough pages to be replaced.
    pub fn worn_out(&self) -> bool {
        // chromiumoxide queues a tab's navigations behind one still waiting for its frames.
        self.renders >= RENDERS_PER_TAB
            || self.navigation.as_ref().is_some_and(|n| !n.is_finished())
    }

    /// Renders one request, then tells `long_polls` which addresses the render saw hanging
    /// and which it saw answered ([`super::pending`]), whether the render succeeded or not.
    pub async fn render(
        &mut self,
        request: &FetchRequest,
        settings: &RenderSettings,
        long_polls: &LongPolls,
        scroll: bool,
        steps: Option<&StepRun>,
    ) -> Result<FetchedPage, TabError> {
        let mut waits = Waits::default();
        let rendered = self
            .render_page(request, settings, long_polls, &mut waits, scroll, steps)
            .await;
        if !waits.hanging.is_empty() {
            tracing::debug!(target: "wachet::render", hanging = ?waits.hanging, "requests still open at the maximum wait");
        }
        long_polls.after_render(&waits.hanging, &self.state.in_flight.answered());
        rendered
    }

    async fn render_page(
        &mut self,
        request: &FetchRequest,
        settings: &RenderSettings,
        long_polls: &LongPolls,
        waits: &mut Waits,
        scroll: bool,
        steps: Option<&StepRun>,
    ) -> Result<FetchedPage, TabError> {
        let started = Instant::now();
        if let Some(run) = steps {
            self.restore_session(run).await?;
        }
        let (navigation_began, committed_at) = self.navigate(request, settings).await?;
        let quiet = ms(settings.quiet);
        let max = ms(settings.max_settle);
        let idle_quiet = ms(settings.idle_quiet.min(settings.quiet));
        let limit = settings.max_html_bytes;
        if let Some(run) = steps {
            self.eval(&scripts::settle(quiet, idle_quiet, max), settings)
                .await?;
            let deadline = Instant::now() + settings.max_settle;
            self.settle_after_requests(long_polls, waits, deadline, quiet, settings)
                .await?;
            self.run_steps(request, settings, long_polls, waits, run)
                .await?;
        }
        // Settling and serializing in one evaluation saves a round trip to the tab.
        if !scroll && steps.is_none() {
            let script = scripts::settle_and_serialize(quiet, idle_quiet, max, limit);
            let settle_began = Instant::now();
            let mut serialized = self.eval(&script, settings).await?;
            let deadline = settle_began + settings.max_settle;
            // Each round waits for something that ended or for the deadline, and the requests
            // of one address are waited for a bounded number of times: the loop ends.
            for _ in 0..MAX_ROUNDS {
                if Instant::now() >= deadline
                    || !self.await_requests(long_polls, waits, deadline).await?
                {
                    break;
                }
                let left = ms(deadline.saturating_duration_since(Instant::now()));
                let again = scripts::settle_again_and_serialize(quiet, left, limit);
                serialized = self.eval(&again, settings).await?;
            }
            tracing::debug!(
                target: "wachet::render",
                url = %request.url,
                navigate_ms = (settle_began - navigation_began).as_millis(),
                settle_ms = settle_began.elapsed().as_millis(),
                settled_in_page_ms = serialized.get("waited").and_then(|v| v.as_u64()),
                commit_ms = committed_at.as_millis(),
                total_ms = started.elapsed().as_millis(),
                "rendered"
            );
            return self.finish(request, serialized, limit, started);
        }
        let deadline = Instant::now() + settings.max_settle;
        self.eval(&scripts::settle(quiet, idle_quiet, max), settings)
            .await?;
        self.settle_after_requests(long_polls, waits, deadline, quiet, settings)
            .await?;
        let scrolling_ends = Instant::now() + settings.max_scroll_wait;
        for _ in 0..settings.max_scrolls {
            if !scroll {
                break;
            }
            let now = Instant::now();
            if now >= scrolling_ends {
                break;
            }
            let deadline = (now + settings.max_settle).min(scrolling_ends);
            let left = ms(deadline - now);
            let sizes = self
                .eval(&scripts::scroll_once(quiet, left), settings)
                .await?;
            let before = Size::at(&sizes, 0);
            let after = match self
                .settle_after_requests(long_polls, waits, deadline, quiet, settings)
                .await?
            {
                Some(again) => Some(again),
                None => Size::at(&sizes, 1),
            };
            let grew = matches!((before, after), (Some(b), Some(a)) if a.grew_from(b));
            let too_tall = after.is_some_and(|a| a.height >= settings.max_scroll_height);
            if !grew || too_tall {
                break;
            }
        }
        let serialized = self.eval(&scripts::serialize(limit), settings).await?;
        self.finish(request, serialized, limit, started)
    }

    /// Navigates to `request` (its method, headers and body applied to the main document) and
    /// waits for the document to be parsed; when the navigation began, and how long the main
    /// frame took to commit.
    pub(super) async fn navigate(
        &mut self,
        request: &FetchRequest,
        settings: &RenderSettings,
    ) -> Result<(Instant, Duration), TabError> {
        self.renders += 1;
        if let Some(previous) = self.navigation.take() {
            previous.abort();
        }
        let headers = request
            .headers
            .iter()
            .map(|(k, v)| {
                (
                    k.to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        // A plain GET is sent as the browser makes it: pausing its document would only cost a
        // DevTools round trip in the middle of every navigation.
        let changes_document = request.method != http::Method::GET
            || !request.headers.is_empty()
            || request.body.is_some();
        if changes_document != self.documents_paused {
            let enable = EnableParams {
                patterns: Some(interception_patterns(&self.blocked, changes_document)),
                handle_auth_requests: None,
            };
            within(
                "changing the interception",
                COMMAND_TIMEOUT,
                self.page.execute(enable),
            )
            .await?;
            self.documents_paused = changes_document;
        }
        if let Ok(mut slot) = self.state.main_request.lock() {
            *slot = changes_document.then(|| MainRequest {
                method: request.method.to_string(),
                headers,
                body: request.body.clone(),
            });
        }
        if let Ok(mut slot) = self.state.response.lock() {
            *slot = None;
        }
        if let Ok(mut loaded) = self.state.loaded.lock() {
            loaded.clear();
            loaded.push(request.url.to_string());
        }
        self.state.in_flight.clear();

        if self.renders.is_multiple_of(RENDERS_PER_GC) {
            // Not waited for: the renderer collects while the browser fetches the next
            // document (waiting cost the crawl 16 ms a page). Best effort: a tab that does not
            // answer fails the navigation below anyway.
            let page = self.page.clone();
            tokio::spawn(async move {
                let collect = page.execute(CollectGarbageParams::default());
                let _ = tokio::time::timeout(COMMAND_TIMEOUT, collect).await;
            });
        }
        let navigation_began = Instant::now();
        let timeout = settings.navigation_timeout;
        let timed_out = || TabError::Page {
            error: FetchError::Timeout(timeout),
            discard: true,
        };
        // chromiumoxide answers Page.navigate once every frame has loaded, and a frame the
        // browser refuses (a `file:` URL) never does: the render goes on as soon as the main
        // frame has committed the new document, whose parsing is then awaited in the page.
        self.state.committed.send_replace(None);
        let mut committed = self.state.committed.subscribe();
        let page = self.page.clone();
        let params = NavigateParams::new(request.url.as_str());
        let mut navigation = tokio::spawn(async move {
            page.execute(params)
                .await
                .map(|done| done.result.error_text.clone())
        });
        let first = self
            .guarded(tokio::time::timeout(timeout, async {
                tokio::select! {
                    answer = &mut navigation => Navigation::Answered(answer),
                    url = committed.wait_for(Option::is_some) => {
                        Navigation::Committed(url.ok().and_then(|u| u.clone()))
                    }
                }
            }))
            .await;
        let answer = match first {
            Err(crashed) => {
                navigation.abort();
                return Err(crashed);
            }
            Ok(Err(_)) => {
                navigation.abort();
                self.check_crash()?;
                return Err(timed_out());
            }
            Ok(Ok(Navigation::Answered(answer))) => Some(answer),
            // An error page commits too; its error comes with the answer.
            Ok(Ok(Navigation::Committed(Some(url)))) if url.starts_with("chrome-error:") => {
                let left = timeout.saturating_sub(navigation_began.elapsed());
                match self
                    .guarded(tokio::time::timeout(left, &mut navigation))
                    .await?
                {
                    Ok(answer) => Some(answer),
                    Err(_) => {
                        navigation.abort();
                        return Err(timed_out());
                    }
                }
            }
            Ok(Ok(Navigation::Committed(_))) => {
                self.navigation = Some(navigation);
                None
            }
        };
        match answer {
            None | Some(Ok(Ok(None))) => {}
            Some(Ok(Ok(Some(text)))) => {
                self.check_crash()?;
                return Err(TabError::Page {
                    error: FetchError::Render(navigation_error(&text)),
                    discard: false,
                });
            }
            Some(Ok(Err(chromiumoxide::error::CdpError::Timeout))) => {
                self.check_crash()?;
                return Err(timed_out());
            }
            Some(Ok(Err(e))) => {
                self.check_crash()?;
                if is_connection_error(&e) {
                    return Err(TabError::BrowserGone(e.to_string()));
                }
                return Err(TabError::Page {
                    error: FetchError::Render(navigation_error(&e.to_string())),
                    discard: false,
                });
            }
            Some(Err(e)) => return Err(TabError::BrowserGone(e.to_string())),
        }
        let committed_at = navigation_began.elapsed();
        let left = timeout.saturating_sub(navigation_began.elapsed());
        match self.eval_within(scripts::PARSED, left).await {
            Ok(_) => {}
            Err(TabError::Page { .. }) if navigation_began.elapsed() >= timeout => {
                return Err(timed_out());
            }
            Err(e) => return Err(e),
        }
        self.check_crash()?;
        Ok((navigation_began, committed_at))
    }

    /// The page from its serialized DOM and the main document's response.
    fn finish(
        &self,
        request: &FetchRequest,
        serialized: serde_json::Value,
        limit: u64,
        started: Instant,
    ) -> Result<FetchedPage, TabError> {
        if let Some(len) = serialized.get("tooLarge").and_then(|v| v.as_u64()) {
            return Err(TabError::Page {
                error: FetchError::Render(format!(
                    "the rendered page is larger than {limit} bytes ({len} characters)"
                )),
                discard: true,
            });
        }
        let html = serialized
            .get("html")
            .and_then(|v| v.as_str())
            .unwrap_or("")
            .to_string();
        let response = self.state.response.lock().ok().and_then(|r| r.clone());
        let Some((status, final_url, mime)) = response else {
            return Err(TabError::Page {
                error: FetchError::Render("the page gave no document response".into()),
                discard: false,
            });
        };
        let url = url::Url::parse(&final_url).unwrap_or_else(|_| request.url.clone());
        let content_type = if mime.contains("html") || mime.is_empty() {
            "text/html; charset=utf-8".to_string()
        } else {
            mime
        };
        Ok(FetchedPage {
            url,
            status,
            content_type: Some(content_type),
            headers: http::header::HeaderMap::new(),
            rendered: true,
            bodiless: false,
            body: bytes::Bytes::from(html),
            elapsed: started.elapsed(),
        })
    }

    /// Waits for the scripts, fetches and XHRs still loading once the page looked settled
    /// (known long polls and addresses this render waited for often enough left out), up to
    /// `deadline`. `Ok(false)`: there was none. `Ok(true)`: there were some, now ended or cut
    /// at the deadline, so the page must be settled again. Addresses open for the whole wait,
    /// when it lasted a second or more, are noted in `waits` as seen hanging.
    async fn await_requests(
        &self,
        long_polls: &LongPolls,
        waits: &mut Waits,
        deadline: Instant,
    ) -> Result<bool, TabError> {
        let began = Instant::now();
        let at_first = self.state.in_flight.open(long_polls, &waits.exhausted);
        if at_first.is_empty() {
            return Ok(false);
        }
        waits.waiting_for(&at_first);
        let wait = self
            .state
            .in_flight
            .wait(long_polls, &waits.exhausted, deadline);
        match self.guarded(wait).await? {
            Ok(waited) => Ok(waited),
            Err(open) => {
                if began.elapsed() >= Duration::from_secs(1) {
                    waits.hung(open.into_iter().filter(|a| at_first.contains(a)).collect());
                }
                Ok(true)
            }
        }
    }

    /// After a settle (or a scroll): as long as requests are still loading, waits for them and
    /// settles again, up to `deadline`. The page's size after the last settle, `None` when
    /// there was nothing to wait for.
    pub(super) async fn settle_after_requests(
        &self,
        long_polls: &LongPolls,
        waits: &mut Waits,
        deadline: Instant,
        quiet: u64,
        settings: &RenderSettings,
    ) -> Result<Option<Size>, TabError> {
        let mut size = None;
        for _ in 0..MAX_ROUNDS {
            if Instant::now() >= deadline
                || !self.await_requests(long_polls, waits, deadline).await?
            {
                break;
            }
            let left = ms(deadline.saturating_duration_since(Instant::now()));
            let sizes = self
                .eval(&scripts::settle_again_size(quiet, left), settings)
                .await?;
            size = Size::at(&sizes, 0);
        }
        Ok(size)
    }

    fn check_crash(&self) -> Result<(), TabError> {
        if self.state.crashed.load(Ordering::Acquire) {
            return Err(TabError::Crashed);
        }
        Ok(())
    }

    /// The URLs the current render loaded (the request's first), readable while it renders.
    pub fn loaded_urls(&self) -> LoadedUrls {
        LoadedUrls(self.state.clone())
    }

    /// Runs `fut` unless the renderer crashes first.
    async fn guarded<T>(&self, fut: impl std::future::Future<Output = T>) -> Result<T, TabError> {
        let mut crashed = self.state.crash_signal.subscribe();
        let crash = async move {
            if crashed.wait_for(|c| *c).await.is_err() {
                std::future::pending::<()>().await;
            }
        };
        tokio::select! {
            done = fut => Ok(done),
            () = crash => Err(TabError::Crashed),
        }
    }

    /// Evaluates `expr` (awaiting a promise) within the settle bound.
    pub(super) async fn eval(
        &self,
        expr: &str,
        settings: &RenderSettings,
    ) -> Result<serde_json::Value, TabError> {
        self.eval_within(expr, settings.max_settle + Duration::from_secs(5))
            .await
    }

    /// Evaluates `expr` (awaiting a promise) within `limit`.
    pub(super) async fn eval_within(
        &self,
        expr: &str,
        limit: Duration,
    ) -> Result<serde_json::Value, TabError> {
        let params = EvaluateParams::builder()
            .expression(expr)
            .await_promise(true)
            .return_by_value(true)
            .build()
            .map_err(TabError::BrowserGone)?;
        // Without a context id the page's current document is meant, whatever chromiumoxide
        // last heard about execution contexts (a navigation has just committed).
        let evaluate = self.page.execute(params);
        match self.guarded(tokio::time::timeout(limit, evaluate)).await? {
            Ok(Ok(done)) => match done.result.exception_details {
                Some(exception) => Err(TabError::Page {
                    error: FetchError::Render(format!(
                        "the page's script failed: {}",
                        exception.text
                    )),
                    discard: true,
                }),
                None => Ok(done.result.result.value.unwrap_or(serde_json::Value::Null)),
            },
            Ok(Err(e)) => {
                self.check_crash()?;
                if is_connection_error(&e) {
                    return Err(TabError::BrowserGone(e.to_string()));
                }
                Err(TabError::Page {
                    error: FetchError::Render(format!("the page's script failed: {e}")),
                    discard: true,
                })
            }
            Err(_) => {
                self.check_crash()?;
                Err(TabError::Page {
                    error: FetchError::Render(format!(
                        "timed out after {} s: the page did not respond (a script that never yields?)",
                        limit.as_secs_f64()
                    )),
                    discard: true,
                })
            }
        }
    }

    /// The HTTP status of the main document now shown (0 before any).
    pub(super) fn status(&self) -> u16 {
        self.state
            .response
            .lock()
            .ok()
            .and_then(|r| r.as_ref().map(|(status, _, _)| *status))
            .unwrap_or(0)
    }

    /// A watch on the navigations the main frame starts.
    pub(super) fn loading_starts(&self) -> tokio::sync::watch::Receiver<u64> {
        self.state.started.subscribe()
    }

    /// A watch on the documents the main frame commits to.
    pub(super) fn commits(&self) -> tokio::sync::watch::Receiver<Option<String>> {
        self.state.committed.subscribe()
    }

    /// Runs one DevTools command on the tab within [`COMMAND_TIMEOUT`].
    pub(super) async fn command<C>(&self, what: &str, command: C) -> Result<C::Response, TabError>
    where
        C: chromiumoxide::types::Command,
    {
        let answer = within(what, COMMAND_TIMEOUT, self.page.execute(command)).await?;
        Ok(answer.result)
    }

    /// Closes the tab (its renderer goes with it).
    pub async fn close(self) {
        let page = self.page.clone();
        drop(self);
        let _ = tokio::time::timeout(COMMAND_TIMEOUT, page.close()).await;
    }
}

/// Errors that mean the connection to the browser is gone, not that the page failed.
fn is_connection_error(e: &chromiumoxide::error::CdpError) -> bool {
    use chromiumoxide::error::CdpError;
    matches!(
        e,
        CdpError::Ws(_) | CdpError::Io(_) | CdpError::ChannelSendError(_) | CdpError::NoResponse
    )
}

/// Rounds of waiting for requests and settling again per settle at most; each round also waits
/// for something (a request's end or the deadline), so this only bounds a pathological page.
const MAX_ROUNDS: usize = 32;

/// How big a page is, to tell whether a scroll made it grow: its height and its number of
/// elements (a list may grow inside a box of fixed height).
#[derive(Debug, Clone, Copy)]
pub(super) struct Size {
    height: f64,
    elements: f64,
}

impl Size {
    /// The size at `[2 * i, 2 * i + 1]` of a script's answer.
    fn at(answer: &serde_json::Value, i: usize) -> Option<Size> {
        let sizes = answer.as_array()?;
        Some(Size {
            height: sizes.get(2 * i)?.as_f64()?,
            elements: sizes.get(2 * i + 1)?.as_f64()?,
        })
    }

    fn grew_from(self, before: Size) -> bool {
        self.height > before.height || self.elements > before.elements
    }
}

pub(super) fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Chromium's net error names are terse; say what they mean.
fn navigation_error(raw: &str) -> String {
    let lower = raw.to_ascii_lowercase();
    if lower.contains("err_tunnel_connection_failed") || lower.contains("err_proxy") {
        "the page could not be reached (refused or unreachable)".into()
    } else if lower.contains("err_connection_refused") {
        "could not connect: connection refused".into()
    } else if lower.contains("err_name_not_resolved") {
        "could not resolve the host name".into()
    } else if lower.contains("err_too_many_redirects") {
        "too many redirects".into()
    } else {
        format!("navigation failed: {raw}")
    }
}

/// The Fetch-domain patterns pausing the `blocked` resource types (to refuse them), and
/// documents too when `documents` (to apply the monitor's request to the main one).
fn interception_patterns(blocked: &[ResourceType], documents: bool) -> Vec<RequestPattern> {
    let document = documents.then_some(&ResourceType::Document);
    blocked
        .iter()
        .chain(document)
        .map(|t| RequestPattern {
            url_pattern: Some("*".into()),
            resource_type: Some(t.clone()),
            request_stage: Some(RequestStage::Request),
        })
        .collect()
}

/// Continues, changes or refuses one paused request.
async fn answer_paused(
    page: &Page,
    state: &TabState,
    event: &EventRequestPaused,
    blocked: &[ResourceType],
) -> Result<(), chromiumoxide::error::CdpError> {
    let id = event.request_id.clone();
    if blocked.contains(&event.resource_type) {
        page.execute(FailRequestParams::new(id, ErrorReason::BlockedByClient))
            .await?;
        return Ok(());
    }
    let is_main = event.resource_type == ResourceType::Document
        && event.frame_id.as_ref() == page.target_id().as_ref();
    let main = if is_main {
        state.main_request.lock().ok().and_then(|mut m| m.take())
    } else {
        None
    };
    let mut params = ContinueRequestParams::new(id);
    if let Some(main) = main {
        let mut headers: Vec<HeaderEntry> = Vec::new();
        if let Some(original) = event.request.headers.inner().as_object() {
            for (name, value) in original {
                let overridden = main
                    .headers
                    .iter()
                    .any(|(k, _)| k.eq_ignore_ascii_case(name));
                if !overridden {
                    headers.push(HeaderEntry::new(name.clone(), value.as_str().unwrap_or("")));
                }
            }
        }
        for (name, value) in main.headers {
            headers.push(HeaderEntry::new(name, value));
        }
        params.headers = Some(headers);
        params.method = Some(main.method);
        if let Some(body) = main.body {
            params.post_data = Some(
                base64::engine::general_purpose::STANDARD
                    .encode(body.as_bytes())
                    .into(),
            );
        }
    }
    page.execute(params).await?;
    Ok(())
}
