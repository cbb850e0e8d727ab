//! `soak`: the release `wachet serve` for `--minutes` (10) under faults, looked at every 10 s.
//!
//! On a fresh SQLite database it creates `--monitors` (2,000) monitors, every 10 to 60 s,
//! against this process's loopback hosts ([`fixtures`]): pages, `--rendered` (8) of them in
//! Chromium, and hosts that hang, reset, answer slowly, flap, send a gzip bomb or redirect in a
//! loop. Each monitor has a NotEq and an Error alert and notifies a webhook that takes the
//! notification; three in four notify a second one that fails, hangs or redirects in a loop.
//! Beside the checks, `--api-clients` (2) clients create, read, edit and delete monitors all
//! the while. Half way it kills the service with SIGKILL and starts it again on the same
//! database.
//!
//! Every 10 s it reads the service's VmRSS and open file descriptors (/proc), the database and
//! its WAL, the Chromium processes under the service (and those left alive by the killed one),
//! and `/metrics` (checks, the lateness histogram). It prints a table a minute and draws the
//! same as a PNG (`--plot`, default `soak.png`), then stops the clients, lets deliveries run for
//! 30 s, stops the service and asserts:
//! - no panic in either process's log;
//! - no 5xx answer to the API clients (connections refused while the service is down are
//!   counted apart);
//! - every notification stored has its deliveries, each delivered, pending (retrying) or
//!   failed; every delivery stored as delivered to the taking webhook was received by it; and
//!   none to it of a notification raised before the kill failed (it answers every one 200, so
//!   a try cut by the kill must be tried again);
//! - RSS and descriptors flat after warm-up: in each process's life, past its first 2 minutes,
//!   the mean of the last third of the samples is at most 10% (plus 8 MB, or 8 descriptors)
//!   above the mean of the first third.

mod fixtures;
mod plot;

use crate::api::{
    API, Conn, Endpoint, Service, busy_builds, load_average, login, memory_mb, wachet_exe,
};
use crate::harness::TempDir;
use crate::schedule::{Scrape, db_bytes, quantile, scrape};
use fixtures::{Fixtures, Hook, Kind};
use hyper::{Method, StatusCode, Uri};
use serde_json::{Value, json};
use sqlx::Row;
use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Options of `soak`.
#[derive(Debug, Clone)]
pub struct SoakOptions {
    /// Minutes the soak runs (the kill comes half way).
    pub minutes: u32,
    /// Monitors checked.
    pub monitors: usize,
    /// Of them, rendered in Chromium.
    pub rendered: usize,
    /// Clients creating, editing and deleting monitors.
    pub api_clients: usize,
    /// The `wachet` binary (default: the one beside this binary).
    pub wachet: Option<PathBuf>,
    /// Where the PNG goes.
    pub plot: PathBuf,
}

impl Default for SoakOptions {
    fn default() -> Self {
        SoakOptions {
            minutes: 10,
            monitors: 2_000,
            rendered: 8,
            api_clients: 2,
            wachet: None,
            plot: PathBuf::from("soak.png"),
        }
    }
}

impl SoakOptions {
    /// Parses `--minutes N --monitors N --rendered N --api-clients N --wachet PATH --plot PATH`.
    pub fn parse(args: &[String]) -> Option<SoakOptions> {
        let mut o = SoakOptions::default();
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            let value = it.next()?;
            match flag.as_str() {
                "--minutes" => o.minutes = value.parse().ok()?,
                "--monitors" => o.monitors = value.parse().ok()?,
                "--rendered" => o.rendered = value.parse().ok()?,
                "--api-clients" => o.api_clients = value.parse().ok()?,
                "--wachet" => o.wachet = Some(PathBuf::from(value)),
                "--plot" => o.plot = PathBuf::from(value),
                _ => return None,
            }
        }
        // Bounded: a process life needs its 2 minutes of warm-up and some after.
        let valid = (4..=24 * 60).contains(&o.minutes)
            && o.monitors >= 100
            && o.monitors <= 100_000
            && o.rendered <= o.monitors / 10;
        valid.then_some(o)
    }
}

