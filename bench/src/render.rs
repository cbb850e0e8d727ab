//! Rendered-crawl comparison: wachet's rendered Portal crawl against spider's chrome crawl of a
//! 300-page JS site whose links are inserted by script 100 ms after load.
//!
//! The site ([`generate_js_site`]) is the one of the root crate's `benches/render.rs`: page `i`
//! (`/site/{i}.html`) links to pages `7i+1 ..= 7i+7` below `n`, every link is inserted by a
//! `setTimeout(..., 100)`, and all 300 pages lie within three hops of `/site/0.html`.
//!
//! `compare-render` serves it with nginx (or `wachet-bench serve`) in a separate process and runs
//! each crawler as a child process: wachet as `wachet-bench crawl-render-wachet`, spider as the
//! `wachet-bench-chrome` binary of the bench-only package `bench/chrome` (spider's `chrome`
//! feature would otherwise be unified into the plain-HTTP comparison's spider). While a child
//! runs, the sum of `Pss:` from `/proc/PID/smaps_rollup` over its Chromium descendants is
//! sampled every 500 ms; the peak is reported.

use crate::harness::{self, ServerKind, StaticServer, TempDir};
use futures::StreamExt;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Pages of the JS site.
pub const JS_PAGES: usize = 300;
/// Links per page of the JS site (7 + 49 + 243 pages within 3 hops).
pub const JS_FANOUT: usize = 7;
/// Hops both crawlers follow.
pub const JS_DEPTH: i32 = 3;
/// Delay before the script inserts the links (ms).
pub const LINK_DELAY_MS: u64 = 100;
/// How often Chromium's PSS is sampled.
const PSS_INTERVAL: Duration = Duration::from_millis(500);
/// Longest a crawl child may run before it is killed.
const CRAWL_TIMEOUT: Duration = Duration::from_secs(600);

/// A small page whose links are inserted by script `LINK_DELAY_MS` after it runs.
pub fn js_page(title: &str, links: &[String]) -> String {
    let hrefs: Vec<String> = links.iter().map(|l| format!("'{l}'")).collect();
    format!(
        "<!doctype html><title>{title}</title><h1>{title}</h1><div id=nav></div>\
         <p>Some text so the page is not empty, and a little more of it.</p>\
         <script>setTimeout(() => {{ for (const h of [{}]) {{ const a = document.createElement('a'); \
         a.href = h; a.textContent = h; document.getElementById('nav').appendChild(a); }} }}, {LINK_DELAY_MS});</script>",
        hrefs.join(",")
    )
}

/// Writes the JS site of `pages` pages below `dir` (`site/{i}.html`) and a plain `index.html`
/// (not linked; the static server's readiness probe asks for it).
pub fn generate_js_site(dir: &Path, pages: usize) -> std::io::Result<()> {
    std::fs::create_dir_all(dir.join("site"))?;
    std::fs::write(
        dir.join("index.html"),
        "<!doctype html><title>js site</title><a href=\"/site/0.html\">start</a>",
    )?;
    for i in 0..pages {
        let children: Vec<String> = (JS_FANOUT * i + 1..=JS_FANOUT * i + JS_FANOUT)
            .filter(|c| *c < pages)
            .map(|c| format!("/site/{c}.html"))
            .collect();
        std::fs::write(
            dir.join(format!("site/{i}.html")),
            js_page(&format!("page {i}"), &children),
        )?;
    }
    Ok(())
}

