//! The soak's hosts, all on loopback and all in this process: pages that answer, hang, reset,
//! answer slowly, flap, send a compression bomb or redirect in a loop, and webhook endpoints
//! that take a notification, fail, hang or redirect. Each kind listens on its own 127.0.0.x
//! address, on several ports where the service's per-host limits (host and port) would
//! otherwise queue its monitors behind each other.

use axum::extract::{Path, State};
use axum::http::header::{CONTENT_ENCODING, CONTENT_TYPE, LOCATION};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use hyper::body::Bytes;
use std::collections::HashSet;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};

/// What a monitor's host does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    /// A product page; 1 in 10 changes its price every minute.
    Page,
    /// The same page rendered in Chromium (`dynamicContent`).
    Rendered,
    /// Reads the request and never answers (until the check's timeout).
    Hang,
    /// Reads the request and resets the connection.
    Reset,
    /// Answers after 2 to 4 s.
    Slow,
    /// 503 for a while, then a page whose text changes, then another.
    Flap,
    /// A gzip body that inflates to 256 MiB.
    Bomb,
    /// Redirects to a page that redirects back.
    Loop,
}

impl Kind {
    /// Every kind, in the order of the tables.
    pub(crate) const ALL: [Kind; 8] = [
        Kind::Page,
        Kind::Rendered,
        Kind::Hang,
        Kind::Reset,
        Kind::Slow,
        Kind::Flap,
        Kind::Bomb,
        Kind::Loop,
    ];

    /// The kind of monitor `n` of `monitors`, `rendered` of them in Chromium (the last ones):
    /// 2% hang, 2% bombs, 3% slow, 3% redirect loops, 5% resets, 8% flapping, the rest pages.
    pub(crate) fn of(n: usize, monitors: usize, rendered: usize) -> Kind {
        if n + rendered >= monitors {
            return Kind::Rendered;
        }
        match n % 100 {
            0..2 => Kind::Hang,
            2..4 => Kind::Bomb,
            4..7 => Kind::Slow,
            7..10 => Kind::Loop,
            10..15 => Kind::Reset,
            15..23 => Kind::Flap,
            _ => Kind::Page,
        }
    }

    /// Seconds between two checks of monitor `n`: 10 to 30 s; 30 s for the slow, bombing and
    /// rendered, 60 s for the hanging (each holds a check slot for the 30 s fetch timeout).
    pub(crate) fn recurrence(self, n: usize) -> u32 {
        match self {
            Kind::Hang => 60,
            Kind::Slow | Kind::Bomb | Kind::Rendered => 30,
            _ => 10 + 5 * (n % 5) as u32,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Page => "page",
            Kind::Rendered => "rendered page",
            Kind::Hang => "hangs",
            Kind::Reset => "resets",
            Kind::Slow => "slow (2-4 s)",
            Kind::Flap => "flaps",
            Kind::Bomb => "gzip bomb",
            Kind::Loop => "redirect loop",
        }
    }
}

/// The webhook endpoints a notification goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Hook {
    /// Answers 200 and keeps the delivery id.
    Takes,
    /// Answers 500.
    Fails,
    /// Reads the request and never answers.
    Hangs,
    /// Redirects to itself by way of another path.
    Redirects,
}

/// The hosts, their addresses, and what the webhook receiver took.
pub(crate) struct Fixtures {
    pages: Vec<SocketAddr>,
    hang: Vec<SocketAddr>,
    reset: Vec<SocketAddr>,
    slow: Vec<SocketAddr>,
    flap: Vec<SocketAddr>,
    bomb: Vec<SocketAddr>,
    redirect: Vec<SocketAddr>,
    hooks: [SocketAddr; 4],
    /// Delivery ids (`X-Wachet-Delivery`) the taking webhook answered 200.
    pub(crate) received: Arc<Received>,
}

/// What the taking webhook received.
#[derive(Default)]
pub(crate) struct Received {
    ids: Mutex<HashSet<String>>,
    posts: std::sync::atomic::AtomicU64,
}

