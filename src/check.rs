//! The [`Checker`] trait: the seam between the engine and its frontends (the REST service, the
//! command line, embedders' own services), and what one check yields.

use crate::crawl::CrawledPage;
use crate::model::{ClientData, Monitor};
use crate::validate::InvalidMonitor;
use async_trait::async_trait;
use std::time::Duration;

/// Runs checks of monitors. Object-safe: frontends hold an `Arc<dyn Checker>`.
///
/// A monitor that cannot be checked at all (bad URL, XPath, regex, ...) is an `Err` before any
/// fetch; a check that ran and failed (network error, HTTP 404, nothing matched) is an `Ok`
/// outcome whose `data.error` says why, because that is a result to store and alert on.
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
/// # }
/// ```
#[async_trait]
pub trait Checker: Send + Sync {
    /// Checks that `monitor` can be checked, without fetching anything.
    fn validate(&self, monitor: &Monitor) -> Result<(), InvalidMonitor>;

    /// Runs one check of `monitor`.
    async fn check(&self, monitor: &Monitor) -> Result<CheckOutcome, InvalidMonitor>;
}

/// What one check found.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckOutcome {
    /// The result as the API shows it: `lastCheckTimestamp`, `raw` (the value) or `error`.
    pub data: ClientData,
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
#[derive(Debug, Clone, PartialEq)]
pub struct CrawlReport {
    /// Every page crawled, in the order they finished.
    pub pages: Vec<CrawledPage>,
    /// The page budget stopped the crawl before every in-scope link was followed.
    pub budget_reached: bool,
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
}

/// Where the time of a check went.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timings {
    /// Fetching: connect, request, redirects, body.
    pub fetch: Duration,
    /// Parsing and extraction.
    pub extract: Duration,
    /// The whole check.
    pub total: Duration,
}
