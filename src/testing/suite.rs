//! Fixture regression suites: a directory of cases, each a page (or a whole site) with a monitor
//! and the outcome the engine gave for it, run through the real path: a [`FixtureServer`] serves
//! the case on 127.0.0.1 and an [`Engine`] checks it. This module owns the case format
//! (`case.json`, `expected.json`), running cases, comparing outcomes with a readable line diff,
//! and rewriting expectations in update mode; the `wachet fixtures` command and the project's
//! own fixture tests are thin callers of it.
//!
//! # Layout
//!
//! Every folder directly inside the suite directory is a case, except folders whose names start
//! with `.` or `_` (room for material shared by cases, such as a site several Portal cases
//! crawl). A case folder holds:
//!
//! - its page, `page.html` unless `case.json` names another (`"page"`), or a site of many pages;
//! - `case.json`: `{"description", "monitor", "page", "site", "response", "engine"}`, all
//!   optional. `monitor` is the monitor in the API's JSON (see [`Monitor`]); its `url` is
//!   replaced by the fixture server's address of the page, so a recorded case may keep the
//!   original address there for reference. `site` is a folder, relative to the case folder,
//!   served instead of the case folder itself. `response` (`{"status", "headers"}`) replaces
//!   the reply for the page (a `content-type` of `text/html` is added when none is given);
//!   without it files are served with a type from their extension. `engine` holds settings of
//!   the engine ([`EngineSettings`]);
//! - `expected.json`: `{"raw", "error", "errorKind", "status"}` (`errorKind` only for a failed
//!   check, [`ErrorKind`]'s name), and for a Portal case `"pages"`, the URL set
//!   with depths (`{"/index.html": 0, ...}`, the fixture server's origin left out; a Portal
//!   case's `raw` is the same URLs, so it stays `null`).
//!
//! # Suites from strangers
//!
//! A suite may come from anyone (a pull request run in CI), so a case reads and reaches only
//! what is its own. `site`, `page`, `case.json` and `expected.json` must resolve, symbolic
//! links followed, inside the suite directory (a case run on its own: inside its folder); a
//! `..` that stays inside is fine, so cases can share a site in a `_` folder. A path leading
//! out, an absolute `site`, or a loop of links is an error of the case
//! ([`CaseError::OutsideCase`]), and the fixture server follows no link out of the suite. Each
//! case's engine reaches only its own fixture server ([`EngineBuilder::only_origin`]): a
//! redirect or a link to anything else, another local server included, fails with
//! [`FetchError::OutsideOrigins`](crate::fetch::FetchError::OutsideOrigins). A case that needs
//! more sets `engine.allowNetwork`, which runs only when the suite allows it too
//! ([`SuiteBuilder::allow_network`]).
//!
//! ```
//! use wachet::testing::{CaseResult, Suite};
//!
//! # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = std::env::temp_dir().join(format!("wachet-suite-doc-{}", std::process::id()));
//! # let _ = std::fs::remove_dir_all(&dir);
//! let case = dir.join("price");
//! std::fs::create_dir_all(&case)?;
//! std::fs::write(case.join("page.html"), "<p class=price>Price: 12 EUR</p>")?;
//! std::fs::write(case.join("case.json"), r#"{"monitor": {"regex": "(\\d+) EUR"}}"#)?;
//!
//! // Update mode writes the outcome as the expectation ...
//! let report = Suite::builder(&dir).update(true).build().run().await?;
//! assert!(matches!(report.cases[0].result, CaseResult::Updated { .. }));
//! let expected = std::fs::read_to_string(case.join("expected.json"))?;
//! assert!(expected.contains(r#""raw": "12""#));
//!
//! // ... and from then on every run compares against it.
//! std::fs::write(case.join("page.html"), "<p class=price>Price: 15 EUR</p>")?;
//! let report = Suite::builder(&dir).build().run().await?;
//! assert!(!report.passed());
//! let CaseResult::Failed { diff } = &report.cases[0].result else { panic!() };
//! assert!(diff.contains("-raw: \"12\"\n+raw: \"15\""));
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok(()) }
//! ```

