//! `wachet crawl`: one Portal crawl from a start URL. Pages print as they finish (one JSON
//! object per line with `--json`); a progress bar runs on stderr when it is a terminal, and the
//! crawl's statistics end it there (`--stats-json FILE` writes them as JSON too). Exits 0 when
//! the crawl ran, even if some pages failed; 1 when the start page failed (the Portal check
//! failed, as in the service); 2 on invalid input.

use super::page::{PageArgs, report_invalid};
use anyhow::Context;
use clap::Args;
use futures::StreamExt;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;
use wachet::fetch::hosts::HostLimits;
use wachet::model::{ClientJobType, UrlFilter, UrlFilterType, UrlFilterValue};
use wachet::{CrawlEvent, CrawlSettings, CrawlStats, Monitor};

#[derive(Debug, Args)]
pub struct CrawlArgs {
    /// The start page (http or https).
    url: String,
    /// Hops of links to follow from the start page (1 to 3).
    #[arg(long, default_value_t = Monitor::default().effective_crawling_depth())]
    depth: i32,
    /// Follow only links containing this text (repeatable; any one must match).
    #[arg(long = "include", value_name = "TEXT")]
    include: Vec<String>,
    /// Follow only links matching this regex (repeatable; with --include, any one must match).
    #[arg(long = "include-regex", value_name = "REGEX")]
    include_regex: Vec<String>,
    /// Do not follow links containing this text (repeatable).
    #[arg(long = "exclude", value_name = "TEXT")]
    exclude: Vec<String>,
    /// Do not follow links matching this regex (repeatable).
    #[arg(long = "exclude-regex", value_name = "REGEX")]
    exclude_regex: Vec<String>,
    /// Follow links to other hosts too.
    #[arg(long)]
    all_domains: bool,
    /// Keep non-HTML pages (their value is type, length and SHA-256).
    #[arg(long)]
    binary: bool,
    /// Leave out pages answering with HTTP status 400 or above.
    #[arg(long)]
    ignore_invalid: bool,
    #[command(flatten)]
    page: PageArgs,
    /// Most pages to visit.
    #[arg(long, default_value_t = CrawlSettings::default().max_pages)]
    max_pages: usize,
    /// Requests in flight at once.
    #[arg(long, default_value_t = CrawlSettings::default().concurrency)]
    concurrency: usize,
    /// Requests per second per host (0 = no limit).
    #[arg(long, default_value_t = HostLimits::default().rps)]
    per_host_rps: u32,
    /// Requests in flight per host (0 = no limit).
    #[arg(long, default_value_t = HostLimits::default().concurrency)]
    per_host_concurrency: usize,
    /// Print one JSON object per page per line.
    #[arg(long)]
    json: bool,
    /// Write the crawl's statistics (pages, failed, requests, bytes, elapsed, pages per second,
    /// latency percentiles, statuses, budget) to FILE as JSON.
    #[arg(long, value_name = "FILE")]
    stats_json: Option<std::path::PathBuf>,
}

fn filters(contains: &[String], regexes: &[String]) -> Option<Vec<UrlFilterValue>> {
    let values: Vec<UrlFilterValue> = contains
        .iter()
        .map(|f| (f, UrlFilterType::Contains))
        .chain(regexes.iter().map(|f| (f, UrlFilterType::Regex)))
        .map(|(filter, kind)| UrlFilterValue {
            filter: Some(filter.clone()),
            kind,
        })
        .collect();
    (!values.is_empty()).then_some(values)
}

