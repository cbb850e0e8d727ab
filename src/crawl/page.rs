//! One crawled page: the worker's part of a crawl. It fetches one hop (a redirect goes back to
//! the coordinator, which claims its target before it is fetched), sorts the response (error
//! page, HTML, or binary), has HTML analysed once ([`crate::analysis`], as a single-page check
//! is), and returns the page's value, title and its followable links.

use super::{links, normalize};
use crate::analysis::{
    Analysed, Failure, Started, Status, analyse, blocking_result, judge_status, screen,
    start_off_runtime,
};
use crate::extract::Deadline;
use crate::extract::title;
use crate::fetch::{FetchRequest, FetchedPage, Fetcher, Hop};
use crate::model::ClientData;
use crate::outcome::{CrawledPage, ErrorKind, LeftOutPage, LeftOutReason};
use crate::validate::Plan;
use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};
use std::sync::Arc;
use std::time::{Duration, Instant};
use url::Url;

/// What every page of one crawl shares.
pub(crate) struct PageJob {
    pub fetcher: Arc<dyn Fetcher>,
    /// The monitor's compiled definition: extractor, URL filters, headers, proxy.
    pub plan: Arc<Plan>,
    pub ignore_invalid_pages: bool,
    pub binary: bool,
    pub all_domains: bool,
    pub start_site: String,
    pub strip_tracking: bool,
    pub max_url_len: usize,
    /// The site the start page redirected to, which is in scope too.
    pub redirected_site: std::sync::OnceLock<String>,
    /// A page's fetch and extraction together end within this.
    pub page_timeout: std::time::Duration,
    /// The URLs the crawl has claimed: a page's plain links among them are dropped at once.
    pub claimed: Arc<super::claimed::Claimed>,
}

/// A page to crawl, at one hop of its redirects.
#[derive(Debug, Clone)]
pub(crate) struct Pending {
    /// The page's URL as linked (what it is reported under).
    pub url: Url,
    /// The URL of this hop: `url`, or where its redirects have led so far.
    pub fetch_url: Url,
    /// Redirects followed so far.
    pub hops: u8,
    pub depth: u8,
    pub found_on: Option<Arc<str>>,
    /// The start page carries the monitor's own method and body (as do its 307/308 hops).
    /// Boxed: every other page has none, and a pending page is moved from queue to queue.
    pub request: Option<Box<FetchRequest>>,
}

/// One request's figures, for the crawl's statistics.
pub(crate) struct FetchStat {
    /// None when no response arrived.
    pub status: Option<u16>,
    pub bytes: u64,
    pub latency: Duration,
}

/// How a page's hop ended.
pub(crate) enum Outcome {
    Page(CrawledPage),
    LeftOut(LeftOutPage),
    /// A redirect to `to` (normalized); the coordinator decides whether to follow it.
    Redirect {
        to: Url,
        status: u16,
        request: Option<Box<FetchRequest>>,
    },
}

/// The worker's answer: how the hop ended, the links to consider, where a fetcher that follows
/// redirects itself ended when that is another URL, and the request's figures.
pub(crate) struct PageWork {
    pub outcome: Outcome,
    pub links: Vec<Url>,
    pub final_url: Option<Url>,
    pub fetch: Option<FetchStat>,
}

/// A failed page, reported under its link's URL.
pub(crate) fn failed(pending: &Pending, error: String, kind: ErrorKind) -> CrawledPage {
    CrawledPage {
        url: pending.url.as_str().to_owned(),
        depth: pending.depth,
        found_on: pending.found_on.as_deref().map(str::to_string),
        status: None,
        content_type: None,
        final_url: None,
        title: None,
        data: ClientData::failure(Utc::now(), error),
        error_kind: Some(kind),
    }
}

pub(crate) async fn crawl_page(job: Arc<PageJob>, pending: &Pending, follow: bool) -> PageWork {
    let at = Utc::now();
    let sent = Instant::now();
    let deadline = Deadline::at(sent + job.page_timeout);
    // The request lives only as long as its fetch.
    let hop = {
        let request = match &pending.request {
            Some(request) => FetchRequest::clone(request),
            None => FetchRequest {
                headers: job.plan.headers.clone(),
                proxy: job.plan.proxy.clone(),
                ..FetchRequest::get(pending.fetch_url.clone())
            },
        };
        job.fetcher.fetch_hop(&request).await
    };
    // What follows the fetch is synchronous (but for a large page's analysis), so this future
    // keeps none of it in its state: a crawl spawns a task a page, and one past a kilobyte was
    // a large allocation each time.
    match after_fetch(&job, pending, follow, at, deadline, sent, hop) {
        AfterFetch::Done(work) => work,
        AfterFetch::Analysing { handle, report } => {
            report.finish(pending, blocking_result(handle.await))
        }
    }
}

