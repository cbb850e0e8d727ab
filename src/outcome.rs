//! What checks and crawls yield, as plain data both [`crate::check`] and [`crate::crawl`]
//! share: a check's [`CheckOutcome`] with its typed [`ErrorKind`] and [`Timings`], a crawl's
//! pages ([`CrawledPage`], [`LeftOutPage`]), events ([`CrawlEvent`]) and statistics
//! ([`CrawlStats`]). Serializable with serde (camelCase, durations in milliseconds). It sits
//! below both so that neither the seam nor the crawler depends on the other for its types.

use crate::model::ClientData;
use futures::Stream;
use futures::channel::mpsc;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

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
    /// The site answered with a wall instead of the page: a bot challenge, captcha,
    /// access-denied, rate-limit or maintenance page, or a request to enable JavaScript, with
    /// any status ([`crate::classify`]).
    Blocked,
    /// The document was empty or cut short: a 2xx response with no body, an HTML document
    /// ending inside a comment, script, style, attribute value or start tag or with nothing in
    /// its body, fewer bytes than its Content-Length, a chunked body without its last chunk, a
    /// connection reset while the body arrived ([`crate::classify`], [`crate::fetch::CutShort`]).
    Empty,
    /// The engine failed (a bug; please report it).
    Internal,
}

impl ErrorKind {
    /// Whether the same check may well succeed if tried again later without any change to the
    /// monitor or the page: network failures, timeouts, unavailable servers, browser failures,
    /// walls and empty or truncated documents (they clear by themselves) and internal errors.
    /// Error statuses, refusals, redirect problems, size limits and extraction failures are
    /// not: they stay until the page or the monitor changes.
    pub fn is_transient(self) -> bool {
        matches!(
            self,
            ErrorKind::Network
                | ErrorKind::Timeout
                | ErrorKind::Unavailable
                | ErrorKind::Render
                | ErrorKind::Blocked
                | ErrorKind::Empty
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
            F::Timeout(_) | F::ConnectTimeout { .. } | F::HostBusy { .. } | F::NoTab(_) => {
                ErrorKind::Timeout
            }
            F::Refused(_) | F::OutsideOrigins(_) => ErrorKind::Refused,
            F::TooManyRedirects { .. } | F::BadRedirect { .. } | F::InvalidRedirect { .. } => {
                ErrorKind::Redirect
            }
            F::AfterRedirect { error, .. } => ErrorKind::of_fetch(error),
            F::TooLarge { .. } => ErrorKind::TooLarge,
            F::CutShort(_) => ErrorKind::Empty,
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
    /// When the server says it made the response (its `Date` header), when it sent a valid
    /// one: the clock the page's own dates follow
    /// ([`crate::alerts::confirm::Confirmation::page_clock`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_date: Option<chrono::DateTime<chrono::Utc>>,
    /// Where the time went.
    pub timings: Timings,
    /// The page's HTML as fetched, when the monitor has `collectRawHtml`.
    pub raw_html: Option<String>,
    /// The page's title as `document.title` gives it, when a SinglePage check read an HTML
    /// page that has one (what a monitor named after its page is named).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
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

/// One page of a crawl.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CrawledPage {
    /// The normalized URL (of the link; a redirected page is reported under the URL that led
    /// to it).
    pub url: String,
    /// Hops from the start page (0).
    pub depth: u8,
    /// The page the link was found on (none for the start page).
    pub found_on: Option<String>,
    /// HTTP status, when a response arrived.
    pub status: Option<u16>,
    /// Content-Type of the response.
    pub content_type: Option<String>,
    /// The URL after redirects.
    pub final_url: Option<String>,
    /// The document's `<title>`, as `document.title` gives it (the API's page `name`); none
    /// for a page without one, a failed page or binary content.
    pub title: Option<String>,
    /// The page's value (the monitor's xPath/excludeXPath/regex applied) or error.
    pub data: ClientData,
    /// What kind of failure `data.error` is, when the page failed.
    pub error_kind: Option<ErrorKind>,
}

/// Why a fetched page is not among a crawl's pages.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum LeftOutReason {
    /// It answered with a status >= 400 and the monitor has `ignoreInvalidPages`.
    InvalidPage,
    /// It is not HTML and the monitor does not have `crawlBinaryContent`.
    BinaryContent,
    /// It redirects to a page the crawl already has (under that page's own URL, or another
    /// redirect's).
    RedirectToKnownPage,
}

/// A page fetched but left out of a crawl's pages.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LeftOutPage {
    /// The normalized URL.
    pub url: String,
    /// Hops from the start page.
    pub depth: u8,
    /// The page the link was found on.
    pub found_on: Option<String>,
    /// HTTP status of the (last) response.
    pub status: Option<u16>,
    /// Where it led, for a redirect.
    pub final_url: Option<String>,
    /// Why it is left out.
    pub reason: LeftOutReason,
}

