//! The [`Checker`] trait: the seam between the engine and its frontends (the REST service, the
//! command line, embedders' own services), and the [`PreparedMonitor`] it checks. What one
//! check yields (a [`CheckOutcome`] with a typed [`ErrorKind`] beside its text) lives in the
//! outcome module, shared with the crawler, and is re-exported here.

use crate::extract::{Deadline, Evaluation};
use crate::model::{LocationCode, Monitor};
use crate::outcome::CrawlStream;
pub use crate::outcome::{CheckOutcome, CrawlReport, ErrorKind, Timings, millis};
use crate::validate::{InvalidMonitor, Plan};
use async_trait::async_trait;
use std::sync::Arc;

/// Runs checks of monitors. Object-safe: frontends hold an `Arc<dyn Checker>`.
///
/// A monitor that cannot be checked at all (bad URL, XPath, regex, ...) is an `Err` before any
/// fetch; a check that ran and failed (network error, HTTP 404, nothing matched) is an `Ok`
/// outcome whose `data.error` says why and whose `error_kind` says what kind of failure it
/// was, because that is a result to store and alert on.
///
/// A frontend checking the same monitors again and again prepares each once
/// ([`Checker::prepare`]) and checks the [`PreparedMonitor`] ([`Checker::check_prepared`]);
/// a Portal monitor's pages stream one by one through [`Checker::crawl_prepared`].
///
/// ```
/// use std::sync::Arc;
/// use wachet::{Checker, Engine, Monitor};
///
/// # #[tokio::main] async fn main() {
/// # let server = wachet::testing::FixtureServer::builder()
/// #     .page("/price.html", "<p class=price>Price: 12 EUR</p>").start().await.unwrap();
/// # let url = server.url("/price.html");
/// let checker: Arc<dyn Checker> = Arc::new(
///     Engine::builder().allow_private_networks(true).build().unwrap(),
/// );
/// let mut monitor = Monitor::new(url);
/// monitor.x_path = Some("//p[@class='price']".into());
/// monitor.regex = Some(r"(\d+) EUR".into());
/// let outcome = checker.check(&monitor).await.unwrap();
/// assert_eq!(outcome.data.raw.as_deref(), Some("12"));
/// assert_eq!(outcome.status, Some(200));
///
/// // Compiled once, checked many times.
/// let prepared = checker.prepare(&monitor).unwrap();
/// for _ in 0..3 {
///     assert_eq!(checker.check_prepared(&prepared).await.value(), Some("12"));
/// }
/// # }
/// ```
#[async_trait]
pub trait Checker: Send + Sync {
    /// Checks that `monitor` can be checked, without fetching anything.
    fn validate(&self, monitor: &Monitor) -> Result<(), InvalidMonitor> {
        self.prepare(monitor).map(|_| ())
    }

    /// Whether this checker checks monitors of `location` itself: from where it runs, or
    /// through a proxy there. A checker that does not say checks only the default location.
    fn serves(&self, location: LocationCode) -> bool {
        location == LocationCode::Default
    }

    /// How many requests this checker lets through to one host at once (its host slots, keyed
    /// by [`crate::fetch::hosts::host_key`]); 0 sets no limit, as does a checker that does not
    /// say. A frontend running many checks gives one host no more of them at once: the others
    /// would only wait for a slot, holding whatever the frontend gave them to run.
    fn host_concurrency(&self) -> usize {
        0
    }

    /// How many pages this checker renders in the browser at once (its renderer's tabs); 0
    /// when it renders none, as a checker that does not say. A frontend counting its users'
    /// tabs ([`TabGate`]) shares out this many.
    fn browser_tabs(&self) -> usize {
        0
    }

    /// Which addresses this checker may reach, for a frontend checking addresses it will
    /// connect to itself (a notification URL's host). A checker that does not say reaches
    /// public addresses only.
    fn network_policy(&self) -> std::sync::Arc<crate::fetch::NetworkPolicy> {
        std::sync::Arc::new(crate::fetch::NetworkPolicy::public_only())
    }

