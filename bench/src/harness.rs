//! The crawlers, the static server process and the `compare` driver.

use crate::site;
use futures::StreamExt;
use std::io::{BufRead, Read};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Hops both crawlers follow from the start page.
pub const DEPTH: u32 = site::DEPTH;
/// Longest a crawl child may run in `compare` before it is killed.
const CRAWL_TIMEOUT: Duration = Duration::from_secs(600);

/// Which crawler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Crawler {
    /// This project.
    Wachet,
    /// spider-rs.
    Spider,
}

impl Crawler {
    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Crawler::Wachet => "wachet",
            Crawler::Spider => "spider",
        }
    }

    /// Its `wachet-bench` mode.
    pub fn mode(self) -> &'static str {
        match self {
            Crawler::Wachet => "crawl-wachet",
            Crawler::Spider => "crawl-spider",
        }
    }

    /// Crawls from `url` (depth 3, no xPath, no rate limit) and returns the pages crawled.
    pub async fn crawl(
        self,
        url: &str,
        max_pages: usize,
        concurrency: usize,
    ) -> Result<usize, String> {
        match self {
            Crawler::Wachet => crawl_wachet(url, max_pages, concurrency).await,
            Crawler::Spider => Ok(crawl_spider(url, max_pages, concurrency).await),
        }
    }
}

/// The wachet engine a benchmark crawl uses: loopback allowed, no per-host limits.
pub fn wachet_engine(max_pages: usize, concurrency: usize) -> Result<wachet::Engine, String> {
    wachet::Engine::builder()
        .allow_private_networks(true)
        .max_pages(max_pages)
        .crawl_concurrency(concurrency)
        .per_host_rps(0)
        .per_host_concurrency(0)
        .build()
        .map_err(|e| e.to_string())
}

/// A Portal monitor of depth 3 and no xPath.
pub fn wachet_monitor(url: &str) -> wachet::Monitor {
    let mut monitor = wachet::Monitor::new(url);
    monitor.job_type = wachet::model::ClientJobType::Portal;
    monitor.crawling_depth = Some(DEPTH as i32);
    monitor
}

/// Crawls with wachet; returns the pages finished without error.
pub async fn crawl_wachet(
    url: &str,
    max_pages: usize,
    concurrency: usize,
) -> Result<usize, String> {
    let engine = wachet_engine(max_pages, concurrency)?;
    let monitor = wachet_monitor(url);
    let mut stream = engine.crawl(&monitor).map_err(|e| e.to_string())?;
    let mut summary = None;
    // WACHET_BENCH_PROGRESS=1 prints the counts once a second to stderr.
    let verbose = std::env::var_os("WACHET_BENCH_PROGRESS").is_some();
    let began = Instant::now();
    let mut next_report = Duration::from_secs(1);
    while let Some(event) = stream.next().await {
        match event {
            wachet::CrawlEvent::Finished(s) => summary = Some(s),
            wachet::CrawlEvent::Page { page, progress }
                if verbose && began.elapsed() >= next_report =>
            {
                next_report += Duration::from_secs(1);
                eprintln!(
                    "{:>5.1} s: {} done, {} queued, {} failed, depth {}, peak RSS {:.1} MB",
                    began.elapsed().as_secs_f64(),
                    progress.done,
                    progress.queued,
                    progress.failed,
                    page.depth,
                    peak_rss_mb()
                );
            }
            _ => {}
        }
    }
    let summary = summary.ok_or("the crawl ended without a summary")?;
    if summary.progress.failed > 0 {
        eprintln!("wachet: {} pages failed", summary.progress.failed);
    }
    Ok(summary.progress.done - summary.progress.failed)
}

/// The spider website a benchmark crawl uses: robots.txt ignored, no delay, `concurrency`
/// requests at once, a page budget of `max_pages` and depth 3 (spider counts depth in URL path
/// segments, not hops; every page of the site is at most two segments deep).
pub fn spider_website(url: &str, max_pages: usize, concurrency: usize) -> spider::website::Website {
    let mut website = spider::website::Website::new(url);
    website
        .with_depth(DEPTH as usize)
        .with_limit(u32::try_from(max_pages).unwrap_or(u32::MAX))
        .with_concurrency_limit(Some(concurrency))
        .with_respect_robots_txt(false)
        .with_delay(0)
        .with_subdomains(false)
        .with_tld(false);
    website
}

