//! `api`: the REST service (`wachet serve`, the release binary) under load, beside a static-file
//! ceiling.
//!
//! It starts `wachet serve --listen 127.0.0.1:0 --db TMP --rate-limit 0 --roles api
//! --max-monitors-per-user 1000000` (the API alone, no checks) as a child process,
//! logs in with the API key the first start prints, and seeds:
//! - through the API: one folder holding `--monitors` monitors (default 10,000), created with
//!   `PUT /task` over 8 connections (timed), and as many again in a folder of their own with
//!   `PUT /tasks`, 1,000 a request (timed);
//! - straight into the SQLite file (WAL, beside the running service, in big transactions that
//!   follow `server/migrations/sqlite/0001_initial.sql`): a history of `--history` entries (default
//!   1,000,000) for the folder's first monitor, one value change in 10 entries and one failed
//!   check in 500 (never the newest), one minute apart; and one entry for every other monitor, so listings carry
//!   latest data. The WAL is checkpointed into the database before measuring.
//!
//! Then, with `--concurrency` (32) keep-alive HTTP/1.1 connections of a hyper client in this
//! process, each endpoint is loaded for `--warmup` (2 s) and then measured for `--duration`
//! (10 s): requests/s and p50/p99 latency of
//! - a static file of exactly the size of the `GET /task/{id}` body (nginx when installed, else
//!   `wachet-bench serve`), the ceiling;
//! - `GET /thirdparty/v1/task/{id}`;
//! - `GET /thirdparty/v1/folder/list?parentId=FOLDER` (first page);
//! - the newest history page's body as a static file, the history pages' ceiling;
//! - the folder listing's first page as a static file, the listing's ceiling (measured last);
//! - `GET /thirdparty/v1/data/list/{id}`, the newest page (50 entries) of the long history;
//! - the same with a continuation token 1,000 entries from the oldest end of the history.
//!
//! Last, the service's VmRSS and VmHWM. Client and service share the machine's cores.

use crate::harness::{ServerKind, StaticServer, TempDir, median};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HOST, HeaderValue};
use hyper::{Method, Request, StatusCode, Uri};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};
use sqlx::{AssertSqlSafe, ConnectOptions, Connection};
use std::io::BufRead;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Path prefix of the API.
pub(crate) const API: &str = "/thirdparty/v1";
/// How far from the oldest end of the history the deep page starts (entries).
const DEEP_FROM_OLDEST: usize = 1_000;
/// Entries of one history page (the API's default `count`).
const PAGE: usize = 50;
/// Time between two seeded checks.
const CHECK_EVERY_MS: i64 = 60_000;
/// Entries per multi-row INSERT while seeding.
const ROWS_PER_INSERT: usize = 100;
/// Entries per seeding transaction.
const ROWS_PER_COMMIT: usize = 50_000;
/// Longest wait for the service to start (it hashes the first user's password).
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// Options of `api`.
#[derive(Debug, Clone)]
pub struct ApiOptions {
    /// Measured time per endpoint.
    pub duration: Duration,
    /// Unmeasured load before each measurement.
    pub warmup: Duration,
    /// Connections, each with one request in flight.
    pub concurrency: usize,
    /// Monitors in the folder.
    pub monitors: usize,
    /// History entries of the long-history monitor.
    pub history: usize,
    /// Threads of the load generator's runtime (1: current-thread runtime).
    pub client_threads: usize,
    /// Static server of the ceiling.
    pub server: ServerKind,
    /// The `wachet` binary (default: `wachet` beside this binary, i.e. target/release/wachet).
    pub wachet: Option<PathBuf>,
    /// Measurements of each endpoint; figures are medians over them.
    pub rounds: usize,
}

impl Default for ApiOptions {
    fn default() -> Self {
        ApiOptions {
            duration: Duration::from_secs(10),
            warmup: Duration::from_secs(2),
            concurrency: 32,
            monitors: 10_000,
            history: 1_000_000,
            client_threads: 1,
            server: ServerKind::Auto,
            wachet: None,
            rounds: 1,
        }
    }
}

impl ApiOptions {
    /// Parses `--duration S --warmup S --concurrency C --monitors N --history N
    /// --client-threads T --server nginx|rust|auto --wachet PATH --rounds R`.
    pub fn parse(args: &[String]) -> Option<ApiOptions> {
        let mut o = ApiOptions::default();
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            let value = it.next()?;
            match flag.as_str() {
                "--duration" => o.duration = Duration::from_secs_f64(value.parse().ok()?),
                "--warmup" => o.warmup = Duration::from_secs_f64(value.parse().ok()?),
                "--concurrency" => o.concurrency = value.parse().ok()?,
                "--monitors" => o.monitors = value.parse().ok()?,
                "--history" => o.history = value.parse().ok()?,
                "--client-threads" => o.client_threads = value.parse().ok()?,
                "--server" => o.server = ServerKind::parse(value)?,
                "--wachet" => o.wachet = Some(PathBuf::from(value)),
                "--rounds" => o.rounds = value.parse().ok()?,
                _ => return None,
            }
        }
        let valid = o.concurrency > 0
            && o.monitors > 0
            && o.history >= DEEP_FROM_OLDEST + 2 * PAGE
            && o.client_threads > 0
            && o.rounds > 0
            && !o.duration.is_zero();
        valid.then_some(o)
    }
}

// ---------------------------------------------------------------- the service process

/// `wachet serve` in a child process; stopped with SIGTERM on drop.
pub(crate) struct Service {
    child: Child,
    pub(crate) addr: SocketAddr,
    user_id: String,
    api_key: String,
    log: PathBuf,
}

impl Service {
    fn start(exe: &Path, db: &Path, log: &Path) -> Result<Service, String> {
        // The API alone is measured: no checks of the seeded monitors beside it; the bulk form
        // creates as many again, past the default quota of 10,000.
        Service::start_with(
            exe,
            db,
            log,
            &["--roles", "api", "--max-monitors-per-user", "1000000"],
        )
    }

