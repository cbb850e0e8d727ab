//! `schedule`: the scheduler of `wachet serve` (the release binary) under a steady load of
//! SinglePage monitors.
//!
//! It serves small product pages on `--hosts` loopback addresses (127.0.0.1, 127.0.0.2, ...;
//! one page a monitor, 1 in 100 of them changing its price every minute): by nginx from files
//! this bench writes and rewrites each minute (`--server nginx`, the default when nginx is
//! installed), or from this process (`--server rust`, which then shares the cores' time),
//! starts `wachet serve --allow-private-networks` on a temporary database, creates `--monitors`
//! monitors (default 10,000) through the API with a 60 s recurrence and a NotEq alert, lets
//! them run for `--warmup` (default 90 s: the first checks of new monitors come in a burst, and
//! the scheduler then spreads them over the minute) and measures for `--duration` (default
//! 180 s):
//! - checks per second, from the service's `wachet_checks_total`;
//! - lateness of checks (actual minus planned start): p50 and p99 of the measured window, from
//!   the deltas of the service's `wachet_check_lateness_seconds` histogram (interpolated within
//!   its buckets, as Prometheus' `histogram_quantile` does, so a figure is as fine as its
//!   bucket);
//! - the service's VmRSS (sampled every second: the last and the highest) and VmHWM;
//! - CPU per check (user + system of the service process, from /proc, over the window), and how
//!   many checks each of its transactions stored (the service's group commit);
//! - database growth per 100,000 checks (the SQLite file and its WAL, over the window).
//!
//! With `--slow-monitors N`, N of the monitors are on one more host (127.0.0.250) that answers
//! each page after `--slow-ms` (default 2,000): more than its host slots can keep up with. Its
//! monitors are late by design; the others must not be, so the bench also reports the pages the
//! other hosts served a second against the rate their monitors plan.

use crate::api::{
    API, Conn, Endpoint, Service, busy_builds, cpu_seconds, load_average, login, memory_mb,
    wachet_exe,
};
use crate::harness::{ServerKind, StaticServer, TempDir};
use hyper::Method;
use serde_json::json;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Options of `schedule`.
#[derive(Debug, Clone)]
pub struct ScheduleOptions {
    /// Monitors checked.
    pub monitors: usize,
    /// Loopback hosts serving their pages (127.0.0.1 up).
    pub hosts: u8,
    /// Recurrence of every monitor, in seconds.
    pub recurrence: u32,
    /// Run before measuring.
    pub warmup: Duration,
    /// Measured run.
    pub duration: Duration,
    /// `--checks-in-flight` of the service (default: the service's own).
    pub checks_in_flight: Option<usize>,
    /// The `wachet` binary (default: `wachet` beside this binary, i.e. target/release/wachet).
    pub wachet: Option<PathBuf>,
    /// Monitors (of `monitors`) on one slow host.
    pub slow_monitors: usize,
    /// How long the slow host takes to answer a page.
    pub slow: Duration,
    /// What serves the pages: nginx, or this process.
    pub server: ServerKind,
}

impl Default for ScheduleOptions {
    fn default() -> Self {
        ScheduleOptions {
            monitors: 10_000,
            hosts: 10,
            recurrence: 60,
            warmup: Duration::from_secs(90),
            duration: Duration::from_secs(180),
            checks_in_flight: None,
            wachet: None,
            slow_monitors: 0,
            slow: Duration::from_secs(2),
            server: ServerKind::Auto,
        }
    }
}

impl ScheduleOptions {
    /// Parses `--monitors N --hosts H --recurrence S --warmup S --duration S
    /// --checks-in-flight N --wachet PATH --slow-monitors N --slow-ms MS --server nginx|rust|auto`.
    pub fn parse(args: &[String]) -> Option<ScheduleOptions> {
        let mut o = ScheduleOptions::default();
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            let value = it.next()?;
            match flag.as_str() {
                "--monitors" => o.monitors = value.parse().ok()?,
                "--hosts" => o.hosts = value.parse().ok()?,
                "--recurrence" => o.recurrence = value.parse().ok()?,
                "--warmup" => o.warmup = Duration::from_secs_f64(value.parse().ok()?),
                "--duration" => o.duration = Duration::from_secs_f64(value.parse().ok()?),
                "--checks-in-flight" => o.checks_in_flight = Some(value.parse().ok()?),
                "--wachet" => o.wachet = Some(PathBuf::from(value)),
                "--slow-monitors" => o.slow_monitors = value.parse().ok()?,
                "--slow-ms" => o.slow = Duration::from_millis(value.parse().ok()?),
                "--server" => o.server = ServerKind::parse(value)?,
                _ => return None,
            }
        }
        let valid = o.monitors > o.slow_monitors
            && o.hosts > 0
            && o.hosts < 250
            && o.recurrence > 0
            && !o.duration.is_zero();
        valid.then_some(o)
    }
}

