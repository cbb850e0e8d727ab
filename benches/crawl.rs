//! Portal crawl throughput: wachet crawling a generated static site of 2,000 pages (about 20
//! links and 8 KB a page, every page within 3 hops; `WACHET_BENCH_PAGES` changes the size)
//! served on loopback by a `FixtureServer` on its own runtime thread, depth 3, no xPath, 32
//! requests in flight, no per-host limits. Criterion's "thrpt" is pages per second.
//!
//! `cargo bench --bench crawl`. The comparison with spider, against nginx and with peak RSS,
//! lives in the bench-only `wachet-bench` package: `cargo run --release -p wachet-bench --
//! compare`.

use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use futures::StreamExt;
use std::time::Duration;
use wachet::model::ClientJobType;
use wachet::testing::FixtureServer;
use wachet::{CrawlEvent, Engine, Monitor};

#[allow(dead_code)]
#[path = "../bench/src/site.rs"]
mod site;

const PAGES: usize = 2_000;
const CONCURRENCY: usize = 32;

/// Starts a fixture server for `dir` on a runtime thread of its own and returns its address.
fn serve(dir: std::path::PathBuf) -> std::net::SocketAddr {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("server runtime");
        rt.block_on(async move {
            let server = FixtureServer::serve_dir(dir).await.expect("fixture server");
            tx.send(server.addr()).expect("report the address");
            // Serve until the bench process exits.
            std::future::pending::<()>().await;
        });
    });
    rx.recv().expect("server address")
}

async fn crawl(engine: &Engine, monitor: &Monitor) -> usize {
    let mut stream = engine.crawl(monitor).expect("valid monitor");
    let mut done = 0;
    while let Some(event) = stream.next().await {
        if let CrawlEvent::Finished(summary) = event {
            done = summary.progress.done;
        }
    }
    done
}

fn crawl_site(c: &mut Criterion) {
    let pages = std::env::var("WACHET_BENCH_PAGES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(PAGES);
    let dir = std::env::temp_dir().join(format!("wachet-crawl-bench-{}", std::process::id()));
    site::generate(&dir, pages).expect("generate the site");
    let addr = serve(dir.clone());
    let engine = Engine::builder()
        .allow_private_networks(true)
        .max_pages(pages)
        .crawl_concurrency(CONCURRENCY)
        .per_host_rps(0)
        .per_host_concurrency(0)
        .build()
        .expect("engine");
    let mut monitor = Monitor::new(format!("http://{addr}/index.html"));
    monitor.job_type = ClientJobType::Portal;
    monitor.crawling_depth = Some(site::DEPTH as i32);

    let rt = tokio::runtime::Runtime::new().expect("tokio runtime");
    let found = rt.block_on(crawl(&engine, &monitor));
    assert_eq!(found, pages, "the crawl should find every page of the site");

    let mut group = c.benchmark_group("crawl");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(10))
        .throughput(Throughput::Elements(pages as u64));
    group.bench_function(format!("static_site_{pages}_pages_c{CONCURRENCY}"), |b| {
        b.to_async(&rt).iter(|| crawl(&engine, &monitor));
    });
    group.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, crawl_site);
criterion_main!(benches);
