//! # wachet
//!
//! A web page monitoring engine: it fetches a page (plain HTTP, or rendered by a headless
//! browser), narrows it to the watched value with XPath 1.0, an exclusion XPath and a regular
//! expression, and diffs values between checks. Frontends (the `wachet` command line and REST
//! service, or your own service) plug in through the [`Checker`] trait.
//!
//! ```
//! use wachet::{Checker, Engine, Monitor};
//! # use wachet::testing::FixtureServer;
//!
//! # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let server = FixtureServer::builder()
//! #     .page("/", "<h1>Tea</h1><table><tr><td>Price</td><td>3.50 EUR</td></tr></table>")
//! #     .start().await?;
//! # let url = server.url("/");
//! // Private networks are refused by default; this example's page is served on 127.0.0.1.
//! let engine = Engine::builder().allow_private_networks(true).build()?;
//! let mut monitor = Monitor::new(url);
//! monitor.x_path = Some("//td[.='Price']/following-sibling::td".into());
//! let outcome = engine.check(&monitor).await?;
//! assert_eq!(outcome.value(), Some("3.50 EUR"));
//!
//! let changes = wachet::diff::diff("3.50 EUR", outcome.value().unwrap_or(""));
//! assert_eq!(changes.len(), 1); // unchanged: one Equal run
//! # Ok(()) }
//! ```
//!
//! ## Module map
//!
//! Imports run one way, with the data flow: each layer uses only the layers below it.
//!
//! ```text
//! engine             runs checks; a Portal monitor goes to the crawler
//! check | crawl      the Checker seam | the Portal crawler (frontier, scheduler, workers)
//! analysis           one analysis of a fetched page, for a single page and each crawled one
//! classify           walls and empty documents, told from the page (before its analysis)
//! outcome | validate what checks and crawls yield | a monitor compiled into a plan
//! render             Chromium as a fetcher (feature `chrome`)
//! fetch | extract    downloaders and the network policy | HTML to value
//! filter             URL filters of a Portal monitor
//! pattern            regexes as users write them
//! model              the API's types
//! ```
//!
//! Beside the flow, [`diff`] and [`alerts`] use only [`model`] and [`normalize`]; `testing` sits
//! above [`engine`].
//!
//! - [`engine`]: the [`Engine`] that runs checks, configured with [`EngineBuilder`].
//! - [`check`]: the [`Checker`] trait frontends use, and what a check yields.
//! - [`crawl`]: the Portal crawler: link following, scope, filters, dedup, rate limits.
//! - [`validate`]: a monitor checked and compiled before any fetch.
//! - [`fetch`]: the downloaders, behind the [`fetch::Fetcher`] trait, and the network policy.
//! - [`extract`]: HTML5 parsing, XPath 1.0, rendered text, regex: from page to value.
//! - [`filter`]: URL filters of a Portal monitor.
//! - [`model`]: the API's resources (monitors, check data, alerts, ...) as serde types.
//! - [`diff`]: word-level diffs between values.
//! - [`alerts`]: which notifications a check raises, as a pure function of the state before it.
//! - [`classify`]: walls (bot challenges, captchas, access-denied, rate-limit and maintenance
//!   pages) and empty or truncated documents, told from the page they stand in for.
//! - [`normalize`]: comparison keys, so white space, Unicode forms, quote and dash variants and
//!   character reference spellings never make a change.
//! - `testing` (feature `testing`): a fixture HTTP server, and fixture regression suites
//!   (`testing::Suite`: a directory of pages with their monitors and expected outcomes, each
//!   served and checked through the real path; `wachet fixtures run` is its command line).

#![warn(missing_docs)]

pub mod alerts;
mod analysis;
pub mod check;
pub mod classify;
pub mod crawl;
pub mod diff;
pub mod engine;
pub mod extract;
pub mod fetch;
pub mod filter;
pub mod model;
pub mod normalize;
mod outcome;
mod pattern;
#[cfg(feature = "chrome")]
pub mod render;
pub mod steps;
#[cfg(feature = "testing")]
pub mod testing;
pub mod validate;

#[cfg(test)]
mod test_rng;

pub use check::{
    CheckOutcome, Checker, CrawlReport, ErrorKind, PageSource, PreparedMonitor, SourceError,
    TabGate, TabPass, TabRefused, Timings,
};
pub use crawl::{
    CrawlEvent, CrawlSettings, CrawlStats, CrawlStream, CrawledPage, LeftOutPage, LeftOutReason,
    PortalFold, Progress,
};
pub use engine::{BuildError, Engine, EngineBuilder};
pub use model::Monitor;
pub use validate::{FieldError, InvalidMonitor};

/// The README's examples run as doc tests, so the README cannot drift from the code.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

/// The user guide's chapters (`docs/src/`), each a doc test, so its Rust code is compiled and
/// run by `cargo test` as the README's is. `tests/docs.rs` fails when a chapter is missing here.
#[cfg(doctest)]
mod guide {
    #[doc = include_str!("../docs/src/introduction.md")]
    struct Introduction;
    #[doc = include_str!("../docs/src/install.md")]
    struct Install;
    #[doc = include_str!("../docs/src/web.md")]
    struct Web;
    #[doc = include_str!("../docs/src/api.md")]
    struct Api;
    #[doc = include_str!("../docs/src/cli.md")]
    struct Cli;
    #[doc = include_str!("../docs/src/values.md")]
    struct Values;
    #[doc = include_str!("../docs/src/alerts.md")]
    struct Alerts;
    #[doc = include_str!("../docs/src/notifications.md")]
    struct Notifications;
    #[doc = include_str!("../docs/src/service.md")]
    struct Service;
    #[doc = include_str!("../docs/src/postgres.md")]
    struct Postgres;
    #[doc = include_str!("../docs/src/backups.md")]
    struct Backups;
    #[doc = include_str!("../docs/src/moving.md")]
    struct Moving;
    #[doc = include_str!("../docs/src/security.md")]
    struct Security;
    #[doc = include_str!("../docs/src/library.md")]
    struct Library;
    #[doc = include_str!("../docs/src/fixtures.md")]
    struct Fixtures;
    #[doc = include_str!("../docs/src/benchmarks.md")]
    struct Benchmarks;
    #[doc = include_str!("../docs/src/design.md")]
    struct Design;
    #[doc = include_str!("../docs/src/contributing.md")]
    struct Contributing;
}
