//! Validation before any fetch: every bad input names its field (and position where there is
//! one), and nothing is fetched.

use wachet::model::{ClientJobType, HeaderPair, Proxy};
use wachet::{Engine, FieldError, Monitor};

fn errors(monitor: &Monitor) -> Vec<FieldError> {
    Engine::builder()
        .proxy("gb", "http://127.0.0.1:3128")
        .build()
        .unwrap()
        .validate(monitor)
        .unwrap_err()
        .errors
}

fn only(monitor: &Monitor) -> (String, String) {
    let errs = errors(monitor);
    assert_eq!(errs.len(), 1, "{errs:?}");
    (errs[0].field.clone(), errs[0].message.clone())
}

fn with(f: impl FnOnce(&mut Monitor)) -> Monitor {
    let mut m = Monitor::new("https://example.com/page");
    f(&mut m);
    m
}

#[test]
fn a_good_monitor_is_valid() {
    let engine = Engine::builder().build().unwrap();
    let m = with(|m| {
        m.x_path = Some("//p[@class='x']".into());
        m.regex = Some(r"(\d+)".into());
    });
    engine.validate(&m).unwrap();
}

#[test]
fn bad_urls_are_rejected_with_the_reason() {
    for (url, needle) in [
        ("https://example.com/a b", "contains a space at position 21"),
        (
            "javascript:alert(1)",
            "scheme \"javascript:\" is not allowed",
        ),
        ("file:///etc/passwd", "scheme \"file:\" is not allowed"),
        ("example.com", "is not a valid absolute URL"),
        ("http://", "is not a valid absolute URL"),
        ("", "is empty"),
    ] {
        let (field, message) = only(&Monitor::new(url));
        assert_eq!(field, "url");
        assert!(message.contains(needle), "{url}: {message}");
    }
    let (field, message) = only(&Monitor::default());
    assert_eq!((field.as_str(), message.as_str()), ("url", "is required"));
}

#[test]
fn regex_errors_name_the_position() {
    let (field, message) = only(&with(|m| m.regex = Some("price: (\\d+".into())));
    assert_eq!(field, "regex");
    assert_eq!(message, "unclosed group at position 7");
}

#[test]
fn crawling_depth_must_be_one_to_three() {
    for depth in [0, 4, -1] {
        let (field, message) = only(&with(|m| {
            m.job_type = ClientJobType::Portal;
            m.crawling_depth = Some(depth);
        }));
        assert_eq!(field, "crawlingDepth");
        assert_eq!(message, format!("must be 1, 2 or 3, not {depth}"));
    }
}

#[test]
fn bad_methods_and_headers_are_named() {
    let (field, message) = only(&with(|m| m.method = Some("GE T".into())));
    assert_eq!(
        (field.as_str(), message.as_str()),
        ("method", "\"GE T\" is not a valid HTTP method")
    );
    let errs = errors(&with(|m| {
        m.headers = Some(vec![
            HeaderPair::new("Good", "ok"),
            HeaderPair::new("Bad Name", "x"),
            HeaderPair::new("X-Split", "a\r\nInjected: yes"),
        ])
    }));
    let fields: Vec<_> = errs.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(fields, ["headers[1].key", "headers[2].value"]);
    assert_eq!(errs[0].message, "\"Bad Name\" is not a valid header name");
}

#[test]
fn headers_that_frame_the_request_are_refused() {
    // Each would contradict the real request: a second request smuggled behind a short
    // Content-Length, a chunked body that is not chunked, a connection upgraded or kept.
    for name in [
        "Content-Length",
        "transfer-encoding",
        "Connection",
        "Host",
        "Upgrade",
        "TE",
        "Trailer",
        "Keep-Alive",
        "Expect",
    ] {
        let (field, message) = only(&with(|m| {
            m.method = Some("POST".into());
            m.body = Some("a=1".into());
            m.headers = Some(vec![
                HeaderPair::new("Accept", "text/html"),
                HeaderPair::new(name, "5"),
            ]);
        }));
        assert_eq!(field, "headers[1].key", "{name}");
        assert!(message.contains("cannot be given"), "{name}: {message}");
        assert!(message.starts_with(&format!("\"{name}\"")), "{message}");
    }
}

#[test]
fn url_filter_regexes_are_validated() {
    let m = with(|m| {
        m.job_type = ClientJobType::Portal;
        m.url_filter = serde_json::from_str(
            r#"{"include": [{"filter": "/blog/", "type": "Contains"}], "exclude": [{"filter": "([a-z", "type": "Regex"}]}"#,
        )
        .unwrap();
    });
    let (field, message) = only(&m);
    assert_eq!(field, "urlFilter.exclude[0].filter");
    assert!(message.contains("position"), "{message}");
}