use super::{FixtureServer, Reply};
use crate::check::{CheckOutcome, Checker, ErrorKind};
use crate::engine::{BuildError, Engine, EngineBuilder};
use crate::model::Monitor;
use crate::validate::InvalidMonitor;
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, Instant};

/// The case's settings file.
pub const CASE_FILE: &str = "case.json";
/// The case's expectation file.
pub const EXPECTED_FILE: &str = "expected.json";
/// The page checked when `case.json` names none.
pub const DEFAULT_PAGE: &str = "page.html";

/// The largest `case.json` or `expected.json` read; anything bigger is not a hand-kept file.
const MAX_JSON_BYTES: u64 = 64 * 1024 * 1024;

/// A case's `case.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Case {
    /// What the case pins down.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The monitor, as the API takes it. Its `url` is replaced by the fixture server's.
    #[serde(default, serialize_with = "minimal_monitor")]
    pub monitor: Monitor,
    /// The page checked (the start page of a Portal case), a path relative to the served folder;
    /// [`DEFAULT_PAGE`] when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<String>,
    /// The folder served, relative to the case folder; the case folder when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub site: Option<String>,
    /// The reply for the page, replacing the plain file reply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<ResponseSpec>,
    /// Engine settings for this case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<EngineSettings>,
}

impl Case {
    /// The file's text: pretty JSON with a final newline, the monitor without the fields at
    /// their defaults.
    pub fn to_json(&self) -> String {
        pretty(self)
    }
}

/// The monitor with only the fields that differ from a default monitor, so a case file says
/// what matters about it.
fn minimal_monitor<S: serde::Serializer>(monitor: &Monitor, s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::Error;
    let full = serde_json::to_value(monitor).map_err(S::Error::custom)?;
    let default = serde_json::to_value(Monitor::default()).map_err(S::Error::custom)?;
    match (full, default) {
        (serde_json::Value::Object(full), serde_json::Value::Object(default)) => {
            let minimal: serde_json::Map<String, serde_json::Value> = full
                .into_iter()
                .filter(|(k, v)| default.get(k) != Some(v))
                .collect();
            minimal.serialize(s)
        }
        (full, _) => full.serialize(s),
    }
}

/// The reply a case's page gets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResponseSpec {
    /// HTTP status; 200 when absent.
    #[serde(default = "ok")]
    pub status: u16,
    /// Response headers; `content-type: text/html` is added when no content type is given.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
}

fn ok() -> u16 {
    200
}

/// Engine settings a case may set; the others keep the suite's engine's values. The engine
/// reaches only the case's fixture server (on 127.0.0.1) unless the case and the suite both
/// allow the network.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EngineSettings {
    /// [`EngineBuilder::max_pages`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_pages: Option<usize>,
    /// [`EngineBuilder::crawl_concurrency`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crawl_concurrency: Option<usize>,
    /// [`EngineBuilder::per_host_concurrency`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_host_concurrency: Option<usize>,
    /// [`EngineBuilder::per_host_rps`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_host_rps: Option<u32>,
    /// [`EngineBuilder::strip_tracking_params`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strip_tracking_params: Option<bool>,
    /// [`EngineBuilder::total_timeout`], in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_timeout_secs: Option<f64>,
    /// [`EngineBuilder::max_body_bytes`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_body_bytes: Option<u64>,
    /// [`EngineBuilder::user_agent`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_agent: Option<String>,
    /// Lets the case reach beyond its fixture server (other hosts, the network), when the
    /// suite allows that too ([`SuiteBuilder::allow_network`]). Without both, every request
    /// to anything but the case's own fixture server is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_network: Option<bool>,
}

impl EngineSettings {
    /// `base` with these settings applied; `None` for a timeout that is not a positive number.
    fn apply(&self, mut base: EngineBuilder) -> Option<EngineBuilder> {
        if let Some(n) = self.max_pages {
            base = base.max_pages(n);
        }
        if let Some(n) = self.crawl_concurrency {
            base = base.crawl_concurrency(n);
        }
        if let Some(n) = self.per_host_concurrency {
            base = base.per_host_concurrency(n);
        }
        if let Some(n) = self.per_host_rps {
            base = base.per_host_rps(n);
        }
        if let Some(strip) = self.strip_tracking_params {
            base = base.strip_tracking_params(strip);
        }
        if let Some(secs) = self.total_timeout_secs {
            let timeout = Duration::try_from_secs_f64(secs)
                .ok()
                .filter(|t| !t.is_zero())?;
            base = base.total_timeout(timeout);
        }
        if let Some(bytes) = self.max_body_bytes {
            base = base.max_body_bytes(bytes);
        }
        if let Some(agent) = &self.user_agent {
            base = base.user_agent(agent.clone());
        }
        Some(base)
    }
}

