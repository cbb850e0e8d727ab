//! `wachet-bench`: crawl wachet and spider side by side on a generated static site.
//!
//! ```text
//! wachet-bench generate DIR N                          write an N-page site to DIR
//! wachet-bench serve DIR PORT                          serve DIR on 127.0.0.1:PORT (Rust fallback server)
//! wachet-bench crawl-wachet URL MAXPAGES CONCURRENCY   crawl with wachet, print one JSON line
//! wachet-bench crawl-spider URL MAXPAGES CONCURRENCY   crawl with spider, print one JSON line
//! wachet-bench compare [--pages N] [--runs R] [--server nginx|rust] [--concurrency C] [--only wachet|spider] [--site DIR]
//! wachet-bench parse-cost DIR [PAGES]                  CPU per page of parsing, text and tokenizing
//! wachet-bench crawl-render-wachet URL QUIET_MS TABS   rendered Portal crawl, print one JSON line
//! wachet-bench compare-render [--runs R] [--tabs T] [--quiet 300,100] [--spider-wait delay:MS|dom:MS]
//!                             [--spider-exe PATH] [--no-spider 1] [--server nginx|rust] [--trace-dir DIR]
//!                             [--spider-chrome PATH,PATH]
//! wachet-bench api [--duration S] [--warmup S] [--concurrency C] [--monitors N] [--history N]
//!                  [--client-threads T] [--server nginx|rust|auto] [--wachet PATH] [--rounds R]
//! wachet-bench schedule [--monitors N] [--hosts H] [--recurrence S] [--warmup S] [--duration S]
//!                       [--checks-in-flight N] [--wachet PATH] [--slow-monitors N] [--slow-ms MS]
//! wachet-bench history [--changes N] [--reads R]
//! wachet-bench steps [--checks N] [--slots S]
//! wachet-bench noise [--checks N] [--seed S] [--corpus first|second|both] [--window W]
//!                    [--cdio-recheck S] [--no-cdio 1] [--keep DIR] [--no-wachet 1] [--wachet PATH]
//!                    [--timeout-minutes M]
//! wachet-bench soak [--minutes N] [--monitors N] [--rendered N] [--api-clients N]
//!                   [--wachet PATH] [--plot PATH]
//! wachet-bench scale [--monitors N] [--recurrence S] [--hosts H] [--warmup S] [--duration S]
//!                    [--workers 1,2,3] [--sqlite 0|1] [--wachet PATH] [--server nginx|rust|auto]
//! ```
//!
//! `history` writes a ~100 KB page and `--changes` (1,000) one-word changes of it through the
//! service's SQLite store, reads each entry back alone, then rewrites the same values whole
//! (the codec before delta history) and reads them again: bytes a change, read time per entry
//! (median, max) and the ratios.
//!
//! `steps` checks a local site behind a sign-in with a login and three browser steps, its
//! session kept and not, beside the same page rendered without steps: time a check, peak
//! Chromium PSS, sign-ins, and checks a minute at the service's default browser checks in
//! flight.
//!
//! `noise` serves noisy pages with real changes at known requests (the first corpus's 17 pages,
//! or with `--corpus second` 15 pages written apart from it and from wachet's alert rules),
//! watches them with the release `wachet serve` and changedetection.io 0.60.10 at once, and
//! prints the false, missed and true alerts of each page side by side.
//!
//! `soak` runs the release `wachet serve` for `--minutes` (10) with 2,000 monitors against
//! hosts that hang, reset, answer slowly, flap, bomb and loop, webhooks that fail, hang and
//! redirect, API clients writing all the while and a `kill -9` half way; it prints RSS,
//! descriptors, database size per check, Chromium processes, check rate and lateness a minute,
//! draws them as a PNG and asserts no panic, no 5xx, no lost notification, flat RSS and
//! descriptors.
//!
//! `scale` checks 10,000 monitors a minute with the release `wachet serve` on SQLite (one
//! process), then on a private PostgreSQL with 1, 2 and 3 worker processes, and prints checks/s,
//! lateness p50/p99, CPU a check of the workers and of PostgreSQL, and database growth.
//!
//! `schedule` runs the release `wachet serve` checking `--monitors` (10,000) SinglePage
//! monitors every 60 s against pages this process serves on 127.0.0.1..=127.0.0.`H`, and
//! reports checks/s, lateness p50/p99, RSS, CPU per check and database growth.
//!
//! `api` starts the release `wachet serve` (target/release/wachet, built beforehand with
//! `cargo build --release -p wachet-server`) on a temporary database, seeds a folder of 10,000
//! monitors and a 1,000,000-entry history, and measures requests/s and p50/p99 of four
//! endpoints and of a static-file ceiling with 32 keep-alive connections, then the service's
//! RSS.
//!
//! `compare-render` crawls a 300-page JS site (links inserted 100 ms after load) with wachet's
//! renderer and with spider's chrome crawl (the `wachet-bench-chrome` binary of `bench/chrome`,
//! built separately), alternating, and prints pages found, pages/s and peak Chromium PSS.
//!
//! `compare` generates the site in a temporary directory, serves it with nginx (or, without
//! nginx, with `serve` in a child process), runs each crawler `R` times as a child process,
//! alternating, and prints the medians, the ratio and the peak RSS (VmHWM) of each, then the
//! ceiling: requests/s of one page of the site over as many keep-alive connections, from this
//! process, and wachet's share of it.

use wachet_bench::{harness, site};

use std::path::PathBuf;
use std::process::ExitCode;