#[test]
fn proxies_must_name_a_configured_location() {
    let engine = Engine::builder()
        .proxy("GB", "http://127.0.0.1:3128")
        .build()
        .unwrap();
    let gb = with(|m| {
        m.proxies = Some(vec![Proxy {
            location: Some("gb".into()),
        }])
    });
    engine.validate(&gb).unwrap();
    let (field, message) = only(&with(|m| {
        m.proxies = Some(vec![Proxy {
            location: Some("us".into()),
        }])
    }));
    assert_eq!(field, "proxies[0].location");
    assert_eq!(message, "no proxy for location \"us\" (configured: gb)");
}

#[test]
fn every_problem_is_reported_at_once() {
    let errs = errors(&Monitor {
        url: Some("ftp://x".into()),
        regex: Some("(".into()),
        crawling_depth: Some(9),
        ..Monitor::default()
    });
    let fields: Vec<_> = errs.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(fields, ["url", "regex", "crawlingDepth"]);
}

fn filters(n: usize, pattern: &str) -> Option<wachet::model::UrlFilter> {
    let values: Vec<serde_json::Value> = (0..n)
        .map(|_| serde_json::json!({"filter": pattern, "type": "Regex"}))
        .collect();
    serde_json::from_value(serde_json::json!({ "include": values })).unwrap()
}

/// The largest `\w{n}` that compiles alone under the per-pattern cap.
fn just_under_the_cap() -> String {
    let (mut ok, mut too_big) = (1, 1000);
    while too_big - ok > 1 {
        let mid = (ok + too_big) / 2;
        match wachet::validate::compile_pattern(&format!(r"\w{{{mid}}}")) {
            Ok(_) => ok = mid,
            Err(_) => too_big = mid,
        }
    }
    format!(r"\w{{{ok}}}")
}

#[test]
fn too_many_url_filters_are_refused_before_compiling() {
    let m = with(|m| {
        m.job_type = ClientJobType::Portal;
        m.url_filter = filters(1000, r"\w{20}");
    });
    let started = std::time::Instant::now();
    let (field, message) = only(&m);
    assert_eq!(field, "urlFilter");
    assert!(
        message.contains("at most 100 filters") && message.contains("not 1000"),
        "{message}"
    );
    eprintln!("refused in {:?}", started.elapsed());
}

#[test]
fn counts_and_sizes_name_the_limit() {
    let headers = (0..51)
        .map(|i| HeaderPair {
            key: Some(format!("X-{i}")),
            value: Some("v".into()),
        })
        .collect();
    let (field, message) = only(&with(|m| m.headers = Some(headers)));
    assert_eq!(
        (field.as_str(), message.as_str()),
        ("headers", "at most 50 headers, not 51")
    );
    let big = vec![HeaderPair {
        key: Some("X-Big".into()),
        value: Some("v".repeat(40_000)),
    }];
    let (field, message) = only(&with(|m| m.headers = Some(big)));
    assert_eq!(field, "headers");
    assert!(message.contains("at most 32 KiB together"), "{message}");
    let (field, message) = only(&with(|m| m.regex = Some("a".repeat(5000))));
    assert_eq!(
        (field.as_str(), message.as_str()),
        ("regex", "must be at most 4096 bytes, not 5000")
    );
    let (field, message) = only(&with(|m| m.url_filter = filters(1, &"a".repeat(5000))));
    assert_eq!(field, "urlFilter.include[0].filter");
    assert!(message.contains("at most 4096 bytes"), "{message}");
    let (field, message) = only(&with(|m| m.url_filter = filters(20, &"a".repeat(4000))));
    assert_eq!(field, "urlFilter");
    assert!(message.contains("at most 64 KiB together"), "{message}");
}

#[test]
fn regexes_just_under_the_size_cap_are_bounded_together() {
    let pattern = just_under_the_cap();
    let engine = Engine::builder().build().unwrap();
    // One alone is a valid monitor regex.
    let started = std::time::Instant::now();
    engine
        .validate(&with(|m| m.regex = Some(pattern.clone())))
        .unwrap();
    eprintln!("{pattern} alone: {:?}", started.elapsed());
    // A hundred of them as URL filters exceed the budget of the filters together.
    let started = std::time::Instant::now();
    let (field, message) = only(&with(|m| {
        m.job_type = ClientJobType::Portal;
        m.regex = Some(pattern.clone());
        m.url_filter = filters(100, &pattern);
    }));
    eprintln!("100 x {pattern}: {:?}", started.elapsed());
    assert_eq!(field, "urlFilter");
    assert!(
        message.contains("too large once compiled together (limit 4194304 bytes)"),
        "{message}"
    );
    // ASCII classes are small: a hundred filters fit.
    engine
        .validate(&with(|m| {
            m.job_type = ClientJobType::Portal;
            m.url_filter = filters(100, r"(?-u:\w){20}");
        }))
        .unwrap();
}
