//! The engine API a service builds on, against real servers on loopback: Portal pages streamed
//! through `Arc<dyn Checker>`, prepared monitors, typed error kinds, serde, page titles, pages
//! left out, crawl statistics, and redirects followed hop by hop in a crawl.

use crate::common::portal;
use futures::StreamExt;
use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::Duration;
use wachet::crawl::CrawlSummary;
use wachet::testing::{FixtureServer, Reply};
use wachet::{
    CheckOutcome, Checker, CrawlEvent, CrawledPage, Engine, ErrorKind, LeftOutPage, LeftOutReason,
    Monitor,
};

fn engine() -> Engine {
    Engine::builder()
        .allow_private_networks(true)
        .per_host_rps(0)
        .total_timeout(Duration::from_secs(20))
        .build()
        .unwrap()
}

struct Drained {
    pages: Vec<CrawledPage>,
    left_out: Vec<LeftOutPage>,
    summary: CrawlSummary,
}

async fn drain(mut stream: wachet::CrawlStream) -> Drained {
    let (mut pages, mut left_out, mut summary) = (Vec::new(), Vec::new(), None);
    while let Some(event) = stream.next().await {
        assert!(summary.is_none(), "an event after Finished: {event:?}");
        match event {
            CrawlEvent::Page { page, .. } => pages.push(page),
            CrawlEvent::LeftOut(page) => left_out.push(page),
            CrawlEvent::Finished(s) => summary = Some(s),
            other => panic!("unexpected event {other:?}"),
        }
    }
    Drained {
        pages,
        left_out,
        summary: summary.expect("Finished ends every crawl"),
    }
}

fn page<'a>(pages: &'a [CrawledPage], url: &str) -> &'a CrawledPage {
    pages.iter().find(|p| p.url == url).unwrap_or_else(|| {
        panic!(
            "{url} not among {:?}",
            pages.iter().map(|p| &p.url).collect::<Vec<_>>()
        )
    })
}