// ---------------------------------------------------------------- the pages

/// The fixture site: one page a monitor, about 2 KB of product page; 1 in 100 pages changes its
/// price every minute, so the history and the alerts see changes too.
fn page(n: usize, minute: u64) -> String {
    let price = if n.is_multiple_of(100) {
        100 + minute as usize % 50
    } else {
        100 + n % 50
    };
    let mut body = format!(
        "<!doctype html><html><head><title>Product {n}</title></head><body>\
         <h1>Product {n}</h1><p class=price>{price}.90 EUR</p><ul>"
    );
    for i in 0..40 {
        body.push_str(&format!("<li>Feature {i} of product {n}: reliable</li>"));
    }
    body.push_str("</ul></body></html>");
    body
}

fn minute_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() / 60)
}

/// Serves `/p/{n}.html` from this process on 127.0.0.`host` for each of `hosts`, one port each,
/// answering after `delay`; their addresses, and the count of pages they served.
async fn serve_pages(
    hosts: impl IntoIterator<Item = u8>,
    delay: Duration,
) -> Result<(Vec<SocketAddr>, Arc<AtomicU64>), String> {
    let hits = Arc::new(AtomicU64::new(0));
    let mut addrs = Vec::new();
    for host in hosts {
        let ip = IpAddr::V4(Ipv4Addr::new(127, 0, 0, host));
        let listener = tokio::net::TcpListener::bind((ip, 0))
            .await
            .map_err(|e| format!("cannot listen on {ip}: {e}"))?;
        addrs.push(listener.local_addr().map_err(|e| e.to_string())?);
        let counted = hits.clone();
        let app = axum::Router::new().route(
            "/p/{file}",
            axum::routing::get(move |file: axum::extract::Path<String>| {
                let counted = counted.clone();
                async move {
                    counted.fetch_add(1, Ordering::Relaxed);
                    if !delay.is_zero() {
                        tokio::time::sleep(delay).await;
                    }
                    let n = file.0.strip_suffix(".html").and_then(|n| n.parse().ok());
                    axum::response::Html(n.map_or_else(String::new, |n| page(n, minute_now())))
                }
            }),
        );
        tokio::spawn(async move { axum::serve(listener, app).await });
    }
    Ok((addrs, hits))
}

/// What serves the pages of the hosts that are not slow.
pub(crate) enum Pages {
    /// nginx, from files written here; the changing ones are rewritten each minute (by a
    /// rename, so nginx never serves half a file).
    Nginx {
        server: StaticServer,
        _files: TempDir,
        _changer: tokio::task::JoinHandle<()>,
    },
    /// This process.
    InProcess(Arc<AtomicU64>),
}