fn usage() -> ExitCode {
    eprintln!(
        "usage:\n  wachet-bench generate DIR N\n  wachet-bench serve DIR PORT\n  \
         wachet-bench crawl-wachet URL MAXPAGES CONCURRENCY\n  \
         wachet-bench crawl-spider URL MAXPAGES CONCURRENCY\n  \
         wachet-bench compare [--pages N] [--runs R] [--server nginx|rust] [--concurrency C] \
         [--only wachet|spider] [--site DIR]\n  wachet-bench parse-cost DIR [PAGES]\n  \
         wachet-bench crawl-render-wachet URL QUIET_MS TABS\n  \
         wachet-bench compare-render [--runs R] [--tabs T] [--quiet 300,100] \
         [--spider-wait delay:MS|dom:MS] [--spider-exe PATH] [--no-spider 1] [--server nginx|rust] \
         [--trace-dir DIR] [--spider-chrome PATH,PATH]\n  \
         wachet-bench api [--duration S] [--warmup S] [--concurrency C] [--monitors N] \
         [--history N] [--client-threads T] [--server nginx|rust|auto] [--wachet PATH] \
         [--rounds R]\n  \
         wachet-bench schedule [--monitors N] [--hosts H] [--recurrence S] [--warmup S] \
         [--duration S] [--checks-in-flight N] [--wachet PATH] [--slow-monitors N] \
         [--slow-ms MS]\n  \
         wachet-bench history [--changes N] [--reads R]\n  \
         wachet-bench steps [--checks N] [--slots S]\n  \
         wachet-bench noise [--checks N] [--seed S] [--corpus first|second|both] [--window W] \
         [--cdio-recheck S] \
         [--no-cdio 1] [--no-wachet 1] [--wachet PATH] [--timeout-minutes M] [--keep DIR]\n  \
         wachet-bench soak [--minutes N] [--monitors N] [--rendered N] [--api-clients N] \
         [--wachet PATH] [--plot PATH]\n  \
         wachet-bench scale [--monitors N] [--recurrence S] [--hosts H] [--warmup S] \
         [--duration S] [--workers 1,2,3] [--sqlite 0|1] [--wachet PATH] \
         [--server nginx|rust|auto]"
    );
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(mode) = args.first() else {
        return usage();
    };
    let rest = &args[1..];
    let result = match (mode.as_str(), rest) {
        ("generate", [dir, n]) => match n.parse() {
            Ok(n) => site::generate(&PathBuf::from(dir), n)
                .map(|s| {
                    eprintln!("wrote {} pages (fan-out {}) to {dir}", s.pages, s.fanout);
                })
                .map_err(|e| e.to_string()),
            Err(_) => return usage(),
        },
        ("serve", [dir, port]) => match port.parse() {
            Ok(port) => harness::serve(PathBuf::from(dir), port),
            Err(_) => return usage(),
        },
        ("crawl-wachet" | "crawl-spider", [url, max, conc]) => {
            let (Ok(max), Ok(conc)) = (max.parse(), conc.parse()) else {
                return usage();
            };
            let crawler = if mode == "crawl-wachet" {
                harness::Crawler::Wachet
            } else {
                harness::Crawler::Spider
            };
            harness::crawl_and_report(crawler, url, max, conc)
        }
        ("parse-cost", [dir, rest @ ..]) if rest.len() <= 1 => {
            let limit = rest.first().and_then(|n| n.parse().ok()).unwrap_or(2_000);
            wachet_bench::parse_cost::run(&PathBuf::from(dir), limit)
        }
        ("crawl-render-wachet", [url, quiet, tabs]) => {
            let (Ok(quiet), Ok(tabs)) = (quiet.parse(), tabs.parse()) else {
                return usage();
            };
            wachet_bench::render::crawl_render_wachet(url, quiet, tabs)
        }
        ("compare-render", opts) => match wachet_bench::render::CompareRenderOptions::parse(opts) {
            Some(options) => wachet_bench::render::compare_render(&options),
            None => return usage(),
        },
        ("api", opts) => match wachet_bench::api::ApiOptions::parse(opts) {
            Some(options) => wachet_bench::api::run(&options),
            None => return usage(),
        },
        ("schedule", opts) => match wachet_bench::schedule::ScheduleOptions::parse(opts) {
            Some(options) => wachet_bench::schedule::run(&options),
            None => return usage(),
        },
        ("history", opts) => match wachet_bench::history::HistoryOptions::parse(opts) {
            Some(options) => wachet_bench::history::run(&options),
            None => return usage(),
        },
        ("steps", opts) => match wachet_bench::steps::StepsOptions::parse(opts) {
            Some(options) => wachet_bench::steps::run(&options),
            None => return usage(),
        },
        ("noise", opts) => match wachet_bench::noise::NoiseOptions::parse(opts) {
            Some(options) => wachet_bench::noise::run(&options),
            None => return usage(),
        },
        ("soak", opts) => match wachet_bench::soak::SoakOptions::parse(opts) {
            Some(options) => wachet_bench::soak::run(&options),
            None => return usage(),
        },
        ("scale", opts) => match wachet_bench::scale::ScaleOptions::parse(opts) {
            Some(options) => wachet_bench::scale::run(&options),
            None => return usage(),
        },
        ("compare", opts) => match harness::CompareOptions::parse(opts) {
            Some(options) => harness::compare(&options),
            None => return usage(),
        },
        _ => return usage(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("wachet-bench: {err}");
            ExitCode::FAILURE
        }
    }
}
