//! `scale`: the release `wachet serve` checking `--monitors` (10,000) monitors every
//! `--recurrence` (60) s, on SQLite with one process and on PostgreSQL with 1, 2 and 3 worker
//! processes (`--workers 1,2,3`), one configuration after the other in one run.
//!
//! The pages are `schedule`'s (nginx, or this process, on `--hosts` loopback addresses). The
//! PostgreSQL is a private cluster this bench starts from Debian's `initdb` and `postgres` on a
//! Unix socket in a temporary directory (as the `postgres` user when run as root), with its
//! default durability (fsync and synchronous commit on); each configuration gets a database of
//! its own. On PostgreSQL one `wachet serve --roles api` process creates the monitors and the
//! workers are `wachet serve --roles worker --health-listen 127.0.0.1:0`, each read through its
//! own `/metrics` on that listener. After `--warmup` (60 s) each configuration is measured for
//! `--duration` (150 s):
//! - checks per second (the sum of the processes' `wachet_checks_total`);
//! - lateness p50 and p99 (their lateness histograms added together, interpolated in buckets);
//! - CPU per check of the checking processes, and of PostgreSQL (the postmaster and every
//!   process under it, from /proc);
//! - database growth per 100,000 checks (the SQLite file and its WAL; `pg_database_size`).

use crate::api::{Endpoint, Service, busy_builds, cpu_seconds, load_average, login, wachet_exe};
use crate::harness::{ServerKind, TempDir};
use crate::schedule::{
    Pages, ScheduleOptions, Scrape, create_monitors, db_bytes, quantile, scrape,
};
use serde_json::json;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Options of `scale`.
#[derive(Debug, Clone)]
pub struct ScaleOptions {
    /// Monitors checked in each configuration.
    pub monitors: usize,
    /// Seconds between two checks of a monitor.
    pub recurrence: u32,
    /// Loopback hosts serving the pages.
    pub hosts: u8,
    /// Run before measuring, each configuration.
    pub warmup: Duration,
    /// Measured run, each configuration.
    pub duration: Duration,
    /// Worker processes of each PostgreSQL configuration.
    pub workers: Vec<usize>,
    /// Whether SQLite with one process runs first.
    pub sqlite: bool,
    /// The `wachet` binary (default: the one beside this binary).
    pub wachet: Option<PathBuf>,
    /// What serves the pages: nginx, or this process.
    pub server: ServerKind,
}

impl Default for ScaleOptions {
    fn default() -> Self {
        ScaleOptions {
            monitors: 10_000,
            recurrence: 60,
            // The engine's 10 requests a second per host: 17 hosts at the least for 166.7/s.
            hosts: 20,
            warmup: Duration::from_secs(60),
            duration: Duration::from_secs(150),
            workers: vec![1, 2, 3],
            sqlite: true,
            wachet: None,
            server: ServerKind::Auto,
        }
    }
}

impl ScaleOptions {
    /// Parses `--monitors N --recurrence S --hosts H --warmup S --duration S --workers 1,2,3
    /// --sqlite 0|1 --wachet PATH --server nginx|rust|auto`.
    pub fn parse(args: &[String]) -> Option<ScaleOptions> {
        let mut o = ScaleOptions::default();
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            let value = it.next()?;
            match flag.as_str() {
                "--monitors" => o.monitors = value.parse().ok()?,
                "--recurrence" => o.recurrence = value.parse().ok()?,
                "--hosts" => o.hosts = value.parse().ok()?,
                "--warmup" => o.warmup = Duration::from_secs_f64(value.parse().ok()?),
                "--duration" => o.duration = Duration::from_secs_f64(value.parse().ok()?),
                "--workers" => {
                    o.workers = value
                        .split(',')
                        .filter(|w| !w.is_empty())
                        .map(|w| w.parse().ok())
                        .collect::<Option<Vec<usize>>>()?;
                }
                "--sqlite" => o.sqlite = value != "0",
                "--wachet" => o.wachet = Some(PathBuf::from(value)),
                "--server" => o.server = ServerKind::parse(value)?,
                _ => return None,
            }
        }
        let valid = o.monitors > 0
            && o.recurrence > 0
            && o.hosts > 0
            && o.hosts < 250
            && !o.duration.is_zero()
            && o.workers.iter().all(|&w| (1..=16).contains(&w))
            && (o.sqlite || !o.workers.is_empty());
        valid.then_some(o)
    }
}