/// Where a page stands once its response is in. Returned once and matched at once, never
/// stored: boxing the finished page would cost every page an allocation.
#[allow(clippy::large_enum_variant)]
enum AfterFetch {
    Done(PageWork),
    /// A large page's analysis runs on the blocking pool.
    Analysing {
        handle: tokio::task::JoinHandle<PageAnalysed>,
        report: Report,
    },
}

/// What a page's report needs besides its analysis.
struct Report {
    at: DateTime<Utc>,
    final_url: Option<Url>,
    fetch: Option<FetchStat>,
}

impl Report {
    fn finish(self, pending: &Pending, analysed: Result<PageAnalysed, Failure>) -> PageWork {
        let analysed = match analysed {
            Ok(analysed) => analysed,
            Err(failure) => {
                return PageWork {
                    outcome: Outcome::Page(failed(pending, failure.message, failure.kind)),
                    links: Vec::new(),
                    final_url: self.final_url,
                    fetch: self.fetch,
                };
            }
        };
        let (data, kind) = match analysed.value {
            Ok(raw) => (ClientData::value(self.at, raw), None),
            Err(failure) => (
                ClientData::failure(self.at, failure.message),
                Some(failure.kind),
            ),
        };
        let mut reported = page_of(pending, data, kind, &analysed.fetched);
        reported.title = analysed.title;
        PageWork {
            outcome: Outcome::Page(reported),
            links: analysed.links,
            final_url: self.final_url,
            fetch: self.fetch,
        }
    }
}

/// A fetched page's report, under its link's URL.
fn page_of(
    pending: &Pending,
    data: ClientData,
    kind: Option<ErrorKind>,
    fetched: &FetchedPage,
) -> CrawledPage {
    CrawledPage {
        url: pending.url.as_str().to_owned(),
        depth: pending.depth,
        found_on: pending.found_on.as_deref().map(str::to_string),
        status: Some(fetched.status),
        content_type: fetched.content_type.clone(),
        final_url: Some(fetched.url.as_str().to_owned()),
        title: None,
        data,
        error_kind: kind,
    }
}

/// A fetched page left out of the crawl's results.
fn left_out(pending: &Pending, reason: LeftOutReason, fetched: &FetchedPage) -> LeftOutPage {
    LeftOutPage {
        url: pending.url.as_str().to_owned(),
        depth: pending.depth,
        found_on: pending.found_on.as_deref().map(str::to_string),
        status: Some(fetched.status),
        final_url: Some(fetched.url.as_str().to_owned()),
        reason,
    }
}

