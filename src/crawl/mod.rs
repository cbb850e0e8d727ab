//! The Portal crawler: from a start URL, follow links breadth-first up to the monitor's depth,
//! within scope and URL filters, never fetching one normalized URL twice, under a page budget
//! and rate limits.
//!
//! One coordinator task owns the `frontier` (the claims, the pages out per depth, the links
//! waiting for their depth) and the [`scheduler`]; workers ([`page`]) fetch and parse pages
//! concurrently and hand back values and links. Only the coordinator claims a URL, so dedup is
//! exact even when two pages link to the same URL at once; workers only read the set of claimed
//! URLs ([`claimed`], a read lock a batch of links) to drop the links the crawl already has
//! before they are parsed and sent. Levels are crawled in turn, so every page's depth is its
//! shortest distance from the start. Results stream out over a bounded channel
//! ([`CrawlStream`]), so a large crawl is never held in memory by the crawler.

mod claimed;
mod frontier;
pub(crate) mod links;
pub mod normalize;
mod page;
pub mod portal;
mod scheduler;

use crate::fetch::Fetcher;
use crate::outcome::ErrorKind;
pub use crate::outcome::{
    CrawlEvent, CrawlStats, CrawlStream, CrawlSummary, CrawledPage, Latency, LeftOutPage,
    LeftOutReason, Progress,
};
use crate::validate::Plan;
use frontier::Frontier;
use futures::channel::mpsc;
use futures::{FutureExt, SinkExt};
use page::{FetchStat, Outcome, PageJob, PageWork, Pending};
pub use portal::PortalFold;
use scheduler::{Limits, Scheduler};
use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::JoinSet;

/// Crawl settings of an engine. Defaults: 500 pages, 16 requests in flight, URLs up to 2,048
/// characters, tracking parameters kept. Per-host limits are the engine's, shared by every
/// check ([`EngineBuilder::per_host_concurrency`](crate::EngineBuilder::per_host_concurrency)).
#[derive(Debug, Clone)]
pub struct CrawlSettings {
    /// Most pages one crawl visits.
    pub max_pages: usize,
    /// Requests in flight at once.
    pub concurrency: usize,
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
            max_url_len: crate::fetch::MAX_URL_LEN,
            strip_tracking_params: false,
        }
    }
}

/// Events buffered between the crawler and a slow consumer; past this the crawler waits.
const EVENT_BUFFER: usize = 256;

/// Most redirects followed from one link, hop by hop (as the HTTP fetcher's default).
const MAX_HOPS: u8 = 10;

/// Starts crawling; must run inside a tokio runtime.
pub(crate) fn start(
    plan: Arc<Plan>,
    monitor: &crate::model::Monitor,
    fetcher: Arc<dyn Fetcher>,
    settings: &CrawlSettings,
    hosts: crate::fetch::hosts::HostLimits,
    page_timeout: std::time::Duration,
) -> CrawlStream {
    let (sender, receiver) = mpsc::channel(EVENT_BUFFER);
    let start_request = plan.request();
    let start_url = normalize::normalize(plan.url.clone(), settings.strip_tracking_params)
        .unwrap_or_else(|| plan.url.clone());
    let job = Arc::new(PageJob {
        fetcher,
        start_site: normalize::site_of(&start_url).to_string(),
        plan: plan.clone(),
        ignore_invalid_pages: monitor.ignore_invalid_pages,
        binary: monitor.crawl_binary_content,
        all_domains: monitor.crawl_pages_from_all_domains,
        strip_tracking: settings.strip_tracking_params,
        max_url_len: settings.max_url_len,
        redirected_site: std::sync::OnceLock::new(),
        page_timeout,
        claimed: Arc::default(),
    });
    let coordinator = Coordinator {
        job,
        max_depth: plan.crawling_depth,
        max_pages: settings.max_pages.max(1),
        limits: Limits {
            concurrency: settings.concurrency.max(1),
            per_host_concurrency: hosts.concurrency,
        },
        sender,
    };
    let start = Pending {
        fetch_url: start_url.clone(),
        url: start_url,
        hops: 0,
        depth: 0,
        found_on: None,
        request: Some(Box::new(start_request)),
    };
    tokio::spawn(coordinator.run(start));
    CrawlStream {
        receiver,
        logged_in: None,
    }
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
    host: Arc<str>,
    pending: Pending,
    work: Option<PageWork>,
}

/// The statistics gathered while a crawl runs.
#[derive(Default)]
struct Tally {
    pages: usize,
    failed: usize,
    requests: usize,
    bytes: u64,
    /// One per response; bounded by the page budget times the redirect limit.
    latencies: Vec<Duration>,
    statuses: BTreeMap<u16, usize>,
}

impl Tally {
    fn request(&mut self, fetch: &FetchStat) {
        self.requests += 1;
        self.bytes += fetch.bytes;
        if let Some(status) = fetch.status {
            *self.statuses.entry(status).or_default() += 1;
            self.latencies.push(fetch.latency);
        }
    }

    fn page(&mut self, failed: bool) {
        self.pages += 1;
        if failed {
            self.failed += 1;
        }
    }

    fn stats(mut self, elapsed: Duration, budget_reached: bool) -> CrawlStats {
        self.latencies.sort_unstable();
        let at = |p: usize| -> Duration {
            if self.latencies.is_empty() {
                return Duration::ZERO;
            }
            // Nearest rank.
            let rank = (p * self.latencies.len()).div_ceil(100).max(1);
            self.latencies[rank.min(self.latencies.len()) - 1]
        };
        let latency = Latency {
            p50: at(50),
            p90: at(90),
            p99: at(99),
        };
        CrawlStats {
            pages: self.pages,
            failed: self.failed,
            requests: self.requests,
            bytes: self.bytes,
            elapsed,
            pages_per_second: self.pages as f64 / elapsed.as_secs_f64().max(1e-6),
            latency,
            statuses: self.statuses,
            budget_reached,
        }
    }
}

