//! The changedetection.io side of `noise`: version 0.60.10 from PyPI in a virtual environment
//! the bench creates once under the target directory (`cdio-venv`, reused by later runs), run
//! on loopback with a data directory of its own, two watches a page (its defaults; the
//! per-page settings an expert would write, listed in [`expert`]), and their change histories
//! read back through its API.
//!
//! changedetection.io sends a notification for every history entry after the first (the first
//! is the baseline), so the bench reads the histories (`GET /api/v1/watch/{uuid}/history`)
//! instead of receiving notifications: the same alerts, without an apprise receiver. A history
//! entry's key is the second the check started (`round(time.time())` before the fetch), so each
//! entry is placed at the first request of its watch's URL from half a second before it on.
//! It raises nothing on failed fetches (403, 429, 503, an empty reply, a filter that matches
//! nothing): those only show on the watch, so it has no Error alerts to score.

use super::corpus::{Hit, Page};
use super::score::Alert;
use super::{MODES, Mode};
use crate::api::Conn;
use http_body_util::Full;
use hyper::body::Bytes;
use hyper::{Method, Request, StatusCode};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The version compared.
pub const VERSION: &str = "0.60.10";
/// Longest wait for `pip install`.
const INSTALL_TIMEOUT: Duration = Duration::from_secs(900);
/// Longest wait for the service to answer after its start.
const START_TIMEOUT: Duration = Duration::from_secs(90);

/// The settings an expert would give each page's watch, in changedetection.io 0.60.10's API
/// fields: include filters (CSS, or `xpath:` with XPath 3.1 string functions to cut a counter
/// off a line), `json:` filters for the JSON API, and whitespace trimming. Pages whose noise
/// sits inside the lines that matter (number formats, Unicode variants, an A/B template's
/// words) have no setting that removes it; the rendered events page would need a browser
/// fetcher, which this installation does not have. The second corpus's settings were written the
/// same way, from its pages alone: what a user would select, counters and relative times cut off
/// with `substring-before` where they share a line with what matters, promoted listings left out
/// by class, the download button's `href` read as an attribute.
pub fn expert(page: &str) -> Value {
    match page {
        "shop-product" => json!({"include_filters": [
            "#buy-box h1", "#buy-box .price",
            "xpath://div[@id='buy-box']/p[@class='stock']/substring-before(., ' —')",
            "#description p"]}),
        "news-front" => json!({"include_filters": [
            "article.lead h1", "article.lead .standfirst",
            "xpath://p[@class='byline']/substring-before(., ' ·')"]}),
        "forum-thread" => json!({"include_filters": [".post-body"]}),
        "status-page" => json!({"include_filters": [
            "xpath://ul[@id='components']/li/substring-before(., ' — uptime')", "#incidents"]}),
        "price-list" => json!({"include_filters": ["#tarifs"], "trim_text_whitespace": true}),
        "ranked-chart" => json!({"include_filters": ["#chart"]}),
        "ab-pricing" => {
            json!({"include_filters": ["[itemprop=name]", "[itemprop=price]", ".feature"]})
        }
        "stale-changelog" => json!({"include_filters": [
            "#latest h2", "xpath://section[@id='latest']/p[1]",
            "xpath://p[@class='download']/substring-before(., ' ·')"]}),
        "bot-tickets" => json!({"include_filters": ["#events"]}),
        "library-hours" => json!({"include_filters": ["#hours", ".note"]}),
        "xhr-events" => json!({"include_filters": ["#events"]}),
        "careers-tokens" => json!({"include_filters": ["#jobs"]}),
        "recipe-unicode" => json!({"include_filters": [".recipe"], "trim_text_whitespace": true}),
        "blog-banners" => json!({"include_filters": ["article"]}),
        "restock-decoy" => json!({"include_filters": [
            "#availability .price",
            "xpath://div[@id='availability']/p[2]/substring-before(., ' ·')"]}),
        "json-api" => json!({"include_filters": ["json:$.name", "json:$.price", "json:$.offers"]}),
        "quiet-control" => json!({"include_filters": ["#about"]}),
        // The second corpus.
        "news-wire" => json!({"include_filters": ["xpath://ul[@id='latest']/li/a"],
            "trim_text_whitespace": true}),
        "price-api" => json!({"include_filters": [
            "json:$.sku", "json:$.name", "json:$.price", "json:$.currency", "json:$.stock",
            "json:$.discount_pct"]}),
        "shop-grid" => json!({"include_filters": ["#grid .product h3", "#grid .product .price"]}),
        "chart-swap" => json!({"include_filters": ["#chart li"]}),
        "replica-docs" => json!({"include_filters": ["#content"], "trim_text_whitespace": true}),
        "de-amtsblatt" => json!({"include_filters": [
            "#bekanntmachungen", "xpath://p[@id='sitzung']/substring-before(., ' ·')",
            "#gebuehren"], "trim_text_whitespace": true}),
        "jp-weather" => {
            json!({"include_filters": ["#keiho", "#yoho"], "trim_text_whitespace": true})
        }
        "slow-tracking" => json!({"include_filters": ["#events"]}),
        "server-clock" => json!({"include_filters": ["#tz .zone", "#tz .dst", "#tz .notice"]}),
        "visitor-count" => json!({"include_filters": [
            "#exhibition h1", "xpath://p[@class='dates']/substring-before(., ' ·')",
            "#exhibition .tickets"]}),
        "token-links" => json!({"include_filters": ["#documents ul"]}),
        "link-target" => json!({"include_filters": ["xpath://a[@id='dl-latest']/@href"]}),
        "job-board" => json!({"include_filters": [
            "xpath://ul[@id='jobs']/li[not(contains(@class, 'promoted'))]/*[not(@class='meta')]"],
            "trim_text_whitespace": true}),
        "release-page" => json!({"include_filters": [
            "#releases h2", "#releases .notes", "#releases .assets a", "#releases .assets .size"]}),
        "flight-status" => json!({"include_filters": [
            "xpath://p[@class='status']/substring-before(., ' ·')", "#flight table"],
            "trim_text_whitespace": true}),
        _ => json!({}),
    }
}