/// A case's `expected.json`: what the check gave.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expected {
    /// The value (`null` when the check failed, and for Portal cases).
    pub raw: Option<String>,
    /// The error (`null` when the check succeeded).
    pub error: Option<String>,
    /// What kind of failure the error is (absent when the check succeeded).
    #[serde(default, rename = "errorKind", skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<ErrorKind>,
    /// The HTTP status of the page (the start page of a Portal case).
    pub status: Option<u16>,
    /// Portal cases: every page crawled, with its depth. Pages of the fixture server are keyed
    /// by path and query, others by their whole URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pages: Option<BTreeMap<String, u8>>,
}

impl Expected {
    /// What `outcome` says, with `origin` (`http://127.0.0.1:PORT`) left out of Portal page
    /// URLs.
    pub fn from_outcome(outcome: &CheckOutcome, origin: &str) -> Expected {
        match &outcome.crawl {
            None => Expected {
                raw: outcome.data.raw.clone(),
                error: outcome.data.error.clone(),
                error_kind: outcome.error_kind,
                status: outcome.status,
                pages: None,
            },
            Some(crawl) => Expected {
                raw: None,
                error: outcome.data.error.clone(),
                error_kind: outcome.error_kind,
                status: outcome.status,
                pages: Some(
                    crawl
                        .pages
                        .iter()
                        .map(|p| {
                            let key = p
                                .url
                                .strip_prefix(origin)
                                .filter(|rest| rest.starts_with('/'))
                                .unwrap_or(&p.url);
                            (key.to_string(), p.depth)
                        })
                        .collect(),
                ),
            },
        }
    }

    /// The file's text: pretty JSON with a final newline.
    pub fn to_json(&self) -> String {
        pretty(self)
    }

    /// One line a fact, multi-line values one line each, for line diffs a reader can follow.
    pub fn to_lines(&self) -> String {
        let mut out = String::new();
        out.push_str(&format!("status: {}\n", json(&self.status)));
        out.push_str(&format!("error: {}\n", json(&self.error)));
        if let Some(kind) = &self.error_kind {
            out.push_str(&format!("errorKind: {}\n", json(kind)));
        }
        match &self.raw {
            Some(raw) if raw.contains('\n') => {
                out.push_str("raw:\n");
                for line in raw.split('\n') {
                    out.push_str(&format!("  {}\n", json(&line)));
                }
            }
            raw => out.push_str(&format!("raw: {}\n", json(raw))),
        }
        if let Some(pages) = &self.pages {
            out.push_str(&format!("pages: {}\n", pages.len()));
            for (url, depth) in pages {
                out.push_str(&format!("  {url} depth {depth}\n"));
            }
        }
        out
    }
}

fn json<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "?".into())
}

fn pretty<T: Serialize>(value: &T) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    text
}