pub async fn run(args: CrawlArgs) -> anyhow::Result<ExitCode> {
    let engine = args
        .page
        .engine()?
        .max_pages(args.max_pages)
        .crawl_concurrency(args.concurrency)
        .per_host_rps(args.per_host_rps)
        .per_host_concurrency(args.per_host_concurrency)
        .build()?;
    let mut monitor = Monitor::new(args.url);
    monitor.job_type = ClientJobType::Portal;
    monitor.crawling_depth = Some(args.depth);
    monitor.url_filter = Some(UrlFilter {
        include: filters(&args.include, &args.include_regex),
        exclude: filters(&args.exclude, &args.exclude_regex),
    });
    monitor.crawl_pages_from_all_domains = args.all_domains;
    monitor.crawl_binary_content = args.binary;
    monitor.ignore_invalid_pages = args.ignore_invalid;
    args.page.apply(&mut monitor)?;

    let mut stream = match engine.crawl(&monitor) {
        Ok(stream) => stream,
        Err(invalid) => return Ok(report_invalid(&invalid)),
    };
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = ProgressBar::new_spinner();
        bar.set_style(
            ProgressStyle::with_template("{spinner} {msg} [{elapsed}]")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.enable_steady_tick(Duration::from_millis(120));
        bar
    });
    let started = std::time::Instant::now();
    let mut out = std::io::stdout().lock();
    let mut start_failed = false;
    while let Some(event) = stream.next().await {
        match event {
            CrawlEvent::Page { page, progress } => {
                start_failed |= page.depth == 0 && page.data.error.is_some();
                if args.json {
                    let line = serde_json::json!({
                        "url": page.url,
                        "depth": page.depth,
                        "status": page.status,
                        "title": page.title,
                        "data": page.data,
                    });
                    writeln!(out, "{line}")?;
                } else {
                    let status = page.status.map_or("---".to_string(), |s| s.to_string());
                    let summary = match (&page.data.raw, &page.data.error) {
                        (_, Some(err)) => format!("error: {err}"),
                        (Some(raw), None) => {
                            raw.lines().next().unwrap_or("").chars().take(80).collect()
                        }
                        (None, None) => String::new(),
                    };
                    writeln!(out, "{} {status} {}\t{summary}", page.depth, page.url)?;
                }
                if let Some(bar) = &bar {
                    let rate = progress.done as f64 / started.elapsed().as_secs_f64().max(0.001);
                    bar.set_message(format!(
                        "{} done, {} queued, {} failed, {rate:.0} pages/s",
                        progress.done, progress.queued, progress.failed
                    ));
                }
            }
            // Pages left out (`ignoreInvalidPages`, `crawlBinaryContent`) are not printed.
            CrawlEvent::LeftOut(_) => {}
            CrawlEvent::Finished(summary) => {
                if let Some(bar) = &bar {
                    bar.finish_and_clear();
                }
                eprint!("{}", stats_text(&summary.stats));
                if let Some(path) = &args.stats_json {
                    let json = serde_json::to_string_pretty(&summary.stats)?;
                    std::fs::write(path, json + "\n").with_context(|| {
                        format!("cannot write the statistics to {}", path.display())
                    })?;
                }
            }
            _ => {}
        }
    }
    out.flush()?;
    Ok(match start_failed {
        true => ExitCode::from(1),
        false => ExitCode::SUCCESS,
    })
}

/// The statistics as the lines printed on stderr at the end of a crawl.
fn stats_text(stats: &CrawlStats) -> String {
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let statuses: Vec<String> = stats
        .statuses
        .iter()
        .map(|(status, n)| format!("{status}: {n}"))
        .collect();
    format!(
        "{} pages ({} failed), {} requests, {} bytes in {:.2} s, {:.1} pages/s{}\n\
         latency p50 {:.1} ms, p90 {:.1} ms, p99 {:.1} ms\n\
         statuses {}\n",
        stats.pages,
        stats.failed,
        stats.requests,
        stats.bytes,
        stats.elapsed.as_secs_f64(),
        stats.pages_per_second,
        if stats.budget_reached {
            ", stopped by the page budget"
        } else {
            ""
        },
        ms(stats.latency.p50),
        ms(stats.latency.p90),
        ms(stats.latency.p99),
        if statuses.is_empty() {
            "none".to_string()
        } else {
            statuses.join(", ")
        },
    )
}