    /// `wachet serve` on `db` with the API's rate limit off and `extra` flags.
    pub(crate) fn start_with(
        exe: &Path,
        db: &Path,
        log: &Path,
        extra: &[&str],
    ) -> Result<Service, String> {
        Service::spawn(exe, db, log, extra, None)
    }

    /// `wachet serve` again on the database `earlier` made (it prints no key on a database
    /// with users), logging to `log`.
    pub(crate) fn start_again(
        exe: &Path,
        db: &Path,
        log: &Path,
        extra: &[&str],
        earlier: &Service,
    ) -> Result<Service, String> {
        let known = (earlier.user_id.clone(), earlier.api_key.clone());
        Service::spawn(exe, db, log, extra, Some(known))
    }

    /// `wachet serve` without the API (`extra` names its roles and a `--health-listen`): its
    /// address is that of its probes and metrics.
    pub(crate) fn start_worker(
        exe: &Path,
        db: &Path,
        log: &Path,
        extra: &[&str],
    ) -> Result<Service, String> {
        Service::spawn(exe, db, log, extra, Some((String::new(), String::new())))
    }

    /// Starts the process; `known` is the user id and API key of a database that has them
    /// (empty for a process without the API).
    fn spawn(
        exe: &Path,
        db: &Path,
        log: &Path,
        extra: &[&str],
        known: Option<(String, String)>,
    ) -> Result<Service, String> {
        let worker = known.as_ref().is_some_and(|(user, _)| user.is_empty());
        let log_file = std::fs::File::create(log).map_err(|e| e.to_string())?;
        let mut child = Command::new(exe)
            .args(["serve", "--listen", "127.0.0.1:0", "--rate-limit", "0"])
            .args(extra)
            .arg("--db")
            .arg(db)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log_file))
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        // The reader keeps draining stdout after the start, so later prints never block.
        let (lines, received) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
            {
                let _ = lines.send(line);
            }
        });
        let (user_id, api_key) = known.unwrap_or_default();
        let mut service = Service {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            user_id,
            api_key,
            log: log.to_path_buf(),
        };
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = match received.recv_timeout(left) {
                Ok(line) => line,
                Err(_) => {
                    return Err(format!(
                        "wachet serve did not say where it listens: {}",
                        service.log_tail()
                    ));
                }
            };
            if let Some(v) = line.strip_prefix("user id: ") {
                service.user_id = v.trim().to_string();
            } else if let Some(v) = line.strip_prefix("api key: ") {
                service.api_key = v.trim().to_string();
            } else if let Some(v) = line.strip_prefix("listening on http://").or_else(|| {
                line.strip_prefix("health probes on http://")
                    .filter(|_| worker)
            }) {
                service.addr = v
                    .trim()
                    .parse()
                    .map_err(|e| format!("bad address in {line:?}: {e}"))?;
                break;
            }
        }
        if !worker && (service.user_id.is_empty() || service.api_key.is_empty()) {
            return Err("wachet serve printed no user id or API key (was the db empty?)".into());
        }
        Ok(service)
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Kills the process with SIGKILL (no shutdown of any kind) and reaps it.
    pub(crate) fn kill_hard(&mut self) -> Result<(), String> {
        self.child.kill().map_err(|e| format!("kill -9: {e}"))?;
        self.child.wait().map_err(|e| format!("kill -9: {e}"))?;
        Ok(())
    }

    pub(crate) fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        // Quietly: a process killed before (`kill_hard`) is gone already.
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .stderr(Stdio::null())
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// VmRSS and VmHWM of process `pid`, in MiB.
pub(crate) fn memory_mb(pid: u32) -> (f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// CPU time (user + system) of process `pid`, with `children` also of its direct children
/// (nginx's worker), in seconds. /proc counts it in USER_HZ ticks, 100 a second on Linux.
pub(crate) fn cpu_seconds(pid: u32, children: bool) -> f64 {
    let ticks = |stat: &str| -> Option<(u32, u64)> {
        // Fields after the command name, which is in parentheses and may hold spaces.
        let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
        let ppid = fields.get(1)?.parse().ok()?;
        let utime: u64 = fields.get(11)?.parse().ok()?;
        let stime: u64 = fields.get(12)?.parse().ok()?;
        Some((ppid, utime + stime))
    };
    let mut total = 0;
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(this) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        if let Some((ppid, t)) = ticks(&stat)
            && (this == pid || (children && ppid == pid))
        {
            total += t;
        }
    }
    total as f64 / 100.0
}

// ---------------------------------------------------------------- the HTTP client

/// One keep-alive HTTP/1.1 connection (hyper's connection-level client).
pub(crate) struct Conn {
    sender: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
}

impl Conn {
    pub(crate) async fn connect(addr: SocketAddr) -> Result<Conn, String> {
        let stream = tokio::net::TcpStream::connect(addr)
            .await
            .map_err(|e| format!("connect {addr}: {e}"))?;
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| e.to_string())?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(Conn { sender })
    }

    /// Sends `request`; the status and the body's length (the body is read, not kept).
    async fn send_counting(
        &mut self,
        request: Request<Full<Bytes>>,
    ) -> Result<(StatusCode, usize), String> {
        self.sender.ready().await.map_err(|e| e.to_string())?;
        let response = self
            .sender
            .send_request(request)
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status();
        let mut body = response.into_body();
        let mut len = 0;
        while let Some(frame) = body.frame().await {
            if let Some(data) = frame.map_err(|e| e.to_string())?.data_ref() {
                len += data.len();
            }
        }
        Ok((status, len))
    }

    /// Sends `request`; the status and the body.
    pub(crate) async fn send(
        &mut self,
        request: Request<Full<Bytes>>,
    ) -> Result<(StatusCode, Bytes), String> {
        self.sender.ready().await.map_err(|e| e.to_string())?;
        let response = self
            .sender
            .send_request(request)
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        Ok((status, body))
    }
}

/// Where requests go and how they authenticate.
#[derive(Clone)]
pub(crate) struct Endpoint {
    pub(crate) addr: SocketAddr,
    host: HeaderValue,
    auth: Option<HeaderValue>,
}