/// Crawls with spider; returns the pages visited.
pub async fn crawl_spider(url: &str, max_pages: usize, concurrency: usize) -> usize {
    let mut website = spider_website(url, max_pages, concurrency);
    website.crawl().await;
    website.get_size().await
}

/// CPU time (user + system) of this process so far, every thread's including those that ended,
/// in seconds (`CLOCK_PROCESS_CPUTIME_ID`: nanoseconds, where `/proc/self/stat` counts 10 ms
/// ticks); 0 should the clock be missing.
pub fn process_cpu_seconds() -> f64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec, which `now` is, and reads nothing else.
    let read = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut now) };
    if read != 0 {
        return 0.0;
    }
    now.tv_sec as f64 + now.tv_nsec as f64 / 1e9
}

/// This process's peak resident set (VmHWM) in MB (MiB), or 0 where /proc is missing.
pub fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// One crawl's result.
#[derive(Debug, Clone)]
pub struct CrawlResult {
    /// Which crawler.
    pub crawler: String,
    /// Pages crawled.
    pub pages: usize,
    /// Wall time of the crawl.
    pub seconds: f64,
    /// Pages per second.
    pub pages_per_sec: f64,
    /// Peak RSS of the crawling process (MiB).
    pub peak_rss_mb: f64,
    /// CPU (user + system) of the crawling process over the crawl, in seconds.
    pub cpu_seconds: f64,
    /// CPU of the static server while it ran (set by `compare`; 10 ms ticks), in seconds.
    pub server_cpu_seconds: f64,
}

impl CrawlResult {
    fn to_json(&self) -> String {
        serde_json::json!({
            "crawler": self.crawler,
            "pages": self.pages,
            "seconds": self.seconds,
            "pages_per_sec": self.pages_per_sec,
            "peak_rss_mb": self.peak_rss_mb,
            "cpu_seconds": self.cpu_seconds,
        })
        .to_string()
    }

    fn from_json(line: &str) -> Option<CrawlResult> {
        let v: serde_json::Value = serde_json::from_str(line).ok()?;
        Some(CrawlResult {
            crawler: v["crawler"].as_str()?.to_string(),
            pages: usize::try_from(v["pages"].as_u64()?).ok()?,
            seconds: v["seconds"].as_f64()?,
            pages_per_sec: v["pages_per_sec"].as_f64()?,
            peak_rss_mb: v["peak_rss_mb"].as_f64()?,
            cpu_seconds: v["cpu_seconds"].as_f64().unwrap_or(0.0),
            server_cpu_seconds: 0.0,
        })
    }
}

/// The tokio runtime both crawlers run on: multi-threaded, one worker per core (the default).
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
}

/// `crawl-wachet` / `crawl-spider`: one crawl, one JSON line on stdout.
pub fn crawl_and_report(
    crawler: Crawler,
    url: &str,
    max_pages: usize,
    concurrency: usize,
) -> Result<(), String> {
    let rt = runtime().map_err(|e| e.to_string())?;
    // The crawl runs as a task of the runtime, as a service's crawl would, not on the
    // thread that waits for it: every page's event would otherwise wake that thread.
    let (url_owned, began, cpu_before) = (url.to_string(), Instant::now(), process_cpu_seconds());
    let pages = rt
        .block_on(rt.spawn(async move { crawler.crawl(&url_owned, max_pages, concurrency).await }))
        .map_err(|e| format!("the crawl task failed: {e}"))??;
    let seconds = began.elapsed().as_secs_f64();
    let cpu_seconds = process_cpu_seconds() - cpu_before;
    drop(rt);
    let result = CrawlResult {
        crawler: crawler.name().to_string(),
        pages,
        seconds,
        pages_per_sec: pages as f64 / seconds.max(1e-9),
        peak_rss_mb: peak_rss_mb(),
        cpu_seconds,
        server_cpu_seconds: 0.0,
    };
    println!("{}", result.to_json());
    Ok(())
}