/// Counts so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Progress {
    /// Pages finished (reported ones; left-out ones are counted in the statistics).
    pub done: usize,
    /// Pages waiting to be fetched.
    pub queued: usize,
    /// Finished pages that failed.
    pub failed: usize,
}

/// Fetch latency percentiles of a crawl's requests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Latency {
    /// Median.
    #[serde(with = "millis")]
    pub p50: Duration,
    /// 90th percentile.
    #[serde(with = "millis")]
    pub p90: Duration,
    /// 99th percentile.
    #[serde(with = "millis")]
    pub p99: Duration,
}

/// What a crawl did, for benchmarking and reports.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CrawlStats {
    /// Pages fetched: every page finished, failed and left-out ones included (a redirect and
    /// its target are one page).
    pub pages: usize,
    /// Pages that failed: no response, or a status >= 400 (left out or not).
    pub failed: usize,
    /// HTTP requests made, each redirect hop one.
    pub requests: usize,
    /// Body bytes received (after decompression).
    pub bytes: u64,
    /// From start to end.
    #[serde(with = "millis")]
    pub elapsed: Duration,
    /// `pages` per second of `elapsed`.
    pub pages_per_second: f64,
    /// Latency of the requests that got a response (from sending to the end of the body;
    /// waits for the host's slot not included).
    pub latency: Latency,
    /// Responses by HTTP status (redirect hops included).
    pub statuses: BTreeMap<u16, usize>,
    /// The page budget stopped the crawl before every in-scope link was followed.
    pub budget_reached: bool,
}

/// The end of a crawl.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CrawlSummary {
    /// Final counts.
    pub progress: Progress,
    /// The page budget stopped the crawl before every in-scope link was followed.
    pub budget_reached: bool,
    /// How long the crawl took.
    #[serde(with = "millis")]
    pub elapsed: Duration,
    /// Counts, sizes, latencies and statuses.
    pub stats: CrawlStats,
}

/// What a crawl stream yields. New events may come; match with a wildcard arm.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq)]
pub enum CrawlEvent {
    /// A page finished.
    Page {
        /// The page.
        page: CrawledPage,
        /// Counts after it.
        progress: Progress,
    },
    /// A page was fetched and left out (by `ignoreInvalidPages`, `crawlBinaryContent`, or as
    /// a redirect to a page already crawled).
    LeftOut(LeftOutPage),
    /// The crawl ended; always the last event.
    Finished(CrawlSummary),
}

/// Pages of a crawl as they finish. Dropping the stream stops the crawl.
pub struct CrawlStream {
    pub(crate) receiver: mpsc::Receiver<CrawlEvent>,
    /// Set when the crawl signed in (its login steps ran, at its start page): the start page's
    /// entry says so (`loggedIn`).
    pub(crate) logged_in: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
}

impl Stream for CrawlStream {
    type Item = CrawlEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<CrawlEvent>> {
        let mut polled = Pin::new(&mut self.receiver).poll_next(cx);
        if let Poll::Ready(Some(CrawlEvent::Page { page, .. })) = &mut polled
            && page.depth == 0
            && let Some(flag) = &self.logged_in
        {
            page.data.logged_in = flag.load(std::sync::atomic::Ordering::Acquire);
        }
        polled
    }
}