impl Endpoint {
    pub(crate) fn new(addr: SocketAddr, token: Option<&str>) -> Result<Endpoint, String> {
        let auth = token
            .map(|t| HeaderValue::from_str(&format!("bearer {t}")).map_err(|e| e.to_string()))
            .transpose()?;
        Ok(Endpoint {
            addr,
            host: HeaderValue::from_str(&addr.to_string()).map_err(|e| e.to_string())?,
            auth,
        })
    }

    pub(crate) fn request(
        &self,
        method: Method,
        uri: Uri,
        body: Option<Bytes>,
    ) -> Request<Full<Bytes>> {
        let json = body.is_some();
        let mut request = Request::new(Full::new(body.unwrap_or_default()));
        *request.method_mut() = method;
        *request.uri_mut() = uri;
        let headers = request.headers_mut();
        headers.insert(HOST, self.host.clone());
        if let Some(auth) = &self.auth {
            headers.insert(AUTHORIZATION, auth.clone());
        }
        if json {
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        }
        request
    }

    /// A JSON call that must answer 200 with JSON (or an empty body, given as null).
    pub(crate) async fn call(
        &self,
        conn: &mut Conn,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, String> {
        let bytes = self.call_bytes(conn, method.clone(), path, body).await?;
        if bytes.is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_slice(&bytes).map_err(|e| format!("{method} {path}: {e}"))
    }

    /// [`Endpoint::call`]'s answer as the bytes the service sent (an `Err` unless 200 OK).
    pub(crate) async fn call_bytes(
        &self,
        conn: &mut Conn,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Bytes, String> {
        let uri: Uri = path.parse().map_err(|e| format!("{path}: {e}"))?;
        let body = body.map(|b| Bytes::from(b.to_string()));
        let (status, bytes) = conn.send(self.request(method.clone(), uri, body)).await?;
        if status != StatusCode::OK {
            return Err(format!(
                "{method} {path}: {status}: {}",
                String::from_utf8_lossy(&bytes)
            ));
        }
        Ok(bytes)
    }
}

/// One endpoint's figures over one measured window.
#[derive(Debug, Clone)]
pub(crate) struct Measurement {
    pub(crate) requests_per_sec: f64,
    /// CPU of the server process(es) per measured request, over the measured window.
    pub(crate) server_cpu_us: f64,
    /// CPU of this process (the load generator) per measured request.
    pub(crate) client_cpu_us: f64,
    p50_ms: f64,
    p99_ms: f64,
    requests: usize,
    errors: usize,
    body_bytes: usize,
}

#[derive(Default)]
struct WorkerStats {
    latencies_us: Vec<u32>,
    errors: usize,
    body_bytes: usize,
    first_error: Option<String>,
}

/// Loads `GET path` with `concurrency` connections: `warmup`, then `duration` measured.
/// Requests that start in the measured window and finish within it count.
pub(crate) async fn load(
    endpoint: &Endpoint,
    server_pid: u32,
    path: &str,
    concurrency: usize,
    warmup: Duration,
    duration: Duration,
) -> Result<Measurement, String> {
    let uri: Uri = path.parse().map_err(|e| format!("{path}: {e}"))?;
    let begin = Instant::now();
    let measured_from = begin + warmup;
    let end = measured_from + duration;
    let mut workers = Vec::with_capacity(concurrency);
    for _ in 0..concurrency {
        let endpoint = endpoint.clone();
        let uri = uri.clone();
        workers.push(tokio::spawn(async move {
            let mut stats = WorkerStats {
                latencies_us: Vec::with_capacity(1 << 16),
                ..WorkerStats::default()
            };
            let mut conn: Option<Conn> = None;
            while Instant::now() < end {
                let c = match conn.as_mut() {
                    Some(c) => c,
                    None => match Conn::connect(endpoint.addr).await {
                        Ok(c) => conn.insert(c),
                        Err(e) => {
                            stats.errors += 1;
                            stats.first_error.get_or_insert(e);
                            tokio::time::sleep(Duration::from_millis(10)).await;
                            continue;
                        }
                    },
                };
                let request = endpoint.request(Method::GET, uri.clone(), None);
                let started = Instant::now();
                let result = c.send_counting(request).await;
                let done = Instant::now();
                let counted = started >= measured_from && done <= end;
                match result {
                    Ok((StatusCode::OK, len)) if counted => {
                        let us = (done - started).as_micros();
                        stats
                            .latencies_us
                            .push(u32::try_from(us).unwrap_or(u32::MAX));
                        stats.body_bytes = len;
                    }
                    Ok((status, _)) if counted && status != StatusCode::OK => {
                        stats.errors += 1;
                        stats.first_error.get_or_insert(format!("status {status}"));
                    }
                    Ok(_) => {}
                    Err(e) => {
                        conn = None;
                        if counted {
                            stats.errors += 1;
                            stats.first_error.get_or_insert(e);
                        }
                    }
                }
            }
            stats
        }));
    }
    // CPU over the measured window, read by a task that wakes at its start and end.
    let cpu = tokio::spawn(async move {
        tokio::time::sleep_until(measured_from.into()).await;
        let me = std::process::id();
        let start = (cpu_seconds(server_pid, true), cpu_seconds(me, false));
        tokio::time::sleep_until(end.into()).await;
        let stop = (cpu_seconds(server_pid, true), cpu_seconds(me, false));
        (stop.0 - start.0, stop.1 - start.1)
    });
    let mut latencies = Vec::new();
    let mut errors = 0;
    let mut body_bytes = 0;
    let mut first_error = None;
    for worker in workers {
        let stats = worker.await.map_err(|e| e.to_string())?;
        latencies.extend(stats.latencies_us);
        errors += stats.errors;
        body_bytes = body_bytes.max(stats.body_bytes);
        first_error = first_error.or(stats.first_error);
    }
    if let Some(e) = first_error {
        eprintln!("  {errors} errors on {path}, the first: {e}");
    }
    let (server_cpu, client_cpu) = cpu.await.map_err(|e| e.to_string())?;
    let per_request = |cpu: f64| cpu * 1e6 / latencies.len().max(1) as f64;
    let (server_cpu_us, client_cpu_us) = (per_request(server_cpu), per_request(client_cpu));
    latencies.sort_unstable();
    let percentile = |p: usize| {
        if latencies.is_empty() {
            0.0
        } else {
            f64::from(latencies[(latencies.len() - 1) * p / 100]) / 1000.0
        }
    };
    Ok(Measurement {
        requests_per_sec: latencies.len() as f64 / duration.as_secs_f64(),
        server_cpu_us,
        client_cpu_us,
        p50_ms: percentile(50),
        p99_ms: percentile(99),
        requests: latencies.len(),
        errors,
        body_bytes,
    })
}

// ---------------------------------------------------------------- seeding

/// What the seeding made.
struct Seeded {
    folder: String,
    /// The monitor with the long history (the folder's first by name).
    history_task: String,
    /// Check time of the history entry `i` (0 the oldest).
    first_check: i64,
    api_seconds: f64,
    bulk_seconds: f64,
    sql_seconds: f64,
}

fn check_time(first: i64, i: usize) -> i64 {
    // One minute apart, with a few milliseconds of jitter that keep the order.
    first + i as i64 * CHECK_EVERY_MS + (i as i64 * 7_919) % 1_000
}

/// The id of a seeded entry: entries are numbered (server/migrations/sqlite/0004), in time order.
fn entry_id(n: usize) -> String {
    (n + 1).to_string()
}

/// The value of version `v` of the long-history monitor: about 300 bytes of page text.
fn history_value(v: usize) -> String {
    format!(
        "Acme Espresso Machine X-{}\nPrice: {}.{:02} EUR\nIn stock: {} units\nShips in {} days\n\
         Free returns within 30 days. Rated {}.{} out of 5 by {} customers.\n\
         Includes milk frother, two portafilters and a descaling kit.\n\
         Warranty: 2 years, extendable to 5 years at checkout.",
        v % 97,
        100 + v % 900,
        v % 100,
        v % 53,
        1 + v % 9,
        3 + v % 3,
        v % 10,
        1_000 + v
    )
}

pub(crate) async fn login(endpoint: &Endpoint, service: &Service) -> Result<String, String> {
    let mut conn = Conn::connect(endpoint.addr).await?;
    let body = json!({"userId": service.user_id, "apiKey": service.api_key});
    let answer = endpoint
        .call(
            &mut conn,
            Method::POST,
            &format!("{API}/user/apilogin"),
            Some(&body),
        )
        .await?;
    answer["token"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("apilogin answered no token: {answer}"))
}

/// Connections that create the monitors one `PUT /task` each (the creation rate's figure).
const CREATE_CONNECTIONS: usize = 8;
/// Monitors a `PUT /tasks` creates at once (the most it takes).
const BULK: usize = 1_000;

/// Creates a folder named `name` at the root; its id.
async fn create_folder(endpoint: &Endpoint, conn: &mut Conn, name: &str) -> Result<String, String> {
    let folder = endpoint
        .call(
            conn,
            Method::POST,
            &format!("{API}/folder"),
            Some(&json!({ "name": name })),
        )
        .await?;
    folder["id"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("folder answer without id: {folder}"))
}

/// Creates `monitors` more monitors with `PUT /tasks`, `BULK` a request, one connection: the
/// seconds it took. They go into a folder of their own, so the measured listing is unchanged.
async fn create_in_bulk(endpoint: &Endpoint, monitors: usize) -> Result<f64, String> {
    let mut conn = Conn::connect(endpoint.addr).await?;
    let folder = create_folder(endpoint, &mut conn, "bulk").await?;
    let began = Instant::now();
    let mut made = 0;
    while made < monitors {
        let batch: Vec<Value> = (made..monitors.min(made + BULK))
            .map(|n| {
                json!({
                    "name": format!("bulk {n:05}"),
                    "url": format!("https://shop.example.com/bulk/{n}"),
                    "folderId": folder,
                    "recurrenceInSeconds": 3600,
                })
            })
            .collect();
        let created = endpoint
            .call(
                &mut conn,
                Method::PUT,
                &format!("{API}/tasks"),
                Some(&Value::Array(batch)),
            )
            .await?;
        made += created
            .as_array()
            .map(Vec::len)
            .ok_or_else(|| format!("PUT /tasks answered no list: {created}"))?;
    }
    Ok(began.elapsed().as_secs_f64())
}

/// Creates the folder and its monitors through the API; the ids by monitor number.
async fn seed_through_api(
    endpoint: &Endpoint,
    monitors: usize,
    concurrency: usize,
) -> Result<(String, Vec<String>), String> {
    let mut conn = Conn::connect(endpoint.addr).await?;
    let folder = create_folder(endpoint, &mut conn, "bench").await?;
    let next = Arc::new(AtomicUsize::new(0));
    let ids = Arc::new(Mutex::new(vec![String::new(); monitors]));
    let mut workers = Vec::new();
    for _ in 0..concurrency.min(monitors) {
        let (endpoint, next, ids, folder) =
            (endpoint.clone(), next.clone(), ids.clone(), folder.clone());
        workers.push(tokio::spawn(async move {
            let mut conn = Conn::connect(endpoint.addr).await?;
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= monitors {
                    return Ok::<(), String>(());
                }
                let body = json!({
                    "name": format!("monitor {n:05}"),
                    "url": format!("https://shop.example.com/products/{n}"),
                    "folderId": folder,
                    "recurrenceInSeconds": 3600,
                });
                let created = endpoint
                    .call(&mut conn, Method::PUT, &format!("{API}/task"), Some(&body))
                    .await?;
                let id = created["id"]
                    .as_str()
                    .ok_or_else(|| format!("task answer without id: {created}"))?;
                ids.lock().unwrap_or_else(|e| e.into_inner())[n] = id.to_string();
            }
        }));
    }
    for worker in workers {
        worker.await.map_err(|e| e.to_string())??;
    }
    let ids = std::mem::take(&mut *ids.lock().unwrap_or_else(|e| e.into_inner()));
    Ok((folder, ids))
}

/// Writes the histories straight into the database (the service is running; WAL lets both
/// at the file) and checkpoints the WAL. Returns the check time of the oldest entry.
async fn seed_history(db: &Path, tasks: &[String], history: usize) -> Result<i64, String> {
    let sql = |e: sqlx::Error| format!("seeding the history: {e}");
    let mut conn = SqliteConnectOptions::new()
        .filename(db)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .busy_timeout(Duration::from_secs(30))
        .connect()
        .await
        .map_err(sql)?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_err(|e| e.to_string())?
        .as_millis() as i64;
    // The newest entry is a minute old.
    let first = now - history as i64 * CHECK_EVERY_MS;
    let rows = |n: usize, row: &str| vec![row; n].join(", ");
    let entries_sql: Arc<str> = format!(
        "INSERT INTO entries (id, task_id, page_id, checked_at, changed_at, content_hash, error) \
         VALUES {}",
        rows(ROWS_PER_INSERT, "(?, ?, NULL, ?, ?, ?, ?)")
    )
    .into();
    let contents_sql = |n: usize| -> Arc<str> {
        format!(
            "INSERT INTO contents (hash, codec, body) VALUES {} ON CONFLICT (hash) DO NOTHING",
            rows(n, "(?, 0, ?)")
        )
        .into()
    };
    let task = &tasks[0];
    let mut serial = 0usize;
    let mut last_id = String::new();
    let mut done = 0;
    while done < history {
        let mut tx = conn.begin().await.map_err(sql)?;
        let commit_end = (done + ROWS_PER_COMMIT).min(history);
        while done < commit_end {
            let n = ROWS_PER_INSERT.min(commit_end - done);
            // Values first: version v is new at entry 10 v (never a failed check).
            let versions: Vec<usize> = (done..done + n)
                .filter(|i| i % 10 == 0)
                .map(|i| i / 10)
                .collect();
            if !versions.is_empty() {
                let mut q = sqlx::query(AssertSqlSafe(contents_sql(versions.len())));
                for v in versions {
                    let value = history_value(v);
                    q = q
                        .bind(Sha256::digest(value.as_bytes()).to_vec())
                        .bind(value.into_bytes());
                }
                q.execute(&mut *tx).await.map_err(sql)?;
            }
            let statement = if n == ROWS_PER_INSERT {
                entries_sql.clone()
            } else {
                format!(
                    "INSERT INTO entries (id, task_id, page_id, checked_at, changed_at, \
                     content_hash, error) VALUES {}",
                    rows(n, "(?, ?, NULL, ?, ?, ?, ?)")
                )
                .into()
            };
            let mut q = sqlx::query(AssertSqlSafe(statement));
            for i in done..done + n {
                let at = check_time(first, i);
                let failed = i % 500 == 255 && i + 1 < history;
                let hash =
                    (!failed).then(|| Sha256::digest(history_value(i / 10).as_bytes()).to_vec());
                let error = failed.then_some("connection timed out after 30 s");
                last_id = entry_id(serial);
                serial += 1;
                q = q
                    .bind(last_id.clone())
                    .bind(task.clone())
                    .bind(at)
                    .bind(check_time(first, i / 10 * 10))
                    .bind(hash)
                    .bind(error);
            }
            q.execute(&mut *tx).await.map_err(sql)?;
            done += n;
        }
        tx.commit().await.map_err(sql)?;
    }
    let mut tx = conn.begin().await.map_err(sql)?;
    sqlx::query("UPDATE tasks SET latest_entry_id = ?, failed = 0 WHERE id = ?")
        .bind(&last_id)
        .bind(task)
        .execute(&mut *tx)
        .await
        .map_err(sql)?;
    // Every other monitor: one check a minute ago, with a value of its own.
    for (n, other) in tasks.iter().enumerate().skip(1) {
        let value = format!(
            "Product {n}\nPrice: {}.{:02} EUR\nIn stock",
            10 + n % 90,
            n % 100
        );
        let hash = Sha256::digest(value.as_bytes()).to_vec();
        sqlx::query("INSERT INTO contents (hash, codec, body) VALUES (?, 0, ?) ON CONFLICT (hash) DO NOTHING")
            .bind(&hash)
            .bind(value.into_bytes())
            .execute(&mut *tx)
            .await
            .map_err(sql)?;
        let at = now - CHECK_EVERY_MS;
        let id = entry_id(serial);
        serial += 1;
        sqlx::query(
            "INSERT INTO entries (id, task_id, page_id, checked_at, changed_at, content_hash, \
             error) VALUES (?, ?, NULL, ?, ?, ?, NULL)",
        )
        .bind(&id)
        .bind(other)
        .bind(at)
        .bind(at)
        .bind(&hash)
        .execute(&mut *tx)
        .await
        .map_err(sql)?;
        sqlx::query("UPDATE tasks SET latest_entry_id = ? WHERE id = ?")
            .bind(&id)
            .bind(other)
            .execute(&mut *tx)
            .await
            .map_err(sql)?;
    }
    tx.commit().await.map_err(sql)?;
    // Measure reads of the database file, not of a long WAL.
    sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
        .execute(&mut conn)
        .await
        .map_err(sql)?;
    conn.close().await.map_err(sql)?;
    Ok(first)
}

async fn seed(endpoint: &Endpoint, db: &Path, options: &ApiOptions) -> Result<Seeded, String> {
    let began = Instant::now();
    let (folder, tasks) = seed_through_api(endpoint, options.monitors, CREATE_CONNECTIONS).await?;
    let api_seconds = began.elapsed().as_secs_f64();
    eprintln!(
        "created 1 folder and {} monitors with PUT /task over {CREATE_CONNECTIONS} connections in \
         {api_seconds:.2} s ({:.0}/s)",
        tasks.len(),
        tasks.len() as f64 / api_seconds.max(1e-9)
    );
    let bulk_seconds = create_in_bulk(endpoint, options.monitors).await?;
    eprintln!(
        "created {} more with PUT /tasks ({BULK} a request, one connection) in {bulk_seconds:.2} s \
         ({:.0}/s)",
        options.monitors,
        options.monitors as f64 / bulk_seconds.max(1e-9)
    );
    let began = Instant::now();
    let first_check = seed_history(db, &tasks, options.history).await?;
    let sql_seconds = began.elapsed().as_secs_f64();
    eprintln!(
        "seeded {} history entries (and one for each other monitor) into the database in \
         {sql_seconds:.1} s",
        options.history
    );
    Ok(Seeded {
        folder,
        history_task: tasks[0].clone(),
        first_check,
        api_seconds,
        bulk_seconds,
        sql_seconds,
    })
}

// ---------------------------------------------------------------- the run

fn iso(millis: i64) -> String {
    chrono::DateTime::from_timestamp_millis(millis)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn millis_of(value: &Value) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(value.as_str()?)
        .ok()
        .map(|t| t.timestamp_millis())
}

/// The first and last check times of a history page.
fn page_span(page: &Value) -> Result<(usize, i64, i64), String> {
    let data = page["data"]
        .as_array()
        .ok_or_else(|| format!("history page without data: {page}"))?;
    let at = |i: usize| {
        data.get(i)
            .and_then(|d| millis_of(&d["lastCheckTimestamp"]))
            .ok_or_else(|| format!("history entry {i} without lastCheckTimestamp"))
    };
    Ok((data.len(), at(0)?, at(data.len().saturating_sub(1))?))
}

/// The four measured paths, checked once each; and the `GET /task/{id}` body.
struct Paths {
    task: String,
    folder: String,
    newest: String,
    deep: String,
    task_body: Bytes,
    /// The newest history page's body, served as the history pages' ceiling.
    history_body: Bytes,
    /// The folder listing's first page, served as the listing's ceiling.
    folder_body: Bytes,
}

async fn prepare_paths(
    endpoint: &Endpoint,
    seeded: &Seeded,
    options: &ApiOptions,
) -> Result<Paths, String> {
    let mut conn = Conn::connect(endpoint.addr).await?;
    let id = &seeded.history_task;
    let task = format!("{API}/task/{id}");
    let task_body = endpoint
        .call_bytes(&mut conn, Method::GET, &task, None)
        .await?;
    let monitor: Value = serde_json::from_slice(&task_body).map_err(|e| e.to_string())?;
    if monitor["data"]["raw"].as_str().is_none() {
        return Err(format!("GET {task} has no latest value: {monitor}"));
    }

    let folder = format!("{API}/folder/list?parentId={}", seeded.folder);
    let folder_body = endpoint
        .call_bytes(&mut conn, Method::GET, &folder, None)
        .await?;
    let listing: Value = serde_json::from_slice(&folder_body).map_err(|e| e.to_string())?;
    let listed = listing["tasks"].as_array().map_or(0, Vec::len);
    let paged = listing["continuationToken"].as_str().is_some();
    if listed == 0 || (options.monitors > listed && !paged) {
        return Err(format!(
            "GET {folder}: {listed} monitors and no continuation token"
        ));
    }
    eprintln!(
        "folder page: {listed} of {} monitors{}",
        options.monitors,
        if paged {
            ", with a continuation token"
        } else {
            ""
        }
    );

    let newest = format!("{API}/data/list/{id}");
    let history_body = endpoint
        .call_bytes(&mut conn, Method::GET, &newest, None)
        .await?;
    let page: Value = serde_json::from_slice(&history_body).map_err(|e| e.to_string())?;
    let (n, at, _) = page_span(&page)?;
    let newest_at = check_time(seeded.first_check, options.history - 1);
    if n != PAGE || at != newest_at {
        return Err(format!(
            "GET {newest}: {n} entries from {at}, expected {PAGE} from {newest_at}"
        ));
    }

    // A page that ends DEEP_FROM_OLDEST + PAGE entries from the oldest; its token opens the
    // page of entries DEEP_FROM_OLDEST - 1 down to DEEP_FROM_OLDEST - PAGE.
    let to = iso(check_time(seeded.first_check, DEEP_FROM_OLDEST + PAGE - 1));
    let first = endpoint
        .call(&mut conn, Method::GET, &format!("{newest}?to={to}"), None)
        .await?;
    let token = first["continuationToken"]
        .as_str()
        .ok_or_else(|| format!("GET {newest}?to={to} gave no continuation token"))?;
    let deep = format!("{newest}?continuationToken={token}");
    let page = endpoint.call(&mut conn, Method::GET, &deep, None).await?;
    let (n, at, oldest) = page_span(&page)?;
    let want = check_time(seeded.first_check, DEEP_FROM_OLDEST - 1);
    if n != PAGE || at != want {
        return Err(format!(
            "the deep page has {n} entries from {at}, expected {PAGE} from {want}"
        ));
    }
    eprintln!(
        "deep page: entries {} to {} of {} counted from the oldest ({} to {})",
        DEEP_FROM_OLDEST - PAGE + 1,
        DEEP_FROM_OLDEST,
        options.history,
        iso(oldest),
        iso(at)
    );
    Ok(Paths {
        task,
        folder,
        newest,
        deep,
        task_body,
        history_body,
        folder_body,
    })
}

/// The load average (1, 5, 15 minutes), for the record.
pub(crate) fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Other processes that use the CPU heavily (a build), by name, for a warning.
pub(crate) fn busy_builds() -> Vec<String> {
    let mut found = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in dir.flatten() {
        let comm = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
        let comm = comm.trim();
        if matches!(comm, "rustc" | "cc1" | "cc1plus" | "ld" | "clippy-driver") {
            found.push(format!("{comm} ({})", entry.file_name().to_string_lossy()));
        }
    }
    found
}

/// One row of the table and of the JSON line.
struct Row {
    key: &'static str,
    label: String,
    rounds: Vec<Measurement>,
}

impl Row {
    fn median(&self, f: impl Fn(&Measurement) -> f64) -> f64 {
        let mut values: Vec<f64> = self.rounds.iter().map(f).collect();
        median(&mut values)
    }