/// `serve DIR PORT`: the Rust fallback static server, for machines without nginx. It serves
/// the files below `dir` on 127.0.0.1:`port` with axum (the stack of
/// `wachet::testing::FixtureServer`, which binds only a free port and records every request),
/// reading each file per request as a static server would.
pub fn serve(dir: PathBuf, port: u16) -> Result<(), String> {
    use axum::extract::{Request, State};
    use axum::http::{StatusCode, header};
    use axum::response::{IntoResponse, Response};
    use std::sync::Arc;

    async fn file(State(root): State<Arc<PathBuf>>, request: Request) -> Response {
        let path = request.uri().path();
        let relative = match path.trim_start_matches('/') {
            "" => "index.html",
            p => p,
        };
        let safe = Path::new(relative)
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
        let body = if safe {
            tokio::fs::read(root.join(relative)).await.ok()
        } else {
            None
        };
        match body {
            Some(body) => {
                let html = relative.ends_with(".html");
                let ct = if html {
                    "text/html"
                } else {
                    "application/octet-stream"
                };
                ([(header::CONTENT_TYPE, ct)], body).into_response()
            }
            None => (StatusCode::NOT_FOUND, "not found").into_response(),
        }
    }

    let rt = runtime().map_err(|e| e.to_string())?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, port))
            .await
            .map_err(|e| format!("cannot listen on 127.0.0.1:{port}: {e}"))?;
        eprintln!("serving {} on 127.0.0.1:{port}", dir.display());
        let app = axum::Router::new().fallback(file).with_state(Arc::new(dir));
        axum::serve(listener, app).await.map_err(|e| e.to_string())
    })
}

/// A directory removed on drop.
#[derive(Debug)]
pub struct TempDir(PathBuf);