    /// Compiles `monitor` (URL, headers, XPath, exclusion XPath, regex, URL filters, proxy
    /// location) once, for any number of checks; `Err` with every problem found when it
    /// cannot be checked.
    fn prepare(&self, monitor: &Monitor) -> Result<PreparedMonitor, InvalidMonitor>;

    /// Runs one check of `monitor`: [`Checker::prepare`], then [`Checker::check_prepared`].
    async fn check(&self, monitor: &Monitor) -> Result<CheckOutcome, InvalidMonitor> {
        let prepared = self.prepare(monitor)?;
        Ok(self.check_prepared(&prepared).await)
    }

    /// Runs one check of a prepared monitor; compiles nothing. A Portal monitor is crawled
    /// whole and its pages gathered in [`CheckOutcome::crawl`]; to have them one by one use
    /// [`Checker::crawl_prepared`].
    async fn check_prepared(&self, monitor: &PreparedMonitor) -> CheckOutcome;

    /// Crawls a prepared monitor as a Portal monitor (whatever its `jobType`), streaming its
    /// pages as they finish, the pages left out among them, and the crawl's statistics last.
    /// Must be called inside a tokio runtime; dropping the stream stops the crawl. A failed
    /// start page is the check's failure, as [`Checker::check_prepared`] reports it.
    fn crawl_prepared(&self, monitor: &PreparedMonitor) -> CrawlStream;

    /// The HTML of the monitor's page as a check of it would get it: the same request
    /// (method, headers, body, proxy location), the same network policy and limits (size,
    /// timeouts, redirects), rendered in the browser when `dynamicContent` is on (scrolled with
    /// `scrollPage`), decoded to text as a check decodes it. For a Portal monitor, its start
    /// page. Nothing is extracted: evaluate XPaths on the result with
    /// [`PreparedMonitor::evaluate`].
    ///
    /// Outcomes:
    /// - `Ok` with the page's text, final URL, status and content type when the page answered
    ///   below 400, or with any status when the monitor ignores invalid pages (a check then
    ///   extracts from it as well). The text may be anything the server sent (not necessarily
    ///   HTML).
    /// - `Err` with the [`ErrorKind`] and the same words a check would store in its `error`:
    ///   a refused address ([`ErrorKind::Refused`]), a network failure, a timeout, a body over
    ///   the engine's size limit ([`ErrorKind::TooLarge`]), a redirect problem, a render
    ///   failure, or an error status ("HTTP 404 Not Found", [`ErrorKind::HttpStatus`] or
    ///   [`ErrorKind::Unavailable`]).
    async fn page_source(&self, monitor: &PreparedMonitor) -> Result<PageSource, SourceError>;

    /// Opens the monitor's page in the browser for recording browser steps on it
    /// ([`crate::render::Recording`]): the same request, proxy location, network policy and
    /// limits as its rendered check, its renders entering the monitor's
    /// [`PreparedMonitor::with_tabs`] gate. Its steps and login are not run. A checker without
    /// a browser refuses with a [`ErrorKind::Render`] error, as one that does not say.
    #[cfg(feature = "chrome")]
    async fn record(
        &self,
        monitor: &PreparedMonitor,
    ) -> Result<crate::render::Recording, SourceError> {
        let _ = monitor;
        Err(SourceError {
            message: "this checker records no browser steps".into(),
            kind: ErrorKind::Render,
        })
    }
}

/// A frontend's count of the browser tabs its renders hold, for a frontend rendering pages for
/// many people: it decides when a render of one of them may take a tab (for instance: each
/// person holds at most a share of the renderer's tabs, so one person's hanging pages never
/// hold every tab). See [`PreparedMonitor::with_tabs`].
#[async_trait]
pub trait TabGate: Send + Sync + std::fmt::Debug {
    /// Resolves once the render may take a tab; what it returns is held until the render ends,
    /// then dropped (giving the turn back). `Err` refuses the render (the gate's wait ran out,
    /// or too many of its renders wait already): it then fails at once as
    /// [`FetchError::NoTab`](crate::fetch::FetchError::NoTab), with the refusal's words, and
    /// takes no tab. The gate bounds its own wait: the engine waits as long as it does.
    /// Cancel-safe: a render stopped while it waits holds nothing.
    async fn enter(&self) -> Result<TabPass, TabRefused>;
}