    fn rps(&self) -> f64 {
        self.median(|m| m.requests_per_sec)
    }

    fn p50(&self) -> f64 {
        self.median(|m| m.p50_ms)
    }

    fn p99(&self) -> f64 {
        self.median(|m| m.p99_ms)
    }

    fn server_cpu_us(&self) -> f64 {
        self.median(|m| m.server_cpu_us)
    }

    fn client_cpu_us(&self) -> f64 {
        self.median(|m| m.client_cpu_us)
    }

    fn errors(&self) -> usize {
        self.rounds.iter().map(|m| m.errors).sum()
    }

    fn body_bytes(&self) -> usize {
        self.rounds.iter().map(|m| m.body_bytes).max().unwrap_or(0)
    }

    fn json(&self) -> Value {
        json!({
            "endpoint": self.key,
            "requests_per_sec": round(self.rps(), 1),
            "p50_ms": round(self.p50(), 3),
            "p99_ms": round(self.p99(), 3),
            "server_cpu_us_per_req": round(self.server_cpu_us(), 1),
            "client_cpu_us_per_req": round(self.client_cpu_us(), 1),
            "errors": self.errors(),
            "requests": self.rounds.iter().map(|m| m.requests).sum::<usize>(),
            "body_bytes": self.body_bytes(),
        })
    }
}

fn round(x: f64, digits: i32) -> f64 {
    let scale = 10f64.powi(digits);
    (x * scale).round() / scale
}

/// The `wachet` binary: `given`, else the one beside this binary (target/release/wachet).
pub(crate) fn wachet_exe(given: Option<&Path>) -> Result<PathBuf, String> {
    let bench_exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let wachet = match given {
        Some(path) => path.to_path_buf(),
        None => bench_exe
            .parent()
            .ok_or("no directory of this binary")?
            .join("wachet"),
    };
    if !wachet.is_file() {
        return Err(format!(
            "{} is missing: build it first with `cargo build --release -p wachet-server` (or \
             pass --wachet PATH)",
            wachet.display()
        ));
    }
    if !wachet.to_string_lossy().contains("release") {
        eprintln!(
            "note: {} does not look like a release build",
            wachet.display()
        );
    }
    Ok(wachet)
}

/// `api`: seed, measure, print the table and one JSON line.
pub fn run(options: &ApiOptions) -> Result<(), String> {
    let wachet = wachet_exe(options.wachet.as_deref())?;
    let bench_exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let work = TempDir::new("wachet-bench-api").map_err(|e| e.to_string())?;
    let db = work.path().join("wachet.db");
    let service = Service::start(&wachet, &db, &work.path().join("serve.log"))?;
    eprintln!(
        "wachet serve (pid {}) on {}, database {}",
        service.pid(),
        service.addr,
        db.display()
    );
    let runtime = if options.client_threads == 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(options.client_threads)
            .enable_all()
            .build()
    }
    .map_err(|e| e.to_string())?;
    let result = runtime.block_on(measure_all(options, &service, &db, &bench_exe, work.path()));
    if result.is_err() {
        eprintln!("wachet serve's log:\n{}", service.log_tail());
    }
    drop(service);
    result
}