/// `crawl-render-wachet URL QUIET_MS TABS`: one rendered Portal crawl, one JSON line on stdout.
///
/// `WACHET_BENCH_TRACE=FILE` writes one line per page: seconds since the crawl started when the
/// page event arrived, its depth and URL (for profiling from outside). `WACHET_BENCH_REUSE_TABS=0`
/// renders each page in a new tab (`RenderSettings::reuse_tabs = false`), for measurements.
/// `WACHET_BENCH_IDLE_MS=N` sets `RenderSettings::idle_quiet`. `WACHET_BENCH_LOG=FILTER` prints
/// the engine's tracing on stderr (`wachet::render=debug`: the render's timings of each page).
pub fn crawl_render_wachet(url: &str, quiet_ms: u64, tabs: usize) -> Result<(), String> {
    if let Ok(filter) = std::env::var("WACHET_BENCH_LOG") {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_timer(tracing_subscriber::fmt::time::uptime())
            .with_writer(std::io::stderr)
            .try_init();
    }
    let rt = harness::runtime().map_err(|e| e.to_string())?;
    let trace_path = std::env::var_os("WACHET_BENCH_TRACE").map(PathBuf::from);
    let reuse_tabs = std::env::var("WACHET_BENCH_REUSE_TABS").map_or(true, |v| v != "0");
    let defaults = wachet::render::RenderSettings::default();
    let idle_quiet = std::env::var("WACHET_BENCH_IDLE_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(defaults.idle_quiet, Duration::from_millis);
    let began = Instant::now();
    let (pages, errors, trace) = rt.block_on(async {
        let engine = wachet::Engine::builder()
            .allow_private_networks(true)
            .crawl_concurrency(tabs)
            .per_host_concurrency(0)
            .per_host_rps(0)
            .render_settings(wachet::render::RenderSettings {
                tabs,
                quiet: Duration::from_millis(quiet_ms),
                reuse_tabs,
                idle_quiet,
                ..defaults
            })
            .build()
            .map_err(|e| e.to_string())?;
        let mut monitor = wachet::Monitor::new(url);
        monitor.job_type = wachet::model::ClientJobType::Portal;
        monitor.crawling_depth = Some(JS_DEPTH);
        monitor.dynamic_content = true;
        let mut stream = engine.crawl(&monitor).map_err(|e| e.to_string())?;
        let mut pages = 0usize;
        let mut errors = 0usize;
        let mut trace = String::new();
        while let Some(event) = stream.next().await {
            if let wachet::CrawlEvent::Page { page, .. } = event {
                if trace_path.is_some() {
                    let _ = writeln!(
                        trace,
                        "{:.4} {} {}",
                        began.elapsed().as_secs_f64(),
                        page.depth,
                        page.url
                    );
                }
                if let Some(err) = &page.data.error {
                    errors += 1;
                    if errors <= 5 {
                        eprintln!("wachet: {}: {err:?}", page.url);
                    }
                } else {
                    pages += 1;
                }
            }
        }
        engine.renderer().shutdown().await;
        Ok::<_, String>((pages, errors, trace))
    })?;
    // Time to the last page; the browser's shutdown is not counted (spider's is not either).
    let seconds = trace_last_seconds(&trace).unwrap_or_else(|| began.elapsed().as_secs_f64());
    if let Some(path) = trace_path {
        std::fs::write(&path, &trace).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    drop(rt);
    let line = serde_json::json!({
        "crawler": format!("wachet q={quiet_ms}"),
        "pages": pages,
        "errors": errors,
        "seconds": seconds,
        "pages_per_sec": pages as f64 / seconds.max(1e-9),
        "peak_rss_mb": harness::peak_rss_mb(),
    });
    println!("{line}");
    Ok(())
}

fn trace_last_seconds(trace: &str) -> Option<f64> {
    trace
        .lines()
        .last()
        .and_then(|l| l.split_whitespace().next())
        .and_then(|s| s.parse().ok())
}

/// One crawl child's result.
#[derive(Debug, Clone)]
pub struct RenderResult {
    /// Pages found (finished without error).
    pub pages: usize,
    /// Wall time of the crawl in the child (s).
    pub seconds: f64,
    /// Pages per second.
    pub pages_per_sec: f64,
    /// Peak PSS summed over the child's Chromium processes (MiB).
    pub chromium_pss_mb: f64,
    /// Most Chromium processes seen at once.
    pub chromium_procs: usize,
    /// Peak RSS of the crawler process itself (MiB).
    pub crawler_rss_mb: f64,
}

/// Which crawler a column of the table is.
#[derive(Debug, Clone)]
pub struct Contender {
    /// Name in the table.
    pub name: String,
    /// Program and arguments (the URL is appended).
    pub program: PathBuf,
    /// Arguments before the URL.
    pub args_before: Vec<String>,
    /// Arguments after the URL.
    pub args_after: Vec<String>,
    /// Extra environment.
    pub env: Vec<(String, String)>,
}

/// Parent pid of every process, from `/proc/*/stat`.
fn process_table() -> HashMap<u32, (u32, String)> {
    let mut table = HashMap::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return table;
    };
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // "pid (comm) state ppid ..."; comm may hold spaces and parentheses.
        let Some((head, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let comm = head.split_once('(').map_or("", |(_, c)| c).to_string();
        let ppid = rest
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse::<u32>().ok())
            .unwrap_or(0);
        table.insert(pid, (ppid, comm));
    }
    table
}

/// Whether `pid` runs Chromium (its executable or name says so).
fn is_chromium(pid: u32, comm: &str) -> bool {
    let exe = std::fs::read_link(format!("/proc/{pid}/exe"))
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    exe.contains("chrom") || comm.contains("chrom")
}

/// Sum of `Pss:` (KiB) over the Chromium descendants of `root`, and their number.
pub fn chromium_pss_kib(root: u32) -> (u64, usize) {
    let table = process_table();
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for (&pid, (ppid, _)) in &table {
        children.entry(*ppid).or_default().push(pid);
    }
    let mut stack = vec![root];
    let mut total = 0;
    let mut procs = 0;
    while let Some(pid) = stack.pop() {
        if let Some(kids) = children.get(&pid) {
            stack.extend(kids);
        }
        if pid == root {
            continue;
        }
        let comm = table.get(&pid).map_or("", |(_, c)| c.as_str());
        if !is_chromium(pid, comm) {
            continue;
        }
        if let Some(pss) = crate::proc::pss_kib(pid) {
            procs += 1;
            total += pss;
        }
    }
    (total, procs)
}

/// Runs one crawl child, sampling its Chromium PSS, and reads its JSON line.
pub fn run_render_child(contender: &Contender, url: &str) -> Result<RenderResult, String> {
    let mut command = Command::new(&contender.program);
    command
        .args(&contender.args_before)
        .arg(url)
        .args(&contender.args_after)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    for (k, v) in &contender.env {
        command.env(k, v);
    }
    let mut child = command
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", contender.program.display()))?;
    let pid = child.id();
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let reader = std::thread::spawn(move || {
        std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .find_map(|l| serde_json::from_str::<serde_json::Value>(&l).ok())
    });
    let deadline = Instant::now() + CRAWL_TIMEOUT;
    let mut peak_pss = 0u64;
    let mut peak_procs = 0usize;
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => break,
            Ok(Some(status)) => {
                return Err(format!("{} exited with {status}", contender.name));
            }
            Ok(None) if Instant::now() > deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{} timed out", contender.name));
            }
            Ok(None) => {
                let (pss, procs) = chromium_pss_kib(pid);
                peak_pss = peak_pss.max(pss);
                peak_procs = peak_procs.max(procs);
                std::thread::sleep(PSS_INTERVAL);
            }
            Err(e) => return Err(e.to_string()),
        }
    }
    let v = reader
        .join()
        .ok()
        .flatten()
        .ok_or_else(|| format!("{} printed no result", contender.name))?;
    let num = |k: &str| v[k].as_f64().ok_or_else(|| format!("no {k} in {v}"));
    Ok(RenderResult {
        pages: num("pages")? as usize,
        seconds: num("seconds")?,
        pages_per_sec: num("pages_per_sec")?,
        chromium_pss_mb: peak_pss as f64 / 1024.0,
        chromium_procs: peak_procs,
        crawler_rss_mb: num("peak_rss_mb").unwrap_or(0.0),
    })
}