impl Coordinator {
    /// Crawls without a barrier between levels: links whose depth is not yet certain wait in
    /// the [`Frontier`] while pages already known keep being fetched, so a slow host holds back
    /// only the links that might still be found closer to the start.
    ///
    /// Redirects are followed hop by hop here, each hop's URL claimed like a
    /// link's, so a page reached both by a redirect and by a link is fetched once, whichever
    /// comes first. A page that redirects to a page already claimed is left out
    /// ([`LeftOutReason::RedirectToKnownPage`]); a hop keeps its page's place in the count.
    async fn run(mut self, start: Pending) {
        let began = Instant::now();
        let mut frontier = Frontier::new(
            &start.url,
            self.max_depth,
            self.max_pages,
            self.job.claimed.clone(),
        );
        let mut progress = Progress::default();
        let mut tally = Tally::default();
        let mut scheduler = Scheduler::new(self.limits);
        scheduler.push(start);
        let mut tasks: JoinSet<Finished> = JoinSet::new();
        loop {
            while let Some((host, pending)) = scheduler.next() {
                let job = self.job.clone();
                let follow = frontier.follows(pending.depth);
                tasks.spawn(async move {
                    // A panic in one page must not lose the page's place in the count.
                    let work = AssertUnwindSafe(page::crawl_page(job, &pending, follow))
                        .catch_unwind()
                        .await
                        .ok();
                    Finished {
                        host,
                        pending,
                        work,
                    }
                });
            }
            if scheduler.in_flight() == 0 && scheduler.queued() == 0 {
                break;
            }
            let joined = tasks.join_next().await;
            let Some(Ok(finished)) = joined else {
                // Tasks catch their panics, so this is only a cancelled task at shutdown.
                continue;
            };
            scheduler.finished(&finished.host);
            let Finished { pending, work, .. } = finished;
            let work = work.unwrap_or_else(|| PageWork {
                outcome: Outcome::Page(page::failed(
                    &pending,
                    "internal error while crawling".into(),
                    ErrorKind::Internal,
                )),
                links: Vec::new(),
                final_url: None,
                fetch: None,
            });
            if let Some(fetch) = &work.fetch {
                tally.request(fetch);
            }
            let event = match work.outcome {
                Outcome::Redirect {
                    to,
                    status,
                    request,
                } => {
                    match self.redirect(&mut frontier, &pending, to, status, request) {
                        // The page goes on at its next hop, at the same depth, still outstanding.
                        Ok(next) => {
                            scheduler.push(next);
                            continue;
                        }
                        Err(event) => *event,
                    }
                }
                Outcome::Page(page) => CrawlEvent::Page {
                    page,
                    progress: Progress::default(),
                },
                Outcome::LeftOut(page) => CrawlEvent::LeftOut(page),
            };
            for next in frontier.finished(&pending, work.final_url.as_ref(), work.links) {
                scheduler.push(next);
            }
            let event = match event {
                CrawlEvent::Page { page, .. } => {
                    let failed = page.data.error.is_some();
                    tally.page(failed || page.status.is_some_and(|s| s >= 400));
                    progress.done += 1;
                    if failed {
                        progress.failed += 1;
                    }
                    progress.queued = scheduler.queued();
                    CrawlEvent::Page { page, progress }
                }
                CrawlEvent::LeftOut(page) => {
                    tally.page(page.status.is_some_and(|s| s >= 400));
                    CrawlEvent::LeftOut(page)
                }
                other => other,
            };
            if self.sender.send(event).await.is_err() {
                // Nobody listens any more: stop; dropping the JoinSet aborts the workers.
                return;
            }
        }
        progress.queued = 0;
        let elapsed = began.elapsed();
        let budget_reached = frontier.budget_reached();
        let summary = CrawlSummary {
            progress,
            budget_reached,
            elapsed,
            stats: tally.stats(elapsed, budget_reached),
        };
        let _ = self.sender.send(CrawlEvent::Finished(summary)).await;
    }

    /// The next hop of a redirected page, or the event that ends it: a loop or too many hops
    /// fail it; a target already claimed leaves it out.
    fn redirect(
        &self,
        frontier: &mut Frontier,
        pending: &Pending,
        to: url::Url,
        status: u16,
        request: Option<Box<crate::fetch::FetchRequest>>,
    ) -> Result<Pending, Box<CrawlEvent>> {
        let fail = |message: String| {
            let mut page = page::failed(pending, message, ErrorKind::Redirect);
            page.status = Some(status);
            page.final_url = Some(to.to_string());
            Box::new(CrawlEvent::Page {
                page,
                progress: Progress::default(),
            })
        };
        if pending.hops >= MAX_HOPS {
            return Err(fail(format!(
                "stopped after {MAX_HOPS} redirects (a redirect loop?)"
            )));
        }
        if to == pending.url || to == pending.fetch_url {
            return Err(fail(format!("redirects to itself ({to})")));
        }
        if !frontier.claim(&to) {
            return Err(Box::new(CrawlEvent::LeftOut(LeftOutPage {
                url: pending.url.to_string(),
                depth: pending.depth,
                found_on: pending.found_on.as_deref().map(str::to_string),
                status: Some(status),
                final_url: Some(to.to_string()),
                reason: LeftOutReason::RedirectToKnownPage,
            })));
        }
        Ok(Pending {
            url: pending.url.clone(),
            fetch_url: to,
            hops: pending.hops + 1,
            depth: pending.depth,
            found_on: pending.found_on.clone(),
            request,
        })
    }
}
