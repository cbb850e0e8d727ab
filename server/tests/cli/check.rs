//! `wachet check` and `wachet crawl` as a user runs them: the real binary against a real server
//! on loopback.

use super::{stderr, stdout, wachet};
use std::process::Command;
use wachet::testing::tls::TlsFront;
use wachet::testing::{FixtureServer, Reply};

async fn shop() -> FixtureServer {
    FixtureServer::builder()
        .page(
            "/tea",
            "<h1>Tea</h1><div id=ad>Buy now</div><p class=price>Price: 3.50 EUR</p>",
        )
        .start()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_prints_the_value() {
    let server = shop().await;
    let url = server.url("/tea");
    let out = wachet(&["check", &url]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "Tea\nBuy now\nPrice: 3.50 EUR\n");

    let out = wachet(&[
        "check",
        &url,
        "--exclude-xpath",
        "//div[@id='ad']",
        "--regex",
        r"(\d+\.\d+)",
    ]);
    assert_eq!(stdout(&out), "3.50\n");
}

/// An https page whose certificate an internal authority issued: refused with a certificate
/// error until `--root-certificate` names the authority's PEM file; a file that cannot be read
/// is a usage error naming it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn root_certificate_trusts_an_internal_authority() {
    let server = shop().await;
    let front = TlsFront::start(server.addr()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, front.ca_pem()).unwrap();
    let ca = ca.to_str().unwrap();
    let url = front.url("/tea");

    let out = wachet(&["check", &url, "--xpath", "//p"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("certificate"), "{}", stderr(&out));
    assert_eq!(
        server.hits("/tea"),
        0,
        "the page was fetched over a refused connection"
    );

    let out = wachet(&["check", &url, "--xpath", "//p", "--root-certificate", ca]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "Price: 3.50 EUR\n");

    let missing = dir.path().join("missing.pem");
    let missing = missing.to_str().unwrap();
    let out = wachet(&["check", &url, "--root-certificate", missing]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!("--root-certificate {missing}")),
        "{}",
        stderr(&out)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_sends_method_headers_and_body() {
    let server = shop().await;
    let url = server.url("/tea");
    let out = wachet(&[
        "check", &url, "--method", "PUT", "--header", "X-One: 1", "--header", "X-Two:2", "--body",
        "payload", "--xpath", "//h1",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let sent = &server.requests()[0];
    assert_eq!(sent.method, "PUT");
    assert_eq!(sent.header("x-one"), Some("1"));
    assert_eq!(sent.header("x-two"), Some("2"));
    assert_eq!(&sent.body[..], b"payload");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_json_prints_one_client_data_object() {
    let server = shop().await;
    let out = wachet(&[
        "check",
        &server.url("/tea"),
        "--xpath",
        "count(//p)",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let data: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(data["raw"], "1");
    assert_eq!(data["error"], serde_json::Value::Null);
    assert!(
        data["lastCheckTimestamp"]
            .as_str()
            .unwrap()
            .starts_with("20")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_check_exits_1_with_the_error() {
    let server = shop().await;
    server.set("/gone", Reply::new(404));
    let out = wachet(&["check", &server.url("/gone")]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr(&out).trim(), "error: HTTP 404 Not Found");

    let out = wachet(&["check", &server.url("/tea"), "--xpath", "//table", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let data: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(data["error"], "xPath matched nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crawl_whose_start_page_fails_exits_1_and_one_with_a_failed_page_0() {
    let server = FixtureServer::builder()
        .page("/", "<a href=/gone>gone</a> <a href=/here>here</a>")
        .page("/here", "<p>here</p>")
        .start()
        .await
        .unwrap();
    server.set("/gone", Reply::new(404));
    let out = wachet(&["crawl", &server.url("/"), "--depth", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("error: HTTP 404 Not Found"));

    server.set("/", Reply::new(500));
    let out = wachet(&["crawl", &server.url("/"), "--depth", "1"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("error: HTTP 500 Internal Server Error"),
        "{}",
        stdout(&out)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_library_warning_about_the_page_never_reaches_the_user() {
    // Text directly inside a <table> makes html5ever warn "foster parenting not implemented".
    let server = FixtureServer::builder()
        .page(
            "/t",
            "<table>loose<tr><td>cell</td></tr></table><p>value</p>",
        )
        .start()
        .await
        .unwrap();
    let out = wachet(&["check", &server.url("/t"), "--xpath", "//p"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "value\n");
    assert_eq!(stderr(&out), "", "nothing but the value is printed");

    // Asked for explicitly, the warning is there, and without colour codes off a terminal.
    let out = Command::new(env!("CARGO_BIN_EXE_wachet"))
        .args(["check", &server.url("/t"), "--xpath", "//p"])
        .env("RUST_LOG", "html5ever=warn")
        .output()
        .expect("run wachet");
    assert!(
        stderr(&out).contains("foster parenting"),
        "{}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains('\u{1b}'), "{:?}", stderr(&out));
}

#[test]
fn invalid_input_exits_2_naming_the_field() {
    let out = wachet(&["check", "javascript:alert(1)"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("error: url: scheme \"javascript:\" is not allowed"),
        "{}",
        stderr(&out)
    );

    let out = wachet(&["check", "http://127.0.0.1:9/", "--xpath", "//p["]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).starts_with("error: xPath: "),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("position"), "{}", stderr(&out));

    let out = wachet(&["check", "http://127.0.0.1:9/", "--header", "no colon"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("must look like 'Name: value'"),
        "{}",
        stderr(&out)
    );

    let out = wachet(&["check", "http://127.0.0.1:9/", "--timeout", "-1"]);
    assert_eq!(out.status.code(), Some(2));
}

/// `--dynamic` renders with Chromium, `--scroll` scrolls, and `crawl --dynamic` follows links
/// that only script inserts; the output is the static path's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamic_and_scroll_render_with_chromium() {
    if !wachet::testing::chromium_or_skip() {
        return;
    }
    let list = r#"<!doctype html><html><body style="height:1500px"><ul id=list></ul><script>
let n = 0;
function add(k) { for (let i = 0; i < k; i++) { const li = document.createElement('li'); li.textContent = 'item ' + (++n); document.getElementById('list').appendChild(li); } }
setTimeout(() => add(2), 50);
window.addEventListener('scroll', () => { if (n < 6) setTimeout(() => { add(2); document.body.style.height = (1500 + n * 200) + 'px'; }, 50); });
</script></body></html>"#;
    let server = FixtureServer::builder()
        .page("/list", list)
        .page(
            "/start",
            "<p>start</p><script>setTimeout(() => { const a = document.createElement('a'); \
             a.href = '/next'; a.textContent = 'next'; document.body.appendChild(a); }, 50)</script>",
        )
        .page("/next", "<p>next page</p>")
        .start()
        .await
        .unwrap();
    let list_url = server.url("/list");

    // The static path sees no items.
    let out = wachet(&["check", &list_url]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "\n");
    let out = wachet(&["check", &list_url, "--dynamic"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "item 1\nitem 2\n");
    let out = wachet(&["check", &list_url, "--dynamic", "--scroll"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "item 1\nitem 2\nitem 3\nitem 4\nitem 5\nitem 6\n"
    );

    let start = server.url("/start");
    let next = server.url("/next");
    let out = wachet(&["crawl", &start, "--depth", "1", "--dynamic"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        format!("0 200 {start}\tstart\n1 200 {next}\tnext page\n")
    );
}