/// The virtual environment: `cdio-venv` in the target directory (beside `release/`).
fn venv_dir() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let target = exe
        .parent()
        .and_then(Path::parent)
        .ok_or("no target directory above this binary")?;
    Ok(target.join("cdio-venv"))
}

/// Runs `command` to its end within `timeout`, its output to `log`.
fn run_bounded(mut command: Command, log: &Path, timeout: Duration) -> Result<(), String> {
    let out = std::fs::File::create(log).map_err(|e| e.to_string())?;
    let err = out.try_clone().map_err(|e| e.to_string())?;
    let mut child = command
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("{command:?}: {e}"))?;
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            return match status.success() {
                true => Ok(()),
                false => Err(format!(
                    "{command:?} failed ({status}); see {}",
                    log.display()
                )),
            };
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "{command:?} took longer than {} s",
                timeout.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The `changedetection.io` executable, installing it first if needed.
pub fn install(work: &Path) -> Result<PathBuf, String> {
    let venv = venv_dir()?;
    let marker = venv.join(format!(".installed-{VERSION}"));
    let exe = venv.join("bin").join("changedetection.io");
    if marker.is_file() && exe.is_file() {
        return Ok(exe);
    }
    eprintln!(
        "installing changedetection.io {VERSION} into {} (once)",
        venv.display()
    );
    let mut venv_cmd = Command::new("python3");
    venv_cmd.args(["-m", "venv"]).arg(&venv);
    run_bounded(venv_cmd, &work.join("venv.log"), Duration::from_secs(120))?;
    let mut pip = Command::new(venv.join("bin").join("pip"));
    pip.args([
        "install",
        "--disable-pip-version-check",
        &format!("changedetection.io=={VERSION}"),
    ]);
    run_bounded(pip, &work.join("pip.log"), INSTALL_TIMEOUT)?;
    std::fs::write(&marker, VERSION).map_err(|e| e.to_string())?;
    Ok(exe)
}

