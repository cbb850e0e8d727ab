//! `wachet check` as a user runs it: the real binary against a real server on loopback.

use std::process::{Command, Output};
use wachet::testing::{FixtureServer, Reply};

fn wachet(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wachet"))
        .args(args)
        .output()
        .expect("run wachet")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

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