/// Why a case could not be run. Every variant names the file or folder at fault.
#[derive(Debug, thiserror::Error)]
pub enum CaseError {
    /// A file the case needs is not there.
    #[error("{} is missing", .path.display())]
    Missing {
        /// The file.
        path: PathBuf,
    },
    /// A file could not be read.
    #[error("cannot read {}: {source}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file is not what the format says.
    #[error("{}: {message}", .path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong, with the field and position when known.
        message: String,
    },
    /// The engine refused the case's monitor before fetching anything.
    #[error("{}: the monitor is invalid: {source}", .path.display())]
    InvalidMonitor {
        /// The case file.
        path: PathBuf,
        /// The engine's reasons.
        source: InvalidMonitor,
    },
    /// The case's engine settings do not make an engine.
    #[error("{}: engine settings: {source}", .path.display())]
    Engine {
        /// The case file.
        path: PathBuf,
        /// Why.
        source: BuildError,
    },
    /// A path of the case leads out of where the case may read: `site` and `page` must stay
    /// inside the suite directory (the case folder, for a case run on its own), and symbolic
    /// links count where they lead.
    #[error("{}: {field}: {message}", .path.display())]
    OutsideCase {
        /// The case file.
        path: PathBuf,
        /// The field (`site`, `page`), or the file, at fault.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// The case asks for the network and the suite does not allow it.
    #[error(
        "{}: engine.allowNetwork: the case reaches beyond its fixture server, which this run does not allow (`wachet fixtures run --allow-network`, `SuiteBuilder::allow_network`)",
        .path.display()
    )]
    NetworkNotAllowed {
        /// The case file.
        path: PathBuf,
    },
    /// The fixture server could not start.
    #[error("cannot start the fixture server: {0}")]
    Server(std::io::Error),
    /// The check did not end within the suite's case timeout.
    #[error("the check took longer than {} s", .0.as_secs_f64())]
    Timeout(Duration),
    /// An expectation could not be written.
    #[error("cannot write {}: {source}", .path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// Why a suite could not be run at all.
#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    /// The suite directory could not be read.
    #[error("cannot read the suite directory {}: {source}", .path.display())]
    ReadDir {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The suite directory holds no case folder.
    #[error("{} holds no case folders", .path.display())]
    NoCases {
        /// The directory.
        path: PathBuf,
    },
}

/// How one case went.
#[derive(Debug)]
pub enum CaseResult {
    /// The outcome is the expected one.
    Passed,
    /// Update mode: the outcome differed from `expected.json` (or there was none, or it was
    /// unreadable) and was written there.
    Updated {
        /// What changed, as in [`CaseResult::Failed`]; `None` when there was no readable
        /// expectation before.
        diff: Option<String>,
    },
    /// The outcome differs from the expected one.
    Failed {
        /// A unified line diff from the expected outcome (`-`) to the actual one (`+`).
        diff: String,
    },
    /// The case could not be run.
    Error(CaseError),
}

/// One case's report.
#[derive(Debug)]
pub struct CaseReport {
    /// The case folder's name.
    pub name: String,
    /// The case folder.
    pub dir: PathBuf,
    /// How it went.
    pub result: CaseResult,
    /// How long it took.
    pub elapsed: Duration,
}

impl CaseReport {
    /// Passed, or updated in update mode.
    pub fn passed(&self) -> bool {
        matches!(self.result, CaseResult::Passed | CaseResult::Updated { .. })
    }
}

/// Every case's report, in the order of the case names.
#[derive(Debug)]
pub struct SuiteReport {
    /// One report a case.
    pub cases: Vec<CaseReport>,
}

impl SuiteReport {
    /// Every case passed (or was updated).
    pub fn passed(&self) -> bool {
        self.cases.iter().all(CaseReport::passed)
    }

    /// The cases that failed or could not run.
    pub fn failures(&self) -> impl Iterator<Item = &CaseReport> {
        self.cases.iter().filter(|c| !c.passed())
    }
}

/// Sets up a [`Suite`].
#[derive(Debug, Clone)]
pub struct SuiteBuilder {
    dir: PathBuf,
    engine: EngineBuilder,
    update: bool,
    concurrency: usize,
    case_timeout: Duration,
    allow_network: bool,
}

impl SuiteBuilder {
    /// The engine settings cases start from (a case's `engine` settings apply on top). Each
    /// case's engine is confined to its fixture server ([`EngineBuilder::only_origin`]) unless
    /// the network is allowed. Default: [`Engine::builder`].
    pub fn engine(mut self, engine: EngineBuilder) -> Self {
        self.engine = engine;
        self
    }

    /// Update mode: a case whose outcome differs from `expected.json` gets the outcome written
    /// there and counts as passed. Default: off.
    pub fn update(mut self, update: bool) -> Self {
        self.update = update;
        self
    }

    /// Lets cases whose `engine.allowNetwork` is true reach beyond their fixture server: every
    /// address, private networks included. Only for suites whose cases are trusted. Default:
    /// off, and then such a case is an error ([`CaseError::NetworkNotAllowed`]).
    pub fn allow_network(mut self, allow: bool) -> Self {
        self.allow_network = allow;
        self
    }

