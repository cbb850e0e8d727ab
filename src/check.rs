//! The [`Checker`] trait: the seam between the engine and its frontends (the REST service, the
//! command line, embedders' own services), and what one check yields: a [`CheckOutcome`] with
//! a typed [`ErrorKind`] beside its text, serializable with serde (camelCase, durations in
//! milliseconds).

use crate::crawl::{CrawlStats, CrawlStream, CrawledPage, LeftOutPage};
use crate::model::{ClientData, Monitor};
use crate::validate::{InvalidMonitor, Plan};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;

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
}

/// A monitor compiled for checking ([`Checker::prepare`]): cheap to clone and to share between
/// tasks; checking it compiles nothing again.
#[derive(Debug, Clone)]
pub struct PreparedMonitor {
    pub(crate) monitor: Arc<Monitor>,
    pub(crate) plan: Arc<Plan>,
}

impl PreparedMonitor {
    /// The monitor as it was when prepared.
    pub fn monitor(&self) -> &Monitor {
        &self.monitor
    }
}

/// What kind of failure a check (or a crawled page) met, beside the text users see. New kinds
/// may come; match with a wildcard arm.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ErrorKind {
    /// No connection could be made, or it broke (DNS, refused, reset, unreadable body).
    Network,
    /// The fetch (or the wait for a free slot of the host) took longer than allowed.
    Timeout,
    /// The page answered with an error status that will not change by itself (4xx but 408 and
    /// 429).
    HttpStatus,
    /// The server answered it cannot serve now (5xx, 408, 429).
    Unavailable,
    /// The network policy refused the address (a private network).
    Refused,
    /// Redirects looped, were too many, or led somewhere that is not http(s).
    Redirect,
    /// The response was larger than the engine accepts.
    TooLarge,
    /// The page loaded but the xPath or the regex matched nothing.
    NothingMatched,
    /// The page could not be turned into a value (an XPath failed while evaluating, markup
    /// nested too deep, ...).
    Extraction,
    /// Rendering in the browser failed.
    Render,
    /// The engine failed (a bug; please report it).
    Internal,
}

impl ErrorKind {
    /// Whether the same check may well succeed if tried again later without any change to the
    /// monitor or the page: network failures, timeouts, unavailable servers, browser failures
    /// and internal errors. Error statuses, refusals, redirect problems, size limits and
    /// extraction failures are not: they stay until the page or the monitor changes.
    pub fn is_transient(self) -> bool {
        matches!(
            self,
            ErrorKind::Network
                | ErrorKind::Timeout
                | ErrorKind::Unavailable
                | ErrorKind::Render
                | ErrorKind::Internal
        )
    }

    /// The kind of an HTTP error status (>= 400).
    pub fn of_status(status: u16) -> ErrorKind {
        match status {
            408 | 429 | 500..=599 => ErrorKind::Unavailable,
            _ => ErrorKind::HttpStatus,
        }
    }

    /// The kind of a failed fetch.
    pub fn of_fetch(error: &crate::fetch::FetchError) -> ErrorKind {
        use crate::fetch::FetchError as F;
        match error {
            F::Timeout(_) | F::ConnectTimeout { .. } | F::HostBusy { .. } => ErrorKind::Timeout,
            F::Refused(_) => ErrorKind::Refused,
            F::TooManyRedirects { .. } | F::BadRedirect { .. } | F::InvalidRedirect { .. } => {
                ErrorKind::Redirect
            }
            F::AfterRedirect { error, .. } => ErrorKind::of_fetch(error),
            F::TooLarge { .. } => ErrorKind::TooLarge,
            F::Connect { .. } | F::Body(_) | F::Other(_) => ErrorKind::Network,
            F::Render(_) => ErrorKind::Render,
        }
    }

    /// The kind of a failed extraction.
    pub fn of_extract(error: &crate::extract::ExtractError) -> ErrorKind {
        use crate::extract::ExtractError as E;
        match error {
            E::XPathMatchedNothing | E::RegexMatchedNothing => ErrorKind::NothingMatched,
            // The same page may well be extracted in time on a less busy machine.
            E::TimedOut { .. } => ErrorKind::Timeout,
            _ => ErrorKind::Extraction,
        }
    }
}

/// What one check found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckOutcome {
    /// The result as the API shows it: `lastCheckTimestamp`, `raw` (the value) or `error`.
    pub data: ClientData,
    /// What kind of failure `data.error` is, when the check failed.
    pub error_kind: Option<ErrorKind>,
    /// HTTP status of the (last) response, when one arrived.
    pub status: Option<u16>,
    /// The URL after redirects, when a response arrived.
    pub final_url: Option<String>,
    /// The Content-Type of the response.
    pub content_type: Option<String>,
    /// Where the time went.
    pub timings: Timings,
    /// The page's HTML as fetched, when the monitor has `collectRawHtml`.
    pub raw_html: Option<String>,
    /// For a Portal monitor: every page crawled.
    pub crawl: Option<CrawlReport>,
}

/// The pages of a Portal check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CrawlReport {
    /// Every page crawled, in the order they finished.
    pub pages: Vec<CrawledPage>,
    /// Pages fetched but left out (by `ignoreInvalidPages`, `crawlBinaryContent`, or as a
    /// redirect to a page already crawled), with why: a page that was reported before and is
    /// now here was not removed, only left out.
    pub left_out: Vec<LeftOutPage>,
    /// The page budget stopped the crawl before every in-scope link was followed.
    pub budget_reached: bool,
    /// Counts, sizes and latencies of the crawl.
    pub stats: CrawlStats,
}

impl CheckOutcome {
    /// The value, when the check succeeded.
    pub fn value(&self) -> Option<&str> {
        self.data.raw.as_deref()
    }

    /// The error, when the check failed.
    pub fn error(&self) -> Option<&str> {
        self.data.error.as_deref()
    }

    /// Whether the check failed in a way that may pass by itself on a later try
    /// ([`ErrorKind::is_transient`]); false when it succeeded.
    pub fn is_transient_failure(&self) -> bool {
        self.error_kind.is_some_and(ErrorKind::is_transient)
    }
}

/// Where the time of a check went.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Timings {
    /// Fetching: connect, request, redirects, body.
    #[serde(with = "millis")]
    pub fetch: Duration,
    /// Parsing and extraction.
    #[serde(with = "millis")]
    pub extract: Duration,
    /// The whole check.
    #[serde(with = "millis")]
    pub total: Duration,
}

/// Durations in JSON as milliseconds, with microseconds as the fraction (`12.345`).
pub mod millis {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    /// Writes `duration` as milliseconds.
    pub fn serialize<S: Serializer>(duration: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
        let micros = u64::try_from(duration.as_micros()).unwrap_or(u64::MAX);
        serializer.serialize_f64(micros as f64 / 1000.0)
    }

    /// Reads milliseconds (non-negative and finite) as a duration.
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
        let ms = f64::deserialize(deserializer)?;
        if !ms.is_finite() || ms < 0.0 {
            return Err(serde::de::Error::custom(format!(
                "{ms} is not a duration in milliseconds"
            )));
        }
        Duration::try_from_secs_f64(ms / 1000.0).map_err(serde::de::Error::custom)
    }
}