impl TempDir {
    /// A new empty directory below the system temp dir.
    pub fn new(prefix: &str) -> std::io::Result<TempDir> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let path = std::env::temp_dir().join(format!("{prefix}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&path)?;
        Ok(TempDir(path))
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Which static server to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerKind {
    /// nginx if installed, else the Rust server.
    Auto,
    /// nginx.
    Nginx,
    /// `wachet-bench serve`.
    Rust,
}

impl ServerKind {
    /// `nginx`, `rust` or `auto`, as the benches' `--server` takes it.
    pub fn parse(value: &str) -> Option<ServerKind> {
        match value {
            "nginx" => Some(ServerKind::Nginx),
            "rust" => Some(ServerKind::Rust),
            "auto" => Some(ServerKind::Auto),
            _ => None,
        }
    }
}

/// A static server in a separate process (so its memory is not the crawler's); killed on drop.
#[derive(Debug)]
pub struct StaticServer {
    child: Child,
    port: u16,
    /// "nginx/1.22.1 ..." or "wachet-bench serve ...".
    pub description: String,
    _conf: Option<TempDir>,
}

impl StaticServer {
    /// Serves `root` on a free loopback port. `bench_exe` is the `wachet-bench` binary, for the
    /// Rust fallback.
    pub fn start(root: &Path, kind: ServerKind, bench_exe: &Path) -> Result<StaticServer, String> {
        let nginx = find_nginx();
        let server = match (kind, nginx) {
            (ServerKind::Nginx, None) => return Err("nginx is not installed".into()),
            (ServerKind::Nginx | ServerKind::Auto, Some(nginx)) => {
                start_nginx(&nginx, root, &[Ipv4Addr::LOCALHOST])?
            }
            (ServerKind::Rust, _) | (ServerKind::Auto, None) => {
                let port = free_port()?;
                let child = Command::new(bench_exe)
                    .arg("serve")
                    .arg(root)
                    .arg(port.to_string())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .map_err(|e| format!("cannot start {}: {e}", bench_exe.display()))?;
                StaticServer {
                    child,
                    port,
                    description: "wachet-bench serve (axum, 2 threads)".into(),
                    _conf: None,
                }
            }
        };
        let mut server = server;
        server.wait_ready()?;
        Ok(server)
    }

    /// nginx serving `root` on one port of each of `hosts` (loopback addresses): the pages of
    /// many hosts from one process, as the scheduler's target figures ask. Files are reopened at
    /// least once a second, so a file replaced by a rename is served within a second.
    pub fn nginx_on(root: &Path, hosts: &[Ipv4Addr]) -> Result<StaticServer, String> {
        let nginx = find_nginx().ok_or("nginx is not installed")?;
        let mut server = start_nginx(&nginx, root, hosts)?;
        server.wait_ready()?;
        Ok(server)
    }

    /// Requests nginx has answered so far (its `stub_status`, whose own request counts too).
    pub async fn requests_served(&self) -> Result<u64, String> {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut stream = tokio::net::TcpStream::connect(self.addr())
            .await
            .map_err(|e| format!("nginx status: {e}"))?;
        stream
            .write_all(b"GET /_status HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
            .await
            .map_err(|e| format!("nginx status: {e}"))?;
        let mut answer = String::new();
        tokio::time::timeout(Duration::from_secs(5), stream.read_to_string(&mut answer))
            .await
            .map_err(|_| "nginx status: no answer in 5 s".to_string())?
            .map_err(|e| format!("nginx status: {e}"))?;
        // "... server accepts handled requests\n A B C\n ...": C is the count.
        answer
            .lines()
            .skip_while(|l| !l.contains("accepts handled requests"))
            .nth(1)
            .and_then(|l| l.split_whitespace().nth(2))
            .and_then(|c| c.parse().ok())
            .ok_or_else(|| format!("nginx status: unexpected answer {answer:?}"))
    }

    /// The process id of the server (nginx's master, whose worker is its child).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The loopback address it listens on.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.port))
    }

    /// `http://127.0.0.1:PORT/index.html`.
    pub fn start_url(&self) -> String {
        format!("http://127.0.0.1:{}/index.html", self.port)
    }

    /// Peak RSS of the server's main process (MiB), for the record.
    pub fn peak_rss_mb(&self) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    }

    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(10);
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("{} exited at start: {status}", self.description));
            }
            if let Ok(mut stream) = TcpStream::connect_timeout(&addr, Duration::from_millis(200)) {
                use std::io::Write;
                let _ = stream.write_all(b"GET /index.html HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
                let mut head = [0u8; 12];
                if stream.read_exact(&mut head).is_ok()
                    && head.starts_with(b"HTTP/1.")
                    && &head[9..12] == b"200"
                {
                    return Ok(());
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(format!(
            "{} did not answer on port {}",
            self.description, self.port
        ))
    }
}

impl Drop for StaticServer {
    fn drop(&mut self) {
        // nginx's master stops its worker on SIGTERM (Child::kill sends SIGKILL, which would
        // leave the worker behind), so ask it politely first.
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let deadline = Instant::now() + Duration::from_secs(5);
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

/// Requests per second of `wrk` (one thread: on two cores a second one only takes the server's
/// CPU) over `connections` keep-alive connections for 5 s against `url`: the ceiling,
/// measured by the tool it names, beside the in-process one whose CPU the bench can split.
fn wrk_ceiling(url: &str, connections: usize) -> Result<f64, String> {
    let output = Command::new("wrk")
        .args(["-t1", &format!("-c{}", connections.max(1)), "-d5s", url])
        .output()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => "wrk is not installed: apt-get install wrk".into(),
            _ => format!("cannot run wrk: {e}"),
        })?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(format!("wrk failed: {} {}", stdout.trim(), stderr.trim()));
    }
    // Its rate counts every response and stops at none: a ceiling of errors is no ceiling.
    if let Some(errors) = stdout.lines().map(str::trim).find(|line| {
        line.starts_with("Non-2xx or 3xx responses:") || line.starts_with("Socket errors:")
    }) {
        return Err(format!("wrk saw errors ({errors})"));
    }
    stdout
        .lines()
        .find_map(|line| line.trim().strip_prefix("Requests/sec:"))
        .and_then(|rate| rate.trim().parse().ok())
        .ok_or_else(|| format!("no Requests/sec in wrk's output: {}", stdout.trim()))
}

fn find_nginx() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/usr/local/sbin")])
        .map(|d| d.join("nginx"))
        .find(|p| p.is_file())
}

