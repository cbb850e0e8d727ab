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

mod links;
pub mod normalize;
mod page;
mod scheduler;

use crate::fetch::{FetchRequest, Fetcher};
use crate::model::ClientData;
use crate::validate::Plan;
use futures::channel::mpsc;
use futures::{SinkExt, Stream};
use page::{PageJob, PageWork, Pending};
use scheduler::{Limits, Scheduler};
use std::collections::HashSet;
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
) -> CrawlStream {
    let (sender, receiver) = mpsc::channel(EVENT_BUFFER);
    let start_request = FetchRequest {
        url: plan.url.clone(),
        method: plan.method.clone(),
        headers: plan.headers.clone(),
        body: plan.body.clone(),
        proxy: plan.proxy.clone(),
    };
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
        headers: plan.headers,
        proxy: plan.proxy,
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

impl Coordinator {
    async fn run(mut self, start: Pending) {
        let began = Instant::now();
        let mut seen: HashSet<String> = HashSet::new();
        seen.insert(start.url.as_str().to_string());
        let mut progress = Progress::default();
        let mut budget_reached = false;
        let mut level = vec![start];
        let mut depth = 0u8;
        while !level.is_empty() {
            let follow = depth < self.max_depth;
            let mut next: Vec<Pending> = Vec::new();
            let mut scheduler = Scheduler::new(self.limits);
            for pending in level.drain(..) {
                scheduler.push(pending);
            }
            let mut tasks: JoinSet<(String, PageWork, u8, Arc<str>)> = JoinSet::new();
            loop {
                let wake = loop {
                    match scheduler.next() {
                        Ok((key, pending)) => {
                            let job = self.job.clone();
                            let url: Arc<str> = Arc::from(pending.url.as_str());
                            let depth = pending.depth;
                            tasks.spawn(async move {
                                let work = page::crawl_page(job, pending, follow).await;
                                (key, work, depth, url)
                            });
                        }
                        Err(wake) => break wake,
                    }
                };
                progress.queued = scheduler.queued() + next.len();
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
                let Some(joined) = joined else {
                    break;
                };
                let Ok((key, work, page_depth, url)) = joined else {
                    // A worker panicked; its host slot is lost only for this level.
                    continue;
                };
                scheduler.finished(&key);
                for link in work.links {
                    if seen.contains(link.as_str()) {
                        continue;
                    }
                    if seen.len() >= self.max_pages {
                        budget_reached = true;
                        break;
                    }
                    seen.insert(link.as_str().to_string());
                    next.push(Pending {
                        url: link,
                        depth: page_depth + 1,
                        found_on: Some(url.clone()),
                        request: None,
                    });
                }
                if let Some(page) = work.page {
                    progress.done += 1;
                    if page.data.error.is_some() {
                        progress.failed += 1;
                    }
                    progress.queued = scheduler.queued() + next.len();
                    let event = CrawlEvent::Page { page, progress };
                    if self.sender.send(event).await.is_err() {
                        // Nobody listens any more: stop; dropping the JoinSet aborts the workers.
                        return;
                    }
                }
            }
            level = next;
            depth += 1;
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