impl Received {
    /// Whether delivery `id` was received.
    pub(crate) fn has(&self, id: &str) -> bool {
        self.ids
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(id)
    }

    /// Requests received, retries of one delivery included.
    pub(crate) fn posts(&self) -> u64 {
        self.posts.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Longest a hanging host holds a connection it never answers.
const HOLD_AT_MOST: Duration = Duration::from_secs(600);

fn ip(last: u8) -> Ipv4Addr {
    Ipv4Addr::new(127, 0, 0, last)
}

async fn listen(last: u8) -> Result<(TcpListener, SocketAddr), String> {
    let listener = TcpListener::bind((ip(last), 0))
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", ip(last)))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    Ok((listener, addr))
}

/// Serves `app` on `ports` ports of 127.0.0.`last`; their addresses.
async fn serve(app: axum::Router, last: u8, ports: usize) -> Result<Vec<SocketAddr>, String> {
    let mut addrs = Vec::new();
    for _ in 0..ports {
        let (listener, addr) = listen(last).await?;
        let app = app.clone();
        tokio::spawn(async move { axum::serve(listener, app).await });
        addrs.push(addr);
    }
    Ok(addrs)
}

/// Accepts connections on `ports` ports of 127.0.0.`last`, reads what comes and either holds
/// the connection without a word (`reset` false) or resets it (`reset` true).
async fn raw(last: u8, ports: usize, reset: bool) -> Result<Vec<SocketAddr>, String> {
    let mut addrs = Vec::new();
    for _ in 0..ports {
        let (listener, addr) = listen(last).await?;
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(handle_raw(stream, reset));
            }
        });
        addrs.push(addr);
    }
    Ok(addrs)
}

async fn handle_raw(mut stream: TcpStream, reset: bool) {
    let mut buf = [0u8; 4096];
    if reset {
        let _ = stream.read(&mut buf).await;
        // A zero linger makes the close an RST.
        let _ = stream.set_zero_linger();
        return;
    }
    let _ = tokio::time::timeout(HOLD_AT_MOST, async {
        while matches!(stream.read(&mut buf).await, Ok(n) if n > 0) {}
    })
    .await;
}

fn seconds_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A product page of about 2 KB; `version` is in its price.
fn page(n: usize, version: u64) -> String {
    let mut body = format!(
        "<!doctype html><html><head><title>Product {n}</title></head><body>\
         <h1>Product {n}</h1><p class=price>{}.90 EUR</p><ul>",
        100 + version % 50
    );
    for i in 0..40 {
        body.push_str(&format!("<li>Feature {i} of product {n}: reliable</li>"));
    }
    body.push_str("</ul></body></html>");
    body
}

fn number(file: &str) -> usize {
    file.parse().unwrap_or(0)
}

async fn product(Path(file): Path<String>) -> axum::response::Html<String> {
    let n = number(&file);
    let version = if n.is_multiple_of(10) {
        seconds_now() / 60
    } else {
        n as u64
    };
    axum::response::Html(page(n, version))
}

async fn slow(Path(file): Path<String>) -> axum::response::Html<String> {
    let n = number(&file);
    tokio::time::sleep(Duration::from_millis(2_000 + (n as u64 * 379) % 2_000)).await;
    axum::response::Html(page(n, n as u64))
}

/// Quarter-minute phases: down (503), one text, the same, another text.
async fn flap(Path(file): Path<String>) -> Response {
    let n = number(&file);
    let phase = (seconds_now() / 15 + n as u64) % 4;
    match phase {
        0 => (StatusCode::SERVICE_UNAVAILABLE, "down for maintenance").into_response(),
        1 | 2 => axum::response::Html(page(n, 1)).into_response(),
        _ => axum::response::Html(page(n, 2)).into_response(),
    }
}

async fn bomb(State(body): State<Bytes>) -> Response {
    (
        [(CONTENT_TYPE, "text/html"), (CONTENT_ENCODING, "gzip")],
        body,
    )
        .into_response()
}