/// What a [`TabGate`] gave a render, held while it renders.
pub type TabPass = Box<dyn std::any::Any + Send>;

/// Why a [`TabGate`] gave a render no tab, in words a check stores as its error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TabRefused(pub String);

/// A page's text as a check fetched it ([`Checker::page_source`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageSource {
    /// The body decoded to text (from its declared or sniffed encoding).
    pub html: String,
    /// The URL after redirects.
    pub final_url: String,
    /// The HTTP status (200 for a rendered page).
    pub status: u16,
    /// The `Content-Type` the server sent.
    pub content_type: Option<String>,
}

/// Why [`Checker::page_source`] got no page: the text a check would store, and its kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SourceError {
    /// What a check of the monitor would store as its error.
    pub message: String,
    /// What kind of failure it was.
    pub kind: ErrorKind,
}

/// A monitor compiled for checking ([`Checker::prepare`]): cheap to clone and to share between
/// tasks; checking it compiles nothing again.
#[derive(Debug, Clone)]
pub struct PreparedMonitor {
    pub(crate) monitor: Arc<Monitor>,
    pub(crate) plan: Arc<Plan>,
    /// What each of its renders enters before it takes a browser tab ([`Self::with_tabs`]).
    /// Without the browser (feature `chrome`) nothing renders, and nothing reads it.
    #[cfg_attr(not(feature = "chrome"), allow(dead_code))]
    pub(crate) tabs: Option<Arc<dyn TabGate>>,
    /// Where its browser session is kept between checks ([`Self::with_sessions`]).
    #[cfg_attr(not(feature = "chrome"), allow(dead_code))]
    pub(crate) sessions: Option<Arc<dyn crate::steps::SessionStore>>,
}

impl PreparedMonitor {
    /// The monitor as it was when prepared.
    pub fn monitor(&self) -> &Monitor {
        &self.monitor
    }

    /// This monitor with each page it renders in the browser (a check's, each crawled page's,
    /// a page source's) counted by `gate`: a render enters it before it takes its host's slot
    /// or one of the renderer's tabs (so a render waiting at the gate holds neither), and
    /// holds what it gave until the render ends. Without a gate a render
    /// waits only for a tab. Compiles nothing again.
    pub fn with_tabs(&self, gate: Arc<dyn TabGate>) -> PreparedMonitor {
        PreparedMonitor {
            tabs: Some(gate),
            ..self.clone()
        }
    }

    /// This monitor with its browser session (the cookies and local storage its `login` left)
    /// kept in `store` between checks, so the login runs again only when the site forgot the
    /// session. Without a store the login runs on every check. Compiles nothing again.
    pub fn with_sessions(&self, store: Arc<dyn crate::steps::SessionStore>) -> PreparedMonitor {
        PreparedMonitor {
            sessions: Some(store),
            ..self.clone()
        }
    }

    /// Whether checks of this monitor render the page (`dynamicContent`, or browser steps).
    pub fn renders(&self) -> bool {
        self.monitor.dynamic_content || self.plan.steps.is_some()
    }

    /// Extracts this monitor's value from `html` exactly as a check of a page with that text
    /// would (its `excludeXPath`, then `xPath`, then `regex`), counting what each XPath
    /// selected, for someone choosing them ([`Evaluation`]). The HTTP status plays no part:
    /// fetch the page with [`Checker::page_source`].
    ///
    /// CPU-bound (a parse of the whole page, then the XPaths); it ends soon after `deadline`
    /// with [`crate::extract::ExtractError::TimedOut`] as its value. Run it off an async
    /// runtime's worker threads for large pages.
    pub fn evaluate(&self, html: &str, deadline: Deadline) -> Evaluation {
        self.plan.extractor.evaluate_within(html, deadline)
    }
}
