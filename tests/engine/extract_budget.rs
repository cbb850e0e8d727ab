//! Extraction under a time budget: two hostile pages (one element with 400,000
//! attributes; a quadratic XPath over a million paragraphs) end fast, the second with the budget
//! error, through the library and through a real check against a loopback server; a normal
//! page is unaffected. Bounds are generous (these are debug builds on a shared machine): they
//! catch the minutes the hostile cases took before, never a speed regression.

use std::fmt::Write as _;
use std::time::{Duration, Instant};
use wachet::extract::parse::{MAX_ATTRIBUTES, parse_document};
use wachet::extract::xpath::XPath;
use wachet::extract::{Deadline, ExtractError, Extractor};
use wachet::testing::FixtureServer;
use wachet::{Checker, Engine, Monitor};

fn with_xpath(expr: &str) -> Extractor {
    Extractor::new(Some(XPath::compile(expr).unwrap()), None, None)
}

/// One `<div>` with `n` distinct attributes: 400,000 make a 4.7 MB page.
fn many_attributes(n: usize) -> String {
    let mut page = String::with_capacity(n * 12 + 64);
    page.push_str("<!DOCTYPE html><body><div id=d");
    for i in 0..n {
        let _ = write!(page, " a{i}=\"1\"");
    }
    page.push_str(">text</div><p>after</p>");
    page
}

/// A million paragraphs.
fn million_paragraphs() -> String {
    "<p>x".repeat(1_000_000)
}

const QUADRATIC: &str = "count(//p[count(preceding::p) > 999999])";

#[test]
fn an_element_with_400000_attributes_keeps_the_first_thousand_and_parses_fast() {
    let page = many_attributes(400_000);
    assert!(page.len() > 4_500_000);
    let started = Instant::now();
    let value = with_xpath("count(//div/@*)")
        .extract_within(&page, Deadline::after(Duration::from_secs(120)))
        .unwrap();
    let took = started.elapsed();
    assert_eq!(value, MAX_ATTRIBUTES.to_string());
    assert!(took < Duration::from_secs(60), "took {took:?}");
    // The attributes kept are the first ones written, and the rest of the page is intact.
    let value =
        with_xpath("concat(//div/@id, ' ', //div/@a998, ' ', count(//div/@a999), ' ', //p)")
            .extract(&page)
            .unwrap();
    assert_eq!(value, "d 1 0 after");
}

#[test]
fn a_quadratic_xpath_over_a_million_paragraphs_ends_with_the_budget_error() {
    let page = million_paragraphs();
    let mut doc = parse_document(&page).unwrap();
    let started = Instant::now();
    let err = with_xpath(QUADRATIC)
        .extract_from_within(&mut doc, Deadline::after(Duration::from_secs(2)))
        .unwrap_err();
    let took = started.elapsed();
    assert_eq!(
        err,
        ExtractError::TimedOut {
            limit: Duration::from_secs(2)
        }
    );
    assert_eq!(err.to_string(), "extraction took longer than 2 s");
    assert!(took < Duration::from_secs(20), "took {took:?}");
}

#[test]
fn exclusion_is_under_the_budget_too() {
    let page = million_paragraphs();
    let exclude = XPath::compile("//p[count(preceding::p) > 999999]").unwrap();
    let extractor = Extractor::new(None, Some(exclude), None);
    let err = extractor
        .extract_within(&page, Deadline::after(Duration::from_secs(3)))
        .unwrap_err();
    assert_eq!(err.to_string(), "extraction took longer than 3 s");
}

#[test]
fn a_page_too_big_to_parse_in_time_fails_in_the_parser() {
    let page = million_paragraphs();
    let started = Instant::now();
    let err = with_xpath("count(//p)")
        .extract_within(&page, Deadline::after(Duration::from_millis(1)))
        .unwrap_err();
    assert_eq!(
        err,
        ExtractError::TimedOut {
            limit: Duration::from_millis(1)
        }
    );
    assert_eq!(err.to_string(), "extraction took longer than 0 s");
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn a_normal_page_is_unaffected_by_the_budget() {
    let page = "<html><head><title>T</title></head><body><h1>Prices</h1>\
                <ul><li>one 1</li><li>two 2</li></ul><p class=x>tail</p></body></html>";
    for expr in [
        "//li",
        "sum(//li)",
        "//p/@class",
        "count(//*)",
        "//h1 | //p",
    ] {
        let extractor = with_xpath(expr);
        let plain = extractor.extract(page);
        let within = extractor.extract_within(page, Deadline::after(Duration::from_secs(30)));
        assert_eq!(plain, within, "{expr}");
        // Work too small to read the clock never fails for time, even past the deadline.
        let late = extractor.extract_within(page, Deadline::at(Instant::now()));
        assert_eq!(plain, late, "{expr}");
    }
    assert_eq!(with_xpath("//li").extract(page).unwrap(), "one 1\ntwo 2");
}

fn engine(timeout: Duration) -> Engine {
    Engine::builder()
        .allow_private_networks(true)
        .total_timeout(timeout)
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_check_of_the_quadratic_xpath_fails_within_its_timeout() {
    let server = FixtureServer::builder()
        .page("/", million_paragraphs())
        .start()
        .await
        .unwrap();
    let mut monitor = Monitor::new(server.url("/"));
    monitor.x_path = Some(QUADRATIC.into());
    let started = Instant::now();
    let outcome = engine(Duration::from_secs(5))
        .check(&monitor)
        .await
        .unwrap();
    let took = started.elapsed();
    let error = outcome.data.error.clone().unwrap_or_default();
    assert!(
        error.starts_with("extraction took longer than "),
        "{error:?} {:?}",
        outcome.data
    );
    assert!(took < Duration::from_secs(30), "took {took:?}");
}

#[tokio::test]
async fn a_check_of_the_attribute_page_succeeds() {
    let server = FixtureServer::builder()
        .page("/", many_attributes(400_000))
        .start()
        .await
        .unwrap();
    let mut monitor = Monitor::new(server.url("/"));
    monitor.x_path = Some("//p".into());
    let started = Instant::now();
    let outcome = engine(Duration::from_secs(60))
        .check(&monitor)
        .await
        .unwrap();
    assert_eq!(outcome.data.error, None);
    assert_eq!(outcome.data.raw.as_deref(), Some("after"));
    assert!(started.elapsed() < Duration::from_secs(60));
}
