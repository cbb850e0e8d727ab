//! A fixture HTTP server for tests and for embedders' own fixture regression suites.
//!
//! It serves a directory (and pages given in code) on 127.0.0.1, or any other 127.0.0.x
//! address to stand in for another host, on a free port. Between requests a test can replace a
//! page's reply: body, status, headers, a delay, or a body that never finishes. Every request
//! is recorded (method, path, headers, body) so a test can assert what the engine sent.
//!
//! ```
//! use wachet::testing::{FixtureServer, Reply};
//! use wachet::{Checker, Engine, Monitor};
//!
//! # #[tokio::main] async fn main() {
//! let server = FixtureServer::builder()
//!     .page("/stock.html", "<p id=stock>In stock</p>")
//!     .start()
//!     .await
//!     .unwrap();
//! let engine = Engine::builder().allow_private_networks(true).build().unwrap();
//! let mut monitor = Monitor::new(server.url("/stock.html"));
//! monitor.x_path = Some("//p[@id='stock']".into());
//! assert_eq!(engine.check(&monitor).await.unwrap().value(), Some("In stock"));
//!
//! server.set("/stock.html", Reply::html("<p id=stock>Sold out</p>"));
//! assert_eq!(engine.check(&monitor).await.unwrap().value(), Some("Sold out"));
//! assert_eq!(server.requests().len(), 2);
//! # }
//! ```

pub mod hostile;
#[cfg(feature = "chrome")]
pub mod memory;
pub mod proxy;
mod signin;
pub mod socks;
pub mod suite;
#[cfg(feature = "chrome")]
pub mod tls;

pub use signin::SignInSite;
pub use suite::{
    CASE_FILE, Case, CaseError, CaseReport, CaseResult, DEFAULT_PAGE, EXPECTED_FILE,
    EngineSettings, Expected, ResponseSpec, Suite, SuiteBuilder, SuiteError, SuiteReport,
    line_diff,
};

use axum::Router;
use axum::body::{Body, to_bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::task::JoinHandle;

/// For tests that serve HTTP by hand over a raw socket (to hang, cut or pace an answer as no
/// ordinary server would): reads one request's head from `stream` and returns the path it asks
/// for; `None` when the connection ends first or the head passes 64 KiB.
pub async fn read_request_path(stream: &mut (impl tokio::io::AsyncRead + Unpin)) -> Option<String> {
    let (head, _) = crate::fetch::proxying::read_head(stream, 64 * 1024)
        .await
        .ok()?;
    let head = String::from_utf8_lossy(&head);
    Some(
        crate::fetch::proxying::RequestHead::parse(&head)
            .target
            .to_string(),
    )
}

/// For tests that need Chromium: whether the engine finds one, where a render would look
/// (`CHROME_PATH`, else Debian's and other usual locations). When none is found and the `CI`
/// variable is set this panics, since CI must install one; elsewhere it prints a loud
/// `SKIPPED` line on stderr and returns `false`, so a developer without a browser can still run
/// the rest.
#[cfg(feature = "chrome")]
pub fn chromium_or_skip() -> bool {
    match crate::render::find_chrome(None) {
        Ok(_) => true,
        Err(e) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "Chromium is missing but CI is set (CI must install it): {e}"
            );
            eprintln!("SKIPPED: {e}");
            false
        }
    }
}

/// For tests of Debian's full Chromium (besides the headless shell the engine prefers): its
/// path when it is installed. When it is not, this panics if `CI` is set (CI must install it
/// as well) and elsewhere prints a `SKIPPED` line on stderr and returns `None`.
#[cfg(feature = "chrome")]
pub fn full_chromium_or_skip() -> Option<&'static str> {
    let full = "/usr/lib/chromium/chromium";
    if Path::new(full).is_file() {
        return Some(full);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "CI must install Debian's chromium as well as the headless shell"
    );
    eprintln!("SKIPPED: no full Chromium at {full}");
    None
}