/// How often the service is looked at.
const SAMPLE_EVERY: Duration = Duration::from_secs(10);
/// Minutes of each process life left out of the flatness judgement.
const WARM_UP_MINUTES: f64 = 2.0;
/// How long deliveries run on after the clients stop, before the service is stopped.
const DRAIN: Duration = Duration::from_secs(30);
/// Monitors each API client keeps at most before it deletes its oldest.
const CLIENT_KEEPS: usize = 10;

// ---------------------------------------------------------------- the API clients

/// Where the clients send requests; changes when the service starts again.
struct Target {
    inner: Mutex<(SocketAddr, String)>,
}

impl Target {
    fn endpoint(&self) -> Result<Endpoint, String> {
        let guard = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        Endpoint::new(guard.0, Some(&guard.1))
    }

    fn set(&self, addr: SocketAddr, token: String) {
        *self.inner.lock().unwrap_or_else(|e| e.into_inner()) = (addr, token);
    }
}

/// What the API clients were answered.
#[derive(Default)]
struct ApiStats {
    requests: AtomicU64,
    client_errors: AtomicU64,
    server_errors: AtomicU64,
    /// Requests that got no answer (the service down, or killed while answering).
    unanswered: AtomicU64,
    /// The first few 5xx answers, for the report.
    first_5xx: Mutex<Vec<String>>,
}