fn free_port() -> Result<u16, String> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(|e| e.to_string())?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| e.to_string())
}

fn start_nginx(nginx: &Path, root: &Path, hosts: &[Ipv4Addr]) -> Result<StaticServer, String> {
    let prefix = TempDir::new("wachet-bench-nginx").map_err(|e| e.to_string())?;
    let port = free_port()?;
    let p = prefix.path().display();
    let root = std::fs::canonicalize(root).map_err(|e| e.to_string())?;
    let listen: String = hosts
        .iter()
        .map(|ip| format!("    listen {ip}:{port};\n"))
        .collect();
    // The open-file cache holds every page of a site up to 32,768 pages, as it holds the one
    // page the ceiling requests: with 4,096 entries a 10,000-page crawl opened, read the status
    // of and closed every file (17 to 20 against 13 to 15 µs of nginx's CPU a page, a cost that
    // weighed on the faster crawler most). A larger site still thrashes it.
    let conf = format!(
        "daemon off;\nmaster_process on;\nworker_processes 1;\nworker_rlimit_nofile 65536;\npid {p}/nginx.pid;\n\
         error_log {p}/error.log warn;\n\
         events {{ worker_connections 8192; }}\n\
         http {{\n  access_log off;\n  sendfile on;\n  tcp_nopush on;\n  tcp_nodelay on;\n\
         keepalive_requests 1000000;\n  keepalive_timeout 60s;\n\
         open_file_cache max=32768 inactive=60s;\n  open_file_cache_valid 1s;\n\
         types {{ text/html html; }}\n  default_type application/octet-stream;\n\
         client_body_temp_path {p}/body;\n  proxy_temp_path {p}/proxy;\n\
         fastcgi_temp_path {p}/fastcgi;\n  uwsgi_temp_path {p}/uwsgi;\n  scgi_temp_path {p}/scgi;\n\
         server {{\n{listen}    root {root};\n    index index.html;\n\
         location = /_status {{ stub_status; }}\n  }}\n}}\n",
        root = root.display()
    );
    let conf_path = prefix.path().join("nginx.conf");
    std::fs::write(&conf_path, conf).map_err(|e| e.to_string())?;
    let version = Command::new(nginx)
        .arg("-v")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stderr).trim().to_string())
        .and_then(|v| v.strip_prefix("nginx version: ").map(str::to_string))
        .unwrap_or_else(|| "nginx".into());
    let child = Command::new(nginx)
        .arg("-p")
        .arg(prefix.path())
        .arg("-e")
        .arg(prefix.path().join("error.log"))
        .arg("-c")
        .arg(&conf_path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", nginx.display()))?;
    Ok(StaticServer {
        child,
        port,
        description: format!("{version} (1 worker, access log off)"),
        _conf: Some(prefix),
    })
}

/// Runs `exe MODE URL MAXPAGES CONCURRENCY` and reads its JSON line.
pub fn run_crawl_child(
    exe: &Path,
    crawler: Crawler,
    url: &str,
    max_pages: usize,
    concurrency: usize,
) -> Result<CrawlResult, String> {
    let mut child = Command::new(exe)
        .args([
            crawler.mode(),
            url,
            &max_pages.to_string(),
            &concurrency.to_string(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let reader = std::thread::spawn(move || {
        std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .find_map(|l| CrawlResult::from_json(&l))
    });
    let deadline = Instant::now() + CRAWL_TIMEOUT;
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => break,
            Ok(Some(status)) => return Err(format!("{} exited with {status}", crawler.mode())),
            Ok(None) if Instant::now() > deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{} timed out", crawler.mode()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(e.to_string()),
        }
    }
    reader
        .join()
        .ok()
        .flatten()
        .ok_or_else(|| format!("{} printed no result", crawler.mode()))
}

/// Options of `compare`.
#[derive(Debug, Clone)]
pub struct CompareOptions {
    /// Pages of the site and the page budget.
    pub pages: usize,
    /// Crawls of each crawler.
    pub runs: usize,
    /// Requests in flight.
    pub concurrency: usize,
    /// Static server.
    pub server: ServerKind,
    /// Crawlers to run.
    pub crawlers: Vec<Crawler>,
    /// Serve an existing site instead of generating one.
    pub site: Option<PathBuf>,
}

impl CompareOptions {
    /// Parses `--pages N --runs R --concurrency C --server nginx|rust|auto --only wachet|spider
    /// --site DIR`.
    pub fn parse(args: &[String]) -> Option<CompareOptions> {
        let mut options = CompareOptions {
            pages: site::DEFAULT_PAGES,
            runs: 3,
            concurrency: 32,
            server: ServerKind::Auto,
            crawlers: vec![Crawler::Wachet, Crawler::Spider],
            site: None,
        };
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            let value = it.next()?;
            match flag.as_str() {
                "--pages" => options.pages = value.parse().ok()?,
                "--runs" => options.runs = value.parse().ok()?,
                "--concurrency" => options.concurrency = value.parse().ok()?,
                "--server" => options.server = ServerKind::parse(value)?,
                "--only" => {
                    options.crawlers = vec![match value.as_str() {
                        "wachet" => Crawler::Wachet,
                        "spider" => Crawler::Spider,
                        _ => return None,
                    }]
                }
                "--site" => options.site = Some(PathBuf::from(value)),
                _ => return None,
            }
        }
        (options.runs > 0 && options.pages > 0).then_some(options)
    }
}