/// Held by the browser test running in this process.
#[cfg(feature = "chrome")]
static BROWSER_TEST: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// For tests that need Chromium: waits until no other browser test of this process runs (a
/// browser each at once would crowd a small machine and the bounds tests hold it to), then
/// [`chromium_or_skip`]. Hold the guard for the whole test; `None` means skip.
#[cfg(feature = "chrome")]
pub async fn browser_test() -> Option<tokio::sync::MutexGuard<'static, ()>> {
    let guard = BROWSER_TEST.lock().await;
    chromium_or_skip().then_some(guard)
}

/// Request bodies recorded up to this size.
const MAX_RECORDED_BODY: usize = 1024 * 1024;

/// A reply the server gives for a path.
#[derive(Debug, Clone)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// Response headers.
    pub headers: Vec<(String, String)>,
    /// Response body.
    pub body: Bytes,
    /// Wait this long before answering.
    pub delay: Duration,
    /// Send the headers and the body, then keep the connection open without ever finishing.
    pub never_finish: bool,
}

impl Reply {
    /// A 200 reply of HTML.
    pub fn html(body: impl Into<Bytes>) -> Self {
        Reply::new(200)
            .header("content-type", "text/html")
            .body(body)
    }

    /// An empty reply with `status`.
    pub fn new(status: u16) -> Self {
        Reply {
            status,
            headers: Vec::new(),
            body: Bytes::new(),
            delay: Duration::ZERO,
            never_finish: false,
        }
    }

    /// A redirect (302) to `location`.
    pub fn redirect(location: impl Into<String>) -> Self {
        Reply::new(302).header("location", location)
    }

    /// Adds a header.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sets the body.
    pub fn body(mut self, body: impl Into<Bytes>) -> Self {
        self.body = body.into();
        self
    }

    /// Sets the status.
    pub fn status(mut self, status: u16) -> Self {
        self.status = status;
        self
    }

    /// Waits before answering.
    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// Sends the body, then never finishes the response.
    pub fn never_finish(mut self) -> Self {
        self.never_finish = true;
        self
    }
}

/// One request the server received.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    /// HTTP method.
    pub method: String,
    /// Path and query.
    pub path: String,
    /// Request headers (names lower case).
    pub headers: Vec<(String, String)>,
    /// Request body (up to 1 MiB).
    pub body: Bytes,
}

impl RecordedRequest {
    /// The first value of header `name`.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Default)]
struct Shared {
    root: Option<PathBuf>,
    /// Where symbolic links in `root` may lead; `root` itself when `None`.
    limit: Option<PathBuf>,
    replies: Mutex<HashMap<String, Reply>>,
    /// Replies chosen by the request count of their path ([`FixtureServer::set_counted`]).
    counted: Mutex<HashMap<String, Counted>>,
    requests: Mutex<Vec<RecordedRequest>>,
    /// Requests being answered now, and the most there were at once.
    in_flight: AtomicUsize,
    peak: AtomicUsize,
}

/// Chooses the reply to the n-th request of a path (the first is 1).
type ByCount = Arc<dyn Fn(usize) -> Reply + Send + Sync>;

/// A path whose replies depend on how many requests it has had.
struct Counted {
    served: usize,
    reply: ByCount,
}

/// Sets up a [`FixtureServer`].
#[derive(Default)]
pub struct FixtureServerBuilder {
    root: Option<PathBuf>,
    limit: Option<PathBuf>,
    ip: Option<Ipv4Addr>,
    pages: Vec<(String, Reply)>,
    counted: Vec<(String, ByCount)>,
}

impl std::fmt::Debug for FixtureServerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FixtureServerBuilder")
            .field("root", &self.root)
            .field("ip", &self.ip)
            .field("pages", &self.pages)
            .finish_non_exhaustive()
    }
}

