//! The Portal crawler against real servers on loopback, with the regression fixtures under
//! `fixtures/crawl/`: exact crawl sets per depth on a generated site (`tree`, whose expectations
//! its `generate.py` derives by BFS over its own graph), URL filters (`filters`), URL
//! normalization and dedup (`dupes`), a link trap under a page budget (`trap`), redirects, error
//! pages and binary content (`mixed`), other hosts, the stream API, validation, huge pages,
//! bad escapes, timeouts and per-host limits.
//!
//! Expected files hold one URL path per line (the port is dynamic); the tests prefix the server
//! origin. No test asserts on wall-clock durations; ordering comes only from server-side delays.

use crate::common::portal;
use futures::StreamExt;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::time::Duration;
use wachet::crawl::CrawlSummary;
use wachet::model::{UrlFilter, UrlFilterType, UrlFilterValue};
use wachet::testing::{FixtureServer, Reply};
use wachet::{CheckOutcome, Checker, CrawlEvent, CrawledPage, Engine, Monitor, Progress};

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

fn fixture(site: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/crawl")
        .join(site)
}

/// The non-empty, non-comment lines of a fixture file.
fn lines(file: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(file)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

/// An expected-paths file as full, sorted URLs on `server`.
fn expected_urls(server: &FixtureServer, file: &Path) -> Vec<String> {
    full_urls(server, &lines(file))
}

fn full_urls(server: &FixtureServer, paths: &[impl AsRef<str>]) -> Vec<String> {
    let mut urls: Vec<String> = paths.iter().map(|p| server.url(p.as_ref())).collect();
    urls.sort();
    urls
}

async fn serve(site: &str) -> FixtureServer {
    FixtureServer::serve_dir(fixture(site).join("site"))
        .await
        .unwrap()
}

fn builder() -> wachet::EngineBuilder {
    Engine::builder()
        .allow_private_networks(true)
        .max_pages(500)
        .crawl_concurrency(16)
        .per_host_rps(0)
        .per_host_concurrency(4)
        .strip_tracking_params(false)
        .total_timeout(Duration::from_secs(20))
}

fn engine() -> Engine {
    builder().build().unwrap()
}

fn contains(filter: &str) -> UrlFilterValue {
    UrlFilterValue {
        filter: Some(filter.into()),
        kind: UrlFilterType::Contains,
    }
}

fn regex(filter: &str) -> UrlFilterValue {
    UrlFilterValue {
        filter: Some(filter.into()),
        kind: UrlFilterType::Regex,
    }
}

async fn check(engine: &Engine, monitor: &Monitor) -> CheckOutcome {
    engine.check(monitor).await.expect("a valid monitor")
}

fn pages(outcome: &CheckOutcome) -> &[CrawledPage] {
    &outcome.crawl.as_ref().expect("a Portal outcome").pages
}

fn budget_reached(outcome: &CheckOutcome) -> bool {
    outcome
        .crawl
        .as_ref()
        .expect("a Portal outcome")
        .budget_reached
}

/// The crawled URLs, sorted.
fn crawled(outcome: &CheckOutcome) -> Vec<String> {
    let mut urls: Vec<String> = pages(outcome).iter().map(|p| p.url.clone()).collect();
    urls.sort();
    urls
}

fn page<'a>(outcome: &'a CheckOutcome, url: &str) -> &'a CrawledPage {
    pages(outcome)
        .iter()
        .find(|p| p.url == url)
        .unwrap_or_else(|| panic!("{url} was not crawled; crawled: {:#?}", crawled(outcome)))
}

/// Asserts that no normalized URL appears twice in the report.
fn assert_unique(outcome: &CheckOutcome) {
    let mut seen = BTreeSet::new();
    for p in pages(outcome) {
        assert!(seen.insert(p.url.clone()), "{} reported twice", p.url);
    }
}