async fn redirect(Path((n, side)): Path<(String, String)>) -> Response {
    let other = if side == "a" { "b" } else { "a" };
    (StatusCode::FOUND, [(LOCATION, format!("/l/{n}/{other}"))]).into_response()
}

async fn take(
    State(received): State<Arc<Received>>,
    headers: HeaderMap,
    _body: Bytes,
) -> &'static str {
    received
        .posts
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    if let Some(id) = headers
        .get("x-wachet-delivery")
        .and_then(|v| v.to_str().ok())
    {
        received
            .ids
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id.to_string());
    }
    "ok"
}

impl Fixtures {
    /// Starts every host.
    pub(crate) async fn start() -> Result<Fixtures, String> {
        use axum::routing::{any, get, post};
        let mut pages = Vec::new();
        // Ten hosts of pages keep each under the service's default 10 requests a second.
        for last in 1..=10 {
            let app = axum::Router::new().route("/p/{file}", get(product));
            pages.extend(serve(app, last, 1).await?);
        }
        let hang = raw(11, 8, false).await?;
        let reset = raw(12, 2, true).await?;
        let slow = serve(axum::Router::new().route("/s/{file}", get(slow)), 13, 8).await?;
        let flap = serve(axum::Router::new().route("/f/{file}", get(flap)), 14, 4).await?;
        let body = wachet::testing::hostile::gzip_bomb(256 << 20);
        let bombs = axum::Router::new()
            .route("/b/{file}", get(bomb))
            .with_state(body);
        let bomb = serve(bombs, 15, 4).await?;
        let loops = axum::Router::new().route("/l/{n}/{side}", get(redirect));
        let redirect = serve(loops, 16, 2).await?;

        let received = Arc::new(Received::default());
        let taking = axum::Router::new()
            .route("/hook", post(take))
            .with_state(received.clone());
        let takes = serve(taking, 21, 1).await?[0];
        let failing = axum::Router::new().route(
            "/hook",
            any(|| async { (StatusCode::INTERNAL_SERVER_ERROR, "no") }),
        );
        let fails = serve(failing, 22, 1).await?[0];
        let hangs = raw(23, 1, false).await?[0];
        let redirecting = axum::Router::new()
            .route(
                "/hook",
                any(|| async { (StatusCode::TEMPORARY_REDIRECT, [(LOCATION, "/again")]) }),
            )
            .route(
                "/again",
                any(|| async { (StatusCode::TEMPORARY_REDIRECT, [(LOCATION, "/hook")]) }),
            );
        let redirects = serve(redirecting, 24, 1).await?[0];
        Ok(Fixtures {
            pages,
            hang,
            reset,
            slow,
            flap,
            bomb,
            redirect,
            hooks: [takes, fails, hangs, redirects],
            received,
        })
    }

    /// The URL monitor `n` of kind `kind` checks.
    pub(crate) fn url(&self, kind: Kind, n: usize) -> String {
        let pick = |addrs: &[SocketAddr]| addrs[n % addrs.len()];
        match kind {
            Kind::Page | Kind::Rendered => format!("http://{}/p/{n}", pick(&self.pages)),
            Kind::Hang => format!("http://{}/h/{n}", pick(&self.hang)),
            Kind::Reset => format!("http://{}/r/{n}", pick(&self.reset)),
            Kind::Slow => format!("http://{}/s/{n}", pick(&self.slow)),
            Kind::Flap => format!("http://{}/f/{n}", pick(&self.flap)),
            Kind::Bomb => format!("http://{}/b/{n}", pick(&self.bomb)),
            Kind::Loop => format!("http://{}/l/{n}/a", pick(&self.redirect)),
        }
    }

    /// The URL of webhook endpoint `hook`.
    pub(crate) fn hook(&self, hook: Hook) -> String {
        let addr = match hook {
            Hook::Takes => self.hooks[0],
            Hook::Fails => self.hooks[1],
            Hook::Hangs => self.hooks[2],
            Hook::Redirects => self.hooks[3],
        };
        format!("http://{addr}/hook")
    }
}
