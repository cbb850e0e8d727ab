//! One crawled page: the worker's part of a crawl. It fetches, sorts the response (error page,
//! HTML, or binary), parses HTML once, and returns the page's value and its followable links.

use super::{CrawledPage, links, normalize};
use crate::extract::{Deadline, Extractor, onepass, parse};
use crate::fetch::{FetchRequest, FetchedPage, Fetcher};
use crate::filter::UrlFilterSet;
use crate::model::ClientData;
use chrono::Utc;
use sha2::{Digest, Sha256};
use std::sync::Arc;
use url::Url;

/// Pages larger than this are parsed on the blocking pool; smaller ones inline, which is cheaper
/// than the hand-off (an 8 KB page parses in well under 100 µs).
const INLINE_PARSE_LIMIT: usize = 64 * 1024;

/// What every page of one crawl shares.
pub(crate) struct PageJob {
    pub fetcher: Arc<dyn Fetcher>,
    pub extractor: Extractor,
    pub filter: UrlFilterSet,
    pub ignore_invalid_pages: bool,
    pub binary: bool,
    pub all_domains: bool,
    pub start_site: String,
    pub strip_tracking: bool,
    pub max_url_len: usize,
    /// The site the start page redirected to, which is in scope too.
    pub redirected_site: std::sync::OnceLock<String>,
    pub headers: reqwest::header::HeaderMap,
    pub proxy: Option<String>,
    /// A page's fetch and extraction together end within this.
    pub page_timeout: std::time::Duration,
}

/// A page to crawl.
#[derive(Debug, Clone)]
pub(crate) struct Pending {
    pub url: Url,
    pub depth: u8,
    pub found_on: Option<Arc<str>>,
    /// The start page carries the monitor's own method and body.
    pub request: Option<FetchRequest>,
}

/// The worker's answer: the page (unless left out), the links to consider, and where a
/// redirect ended when that is another URL.
pub(crate) struct PageWork {
    pub page: Option<CrawledPage>,
    pub links: Vec<Url>,
    pub final_url: Option<Url>,
}

pub(crate) async fn crawl_page(job: Arc<PageJob>, pending: Pending, follow: bool) -> PageWork {
    let at = Utc::now();
    let request = pending.request.clone().unwrap_or_else(|| FetchRequest {
        headers: job.headers.clone(),
        proxy: job.proxy.clone(),
        ..FetchRequest::get(pending.url.clone())
    });
    let page = |data: ClientData, fetched: Option<&FetchedPage>| CrawledPage {
        url: pending.url.to_string(),
        depth: pending.depth,
        found_on: pending.found_on.as_deref().map(str::to_string),
        status: fetched.map(|f| f.status),
        content_type: fetched.and_then(|f| f.content_type.clone()),
        final_url: fetched.map(|f| f.url.to_string()),
        data,
    };
    let deadline = Deadline::at(std::time::Instant::now() + job.page_timeout);
    let fetched = match job.fetcher.fetch(&request).await {
        Ok(fetched) => fetched,
        Err(err) => {
            return PageWork {
                page: Some(page(ClientData::failure(at, err.to_string()), None)),
                links: Vec::new(),
                final_url: None,
            };
        }
    };
    let start = pending.depth == 0;
    let final_url = (fetched.url != pending.url)
        .then(|| normalize::normalize(fetched.url.clone(), job.strip_tracking))
        .flatten();
    if start && final_url.is_some() {
        let site = normalize::site_of(&fetched.url).to_string();
        if site != job.start_site {
            let _ = job.redirected_site.set(site);
        }
    }
    // The start page is always reported: a Portal whose start page fails has failed.
    if fetched.status >= 400 {
        let kept = (start || !job.ignore_invalid_pages).then(|| {
            page(
                ClientData::failure(at, crate::engine::status_text(fetched.status)),
                Some(&fetched),
            )
        });
        return PageWork {
            page: kept,
            links: Vec::new(),
            final_url,
        };
    }
    if !is_html(&fetched) {
        let kept = (start || job.binary).then(|| {
            page(
                ClientData::value(at, binary_value(&fetched)),
                Some(&fetched),
            )
        });
        return PageWork {
            page: kept,
            links: Vec::new(),
            final_url,
        };
    }
    let big = fetched.body.len() > INLINE_PARSE_LIMIT;
    let work_job = job.clone();
    let analyse = move || analyse_html(&work_job, fetched, follow, deadline);
    let (value, links, fetched) = if big {
        match tokio::task::spawn_blocking(analyse).await {
            Ok(result) => result,
            Err(_) => {
                return PageWork {
                    page: Some(page(
                        ClientData::failure(at, "internal error while extracting".into()),
                        None,
                    )),
                    links: Vec::new(),
                    final_url,
                };
            }
        }
    } else {
        analyse()
    };
    let data = match value {
        Ok(raw) => ClientData::value(at, raw),
        Err(err) => ClientData::failure(at, err),
    };
    PageWork {
        page: Some(page(data, Some(&fetched))),
        links,
        final_url,
    }
}

/// One pass without a tree when the monitor needs none and the page allows; else parses once,
/// links first (exclusion edits the tree), then the value.
fn analyse_html(
    job: &PageJob,
    fetched: FetchedPage,
    follow: bool,
    deadline: Deadline,
) -> (Result<String, String>, Vec<Url>, FetchedPage) {
    let text = fetched.text();
    if !job.extractor.needs_tree()
        && let Some(scanned) = onepass::scan(&text, follow)
    {
        let links = links::resolve_all(
            &fetched.url,
            scanned.base.as_deref(),
            scanned.links.iter().map(String::as_str),
            job.strip_tracking,
        )
        .into_iter()
        .filter(|url| job.allows(url))
        .collect();
        let value = job
            .extractor
            .finish(scanned.text)
            .map_err(|e| e.to_string());
        return (value, links, fetched);
    }
    let mut doc = match parse::parse_document_within(&text, deadline) {
        Ok(doc) => doc,
        Err(err) => return (Err(err.to_string()), Vec::new(), fetched),
    };
    let links = if follow {
        links::links(&doc, &fetched.url, job.strip_tracking)
            .into_iter()
            .filter(|url| job.allows(url))
            .collect()
    } else {
        Vec::new()
    };
    let value = job
        .extractor
        .extract_from_within(&mut doc, deadline)
        .map_err(|e| e.to_string());
    (value, links, fetched)
}

impl PageJob {
    /// Whether a discovered link is in scope and passes the monitor's filters.
    fn allows(&self, url: &Url) -> bool {
        let site = normalize::site_of(url);
        url.as_str().len() <= self.max_url_len
            && (self.all_domains
                || site == self.start_site
                || self.redirected_site.get().is_some_and(|s| s == site))
            && self.filter.allows(url.as_str())
    }
}

fn is_html(page: &FetchedPage) -> bool {
    match page.content_type.as_deref() {
        Some(ct) => {
            let mime = ct
                .split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase();
            mime == "text/html" || mime == "application/xhtml+xml"
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
