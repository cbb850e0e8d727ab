//! The Portal crawler: from a start URL, follow links breadth-first up to the monitor's depth,
//! within scope and URL filters, never fetching one normalized URL twice, under a page budget
//! and rate limits.
//!
//! One coordinator task owns the frontier, the seen-set and the [`scheduler`]; workers
//! ([`page`]) fetch and parse pages concurrently and hand back values and links. Because only
//! the coordinator touches shared state there is no lock on the hot path, and dedup is exact
//! even when two pages link to the same URL at once. Levels are crawled in turn, so every
//! page's depth is its shortest distance from the start. Results stream out over a bounded
//! channel ([`CrawlStream`]), so a large crawl is never held in memory by the crawler.

pub(crate) mod links;
pub mod normalize;
mod page;
mod scheduler;

use crate::fetch::Fetcher;
use crate::model::ClientData;
use crate::validate::Plan;
use futures::channel::mpsc;
use futures::{FutureExt, SinkExt, Stream};
use page::{PageJob, PageWork, Pending};
use scheduler::{Limits, Scheduler};
use std::collections::HashSet;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::task::JoinSet;

/// Crawl settings of an engine. Defaults: 500 pages, 16 requests in flight, 4 in flight and
/// 10 requests per second per host, URLs up to 2,048 characters, tracking parameters kept.
#[derive(Debug, Clone)]
pub struct CrawlSettings {
    /// Most pages one crawl visits.
    pub max_pages: usize,
    /// Requests in flight at once.
    pub concurrency: usize,
    /// Requests in flight per host (0 = no limit).
    pub per_host_concurrency: usize,
    /// Requests per second per host (0 = no limit).
    pub per_host_rps: u32,
    /// Longest URL followed.
    pub max_url_len: usize,
    /// Remove `utm_*`, `fbclid` and `gclid` from links before dedup.
    pub strip_tracking_params: bool,
}

impl Default for CrawlSettings {
    fn default() -> Self {
        CrawlSettings {
            max_pages: 500,
            concurrency: 16,
            per_host_concurrency: 4,
            per_host_rps: 10,
            max_url_len: crate::validate::MAX_URL_LEN,
            strip_tracking_params: false,
        }
    }
}

/// One page of a crawl.
#[derive(Debug, Clone, PartialEq)]
pub struct CrawledPage {
    /// The normalized URL.
    pub url: String,
    /// Hops from the start page (0).
    pub depth: u8,
    /// The page the link was found on (none for the start page).
    pub found_on: Option<String>,
    /// HTTP status, when a response arrived.
    pub status: Option<u16>,
    /// Content-Type of the response.
    pub content_type: Option<String>,
    /// The URL after redirects.
    pub final_url: Option<String>,
    /// The page's value (the monitor's xPath/excludeXPath/regex applied) or error.
    pub data: ClientData,
}

/// Counts so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    /// Pages finished.
    pub done: usize,
    /// Pages waiting to be fetched.
    pub queued: usize,
    /// Finished pages that failed.
    pub failed: usize,
}

/// The end of a crawl.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CrawlSummary {
    /// Final counts.
    pub progress: Progress,
    /// The page budget stopped the crawl before every in-scope link was followed.
    pub budget_reached: bool,
    /// How long the crawl took.
    pub elapsed: Duration,
}

/// What a crawl stream yields.
#[derive(Debug, Clone, PartialEq)]
pub enum CrawlEvent {
    /// A page finished (pages left out by `ignoreInvalidPages` or `crawlBinaryContent` are not
    /// reported).
    Page {
        /// The page.
        page: CrawledPage,
        /// Counts after it.
        progress: Progress,
    },
    /// The crawl ended; always the last event.
    Finished(CrawlSummary),
}

/// Pages of a crawl as they finish. Dropping the stream stops the crawl.
pub struct CrawlStream {
    receiver: mpsc::Receiver<CrawlEvent>,
}

impl Stream for CrawlStream {
    type Item = CrawlEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<CrawlEvent>> {
        Pin::new(&mut self.receiver).poll_next(cx)
    }
}

/// Events buffered between the crawler and a slow consumer; past this the crawler waits.
const EVENT_BUFFER: usize = 256;

/// Starts crawling; must run inside a tokio runtime.
pub(crate) fn start(
    plan: Plan,
    monitor: &crate::Monitor,
    fetcher: Arc<dyn Fetcher>,
    settings: &CrawlSettings,
    page_timeout: std::time::Duration,
) -> CrawlStream {
    let (sender, receiver) = mpsc::channel(EVENT_BUFFER);
    let start_request = plan.request();
    let start_url = normalize::normalize(plan.url.clone(), settings.strip_tracking_params)
        .unwrap_or_else(|| plan.url.clone());
    let job = Arc::new(PageJob {
        fetcher,
        start_site: normalize::site_of(&start_url).to_string(),
        extractor: plan.extractor,
        filter: plan.url_filter,
        ignore_invalid_pages: monitor.ignore_invalid_pages,
        binary: monitor.crawl_binary_content,
        all_domains: monitor.crawl_pages_from_all_domains,
        strip_tracking: settings.strip_tracking_params,
        max_url_len: settings.max_url_len,
        redirected_site: std::sync::OnceLock::new(),
        headers: plan.headers,
        proxy: plan.proxy,
        page_timeout,
    });
    let coordinator = Coordinator {
        job,
        max_depth: plan.crawling_depth,
        max_pages: settings.max_pages.max(1),
        limits: Limits {
            concurrency: settings.concurrency.max(1),
            per_host_concurrency: settings.per_host_concurrency,
            per_host_rps: settings.per_host_rps,
        },
        sender,
    };
    let start = Pending {
        url: start_url,
        depth: 0,
        found_on: None,
        request: Some(start_request),
    };
    tokio::spawn(coordinator.run(start));
    CrawlStream { receiver }
}

