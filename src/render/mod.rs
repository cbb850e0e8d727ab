//! Rendering with headless Chromium, for monitors with `dynamicContent`.
//!
//! One long-lived Chromium ([`browser`]) starts on the first dynamic check and stops after an
//! idle period. Each check (or Portal crawl) renders in a [`RenderSession`]: its own browser
//! context, so monitors never share cookies, storage or cache, with all its traffic through its
//! own egress proxy, so the private-network policy and location proxies hold for every request
//! the page makes. Tabs are reused within a session; at most [`RenderSettings::tabs`] render at
//! once, with a bounded queue of waiting renders. Every browser call has a timeout; a crashed
//! tab is replaced and a dead browser relaunched, and the render retried once.

mod browser;
mod devtools;
mod egress;
mod intercept;
mod pending;
mod profile;
mod record;
mod scripts;
mod session;
mod steps;
mod tab;

pub use record::{MAX_SHOT_HEIGHT, Recording, Screenshot};
pub(crate) use session::Gated;
pub use session::{RenderSession, SessionOptions};
pub use steps::StepRun;

#[cfg(feature = "testing")]
pub(crate) use browser::find_chrome;

use crate::fetch::{FetchError, FetchRequest, NetworkPolicy};
use browser::Live;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Settings of the renderer. Defaults: 4 tabs, 64 renders waiting at most, Chromium closed after
/// 60 s idle, the DOM considered settled after 300 ms without mutation (50 ms once the page is
/// loaded with no timer or request pending) but never waited for longer than 10 s, 20 scrolls at
/// most and no further than 100,000 px, 20 s for all the scrolls of a render, navigation within
/// 30 s, 10 MiB of HTML and of each response at most, 64 MiB loaded by
/// a render at most, a JavaScript heap of 256 MiB and 384 MiB of resident memory per renderer at
/// most (4 tabs stay well under 2 GB together).
#[derive(Debug, Clone)]
pub struct RenderSettings {
    /// The Chromium executable; else `CHROME_PATH`, else the usual Debian locations.
    pub chrome_path: Option<PathBuf>,
    /// Tabs rendering at once.
    pub tabs: usize,
    /// Renders allowed to wait for a tab; beyond that a render fails at once.
    pub max_waiting: usize,
    /// Close Chromium after this long without a session.
    pub idle_shutdown: Duration,
    /// How long the DOM must be unchanged to count as settled.
    pub quiet: Duration,
    /// How long the DOM must be unchanged to count as settled when the page is loaded and has
    /// nothing pending: no timer of up to a second, no fetch or XHR in flight.
    pub idle_quiet: Duration,
    /// The longest wait for the DOM to settle; the DOM is taken as it is then.
    pub max_settle: Duration,
    /// Most scrolls for `scrollPage`.
    pub max_scrolls: usize,
    /// `scrollPage` stops once the document is this tall (CSS pixels).
    pub max_scroll_height: f64,
    /// The longest all the scrolls of a render may take together, the requests they trigger
    /// waited for included; the page is taken as it is then.
    pub max_scroll_wait: Duration,
    /// Also refuse stylesheets (images, fonts and media always are).
    pub block_stylesheets: bool,
    /// Reuse tabs within a session (a new tab per page when false; for measurements).
    pub reuse_tabs: bool,
    /// The longest a navigation may take.
    pub navigation_timeout: Duration,
    /// The largest serialized DOM accepted, and the largest response body (after
    /// decompression) a rendered page may load.
    pub max_html_bytes: u64,
    /// The most bytes a render may load in all (the page and everything it loads).
    pub max_render_bytes: u64,
    /// The JavaScript heap limit of each renderer (V8's old space); a page that passes it
    /// crashes its tab and fails with "the page used more than N MB of memory".
    pub max_js_heap_bytes: u64,
    /// The resident memory a renderer may use, sampled from `/proc` while it renders; over it
    /// the tab is killed and the check fails with "the page used more than N MB of memory".
    pub max_renderer_memory_bytes: u64,
}

