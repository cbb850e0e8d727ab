//! `wachet-bench-chrome URL MAXPAGES CONCURRENCY WAIT`: one spider chrome crawl (spider's
//! `chrome` + `real_browser` features), one JSON line on stdout, for `wachet-bench
//! compare-render`.
//!
//! `WAIT` is what spider waits for after the `load` event before it serializes a page, so it
//! sees links inserted by script after load: `delay:MS` (a fixed delay, spider's
//! `with_wait_for_delay`) or `dom:MS` (spider's idle-DOM wait on `body`, at most MS,
//! `with_wait_for_idle_dom`).
//!
//! Chromium: spider finds it through `CHROME_BIN` (else `chromium` etc. on PATH); it launches
//! it headless with `--no-sandbox` (spider's `get_browser_config`). It never downloads one.

use std::time::{Duration, Instant};

fn usage() -> std::process::ExitCode {
    eprintln!("usage: wachet-bench-chrome URL MAXPAGES CONCURRENCY delay:MS|dom:MS");
    std::process::ExitCode::from(2)
}

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url, max, conc, wait] = args.as_slice() else {
        return usage();
    };
    let (Ok(max), Ok(conc)) = (max.parse::<u32>(), conc.parse::<usize>()) else {
        return usage();
    };
    let Some((kind, ms)) = wait.split_once(':') else {
        return usage();
    };
    let Ok(ms) = ms.parse::<u64>() else {
        return usage();
    };
    let wait_ms = Duration::from_millis(ms);

    let mut website = spider::website::Website::new(url);
    website
        // spider's depth counts URL path segments (`/site/N.html` is 2), not hops; the site is
        // closed, so the page budget bounds the crawl.
        .with_depth(3)
        .with_limit(max)
        .with_concurrency_limit(Some(conc))
        .with_respect_robots_txt(false)
        .with_delay(0)
        .with_subdomains(false)
        .with_tld(false)
        .with_request_timeout(Some(Duration::from_secs(30)));
    match kind {
        "delay" => {
            website.with_wait_for_delay(Some(spider::configuration::WaitForDelay::new(Some(
                wait_ms,
            ))));
        }
        "dom" => {
            website.with_wait_for_idle_dom(Some(spider::configuration::WaitForSelector::new(
                Some(wait_ms),
                "body".into(),
            )));
        }
        _ => return usage(),
    }

    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let began = Instant::now();
    let counts = std::sync::Arc::new(std::sync::Mutex::new((0usize, 0usize, Duration::ZERO)));
    let (visited, crawl_returned) = rt.block_on(async {
        let mut rx = website.subscribe(1024);
        let shared = counts.clone();
        let counter = tokio::spawn(async move {
            while let Ok(page) = rx.recv().await {
                let linked = page.get_html().contains("<a href=");
                if let Ok(mut c) = shared.lock() {
                    c.0 += 1;
                    // A page whose script ran shows its inserted links (leaves have none).
                    c.1 += usize::from(linked);
                    c.2 = began.elapsed();
                }
            }
        });
        website.crawl().await;
        let crawl_returned = began.elapsed();
        // spider keeps a sender alive after the crawl: give the receiver a moment, then stop it.
        tokio::time::sleep(Duration::from_millis(200)).await;
        counter.abort();
        (website.get_size().await, crawl_returned)
    });
    let (received, linked, last) = *counts.lock().expect("counts");
    let seconds = if last.is_zero() {
        began.elapsed().as_secs_f64()
    } else {
        last.as_secs_f64()
    };
    eprintln!(
        "spider: visited {visited}, {received} pages received, {linked} with inserted links, \
         crawl() returned after {:.2} s",
        crawl_returned.as_secs_f64()
    );
    let pages = received;
    let peak_rss_mb = std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0);
    println!(
        "{}",
        serde_json::json!({
            "crawler": "spider chrome",
            "pages": pages,
            "visited": visited,
            "with_links": linked,
            "seconds": seconds,
            "pages_per_sec": pages as f64 / seconds.max(1e-9),
            "peak_rss_mb": peak_rss_mb,
        })
    );
    // Chromium and spider's background tasks are not waited for.
    rt.shutdown_timeout(Duration::from_secs(2));
    std::process::ExitCode::SUCCESS
}
