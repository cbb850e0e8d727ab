//! Hostile pages rendered by a real headless Chromium (`wachet::testing::hostile`): each fails
//! with its own error within a generous bound, the browser's process tree stays under 1 GiB
//! (its PSS, sampled from `/proc` while the check runs), and the next check is healthy. The
//! same inside a Portal crawl: the hostile page fails, the others are crawled.
//!
//! These tests need Chromium. Without it they fail when `CI` is set (CI must install it) and are
//! skipped, loudly, on a developer machine.

use crate::common::{dynamic, engine};
use futures::StreamExt;
use std::time::{Duration, Instant};
use wachet::Checker;
use wachet::model::ClientJobType;
use wachet::testing::FixtureServer;
use wachet::testing::browser_test;
use wachet::testing::hostile::{Hostile, HostileServer};
use wachet::testing::memory::PeakPss;

/// The bound on the browser's tree while a hostile page renders.
const MAX_TREE: u64 = 1024 * 1024 * 1024;

/// The bound on the time of one hostile check (they take a few seconds; unbounded they took
/// 30 s and more).
const MAX_TIME: Duration = Duration::from_secs(20);

/// Checks `case`, asserting its error (or value) with `expect`, the time and the peak memory,
/// then that a harmless page renders in the same engine.
async fn hostile(case: Hostile, expect: impl Fn(Result<&str, &str>) -> bool) {
    let Some(_serial) = browser_test().await else {
        return;
    };
    let server = HostileServer::start().await.unwrap();
    let engine = engine(Duration::from_secs(30));
    // Start the browser first, so the whole check is watched.
    let warm = engine
        .check(&dynamic(server.server().url("/ok")))
        .await
        .unwrap();
    assert_eq!(warm.value(), Some("fine"), "{warm:?}");

    let memory = PeakPss::watch(engine.renderer());
    let began = Instant::now();
    let outcome = engine.check(&dynamic(server.url(case))).await.unwrap();
    let took = began.elapsed();
    let peak = memory.finish();
    let result = match (outcome.value(), outcome.error()) {
        (Some(v), _) => Ok(v),
        (None, Some(e)) => Err(e),
        (None, None) => Err(""),
    };
    let shown = result.map(|v| v.chars().take(80).collect::<String>());
    eprintln!(
        "hostile {case:?}: {shown:?} in {:.1} s, Chromium tree peak {} MiB (PSS)",
        took.as_secs_f64(),
        peak / (1024 * 1024)
    );
    assert!(expect(result), "{case:?}: {shown:?}");
    assert!(took < MAX_TIME, "{case:?} took {took:?}");
    assert!(
        peak < MAX_TREE,
        "{case:?}: the Chromium tree reached {} MiB",
        peak / (1024 * 1024)
    );

    let next = engine
        .check(&dynamic(server.server().url("/ok")))
        .await
        .unwrap();
    assert_eq!(next.value(), Some("fine"), "after {case:?}: {next:?}");
    engine.renderer().shutdown().await;
}

fn too_large(r: Result<&str, &str>) -> bool {
    r == Err("the response is larger than 10485760 bytes")
}

fn over_memory(r: Result<&str, &str>) -> bool {
    r.is_err_and(|e| e.starts_with("the page used more than ") && e.ends_with(" MB of memory"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gzip_bomb_is_cut_at_the_body_cap() {
    hostile(Hostile::GzipBomb, too_large).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_page_is_cut_at_the_body_cap() {
    hostile(Hostile::HugePage, too_large).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heap_growth_ends_at_the_memory_limit() {
    hostile(Hostile::HeapGrowth, over_memory).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn array_buffers_end_at_the_memory_limit() {
    hostile(Hostile::ArrayBuffers, over_memory).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn document_write_loop_ends_at_the_memory_limit() {
    hostile(Hostile::DocumentWriteLoop, over_memory).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_dom_ends_at_the_memory_limit() {
    hostile(Hostile::HugeDom, over_memory).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_iframe_does_not_hold_the_page() {
    hostile(Hostile::FileIframe, |r| r == Ok("hello")).await;
}

/// A Portal crawl with `dynamicContent` over a site where one page is hostile: that page fails
/// with its error, the others are crawled, and the browser serves the next check.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_page_in_a_crawl_fails_alone() {
    let Some(_serial) = browser_test().await else {
        return;
    };
    for case in [Hostile::ArrayBuffers, Hostile::GzipBomb] {
        let server = FixtureServer::builder()
            .page(
                "/",
                format!(
                    "<h1>home</h1><a href=/one>one</a> <a href={}>hostile</a> <a href=/two>two</a>",
                    case.path()
                ),
            )
            .page("/one", "<h1>one</h1>")
            .page("/two", "<h1>two</h1>")
            .reply(case.path(), case.reply())
            .start()
            .await
            .unwrap();
        let engine = engine(Duration::from_secs(30));
        let mut m = dynamic(server.url("/"));
        m.job_type = ClientJobType::Portal;
        m.crawling_depth = Some(1);
        m.x_path = Some("//h1".into());
        let began = Instant::now();
        let mut stream = engine.crawl(&m).unwrap();
        let mut pages = Vec::new();
        while let Some(event) = stream.next().await {
            if let wachet::CrawlEvent::Page { page, .. } = event {
                let path = page.url.trim_start_matches(&server.url("")).to_string();
                pages.push((path, page.data.raw.clone(), page.data.error.clone()));
            }
        }
        pages.sort();
        eprintln!(
            "crawl with {case:?}: {pages:?} in {:.1} s",
            began.elapsed().as_secs_f64()
        );
        assert!(began.elapsed() < Duration::from_secs(40), "{case:?}");
        assert_eq!(pages.len(), 4, "{pages:?}");
        for (path, raw, error) in &pages {
            if path == case.path() {
                let error = error.as_deref().unwrap_or_default();
                let expected = match case {
                    Hostile::GzipBomb => too_large(Err(error)),
                    _ => over_memory(Err(error)),
                };
                assert!(expected, "{case:?}: {error}");
            } else {
                assert!(error.is_none(), "{path}: {error:?}");
                assert!(raw.is_some(), "{path}");
            }
        }
        let next = engine.check(&dynamic(server.url("/one"))).await.unwrap();
        assert_eq!(next.value(), Some("one"), "after the crawl with {case:?}");
        engine.renderer().shutdown().await;
    }
}
