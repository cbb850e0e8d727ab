//! Rendering speed with a real headless Chromium: small JS pages rendered through pools of 1, 4
//! and 8 reused tabs and with a new tab per page, single-page checks one after another (a new
//! session each), and a rendered Portal crawl of a 300-page JS site whose links are inserted by
//! script 100 ms after load. After each group the Chromium memory (sum of PSS over the browser's
//! processes) is printed.
//!
//! `cargo bench --bench render` (needs Chromium: `apt-get install chromium-headless-shell`).
//! `WACHET_QUIET_MS=150` sets the DOM-quiet window (default 300 ms, the engine's default).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use futures::StreamExt;
use std::time::{Duration, Instant};
use wachet::model::ClientJobType;
use wachet::render::RenderSettings;
use wachet::testing::FixtureServer;
use wachet::{Checker, CrawlEvent, Engine, Monitor};

#[path = "../bench/src/proc.rs"]
mod proc;

/// Pages of the flat set rendered per iteration.
const FLAT_PAGES: usize = 40;
/// Pages of the JS site.
const SITE_PAGES: usize = 300;
/// Links per page of the JS site (7 + 49 + 244 pages within 3 hops).
const FANOUT: usize = 7;
/// How often the browser's memory is sampled. Reading `smaps_rollup` of every Chromium process
/// costs CPU the renders then lack: at 200 ms it took 2-3% off the pages per second.
const PSS_INTERVAL: Duration = Duration::from_millis(500);

fn quiet() -> Duration {
    let ms = std::env::var("WACHET_QUIET_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    Duration::from_millis(ms)
}

/// A small page whose content is built by script.
fn js_page(title: &str, links: &[String]) -> String {
    let hrefs: Vec<String> = links.iter().map(|l| format!("'{l}'")).collect();
    format!(
        "<!doctype html><title>{title}</title><h1>{title}</h1><div id=nav></div>\
         <p>Some text so the page is not empty, and a little more of it.</p>\
         <script>setTimeout(() => {{ for (const h of [{}]) {{ const a = document.createElement('a'); \
         a.href = h; a.textContent = h; document.getElementById('nav').appendChild(a); }} }}, 100);</script>",
        hrefs.join(",")
    )
}

async fn site() -> FixtureServer {
    let mut builder = FixtureServer::builder();
    // The flat set: an index linking FLAT_PAGES pages.
    let flat: Vec<String> = (0..FLAT_PAGES).map(|i| format!("/flat/{i}.html")).collect();
    builder = builder.page("/flat/index.html", js_page("flat", &flat));
    for (i, path) in flat.iter().enumerate() {
        builder = builder.page(path.clone(), js_page(&format!("flat {i}"), &[]));
    }
    // The JS site: page i links to pages FANOUT*i+1 ..= FANOUT*i+FANOUT.
    for i in 0..SITE_PAGES {
        let children: Vec<String> = (FANOUT * i + 1..=FANOUT * i + FANOUT)
            .filter(|c| *c < SITE_PAGES)
            .map(|c| format!("/site/{c}.html"))
            .collect();
        builder = builder.page(
            format!("/site/{i}.html"),
            js_page(&format!("page {i}"), &children),
        );
    }
    builder.start().await.expect("fixture server")
}

fn engine(tabs: usize, reuse_tabs: bool) -> Engine {
    Engine::builder()
        .allow_private_networks(true)
        .crawl_concurrency(tabs)
        .per_host_concurrency(0)
        .per_host_rps(0)
        .render_settings(RenderSettings {
            tabs,
            reuse_tabs,
            quiet: quiet(),
            ..RenderSettings::default()
        })
        .build()
        .expect("engine")
}

/// Crawls from `start` with rendering; returns the pages found.
async fn rendered_crawl(engine: &Engine, start: String, depth: i32) -> usize {
    let mut monitor = Monitor::new(start);
    monitor.job_type = ClientJobType::Portal;
    monitor.crawling_depth = Some(depth);
    monitor.dynamic_content = true;
    let mut stream = engine.crawl(&monitor).expect("valid monitor");
    let mut pages = 0;
    while let Some(event) = stream.next().await {
        if let CrawlEvent::Page { page, .. } = event {
            assert!(
                page.data.error.is_none(),
                "{}: {:?}",
                page.url,
                page.data.error
            );
            pages += 1;
        }
    }
    pages
}

/// Sum of PSS (KiB) over the processes of the browser's process group.
fn chromium_pss_kib(pid: Option<u32>) -> u64 {
    let Some(pgid) = pid else { return 0 };
    let mut total = 0;
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Ok(p) = name.to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        let group = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(2))
            .and_then(|g| g.parse::<u32>().ok());
        if group != Some(pgid) {
            continue;
        }
        total += proc::pss_kib(p).unwrap_or(0);
    }
    total
}