/// A site of known pages, sizes and statuses: the start page, two pages with titles, a 404,
/// a 503, a PNG, and a redirect to one of the pages.
async fn site() -> FixtureServer {
    FixtureServer::builder()
        .page(
            "/",
            "<title>Start</title><a href=/a.html>a</a><a href=/b.html>b</a>\
             <a href=/missing.html>m</a><a href=/busy.html>busy</a><a href=/img.png>i</a>\
             <a href=/go>go</a>",
        )
        .page(
            "/a.html",
            "<head><title> Page &amp; A </title></head><p>A</p>",
        )
        .page(
            "/b.html",
            "<p>B has no title</p><svg><title>icon</title></svg>",
        )
        .reply("/missing.html", Reply::html("<p>not here</p>").status(404))
        .reply("/busy.html", Reply::html("<p>later</p>").status(503))
        .reply(
            "/img.png",
            Reply::new(200)
                .header("content-type", "image/png")
                .body(vec![0u8; 100]),
        )
        .reply("/go", Reply::redirect("/c.html"))
        .page("/c.html", "<title>C</title><p>C</p>")
        .start()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_portal_streams_page_by_page_through_a_dyn_checker() {
    let server = site().await;
    let checker: Arc<dyn Checker> = Arc::new(engine());
    let prepared = checker.prepare(&portal(server.url("/"), 1)).unwrap();
    let mut stream = checker.crawl_prepared(&prepared);
    let mut events = 0;
    let mut last_was_finished = false;
    while let Some(event) = stream.next().await {
        events += 1;
        last_was_finished = matches!(event, CrawlEvent::Finished(_));
    }
    assert!(last_was_finished);
    // Seven pages: six reported, the PNG left out, then Finished.
    assert_eq!(events, 8);

    // Titles as document.title gives them: the page's name.
    let drained = drain(checker.crawl_prepared(&prepared)).await;
    let pages = &drained.pages;
    assert_eq!(
        page(pages, &server.url("/")).title.as_deref(),
        Some("Start")
    );
    assert_eq!(
        page(pages, &server.url("/a.html")).title.as_deref(),
        Some("Page & A")
    );
    assert_eq!(
        page(pages, &server.url("/b.html")).title,
        None,
        "an SVG title is not the page's"
    );
    assert_eq!(page(pages, &server.url("/go")).title.as_deref(), Some("C"));
    assert_eq!(page(pages, &server.url("/missing.html")).title, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_left_out_are_reported_with_why() {
    let server = site().await;
    let engine = engine();
    let mut monitor = portal(server.url("/"), 1);
    monitor.ignore_invalid_pages = true;
    let outcome = engine.check(&monitor).await.unwrap();
    let report = outcome.crawl.as_ref().unwrap();
    let mut left: Vec<(String, LeftOutReason, Option<u16>)> = report
        .left_out
        .iter()
        .map(|p| (p.url.clone(), p.reason, p.status))
        .collect();
    left.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        left,
        [
            (
                server.url("/busy.html"),
                LeftOutReason::InvalidPage,
                Some(503)
            ),
            (
                server.url("/img.png"),
                LeftOutReason::BinaryContent,
                Some(200)
            ),
            (
                server.url("/missing.html"),
                LeftOutReason::InvalidPage,
                Some(404)
            ),
        ]
    );
    for p in &report.left_out {
        assert!(
            report.pages.iter().all(|r| r.url != p.url),
            "{} both kept and left out",
            p.url
        );
    }

    monitor.ignore_invalid_pages = false;
    monitor.crawl_binary_content = true;
    let outcome = engine.check(&monitor).await.unwrap();
    let report = outcome.crawl.as_ref().unwrap();
    assert!(report.left_out.is_empty(), "{:?}", report.left_out);
    assert_eq!(report.pages.len(), 7);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crawl_statistics_count_pages_bytes_and_statuses() {
    let server = site().await;
    let drained = drain(engine().crawl(&portal(server.url("/"), 1)).unwrap()).await;
    let stats = &drained.summary.stats;
    assert_eq!(drained.pages.len(), 6, "start, a, b, missing, busy, go");
    assert_eq!(drained.left_out.len(), 1, "the PNG");
    assert_eq!(stats.pages, 7);
    assert_eq!(stats.failed, 2, "the 404 and the 503");
    assert_eq!(stats.requests, 8, "seven pages and the redirect's hop");
    let bodies: u64 = [
        "/",
        "/a.html",
        "/b.html",
        "/missing.html",
        "/busy.html",
        "/c.html",
    ]
    .iter()
    .map(|p| body_len(p) as u64)
    .sum::<u64>()
        + 100;
    assert_eq!(stats.bytes, bodies);
    let expected: BTreeMap<u16, usize> = [(200, 5), (302, 1), (404, 1), (503, 1)].into();
    assert_eq!(stats.statuses, expected);
    assert!(!stats.budget_reached);
    assert!(stats.latency.p50 <= stats.latency.p90 && stats.latency.p90 <= stats.latency.p99);
    assert!(stats.latency.p99 > Duration::ZERO);
    assert!(stats.pages_per_second > 0.0);
    assert_eq!(stats.elapsed, drained.summary.elapsed);

    // The budget shows in the statistics too.
    let budget = Engine::builder()
        .allow_private_networks(true)
        .per_host_rps(0)
        .max_pages(3)
        .build()
        .unwrap();
    let drained = drain(budget.crawl(&portal(server.url("/"), 1)).unwrap()).await;
    assert!(drained.summary.stats.budget_reached);
    assert_eq!(drained.summary.stats.pages, 3);
}

/// The length of a fixture page's body as the server sends it.
fn body_len(path: &str) -> usize {
    match path {
        "/" => "<title>Start</title><a href=/a.html>a</a><a href=/b.html>b</a>\
             <a href=/missing.html>m</a><a href=/busy.html>busy</a><a href=/img.png>i</a>\
             <a href=/go>go</a>"
            .len(),
        "/a.html" => "<head><title> Page &amp; A </title></head><p>A</p>".len(),
        "/b.html" => "<p>B has no title</p><svg><title>icon</title></svg>".len(),
        "/missing.html" => "<p>not here</p>".len(),
        "/busy.html" => "<p>later</p>".len(),
        "/c.html" => "<title>C</title><p>C</p>".len(),
        other => panic!("no body known for {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_carry_their_kind() {
    let server = site().await;
    let engine = engine();
    let check = |path: &str| {
        let engine = engine.clone();
        let url = server.url(path);
        async move { engine.check(&Monitor::new(url)).await.unwrap() }
    };
    let missing = check("/missing.html").await;
    assert_eq!(missing.error_kind, Some(ErrorKind::HttpStatus));
    assert!(!missing.is_transient_failure());
    let busy = check("/busy.html").await;
    assert_eq!(busy.error_kind, Some(ErrorKind::Unavailable));
    assert!(busy.is_transient_failure());
    let fine = check("/a.html").await;
    assert_eq!(fine.error_kind, None);
    assert!(!fine.is_transient_failure());

    let mut nothing = Monitor::new(server.url("/a.html"));
    nothing.x_path = Some("//table".into());
    let outcome = engine.check(&nothing).await.unwrap();
    assert_eq!(outcome.error_kind, Some(ErrorKind::NothingMatched));
    assert!(!ErrorKind::NothingMatched.is_transient());

    // A closed port: a network failure, worth trying again.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let outcome = engine
        .check(&Monitor::new(format!("http://127.0.0.1:{closed}/")))
        .await
        .unwrap();
    assert_eq!(
        outcome.error_kind,
        Some(ErrorKind::Network),
        "{:?}",
        outcome.error()
    );
    assert!(outcome.is_transient_failure());

    // Refused by the network policy.
    let strict = Engine::builder().build().unwrap();
    let outcome = strict.check(&Monitor::new(server.url("/"))).await.unwrap();
    assert_eq!(outcome.error_kind, Some(ErrorKind::Refused));

    // Too large.
    let small = Engine::builder()
        .allow_private_networks(true)
        .max_body_bytes(10)
        .build()
        .unwrap();
    let outcome = small
        .check(&Monitor::new(server.url("/a.html")))
        .await
        .unwrap();
    assert_eq!(outcome.error_kind, Some(ErrorKind::TooLarge));

    // A JSON document of 50 MB at the default limit: read up to 10 MiB, then a failure that
    // says the size, never a value cut short and compared as if it were the document.
    let items: Vec<String> = (0..1_100_000)
        .map(|i| format!(r#"{{"id":{i},"price":{}.50,"sku":"A-{i:08}"}}"#, i % 97))
        .collect();
    let document = format!("[{}]", items.join(","));
    assert!(document.len() > 50_000_000, "{}", document.len());
    let api = FixtureServer::builder()
        .page("/catalogue.json", document)
        .start()
        .await
        .unwrap();
    let outcome = engine
        .check(&Monitor::new(api.url("/catalogue.json")))
        .await
        .unwrap();
    assert_eq!(outcome.error_kind, Some(ErrorKind::TooLarge));
    assert_eq!(
        outcome.error(),
        Some("the response is larger than 10485760 bytes")
    );
    assert!(
        outcome.data.raw.is_none(),
        "{:?}",
        outcome.data.raw.as_ref().map(String::len)
    );

    // A crawled page's own failure.
    let outcome = engine.check(&portal(server.url("/"), 1)).await.unwrap();
    let pages = &outcome.crawl.as_ref().unwrap().pages;
    assert_eq!(
        page(pages, &server.url("/missing.html")).error_kind,
        Some(ErrorKind::HttpStatus)
    );
    assert_eq!(page(pages, &server.url("/a.html")).error_kind, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outcomes_serialize_as_camel_case_json_with_milliseconds() {
    let server = site().await;
    let engine = engine();
    let outcome = engine.check(&portal(server.url("/"), 1)).await.unwrap();
    let json = serde_json::to_value(&outcome).unwrap();
    assert!(json["timings"]["total"].is_number(), "{json}");
    let ms = json["timings"]["total"].as_f64().unwrap();
    let expected = outcome.timings.total.as_secs_f64() * 1000.0;
    assert!(
        (ms - expected).abs() < 0.01,
        "{ms} ms for {:?}",
        outcome.timings.total
    );
    assert!(json["crawl"]["budgetReached"].is_boolean());
    assert!(json["crawl"]["stats"]["latency"]["p50"].is_number());
    assert!(
        json["crawl"]["pages"][0]["foundOn"].is_null()
            || json["crawl"]["pages"][0]["foundOn"].is_string()
    );
    let missing = engine
        .check(&Monitor::new(server.url("/missing.html")))
        .await
        .unwrap();
    let json = serde_json::to_value(&missing).unwrap();
    assert_eq!(json["errorKind"], "httpStatus");
    assert_eq!(json["finalUrl"], server.url("/missing.html"));

    // Round trips.
    for original in [outcome, missing] {
        let text = serde_json::to_string(&original).unwrap();
        let back: CheckOutcome = serde_json::from_str(&text).unwrap();
        assert_eq!(back.data, original.data);
        assert_eq!(back.error_kind, original.error_kind);
        assert_eq!(
            back.crawl.as_ref().map(|c| c.pages.clone()),
            original.crawl.as_ref().map(|c| c.pages.clone())
        );
        let micros = |d: Duration| d.as_micros();
        assert_eq!(micros(back.timings.total), micros(original.timings.total));
    }

    let mut invalid = Monitor::new("not a url");
    invalid.x_path = Some("//[".into());
    let err = engine.validate(&invalid).unwrap_err();
    let json = serde_json::to_value(&err).unwrap();
    assert_eq!(json["errors"][0]["field"], "url");
    assert_eq!(json["errors"][1]["field"], "xPath");
    let back: wachet::InvalidMonitor = serde_json::from_value(json).unwrap();
    assert_eq!(back, err);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prepared_monitor_is_checked_as_prepared() {
    let server = site().await;
    let checker: Arc<dyn Checker> = Arc::new(engine());
    let mut monitor = Monitor::new(server.url("/a.html"));
    monitor.x_path = Some("//p".into());
    let prepared = checker.prepare(&monitor).unwrap();
    // The definition is the prepared one, whatever becomes of the monitor it came from.
    monitor.x_path = Some("//[".into());
    assert!(checker.prepare(&monitor).is_err());
    for _ in 0..5 {
        let outcome = checker.check_prepared(&prepared).await;
        assert_eq!(outcome.value(), Some("A"));
    }
    assert_eq!(prepared.monitor().x_path.as_deref(), Some("//p"));
    assert_eq!(server.hits("/a.html"), 5);
}

// ---------------------------------------------------------------------------------------------
// Redirects in a crawl, hop by hop
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_linked_directly_first_is_fetched_once_and_the_redirect_left_out() {
    // The direct link (depth 1) is claimed before the redirect (depth 2) is fetched.
    let server = FixtureServer::builder()
        .page("/", "<a href=/target.html>t</a><a href=/a.html>a</a>")
        .page("/a.html", "<a href=/go>go</a>")
        .reply("/go", Reply::redirect("/target.html"))
        .reply(
            "/target.html",
            Reply::html("<title>T</title>").delay(Duration::from_millis(300)),
        )
        .start()
        .await
        .unwrap();
    let drained = drain(engine().crawl(&portal(server.url("/"), 3)).unwrap()).await;
    assert_eq!(server.hits("/target.html"), 1);
    assert_eq!(server.hits("/go"), 1);
    let mut urls: Vec<&str> = drained.pages.iter().map(|p| p.url.as_str()).collect();
    urls.sort();
    assert_eq!(
        urls,
        [
            server.url("/"),
            server.url("/a.html"),
            server.url("/target.html")
        ]
    );
    assert_eq!(drained.left_out.len(), 1);
    let go = &drained.left_out[0];
    assert_eq!(go.url, server.url("/go"));
    assert_eq!(go.reason, LeftOutReason::RedirectToKnownPage);
    assert_eq!(go.status, Some(302));
    assert_eq!(
        go.final_url.as_deref(),
        Some(server.url("/target.html").as_str())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_reached_by_redirect_first_is_not_fetched_again_for_its_link() {
    // The redirect (depth 1) claims the target before the direct link (depth 2) turns up; the
    // direct link's page is slow, so its links arrive after the hop.
    let server = FixtureServer::builder()
        .page("/", "<a href=/go>go</a><a href=/b.html>b</a>")
        .reply("/go", Reply::redirect("/target.html"))
        .reply(
            "/b.html",
            Reply::html("<a href=/target.html>t</a>").delay(Duration::from_millis(300)),
        )
        // With something in its body: an empty document is a failed page, without a title.
        .page("/target.html", "<title>T</title><p>t</p>")
        .start()
        .await
        .unwrap();
    let drained = drain(engine().crawl(&portal(server.url("/"), 3)).unwrap()).await;
    assert_eq!(server.hits("/target.html"), 1);
    let mut urls: Vec<&str> = drained.pages.iter().map(|p| p.url.as_str()).collect();
    urls.sort();
    assert_eq!(
        urls,
        [server.url("/"), server.url("/b.html"), server.url("/go")]
    );
    let go = page(&drained.pages, &server.url("/go"));
    assert_eq!(go.status, Some(200));
    assert_eq!(
        go.final_url.as_deref(),
        Some(server.url("/target.html").as_str())
    );
    assert_eq!(go.title.as_deref(), Some("T"));
    assert_eq!(go.depth, 1);
    assert!(drained.left_out.is_empty(), "{:?}", drained.left_out);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_hop_of_a_crawled_redirect_is_under_the_network_policy() {
    let inside = FixtureServer::builder()
        .ip(Ipv4Addr::new(127, 0, 0, 2))
        .page("/secret.html", "<p>secret</p>")
        .start()
        .await
        .unwrap();
    let server = FixtureServer::builder()
        .page("/", "<a href=/go>go</a>")
        .reply("/go", Reply::redirect(inside.url("/secret.html")))
        .start()
        .await
        .unwrap();
    let engine = Engine::builder()
        .allow_network("127.0.0.1/32".parse().unwrap())
        .per_host_rps(0)
        .build()
        .unwrap();
    let outcome = engine.check(&portal(server.url("/"), 1)).await.unwrap();
    let go = page(&outcome.crawl.as_ref().unwrap().pages, &server.url("/go"));
    assert_eq!(go.error_kind, Some(ErrorKind::Refused), "{:?}", go.data);
    assert_eq!(inside.hits("/secret.html"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_loop_in_a_crawl_fails_its_page() {
    let server = FixtureServer::builder()
        .page("/", "<a href=/a>a</a>")
        .reply("/a", Reply::redirect("/b"))
        .reply("/b", Reply::redirect("/a"))
        .start()
        .await
        .unwrap();
    let outcome = engine().check(&portal(server.url("/"), 1)).await.unwrap();
    let a = page(&outcome.crawl.as_ref().unwrap().pages, &server.url("/a"));
    assert_eq!(a.error_kind, Some(ErrorKind::Redirect), "{:?}", a.data);
    assert!(server.hits("/a") <= 1 && server.hits("/b") <= 1);
}

// ---------------------------------------------------------------------------------------------
// Walls and empty documents are failures

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_cut_short_of_its_content_length_is_an_empty_check() {
    use tokio::io::AsyncWriteExt;
    // A server that announces 1,000 bytes, sends 40 and closes the connection.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            if wachet::testing::read_request_path(&mut socket)
                .await
                .is_none()
            {
                continue;
            }
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: 1000\r\n\r\n";
            let _ = socket.write_all(head.as_bytes()).await;
            let _ = socket
                .write_all(b"<html><body><p>Earl Grey 3.50 EUR</p>")
                .await;
            let _ = socket.shutdown().await;
        }
    });
    let outcome = engine().check(&Monitor::new(url)).await.unwrap();
    assert_eq!(
        outcome.error_kind,
        Some(ErrorKind::Empty),
        "{:?}",
        outcome.data
    );
    assert!(outcome.is_transient_failure());
    assert_eq!(
        outcome.error(),
        Some(
            "the page was cut short (the connection closed before the body's Content-Length was reached)"
        )
    );
}

/// A server on loopback that answers every request with `head` and `body`, then ends the
/// connection as `end` says: `false` closes it, `true` resets it (after a pause, so the client
/// has read what came before the reset).
async fn answer_and_end(head: &'static str, body: &'static [u8], reset: bool) -> String {
    use tokio::io::AsyncWriteExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            if wachet::testing::read_request_path(&mut socket)
                .await
                .is_none()
            {
                continue;
            }
            let _ = socket.write_all(head.as_bytes()).await;
            let _ = socket.write_all(body).await;
            let _ = socket.flush().await;
            if reset {
                tokio::time::sleep(Duration::from_millis(300)).await;
                // A zero linger makes the close a reset (RST), not an orderly end.
                let _ = socket2::SockRef::from(&socket).set_linger(Some(Duration::ZERO));
                drop(socket);
            } else {
                let _ = socket.shutdown().await;
            }
        }
    });
    url
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transfer_cut_in_any_framing_is_cut_short() {
    let chunked =
        "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ntransfer-encoding: chunked\r\n\r\n";
    let sized = "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: 1000\r\n\r\n";
    let lengthless = "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\nconnection: close\r\n\r\n";
    let page = b"<html><body><p>Earl Grey 3.50 EUR</p>";
    for (head, body, reset, error) in [
        (
            chunked,
            &b"25\r\n<html><body><p>Earl Grey 3.50 EUR</p>\r\n"[..],
            false,
            "the page was cut short (the connection closed before the body's last chunk)",
        ),
        (
            sized,
            &page[..],
            true,
            "the page was cut short (the connection was reset while the body was arriving)",
        ),
        (
            lengthless,
            &page[..],
            true,
            "the page was cut short (the connection was reset while the body was arriving)",
        ),
        (
            chunked,
            &b"25\r\n<html><body><p>Earl Grey 3.50 EUR</p>\r\n"[..],
            true,
            "the page was cut short (the connection was reset while the body was arriving)",
        ),
    ] {
        let url = answer_and_end(head, body, reset).await;
        let outcome = engine().check(&Monitor::new(url)).await.unwrap();
        assert_eq!(outcome.error(), Some(error), "{head:?} reset {reset}");
        assert_eq!(outcome.error_kind, Some(ErrorKind::Empty));
        assert!(outcome.is_transient_failure());
    }
    // A body without a length ends where the connection closes: it is whole.
    let url = answer_and_end(lengthless, page, false).await;
    let outcome = engine().check(&Monitor::new(url)).await.unwrap();
    assert_eq!(outcome.error(), None);
    assert_eq!(outcome.data.raw.as_deref(), Some("Earl Grey 3.50 EUR"));
}

/// A document is cut short only where a browser would lose content: a comment, a script or an
/// attribute value that runs to the end, or a start tag that never ends. One that only lacks
/// end tags, or stops inside one (as a real news page is served: `</body>\n\n</html`), is the
/// page, and its value is the whole page's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_is_cut_short_only_where_a_browser_would_lose_content() {
    let news = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/blocked/ends-inside-html-end-tag/page.html"
    ))
    .unwrap();
    let body = news.strip_suffix("</body>\n\n</html").unwrap();
    let cases = [
        ("the news page's own ending", news.clone(), false),
        ("</html> whole", format!("{body}</body>\n\n</html>"), false),
        (
            "</html and white space",
            format!("{body}</body>\n</html \n\t\n"),
            false,
        ),
        (
            "</html and a newline",
            format!("{body}</body></html\n"),
            false,
        ),
        ("no </html> at all", format!("{body}</body>\n"), false),
        ("no end tags at all", body.to_string(), false),
        ("</body></ht", format!("{body}</body></ht"), false),
        ("</bo", format!("{body}</bo"), false),
        (
            "inside <script> text",
            format!("{body}<script>window.edition = {{\"sections\": [\"local\", \"spo"),
            true,
        ),
        (
            "inside an attribute value",
            format!("{body}<a href=\"/local/2026/12/ferry-timet"),
            true,
        ),
        (
            "inside a comment",
            format!("{body}<!-- sidebar ad slot, filled by"),
            true,
        ),
        (
            "inside a start tag",
            format!("{body}<div class=more-sto"),
            true,
        ),
    ];
    let mut server = FixtureServer::builder();
    for (i, (_, page, _)) in cases.iter().enumerate() {
        server = server.page(format!("/{i}"), page.clone());
    }
    let server = server.start().await.unwrap();
    let monitor = |i: usize| Monitor {
        x_path: Some("//main".into()),
        ..Monitor::new(server.url(&format!("/{i}")))
    };
    let whole = engine().check(&monitor(1)).await.unwrap();
    let value = whole.data.raw.clone().unwrap();
    assert!(
        value.contains("Harbour town votes to keep its ferry"),
        "{value}"
    );
    assert!(value.contains("Bridge repairs delayed again"), "{value}");
    for (i, (ending, _, cut)) in cases.iter().enumerate() {
        let outcome = engine().check(&monitor(i)).await.unwrap();
        if *cut {
            assert_eq!(outcome.error_kind, Some(ErrorKind::Empty), "{ending}");
            assert_eq!(
                outcome.error(),
                Some("the page was cut short (it ends inside its HTML markup)"),
                "{ending}"
            );
        } else {
            assert_eq!(outcome.error(), None, "{ending}");
            assert_eq!(outcome.data.raw.as_deref(), Some(&*value), "{ending}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn walls_fail_a_check_and_a_crawled_page_with_their_kind() {
    let challenge = "<html><head><title>Just a moment...</title></head>\
                     <body><p>Checking your browser before accessing the site.</p></body></html>";
    let server = FixtureServer::builder()
        .page("/", "<p>Home <a href=/wall>w</a> <a href=/empty>e</a></p>")
        .reply(
            "/wall",
            Reply::new(403)
                .header("server", "cloudflare")
                .header("content-type", "text/html")
                .body(challenge),
        )
        .reply("/empty", Reply::html(""))
        .start()
        .await
        .unwrap();
    let wall = engine()
        .check(&Monitor::new(server.url("/wall")))
        .await
        .unwrap();
    assert_eq!(wall.error_kind, Some(ErrorKind::Blocked));
    assert_eq!(
        wall.error(),
        Some("the site answered with a bot challenge (Cloudflare, HTTP 403) instead of the page")
    );
    assert!(wall.is_transient_failure());
    // Ignoring invalid pages does not make a wall a page.
    let mut ignoring = Monitor::new(server.url("/wall"));
    ignoring.ignore_invalid_pages = true;
    let ignored = engine().check(&ignoring).await.unwrap();
    assert_eq!(ignored.error_kind, Some(ErrorKind::Blocked));

    let drained = drain(engine().crawl(&portal(server.url("/"), 1)).unwrap()).await;
    let crawled = page(&drained.pages, &server.url("/wall"));
    assert_eq!(crawled.error_kind, Some(ErrorKind::Blocked));
    assert_eq!(crawled.title, None, "a wall's title is not the page's");
    // HEAD has no body by definition: an empty value, not an empty page.
    let mut head = Monitor::new(server.url("/wall"));
    head.method = Some("HEAD".into());
    let head = engine().check(&head).await.unwrap();
    assert_eq!(
        head.error_kind,
        Some(ErrorKind::HttpStatus),
        "{:?}",
        head.data
    );
    let mut head = Monitor::new(server.url("/"));
    head.method = Some("HEAD".into());
    let head = engine().check(&head).await.unwrap();
    assert_eq!(head.value(), Some(""), "{:?}", head.data);

    let empty = page(&drained.pages, &server.url("/empty"));
    assert_eq!(empty.error_kind, Some(ErrorKind::Empty));
    assert_eq!(
        empty.data.error.as_deref(),
        Some("the page was empty (HTTP 200 with no body)")
    );
}

/// `Checker::page_source` fetches as a check would (policy, status, size) and
/// `PreparedMonitor::evaluate` gives the value a check stores, with what each XPath selected.
mod page_source_and_evaluation {
    use super::*;
    use wachet::SourceError;
    use wachet::extract::{Deadline, ExtractError};

    const PAGE: &str = r#"<html><body><div id="price">3.50 EUR</div>
        <ul><li class="item">Tea</li><li class="item">Cake <span class="ad">ad</span></li></ul>
        </body></html>"#;

    fn deadline() -> Deadline {
        Deadline::after(Duration::from_secs(20))
    }

    #[tokio::test]
    async fn the_value_of_a_fetched_page_is_the_value_a_check_stores() {
        let server = FixtureServer::builder()
            .page("/", PAGE)
            .reply("/gone", Reply::new(404))
            .start()
            .await
            .unwrap();
        let checker: Arc<dyn Checker> = Arc::new(engine());
        for (x_path, exclude, regex) in [
            (Some("//*[@id=\"price\"]"), None, Some(r"[\d.]+")),
            (
                Some("//li[@class=\"item\"]"),
                Some("//span[@class=\"ad\"]"),
                None,
            ),
            (None, None, None),
            (Some("//table"), None, None),
            (Some("count(//li)"), None, None),
        ] {
            let mut monitor = Monitor::new(server.url("/"));
            monitor.x_path = x_path.map(str::to_string);
            monitor.exclude_x_path = exclude.map(str::to_string);
            monitor.regex = regex.map(str::to_string);
            let prepared = checker.prepare(&monitor).unwrap();
            let source = checker.page_source(&prepared).await.unwrap();
            assert_eq!(source.status, 200);
            assert_eq!(source.final_url, server.url("/"));
            let evaluation = prepared.evaluate(&source.html, deadline());
            let checked = checker.check_prepared(&prepared).await;
            assert_eq!(evaluation.value.as_ref().ok(), checked.data.raw.as_ref());
            assert_eq!(
                evaluation.value.as_ref().err().map(ToString::to_string),
                checked.data.error
            );
        }

        let counted = |x_path: Option<&str>, exclude: Option<&str>| {
            let mut monitor = Monitor::new(server.url("/"));
            monitor.x_path = x_path.map(str::to_string);
            monitor.exclude_x_path = exclude.map(str::to_string);
            checker
                .prepare(&monitor)
                .unwrap()
                .evaluate(PAGE, deadline())
        };
        let items = counted(Some("//li[@class=\"item\"]"), Some("//span[@class=\"ad\"]"));
        assert_eq!(items.value, Ok("Tea\nCake".to_string()));
        assert_eq!((items.matched, items.excluded), (Some(2), Some(1)));
        let none = counted(Some("//table"), None);
        assert_eq!(none.value, Err(ExtractError::XPathMatchedNothing));
        assert_eq!((none.matched, none.excluded), (Some(0), None));
        let scalar = counted(Some("count(//li)"), None);
        assert_eq!((scalar.value, scalar.matched), (Ok("2".to_string()), None));
        let body = counted(None, None);
        assert_eq!((body.matched, body.excluded), (None, None));

        // An error status is the check's error, in its words.
        let prepared = checker.prepare(&Monitor::new(server.url("/gone"))).unwrap();
        let err = checker.page_source(&prepared).await.unwrap_err();
        assert_eq!(
            err,
            SourceError {
                message: "HTTP 404 Not Found".into(),
                kind: ErrorKind::HttpStatus
            }
        );
        // Unless the monitor ignores invalid pages, as its check then does.
        let mut ignoring = Monitor::new(server.url("/gone"));
        ignoring.ignore_invalid_pages = true;
        let source = checker
            .page_source(&checker.prepare(&ignoring).unwrap())
            .await
            .unwrap();
        assert_eq!(source.status, 404);
    }

    #[tokio::test]
    async fn the_network_policy_and_the_size_limit_apply_as_to_a_check() {
        let server = FixtureServer::builder()
            .page("/", PAGE)
            .page("/big", format!("<p>{}</p>", "x".repeat(200_000)))
            .start()
            .await
            .unwrap();
        let strict = Engine::builder().build().unwrap();
        let prepared = strict.prepare(&Monitor::new(server.url("/"))).unwrap();
        let err = strict.page_source(&prepared).await.unwrap_err();
        assert_eq!(err.kind, ErrorKind::Refused);
        assert_eq!(
            err.message,
            strict.check_prepared(&prepared).await.data.error.unwrap()
        );
        assert!(err.message.contains("not allowed"), "{err}");

        let small = Engine::builder()
            .allow_private_networks(true)
            .max_body_bytes(100_000)
            .build()
            .unwrap();
        let prepared = small.prepare(&Monitor::new(server.url("/big"))).unwrap();
        let err = small.page_source(&prepared).await.unwrap_err();
        assert_eq!(err.kind, ErrorKind::TooLarge, "{err}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_check_gives_the_pages_title_as_a_browser_shows_it() {
    let server = FixtureServer::builder()
        .page(
            "/titled",
            "<html><head><title> Tea &amp;\n coffee </title></head><body><p>3.50</p></body></html>",
        )
        .page(
            "/tree",
            "<html><head><title>Picked</title></head><body><p id=a>3.50</p></body></html>",
        )
        .page("/untitled", "<html><body><p>3.50</p></body></html>")
        .reply(
            "/data.json",
            Reply::new(200)
                .header("content-type", "application/json")
                .body("{\"a\": \"<title>not a page</title>\"}"),
        )
        .start()
        .await
        .unwrap();
    let engine = engine();
    let title = async |path: &str| {
        let monitor = Monitor::new(server.url(path));
        engine.check(&monitor).await.unwrap().title
    };
    assert_eq!(title("/titled").await.as_deref(), Some("Tea & coffee"));
    // A tree parse (an XPath) reads the title too.
    let mut by_xpath = Monitor::new(server.url("/tree"));
    by_xpath.x_path = Some("//p[@id='a']".into());
    let outcome = engine.check(&by_xpath).await.unwrap();
    assert_eq!(outcome.value(), Some("3.50"));
    assert_eq!(outcome.title.as_deref(), Some("Picked"));
    assert_eq!(title("/untitled").await, None);
    assert_eq!(title("/data.json").await, None);
}