struct Coordinator {
    job: Arc<PageJob>,
    max_depth: u8,
    max_pages: usize,
    limits: Limits,
    sender: mpsc::Sender<CrawlEvent>,
}

/// What a worker hands back, whatever happened to it.
struct Finished {
    host: String,
    depth: u8,
    url: Arc<str>,
    work: Option<PageWork>,
}

impl Coordinator {
    /// Crawls without a barrier between levels. A finished page's links get depth d + 1 only
    /// once every page of depth < d has finished: then every URL of depth <= d is known, so
    /// each new URL's depth is its shortest distance. Until then its links wait in `deferred`,
    /// while pages already known keep being fetched, so a slow host holds back only the links
    /// that might still be found closer to the start.
    async fn run(mut self, start: Pending) {
        let began = Instant::now();
        let levels = usize::from(self.max_depth) + 2;
        let mut seen: HashSet<String> = HashSet::new();
        seen.insert(start.url.as_str().to_string());
        let mut progress = Progress::default();
        let mut budget_reached = false;
        let mut outstanding = vec![0usize; levels];
        let mut deferred: Vec<Vec<(Vec<url::Url>, Arc<str>)>> = vec![Vec::new(); levels];
        let mut scheduler = Scheduler::new(self.limits);
        outstanding[0] = 1;
        scheduler.push(start);
        let mut tasks: JoinSet<Finished> = JoinSet::new();
        loop {
            let wake = loop {
                match scheduler.next() {
                    Ok((host, pending)) => {
                        let job = self.job.clone();
                        let follow = pending.depth < self.max_depth;
                        let depth = pending.depth;
                        let url: Arc<str> = Arc::from(pending.url.as_str());
                        tasks.spawn(async move {
                            // A panic in one page must not lose the page's place in the count.
                            let work = AssertUnwindSafe(page::crawl_page(job, pending, follow))
                                .catch_unwind()
                                .await
                                .ok();
                            Finished {
                                host,
                                depth,
                                url,
                                work,
                            }
                        });
                    }
                    Err(wake) => break wake,
                }
            };
            if scheduler.in_flight() == 0 && scheduler.queued() == 0 {
                break;
            }
            let joined = match wake {
                Some(at) if scheduler.in_flight() == 0 => {
                    tokio::time::sleep_until(at.into()).await;
                    continue;
                }
                Some(at) => {
                    tokio::select! {
                        joined = tasks.join_next() => joined,
                        () = tokio::time::sleep_until(at.into()) => continue,
                    }
                }
                None => tasks.join_next().await,
            };
            let Some(Ok(finished)) = joined else {
                // Tasks catch their panics, so this is only a cancelled task at shutdown.
                continue;
            };
            scheduler.finished(&finished.host);
            let depth = usize::from(finished.depth);
            outstanding[depth] = outstanding[depth].saturating_sub(1);
            let work = finished.work.unwrap_or_else(|| PageWork {
                page: None,
                links: Vec::new(),
                final_url: None,
            });
            if let Some(final_url) = &work.final_url {
                // A redirect target is not fetched again when a link to it turns up later.
                seen.insert(final_url.as_str().to_string());
            }
            if !work.links.is_empty() {
                deferred[depth].push((work.links, finished.url.clone()));
            }
            for level in 0..levels - 1 {
                if outstanding[..level].iter().any(|&n| n > 0) {
                    break;
                }
                for (links, parent) in std::mem::take(&mut deferred[level]) {
                    for link in links {
                        if seen.contains(link.as_str()) {
                            continue;
                        }
                        if seen.len() >= self.max_pages {
                            budget_reached = true;
                            break;
                        }
                        seen.insert(link.as_str().to_string());
                        outstanding[level + 1] += 1;
                        scheduler.push(Pending {
                            url: link,
                            depth: finished_depth(level),
                            found_on: Some(parent.clone()),
                            request: None,
                        });
                    }
                }
            }
            if let Some(page) = work.page {
                progress.done += 1;
                if page.data.error.is_some() {
                    progress.failed += 1;
                }
                progress.queued = scheduler.queued();
                let event = CrawlEvent::Page { page, progress };
                if self.sender.send(event).await.is_err() {
                    // Nobody listens any more: stop; dropping the JoinSet aborts the workers.
                    return;
                }
            }
        }
        progress.queued = 0;
        let summary = CrawlSummary {
            progress,
            budget_reached,
            elapsed: began.elapsed(),
        };
        let _ = self.sender.send(CrawlEvent::Finished(summary)).await;
    }
}

/// The depth of a link found on a page of depth `level`.
fn finished_depth(level: usize) -> u8 {
    u8::try_from(level + 1).unwrap_or(u8::MAX)
}