/// Samples the browser's PSS every [`PSS_INTERVAL`] on a thread of its own and keeps the peak.
struct PssSampler {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<u64>,
}

impl PssSampler {
    fn start(pid: Option<u32>) -> Self {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut peak = 0;
            while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                peak = peak.max(chromium_pss_kib(pid));
                std::thread::sleep(PSS_INTERVAL);
            }
            peak
        });
        PssSampler { stop, thread }
    }

    /// The peak in MiB.
    fn finish(self) -> u64 {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.join().unwrap_or(0) / 1024
    }
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let server = runtime.block_on(site());
    eprintln!("quiet window: {} ms", quiet().as_millis());

    let mut group = c.benchmark_group("render_flat_pages");
    group.sample_size(10);
    group.throughput(Throughput::Elements(FLAT_PAGES as u64 + 1));
    for (name, tabs, reuse) in [
        ("pool_1", 1, true),
        ("pool_4", 4, true),
        ("pool_8", 8, true),
        ("new_tab_per_page_4", 4, false),
    ] {
        let engine = engine(tabs, reuse);
        let start = server.url("/flat/index.html");
        // Warm: the browser starts outside the measurement.
        runtime.block_on(rendered_crawl(&engine, start.clone(), 1));
        let sampler = PssSampler::start(engine.renderer().browser_pid());
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let began = Instant::now();
                for _ in 0..iters {
                    let found = runtime.block_on(rendered_crawl(&engine, start.clone(), 1));
                    assert_eq!(found, FLAT_PAGES + 1);
                }
                began.elapsed()
            })
        });
        eprintln!("{name}: peak Chromium PSS {} MiB", sampler.finish());
        runtime.block_on(engine.renderer().shutdown());
    }
    group.finish();

    // Single-page checks one after another, as the service runs them: each check is a session
    // of its own (a fresh browser context and tab).
    let mut group = c.benchmark_group("render_single_check");
    group.sample_size(20);
    group.throughput(Throughput::Elements(1));
    let single = engine(4, true);
    let page = server.url("/flat/0.html");
    let mut monitor = Monitor::new(page);
    monitor.dynamic_content = true;
    let check = || {
        let outcome = runtime
            .block_on(single.check(&monitor))
            .expect("valid monitor");
        assert!(outcome.error().is_none(), "{outcome:?}");
    };
    check();
    group.bench_function("one_check_at_a_time", |b| b.iter(check));
    group.finish();
    runtime.block_on(single.renderer().shutdown());

    let mut group = c.benchmark_group("render_portal_crawl");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(60));
    group.throughput(Throughput::Elements(SITE_PAGES as u64));
    let engine = engine(4, true);
    let start = server.url("/site/0.html");
    runtime.block_on(rendered_crawl(&engine, server.url("/flat/index.html"), 1));
    let sampler = PssSampler::start(engine.renderer().browser_pid());
    group.bench_function("js_site_300_pages_4_tabs", |b| {
        b.iter_custom(|iters| {
            let began = Instant::now();
            for _ in 0..iters {
                let found = runtime.block_on(rendered_crawl(&engine, start.clone(), 3));
                assert_eq!(found, SITE_PAGES, "every page is found");
            }
            began.elapsed()
        })
    });
    eprintln!("portal crawl: peak Chromium PSS {} MiB", sampler.finish());
    group.finish();
    runtime.block_on(engine.renderer().shutdown());
}

criterion_group!(benches, bench);
criterion_main!(benches);
