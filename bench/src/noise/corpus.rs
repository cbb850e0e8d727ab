//! The noisy-page corpus: what a page is (its natural selection, its real-change schedule, its
//! generator), the deterministic context a generator draws from (seed, request count, a virtual
//! clock crossing a new year), and the HTTP server that serves every page under one path per
//! monitor and logs which request each monitor saw when.
//!
//! A page's content is a pure function of the seed and the request count of its monitor's URL,
//! so a run can be replayed and scored exactly: the bench knows which version of the page (and
//! which noise) every check saw.

use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What a real change does to a page (the corpus has each of these).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    /// One character edited.
    OneChar,
    /// A sentence (or row, or item) removed.
    Removed,
    /// A value goes back to what it was before an earlier change.
    Revert,
    /// An edit inside a line that also carries noise.
    InNoisyLine,
    /// An order that matters changes.
    Reorder,
    /// An item added.
    Added,
    /// An attribute changes while the text around it stays (a link's target).
    Attribute,
    /// A value of a JSON document changes (its key and the document's shape stay).
    JsonValue,
}

/// A real change: from request `at` on (of one monitor's URL), the page shows it.
#[derive(Debug, Clone, Copy)]
pub struct Change {
    /// The first request count that shows the change.
    pub at: u32,
    /// Its kind.
    pub kind: ChangeKind,
    /// What changes, in words (for the report).
    pub what: &'static str,
}

/// One answer of the corpus server.
#[derive(Debug, Clone)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// Content-Type.
    pub content_type: &'static str,
    /// The body.
    pub body: String,
    /// `Retry-After`, for rate-limit and maintenance answers.
    pub retry_after: Option<u32>,
}

impl Reply {
    /// A 200 HTML page.
    pub fn html(body: String) -> Reply {
        Reply {
            status: 200,
            content_type: "text/html; charset=utf-8",
            body,
            retry_after: None,
        }
    }

    /// An HTML page with another status.
    pub fn status(status: u16, body: String) -> Reply {
        Reply {
            status,
            ..Reply::html(body)
        }
    }
}

/// A page of the corpus.
pub struct Page {
    /// Its path segment and name in the tables.
    pub name: &'static str,
    /// What kind of site it imitates.
    pub site: &'static str,
    /// The kinds of noise it carries, in words.
    pub noise: &'static str,
    /// The XPath an expert would select (`None`: the page has no HTML to select in).
    pub x_path: Option<&'static str>,
    /// A regex an expert would add (the JSON page, which XPath cannot reach into).
    pub regex: Option<&'static str>,
    /// Rendered by a browser (content arrives by XHR or lazy loading).
    pub dynamic: bool,
    /// wachet's monitors watch link targets (`watchLinks`), as a person watching a download
    /// button whose target changes under the same text would set.
    pub watch_links: bool,
    /// The real changes, by request count, in order.
    pub changes: &'static [Change],
    /// The generator.
    pub render: fn(&Ctx) -> Reply,
    /// Sub-resources a rendered page loads (`data.json`, `more.html`): their generator, given
    /// the request count of the document last served to the same monitor.
    pub resource: Option<fn(&Ctx, &str) -> Option<Reply>>,
}

impl Page {
    /// How many real changes are visible at request `n`.
    pub fn version_at(&self, n: u32) -> usize {
        self.changes.iter().filter(|c| c.at <= n).count()
    }
}

/// Start of the virtual clock: 40 minutes before a new year, so dates roll over mid-run.
const CLOCK_START: i64 = 1_798_760_400; // 2026-12-31T23:40:00Z
/// Virtual seconds between two requests of a page: at 80 checks the clock crosses midnight
/// around request 40 and moves about an hour in all.
const CLOCK_STEP: i64 = 53;