    /// How many cases run at once (at least 1). Default: 4.
    pub fn concurrency(mut self, cases: usize) -> Self {
        self.concurrency = cases.max(1);
        self
    }

    /// How long one case's check may take. Default: 120 s.
    pub fn case_timeout(mut self, timeout: Duration) -> Self {
        self.case_timeout = timeout;
        self
    }

    /// The suite.
    pub fn build(self) -> Suite {
        Suite {
            dir: self.dir,
            engine: self.engine.allow_private_networks(true),
            update: self.update,
            concurrency: self.concurrency,
            case_timeout: self.case_timeout,
            allow_network: self.allow_network,
        }
    }
}

/// A fixture regression suite: the cases in a directory (the [module docs](crate::testing::suite)
/// describe the layout), run through a [`FixtureServer`] and an [`Engine`].
#[derive(Debug, Clone)]
pub struct Suite {
    dir: PathBuf,
    engine: EngineBuilder,
    update: bool,
    concurrency: usize,
    case_timeout: Duration,
    allow_network: bool,
}

impl Suite {
    /// A builder for the suite in `dir`.
    pub fn builder(dir: impl Into<PathBuf>) -> SuiteBuilder {
        SuiteBuilder {
            dir: dir.into(),
            engine: Engine::builder(),
            update: false,
            concurrency: 4,
            case_timeout: Duration::from_secs(120),
            allow_network: false,
        }
    }

    /// The case folders, sorted by name.
    pub fn cases(&self) -> Result<Vec<PathBuf>, SuiteError> {
        let read_err = |source| SuiteError::ReadDir {
            path: self.dir.clone(),
            source,
        };
        let mut cases = Vec::new();
        for entry in std::fs::read_dir(&self.dir).map_err(read_err)? {
            let entry = entry.map_err(read_err)?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with('.') || name.starts_with('_') {
                continue;
            }
            let path = entry.path();
            if path.is_dir() {
                cases.push(path);
            }
        }
        if cases.is_empty() {
            return Err(SuiteError::NoCases {
                path: self.dir.clone(),
            });
        }
        cases.sort();
        Ok(cases)
    }

    /// Runs every case. A case that cannot run is reported as [`CaseResult::Error`]; only an
    /// unreadable or empty suite directory is an `Err`.
    pub async fn run(&self) -> Result<SuiteReport, SuiteError> {
        let cases = self.cases()?;
        let cases = futures::stream::iter(cases)
            .map(|dir| async move { self.run_case(&dir).await })
            .buffered(self.concurrency)
            .collect()
            .await;
        Ok(SuiteReport { cases })
    }

    /// Runs the case in folder `dir`, which need not be inside the suite directory.
    pub async fn run_case(&self, dir: &Path) -> CaseReport {
        let started = Instant::now();
        let result = match self.try_case(dir).await {
            Ok(result) => result,
            Err(err) => CaseResult::Error(err),
        };
        CaseReport {
            name: dir
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
            dir: dir.to_path_buf(),
            result,
            elapsed: started.elapsed(),
        }
    }