impl FixtureServerBuilder {
    /// Serves the files below `dir` (`/` serves `index.html`).
    pub fn dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.root = Some(dir.into());
        self
    }

    /// Lets symbolic links in the served folder lead anywhere inside `limit` (by default only
    /// inside the folder itself; a link leading elsewhere is a 404).
    pub fn links_within(mut self, limit: impl Into<PathBuf>) -> Self {
        self.limit = Some(limit.into());
        self
    }

    /// Listens on this loopback address instead of 127.0.0.1.
    pub fn ip(mut self, ip: Ipv4Addr) -> Self {
        self.ip = Some(ip);
        self
    }

    /// Serves `html` at `path`.
    pub fn page(mut self, path: impl Into<String>, html: impl Into<Bytes>) -> Self {
        self.pages.push((path.into(), Reply::html(html)));
        self
    }

    /// Serves `reply` at `path`.
    pub fn reply(mut self, path: impl Into<String>, reply: Reply) -> Self {
        self.pages.push((path.into(), reply));
        self
    }

    /// Serves at `path` (any query) the reply `reply(n)` to its n-th request, counting from 1:
    /// failures and delays on chosen requests, deterministically. See
    /// [`FixtureServer::set_counted`].
    pub fn counted(
        mut self,
        path: impl Into<String>,
        reply: impl Fn(usize) -> Reply + Send + Sync + 'static,
    ) -> Self {
        self.counted.push((path.into(), Arc::new(reply)));
        self
    }

    /// Starts serving on a free port. Must run inside a tokio runtime.
    pub async fn start(self) -> std::io::Result<FixtureServer> {
        let ip = self.ip.unwrap_or(Ipv4Addr::LOCALHOST);
        let listener = tokio::net::TcpListener::bind(SocketAddr::from((ip, 0))).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            root: self.root,
            limit: self.limit,
            replies: Mutex::new(self.pages.into_iter().collect()),
            counted: Mutex::new(
                self.counted
                    .into_iter()
                    .map(|(path, reply)| (path, Counted { served: 0, reply }))
                    .collect(),
            ),
            requests: Mutex::new(Vec::new()),
            in_flight: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
        });
        let app = Router::new().fallback(handle).with_state(shared.clone());
        let task = tokio::spawn(async move {
            // The server ends when the task is aborted on drop.
            let _ = axum::serve(listener, app).await;
        });
        Ok(FixtureServer { addr, shared, task })
    }
}

/// A running fixture server; it stops when dropped.
pub struct FixtureServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl std::fmt::Debug for FixtureServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FixtureServer")
            .field("addr", &self.addr)
            .finish()
    }
}

impl FixtureServer {
    /// A builder.
    pub fn builder() -> FixtureServerBuilder {
        FixtureServerBuilder::default()
    }

    /// Serves the files below `dir` on 127.0.0.1.
    pub async fn serve_dir(dir: impl Into<PathBuf>) -> std::io::Result<FixtureServer> {
        FixtureServer::builder().dir(dir).start().await
    }

    /// The address listened on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ip:port` followed by `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// Replies `reply` at `path` from now on. A key with a query matches only that query; one
    /// without matches the path with any query.
    pub fn set(&self, path: impl Into<String>, reply: Reply) {
        lock(&self.shared.replies).insert(path.into(), reply);
    }

    /// Replies to the n-th request of `path` (counting from 1, any query, counted from now)
    /// with `reply(n)`, before any reply given with [`FixtureServer::set`]. A test drives
    /// failures and delays by request count this way, never by chance.
    pub fn set_counted(
        &self,
        path: impl Into<String>,
        reply: impl Fn(usize) -> Reply + Send + Sync + 'static,
    ) {
        let counted = Counted {
            served: 0,
            reply: Arc::new(reply),
        };
        lock(&self.shared.counted).insert(path.into(), counted);
    }

    /// Forgets the replies set for `path` (counted ones too): it is served from the directory
    /// again (or 404).
    pub fn clear(&self, path: &str) {
        lock(&self.shared.replies).remove(path);
        lock(&self.shared.counted).remove(path);
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.requests).clone()
    }

    /// The most requests that were being answered at once, so far (a test of per-host limits
    /// reads it).
    pub fn peak_in_flight(&self) -> usize {
        self.shared.peak.load(Ordering::SeqCst)
    }

    /// How many requests asked for `path` (query ignored).
    pub fn hits(&self, path: &str) -> usize {
        lock(&self.shared.requests)
            .iter()
            .filter(|r| r.path.split('?').next() == Some(path))
            .count()
    }
}