impl Pages {
    /// Serves the pages of monitors `0..monitors` on 127.0.0.1..=127.0.0.`hosts`; their
    /// addresses.
    pub(crate) async fn start(
        kind: ServerKind,
        hosts: u8,
        monitors: usize,
    ) -> Result<(Pages, Vec<SocketAddr>), String> {
        let ips: Vec<Ipv4Addr> = (1..=hosts).map(|h| Ipv4Addr::new(127, 0, 0, h)).collect();
        let nginx = match kind {
            ServerKind::Rust => None,
            ServerKind::Nginx => Some(Self::files(monitors)?),
            ServerKind::Auto => Self::files(monitors).ok(),
        };
        let served = nginx.and_then(|files| {
            let started = StaticServer::nginx_on(files.path(), &ips);
            match (kind, started) {
                (_, Ok(server)) => Some(Ok((server, files))),
                (ServerKind::Nginx, Err(e)) => Some(Err(e)),
                (_, Err(_)) => None,
            }
        });
        match served {
            Some(Ok((server, files))) => {
                let port = server.addr().port();
                let addrs = ips.iter().map(|ip| SocketAddr::from((*ip, port))).collect();
                let dir = files.path().join("p");
                let changer = tokio::spawn(async move {
                    loop {
                        let next = (minute_now() + 1) * 60;
                        let now = SystemTime::now()
                            .duration_since(UNIX_EPOCH)
                            .map_or(0.0, |d| d.as_secs_f64());
                        tokio::time::sleep(Duration::from_secs_f64((next as f64 - now).max(0.0)))
                            .await;
                        let dir = dir.clone();
                        let _ = tokio::task::spawn_blocking(move || {
                            let minute = minute_now();
                            for n in (0..monitors).step_by(100) {
                                let _ = write_page(&dir, n, minute);
                            }
                        })
                        .await;
                    }
                });
                let pages = Pages::Nginx {
                    server,
                    _files: files,
                    _changer: changer,
                };
                Ok((pages, addrs))
            }
            Some(Err(e)) => Err(e),
            None => {
                let (addrs, hits) = serve_pages(1..=hosts, Duration::ZERO).await?;
                Ok((Pages::InProcess(hits), addrs))
            }
        }
    }

    /// The pages of monitors `0..monitors` as files `p/{n}.html`.
    fn files(monitors: usize) -> Result<TempDir, String> {
        let files = TempDir::new("wachet-bench-pages").map_err(|e| e.to_string())?;
        let dir = files.path().join("p");
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        // The readiness probe asks for it.
        std::fs::write(
            files.path().join("index.html"),
            "<!doctype html><title>pages</title>",
        )
        .map_err(|e| e.to_string())?;
        let minute = minute_now();
        for n in 0..monitors {
            write_page(&dir, n, minute).map_err(|e| format!("cannot write a page: {e}"))?;
        }
        Ok(files)
    }

    /// Pages served so far.
    pub(crate) async fn served(&self) -> Result<u64, String> {
        match self {
            Pages::Nginx { server, .. } => server.requests_served().await,
            Pages::InProcess(hits) => Ok(hits.load(Ordering::Relaxed)),
        }
    }

    pub(crate) fn description(&self) -> String {
        match self {
            Pages::Nginx { server, .. } => server.description.clone(),
            Pages::InProcess(_) => "this process (axum)".into(),
        }
    }

    /// The process serving them, when it is not this one.
    pub(crate) fn pid(&self) -> Option<u32> {
        match self {
            Pages::Nginx { server, .. } => Some(server.pid()),
            Pages::InProcess(_) => None,
        }
    }
}

fn write_page(dir: &Path, n: usize, minute: u64) -> std::io::Result<()> {
    let temporary = dir.join(format!(".{n}.tmp"));
    std::fs::write(&temporary, page(n, minute))?;
    std::fs::rename(temporary, dir.join(format!("{n}.html")))
}

// ---------------------------------------------------------------- the service's figures

/// What `/metrics` says now: checks run, and the lateness histogram's cumulative buckets
/// (upper bound in seconds, count), `+Inf` last.
#[derive(Debug, Clone, Default)]
pub(crate) struct Scrape {
    pub(crate) checks: u64,
    pub(crate) failed: u64,
    pub(crate) lateness: Vec<(f64, u64)>,
    /// Transactions that stored checks, and the checks they stored.
    groups: u64,
    grouped: u64,
    /// Every histogram's `_sum` and `_count`, by name.
    totals: std::collections::HashMap<String, f64>,
}

impl Scrape {
    /// The mean of histogram `name` between `self` and the later `end` (ms), and its
    /// observations a second over `seconds`.
    fn mean_ms(&self, end: &Scrape, name: &str, seconds: f64) -> (f64, f64) {
        let delta = |suffix: &str| {
            let key = format!("{name}{suffix}");
            end.totals.get(&key).copied().unwrap_or(0.0)
                - self.totals.get(&key).copied().unwrap_or(0.0)
        };
        let count = delta("_count");
        (delta("_sum") * 1e3 / count.max(1.0), count / seconds)
    }
}