    async fn try_case(&self, dir: &Path) -> Result<CaseResult, CaseError> {
        let case_path = dir.join(CASE_FILE);
        let bounds = self.bounds(dir, &case_path)?;
        let case: Case = read_json(&bounds.inside(&case_path, CASE_FILE)?)?;
        let expected_path = dir.join(EXPECTED_FILE);
        // Read before the check so that a broken expectation is reported without waiting.
        let expected = match bounds
            .inside(&expected_path, EXPECTED_FILE)
            .and_then(|path| read_json::<Expected>(&path))
        {
            Ok(expected) => Some(expected),
            // Rewritten in update mode, unless it leads elsewhere: that is never read.
            Err(err @ CaseError::OutsideCase { .. }) => return Err(err),
            Err(_) if self.update => None,
            Err(err) => return Err(err),
        };

        let root = match &case.site {
            None => bounds.case.clone(),
            Some(site) => {
                if Path::new(site).has_root() {
                    return Err(bounds.outside("site", format!("\"{site}\" is not relative")));
                }
                let root = bounds.inside(&dir.join(site), "site")?;
                if !root.is_dir() {
                    return Err(CaseError::Malformed {
                        path: case_path,
                        message: format!("site: {} is not a folder", dir.join(site).display()),
                    });
                }
                root
            }
        };
        let page = case.page.as_deref().unwrap_or(DEFAULT_PAGE);
        let relative = Path::new(page);
        if page.is_empty()
            || !relative
                .components()
                .all(|c| matches!(c, Component::Normal(_)))
        {
            return Err(CaseError::Malformed {
                path: case_path,
                message: format!("page: \"{page}\" is not a relative path inside the site"),
            });
        }
        let page_file = root.join(relative);
        if std::fs::symlink_metadata(&page_file).is_err() {
            return Err(CaseError::Missing { path: page_file });
        }
        let page_file = bounds.inside(&page_file, "page")?;
        if !page_file.is_file() {
            return Err(CaseError::Missing { path: page_file });
        }
        let url_path = url_path(relative);

        let mut server = FixtureServer::builder()
            .dir(&root)
            .links_within(&bounds.limit);
        if let Some(spec) = &case.response {
            let body = std::fs::read(&page_file).map_err(|source| CaseError::Read {
                path: page_file.clone(),
                source,
            })?;
            let mut reply = Reply::new(spec.status).body(body);
            let mut has_type = false;
            for (name, value) in &spec.headers {
                has_type |= name.eq_ignore_ascii_case("content-type");
                reply = reply.header(name, value);
            }
            if !has_type {
                reply = reply.header("content-type", "text/html");
            }
            server = server.reply(url_path.clone(), reply);
        }
        let server = server.start().await.map_err(CaseError::Server)?;

        let builder = match &case.engine {
            None => self.engine.clone(),
            Some(settings) => {
                settings
                    .apply(self.engine.clone())
                    .ok_or_else(|| CaseError::Malformed {
                        path: case_path.clone(),
                        message: "engine.totalTimeoutSecs must be a positive number of seconds"
                            .into(),
                    })?
            }
        };
        let allow_network = case
            .engine
            .as_ref()
            .and_then(|e| e.allow_network)
            .unwrap_or(false);
        if allow_network && !self.allow_network {
            return Err(CaseError::NetworkNotAllowed { path: case_path });
        }
        let builder = builder.allow_private_networks(true);
        let builder = match allow_network {
            true => builder,
            // Loopback is allowed for the fixture server only: a page of the case redirecting
            // or linking anywhere else (another local service, the network) is refused.
            false => builder.only_origin(server.url("")),
        };
        let engine = builder.build().map_err(|source| CaseError::Engine {
            path: case_path.clone(),
            source,
        })?;

        let mut monitor = case.monitor;
        monitor.url = Some(server.url(&url_path));
        let outcome = tokio::time::timeout(self.case_timeout, engine.check(&monitor))
            .await
            .map_err(|_| CaseError::Timeout(self.case_timeout))?
            .map_err(|source| CaseError::InvalidMonitor {
                path: case_path.clone(),
                source,
            })?;
        let actual = Expected::from_outcome(&outcome, &server.url(""));

        if expected.as_ref() == Some(&actual) {
            return Ok(CaseResult::Passed);
        }
        let diff = expected.as_ref().map(|e| line_diff(e, &actual));
        if self.update {
            write_atomically(&expected_path, &actual.to_json())?;
            return Ok(CaseResult::Updated { diff });
        }
        Ok(CaseResult::Failed {
            diff: diff.unwrap_or_default(),
        })
    }
}

impl Suite {
    /// Where the case in `dir` may read: inside the suite directory when the case is one of
    /// its folders (cases may share material in `_` folders), else inside its own folder.
    fn bounds(&self, dir: &Path, case_path: &Path) -> Result<Bounds, CaseError> {
        let canonical = |path: &Path| {
            std::fs::canonicalize(path).map_err(|source| CaseError::Read {
                path: path.to_path_buf(),
                source,
            })
        };
        let case = canonical(dir)?;
        let limit = match dir.starts_with(&self.dir) {
            true => canonical(&self.dir)?,
            false => case.clone(),
        };
        let bounds = Bounds {
            case_path: case_path.to_path_buf(),
            case,
            limit,
        };
        if !bounds.case.starts_with(&bounds.limit) {
            return Err(bounds.outside(
                "the case folder",
                "leads out of the suite directory (a symbolic link?)".into(),
            ));
        }
        Ok(bounds)
    }
}