// ---------------------------------------------------------------- the PostgreSQL cluster

/// Longest initdb and the server's start may take.
const PG_START: Duration = Duration::from_secs(60);

/// A private PostgreSQL cluster on a Unix socket; stopped (fast shutdown) and removed on drop.
struct Cluster {
    dir: TempDir,
    bin: PathBuf,
    server: Child,
}

/// The directory of `initdb` and `postgres`: on `PATH`, else Debian's newest
/// `/usr/lib/postgresql/<version>/bin`.
fn pg_binaries() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            if dir.join("initdb").is_file() && dir.join("postgres").is_file() {
                return Ok(dir);
            }
        }
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .map_err(|_| "PostgreSQL is not installed (apt-get install postgresql)".to_string())?
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let version = entry.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").is_file().then_some((version, bin))
        })
        .collect();
    found.sort();
    found
        .pop()
        .map(|(_, bin)| bin)
        .ok_or_else(|| "no /usr/lib/postgresql/*/bin/initdb".to_string())
}

/// The numeric id of `what` (`-u` or `-g`) of user `user`, from `id`.
fn id_of(what: &str, user: &str) -> Result<u32, String> {
    let out = Command::new("id")
        .args([what, user])
        .output()
        .map_err(|e| format!("id: {e}"))?;
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .map_err(|_| format!("no user {user} to run PostgreSQL as (root cannot)"))
}

