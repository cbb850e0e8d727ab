//! The Portal fold: what a Portal monitor's own result is, made from its crawl's events. The
//! engine's whole-crawl check ([`crate::Engine`]'s `check` of a Portal monitor) and a service
//! storing the pages one by one as they stream both fold the events here, so the rule and its
//! error sentence exist once.

use super::CrawlEvent;
use crate::model::ClientData;
use crate::outcome::ErrorKind;
use chrono::{DateTime, Utc};
use std::collections::HashSet;

/// The error of a Portal check whose crawl ended without reporting its start page: only a
/// crawl stopped from outside does.
pub const NO_START_PAGE: &str = "the crawl ended without its start page";

/// Folds a Portal crawl's events into the monitor's own result: the sorted, newline-separated
/// URLs of its pages when the start page succeeded, else the start page's failure.
///
/// Feed it every event with [`PortalFold::add`] (the pages are only looked at, so the caller
/// keeps them), then [`PortalFold::finish`]:
/// - the start page (depth 0) failed: its error, with its [`ErrorKind`];
/// - no start page was reported: [`NO_START_PAGE`], kind [`ErrorKind::Internal`];
/// - otherwise the value lists every reported page once, and, with [`PortalFold::after`], the
///   pages of the previous list that this crawl fetched but left out (`ignoreInvalidPages`,
///   `crawlBinaryContent`, a redirect to a page already listed): they are still there, only
///   not reported, and must not read as removed. Left-out pages not listed before stay out.
#[derive(Debug, Default)]
pub struct PortalFold {
    /// The previous value's URLs, kept when only left out now.
    listed: HashSet<String>,
    urls: Vec<String>,
    /// Whether the start page was reported, and its failure if it failed.
    start: Option<Option<(String, Option<ErrorKind>)>>,
}

impl PortalFold {
    /// A fold with no previous list: left-out pages are never in the value.
    pub fn new() -> Self {
        PortalFold::default()
    }

    /// A fold that keeps the URLs of `previous` (the monitor's last value, one URL a line)
    /// which this crawl only leaves out.
    pub fn after(previous: Option<&str>) -> Self {
        PortalFold {
            listed: previous
                .map(|p| p.lines().map(str::to_string).collect())
                .unwrap_or_default(),
            ..PortalFold::default()
        }
    }

    /// Takes one event of the crawl into account.
    pub fn add(&mut self, event: &CrawlEvent) {
        match event {
            CrawlEvent::Page { page, .. } => {
                if page.depth == 0 {
                    let failure = page.data.error.clone().map(|err| (err, page.error_kind));
                    self.start = Some(failure);
                }
                self.urls.push(page.url.clone());
            }
            CrawlEvent::LeftOut(page) if self.listed.contains(&page.url) => {
                self.urls.push(page.url.clone());
            }
            CrawlEvent::LeftOut(_) | CrawlEvent::Finished(_) => {}
        }
    }

    /// The monitor's own result, stamped `at` (when the crawl began), and what kind of failure
    /// it is when it failed.
    pub fn finish(mut self, at: DateTime<Utc>) -> (ClientData, Option<ErrorKind>) {
        match self.start {
            Some(Some((err, kind))) => (ClientData::failure(at, err), kind),
            None => (
                ClientData::failure(at, NO_START_PAGE.into()),
                Some(ErrorKind::Internal),
            ),
            Some(None) => {
                self.urls.sort_unstable();
                self.urls.dedup();
                (ClientData::value(at, self.urls.join("\n")), None)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::{CrawledPage, LeftOutPage, LeftOutReason, Progress};

    fn page(url: &str, depth: u8, error: Option<&str>) -> CrawlEvent {
        let at = DateTime::<Utc>::UNIX_EPOCH;
        let (data, error_kind) = match error {
            Some(err) => (
                ClientData::failure(at, err.into()),
                Some(ErrorKind::Network),
            ),
            None => (ClientData::value(at, "x".into()), None),
        };
        CrawlEvent::Page {
            page: CrawledPage {
                url: url.into(),
                depth,
                found_on: None,
                status: None,
                content_type: None,
                final_url: None,
                title: None,
                data,
                error_kind,
            },
            progress: Progress::default(),
        }
    }

    fn left_out(url: &str) -> CrawlEvent {
        CrawlEvent::LeftOut(LeftOutPage {
            url: url.into(),
            depth: 1,
            found_on: None,
            status: Some(404),
            final_url: None,
            reason: LeftOutReason::InvalidPage,
        })
    }

    fn fold(previous: Option<&str>, events: &[CrawlEvent]) -> (ClientData, Option<ErrorKind>) {
        let mut fold = PortalFold::after(previous);
        for event in events {
            fold.add(event);
        }
        fold.finish(DateTime::<Utc>::UNIX_EPOCH)
    }

    #[test]
    fn the_value_is_the_sorted_urls_with_listed_pages_now_left_out() {
        let events = [
            page("http://a/", 0, None),
            page("http://a/z", 1, Some("timed out")),
            left_out("http://a/gone"),
            left_out("http://a/never"),
            page("http://a/b", 1, None),
        ];
        let (data, kind) = fold(Some("http://a/\nhttp://a/gone"), &events);
        assert_eq!(
            data.raw.as_deref(),
            Some("http://a/\nhttp://a/b\nhttp://a/gone\nhttp://a/z")
        );
        assert_eq!((data.error, kind), (None, None));
        let (data, _) = fold(None, &events);
        assert_eq!(
            data.raw.as_deref(),
            Some("http://a/\nhttp://a/b\nhttp://a/z")
        );
    }

    #[test]
    fn a_failed_or_missing_start_page_fails_the_monitor() {
        let (data, kind) = fold(None, &[page("http://a/", 0, Some("refused"))]);
        assert_eq!((data.raw, data.error.as_deref()), (None, Some("refused")));
        assert_eq!(kind, Some(ErrorKind::Network));
        let (data, kind) = fold(Some("http://a/b"), &[page("http://a/b", 1, None)]);
        assert_eq!(data.error.as_deref(), Some(NO_START_PAGE));
        assert_eq!(kind, Some(ErrorKind::Internal));
    }
}
