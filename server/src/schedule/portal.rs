//! The Portal fold: a Portal monitor's check, page by page from the crawl's stream. Each page
//! is stored under its title as the page's name, and the monitor's own value is the engine's
//! [`PortalFold`] of the list: a page that was listed before and is now only left out by the
//! crawl (`ignoreInvalidPages`, `crawlBinaryContent`, a redirect to a page already listed)
//! stays in the monitor's list of pages, so it never reads as removed.

use futures::StreamExt;
use wachet::model::ClientData;
use wachet::{Checker, CrawlEvent, PortalFold, PreparedMonitor};

/// A crawled page as stored: its URL, its name (title) and its result.
pub(super) type PageResult = (String, Option<String>, ClientData);

/// A Portal check, page by page from the crawl's stream: the monitor's own result (the
/// engine's [`PortalFold`], keeping the pages of the `previous` list that the crawl now only
/// leaves out) and each page's.
pub(super) async fn crawl(
    checker: &dyn Checker,
    prepared: &PreparedMonitor,
    previous: Option<&str>,
) -> (ClientData, Vec<PageResult>) {
    let at = chrono::Utc::now();
    let mut stream = checker.crawl_prepared(prepared);
    let mut fold = PortalFold::after(previous);
    let mut pages: Vec<PageResult> = Vec::new();
    while let Some(event) = stream.next().await {
        fold.add(&event);
        if let CrawlEvent::Page { page, .. } = event {
            pages.push((page.url, page.title, page.data));
        }
    }
    let (own, _) = fold.finish(at);
    (own, pages)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wachet::Monitor;
    use wachet::model::ClientJobType;
    use wachet::testing::{FixtureServer, Reply};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_portal_keeps_pages_now_left_out_and_names_pages_by_title() {
        let server = FixtureServer::builder()
            .page(
                "/",
                "<title>Home</title><a href=/a.html>a</a><a href=/doc.pdf>d</a>",
            )
            .page("/a.html", "<title>Page A</title><p>A</p>")
            .reply(
                "/doc.pdf",
                Reply::new(200)
                    .header("content-type", "application/pdf")
                    .body("%PDF-1.4"),
            )
            .start()
            .await
            .unwrap();
        let engine = wachet::Engine::builder()
            .allow_private_networks(true)
            .build()
            .unwrap();
        let mut monitor = Monitor::new(server.url("/"));
        monitor.job_type = ClientJobType::Portal;
        monitor.crawling_depth = Some(1);
        let prepared = engine.prepare(&monitor).unwrap();
        let (home, a, pdf) = (
            server.url("/"),
            server.url("/a.html"),
            server.url("/doc.pdf"),
        );

        // First listed with the PDF (binary content was crawled then), now left out: kept.
        let previous = format!("{home}\n{a}\n{pdf}");
        let (own, pages) = crawl(&engine, &prepared, Some(&previous)).await;
        assert_eq!(own.raw.as_deref(), Some(previous.as_str()));
        let names: Vec<(&str, Option<&str>)> = pages
            .iter()
            .map(|(url, name, _)| (url.as_str(), name.as_deref()))
            .collect();
        assert!(names.contains(&(home.as_str(), Some("Home"))), "{names:?}");
        assert!(names.contains(&(a.as_str(), Some("Page A"))), "{names:?}");
        assert_eq!(pages.len(), 2, "the PDF has no page entry of its own");

        // Never listed before: it does not appear.
        let (own, _) = crawl(&engine, &prepared, None).await;
        assert_eq!(own.raw, Some(format!("{home}\n{a}")));
    }
}