impl Cluster {
    fn start() -> Result<Cluster, String> {
        let bin = pg_binaries()?;
        let dir = TempDir::new("wachet-bench-pg").map_err(|e| e.to_string())?;
        // PostgreSQL refuses to run as root: as the package's `postgres` user then.
        let owner = if is_root() {
            let owner = (id_of("-u", "postgres")?, id_of("-g", "postgres")?);
            let status = Command::new("chown")
                .arg(format!("{}:{}", owner.0, owner.1))
                .arg(dir.path())
                .status()
                .map_err(|e| format!("chown: {e}"))?;
            if !status.success() {
                return Err(format!("cannot give {} to postgres", dir.path().display()));
            }
            Some(owner)
        } else {
            None
        };
        let as_owner = |command: &mut Command| {
            use std::os::unix::process::CommandExt;
            if let Some((uid, gid)) = owner {
                command.uid(uid).gid(gid);
            }
        };
        let data = dir.path().join("data");
        let mut initdb = Command::new(bin.join("initdb"));
        initdb
            .arg("-D")
            .arg(&data)
            .args(["-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C"])
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        as_owner(&mut initdb);
        let out = initdb.output().map_err(|e| format!("initdb: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "initdb failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let log =
            std::fs::File::create(dir.path().join("server.log")).map_err(|e| e.to_string())?;
        let mut postgres = Command::new(bin.join("postgres"));
        postgres
            .arg("-D")
            .arg(&data)
            .arg("-k")
            .arg(dir.path())
            .args(["-c", "listen_addresses=", "-c", "max_connections=300"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(log));
        as_owner(&mut postgres);
        let server = postgres.spawn().map_err(|e| format!("postgres: {e}"))?;
        let cluster = Cluster { dir, bin, server };
        let deadline = Instant::now() + PG_START;
        loop {
            // Line 8 of postmaster.pid says "ready" once connections are accepted.
            let ready = std::fs::read_to_string(data.join("postmaster.pid"))
                .ok()
                .is_some_and(|pid| pid.lines().nth(7).is_some_and(|s| s.trim() == "ready"));
            if ready {
                return Ok(cluster);
            }
            if Instant::now() > deadline {
                let log = std::fs::read_to_string(cluster.dir.path().join("server.log"))
                    .unwrap_or_default();
                return Err(format!("postgres was not ready in time: {log}"));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn url(&self, database: &str) -> String {
        format!(
            "postgres://postgres@localhost/{database}?host={}",
            self.dir.path().display()
        )
    }

    /// Runs `sql` with psql on database `postgres`; what it prints, unaligned.
    fn psql(&self, sql: &str) -> Result<String, String> {
        // Beside initdb, or on PATH (a PATH may link initdb and postgres alone).
        let beside = self.bin.join("psql");
        let exe = if beside.is_file() {
            beside
        } else {
            PathBuf::from("psql")
        };
        let mut psql = Command::new(exe);
        psql.arg("-h")
            .arg(self.dir.path())
            .args(["-U", "postgres", "-d", "postgres", "-At", "-c", sql]);
        let out = psql.output().map_err(|e| format!("psql: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "psql {sql}: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    fn database_bytes(&self, database: &str) -> Result<u64, String> {
        self.psql(&format!("SELECT pg_database_size('{database}')"))?
            .parse()
            .map_err(|e| format!("pg_database_size: {e}"))
    }

    fn pid(&self) -> u32 {
        self.server.id()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // SIGINT: PostgreSQL's fast shutdown.
        let _ = Command::new("kill")
            .arg("-INT")
            .arg(self.server.id().to_string())
            .status();
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.server.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|v| v.split_whitespace().nth(1).map(|e| e == "0"))
        })
        .unwrap_or(false)
}

/// CPU seconds of `root` and every process under it, and of its children that ended (the
/// cumulative fields of its own stat).
fn tree_cpu_seconds(root: u32) -> f64 {
    let mut parents = std::collections::HashMap::new();
    let mut ticks = std::collections::HashMap::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let field = |i: usize| -> u64 { fields.get(i).and_then(|v| v.parse().ok()).unwrap_or(0) };
        parents.insert(pid, field(1) as u32);
        let own = field(11) + field(12);
        let reaped = if pid == root {
            field(13) + field(14)
        } else {
            0
        };
        ticks.insert(pid, own + reaped);
    }
    let under = |mut pid: u32| {
        for _ in 0..64 {
            if pid == root {
                return true;
            }
            match parents.get(&pid) {
                Some(&parent) if parent > 1 => pid = parent,
                _ => return false,
            }
        }
        false
    };
    ticks
        .iter()
        .filter(|(pid, _)| under(**pid))
        .map(|(_, t)| *t)
        .sum::<u64>() as f64
        / 100.0
}

// ---------------------------------------------------------------- one configuration

/// One configuration's figures.
struct Figures {
    label: String,
    checks_per_s: f64,
    failed: u64,
    p50: f64,
    p99: f64,
    cpu_ms: f64,
    pg_cpu_ms: Option<f64>,
    growth_mb: f64,
}

/// The checking processes' `/metrics` added together.
async fn scrape_all(endpoints: &[Endpoint]) -> Result<Scrape, String> {
    let mut sum = Scrape::default();
    for endpoint in endpoints {
        let one = scrape(endpoint).await?;
        sum.checks += one.checks;
        sum.failed += one.failed;
        if sum.lateness.is_empty() {
            sum.lateness = one.lateness;
        } else {
            for (bucket, (_, n)) in sum.lateness.iter_mut().zip(one.lateness) {
                bucket.1 += n;
            }
        }
    }
    Ok(sum)
}

/// Warms up, measures, and says what it measured. `database` is the PostgreSQL database, or
/// `None` on SQLite (`sqlite` its file).
async fn measure(
    label: String,
    options: &ScaleOptions,
    checking: &[&Service],
    cluster: Option<(&Cluster, &str)>,
    sqlite: Option<&Path>,
) -> Result<Figures, String> {
    let endpoints = checking
        .iter()
        .map(|s| Endpoint::new(s.addr, None))
        .collect::<Result<Vec<_>, _>>()?;
    eprintln!("{label}: warming up for {} s", options.warmup.as_secs());
    tokio::time::sleep(options.warmup).await;
    let bytes = || -> Result<u64, String> {
        match (cluster, sqlite) {
            (Some((c, db)), _) => c.database_bytes(db),
            (None, Some(file)) => Ok(db_bytes(file)),
            (None, None) => Ok(0),
        }
    };
    let cpu = || {
        checking
            .iter()
            .map(|s| cpu_seconds(s.pid(), false))
            .sum::<f64>()
    };
    let pg_cpu = || cluster.map(|(c, _)| tree_cpu_seconds(c.pid()));
    let start = scrape_all(&endpoints).await?;
    let (cpu0, pg0, bytes0) = (cpu(), pg_cpu(), bytes()?);
    let began = Instant::now();
    eprintln!("{label}: measuring for {} s", options.duration.as_secs());
    tokio::time::sleep(options.duration).await;
    let seconds = began.elapsed().as_secs_f64();
    let end = scrape_all(&endpoints).await?;
    let (cpu1, pg1, bytes1) = (cpu(), pg_cpu(), bytes()?);
    let checks = end.checks.saturating_sub(start.checks);
    if checks == 0 {
        return Err(format!("{label}: no checks in the measured window"));
    }
    let per_check = |s: f64| s * 1e3 / checks as f64;
    Ok(Figures {
        label,
        checks_per_s: checks as f64 / seconds,
        failed: end.failed.saturating_sub(start.failed),
        p50: quantile(&start.lateness, &end.lateness, 0.5).unwrap_or(f64::NAN),
        p99: quantile(&start.lateness, &end.lateness, 0.99).unwrap_or(f64::NAN),
        cpu_ms: per_check(cpu1 - cpu0),
        pg_cpu_ms: pg0.zip(pg1).map(|(a, b)| per_check(b - a)),
        growth_mb: (bytes1 as f64 - bytes0 as f64) / checks as f64 * 100_000.0 / 1e6,
    })
}

/// Flags of every checking process.
fn check_flags(options: &ScaleOptions) -> Vec<String> {
    vec![
        "--allow-private-networks".into(),
        "--min-recurrence".into(),
        "1".into(),
        "--max-monitors-per-user".into(),
        options.monitors.to_string(),
    ]
}

async fn create(
    service: &Service,
    addrs: &[SocketAddr],
    options: &ScaleOptions,
) -> Result<(), String> {
    let anonymous = Endpoint::new(service.addr, None)?;
    let token = login(&anonymous, service).await?;
    let endpoint = Endpoint::new(service.addr, Some(&token))?;
    let schedule = ScheduleOptions {
        monitors: options.monitors,
        recurrence: options.recurrence,
        ..ScheduleOptions::default()
    };
    let began = Instant::now();
    create_monitors(&endpoint, addrs, &schedule).await?;
    eprintln!(
        "created {} monitors in {:.1} s",
        options.monitors,
        began.elapsed().as_secs_f64()
    );
    Ok(())
}

async fn sqlite_one_process(
    wachet: &Path,
    work: &Path,
    addrs: &[SocketAddr],
    options: &ScaleOptions,
) -> Result<Figures, String> {
    let db = work.join("scale.db");
    let flags = check_flags(options);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let service = Service::start_with(wachet, &db, &work.join("sqlite.log"), &flags)?;
    create(&service, addrs, options).await?;
    measure(
        "SQLite, 1 process".into(),
        options,
        &[&service],
        None,
        Some(&db),
    )
    .await
}

async fn postgres_workers(
    wachet: &Path,
    work: &Path,
    cluster: &Cluster,
    addrs: &[SocketAddr],
    options: &ScaleOptions,
    workers: usize,
) -> Result<Figures, String> {
    let database = format!("scale_{workers}");
    cluster.psql(&format!("CREATE DATABASE {database}"))?;
    let url = cluster.url(&database);
    let db = Path::new(&url);
    let common = check_flags(options);
    let mut api_flags: Vec<&str> = common.iter().map(String::as_str).collect();
    api_flags.extend(["--roles", "api"]);
    let api = Service::start_with(
        wachet,
        db,
        &work.join(format!("api-{workers}.log")),
        &api_flags,
    )?;
    create(&api, addrs, options).await?;
    let mut worker_flags: Vec<&str> = common.iter().map(String::as_str).collect();
    worker_flags.extend(["--roles", "worker", "--health-listen", "127.0.0.1:0"]);
    let mut started = Vec::new();
    for w in 0..workers {
        let log = work.join(format!("worker-{workers}-{w}.log"));
        started.push(Service::start_worker(wachet, db, &log, &worker_flags)?);
    }
    let checking: Vec<&Service> = started.iter().collect();
    let figures = measure(
        format!(
            "PostgreSQL, {workers} worker{}",
            if workers == 1 { "" } else { "s" }
        ),
        options,
        &checking,
        Some((cluster, &database)),
        None,
    )
    .await;
    drop(started);
    drop(api);
    figures
}

/// `scale`: every configuration in turn, then the table and one JSON line.
pub fn run(options: &ScaleOptions) -> Result<(), String> {
    let wachet = wachet_exe(options.wachet.as_deref())?;
    let work = TempDir::new("wachet-bench-scale").map_err(|e| e.to_string())?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let (pages, addrs) = Pages::start(options.server, options.hosts, options.monitors).await?;
        eprintln!(
            "pages of {} monitors on {} hosts from {}",
            options.monitors,
            addrs.len(),
            pages.description()
        );
        let load_before = load_average();
        let mut all = Vec::new();
        if options.sqlite {
            all.push(sqlite_one_process(&wachet, work.path(), &addrs, options).await?);
        }
        if !options.workers.is_empty() {
            let cluster = Cluster::start()?;
            for &workers in &options.workers {
                let figures =
                    postgres_workers(&wachet, work.path(), &cluster, &addrs, options, workers)
                        .await?;
                all.push(figures);
            }
        }
        println!(
            "{} monitors every {} s (planned {:.1} checks/s) on {} hosts ({}); {} s measured \
             after {} s of warm-up each; load {} before, {} after",
            options.monitors,
            options.recurrence,
            options.monitors as f64 / f64::from(options.recurrence),
            addrs.len(),
            pages.description(),
            options.duration.as_secs(),
            options.warmup.as_secs(),
            load_before,
            load_average()
        );
        println!(
            "| configuration | checks/s | failed | lateness p50 / p99 (s) | CPU a check, wachet \
             (ms) | CPU a check, PostgreSQL (ms) | database growth / 100k checks (MB) |"
        );
        println!("|---|---|---|---|---|---|---|");
        for f in &all {
            println!(
                "| {} | {:.1} | {} | {:.3} / {:.3} | {:.3} | {} | {:.1} |",
                f.label,
                f.checks_per_s,
                f.failed,
                f.p50,
                f.p99,
                f.cpu_ms,
                f.pg_cpu_ms.map_or("-".into(), |c| format!("{c:.3}")),
                f.growth_mb
            );
        }
        let builds = busy_builds();
        if !builds.is_empty() {
            println!(
                "note: builds were running beside the bench: {}",
                builds.join(", ")
            );
        }
        let rows: Vec<serde_json::Value> = all
            .iter()
            .map(|f| {
                json!({
                    "configuration": f.label,
                    "checks_per_s": f.checks_per_s,
                    "failed": f.failed,
                    "lateness_p50_s": f.p50,
                    "lateness_p99_s": f.p99,
                    "cpu_ms_per_check": f.cpu_ms,
                    "postgres_cpu_ms_per_check": f.pg_cpu_ms,
                    "db_growth_mb_per_100k_checks": f.growth_mb,
                })
            })
            .collect();
        println!(
            "{}",
            json!({"bench": "scale", "monitors": options.monitors, "recurrence_s": options.recurrence, "runs": rows})
        );
        Ok(())
    })
}