fn after_fetch(
    job: &Arc<PageJob>,
    pending: &Pending,
    follow: bool,
    at: DateTime<Utc>,
    deadline: Deadline,
    sent: Instant,
    hop: Result<Hop, crate::fetch::FetchError>,
) -> AfterFetch {
    let page = |data, kind, fetched: &FetchedPage| page_of(pending, data, kind, fetched);
    let left_out = |reason, fetched: &FetchedPage| left_out(pending, reason, fetched);
    let fetched = match hop {
        Ok(Hop::Page(fetched)) => fetched,
        Ok(Hop::Redirect {
            status,
            location,
            elapsed,
        }) => {
            let fetch = Some(FetchStat {
                status: Some(status),
                bytes: 0,
                latency: elapsed,
            });
            let outcome = match normalize::normalize(location.clone(), job.strip_tracking) {
                Some(to) => Outcome::Redirect {
                    // 307 and 308 repeat the request as it was; the others become a GET.
                    request: matches!(status, 307 | 308)
                        .then(|| pending.request.clone())
                        .flatten()
                        .map(|mut request| {
                            request.url = to.clone();
                            request
                        }),
                    to,
                    status,
                },
                None => {
                    let mut page = failed(
                        pending,
                        format!("redirected to \"{location}\", which cannot be fetched"),
                        ErrorKind::Redirect,
                    );
                    page.status = Some(status);
                    Outcome::Page(page)
                }
            };
            return AfterFetch::Done(PageWork {
                outcome,
                links: Vec::new(),
                final_url: None,
                fetch,
            });
        }
        Err(err) => {
            return AfterFetch::Done(PageWork {
                outcome: Outcome::Page(failed(pending, err.to_string(), ErrorKind::of_fetch(&err))),
                links: Vec::new(),
                final_url: None,
                fetch: Some(FetchStat {
                    status: None,
                    bytes: 0,
                    latency: sent.elapsed(),
                }),
            });
        }
    };
    let fetch = Some(FetchStat {
        status: Some(fetched.status),
        bytes: fetched.body.len() as u64,
        latency: fetched.elapsed,
    });
    let start = pending.depth == 0;
    let final_url = (fetched.url != pending.fetch_url)
        .then(|| normalize::normalize(fetched.url.clone(), job.strip_tracking))
        .flatten();
    if start {
        let site = normalize::site_of(&fetched.url).to_string();
        if site != job.start_site {
            let _ = job.redirected_site.set(site);
        }
    }
    // The start page is always reported: a Portal whose start page fails has failed.
    let outcome = match judge_status(fetched.status, job.ignore_invalid_pages && !start) {
        Status::Fine => None,
        Status::Failed(failure) => {
            // A wall served with an error status says more than the status; a large error
            // page is no wall, and is not decoded for nothing.
            let failure = (fetched.body.len() <= crate::classify::SCAN_LIMIT)
                .then(|| screen(&fetched, &fetched.decoded()))
                .flatten()
                .unwrap_or(failure);
            Some(Outcome::Page(page(
                ClientData::failure(at, failure.message),
                Some(failure.kind),
                &fetched,
            )))
        }
        Status::Ignored => Some(Outcome::LeftOut(left_out(
            LeftOutReason::InvalidPage,
            &fetched,
        ))),
    };
    if let Some(outcome) = outcome {
        return AfterFetch::Done(PageWork {
            outcome,
            links: Vec::new(),
            final_url,
            fetch,
        });
    }
    if !is_html(&fetched) {
        let outcome = if start || job.binary {
            Outcome::Page(page(
                ClientData::value(at, binary_value(&fetched)),
                None,
                &fetched,
            ))
        } else {
            Outcome::LeftOut(left_out(LeftOutReason::BinaryContent, &fetched))
        };
        return AfterFetch::Done(PageWork {
            outcome,
            links: Vec::new(),
            final_url,
            fetch,
        });
    }
    let work_job = job.clone();
    let bytes = fetched.body.len();
    let report = Report {
        at,
        final_url,
        fetch,
    };
    match start_off_runtime(bytes, move || {
        analyse_html(&work_job, fetched, follow, deadline)
    }) {
        Started::Done(analysed) => AfterFetch::Done(report.finish(pending, analysed)),
        Started::Blocking(handle) => AfterFetch::Analysing { handle, report },
    }
}

struct PageAnalysed {
    value: Result<String, Failure>,
    title: Option<String>,
    links: Vec<Url>,
    fetched: FetchedPage,
}

/// The shared analysis of an HTML page, with what a crawl wants besides its value: the title,
/// and the links in scope.
fn analyse_html(
    job: &PageJob,
    fetched: FetchedPage,
    follow: bool,
    deadline: Deadline,
) -> PageAnalysed {
    let text = fetched.decoded();
    let analysed = analyse(&fetched, &text, &job.plan.extractor, deadline, follow);
    let Analysed {
        value,
        links,
        title,
    } = match analysed {
        Ok(analysed) => analysed,
        // A wall's links and title are not the page's.
        Err(failure) => {
            return PageAnalysed {
                value: Err(failure),
                title: None,
                links: Vec::new(),
                fetched,
            };
        }
    };
    let title = title.unwrap_or_else(|| title::title(&text));
    let links = links::resolve_new(
        &fetched.url,
        links.base.as_deref(),
        links.hrefs.iter().map(|href| href.as_ref()),
        job.strip_tracking,
        &job.claimed,
    )
    .into_iter()
    .filter(|url| job.allows(url))
    .collect();
    PageAnalysed {
        value,
        title,
        links,
        fetched,
    }
}

impl PageJob {
    /// Whether a discovered link is in scope and passes the monitor's filters.
    fn allows(&self, url: &Url) -> bool {
        let site = normalize::site_of(url);
        url.as_str().len() <= self.max_url_len
            && (self.all_domains
                || site == self.start_site
                || self.redirected_site.get().is_some_and(|s| s == site))
            && self.plan.url_filter.allows(url.as_str())
    }
}

fn is_html(page: &FetchedPage) -> bool {
    match page.content_type.as_deref() {
        Some(ct) => {
            let mime = ct.split(';').next().unwrap_or("").trim();
            mime.eq_ignore_ascii_case("text/html")
                || mime.eq_ignore_ascii_case("application/xhtml+xml")
        }
        // No type given: sniff for markup, as browsers do.
        None => page
            .body
            .iter()
            .find(|b| !b.is_ascii_whitespace())
            .is_some_and(|&b| b == b'<'),
    }
}

/// A binary page's value: content type, length and SHA-256.
fn binary_value(page: &FetchedPage) -> String {
    let digest = Sha256::digest(&page.body);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}, {} bytes, sha256 {hex}",
        page.content_type
            .as_deref()
            .unwrap_or("application/octet-stream"),
        page.body.len()
    )
}