async fn measure_all(
    options: &ApiOptions,
    service: &Service,
    db: &Path,
    bench_exe: &Path,
    work: &Path,
) -> Result<(), String> {
    let token = login(&Endpoint::new(service.addr, None)?, service).await?;
    let api = Endpoint::new(service.addr, Some(&token))?;
    let seeded = seed(&api, db, options).await?;
    let paths = prepare_paths(&api, &seeded, options).await?;
    let db_mb = std::fs::metadata(db).map_or(0.0, |m| m.len() as f64 / 1048576.0);
    let (rss_seeded, hwm_seeded) = memory_mb(service.pid());

    // The ceilings: the GET /task/{id} body and the newest history page's as static files.
    let site = work.join("static");
    std::fs::create_dir_all(&site).map_err(|e| e.to_string())?;
    std::fs::write(site.join("index.html"), &paths.task_body).map_err(|e| e.to_string())?;
    std::fs::write(site.join("history.json"), &paths.history_body).map_err(|e| e.to_string())?;
    std::fs::write(site.join("folder.json"), &paths.folder_body).map_err(|e| e.to_string())?;
    let ceiling = StaticServer::start(&site, options.server, bench_exe)?;
    let ceiling_addr: SocketAddr = ceiling
        .start_url()
        .trim_start_matches("http://")
        .trim_end_matches("/index.html")
        .parse()
        .map_err(|e| format!("static server address: {e}"))?;
    let static_endpoint = Endpoint::new(ceiling_addr, None)?;

    let busy = busy_builds();
    if !busy.is_empty() {
        eprintln!(
            "warning: other CPU-heavy processes are running: {}",
            busy.join(", ")
        );
    }
    let load_before = load_average();
    let mut rows = vec![
        Row {
            key: "static_ceiling",
            label: "static file (ceiling)".into(),
            rounds: Vec::new(),
        },
        Row {
            key: "get_task",
            label: "GET /task/{id}".into(),
            rounds: Vec::new(),
        },
        Row {
            key: "folder_list",
            label: format!("GET /folder/list ({} monitors)", options.monitors),
            rounds: Vec::new(),
        },
        Row {
            key: "static_history_ceiling",
            label: "static file, history page (ceiling)".into(),
            rounds: Vec::new(),
        },
        Row {
            key: "data_newest",
            label: "GET /data/list/{id} newest page".into(),
            rounds: Vec::new(),
        },
        Row {
            key: "data_deep",
            label: "GET /data/list/{id} deep page".into(),
            rounds: Vec::new(),
        },
        Row {
            key: "static_folder_ceiling",
            label: "static file, folder page (ceiling)".into(),
            rounds: Vec::new(),
        },
    ];
    let (static_pid, service_pid) = (ceiling.pid(), service.pid());
    let targets: [(&Endpoint, u32, &str); 7] = [
        (&static_endpoint, static_pid, "/index.html"),
        (&api, service_pid, &paths.task),
        (&api, service_pid, &paths.folder),
        (&static_endpoint, static_pid, "/history.json"),
        (&api, service_pid, &paths.newest),
        (&api, service_pid, &paths.deep),
        (&static_endpoint, static_pid, "/folder.json"),
    ];
    for round in 0..options.rounds {
        for (row, (endpoint, pid, path)) in rows.iter_mut().zip(targets) {
            let m = load(
                endpoint,
                pid,
                path,
                options.concurrency,
                options.warmup,
                options.duration,
            )
            .await?;
            eprintln!(
                "round {}: {:<36} {:>7.0} req/s  p50 {:>8.3} ms  p99 {:>8.3} ms  {} errors; \
                 service VmRSS {:.1} MB",
                round + 1,
                row.label,
                m.requests_per_sec,
                m.p50_ms,
                m.p99_ms,
                m.errors,
                memory_mb(service_pid).0
            );
            row.rounds.push(m);
        }
    }
    let load_after = load_average();
    let (rss, hwm) = memory_mb(service.pid());

    let task_ratio = rows[1].rps() / rows[0].rps().max(1e-9);
    let folder_to_task = rows[2].rps() / rows[1].rps().max(1e-9);
    let folder_to_ceiling = rows[2].rps() / rows[6].rps().max(1e-9);
    let newest_ratio = rows[4].rps() / rows[3].rps().max(1e-9);
    let deep_to_ceiling = rows[5].rps() / rows[3].rps().max(1e-9);
    let deep_ratio = rows[5].rps() / rows[4].rps().max(1e-9);
    let deep_p50_ratio = rows[5].p50() / rows[4].p50().max(1e-9);
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!();
    println!(
        "wachet serve (release, rate limit off) with 1 folder of {} monitors, one of them with \
         {} history entries; SQLite {:.0} MB",
        options.monitors, options.history, db_mb
    );
    println!(
        "load: {} keep-alive HTTP/1.1 connections, {:.0} s warm-up + {:.0} s measured per \
         endpoint, {} round(s){}; client: hyper in this process on {} tokio thread(s)",
        options.concurrency,
        options.warmup.as_secs_f64(),
        options.duration.as_secs_f64(),
        options.rounds,
        if options.rounds > 1 { " (medians)" } else { "" },
        options.client_threads
    );
    println!(
        "machine: {cores} cores, shared by the load generator and the server (figures are \
         lower than a separate client machine would measure); load average before {load_before}, \
         after {load_after}"
    );
    println!("ceiling: {}", ceiling.description);
    println!();
    println!(
        "{:<36} {:>8} {:>9} {:>9} {:>6} {:>7} {:>11} {:>11}",
        "endpoint", "req/s", "p50 ms", "p99 ms", "errors", "body B", "server CPU", "client CPU"
    );
    for row in &rows {
        println!(
            "{:<36} {:>8.0} {:>9.3} {:>9.3} {:>6} {:>7} {:>8.0} us {:>8.0} us",
            row.label,
            row.rps(),
            row.p50(),
            row.p99(),
            row.errors(),
            row.body_bytes(),
            row.server_cpu_us(),
            row.client_cpu_us()
        );
    }
    println!("(CPU: user + system time per measured request, of the server and of this process)");
    println!();
    println!("GET /task/{{id}} / static ceiling: {task_ratio:.2}x req/s (target >= 0.6x)");
    println!(
        "GET /folder/list: {folder_to_task:.2}x GET /task/{{id}}'s req/s (target >= 0.5x), \
         {folder_to_ceiling:.2}x its own page as a static file"
    );
    println!(
        "history pages / their static ceiling: newest {newest_ratio:.2}x, deep \
         {deep_to_ceiling:.2}x req/s (target: 10,000 req/s and under 150 us of server CPU)"
    );
    println!(
        "deep page / newest page: {deep_ratio:.2}x req/s, p50 {deep_p50_ratio:.2}x (target: \
         within 20%)"
    );
    println!(
        "service memory after the runs: VmRSS {rss:.1} MB, VmHWM {hwm:.1} MB (target RSS < 60 \
         MB); after seeding, before the runs: VmRSS {rss_seeded:.1} MB, VmHWM {hwm_seeded:.1} MB"
    );
    let line = json!({
        "bench": "api",
        "monitors": options.monitors,
        "history": options.history,
        "concurrency": options.concurrency,
        "warmup_s": options.warmup.as_secs_f64(),
        "duration_s": options.duration.as_secs_f64(),
        "rounds": options.rounds,
        "client_threads": options.client_threads,
        "cores": cores,
        "ceiling_server": ceiling.description,
        "endpoints": rows.iter().map(Row::json).collect::<Vec<_>>(),
        "task_to_ceiling": round(task_ratio, 3),
        "folder_to_task": round(folder_to_task, 3),
        "folder_to_ceiling": round(folder_to_ceiling, 3),
        "newest_to_ceiling": round(newest_ratio, 3),
        "deep_to_ceiling": round(deep_to_ceiling, 3),
        "deep_to_newest_rps": round(deep_ratio, 3),
        "deep_to_newest_p50": round(deep_p50_ratio, 3),
        "rss_mb": round(rss, 1),
        "hwm_mb": round(hwm, 1),
        "rss_seeded_mb": round(rss_seeded, 1),
        "db_mb": round(db_mb, 1),
        "seed_api_s": round(seeded.api_seconds, 1),
        "bulk_create_s": round(seeded.bulk_seconds, 2),
        "seed_sql_s": round(seeded.sql_seconds, 1),
        "loadavg_before": load_before,
        "loadavg_after": load_after,
    });
    println!("{line}");
    Ok(())
}