impl Default for RenderSettings {
    fn default() -> Self {
        RenderSettings {
            chrome_path: None,
            tabs: 4,
            max_waiting: 64,
            idle_shutdown: Duration::from_secs(60),
            quiet: Duration::from_millis(300),
            idle_quiet: Duration::from_millis(50),
            max_settle: Duration::from_secs(10),
            max_scrolls: 20,
            max_scroll_height: 100_000.0,
            max_scroll_wait: Duration::from_secs(20),
            block_stylesheets: false,
            reuse_tabs: true,
            navigation_timeout: Duration::from_secs(30),
            max_html_bytes: 10 * 1024 * 1024,
            max_render_bytes: 64 * 1024 * 1024,
            max_js_heap_bytes: 256 * 1024 * 1024,
            max_renderer_memory_bytes: 384 * 1024 * 1024,
        }
    }
}

/// Whole mebibytes, for messages.
fn mib(bytes: u64) -> u64 {
    bytes / (1024 * 1024)
}

/// Why the browser could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RenderError {
    /// No Chromium is installed where we look.
    #[error("{0}")]
    NoBrowser(String),
    /// Chromium would not start or attach.
    #[error("the browser could not be started: {0}")]
    Launch(String),
    /// Too many renders are already waiting for a tab.
    #[error("the browser is busy: {0} renders are already waiting")]
    Busy(usize),
}

impl From<RenderError> for FetchError {
    fn from(e: RenderError) -> Self {
        FetchError::Render(e.to_string())
    }
}

/// The shared browser: sessions come from here. Cheap to clone.
#[derive(Clone)]
pub struct Renderer {
    inner: Arc<RendererInner>,
}

impl std::fmt::Debug for Renderer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Renderer")
            .field("settings", &self.inner.settings)
            .finish()
    }
}

pub(crate) struct RendererInner {
    settings: RenderSettings,
    policy: Arc<NetworkPolicy>,
    proxies: BTreeMap<String, String>,
    /// How the egress proxies verify the sites they open TLS to (each session's proxy makes
    /// its own client of it, [`intercept::UpstreamTls`]).
    verification: crate::fetch::tls::Verification,
    browser: tokio::sync::Mutex<Option<Arc<Live>>>,
    /// The live browser's pid, readable without the async lock.
    pid: Mutex<Option<u32>>,
    tabs: Arc<Semaphore>,
    /// Requests found never to end, not waited for again ([`pending`]).
    long_polls: pending::LongPolls,
    waiting: AtomicUsize,
    sessions: AtomicUsize,
    last_used: Mutex<Instant>,
    idle_watch: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Renderer {
    pub(crate) fn new(
        settings: RenderSettings,
        policy: Arc<NetworkPolicy>,
        proxies: BTreeMap<String, String>,
        verification: &crate::fetch::tls::Verification,
    ) -> Self {
        let tabs = Arc::new(Semaphore::new(settings.tabs.max(1)));
        Renderer {
            inner: Arc::new(RendererInner {
                settings,
                policy,
                proxies,
                verification: verification.clone(),
                browser: tokio::sync::Mutex::new(None),
                pid: Mutex::new(None),
                tabs,
                long_polls: pending::LongPolls::default(),
                waiting: AtomicUsize::new(0),
                sessions: AtomicUsize::new(0),
                last_used: Mutex::new(Instant::now()),
                idle_watch: Mutex::new(None),
            }),
        }
    }

    /// A new render session (its browser context is created on first use).
    pub fn session(&self, options: SessionOptions) -> RenderSession {
        RenderSession::new(self.inner.clone(), options)
    }

    /// Opens `request`'s page in a tab of a session of its own, for recording browser steps
    /// ([`Recording`]).
    pub async fn record(
        &self,
        request: &FetchRequest,
        options: SessionOptions,
    ) -> Result<Recording, FetchError> {
        let session = self.session(options);
        Recording::open(self.inner.clone(), session, request.clone()).await
    }

    /// How many pages render at once ([`RenderSettings::tabs`]).
    pub fn tabs(&self) -> usize {
        self.inner.settings.tabs.max(1)
    }

    /// The process id of the running Chromium, if one runs.
    pub fn browser_pid(&self) -> Option<u32> {
        self.inner.pid.lock().ok().and_then(|p| *p)
    }

    /// Closes Chromium now (it starts again on the next render).
    pub async fn shutdown(&self) {
        let live = self.inner.browser.lock().await.take();
        self.inner.set_pid(None);
        if let Some(live) = live {
            live.shutdown().await;
        }
    }
}

impl RendererInner {
    fn set_pid(&self, pid: Option<u32>) {
        if let Ok(mut slot) = self.pid.lock() {
            *slot = pid;
        }
    }