/// The median of `values` (sorts them).
pub(crate) fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n == 0 {
        0.0
    } else if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// `compare`: generate, serve, crawl alternately, print the table.
pub fn compare(options: &CompareOptions) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let generated;
    let root = match &options.site {
        Some(dir) => dir.clone(),
        None => {
            generated = TempDir::new("wachet-bench-site").map_err(|e| e.to_string())?;
            let began = Instant::now();
            let site =
                site::generate(generated.path(), options.pages).map_err(|e| e.to_string())?;
            eprintln!(
                "generated {} pages (fan-out {}, every page within {} hops) in {:.1} s at {}",
                site.pages,
                site.fanout,
                site::DEPTH,
                began.elapsed().as_secs_f64(),
                generated.path().display()
            );
            generated.path().to_path_buf()
        }
    };
    let server = StaticServer::start(&root, options.server, &exe)?;
    let url = server.start_url();
    eprintln!("server: {} at {url}", server.description);
    let mut results: Vec<(Crawler, Vec<CrawlResult>)> =
        options.crawlers.iter().map(|&c| (c, Vec::new())).collect();
    // One crawl not counted, so the first counted one does not alone meet the server's caches
    // cold (the site's files in the page cache, their descriptors in nginx's open-file cache).
    if let Some(&(crawler, _)) = results.first() {
        run_crawl_child(&exe, crawler, &url, options.pages, options.concurrency)?;
    }
    for run in 0..options.runs {
        // Alternate which crawler goes first, so neither always meets a cold or warm server.
        let order: Vec<usize> = if run % 2 == 0 {
            (0..results.len()).collect()
        } else {
            (0..results.len()).rev().collect()
        };
        for i in order {
            let crawler = results[i].0;
            let server_before = crate::api::cpu_seconds(server.pid(), true);
            let mut result =
                run_crawl_child(&exe, crawler, &url, options.pages, options.concurrency)?;
            result.server_cpu_seconds = crate::api::cpu_seconds(server.pid(), true) - server_before;
            let per_page = |cpu: f64| cpu * 1e6 / result.pages.max(1) as f64;
            eprintln!(
                "run {}: {:<6} {:>7} pages in {:>6.3} s = {:>8.0} pages/s, peak RSS {:>6.1} MB, \
                 CPU a page {:>5.1} µs (server {:>4.1} µs)",
                run + 1,
                crawler.name(),
                result.pages,
                result.seconds,
                result.pages_per_sec,
                result.peak_rss_mb,
                per_page(result.cpu_seconds),
                per_page(result.server_cpu_seconds),
            );
            results[i].1.push(result);
        }
    }
    println!();
    println!(
        "site: {} pages, ~{} KB each, depth {}; server: {}; concurrency {}; {} runs each",
        options.pages,
        site::PAGE_BYTES / 1024,
        site::DEPTH,
        server.description,
        options.concurrency,
        options.runs
    );
    println!(
        "{:<8} {:>12} {:>16} {:>14} {:>18} {:>20} {:>22}",
        "crawler",
        "pages found",
        "median pages/s",
        "median time s",
        "peak RSS MB (max)",
        "CPU a page µs (med)",
        "server CPU a page µs"
    );
    let mut medians = Vec::new();
    for (crawler, runs) in &results {
        let mut rates: Vec<f64> = runs.iter().map(|r| r.pages_per_sec).collect();
        let mut times: Vec<f64> = runs.iter().map(|r| r.seconds).collect();
        let pages_min = runs.iter().map(|r| r.pages).min().unwrap_or(0);
        let pages_max = runs.iter().map(|r| r.pages).max().unwrap_or(0);
        let pages = if pages_min == pages_max {
            pages_min.to_string()
        } else {
            format!("{pages_min}-{pages_max}")
        };
        let rss = runs.iter().map(|r| r.peak_rss_mb).fold(0.0, f64::max);
        let rate = median(&mut rates);
        let per_page = |cpu: fn(&CrawlResult) -> f64| {
            let mut values: Vec<f64> = runs
                .iter()
                .map(|r| cpu(r) * 1e6 / r.pages.max(1) as f64)
                .collect();
            median(&mut values)
        };
        println!(
            "{:<8} {:>12} {:>16.0} {:>14.3} {:>18.1} {:>20.1} {:>22.1}",
            crawler.name(),
            pages,
            rate,
            median(&mut times),
            rss,
            per_page(|r| r.cpu_seconds),
            per_page(|r| r.server_cpu_seconds),
        );
        if pages_min < options.pages {
            println!(
                "  note: {} found only {pages_min} of {} pages in some run",
                crawler.name(),
                options.pages
            );
        }
        medians.push((*crawler, rate));
    }
    let rate_of = |c| medians.iter().find(|(k, _)| *k == c).map(|(_, r)| *r);
    if let (Some(w), Some(s)) = (rate_of(Crawler::Wachet), rate_of(Crawler::Spider)) {
        println!(
            "ratio wachet/spider (median pages/s): {:.2}x",
            w / s.max(1e-9)
        );
    }
    if let Some(w) = rate_of(Crawler::Wachet) {
        let ceiling = ceiling(&server, options.concurrency)?;
        println!(
            "ceiling: GET of one page of the site over {} keep-alive connections from this \
             process (as wrk would, on the same cores): {:.0} requests/s ({:.1} µs of CPU a \
             request in the server, {:.1} in this process); wachet/ceiling {:.2}",
            options.concurrency,
            ceiling.requests_per_sec,
            ceiling.server_cpu_us,
            ceiling.client_cpu_us,
            w / ceiling.requests_per_sec.max(1e-9)
        );
        match wrk_ceiling(&server.start_url(), options.concurrency) {
            Ok(rate) => println!(
                "ceiling by wrk (-t1 -c{} -d5s, the same page, on the same cores): {rate:.0} \
                 requests/s; wachet/ceiling {:.2}",
                options.concurrency,
                w / rate.max(1e-9)
            ),
            Err(e) => println!("ceiling by wrk: not measured ({e})"),
        }
        let (rate, cpu_us) = fetcher_ceiling(&server.start_url(), options.concurrency)?;
        println!(
            "the same page through wachet's fetcher (HttpFetcher::fetch_hop, no parsing): \
             {rate:.0} requests/s, {cpu_us:.1} µs of CPU a request in this process"
        );
        let (rate, cpu_us) = pooled_client_ceiling(&server.start_url(), options.concurrency)?;
        println!(
            "the same page through hyper-util's pooled client (reqwest's, without its layers): \
             {rate:.0} requests/s, {cpu_us:.1} µs of CPU a request in this process"
        );
    }
    println!(
        "server peak RSS (not counted): {:.1} MB",
        server.peak_rss_mb()
    );
    Ok(())
}