pub(crate) async fn scrape(endpoint: &Endpoint) -> Result<Scrape, String> {
    let mut conn = Conn::connect(endpoint.addr).await?;
    let uri: hyper::Uri = "/metrics".parse().map_err(|e| format!("{e}"))?;
    let (status, body) = conn.send(endpoint.request(Method::GET, uri, None)).await?;
    if !status.is_success() {
        return Err(format!("GET /metrics: {status}"));
    }
    let text = String::from_utf8_lossy(&body);
    let mut scrape = Scrape::default();
    for line in text.lines() {
        let Some((name, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let Ok(value) = value.parse::<f64>() else {
            continue;
        };
        if name.starts_with("wachet_checks_total{") {
            scrape.checks += value as u64;
            if name.contains("failed") {
                scrape.failed += value as u64;
            }
        } else if name.ends_with("_sum") || name.ends_with("_count") {
            scrape.totals.insert(name.to_string(), value);
        } else if name == "wachet_check_groups_total" {
            scrape.groups = value as u64;
        } else if name == "wachet_checks_grouped_total" {
            scrape.grouped = value as u64;
        } else if let Some(le) = name
            .strip_prefix("wachet_check_lateness_seconds_bucket{le=\"")
            .and_then(|rest| rest.strip_suffix("\"}"))
        {
            let bound = if le == "+Inf" {
                f64::INFINITY
            } else {
                le.parse().map_err(|_| format!("bad bucket {line}"))?
            };
            scrape.lateness.push((bound, value as u64));
        }
    }
    Ok(scrape)
}

/// The `q` quantile of the observations between two scrapes of a cumulative histogram,
/// interpolated linearly within its bucket (the lowest bucket from 0). `None` without
/// observations; the highest finite bound when it falls in `+Inf`.
pub(crate) fn quantile(before: &[(f64, u64)], after: &[(f64, u64)], q: f64) -> Option<f64> {
    let counts: Vec<(f64, u64)> = after
        .iter()
        .map(|(bound, n)| {
            let was = before
                .iter()
                .find(|(b, _)| b == bound)
                .map_or(0, |(_, n)| *n);
            (*bound, n.saturating_sub(was))
        })
        .collect();
    let total = counts.last()?.1;
    if total == 0 {
        return None;
    }
    let rank = q * total as f64;
    let mut lower = (0.0, 0);
    for &(bound, n) in &counts {
        if n as f64 >= rank {
            if bound.is_infinite() {
                return Some(lower.0);
            }
            let within = (rank - lower.1 as f64) / (n - lower.1).max(1) as f64;
            return Some(lower.0 + (bound - lower.0) * within);
        }
        lower = (bound, n);
    }
    Some(lower.0)
}

/// The database file and its WAL, in bytes.
pub(crate) fn db_bytes(db: &Path) -> u64 {
    let size = |p: PathBuf| std::fs::metadata(p).map_or(0, |m| m.len());
    size(db.to_path_buf()) + size(db.with_extension("db-wal"))
}

// ---------------------------------------------------------------- the run

/// Monitors created by one `PUT /tasks` (the API takes up to 1,000).
const BULK: usize = 500;

/// Creates the monitors through the API's bulk form (`PUT /tasks`, [`BULK`] a request) with 4
/// connections, so 100,000 monitors are made in seconds rather than minutes.
pub(crate) async fn create_monitors(
    endpoint: &Endpoint,
    addrs: &[SocketAddr],
    options: &ScheduleOptions,
) -> Result<(), String> {
    let next = Arc::new(AtomicUsize::new(0));
    let mut workers = Vec::new();
    for _ in 0..4.min(options.monitors.div_ceil(BULK)) {
        let (endpoint, next, addrs) = (endpoint.clone(), next.clone(), addrs.to_vec());
        let (monitors, recurrence) = (options.monitors, options.recurrence);
        let slow = options.slow_monitors;
        let fast = if slow > 0 {
            addrs.len() - 1
        } else {
            addrs.len()
        };
        workers.push(tokio::spawn(async move {
            let mut conn = Conn::connect(endpoint.addr).await?;
            loop {
                let from = next.fetch_add(BULK, Ordering::Relaxed);
                if from >= monitors {
                    return Ok::<(), String>(());
                }
                let body: Vec<serde_json::Value> = (from..monitors.min(from + BULK))
                    .map(|n| {
                        // The first `slow_monitors` are on the slow host, listed last.
                        let addr = if n < slow {
                            addrs[addrs.len() - 1]
                        } else {
                            addrs[n % fast]
                        };
                        json!({
                            "name": format!("product {n:06}"),
                            "url": format!("http://{addr}/p/{n}.html"),
                            "xPath": "//p[@class='price']",
                            "recurrenceInSeconds": recurrence,
                            "alerts": [{"type": "NotEq"}],
                        })
                    })
                    .collect();
                let body = serde_json::Value::Array(body);
                endpoint
                    .call(&mut conn, Method::PUT, &format!("{API}/tasks"), Some(&body))
                    .await?;
            }
        }));
    }
    for worker in workers {
        worker.await.map_err(|e| e.to_string())??;
    }
    Ok(())
}

/// `schedule`: run, measure, print a table and one JSON line.
pub fn run(options: &ScheduleOptions) -> Result<(), String> {
    let wachet = wachet_exe(options.wachet.as_deref())?;
    let work = TempDir::new("wachet-bench-schedule").map_err(|e| e.to_string())?;
    let db = work.path().join("wachet.db");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let (pages, mut addrs) =
            Pages::start(options.server, options.hosts, options.monitors).await?;
        let slow_host = if options.slow_monitors > 0 {
            let (slow, _) = serve_pages([250], options.slow).await?;
            addrs.extend(slow);
            true
        } else {
            false
        };
        let in_flight = options.checks_in_flight.map(|n| n.to_string());
        // One user owns them all: the per-user cap (10,000 by default) is lifted to the run's.
        let most = options.monitors.to_string();
        let mut extra = vec![
            "--allow-private-networks",
            "--min-recurrence",
            "1",
            "--max-monitors-per-user",
            most.as_str(),
        ];
        if let Some(n) = &in_flight {
            extra.extend(["--checks-in-flight", n.as_str()]);
        }
        let service = Service::start_with(&wachet, &db, &work.path().join("serve.log"), &extra)?;
        let pid = service.pid();
        eprintln!(
            "wachet serve (pid {pid}) on {}, database {}; pages on {} hosts from {}",
            service.addr,
            db.display(),
            addrs.len(),
            pages.description()
        );
        let anonymous = Endpoint::new(service.addr, None)?;
        let token = login(&anonymous, &service).await?;
        let endpoint = Endpoint::new(service.addr, Some(&token))?;
        let began = Instant::now();
        create_monitors(&endpoint, &addrs, options).await?;
        eprintln!(
            "created {} monitors in {:.1} s; warming up for {} s",
            options.monitors,
            began.elapsed().as_secs_f64(),
            options.warmup.as_secs()
        );
        tokio::time::sleep(options.warmup).await;

        let start = scrape(&endpoint).await?;
        let (cpu0, bytes0, hits0) = (
            cpu_seconds(pid, false),
            db_bytes(&db),
            pages.served().await?,
        );
        let pages_cpu0 = pages.pid().map(|p| cpu_seconds(p, true));
        let measured = Instant::now();
        let mut rss_max: f64 = 0.0;
        while measured.elapsed() < options.duration {
            tokio::time::sleep(Duration::from_secs(1)).await;
            rss_max = rss_max.max(memory_mb(pid).0);
        }
        let seconds = measured.elapsed().as_secs_f64();
        let end = scrape(&endpoint).await?;
        let (cpu1, bytes1, hits1) = (
            cpu_seconds(pid, false),
            db_bytes(&db),
            pages.served().await?,
        );
        let pages_cpu = pages
            .pid()
            .zip(pages_cpu0)
            .map(|(p, before)| cpu_seconds(p, true) - before);
        let (rss, hwm) = memory_mb(pid);
        let checks = end.checks.saturating_sub(start.checks);
        let failed = end.failed.saturating_sub(start.failed);
        if checks == 0 {
            return Err(format!(
                "no checks in the measured window: {}",
                service.log_tail()
            ));
        }
        let p50 = quantile(&start.lateness, &end.lateness, 0.50).unwrap_or(f64::NAN);
        let p99 = quantile(&start.lateness, &end.lateness, 0.99).unwrap_or(f64::NAN);
        let cpu_ms = (cpu1 - cpu0) * 1e3 / checks as f64;
        let growth_mb = (bytes1 as f64 - bytes0 as f64) / checks as f64 * 100_000.0 / 1e6;
        let planned = options.monitors as f64 / f64::from(options.recurrence);
        println!(
            "{} monitors on {} hosts, every {} s (planned {:.1} checks/s); measured {:.0} s \
             after {} s of warm-up; load {}",
            options.monitors,
            options.hosts,
            options.recurrence,
            planned,
            seconds,
            options.warmup.as_secs(),
            load_average()
        );
        println!(
            "checks/s sustained        {:>10.1}",
            checks as f64 / seconds
        );
        let served = (hits1 - hits0) as f64 / seconds;
        let planned_others =
            (options.monitors - options.slow_monitors) as f64 / f64::from(options.recurrence);
        if slow_host {
            println!(
                "{} monitors on one host answering after {} ms",
                options.slow_monitors,
                options.slow.as_millis()
            );
            println!(
                "pages served/s, other hosts {served:>8.1} of {planned_others:.1} planned \
                 ({:.2})",
                served / planned_others
            );
        } else {
            println!("pages served/s            {served:>10.1}");
        }
        if let Some(cpu) = pages_cpu {
            let per_page = cpu * 1e3 / (hits1 - hits0).max(1) as f64;
            println!(
                "pages' server CPU/page(ms){per_page:>10.3} ({})",
                pages.description()
            );
        }
        println!("failed checks             {failed:>10}");
        println!("lateness p50 (s)          {p50:>10.3}");
        println!("lateness p99 (s)          {p99:>10.3}");
        println!("service RSS now/max (MB)  {rss:>6.1} / {rss_max:.1} (VmHWM {hwm:.1})");
        println!("service CPU per check (ms){cpu_ms:>10.3}");
        let groups = end.groups.saturating_sub(start.groups);
        let per_group = end.grouped.saturating_sub(start.grouped) as f64 / groups.max(1) as f64;
        println!("checks per transaction    {per_group:>10.1}");
        for (label, name) in [
            ("check (fetch to verdict)", "wachet_check_duration_seconds"),
            ("wait for its group", "wachet_check_store_wait_seconds"),
            ("claim", "wachet_claim_duration_seconds"),
            (
                "claim's hold of the writer",
                "wachet_claim_writer_held_seconds",
            ),
            (
                "group's hold of the writer",
                "wachet_group_writer_held_seconds",
            ),
        ] {
            let (mean, rate) = start.mean_ms(&end, name, seconds);
            println!("mean {label:<26} {mean:>7.2} ms ({rate:.0} a second)");
        }
        println!(
            "DB growth / 100k checks   {growth_mb:>10.2} MB (now {:.1} MB)",
            bytes1 as f64 / 1e6
        );
        let builds = busy_builds();
        if !builds.is_empty() {
            println!(
                "note: builds were running beside the bench: {}",
                builds.join(", ")
            );
        }
        println!(
            "{}",
            json!({
                "bench": "schedule",
                "monitors": options.monitors,
                "hosts": options.hosts,
                "recurrence_s": options.recurrence,
                "measured_s": seconds,
                "checks_per_s": checks as f64 / seconds,
                "slow_monitors": options.slow_monitors,
                "pages_per_s_other_hosts": served,
                "pages_server": pages.description(),
                "planned_other_hosts": planned_others,
                "failed_checks": failed,
                "lateness_p50_s": p50,
                "lateness_p99_s": p99,
                "rss_mb": rss,
                "rss_max_mb": rss_max,
                "vmhwm_mb": hwm,
                "cpu_ms_per_check": cpu_ms,
                "checks_per_transaction": per_group,
                "db_growth_mb_per_100k_checks": growth_mb,
            })
        );
        drop(service);
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::quantile;

    #[test]
    fn quantiles_interpolate_within_the_bucket_of_the_window() {
        let before = [(0.5, 10), (1.0, 10), (f64::INFINITY, 10)];
        let after = [(0.5, 60), (1.0, 110), (f64::INFINITY, 110)];
        // 100 new observations: 50 up to 0.5 s, 50 in (0.5, 1].
        assert_eq!(quantile(&before, &after, 0.5), Some(0.5));
        assert_eq!(quantile(&before, &after, 0.75), Some(0.75));
        assert_eq!(quantile(&before, &before, 0.5), None);
        let late = [(0.5, 0), (1.0, 0), (f64::INFINITY, 5)];
        assert_eq!(quantile(&[], &late, 0.99), Some(1.0));
    }
}