/// Options of `compare-render`.
#[derive(Debug, Clone)]
pub struct CompareRenderOptions {
    /// Crawls of each crawler.
    pub runs: usize,
    /// Tabs (wachet) and concurrency (spider).
    pub tabs: usize,
    /// wachet's DOM-quiet windows to run, one contender each.
    pub quiets: Vec<u64>,
    /// spider's wait after load: `delay:MS` or `dom:MS`.
    pub spider_wait: String,
    /// The `wachet-bench-chrome` binary; `None`: next to this one.
    pub spider_exe: Option<PathBuf>,
    /// Leave spider out.
    pub no_spider: bool,
    /// Static server.
    pub server: ServerKind,
    /// Directory for per-page traces of wachet's runs.
    pub trace_dir: Option<PathBuf>,
    /// The Chromium binaries spider runs with, one contender each; empty: wachet's.
    pub spider_chromes: Vec<String>,
}

impl CompareRenderOptions {
    /// Parses `--runs R --tabs T --quiet 300,100 --spider-wait delay:MS|dom:MS --spider-exe PATH
    /// --no-spider 1 --server nginx|rust|auto --trace-dir DIR --spider-chrome PATH,PATH`.
    pub fn parse(args: &[String]) -> Option<CompareRenderOptions> {
        let mut options = CompareRenderOptions {
            runs: 3,
            tabs: 4,
            quiets: vec![300, 100],
            spider_wait: "delay:150".into(),
            spider_exe: None,
            no_spider: false,
            server: ServerKind::Auto,
            trace_dir: None,
            spider_chromes: Vec::new(),
        };
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            let value = it.next()?;
            match flag.as_str() {
                "--runs" => options.runs = value.parse().ok()?,
                "--tabs" => options.tabs = value.parse().ok()?,
                "--quiet" => {
                    options.quiets = value
                        .split(',')
                        .map(|q| q.trim().parse().ok())
                        .collect::<Option<Vec<u64>>>()?
                }
                "--spider-wait" => options.spider_wait = value.clone(),
                "--spider-exe" => options.spider_exe = Some(PathBuf::from(value)),
                "--spider-chrome" => {
                    options.spider_chromes = value.split(',').map(str::to_string).collect()
                }
                "--no-spider" => options.no_spider = value == "1" || value == "true",
                "--server" => options.server = ServerKind::parse(value)?,
                "--trace-dir" => options.trace_dir = Some(PathBuf::from(value)),
                _ => return None,
            }
        }
        (options.runs > 0 && options.tabs > 0).then_some(options)
    }
}