/// What a generator knows: the seed, the request count and the version it must show.
pub struct Ctx<'a> {
    /// The run's seed.
    pub seed: u64,
    /// The request count of this page for this monitor (1 for the first request).
    pub n: u32,
    /// The page.
    pub page: &'a Page,
    /// The version shown: the number of real changes visible (a stale replica shows less).
    pub version: usize,
}

/// splitmix64: a well-mixed 64-bit hash, enough for deterministic noise.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn name_hash(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

impl<'a> Ctx<'a> {
    /// The context of request `n` of `page`, showing its real version.
    pub fn new(seed: u64, page: &'a Page, n: u32) -> Ctx<'a> {
        Ctx {
            seed,
            n,
            page,
            version: page.version_at(n),
        }
    }

    /// A number drawn for this request and `salt`.
    pub fn rand(&self, salt: u64) -> u64 {
        mix(self.seed ^ name_hash(self.page.name) ^ mix(u64::from(self.n) << 16 ^ salt))
    }

    /// A number drawn for `salt`, the same on every request (a page's fixed facts).
    pub fn fixed(&self, salt: u64) -> u64 {
        mix(self.seed ^ name_hash(self.page.name) ^ mix(salt ^ 0xf1ed))
    }

    /// Below `bound`.
    pub fn below(&self, salt: u64, bound: u64) -> u64 {
        self.rand(salt) % bound.max(1)
    }

    /// True `percent` times in 100.
    pub fn chance(&self, salt: u64, percent: u64) -> bool {
        self.below(salt, 100) < percent
    }

    /// One of `items`.
    pub fn pick<T: Copy>(&self, salt: u64, items: &[T]) -> T {
        items[self.below(salt, items.len() as u64) as usize]
    }

    /// `items` shuffled for this request (Fisher-Yates).
    pub fn shuffled<T: Clone>(&self, salt: u64, items: &[T]) -> Vec<T> {
        let mut out = items.to_vec();
        for i in (1..out.len()).rev() {
            let j = self.below(salt.wrapping_add(i as u64), i as u64 + 1) as usize;
            out.swap(i, j);
        }
        out
    }

    /// A hex token of `len` digits, new on every request.
    pub fn token(&self, salt: u64, len: usize) -> String {
        let mut out = String::with_capacity(len);
        let mut k = 0;
        while out.len() < len {
            out.push_str(&format!("{:016x}", self.rand(salt.wrapping_add(k))));
            k += 1;
        }
        out.truncate(len);
        out
    }

    /// The virtual time of this request, in Unix seconds.
    pub fn now(&self) -> i64 {
        self.time_at(self.n)
    }

    /// The virtual time of request `n` of the same page (when an item that arrived at an
    /// earlier request was published).
    pub fn time_at(&self, n: u32) -> i64 {
        CLOCK_START + i64::from(n) * CLOCK_STEP
    }

    /// No real change became visible in the last `checks` requests (nor at this one): error
    /// pages and other page-wide noise are served only then, so a change is never hidden from
    /// the checks scored against it.
    pub fn quiet(&self, checks: u32) -> bool {
        !self
            .page
            .changes
            .iter()
            .any(|c| c.at <= self.n && self.n <= c.at + checks)
    }

    /// The version seen `back` requests ago (a stale replica's).
    pub fn version_back(&self, back: u32) -> usize {
        self.page.version_at(self.n.saturating_sub(back))
    }
}

/// One request a monitor made: its count and when it came (Unix milliseconds).
#[derive(Debug, Clone, Copy)]
pub struct Hit {
    /// Request count (1-based) of this page for this monitor.
    pub n: u32,
    /// When it was answered.
    pub at_ms: i64,
}

/// The corpus server's log: requests by (page, monitor key).
#[derive(Default)]
pub struct Log {
    hits: Mutex<HashMap<(String, String), Vec<Hit>>>,
}

impl Log {
    fn record(&self, page: &str, key: &str) -> u32 {
        let now = now_ms();
        let mut hits = self.hits.lock().unwrap_or_else(|e| e.into_inner());
        let list = hits.entry((page.to_string(), key.to_string())).or_default();
        let n = list.len() as u32 + 1;
        list.push(Hit { n, at_ms: now });
        n
    }