/// A running changedetection.io, in a process group of its own; stopped (SIGTERM to the group,
/// then SIGKILL) when dropped.
pub struct Cdio {
    child: Child,
    addr: SocketAddr,
    key: String,
    log: PathBuf,
    /// Watch uuids by (page, mode).
    pub ids: HashMap<(&'static str, Mode), String>,
}

impl Drop for Cdio {
    fn drop(&mut self) {
        let group = format!("-{}", self.child.id());
        let _ = Command::new("kill")
            .args(["-TERM", "--", &group])
            .stderr(Stdio::null())
            .status();
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        // Anything of its group still there (workers it spawned) goes too.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &group])
            .stderr(Stdio::null())
            .status();
        let _ = self.child.wait();
    }
}

impl Cdio {
    /// Starts `exe` on a free loopback port with `data` as its datastore, watching private
    /// addresses (the corpus is on loopback), rechecks allowed down to 1 s.
    pub fn start(exe: &Path, data: &Path, log: &Path) -> Result<Cdio, String> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| e.to_string())?
            .port();
        let out = std::fs::File::create(log).map_err(|e| e.to_string())?;
        let err = out.try_clone().map_err(|e| e.to_string())?;
        let child = {
            use std::os::unix::process::CommandExt;
            Command::new(exe)
                .arg("-C")
                .arg("-d")
                .arg(data)
                .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-l", "WARNING"])
                .env("ALLOW_IANA_RESTRICTED_ADDRESSES", "true")
                .env("MINIMUM_SECONDS_RECHECK_TIME", "1")
                .stdin(Stdio::null())
                .stdout(out)
                .stderr(err)
                .process_group(0)
                .spawn()
                .map_err(|e| format!("cannot start {}: {e}", exe.display()))?
        };
        let mut cdio = Cdio {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            key: String::new(),
            log: log.to_path_buf(),
            ids: HashMap::new(),
        };
        let settings = data.join("changedetection.json");
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Ok(Some(status)) = cdio.child.try_wait() {
                return Err(format!(
                    "changedetection.io exited ({status}): {}",
                    cdio.log_tail()
                ));
            }
            let key = std::fs::read_to_string(&settings)
                .ok()
                .and_then(|s| serde_json::from_str::<Value>(&s).ok())
                .and_then(|v| {
                    v["settings"]["application"]["api_access_token"]
                        .as_str()
                        .map(str::to_string)
                });
            if let Some(key) = key
                && std::net::TcpStream::connect(cdio.addr).is_ok()
            {
                cdio.key = key;
                return Ok(cdio);
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "changedetection.io did not start within {} s: {}",
                    START_TIMEOUT.as_secs(),
                    cdio.log_tail()
                ));
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// The last lines of its log.
    pub fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(15)..].join("\n")
    }

    async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, String> {
        let mut conn = Conn::connect(self.addr).await?;
        let mut request = Request::builder()
            .method(method.clone())
            .uri(path)
            .header("host", self.addr.to_string())
            .header("x-api-key", &self.key);
        if body.is_some() {
            request = request.header("content-type", "application/json");
        }
        let request = request
            .body(Full::new(
                body.map(|b| Bytes::from(b.to_string())).unwrap_or_default(),
            ))
            .map_err(|e| e.to_string())?;
        let (status, bytes) = tokio::time::timeout(Duration::from_secs(30), conn.send(request))
            .await
            .map_err(|_| format!("{method} {path}: no answer within 30 s"))??;
        if !(status == StatusCode::OK
            || status == StatusCode::CREATED
            || status == StatusCode::NO_CONTENT)
        {
            return Err(format!(
                "changedetection.io {method} {path}: {status}: {}",
                String::from_utf8_lossy(&bytes)
            ));
        }
        Ok(serde_json::from_slice(&bytes).unwrap_or(Value::Null))
    }

    /// Removes the example watches of a fresh install and creates two watches a page, each
    /// rechecked every `recheck` seconds.
    pub async fn watch(
        &mut self,
        pages: &'static [Page],
        corpus: SocketAddr,
        recheck: u32,
    ) -> Result<(), String> {
        let existing = self.call(Method::GET, "/api/v1/watch", None).await?;
        if let Some(map) = existing.as_object() {
            for uuid in map.keys() {
                self.call(Method::DELETE, &format!("/api/v1/watch/{uuid}"), None)
                    .await?;
            }
        }
        for page in pages {
            for mode in MODES {
                let mut watch = json!({
                    "url": format!("http://{corpus}/{}/{}", page.name, mode.key("c")),
                    "title": format!("{} ({})", page.name, mode.label()),
                    "time_between_check": {"seconds": recheck},
                    "time_between_check_use_default": false,
                    "fetch_backend": "html_requests",
                });
                if mode == Mode::Natural
                    && let (Some(w), Some(settings)) =
                        (watch.as_object_mut(), expert(page.name).as_object())
                {
                    for (k, v) in settings {
                        w.insert(k.clone(), v.clone());
                    }
                }
                let created = self
                    .call(Method::POST, "/api/v1/watch", Some(&watch))
                    .await?;
                let uuid = created["uuid"]
                    .as_str()
                    .ok_or_else(|| format!("POST /api/v1/watch answered no uuid: {created}"))?;
                self.ids.insert((page.name, mode), uuid.to_string());
            }
        }
        Ok(())
    }

    /// The change alerts of watch `uuid`: every history entry after the first, placed at the
    /// request it fetched (see the module's header).
    pub async fn alerts(&self, uuid: &str, hits: &[Hit]) -> Result<Vec<Alert>, String> {
        let history = self
            .call(Method::GET, &format!("/api/v1/watch/{uuid}/history"), None)
            .await?;
        let mut keys: Vec<i64> = history
            .as_object()
            .map(|m| m.keys().filter_map(|k| k.parse().ok()).collect())
            .unwrap_or_default();
        keys.sort_unstable();
        Ok(keys
            .iter()
            .skip(1)
            .map(|secs| {
                let from = secs * 1000 - 500;
                let at_ms = hits
                    .iter()
                    .find(|h| h.at_ms >= from)
                    .map_or(i64::MAX, |h| h.at_ms);
                Alert {
                    at_ms,
                    error: false,
                }
            })
            .collect())
    }
}