/// Every event of a crawl stream: the pages (with their progress) and the final summary.
async fn drain(mut stream: wachet::CrawlStream) -> (Vec<(CrawledPage, Progress)>, CrawlSummary) {
    let mut pages = Vec::new();
    let mut summary = None;
    while let Some(event) = stream.next().await {
        assert!(summary.is_none(), "an event after Finished: {event:?}");
        match event {
            CrawlEvent::Page { page, progress } => pages.push((page, progress)),
            CrawlEvent::Finished(s) => summary = Some(s),
            _ => {}
        }
    }
    (pages, summary.expect("a Finished event ends every crawl"))
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// tree: depth = shortest distance, exact sets at depth 1, 2, 3
// ---------------------------------------------------------------------------------------------

/// `expected/pages.txt` of the tree: path -> (distance, pages one hop closer linking to it).
fn tree_pages() -> BTreeMap<String, (u8, Vec<String>)> {
    lines(&fixture("tree").join("expected/pages.txt"))
        .into_iter()
        .map(|line| {
            let mut parts = line.split(' ');
            let path = parts.next().unwrap().to_string();
            let distance: u8 = parts.next().unwrap().parse().unwrap();
            let parents = match parts.next().unwrap() {
                "-" => Vec::new(),
                list => list.split(',').map(str::to_string).collect(),
            };
            (path, (distance, parents))
        })
        .collect()
}

/// The committed expectations still describe the committed site: a BFS over the links of the
/// site's files (read here, independently of `generate.py`) gives the same distances.
#[test]
fn tree_expectations_match_the_site_on_disk() {
    let site = fixture("tree").join("site");
    let base = url::Url::parse("http://fixture.test/").unwrap();
    let href = regex::Regex::new(r#"href="([^"]*)""#).unwrap();
    let links_of = |path: &str| -> Vec<String> {
        let html = std::fs::read_to_string(site.join(path.trim_start_matches('/'))).unwrap();
        let page = base.join(path).unwrap();
        href.captures_iter(&html)
            .map(|c| page.join(&c[1]).unwrap().path().to_string())
            .collect()
    };
    let mut distance: BTreeMap<String, u8> = BTreeMap::from([("/index.html".to_string(), 0)]);
    let mut queue = std::collections::VecDeque::from(["/index.html".to_string()]);
    while let Some(path) = queue.pop_front() {
        let d = distance[&path];
        for link in links_of(&path) {
            if !distance.contains_key(&link) {
                distance.insert(link.clone(), d + 1);
                queue.push_back(link);
            }
        }
    }
    let recorded: BTreeMap<String, u8> =
        tree_pages().into_iter().map(|(p, (d, _))| (p, d)).collect();
    assert_eq!(distance, recorded);
    for depth in 1..=3 {
        let within: Vec<&String> = distance
            .iter()
            .filter(|(_, d)| **d <= depth)
            .map(|(p, _)| p)
            .collect();
        assert_eq!(
            within,
            lines(&fixture("tree").join(format!("expected/depth{depth}.txt")))
                .iter()
                .collect::<Vec<_>>(),
            "depth{depth}.txt"
        );
    }
    // Pages at every distance 0..=4, and shortcuts that make depth differ from folder depth.
    let folder_depth = |p: &str| p.matches('/').count() - 1;
    assert!((0..=4).all(|d| distance.values().any(|v| *v == d)));
    assert!(
        distance
            .iter()
            .any(|(p, d)| usize::from(*d) < folder_depth(p) + 1 && p.contains("/deep/"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tree_crawls_exactly_the_pages_within_depth_1_2_and_3() {
    let distances = tree_pages();
    for depth in 1..=3u8 {
        let server = serve("tree").await;
        let expected = expected_urls(
            &server,
            &fixture("tree").join(format!("expected/depth{depth}.txt")),
        );
        let outcome = check(&engine(), &portal(server.url("/index.html"), depth.into())).await;
        assert_eq!(outcome.error(), None, "depth {depth}");
        assert_eq!(crawled(&outcome), expected, "depth {depth}");
        assert_unique(&outcome);
        assert!(!budget_reached(&outcome), "depth {depth}");
        // The monitor's own value: the sorted URLs, one a line.
        assert_eq!(outcome.value(), Some(expected.join("\n").as_str()));
        assert_eq!(outcome.status, Some(200));
        // Each page's depth is its shortest distance, and it was found on a page one hop closer.
        let origin = server.url("");
        for p in pages(&outcome) {
            let path = p.url.strip_prefix(&origin).unwrap();
            let (distance, parents) = &distances[path];
            assert_eq!(p.depth, *distance, "depth of {path} (crawl depth {depth})");
            assert!(p.depth <= depth);
            match &p.found_on {
                None => assert_eq!(path, "/index.html"),
                Some(on) => {
                    let on = on.strip_prefix(&origin).unwrap();
                    assert!(
                        parents.iter().any(|q| q == on),
                        "{path} found on {on}, which is not one hop closer ({parents:?})"
                    );
                }
            }
            assert_eq!(p.status, Some(200), "{path}");
            assert_eq!(p.data.error, None, "{path}");
        }
        // Every crawled page was fetched once, and nothing else was fetched.
        assert_eq!(server.requests().len(), expected.len(), "depth {depth}");
        for url in &expected {
            let path = url.strip_prefix(&origin).unwrap();
            assert_eq!(server.hits(path), 1, "{path} (crawl depth {depth})");
        }
        assert_eq!(server.hits("/orphan.html"), 0);
        assert_eq!(server.hits("/far/away.html"), 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tree_default_depth_is_2() {
    let server = serve("tree").await;
    let mut monitor = portal(server.url("/index.html"), 2);
    monitor.crawling_depth = None;
    let outcome = check(&engine(), &monitor).await;
    assert_eq!(
        crawled(&outcome),
        expected_urls(&server, &fixture("tree").join("expected/depth2.txt"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tree_pages_carry_their_own_xpath_values() {
    let server = serve("tree").await;
    let mut monitor = portal(server.url("/index.html"), 3);
    monitor.x_path = Some("//h1".into());
    let outcome = check(&engine(), &monitor).await;
    let origin = server.url("");
    assert_eq!(pages(&outcome).len(), 75);
    for p in pages(&outcome) {
        // Every page's <h1> is its own path.
        let path = p.url.strip_prefix(&origin).unwrap();
        assert_eq!(p.data.raw.as_deref(), Some(path));
        assert_eq!(p.content_type.as_deref(), Some("text/html"));
        assert_eq!(p.final_url.as_deref(), Some(p.url.as_str()));
    }
    // The monitor's own value stays the URL list, not the start page's <h1>.
    assert_eq!(
        outcome.value(),
        Some(
            expected_urls(&server, &fixture("tree").join("expected/depth3.txt"))
                .join("\n")
                .as_str()
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tree_pages_carry_their_own_regex_values() {
    // The same per-page values as with `//h1`, without XPath: the first word of each page's
    // rendered text is its <h1>, its own path.
    let server = serve("tree").await;
    let mut monitor = portal(server.url("/index.html"), 2);
    monitor.regex = Some(r"\A\s*(\S+)".into());
    let outcome = check(&engine(), &monitor).await;
    let origin = server.url("");
    assert_eq!(pages(&outcome).len(), 26);
    for p in pages(&outcome) {
        let path = p.url.strip_prefix(&origin).unwrap();
        assert_eq!(p.data.raw.as_deref(), Some(path));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tree_found_on_names_the_linking_page() {
    let server = serve("tree").await;
    let outcome = check(&engine(), &portal(server.url("/index.html"), 2)).await;
    let start = page(&outcome, &server.url("/index.html"));
    assert_eq!((start.depth, start.found_on.as_deref()), (0, None));
    for (path, depth, on) in [
        // A depth-2 page with one parent at depth 1.
        ("/sec1/topic3.html", 2, "/sec1/index.html"),
        // Folder depth 4, but a cross link from a section page makes it depth 2.
        ("/sec2/t1/deep/leaf1.html", 2, "/sec1/index.html"),
        // Folder depth 4; its item is linked from the home page, so depth 2.
        ("/sec3/t2/deep/leaf2.html", 2, "/sec3/t2/item1.html"),
        // Folder depth 3, linked from the home page.
        ("/sec3/t2/item1.html", 1, "/index.html"),
    ] {
        let p = page(&outcome, &server.url(path));
        assert_eq!(p.depth, depth, "{path}");
        assert_eq!(
            p.found_on.as_deref(),
            Some(server.url(on).as_str()),
            "{path}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tree_budget_exactly_met_is_not_reached_and_one_less_is() {
    let server = serve("tree").await;
    let expected = expected_urls(&server, &fixture("tree").join("expected/depth3.txt"));
    let shallow = expected_urls(&server, &fixture("tree").join("expected/depth2.txt"));
    let n = expected.len();
    let monitor = portal(server.url("/index.html"), 3);

    let exact = builder().max_pages(n).build().unwrap();
    let outcome = check(&exact, &monitor).await;
    assert_eq!(crawled(&outcome), expected);
    assert!(!budget_reached(&outcome), "{n} pages fit a budget of {n}");

    let short = builder().max_pages(n - 1).build().unwrap();
    let outcome = check(&short, &monitor).await;
    assert_eq!(pages(&outcome).len(), n - 1);
    assert!(budget_reached(&outcome));
    assert_unique(&outcome);
    // Breadth first: the budget cuts the last level, never a shallower one.
    let got: BTreeSet<String> = crawled(&outcome).into_iter().collect();
    for url in &shallow {
        assert!(
            got.contains(url),
            "{url} (depth <= 2) missing under the budget"
        );
    }
    assert!(got.iter().all(|u| expected.contains(u)));
}

// ---------------------------------------------------------------------------------------------
// filters: include / exclude, Contains / Regex
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filters_do_not_apply_to_the_start_url() {
    // The filters site is shared by the cases of its suite, so it lives inside the suite.
    let server = FixtureServer::serve_dir(fixture("filters").join("cases/_site"))
        .await
        .unwrap();
    let mut monitor = portal(server.url("/index.html"), 1);
    monitor.url_filter = Some(UrlFilter {
        include: Some(vec![contains("/nothing-matches/")]),
        exclude: Some(vec![regex("index")]),
    });
    let outcome = check(&engine(), &monitor).await;
    assert_eq!(crawled(&outcome), [server.url("/index.html")]);
    assert_eq!(outcome.value(), Some(server.url("/index.html").as_str()));
}

// ---------------------------------------------------------------------------------------------
// dupes: one target, many spellings, one fetch
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dupes_every_spelling_of_a_url_is_fetched_once() {
    let server = serve("dupes").await;
    let port = server.addr().port();
    // Absolute spellings need the port, so this page is built here.
    let absolute = [
        format!("HTTP://127.0.0.1:{port}/dir/a.html"),
        format!("http://127.0.0.1:{port}/dir/../dir/a.html#x"),
        format!("//127.0.0.1:{port}/dir/a.html"),
        format!("http://127.0.0.1:0{port}/dir/a.html"),
        format!("http://2130706433:{port}/dir/a.html"),
        format!("Http://127.0.0.1:{port}/dir/b.html?x=1#f"),
        format!("http://127.0.0.1:{port}/dir/caf%c3%a9.html"),
        format!("http://127.0.0.1:{port}/dir/%7Euser.html"),
        format!("http://127.0.0.1:{port}/dir/index.html#again"),
        format!("http://127.0.0.1:{port}/dir/abs.html"),
    ];
    let links: String = absolute
        .iter()
        .map(|href| format!("<a href=\"{href}\">x</a>\n"))
        .collect();
    server.set("/dir/abs.html", Reply::html(format!("<h1>abs</h1>{links}")));

    // The fixture is meaningful: every spelling is a followable link to one of the pages
    // (none is dropped as unparsable), so a crawler without dedup would fetch each again.
    let expected = expected_urls(&server, &fixture("dupes").join("expected/urls.txt"));
    let page_url = url::Url::parse(&server.url("/dir/index.html")).unwrap();
    let static_page =
        std::fs::read_to_string(fixture("dupes").join("site/dir/index.html")).unwrap();
    let hrefs: Vec<String> = regex::Regex::new(r#"href="([^"]*)""#)
        .unwrap()
        .captures_iter(&static_page)
        .map(|c| c[1].to_string())
        .chain(absolute.iter().cloned())
        .collect();
    assert_eq!(hrefs.len(), 25 + absolute.len());
    for href in &hrefs {
        let resolved = wachet::crawl::normalize::resolve(&page_url, href, false)
            .unwrap_or_else(|| panic!("{href} is not a followable link"));
        assert!(
            expected.contains(&resolved.to_string()),
            "{href} resolves to {resolved}, not one of the five pages"
        );
    }

    let outcome = check(&engine(), &portal(server.url("/dir/index.html"), 3)).await;
    assert_eq!(crawled(&outcome), expected);
    assert_unique(&outcome);
    for url in &expected {
        let path = url.strip_prefix(&server.url("")).unwrap();
        let path = path.split('?').next().unwrap();
        assert_eq!(server.hits(path), 1, "{path}");
    }
    let sent: Vec<String> = server.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(sent.len(), expected.len(), "requests: {sent:#?}");
    for p in pages(&outcome) {
        assert_eq!(p.data.error, None, "{}", p.url);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tracking_parameters_are_stripped_only_with_the_setting() {
    let server = FixtureServer::builder()
        .page(
            "/",
            r#"<a href="/p.html?id=1">1</a>
               <a href="/p.html?id=1&utm_source=news">2</a>
               <a href="/p.html?utm_medium=mail&id=1">3</a>
               <a href="/p.html?id=1&fbclid=abc">4</a>
               <a href="/p.html?gclid=z&id=1">5</a>
               <a href="/q.html?utm_campaign=x">6</a>"#,
        )
        .page("/p.html", "<h1>p</h1>")
        .page("/q.html", "<h1>q</h1>")
        .start()
        .await
        .unwrap();
    let monitor = portal(server.url("/"), 1);

    let stripping = builder().strip_tracking_params(true).build().unwrap();
    let outcome = check(&stripping, &monitor).await;
    assert_eq!(
        crawled(&outcome),
        full_urls(&server, &["/", "/p.html?id=1", "/q.html"])
    );
    assert_eq!(server.hits("/p.html"), 1);

    let keeping = engine();
    let outcome = check(&keeping, &monitor).await;
    assert_eq!(
        crawled(&outcome),
        full_urls(
            &server,
            &[
                "/",
                "/p.html?id=1",
                "/p.html?id=1&utm_source=news",
                "/p.html?utm_medium=mail&id=1",
                "/p.html?id=1&fbclid=abc",
                "/p.html?gclid=z&id=1",
                "/q.html?utm_campaign=x",
            ]
        )
    );
}

// ---------------------------------------------------------------------------------------------
// trap: a calendar that never ends, under a page budget
// ---------------------------------------------------------------------------------------------

/// `/calendar?month=M` links to the months before and after and to its 31 days; each day links
/// to the next day, its month and the next month. Months -4..=4 are served, more than a
/// depth-3 crawl can reach.
async fn trap_server() -> FixtureServer {
    let server = serve("trap").await;
    for month in -4i32..=4 {
        let mut html = format!(
            "<h1>Month {month}</h1><a href=\"/calendar?month={}\">prev</a><a href=\"/calendar?month={}\">next</a>",
            month - 1,
            month + 1
        );
        for day in 1..=31 {
            html.push_str(&format!(
                "<a href=\"/calendar?month={month}&day={day}\">{day}</a>"
            ));
            let mut day_html = format!(
                "<h1>{month}/{day}</h1><a href=\"/calendar?month={month}\">month</a><a href=\"/calendar?month={}\">next month</a>",
                month + 1
            );
            if day < 31 {
                day_html.push_str(&format!(
                    "<a href=\"?month={month}&day={}\">tomorrow</a>",
                    day + 1
                ));
            }
            server.set(
                format!("/calendar?month={month}&day={day}"),
                Reply::html(day_html),
            );
        }
        server.set(format!("/calendar?month={month}"), Reply::html(html));
    }
    server
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trap_stops_at_the_page_budget() {
    let server = trap_server().await;
    let engine = builder().max_pages(50).build().unwrap();
    let outcome = check(&engine, &portal(server.url("/index.html"), 3)).await;
    assert_eq!(pages(&outcome).len(), 50);
    assert!(budget_reached(&outcome));
    assert_unique(&outcome);
    assert_eq!(
        server.requests().len(),
        50,
        "nothing fetched past the budget"
    );
    assert_eq!(outcome.value().unwrap().lines().count(), 50);
    for path in ["/index.html", "/about.html", "/calendar?month=0"] {
        page(&outcome, &server.url(path));
    }
    assert!(pages(&outcome).iter().all(|p| p.data.error.is_none()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trap_without_a_tight_budget_is_bounded_by_depth() {
    let server = trap_server().await;
    let outcome = check(&engine(), &portal(server.url("/index.html"), 3)).await;
    // Depth 1: month 0 and about; 2: months -1 and 1 and the 31 days of month 0;
    // 3: months -2 and 2 and the 62 days of months -1 and 1.
    assert_eq!(pages(&outcome).len(), 1 + 2 + 33 + 64);
    assert!(!budget_reached(&outcome));
    assert_unique(&outcome);
    let depth_of = |path: &str| page(&outcome, &server.url(path)).depth;
    assert_eq!(depth_of("/calendar?month=0&day=31"), 2);
    assert_eq!(depth_of("/calendar?month=1&day=5"), 3);
    assert_eq!(depth_of("/calendar?month=-2"), 3);
    assert_eq!(server.hits("/calendar"), 98);
}

// ---------------------------------------------------------------------------------------------
// mixed: redirects, 404s, binary content, link sources
// ---------------------------------------------------------------------------------------------

async fn mixed_server() -> FixtureServer {
    let server = serve("mixed").await;
    server.set("/go", Reply::redirect("/sub/landing.html"));
    server.set(
        "/gone.html",
        Reply::html("<h1>Gone</h1><a href=\"/only-from-404.html\">still linked</a>").status(404),
    );
    server
}

fn mixed_expected(server: &FixtureServer, ignore_invalid: bool, binary: bool) -> Vec<String> {
    let dir = fixture("mixed").join("expected");
    let mut paths = lines(&dir.join("html.txt"));
    if !ignore_invalid {
        paths.extend(lines(&dir.join("invalid.txt")));
    }
    if binary {
        paths.extend(lines(&dir.join("binary.txt")));
    }
    full_urls(server, &paths)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mixed_redirects_errors_and_binary_content() {
    let dir = fixture("mixed");
    let pdf = std::fs::read(dir.join("site/doc.pdf")).unwrap();
    let png = std::fs::read(dir.join("site/img.png")).unwrap();
    let pdf_value = format!(
        "application/pdf, {} bytes, sha256 {}",
        pdf.len(),
        sha256_hex(&pdf)
    );
    let png_value = format!(
        "image/png, {} bytes, sha256 {}",
        png.len(),
        sha256_hex(&png)
    );

    for ignore_invalid in [false, true] {
        for binary in [false, true] {
            let case = format!("ignoreInvalidPages={ignore_invalid} crawlBinaryContent={binary}");
            let server = mixed_server().await;
            let mut monitor = portal(server.url("/index.html"), 2);
            monitor.ignore_invalid_pages = ignore_invalid;
            monitor.crawl_binary_content = binary;
            let outcome = check(&engine(), &monitor).await;
            assert_eq!(outcome.error(), None, "{case}");
            assert_eq!(
                crawled(&outcome),
                mixed_expected(&server, ignore_invalid, binary),
                "{case}"
            );
            assert_unique(&outcome);

            // Error pages: reported with the status text, or left out.
            for path in lines(&dir.join("expected/invalid.txt")) {
                if ignore_invalid {
                    assert!(!crawled(&outcome).contains(&server.url(&path)), "{case}");
                } else {
                    let p = page(&outcome, &server.url(&path));
                    assert_eq!(
                        p.data.error.as_deref(),
                        Some("HTTP 404 Not Found"),
                        "{case}"
                    );
                    assert_eq!(p.data.raw, None, "{case}");
                    assert_eq!(p.status, Some(404), "{case}");
                    assert_eq!(p.depth, 1, "{case}");
                }
            }
            // Binary content: value = type, size and hash; never parsed.
            if binary {
                let p = page(&outcome, &server.url("/doc.pdf"));
                assert_eq!(p.data.raw.as_deref(), Some(pdf_value.as_str()), "{case}");
                assert_eq!(p.content_type.as_deref(), Some("application/pdf"));
                assert_eq!(p.status, Some(200));
                let p = page(&outcome, &server.url("/img.png"));
                assert_eq!(p.data.raw.as_deref(), Some(png_value.as_str()), "{case}");
            }
            // Binaries are fetched either way (their type is only known from the response).
            assert_eq!(server.hits("/doc.pdf"), 1, "{case}");
            assert_eq!(server.hits("/img.png"), 1, "{case}");

            // The redirect: reported under the link's URL, links resolved against the final URL.
            let go = page(&outcome, &server.url("/go"));
            assert_eq!(go.status, Some(200), "{case}");
            assert_eq!(
                go.final_url.as_deref(),
                Some(server.url("/sub/landing.html").as_str())
            );
            let next = page(&outcome, &server.url("/sub/next.html"));
            assert_eq!(next.depth, 2);
            assert_eq!(next.found_on.as_deref(), Some(server.url("/go").as_str()));
            // <base href>, frames, iframes and areas.
            let x = page(&outcome, &server.url("/other/x.html"));
            assert_eq!(
                x.found_on.as_deref(),
                Some(server.url("/base/page.html").as_str())
            );
            assert_eq!(
                page(&outcome, &server.url("/f1.html")).found_on.as_deref(),
                Some(server.url("/framed.html").as_str())
            );

            // Links inside error pages, binaries, javascript:/data: URLs, <img>, <link>.
            for path in lines(&dir.join("expected/never-requested.txt")) {
                assert_eq!(server.hits(&path), 0, "{path} ({case})");
            }
            // Every listed URL once, plus the redirect's target.
            let all = mixed_expected(&server, false, true).len();
            assert_eq!(server.requests().len(), all + 1, "{case}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_start_page_fails_the_check() {
    let server = serve("mixed").await;
    let outcome = check(&engine(), &portal(server.url("/missing.html"), 2)).await;
    assert_eq!(outcome.error(), Some("HTTP 404 Not Found"));
    assert_eq!(outcome.value(), None);
    assert_eq!(outcome.status, Some(404));
    assert_eq!(pages(&outcome).len(), 1);
}

// ---------------------------------------------------------------------------------------------
// The stream API
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stream_reports_pages_as_events_with_consistent_progress() {
    let server = mixed_server().await;
    let mut monitor = portal(server.url("/index.html"), 2);
    monitor.crawl_binary_content = true;
    monitor.ignore_invalid_pages = false;
    let (events, summary) = drain(engine().crawl(&monitor).unwrap()).await;

    let expected = mixed_expected(&server, false, true);
    let mut urls: Vec<String> = events.iter().map(|(p, _)| p.url.clone()).collect();
    urls.sort();
    assert_eq!(urls, expected);
    assert_eq!(events[0].0.depth, 0, "the start page comes first");
    let mut failed = 0;
    let mut reported: BTreeSet<String> = BTreeSet::new();
    for (i, (page, progress)) in events.iter().enumerate() {
        if page.data.error.is_some() {
            failed += 1;
        }
        assert_eq!(progress.done, i + 1, "{}", page.url);
        assert_eq!(progress.failed, failed, "{}", page.url);
        // Levels overlap (a slow page must not hold others back), but a page is never reported
        // before the page it was found on.
        if let Some(parent) = &page.found_on {
            assert!(
                reported.contains(parent),
                "{} came before {parent}",
                page.url
            );
        }
        reported.insert(page.url.clone());
    }
    assert_eq!(failed, 2);
    assert_eq!(summary.progress.done, events.len());
    assert_eq!(summary.progress.failed, 2);
    assert_eq!(summary.progress.queued, 0);
    assert!(!summary.budget_reached);
    assert_eq!(events.last().unwrap().1.queued, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stream_and_check_agree() {
    let server = serve("tree").await;
    let monitor = portal(server.url("/index.html"), 3);
    let engine = engine();
    let (events, summary) = drain(engine.crawl(&monitor).unwrap()).await;
    let outcome = check(&engine, &monitor).await;
    let mut urls: Vec<String> = events.into_iter().map(|(p, _)| p.url).collect();
    urls.sort();
    assert_eq!(urls, crawled(&outcome));
    assert_eq!(summary.progress.done, urls.len());
    assert_eq!(summary.progress.failed, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_stream_early_stops_the_crawl() {
    let mut setup = FixtureServer::builder().page(
        "/",
        (1..=20)
            .map(|i| format!("<a href=\"/p{i}.html\">{i}</a>"))
            .collect::<String>(),
    );
    for i in 1..=20 {
        setup = setup.reply(
            format!("/p{i}.html"),
            Reply::html(format!("<h1>{i}</h1>")).delay(Duration::from_millis(300)),
        );
    }
    let server = setup.start().await.unwrap();
    let engine = builder_one_at_a_time();
    let mut stream = engine.crawl(&portal(server.url("/"), 1)).unwrap();
    match stream.next().await {
        Some(CrawlEvent::Page { page, progress }) => {
            assert_eq!(page.url, server.url("/"));
            assert_eq!(progress.done, 1);
        }
        other => panic!("expected the start page, got {other:?}"),
    }
    drop(stream);

    // The engine is still usable, and the next crawl is not held up by the abandoned one.
    let other = serve("dupes").await;
    let outcome = check(&engine, &portal(other.url("/dir/index.html"), 1)).await;
    assert_eq!(outcome.error(), None);

    // One page at a time, 300 ms each: a crawl that went on would have asked for several more
    // pages in this time. (Slowness can only make this pass more easily, never fail.)
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let asked: Vec<String> = server.requests().into_iter().map(|r| r.path).collect();
    assert!(
        asked.len() <= 2,
        "the crawl went on after its stream was dropped: {asked:?}"
    );
}

fn builder_one_at_a_time() -> Engine {
    builder()
        .crawl_concurrency(1)
        .per_host_concurrency(1)
        .build()
        .unwrap()
}

// ---------------------------------------------------------------------------------------------
// Other hosts
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_hosts_are_followed_only_with_crawl_pages_from_all_domains() {
    let b = FixtureServer::builder()
        .ip(Ipv4Addr::new(127, 0, 0, 2))
        .start()
        .await
        .unwrap();
    let a = FixtureServer::builder()
        .page(
            "/index.html",
            format!(
                "<a href=\"/a1.html\">a1</a><a href=\"{}\">b1</a>",
                b.url("/b1.html")
            ),
        )
        .page(
            "/a1.html",
            format!("<a href=\"{}\">b2</a>", b.url("/b2.html#frag")),
        )
        .start()
        .await
        .unwrap();
    b.set(
        "/b1.html",
        Reply::html(format!(
            "<a href=\"b2.html\">b2</a><a href=\"{}\">a home</a><a href=\"/b3.html\">b3</a>",
            a.url("/index.html")
        )),
    );
    b.set("/b2.html", Reply::html("<h1>b2</h1>"));
    b.set("/b3.html", Reply::html("<h1>b3</h1>"));

    let mut monitor = portal(a.url("/index.html"), 2);
    let outcome = check(&engine(), &monitor).await;
    assert_eq!(
        crawled(&outcome),
        full_urls(&a, &["/index.html", "/a1.html"])
    );
    assert!(b.requests().is_empty());

    monitor.crawl_pages_from_all_domains = true;
    let outcome = check(&engine(), &monitor).await;
    let mut expected = full_urls(&a, &["/index.html", "/a1.html"]);
    expected.extend(full_urls(&b, &["/b1.html", "/b2.html", "/b3.html"]));
    expected.sort();
    assert_eq!(crawled(&outcome), expected);
    assert_unique(&outcome);
    assert_eq!(b.hits("/b2.html"), 1);
    assert_eq!(a.hits("/index.html"), 2, "once per crawl");
    let b3 = page(&outcome, &b.url("/b3.html"));
    assert_eq!(b3.depth, 2);
    assert_eq!(b3.found_on.as_deref(), Some(b.url("/b1.html").as_str()));
}

// ---------------------------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------------------------

fn fields(err: &wachet::InvalidMonitor) -> Vec<&str> {
    err.errors.iter().map(|e| e.field.as_str()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_monitors_are_refused_before_any_fetch() {
    let server = serve("tree").await;
    let engine = engine();

    let monitor = portal("ftp://127.0.0.1/index.html", 2);
    let err = engine.check(&monitor).await.unwrap_err();
    assert_eq!(fields(&err), ["url"], "{err}");
    assert_eq!(fields(&engine.crawl(&monitor).err().unwrap()), ["url"]);

    let mut monitor = portal(server.url("/index.html"), 2);
    monitor.url_filter = Some(UrlFilter {
        include: Some(vec![contains("/sec1/")]),
        exclude: Some(vec![regex("(unclosed")]),
    });
    let err = engine.check(&monitor).await.unwrap_err();
    assert_eq!(fields(&err), ["urlFilter.exclude[0].filter"], "{err}");
    assert_eq!(
        fields(&engine.crawl(&monitor).err().unwrap()),
        ["urlFilter.exclude[0].filter"]
    );

    for depth in [0, 4] {
        let monitor = portal(server.url("/index.html"), depth);
        let err = engine.check(&monitor).await.unwrap_err();
        assert_eq!(fields(&err), ["crawlingDepth"], "{err}");
    }
    assert!(server.requests().is_empty());
}

// ---------------------------------------------------------------------------------------------
// Hostile pages
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_5_mb_page_of_links_ends_at_the_budget() {
    let mut html = String::from("<h1>links</h1>\n");
    let mut i = 0usize;
    while html.len() < 5 * 1024 * 1024 {
        if i.is_multiple_of(2) {
            html.push_str(&format!("<a href=\"/same{}.html\">s</a>\n", i % 5));
        } else {
            html.push_str(&format!("<a href=\"/d/{i}.html\">d</a>\n"));
        }
        i += 1;
    }
    let mut setup = FixtureServer::builder().page("/big.html", html);
    for k in 0..5 {
        setup = setup.page(format!("/same{k}.html"), format!("<h1>same {k}</h1>"));
    }
    let server = setup.start().await.unwrap();
    let engine = builder().max_pages(100).build().unwrap();
    let outcome = check(&engine, &portal(server.url("/big.html"), 2)).await;
    assert_eq!(outcome.error(), None);
    assert_eq!(pages(&outcome).len(), 100);
    assert!(budget_reached(&outcome));
    assert_unique(&outcome);
    assert_eq!(server.requests().len(), 100);
    for k in [0, 2, 4] {
        // The first links of the page: same0, same2, same4 (odd ones are distinct links).
        let p = page(&outcome, &server.url(&format!("/same{k}.html")));
        assert_eq!(p.data.error, None);
        assert_eq!(server.hits(&format!("/same{k}.html")), 1);
    }
    // The distinct links do not exist: reported as 404s.
    let missing = page(&outcome, &server.url("/d/1.html"));
    assert_eq!(missing.data.error.as_deref(), Some("HTTP 404 Not Found"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_percent_encoding_does_not_break_the_crawl() {
    let server = FixtureServer::builder()
        .page(
            "/",
            r#"<a href="/bad%zz.html">zz</a><a href="/bad%4.html">truncated</a>
               <a href="/bad%.html">lone</a><a href="/ok.html">ok</a>"#,
        )
        .page("/ok.html", "<h1>ok</h1><a href=\"/ok2.html\"></a>")
        .page("/ok2.html", "<h1>ok2</h1>")
        .page(
            "/bad%zz.html",
            "<h1>bad</h1><a href=\"/after-bad.html\"></a>",
        )
        .page("/after-bad.html", "<h1>after</h1>")
        .start()
        .await
        .unwrap();
    // No XPath: a page's value is its rendered text, here just its <h1>.
    let monitor = portal(server.url("/"), 2);
    let outcome = check(&engine(), &monitor).await;
    assert_eq!(outcome.error(), None);
    assert_unique(&outcome);
    for (path, value) in [
        ("/ok.html", "ok"),
        ("/ok2.html", "ok2"),
        // Invalid escapes stay as they are, and the page is fetched under that name.
        ("/bad%zz.html", "bad"),
        ("/after-bad.html", "after"),
    ] {
        let p = page(&outcome, &server.url(path));
        assert_eq!(p.data.raw.as_deref(), Some(value), "{path}");
    }
    for path in ["/bad%4.html", "/bad%.html"] {
        let p = page(&outcome, &server.url(path));
        assert_eq!(
            p.data.error.as_deref(),
            Some("HTTP 404 Not Found"),
            "{path}"
        );
    }
    assert_eq!(pages(&outcome).len(), 7);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn urls_longer_than_2048_characters_are_skipped() {
    let server = FixtureServer::builder().start().await.unwrap();
    let origin_len = server.url("").len();
    // "/" + k x "a" + ".html": the URL is origin_len + k + 6 characters.
    let path_of = |url_len: usize| format!("/{}.html", "a".repeat(url_len - origin_len - 6));
    let fits = path_of(2048);
    let too_long = path_of(2049);
    assert_eq!(server.url(&fits).len(), 2048);
    assert_eq!(server.url(&too_long).len(), 2049);
    server.set(
        "/",
        Reply::html(format!(
            "<a href=\"{fits}\">fits</a><a href=\"{too_long}\">too long</a><a href=\"/short.html\">short</a>"
        )),
    );
    for path in [&fits, &too_long, &"/short.html".to_string()] {
        server.set(path.as_str(), Reply::html("<h1>here</h1>"));
    }
    let outcome = check(&engine(), &portal(server.url("/"), 1)).await;
    assert_eq!(
        crawled(&outcome),
        full_urls(&server, &["/", "/short.html", fits.as_str()])
    );
    assert_eq!(server.hits(&too_long), 0);
}

// ---------------------------------------------------------------------------------------------
// Timeouts and per-host limits
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_that_never_answers_times_out_while_the_rest_completes() {
    let server = FixtureServer::builder()
        .page(
            "/",
            r#"<a href="/slow.html">slow</a><a href="/a.html">a</a><a href="/b.html">b</a>"#,
        )
        .reply(
            "/slow.html",
            Reply::html("<h1>late</h1>").delay(Duration::from_secs(60)),
        )
        .page("/a.html", "<h1>a</h1><a href=\"/c.html\"></a>")
        .page("/b.html", "<h1>b</h1>")
        .page("/c.html", "<h1>c</h1>")
        .start()
        .await
        .unwrap();
    let engine = builder()
        .total_timeout(Duration::from_secs(1))
        .build()
        .unwrap();
    let monitor = portal(server.url("/"), 2);
    let (events, summary) = drain(engine.crawl(&monitor).unwrap()).await;
    let by_url: HashMap<String, CrawledPage> = events
        .into_iter()
        .map(|(p, _)| (p.url.clone(), p))
        .collect();
    let slow = &by_url[&server.url("/slow.html")];
    assert_eq!(slow.data.error.as_deref(), Some("timed out after 1 s"));
    assert_eq!(slow.status, None);
    for (path, value) in [("/a.html", "a"), ("/b.html", "b"), ("/c.html", "c")] {
        assert_eq!(by_url[&server.url(path)].data.raw.as_deref(), Some(value));
    }
    assert_eq!(by_url.len(), 5);
    assert_eq!(summary.progress.done, 5);
    assert_eq!(summary.progress.failed, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_host_does_not_stall_the_others() {
    let fast = FixtureServer::builder()
        .ip(Ipv4Addr::new(127, 0, 0, 2))
        .page("/f1.html", "<h1>f1</h1>")
        .page("/f2.html", "<h1>f2</h1>")
        .page("/f3.html", "<h1>f3</h1>")
        .start()
        .await
        .unwrap();
    // 4 slow pages, more than the 2 requests in flight allowed in all: a scheduler that let
    // pages wait for their host while holding a global slot, or that stopped at the head of one
    // queue, would hold the fast host's pages behind the slow ones.
    let slow_delay = Duration::from_millis(800);
    let mut setup = FixtureServer::builder();
    for i in 1..=4 {
        setup = setup.reply(
            format!("/s{i}.html"),
            Reply::html(format!("<h1>s{i}</h1>")).delay(slow_delay),
        );
    }
    // The slow host's links come first in the page, so a global FIFO would send them first.
    let links: String = (1..=4)
        .map(|i| format!("<a href=\"/s{i}.html\">s{i}</a>"))
        .chain(
            (1..=3).map(|i| format!("<a href=\"{}\">f{i}</a>", fast.url(&format!("/f{i}.html")))),
        )
        .collect();
    let slow = setup.page("/", links).start().await.unwrap();

    let engine = builder()
        .crawl_concurrency(2)
        .per_host_concurrency(1)
        .build()
        .unwrap();
    let mut monitor = portal(slow.url("/"), 1);
    monitor.crawl_pages_from_all_domains = true;
    let (events, summary) = drain(engine.crawl(&monitor).unwrap()).await;
    let order: Vec<String> = events.iter().map(|(p, _)| p.url.clone()).collect();
    assert_eq!(order.len(), 8, "{order:#?}");
    assert_eq!(summary.progress.failed, 0);
    let position = |url: String| {
        order
            .iter()
            .position(|u| *u == url)
            .unwrap_or_else(|| panic!("{url} missing from {order:#?}"))
    };
    let slow_positions: Vec<usize> = (1..=4)
        .map(|i| position(slow.url(&format!("/s{i}.html"))))
        .collect();
    let first_slow = *slow_positions.iter().min().unwrap();
    for i in 1..=3 {
        let f = position(fast.url(&format!("/f{i}.html")));
        // The fast host is never waiting on the slow one: its three pages are done while the
        // slow host's first page is still being served (so before its last one, too).
        assert!(
            f < first_slow,
            "fast page f{i} finished after a slow page: {order:#?}"
        );
    }
    // One at a time on the slow host: its pages finish in link order.
    assert!(slow_positions.windows(2).all(|w| w[0] < w[1]), "{order:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_host_does_not_stall_the_next_level_of_others() {
    // The slow host's depth-1 page takes 1.5 s; meanwhile the fast host's depth-2 page, whose
    // depth is already certain, is fetched. Its own links (depth 3) wait, because the slow
    // page might still link them at depth 2.
    let fast = FixtureServer::builder()
        .ip(Ipv4Addr::new(127, 0, 0, 2))
        .page("/f1.html", "<a href=/f2.html>f2</a>")
        .page("/f2.html", "<a href=/f3.html>f3</a>")
        .page("/f3.html", "<h1>f3</h1>")
        .start()
        .await
        .unwrap();
    let slow = FixtureServer::builder()
        .page(
            "/",
            format!(
                "<a href=/s1.html>s1</a><a href=\"{}\">f1</a>",
                fast.url("/f1.html")
            ),
        )
        .reply(
            "/s1.html",
            Reply::html("<h1>s1</h1>").delay(Duration::from_millis(1500)),
        )
        .start()
        .await
        .unwrap();
    let mut monitor = portal(slow.url("/"), 3);
    monitor.crawl_pages_from_all_domains = true;
    let (events, _) = drain(engine().crawl(&monitor).unwrap()).await;
    let order: Vec<String> = events.iter().map(|(p, _)| p.url.clone()).collect();
    let at = |url: String| order.iter().position(|u| *u == url).unwrap();
    assert!(
        at(fast.url("/f2.html")) < at(slow.url("/s1.html")),
        "{order:#?}"
    );
    let f3 = events
        .iter()
        .find(|(p, _)| p.url == fast.url("/f3.html"))
        .unwrap();
    assert_eq!(f3.0.depth, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_start_page_is_reported_even_with_invalid_pages_ignored() {
    let server = FixtureServer::builder()
        .reply("/", Reply::html("<a href=/a.html>a</a>").status(404))
        .start()
        .await
        .unwrap();
    let mut monitor = portal(server.url("/"), 2);
    monitor.ignore_invalid_pages = true;
    let outcome = check(&engine(), &monitor).await;
    assert_eq!(outcome.error(), Some("HTTP 404 Not Found"));
    assert_eq!(outcome.status, Some(404));
    assert_eq!(pages(&outcome).len(), 1);
    assert_eq!(server.hits("/a.html"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_page_redirecting_to_another_site_crawls_that_site() {
    let target = FixtureServer::builder()
        .ip(Ipv4Addr::new(127, 0, 0, 2))
        .page("/home.html", "<a href=/next.html>next</a>")
        .page("/next.html", "<h1>next</h1>")
        .start()
        .await
        .unwrap();
    let start = FixtureServer::builder()
        .reply("/", Reply::redirect(target.url("/home.html")))
        .start()
        .await
        .unwrap();
    let outcome = check(&engine(), &portal(start.url("/"), 2)).await;
    assert_eq!(
        crawled(&outcome),
        [start.url("/"), target.url("/next.html")]
    );
    assert_eq!(target.hits("/next.html"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_target_found_later_is_not_fetched_again() {
    let server = FixtureServer::builder()
        .page("/", "<a href=/go>go</a>")
        .reply("/go", Reply::redirect("/target.html"))
        .page("/target.html", "<a href=/deeper.html>deeper</a>")
        .page("/deeper.html", "<a href=/target.html>back</a>")
        .start()
        .await
        .unwrap();
    let outcome = check(&engine(), &portal(server.url("/"), 3)).await;
    assert_eq!(server.hits("/target.html"), 1);
    assert_eq!(
        crawled(&outcome),
        [
            server.url("/"),
            server.url("/deeper.html"),
            server.url("/go")
        ]
    );
}

/// A Portal crawl through a location's proxy (which resolves names itself and reaches
/// anything) keeps the policy on every link and every redirect hop: links and redirects to
/// the inside, by name, by address, or by a name only the proxy knows, each fail as a page of
/// their own and reach nothing. 127.0.0.2 stands in for a public host.
#[tokio::test]
async fn a_crawl_through_a_location_proxy_reaches_nothing_inside() {
    use wachet::testing::proxy::ForwardProxy;
    let inside = FixtureServer::builder()
        .page("/secret", "<p>secret</p>")
        .start()
        .await
        .unwrap();
    let port = inside.addr().port();
    let outside = FixtureServer::builder()
        .ip(Ipv4Addr::new(127, 0, 0, 2))
        .page(
            "/",
            format!(
                "<a href=\"http://localhost:{port}/secret\">name</a>\
                 <a href=\"http://127.0.0.1:{port}/secret\">address</a>\
                 <a href=\"http://intranet.test:{port}/secret\">proxy's own name</a>\
                 <a href=\"/go\">redirect</a><a href=\"/fine\">fine</a>"
            ),
        )
        .page("/fine", "<p>fine</p>")
        .start()
        .await
        .unwrap();
    outside.set(
        "/go",
        Reply::redirect(format!("http://localhost:{port}/secret?via=redirect")),
    );
    let proxy = ForwardProxy::builder()
        .alias("intranet.test", inside.addr())
        .start()
        .await
        .unwrap();
    let engine = Engine::builder()
        .allow_network("127.0.0.2/32".parse().unwrap())
        .proxy("us", proxy.url())
        .per_host_rps(0)
        .total_timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    let mut monitor = portal(outside.url("/"), 2);
    monitor.crawl_pages_from_all_domains = true;
    monitor.proxies = Some(vec![wachet::model::Proxy {
        location: Some("us".into()),
    }]);
    let outcome = check(&engine, &monitor).await;
    assert_eq!(
        page(&outcome, &outside.url("/fine")).data.raw.as_deref(),
        Some("fine")
    );
    for (url, expected) in [
        (
            format!("http://localhost:{port}/secret"),
            "refused to connect to localhost",
        ),
        (
            format!("http://127.0.0.1:{port}/secret"),
            "refused to connect to 127.0.0.1",
        ),
        (
            format!("http://intranet.test:{port}/secret"),
            "could not connect to intranet.test",
        ),
        (outside.url("/go"), "refused to connect to localhost"),
    ] {
        let failed = page(&outcome, &url);
        let error = failed.data.error.as_deref().unwrap_or_default();
        assert!(error.contains(expected), "{url}: {failed:?}");
    }
    assert_eq!(inside.requests().len(), 0, "{:?}", proxy.requests());
}