impl ApiStats {
    fn count(&self, what: &str, status: StatusCode, body: &[u8]) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        if status.is_server_error() {
            self.server_errors.fetch_add(1, Ordering::Relaxed);
            let mut first = self.first_5xx.lock().unwrap_or_else(|e| e.into_inner());
            if first.len() < 5 {
                let body = String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned();
                first.push(format!("{what}: {status}: {body}"));
            }
        } else if status.is_client_error() {
            self.client_errors.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// One request; the answer, or `None` when the connection failed (it is then dropped).
async fn ask(
    endpoint: &Endpoint,
    conn: &mut Option<Conn>,
    stats: &ApiStats,
    method: Method,
    path: &str,
    body: Option<&Value>,
) -> Option<(StatusCode, Value)> {
    if conn.is_none() {
        match Conn::connect(endpoint.addr).await {
            Ok(c) => *conn = Some(c),
            Err(_) => {
                stats.unanswered.fetch_add(1, Ordering::Relaxed);
                return None;
            }
        }
    }
    let uri: Uri = path.parse().ok()?;
    let body_bytes = body.map(|b| hyper::body::Bytes::from(b.to_string()));
    let request = endpoint.request(method.clone(), uri, body_bytes);
    let sent = match conn.as_mut() {
        Some(c) => c.send(request).await,
        None => return None,
    };
    match sent {
        Ok((status, bytes)) => {
            stats.count(&format!("{method} {path}"), status, &bytes);
            let value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            Some((status, value))
        }
        Err(_) => {
            *conn = None;
            stats.unanswered.fetch_add(1, Ordering::Relaxed);
            None
        }
    }
}

/// Creates, reads, edits and deletes monitors until `stop`, one request every 50 ms.
async fn api_client(
    k: usize,
    target: Arc<Target>,
    stats: Arc<ApiStats>,
    stop: Arc<AtomicBool>,
    page: String,
    hook: String,
) {
    let mut conn: Option<Conn> = None;
    let mut mine: Vec<String> = Vec::new();
    let mut round = 0u64;
    let pause = || tokio::time::sleep(Duration::from_millis(50));
    while !stop.load(Ordering::Relaxed) {
        round += 1;
        let Ok(endpoint) = target.endpoint() else {
            pause().await;
            continue;
        };
        let monitor = json!({
            "name": format!("client {k} monitor {round}"),
            "url": page,
            "recurrenceInSeconds": 20,
            "alerts": [{"type": "NotEq"}, {"type": "Error"}],
            "notificationEndpoints": [{"type": "Webhook", "value": hook}],
        });
        let created = ask(
            &endpoint,
            &mut conn,
            &stats,
            Method::PUT,
            &format!("{API}/task"),
            Some(&monitor),
        )
        .await;
        pause().await;
        let Some((StatusCode::OK, created)) = created else {
            tokio::time::sleep(Duration::from_millis(500)).await;
            continue;
        };
        let Some(id) = created["id"].as_str().map(str::to_string) else {
            continue;
        };
        mine.push(id.clone());
        let task = format!("{API}/task/{id}");
        let read = ask(&endpoint, &mut conn, &stats, Method::GET, &task, None).await;
        pause().await;
        if let Some((StatusCode::OK, mut edited)) = read {
            edited["name"] = json!(format!("client {k} monitor {round}, edited"));
            edited["recurrenceInSeconds"] = json!(30);
            let put = format!("{API}/task");
            ask(
                &endpoint,
                &mut conn,
                &stats,
                Method::PUT,
                &put,
                Some(&edited),
            )
            .await;
            pause().await;
        }
        if let Some(old) = mine.first() {
            let history = format!("{API}/data/list/{old}");
            ask(&endpoint, &mut conn, &stats, Method::GET, &history, None).await;
            pause().await;
        }
        if mine.len() > CLIENT_KEEPS {
            let old = mine.remove(0);
            let delete = format!("{API}/task/{old}");
            ask(&endpoint, &mut conn, &stats, Method::DELETE, &delete, None).await;
            pause().await;
        }
    }
}

// ---------------------------------------------------------------- the monitors

/// Monitors created by one `PUT /tasks`.
const BULK: usize = 500;

async fn create_monitors(
    endpoint: &Endpoint,
    fixtures: &Fixtures,
    options: &SoakOptions,
) -> Result<HashMap<Kind, usize>, String> {
    let mut conn = Conn::connect(endpoint.addr).await?;
    let mut kinds = HashMap::new();
    let mut batch = Vec::new();
    for n in 0..options.monitors {
        let kind = Kind::of(n, options.monitors, options.rendered);
        *kinds.entry(kind).or_insert(0) += 1;
        let mut endpoints = vec![json!({"type": "Webhook", "value": fixtures.hook(Hook::Takes)})];
        let second = match n % 4 {
            1 => Some(Hook::Fails),
            2 => Some(Hook::Hangs),
            3 => Some(Hook::Redirects),
            _ => None,
        };
        if let Some(hook) = second {
            endpoints.push(json!({"type": "Webhook", "value": fixtures.hook(hook)}));
        }
        let rendered = kind == Kind::Rendered;
        batch.push(json!({
            "name": format!("{} {n:05}", kind.name()),
            "url": fixtures.url(kind, n),
            "recurrenceInSeconds": kind.recurrence(n),
            "dynamicContent": rendered,
            "alerts": [{"type": "NotEq"}, {"type": "Error"}],
            "notificationEndpoints": endpoints,
        }));
        if batch.len() == BULK || n + 1 == options.monitors {
            let body = Value::Array(std::mem::take(&mut batch));
            endpoint
                .call(&mut conn, Method::PUT, &format!("{API}/tasks"), Some(&body))
                .await?;
        }
    }
    Ok(kinds)
}

// ---------------------------------------------------------------- what is looked at

/// Open file descriptors of process `pid`.
fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

/// Every process's parent, and whether its command line names Chromium.
fn processes() -> HashMap<u32, (u32, bool)> {
    let mut all = HashMap::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let parent = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let chromium = String::from_utf8_lossy(&cmdline).contains("chrom");
        all.insert(pid, (parent, chromium));
    }
    all
}

/// The Chromium processes under `root`.
fn chromium_under(root: u32, all: &HashMap<u32, (u32, bool)>) -> HashSet<u32> {
    let mut found = HashSet::new();
    for (&pid, &(_, chromium)) in all {
        if !chromium {
            continue;
        }
        let mut at = pid;
        for _ in 0..64 {
            match all.get(&at) {
                Some(&(parent, _)) if parent == root => {
                    found.insert(pid);
                    break;
                }
                Some(&(parent, _)) if parent > 1 => at = parent,
                _ => break,
            }
        }
    }
    found
}

/// One look at the service.
#[derive(Debug, Clone)]
struct Sample {
    /// Minutes since the monitors were created.
    minute: f64,
    /// Which process: 1 before the kill, 2 after.
    life: u8,
    rss_mb: f64,
    fds: usize,
    db_bytes: u64,
    /// Checks since the start, over both lives.
    checks: u64,
    /// The lateness histogram since the start, over both lives.
    lateness: Vec<(f64, u64)>,
    chromium: usize,
    /// Chromium processes of the killed service still alive.
    orphans: usize,
    api_requests: u64,
    api_5xx: u64,
    webhook_posts: u64,
}

/// `/metrics` of the killed process, added to the new one's so the counts run on.
#[derive(Default, Clone)]
struct Carried {
    checks: u64,
    lateness: Vec<(f64, u64)>,
}

impl Carried {
    fn add(&self, scrape: &Scrape) -> (u64, Vec<(f64, u64)>) {
        let lateness = scrape
            .lateness
            .iter()
            .map(|&(bound, n)| {
                let was = self
                    .lateness
                    .iter()
                    .find(|(b, _)| *b == bound)
                    .map_or(0, |(_, n)| *n);
                (bound, n + was)
            })
            .collect();
        (self.checks + scrape.checks, lateness)
    }
}

/// A minute's row of the table.
struct Minute {
    minute: usize,
    rss_mb: f64,
    fds: usize,
    db_mb: f64,
    bytes_per_check: f64,
    chromium: usize,
    orphans: usize,
    checks_per_s: f64,
    p50: f64,
    p99: f64,
    api_requests: u64,
    api_5xx: u64,
    webhook_posts: u64,
}

fn minutes_of(samples: &[Sample], total: u32) -> Vec<Minute> {
    let at = |m: f64| {
        samples
            .iter()
            .rev()
            .find(|s| s.minute <= m + 1e-6)
            .or(samples.first())
    };
    let mut rows = Vec::new();
    for m in 0..total as usize {
        let (Some(a), Some(b)) = (at(m as f64), at(m as f64 + 1.0)) else {
            continue;
        };
        let seconds = ((b.minute - a.minute) * 60.0).max(1.0);
        let within = samples
            .iter()
            .filter(|s| s.minute > m as f64 && s.minute <= m as f64 + 1.0 + 1e-6);
        rows.push(Minute {
            minute: m + 1,
            rss_mb: b.rss_mb,
            fds: b.fds,
            db_mb: b.db_bytes as f64 / 1e6,
            bytes_per_check: b.db_bytes as f64 / b.checks.max(1) as f64,
            chromium: within.clone().map(|s| s.chromium).max().unwrap_or(0),
            orphans: within.map(|s| s.orphans).max().unwrap_or(0),
            checks_per_s: (b.checks - a.checks) as f64 / seconds,
            p50: quantile(&a.lateness, &b.lateness, 0.5).unwrap_or(f64::NAN),
            p99: quantile(&a.lateness, &b.lateness, 0.99).unwrap_or(f64::NAN),
            api_requests: b.api_requests - a.api_requests,
            api_5xx: b.api_5xx - a.api_5xx,
            webhook_posts: b.webhook_posts - a.webhook_posts,
        });
    }
    rows
}

/// Whether `values` (in time order) are flat: the mean of their last third at most 10% plus
/// `slack` above the mean of their first third. The two means.
fn flat(values: &[f64], slack: f64) -> (bool, f64, f64) {
    let third = (values.len() / 3).max(1);
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let first = mean(&values[..third.min(values.len())]);
    let last = mean(&values[values.len().saturating_sub(third)..]);
    (last <= first * 1.10 + slack, first, last)
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

// ---------------------------------------------------------------- the run

/// Flags of every start of the service: private addresses (the fixtures), 10 s recurrences,
/// no notification caps (every alert is delivered), room for the hanging hosts' checks, and a
/// history of 10 entries a monitor, so the database reaches the size it keeps within the run
/// (its deletions are soaked too).
const SERVE_FLAGS: [&str; 13] = [
    "--allow-private-networks",
    "--min-recurrence",
    "10",
    "--max-notifications-per-hour",
    "1000000",
    "--deliveries-per-hour",
    "0",
    "--checks-in-flight",
    "96",
    "--max-monitors-per-user",
    "100000",
    "--history-retention",
    "10",
];

/// `soak`: run, print the table, draw the plot, assert.
pub fn run(options: &SoakOptions) -> Result<(), String> {
    let wachet = wachet_exe(options.wachet.as_deref())?;
    let work = TempDir::new("wachet-bench-soak").map_err(|e| e.to_string())?;
    let db = work.path().join("wachet.db");
    let logs = [
        work.path().join("serve-1.log"),
        work.path().join("serve-2.log"),
    ];
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let outcome = runtime.block_on(soak(options, &wachet, &db, &logs));
    // The logs are worth keeping when something failed.
    if outcome.is_err() {
        for log in &logs {
            let kept = std::env::temp_dir().join(format!(
                "wachet-soak-{}",
                log.file_name()
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
            ));
            if std::fs::copy(log, &kept).is_ok() {
                eprintln!("kept {}", kept.display());
            }
        }
    }
    outcome
}

async fn soak(
    options: &SoakOptions,
    wachet: &Path,
    db: &Path,
    logs: &[PathBuf; 2],
) -> Result<(), String> {
    let fixtures = Fixtures::start().await?;
    let flags = SERVE_FLAGS;
    let mut service = Service::start_with(wachet, db, &logs[0], &flags)?;
    let anonymous = Endpoint::new(service.addr, None)?;
    let token = login(&anonymous, &service).await?;
    let endpoint = Endpoint::new(service.addr, Some(&token))?;
    let began = Instant::now();
    let kinds = create_monitors(&endpoint, &fixtures, options).await?;
    eprintln!(
        "wachet serve (pid {}) on {}; {} monitors created in {:.1} s; soaking for {} minutes",
        service.pid(),
        service.addr,
        options.monitors,
        began.elapsed().as_secs_f64(),
        options.minutes
    );

    let target = Arc::new(Target {
        inner: Mutex::new((service.addr, token)),
    });
    let stats = Arc::new(ApiStats::default());
    let stop = Arc::new(AtomicBool::new(false));
    let mut clients = Vec::new();
    for k in 0..options.api_clients {
        clients.push(tokio::spawn(api_client(
            k,
            target.clone(),
            stats.clone(),
            stop.clone(),
            fixtures.url(Kind::Page, 7_000_000 + k),
            fixtures.hook(Hook::Takes),
        )));
    }

    let start = Instant::now();
    let total = Duration::from_secs(u64::from(options.minutes) * 60);
    let kill_at = total / 2;
    let mut killed_ms = None;
    let mut life = 1u8;
    let mut carried = Carried::default();
    let mut last = Scrape::default();
    let mut seen_chromium: HashSet<u32> = HashSet::new();
    let mut samples: Vec<Sample> = Vec::new();
    let mut endpoint = endpoint;
    let mut next = start;
    while start.elapsed() < total {
        next += SAMPLE_EVERY;
        tokio::time::sleep_until(tokio::time::Instant::from_std(next)).await;
        if killed_ms.is_none() && start.elapsed() >= kill_at {
            if let Ok(before) = scrape(&endpoint).await {
                last = before;
            }
            let (checks, lateness) = carried.add(&last);
            carried = Carried { checks, lateness };
            eprintln!(
                "minute {:.1}: kill -9 {}",
                start.elapsed().as_secs_f64() / 60.0,
                service.pid()
            );
            service.kill_hard()?;
            killed_ms = Some(now_ms());
            let again = Service::start_again(wachet, db, &logs[1], &flags, &service)?;
            // The old one is reaped: dropping it only signals a pid that is gone.
            service = again;
            let anonymous = Endpoint::new(service.addr, None)?;
            let token = login(&anonymous, &service).await?;
            endpoint = Endpoint::new(service.addr, Some(&token))?;
            target.set(service.addr, token);
            life = 2;
            last = Scrape::default();
            eprintln!("started again: pid {} on {}", service.pid(), service.addr);
        }
        let pid = service.pid();
        if let Ok(now) = scrape(&endpoint).await {
            last = now;
        }
        let (checks, lateness) = carried.add(&last);
        let all = processes();
        let chromium = chromium_under(pid, &all);
        let orphans = seen_chromium
            .iter()
            .filter(|p| !chromium.contains(p) && all.get(p).is_some_and(|(_, c)| *c))
            .count();
        seen_chromium.extend(chromium.iter().copied());
        let sample = Sample {
            minute: start.elapsed().as_secs_f64() / 60.0,
            life,
            rss_mb: memory_mb(pid).0,
            fds: open_fds(pid),
            db_bytes: db_bytes(db),
            checks,
            lateness,
            chromium: chromium.len(),
            orphans,
            api_requests: stats.requests.load(Ordering::Relaxed),
            api_5xx: stats.server_errors.load(Ordering::Relaxed),
            webhook_posts: fixtures.received.posts(),
        };
        eprintln!(
            "minute {:4.1}: RSS {:6.1} MB, {:4} fds, {:7.1} MB of database, {} checks, {} Chromium",
            sample.minute,
            sample.rss_mb,
            sample.fds,
            sample.db_bytes as f64 / 1e6,
            sample.checks,
            sample.chromium
        );
        samples.push(sample);
    }
    stop.store(true, Ordering::Relaxed);
    for client in clients {
        let _ = client.await;
    }
    tokio::time::sleep(DRAIN).await;
    drop(service);

    let rows = minutes_of(&samples, options.minutes);
    let kill_minute = kill_at.as_secs_f64() / 60.0;
    print_table(options, &kinds, &rows, kill_minute);
    let heading = format!(
        "WACHET SOAK: {} MONITORS, {} MINUTES, KILL -9 AT MINUTE {}",
        options.monitors, options.minutes, kill_minute
    );
    draw(options, &heading, &samples, kill_minute)?;
    println!("plot: {}", options.plot.display());

    let mut failures = Vec::new();
    // No panic in either log.
    for log in logs {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if let Some(line) = text.lines().find(|l| l.contains("panicked")) {
            failures.push(format!("{}: {line}", log.display()));
        }
    }
    // No 5xx.
    let requests = stats.requests.load(Ordering::Relaxed);
    let server_errors = stats.server_errors.load(Ordering::Relaxed);
    println!(
        "API clients: {requests} answers, {} 4xx, {server_errors} 5xx, {} requests unanswered \
         (the service down or killed mid-answer)",
        stats.client_errors.load(Ordering::Relaxed),
        stats.unanswered.load(Ordering::Relaxed),
    );
    if server_errors > 0 {
        let first = stats
            .first_5xx
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .join("; ");
        failures.push(format!(
            "{server_errors} answers 5xx to the API clients: {first}"
        ));
    }
    // Notifications.
    let takes = fixtures.hook(Hook::Takes);
    let notes = notifications(db, &takes, killed_ms.unwrap_or(i64::MAX)).await?;
    println!(
        "notifications: {} stored ({} before the kill); deliveries by state: {}",
        notes.notifications,
        notes.before_kill,
        notes
            .states
            .iter()
            .map(|(s, n)| format!("{s} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "to the taking webhook: {} delivered, {} pending at the end ({} s after the clients \
         stopped); it took {} posts",
        notes.delivered_to_takes.len(),
        notes.pending_to_takes,
        DRAIN.as_secs(),
        fixtures.received.posts()
    );
    if notes.without_delivery > 0 {
        failures.push(format!(
            "{} notifications stored without a delivery",
            notes.without_delivery
        ));
    }
    if !notes.unknown_states.is_empty() {
        failures.push(format!(
            "deliveries in no known state: {:?}",
            notes.unknown_states
        ));
    }
    let never_received = notes
        .delivered_to_takes
        .iter()
        .filter(|id| !fixtures.received.has(id))
        .count();
    if never_received > 0 {
        failures.push(format!(
            "{never_received} deliveries stored as delivered were never received"
        ));
    }
    println!(
        "of the notifications raised before the kill, to the taking webhook: {} failed, {} \
         still pending",
        notes.failed_across_kill, notes.pending_across_kill
    );
    if notes.failed_across_kill > 0 {
        failures.push(format!(
            "{} deliveries to the taking webhook (which answers every one 200) of notifications \
             raised before the kill failed",
            notes.failed_across_kill
        ));
    }
    // Flat after warm-up.
    for l in [1u8, 2] {
        let life_start = samples
            .iter()
            .find(|s| s.life == l)
            .map_or(0.0, |s| s.minute - SAMPLE_EVERY.as_secs_f64() / 60.0);
        let warm: Vec<&Sample> = samples
            .iter()
            .filter(|s| s.life == l && s.minute >= life_start + WARM_UP_MINUTES)
            .collect();
        if warm.len() < 3 {
            continue;
        }
        let rss: Vec<f64> = warm.iter().map(|s| s.rss_mb).collect();
        let fds: Vec<f64> = warm.iter().map(|s| s.fds as f64).collect();
        let (rss_flat, rss_a, rss_b) = flat(&rss, 8.0);
        let (fds_flat, fds_a, fds_b) = flat(&fds, 8.0);
        println!(
            "process {l} after warm-up ({} samples): RSS {rss_a:.1} -> {rss_b:.1} MB ({}), fds \
             {fds_a:.1} -> {fds_b:.1} ({})",
            warm.len(),
            if rss_flat { "flat" } else { "GROWING" },
            if fds_flat { "flat" } else { "GROWING" },
        );
        if !rss_flat {
            failures.push(format!(
                "process {l}'s RSS grew from {rss_a:.1} to {rss_b:.1} MB after warm-up"
            ));
        }
        if !fds_flat {
            failures.push(format!(
                "process {l}'s descriptors grew from {fds_a:.1} to {fds_b:.1} after warm-up"
            ));
        }
    }
    let orphans = samples.last().map_or(0, |s| s.orphans);
    if orphans > 0 {
        failures.push(format!(
            "{orphans} Chromium processes of the killed service still run"
        ));
    }
    let builds = busy_builds();
    if !builds.is_empty() {
        println!(
            "note: builds were running beside the bench: {}",
            builds.join(", ")
        );
    }
    println!("load average at the end: {}", load_average());
    if failures.is_empty() {
        println!("soak passed");
        Ok(())
    } else {
        Err(format!("soak failed:\n- {}", failures.join("\n- ")))
    }
}

fn print_table(options: &SoakOptions, kinds: &HashMap<Kind, usize>, rows: &[Minute], kill: f64) {
    let mix: Vec<String> = Kind::ALL
        .iter()
        .filter_map(|k| kinds.get(k).map(|n| format!("{n} {}", k.name())))
        .collect();
    println!(
        "{} monitors ({}), {} API clients, kill -9 at minute {kill}",
        options.monitors,
        mix.join(", "),
        options.api_clients
    );
    println!(
        "| minute | RSS MB | open fds | DB MB | DB bytes/check | Chromium | checks/s | lateness \
         p50 / p99 s | API requests (5xx) | webhook posts |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for r in rows {
        let orphans = if r.orphans > 0 {
            format!(" (+{} orphaned)", r.orphans)
        } else {
            String::new()
        };
        println!(
            "| {} | {:.1} | {} | {:.1} | {:.0} | {}{} | {:.1} | {:.2} / {:.2} | {} ({}) | {} |",
            r.minute,
            r.rss_mb,
            r.fds,
            r.db_mb,
            r.bytes_per_check,
            r.chromium,
            orphans,
            r.checks_per_s,
            r.p50,
            r.p99,
            r.api_requests,
            r.api_5xx,
            r.webhook_posts
        );
    }
}

fn draw(options: &SoakOptions, heading: &str, samples: &[Sample], kill: f64) -> Result<(), String> {
    let series = |f: &dyn Fn(&Sample) -> f64| -> Vec<(f64, f64)> {
        samples.iter().map(|s| (s.minute, f(s))).collect()
    };
    // Rates and quantiles between consecutive samples.
    let mut rate = Vec::new();
    let mut p50 = Vec::new();
    let mut p99 = Vec::new();
    for pair in samples.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        let seconds = ((b.minute - a.minute) * 60.0).max(1.0);
        rate.push((b.minute, (b.checks - a.checks) as f64 / seconds));
        p50.push((
            b.minute,
            quantile(&a.lateness, &b.lateness, 0.5).unwrap_or(f64::NAN),
        ));
        p99.push((
            b.minute,
            quantile(&a.lateness, &b.lateness, 0.99).unwrap_or(f64::NAN),
        ));
    }
    let panels = [
        plot::Panel {
            title: "SERVICE RSS (MB)".into(),
            lines: vec![series(&|s| s.rss_mb)],
        },
        plot::Panel {
            title: "OPEN FILE DESCRIPTORS".into(),
            lines: vec![series(&|s| s.fds as f64)],
        },
        plot::Panel {
            title: "DATABASE + WAL BYTES PER CHECK".into(),
            lines: vec![series(&|s| s.db_bytes as f64 / s.checks.max(1) as f64)],
        },
        plot::Panel {
            title: "CHROMIUM PROCESSES (ORANGE: ORPHANED)".into(),
            lines: vec![
                series(&|s| s.chromium as f64),
                series(&|s| s.orphans as f64),
            ],
        },
        plot::Panel {
            title: "CHECKS A SECOND".into(),
            lines: vec![rate],
        },
        plot::Panel {
            title: "LATENESS P50 / P99 (S, ORANGE P99)".into(),
            lines: vec![p50, p99],
        },
    ];
    plot::draw(
        &options.plot,
        heading,
        &panels,
        f64::from(options.minutes),
        kill,
    )
}

/// What the database says of the notifications at the end.
struct Notes {
    notifications: i64,
    before_kill: i64,
    without_delivery: i64,
    states: Vec<(String, i64)>,
    unknown_states: Vec<String>,
    delivered_to_takes: Vec<String>,
    pending_to_takes: i64,
    /// Deliveries to the taking webhook of notifications raised before the kill, failed (it
    /// never fails one: a try cut by the kill must be tried again) or still pending.
    failed_across_kill: i64,
    pending_across_kill: i64,
}

async fn notifications(db: &Path, takes: &str, killed_ms: i64) -> Result<Notes, String> {
    use sqlx::ConnectOptions;
    let mut conn = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(db)
        .read_only(true)
        .connect()
        .await
        .map_err(|e| format!("cannot open {}: {e}", db.display()))?;
    let count = |sql: &'static str| sqlx::query_scalar::<_, i64>(sql);
    let notifications = count("SELECT COUNT(*) FROM notifications")
        .fetch_one(&mut conn)
        .await
        .map_err(|e| e.to_string())?;
    let before_kill =
        sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM notifications WHERE created_at < ?")
            .bind(killed_ms)
            .fetch_one(&mut conn)
            .await
            .map_err(|e| e.to_string())?;
    let without_delivery = count(
        "SELECT COUNT(*) FROM notifications n \
         WHERE NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.notification_id = n.id)",
    )
    .fetch_one(&mut conn)
    .await
    .map_err(|e| e.to_string())?;
    let mut states = Vec::new();
    let mut unknown_states = Vec::new();
    for row in sqlx::query(
        "SELECT state, COUNT(*) FROM deliveries WHERE notification_id IS NOT NULL \
         GROUP BY state ORDER BY state",
    )
    .fetch_all(&mut conn)
    .await
    .map_err(|e| e.to_string())?
    {
        let state: String = row.try_get(0).map_err(|e| e.to_string())?;
        let n: i64 = row.try_get(1).map_err(|e| e.to_string())?;
        if !["pending", "delivered", "failed"].contains(&state.as_str()) {
            unknown_states.push(state.clone());
        }
        states.push((state, n));
    }
    let delivered_to_takes = sqlx::query_scalar::<_, String>(
        "SELECT id FROM deliveries WHERE target = ? AND state = 'delivered' \
         AND notification_id IS NOT NULL",
    )
    .bind(takes)
    .fetch_all(&mut conn)
    .await
    .map_err(|e| e.to_string())?;
    let pending_to_takes = sqlx::query_scalar::<_, i64>(
        "SELECT COUNT(*) FROM deliveries WHERE target = ? AND state = 'pending'",
    )
    .bind(takes)
    .fetch_one(&mut conn)
    .await
    .map_err(|e| e.to_string())?;
    let before_kill_to_takes = |state: &'static str| {
        sqlx::query_scalar::<_, i64>(
            "SELECT COUNT(*) FROM deliveries d JOIN notifications n ON n.id = d.notification_id \
             WHERE d.target = ? AND n.created_at < ? AND d.state = ?",
        )
        .bind(takes)
        .bind(killed_ms)
        .bind(state)
    };
    let failed_across_kill = before_kill_to_takes("failed")
        .fetch_one(&mut conn)
        .await
        .map_err(|e| e.to_string())?;
    let pending_across_kill = before_kill_to_takes("pending")
        .fetch_one(&mut conn)
        .await
        .map_err(|e| e.to_string())?;
    Ok(Notes {
        notifications,
        before_kill,
        without_delivery,
        states,
        unknown_states,
        delivered_to_takes,
        pending_to_takes,
        failed_across_kill,
        pending_across_kill,
    })
}

#[cfg(test)]
mod tests {
    use super::flat;

    #[test]
    fn growth_beyond_a_tenth_and_the_slack_is_not_flat() {
        assert!(flat(&[100.0, 102.0, 99.0, 101.0, 104.0, 103.0], 8.0).0);
        assert!(!flat(&[100.0, 110.0, 120.0, 130.0, 140.0, 150.0], 8.0).0);
        assert!(flat(&[10.0, 12.0, 11.0, 17.0, 18.0, 17.0], 8.0).0);
    }
}
