//! wachet and spider crawling the same generated 10,000-page site (about 20 links and 8 KB a
//! page, every page within 3 hops), served on loopback by nginx (or, without nginx, by
//! `wachet-bench serve` in a child process), depth 3, no xPath, 32 requests in flight.
//!
//! `cargo bench -p wachet-bench --bench crawl_vs_spider`. Pages per second are criterion's
//! "thrpt" in elements/s; `WACHET_BENCH_PAGES` changes the site size. For peak RSS and a
//! process-per-crawl comparison use `cargo run --release -p wachet-bench -- compare`.

use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use std::path::Path;
use std::time::Duration;
use wachet_bench::harness::{self, Crawler, ServerKind, StaticServer, TempDir};
use wachet_bench::site;

const CONCURRENCY: usize = 32;

fn crawl_vs_spider(c: &mut Criterion) {
    let pages = std::env::var("WACHET_BENCH_PAGES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(site::DEFAULT_PAGES);
    let dir = TempDir::new("wachet-bench-criterion").expect("temp dir");
    site::generate(dir.path(), pages).expect("generate the site");
    let exe = Path::new(env!("CARGO_BIN_EXE_wachet-bench"));
    let server = StaticServer::start(dir.path(), ServerKind::Auto, exe).expect("start the server");
    let url = server.start_url();
    eprintln!(
        "server: {}; site: {pages} pages at {url}",
        server.description
    );
    let rt = harness::runtime().expect("tokio runtime");

    let mut group = c.benchmark_group("crawl_10k_site");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(15))
        .throughput(Throughput::Elements(pages as u64));
    for crawler in [Crawler::Wachet, Crawler::Spider] {
        let found = rt
            .block_on(crawler.crawl(&url, pages, CONCURRENCY))
            .expect("crawl");
        if found != pages {
            eprintln!("warning: {} found {found} of {pages} pages", crawler.name());
        }
        group.bench_function(crawler.name(), |b| {
            b.to_async(&rt).iter(|| async {
                crawler
                    .crawl(&url, pages, CONCURRENCY)
                    .await
                    .expect("crawl")
            });
        });
    }
    group.finish();
    drop(server);
}

criterion_group!(benches, crawl_vs_spider);
criterion_main!(benches);