/// Requests per second through wachet's plain fetcher alone (no parsing, no crawl) for the
/// start page, over `concurrency` tasks for 5 s after a 1 s warm-up, and the CPU a request of
/// this process: the fetcher's share of a crawled page, beside the ceiling's bare client.
fn fetcher_ceiling(url: &str, concurrency: usize) -> Result<(f64, f64), String> {
    use wachet::fetch::http::{HttpFetcher, HttpSettings};
    use wachet::fetch::{FetchRequest, Fetcher, NetworkPolicy};
    let url = url::Url::parse(url).map_err(|e| e.to_string())?;
    let settings = HttpSettings {
        policy: std::sync::Arc::new(NetworkPolicy::allow_all()),
        ..HttpSettings::default()
    };
    let fetcher = HttpFetcher::new(settings, &Default::default()).map_err(|e| e.to_string())?;
    let fetcher = std::sync::Arc::new(fetcher);
    let request = std::sync::Arc::new(FetchRequest::get(url));
    requests_alone(concurrency, "wachet's fetcher", move || {
        let (fetcher, request) = (fetcher.clone(), request.clone());
        async move {
            matches!(
                fetcher.fetch_hop(&request).await,
                Ok(wachet::fetch::Hop::Page(_))
            )
        }
    })
}

/// The same loop through hyper-util's pooled client (the client reqwest is built on, without
/// reqwest's layers), reading each body whole: what the fetcher's HTTP would cost on it.
fn pooled_client_ceiling(url: &str, concurrency: usize) -> Result<(f64, f64), String> {
    use http_body_util::BodyExt;
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<http_body_util::Empty<hyper::body::Bytes>>();
    let uri: hyper::Uri = url
        .parse()
        .map_err(|e: hyper::http::uri::InvalidUri| e.to_string())?;
    requests_alone(concurrency, "hyper-util's pooled client", move || {
        let (client, uri) = (client.clone(), uri.clone());
        async move {
            let Ok(request) = hyper::Request::get(uri)
                .header("accept-encoding", "gzip, deflate, br")
                .body(http_body_util::Empty::new())
            else {
                return false;
            };
            match client.request(request).await {
                Ok(response) => response.into_body().collect().await.is_ok(),
                Err(_) => false,
            }
        }
    })
}