/// The Chromium both crawlers run: `CHROME_PATH`, else the one wachet picks by itself: Debian's
/// headless shell, else the full Chromium behind the `/usr/bin/chromium` wrapper.
fn chromium_binary() -> Option<String> {
    if let Ok(path) = std::env::var("CHROME_PATH") {
        return Some(path);
    }
    [
        "/usr/lib/chromium/chromium-headless-shell",
        "/usr/lib/chromium/chromium",
        "/usr/bin/chromium",
    ]
    .iter()
    .find(|p| Path::new(p).is_file())
    .map(|p| (*p).to_string())
}

/// `compare-render`: generate, serve, crawl alternately, print the table.
pub fn compare_render(options: &CompareRenderOptions) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let site = TempDir::new("wachet-bench-js-site").map_err(|e| e.to_string())?;
    generate_js_site(site.path(), JS_PAGES).map_err(|e| e.to_string())?;
    let server = StaticServer::start(site.path(), options.server, &exe)?;
    let url = server.start_url().replace("/index.html", "/site/0.html");
    eprintln!("server: {} at {url}", server.description);
    let chrome = chromium_binary().ok_or("no Chromium found; set CHROME_PATH")?;
    eprintln!("chromium: {chrome}");

    let mut contenders = Vec::new();
    for &q in &options.quiets {
        contenders.push(Contender {
            name: format!("wachet q={q}"),
            program: exe.clone(),
            args_before: vec!["crawl-render-wachet".into()],
            args_after: vec![q.to_string(), options.tabs.to_string()],
            env: vec![("CHROME_PATH".into(), chrome.clone())],
        });
    }
    if !options.no_spider {
        let spider_exe = match &options.spider_exe {
            Some(p) => p.clone(),
            None => exe.with_file_name("wachet-bench-chrome"),
        };
        if !spider_exe.is_file() {
            return Err(format!(
                "{} not found: build it with `cargo build --release -p wachet-bench-chrome` \
                 (same target dir), pass --spider-exe PATH, or --no-spider 1",
                spider_exe.display()
            ));
        }
        let chromes = if options.spider_chromes.is_empty() {
            vec![chrome.clone()]
        } else {
            options.spider_chromes.clone()
        };
        for spider_chrome in chromes {
            let name = if spider_chrome == chrome {
                "spider chrome".to_string()
            } else {
                let file = Path::new(&spider_chrome)
                    .file_name()
                    .map_or(spider_chrome.clone(), |f| f.to_string_lossy().into_owned());
                format!("spider {file}")
            };
            contenders.push(Contender {
                name,
                program: spider_exe.clone(),
                args_before: vec![],
                args_after: vec![
                    JS_PAGES.to_string(),
                    options.tabs.to_string(),
                    options.spider_wait.clone(),
                ],
                // spider finds Chromium through CHROME_BIN (utils::detect_chrome).
                env: vec![("CHROME_BIN".into(), spider_chrome)],
            });
        }
    }

    let mut results: Vec<Vec<RenderResult>> = vec![Vec::new(); contenders.len()];
    for run in 0..options.runs {
        let order: Vec<usize> = if run % 2 == 0 {
            (0..contenders.len()).collect()
        } else {
            (0..contenders.len()).rev().collect()
        };
        for i in order {
            let mut contender = contenders[i].clone();
            if let Some(dir) = &options.trace_dir
                && contender.program == exe
            {
                std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
                let file = dir.join(format!(
                    "{}-run{}.txt",
                    contender.name.replace([' ', '='], "_"),
                    run + 1
                ));
                contender
                    .env
                    .push(("WACHET_BENCH_TRACE".into(), file.display().to_string()));
            }
            let r = run_render_child(&contender, &url)?;
            eprintln!(
                "run {}: {:<14} {:>4} pages in {:>6.2} s = {:>5.1} pages/s, Chromium PSS peak {:>6.1} MB ({} procs), crawler RSS {:>5.1} MB",
                run + 1,
                contender.name,
                r.pages,
                r.seconds,
                r.pages_per_sec,
                r.chromium_pss_mb,
                r.chromium_procs,
                r.crawler_rss_mb
            );
            results[i].push(r);
        }
    }

    println!();
    println!(
        "JS site: {JS_PAGES} pages, fan-out {JS_FANOUT}, links inserted {LINK_DELAY_MS} ms after load, depth {JS_DEPTH}; \
         server: {}; {} tabs / concurrency; {} runs each; Chromium {chrome}",
        server.description, options.tabs, options.runs
    );
    if !options.no_spider {
        println!("spider wait after load: {}", options.spider_wait);
    }
    println!(
        "{:<14} {:>11} {:>15} {:>13} {:>21} {:>14}",
        "crawler",
        "pages found",
        "median pages/s",
        "median time s",
        "peak Chromium PSS MB",
        "crawler RSS MB"
    );
    let mut rates = Vec::new();
    for (contender, runs) in contenders.iter().zip(&results) {
        let min = runs.iter().map(|r| r.pages).min().unwrap_or(0);
        let max = runs.iter().map(|r| r.pages).max().unwrap_or(0);
        let pages = if min == max {
            min.to_string()
        } else {
            format!("{min}-{max}")
        };
        let rate = harness::median(&mut runs.iter().map(|r| r.pages_per_sec).collect::<Vec<_>>());
        let time = harness::median(&mut runs.iter().map(|r| r.seconds).collect::<Vec<_>>());
        let pss = runs.iter().map(|r| r.chromium_pss_mb).fold(0.0, f64::max);
        let pss_med =
            harness::median(&mut runs.iter().map(|r| r.chromium_pss_mb).collect::<Vec<_>>());
        let rss = runs.iter().map(|r| r.crawler_rss_mb).fold(0.0, f64::max);
        println!(
            "{:<14} {:>11} {:>15.1} {:>13.2} {:>21} {:>14.1}",
            contender.name,
            pages,
            rate,
            time,
            format!("{pss:.0} (median {pss_med:.0})"),
            rss
        );
        rates.push((contender.name.clone(), rate, pss));
    }
    for (spider, spider_rate, spider_pss) in
        rates.iter().filter(|(n, _, _)| n.starts_with("spider"))
    {
        for (name, rate, pss) in rates.iter().filter(|(n, _, _)| !n.starts_with("spider")) {
            println!(
                "ratio {name} / {spider}: {:.2}x pages/s, {:.2}x Chromium PSS",
                rate / spider_rate.max(1e-9),
                pss / spider_pss.max(1e-9)
            );
        }
    }
    Ok(())
}