/// ELOOP, too many symbolic links: Linux's number, and macOS's and the BSDs'.
const ELOOP: [i32; 2] = [40, 62];

/// Where a case may read from, canonical (symbolic links resolved).
struct Bounds {
    case_path: PathBuf,
    /// The case folder.
    case: PathBuf,
    /// The folder nothing of the case may lead out of.
    limit: PathBuf,
}

impl Bounds {
    /// `path` resolved, when it stays inside the limit; `field` names it in the error. A
    /// missing file is [`CaseError::Missing`]; a loop of symbolic links an error of its own.
    fn inside(&self, path: &Path, field: &str) -> Result<PathBuf, CaseError> {
        let resolved = match std::fs::canonicalize(path) {
            Ok(resolved) => resolved,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(CaseError::Missing {
                    path: path.to_path_buf(),
                });
            }
            // The kernel stops at 40 links, so a loop ends here at once.
            Err(e) if e.raw_os_error().is_some_and(|n| ELOOP.contains(&n)) => {
                return Err(self.outside(
                    field,
                    format!("{} is a loop of symbolic links", path.display()),
                ));
            }
            Err(source) => {
                return Err(CaseError::Read {
                    path: path.to_path_buf(),
                    source,
                });
            }
        };
        if !resolved.starts_with(&self.limit) {
            let what = match self.limit == self.case {
                true => "the case folder",
                false => "the suite directory",
            };
            return Err(self.outside(
                field,
                format!(
                    "{} leads out of {what} (to {})",
                    path.display(),
                    resolved.display()
                ),
            ));
        }
        Ok(resolved)
    }

    fn outside(&self, field: &str, message: String) -> CaseError {
        CaseError::OutsideCase {
            path: self.case_path.clone(),
            field: field.to_string(),
            message,
        }
    }
}

/// A unified diff of the two outcomes' readable forms.
pub fn line_diff(expected: &Expected, actual: &Expected) -> String {
    let (old, new) = (expected.to_lines(), actual.to_lines());
    similar::TextDiff::from_lines(&old, &new)
        .unified_diff()
        .context_radius(3)
        .header("expected", "actual")
        .to_string()
}

/// `page.html` -> `/page.html`, each segment percent-encoded as a URL path needs.
fn url_path(relative: &Path) -> String {
    const SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::CONTROLS
        .add(b' ')
        .add(b'"')
        .add(b'#')
        .add(b'%')
        .add(b'/')
        .add(b'<')
        .add(b'>')
        .add(b'?')
        .add(b'`')
        .add(b'{')
        .add(b'}');
    relative
        .components()
        .map(|c| {
            let segment = c.as_os_str().to_string_lossy();
            format!(
                "/{}",
                percent_encoding::utf8_percent_encode(&segment, SEGMENT)
            )
        })
        .collect()
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, CaseError> {
    let len = match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() => meta.len(),
        Ok(_) => {
            return Err(CaseError::Malformed {
                path: path.to_path_buf(),
                message: "not a file".into(),
            });
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(CaseError::Missing {
                path: path.to_path_buf(),
            });
        }
        Err(source) => {
            return Err(CaseError::Read {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    if len > MAX_JSON_BYTES {
        return Err(CaseError::Malformed {
            path: path.to_path_buf(),
            message: format!("{len} bytes is more than {MAX_JSON_BYTES}"),
        });
    }
    let bytes = std::fs::read(path).map_err(|source| CaseError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let mut de = serde_json::Deserializer::from_slice(&bytes);
    serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let field = e.path().to_string();
        let message = if field == "." {
            e.inner().to_string()
        } else {
            format!("{field}: {}", e.inner())
        };
        CaseError::Malformed {
            path: path.to_path_buf(),
            message,
        }
    })
}

/// Writes `text` to a sibling file first, so a failed write never leaves half an expectation.
fn write_atomically(path: &Path, text: &str) -> Result<(), CaseError> {
    let err = |source| CaseError::Write {
        path: path.to_path_buf(),
        source,
    };
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".{}.tmp", std::process::id()));
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, text).map_err(err)?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        err(e)
    })
}