    fn touch(&self) {
        if let Ok(mut t) = self.last_used.lock() {
            *t = Instant::now();
        }
    }

    /// The live browser, launching it when there is none or it died.
    async fn browser(self: &Arc<Self>) -> Result<Arc<Live>, RenderError> {
        self.touch();
        let mut slot = self.browser.lock().await;
        if let Some(live) = slot.as_ref()
            && live.is_alive()
        {
            return Ok(live.clone());
        }
        // A dead browser is killed (with its process group) when its last user lets go.
        *slot = None;
        let executable = browser::find_chrome(self.settings.chrome_path.as_ref())?;
        let live = Arc::new(browser::launch(&executable, &self.settings).await?);
        self.set_pid(live.pid());
        *slot = Some(live.clone());
        self.start_idle_watch();
        Ok(live)
    }

    /// Drops a browser that failed, so the next use relaunches it.
    async fn forget_browser(&self) {
        let mut slot = self.browser.lock().await;
        if slot.as_ref().is_some_and(|l| !l.is_alive()) {
            *slot = None;
            self.set_pid(None);
        }
    }

    /// A tab slot, waiting in a bounded queue.
    async fn acquire_tab(&self) -> Result<OwnedSemaphorePermit, RenderError> {
        if let Ok(permit) = self.tabs.clone().try_acquire_owned() {
            return Ok(permit);
        }
        let waiting = self.waiting.fetch_add(1, Ordering::AcqRel);
        if waiting >= self.settings.max_waiting {
            self.waiting.fetch_sub(1, Ordering::AcqRel);
            return Err(RenderError::Busy(waiting));
        }
        let permit = self.tabs.clone().acquire_owned().await;
        self.waiting.fetch_sub(1, Ordering::AcqRel);
        permit.map_err(|_| RenderError::Launch("the renderer is shut down".into()))
    }

    /// Closes the browser once no session has used it for the idle period.
    fn start_idle_watch(self: &Arc<Self>) {
        let Ok(mut watch) = self.idle_watch.lock() else {
            return;
        };
        if watch.as_ref().is_some_and(|h| !h.is_finished()) {
            return;
        }
        let weak: Weak<RendererInner> = Arc::downgrade(self);
        let idle = self.settings.idle_shutdown;
        *watch = Some(tokio::spawn(async move {
            loop {
                tokio::time::sleep((idle / 4).max(Duration::from_millis(100))).await;
                let Some(inner) = weak.upgrade() else { return };
                let quiet_for = inner
                    .last_used
                    .lock()
                    .map(|t| t.elapsed())
                    .unwrap_or_default();
                if inner.sessions.load(Ordering::Acquire) == 0 && quiet_for >= idle {
                    let live = inner.browser.lock().await.take();
                    inner.set_pid(None);
                    if let Some(live) = live {
                        live.shutdown().await;
                    }
                    return;
                }
            }
        }));
    }
}

impl Drop for RendererInner {
    fn drop(&mut self) {
        if let Ok(mut watch) = self.idle_watch.lock()
            && let Some(handle) = watch.take()
        {
            handle.abort();
        }
        // Dropping the last handle kills the browser's process group and removes its profile.
        let _ = self.browser.get_mut().take();
    }
}