    fn last(&self, page: &str, key: &str) -> u32 {
        let hits = self.hits.lock().unwrap_or_else(|e| e.into_inner());
        hits.get(&(page.to_string(), key.to_string()))
            .map_or(0, |l| l.len() as u32)
    }

    /// The requests of one monitor's URL so far.
    pub fn hits(&self, page: &str, key: &str) -> Vec<Hit> {
        let hits = self.hits.lock().unwrap_or_else(|e| e.into_inner());
        hits.get(&(page.to_string(), key.to_string()))
            .cloned()
            .unwrap_or_default()
    }

    /// Requests of one monitor's URL so far.
    pub fn count(&self, page: &str, key: &str) -> u32 {
        self.last(page, key)
    }
}

/// Now, in Unix milliseconds.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

struct Shared {
    seed: u64,
    pages: &'static [Page],
    log: Arc<Log>,
}

fn answer(reply: Reply) -> Response {
    let status = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::OK);
    let mut response = (status, reply.body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(reply.content_type),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if let Some(secs) = reply.retry_after {
        headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    response
}

fn find(shared: &Shared, name: &str) -> Option<&'static Page> {
    shared.pages.iter().find(|p| p.name == name)
}

/// `GET /{page}/{key}`: the next request of that monitor's URL.
async fn document(
    State(shared): State<Arc<Shared>>,
    Path((name, key)): Path<(String, String)>,
) -> Response {
    let Some(page) = find(&shared, &name) else {
        return (StatusCode::NOT_FOUND, "no such page").into_response();
    };
    let n = shared.log.record(&name, &key);
    let ctx = Ctx::new(shared.seed, page, n);
    let mut response = answer((page.render)(&ctx));
    // The server's clock is the corpus's: its pages' dates follow it, as a real server's
    // follow its own.
    if let Some(date) = chrono::DateTime::from_timestamp(ctx.now(), 0).and_then(|t| {
        HeaderValue::from_str(&t.format("%a, %d %b %Y %H:%M:%S GMT").to_string()).ok()
    }) {
        response.headers_mut().insert(header::DATE, date);
    }
    response
}

/// `GET /{page}/{key}/{resource}`: a sub-resource of a rendered page, for the document last
/// served to that monitor (not counted as a request of the page).
async fn resource(
    State(shared): State<Arc<Shared>>,
    Path((name, key, file)): Path<(String, String, String)>,
) -> Response {
    let Some(page) = find(&shared, &name) else {
        return (StatusCode::NOT_FOUND, "no such page").into_response();
    };
    let n = shared.log.last(&name, &key).max(1);
    let ctx = Ctx::new(shared.seed, page, n);
    let Some(reply) = page.resource.and_then(|f| f(&ctx, &file)) else {
        return (StatusCode::NOT_FOUND, "no such resource").into_response();
    };
    // Data that arrives late: the rendered monitor must wait for it.
    let delay = 100 + ctx.below(0xde1a ^ name_hash(&file), 700);
    tokio::time::sleep(Duration::from_millis(delay)).await;
    answer(reply)
}

/// The corpus served on 127.0.0.1 (a port of its own) until the runtime stops.
pub async fn serve(seed: u64, pages: &'static [Page]) -> Result<(SocketAddr, Arc<Log>), String> {
    let log = Arc::new(Log::default());
    let shared = Arc::new(Shared {
        seed,
        pages,
        log: log.clone(),
    });
    let app = axum::Router::new()
        .route("/{page}/{key}", axum::routing::get(document))
        .route("/{page}/{key}/{resource}", axum::routing::get(resource))
        .with_state(shared);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .map_err(|e| format!("corpus server: {e}"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok((addr, log))
}