impl Drop for FixtureServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A poisoned lock only means another test thread panicked; the data is still usable.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

async fn handle(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let now = shared.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    shared.peak.fetch_max(now, Ordering::SeqCst);
    let response = answer(&shared, request).await;
    // Counted out before the answer leaves, so a client that reuses its slot at once never
    // meets a stale count.
    shared.in_flight.fetch_sub(1, Ordering::SeqCst);
    response
}

async fn answer(shared: &Shared, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = to_bytes(body, MAX_RECORDED_BODY).await.unwrap_or_default();
    let path = parts.uri.path().to_string();
    let path_and_query = parts
        .uri
        .path_and_query()
        .map_or(path.clone(), |pq| pq.as_str().to_string());
    lock(&shared.requests).push(RecordedRequest {
        method: parts.method.to_string(),
        path: path_and_query.clone(),
        headers: parts
            .headers
            .iter()
            .map(|(k, v)| {
                (
                    k.to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body,
    });
    let counted = lock(&shared.counted).get_mut(&path).map(|c| {
        c.served += 1;
        (c.served, c.reply.clone())
    });
    // Chosen outside the lock: the test's function may take its time.
    let reply = counted.map(|(n, reply)| reply(n));
    let reply = reply.or_else(|| {
        let replies = lock(&shared.replies);
        replies
            .get(&path_and_query)
            .or_else(|| replies.get(&path))
            .cloned()
    });
    let reply = match reply {
        Some(reply) => reply,
        None => from_dir(shared.root.as_deref(), shared.limit.as_deref(), &path).await,
    };
    if !reply.delay.is_zero() {
        tokio::time::sleep(reply.delay).await;
    }
    respond(reply)
}

async fn from_dir(root: Option<&Path>, limit: Option<&Path>, path: &str) -> Reply {
    let Some(root) = root else {
        return Reply::new(404).body("not found");
    };
    let relative = path.trim_start_matches('/');
    let relative = if relative.is_empty() || relative.ends_with('/') {
        format!("{relative}index.html")
    } else {
        relative.to_string()
    };
    let relative = percent_decode(&relative);
    let safe = Path::new(&relative)
        .components()
        .all(|c| matches!(c, Component::Normal(_)));
    if !safe {
        return Reply::new(404).body("not found");
    }
    let file = root.join(&relative);
    // A symbolic link out of the served folder is not followed: fixture sites may come from
    // strangers (`wachet fixtures run` on a pull request). A loop of links fails to resolve.
    let inside = match (
        tokio::fs::canonicalize(limit.unwrap_or(root)).await,
        tokio::fs::canonicalize(&file).await,
    ) {
        (Ok(limit), Ok(file)) => file.starts_with(limit),
        _ => false,
    };
    if !inside {
        return Reply::new(404).body("not found");
    }
    match tokio::fs::read(&file).await {
        Ok(bytes) => Reply::new(200)
            .header("content-type", content_type(&file))
            .body(bytes),
        Err(_) => Reply::new(404).body("not found"),
    }
}

fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

fn content_type(file: &Path) -> &'static str {
    match file.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" | "htm" => "text/html",
        "txt" => "text/plain",
        "css" => "text/css",
        "js" => "text/javascript",
        "json" => "application/json",
        "xml" => "application/xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "svg" => "image/svg+xml",
        "pdf" => "application/pdf",
        _ => "application/octet-stream",
    }
}

fn respond(reply: Reply) -> Response {
    let body = if reply.never_finish {
        let first = futures::stream::once(async move { Ok::<Bytes, std::io::Error>(reply.body) });
        Body::from_stream(futures::StreamExt::chain(first, futures::stream::pending()))
    } else {
        Body::from(reply.body)
    };
    let mut response = Response::new(body);
    *response.status_mut() = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::OK);
    let headers: &mut HeaderMap = response.headers_mut();
    for (name, value) in reply.headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            // Bytes, not text: a hostile server's non-ASCII header values are served as given.
            HeaderValue::from_bytes(value.as_bytes()),
        ) {
            headers.append(name, value);
        }
    }
    response
}