/// Runs `one` (a request; true when it got its page) in a loop on `concurrency` tasks for 5 s
/// after a 1 s warm-up: requests a second and the CPU a request of this process.
fn requests_alone<F, Fut>(concurrency: usize, what: &str, one: F) -> Result<(f64, f64), String>
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = bool> + Send + 'static,
{
    let rt = runtime().map_err(|e| e.to_string())?;
    rt.block_on(async move {
        let load = |until: Instant| {
            let tasks: Vec<_> = (0..concurrency)
                .map(|_| {
                    let one = one.clone();
                    tokio::spawn(async move {
                        let mut done = 0u64;
                        while Instant::now() < until {
                            if one().await {
                                done += 1;
                            }
                        }
                        done
                    })
                })
                .collect();
            async move {
                let mut done = 0;
                for task in tasks {
                    done += task.await.unwrap_or(0);
                }
                done
            }
        };
        load(Instant::now() + Duration::from_secs(1)).await;
        let (began, cpu_before) = (Instant::now(), process_cpu_seconds());
        let done = load(began + Duration::from_secs(5)).await;
        let (elapsed, cpu) = (began.elapsed(), process_cpu_seconds() - cpu_before);
        if done == 0 {
            return Err(format!("no request through {what} got a page"));
        }
        let done = done as f64;
        Ok((done / elapsed.as_secs_f64(), cpu * 1e6 / done))
    })
}

/// Requests per second the static server answers for one page of the site (the start page)
/// over `concurrency` keep-alive connections: what no crawl of that server can beat, measured
/// after the crawls (1 s warm-up, 5 s measured).
fn ceiling(server: &StaticServer, concurrency: usize) -> Result<crate::api::Measurement, String> {
    let endpoint = crate::api::Endpoint::new(server.addr(), None)?;
    let measured = runtime()
        .map_err(|e| e.to_string())?
        .block_on(crate::api::load(
            &endpoint,
            server.pid(),
            "/index.html",
            concurrency,
            Duration::from_secs(1),
            Duration::from_secs(5),
        ))?;
    Ok(measured)
}
