//! The real binary under hostile load: monitors of hostile pages refused cheaply, slow and
//! greedy clients cut off, while other users are served; no secret in its JSON logs.

use crate::*;
use serde_json::{Value, json};
use std::process::Stdio;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_logs_carry_no_secret() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = wachet()
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--log-format",
            "json",
            "--db",
        ])
        .arg(dir.path().join("wachet.db"))
        .env("RUST_LOG", "debug,chromiumoxide=off,hyper=off,sqlx=debug")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read as it comes: debug logs fill a pipe's buffer, and a service blocked writing to a
    // full pipe could not exit.
    let mut stderr = child.stderr.take().unwrap();
    let log = tokio::spawn(async move {
        use tokio::io::AsyncReadExt;
        let mut log = String::new();
        stderr.read_to_string(&mut log).await.unwrap();
        log
    });
    let server = listening(child).await;
    let admin = account(&server.printed);
    let token = server.login(&admin).await;
    // A check (refused: private address) and a failed login, both logged at some level.
    let body = json!({"url": "http://127.0.0.1:9/", "recurrenceInSeconds": 3600});
    server
        .call(
            reqwest::Method::PUT,
            "/thirdparty/v1/task",
            Some(&token),
            Some(body),
        )
        .await;
    let wrong = json!({"email": admin.email, "password": "wrong"});
    server
        .call(
            reqwest::Method::POST,
            "/thirdparty/v1/user/login",
            None,
            Some(wrong),
        )
        .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(server.terminate().await, Some(0));
    let log = log.await.unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert!(!lines.is_empty());
    for line in &lines {
        let parsed: Value =
            serde_json::from_str(line).unwrap_or_else(|_| panic!("not JSON: {line}"));
        assert!(
            parsed["level"].is_string() && parsed["fields"].is_object(),
            "{line}"
        );
    }
    assert!(
        lines.iter().any(|l| l.contains("\"message\":\"checked\"")),
        "the check is logged"
    );
    for secret in [&token, &admin.api_key, &admin.password] {
        assert!(!log.contains(secret.as_str()), "a secret in the log");
    }
}

/// The resident memory of a process, in bytes (Linux `/proc`).
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kb * 1024
}

/// Calls `GET /folder/list` as `token` every 100 ms until `stop`, and returns the slowest
/// answer. Every answer must be 200.
fn keep_listing(
    base: String,
    token: String,
    stop: tokio::sync::watch::Receiver<bool>,
) -> tokio::task::JoinHandle<(Duration, usize)> {
    tokio::spawn(async move {
        let client = reqwest::Client::builder().timeout(WAIT).build().unwrap();
        let (mut slowest, mut answered) = (Duration::ZERO, 0);
        while !*stop.borrow() {
            let started = std::time::Instant::now();
            let response = client
                .get(format!("{base}/thirdparty/v1/folder/list"))
                .header("authorization", format!("Bearer {token}"))
                .send()
                .await
                .expect("the other user's request is answered");
            assert_eq!(response.status(), 200);
            slowest = slowest.max(started.elapsed());
            answered += 1;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        (slowest, answered)
    })
}

/// Generous bound on an answer that takes milliseconds: only a blocked service breaks it.
const PROMPT: Duration = Duration::from_secs(3);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_monitors_are_refused_cheaply_while_others_are_served() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("wachet.db");
    let server = serve(&db, &["--checks-in-flight", "0"]).await;
    let attacker = server.login(&account(&server.printed)).await;
    let out = wachet()
        .args(["user", "add", "--email", "other@example.com", "--db"])
        .arg(&db)
        .output()
        .await
        .unwrap();
    assert!(out.status.success());
    let other = account(
        &String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect::<Vec<_>>(),
    );
    let other = server.login(&other).await;
    let pid = server.child.id().unwrap();
    let before = rss(pid);
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let lister = keep_listing(server.base.clone(), other, stopped);

    let portal = |filters: Vec<Value>| {
        json!({"name": "Hostile", "url": "https://example.com/", "jobType": "Portal",
               "recurrenceInSeconds": 0, "urlFilter": {"include": filters}})
    };
    let regexes = |n: usize, pattern: &str| -> Vec<Value> {
        (0..n)
            .map(|_| json!({"filter": pattern, "type": "Regex"}))
            .collect()
    };
    let put = |body: Value| {
        server.call(
            reqwest::Method::PUT,
            "/thirdparty/v1/task",
            Some(&attacker),
            Some(body),
        )
    };
    // The reproduction: 1,000 Unicode-class regexes, a 36 KB body.
    for _ in 0..5 {
        let started = std::time::Instant::now();
        let (status, reply) = put(portal(regexes(1000, r"\w{20}"))).await;
        assert_eq!(status, 400, "{}", reply["errors"]);
        let message = reply["errors"]["urlFilter"][0].as_str().unwrap();
        assert!(message.contains("at most 100 filters"), "{message}");
        assert!(started.elapsed() < PROMPT, "{:?}", started.elapsed());
    }
    // A hundred regexes, each just under the size cap of one: over the budget of all together.
    let (mut fits, mut too_big) = (1, 1000);
    while too_big - fits > 1 {
        let mid = (fits + too_big) / 2;
        match wachet::validate::compile_pattern(&format!(r"\w{{{mid}}}")) {
            Ok(_) => fits = mid,
            Err(_) => too_big = mid,
        }
    }
    let largest = format!(r"\w{{{fits}}}");
    for _ in 0..5 {
        let started = std::time::Instant::now();
        let (status, reply) = put(portal(regexes(100, &largest))).await;
        assert_eq!(status, 400, "{}", reply["errors"]);
        let message = reply["errors"]["urlFilter"][0].as_str().unwrap();
        assert!(
            message.contains("too large once compiled together"),
            "{message}"
        );
        assert!(started.elapsed() < PROMPT, "{:?}", started.elapsed());
    }
    // One of them alone is fine.
    let (status, reply) = put(portal(regexes(1, &largest))).await;
    assert_eq!(status, 200, "{}", reply["errors"]);
    // 1 MiB of alerts is over the body limit; just under it, over the count of alerts.
    let alerts = |n: usize| -> Value {
        json!({"name": "Alerts", "url": "https://example.com/", "recurrenceInSeconds": 0,
               "alerts": (0..n).map(|_| json!({"type": "Contains", "value": "x"})).collect::<Vec<_>>()})
    };
    let (status, reply) = put(alerts(40_000)).await;
    assert_eq!(status, 413, "{}", reply["errors"]);
    assert!(
        reply["detail"].as_str().unwrap().contains("1 MiB"),
        "{reply}"
    );
    let (status, reply) = put(alerts(30_000)).await;
    assert_eq!(status, 400, "{}", reply["errors"]);
    assert_eq!(reply["errors"]["alerts"][0], "at most 50 alerts", "{reply}");

    let after = rss(pid);
    let _ = stop.send(true);
    let (slowest, answered) = lister.await.unwrap();
    eprintln!(
        "rss {} MB -> {} MB; other user's slowest of {answered} answers: {slowest:?}",
        before >> 20,
        after >> 20
    );
    assert!(
        after < before + (200 << 20),
        "memory grew from {} MB to {} MB",
        before >> 20,
        after >> 20
    );
    assert!(answered > 0);
    assert!(slowest < PROMPT, "another user waited {slowest:?}");
    assert_eq!(server.terminate().await, Some(0));
}

/// Opens a connection from `from` to `to`.
async fn connect_from(from: &str, to: std::net::SocketAddr) -> tokio::net::TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket
        .bind(std::net::SocketAddr::new(from.parse().unwrap(), 0))
        .unwrap();
    tokio::time::timeout(WAIT, socket.connect(to))
        .await
        .expect("connects")
        .unwrap()
}

/// Sends `first` at once, then `trickle` one byte every `every`, until the server closes the
/// connection; returns how long it stayed open, and what the server answered meanwhile.
async fn trickle(
    mut stream: tokio::net::TcpStream,
    first: &[u8],
    trickle: &[u8],
    every: Duration,
) -> (Duration, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let opened = std::time::Instant::now();
    let (mut read, mut write) = stream.split();
    let mut answer = Vec::new();
    let reading = async {
        let mut buf = [0u8; 4096];
        while let Ok(n @ 1..) = read.read(&mut buf).await {
            answer.extend_from_slice(&buf[..n]);
        }
    };
    let writing = async {
        if write.write_all(first).await.is_err() {
            return;
        }
        for byte in trickle.iter().cycle() {
            tokio::time::sleep(every).await;
            if write.write_all(&[*byte]).await.is_err() {
                return;
            }
        }
        // Nothing to trickle: wait for the server to close.
        std::future::pending::<()>().await;
    };
    tokio::select! {
        () = reading => {}
        () = writing => {}
    }
    (
        opened.elapsed(),
        String::from_utf8_lossy(&answer).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_and_greedy_clients_are_cut_off_while_others_are_served() {
    const HEAD: u64 = 2;
    const BODY: u64 = 2;
    const IDLE: u64 = 3;
    const PER_CLIENT: usize = 100;
    // What the watchdog's tick and a loaded machine may add to a limit.
    const MARGIN: Duration = Duration::from_secs(5);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("wachet.db");
    let server = serve(
        &db,
        &[
            "--checks-in-flight",
            "0",
            "--header-read-timeout",
            &HEAD.to_string(),
            "--body-read-timeout",
            &BODY.to_string(),
            "--idle-timeout",
            &IDLE.to_string(),
            "--max-connections-per-client",
            &PER_CLIENT.to_string(),
        ],
    )
    .await;
    let token = server.login(&account(&server.printed)).await;
    let addr: std::net::SocketAddr = server.base.trim_start_matches("http://").parse().unwrap();
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let lister = keep_listing(server.base.clone(), token, stopped);

    // 1,000 connections from 127.0.0.2, each trickling a request head a byte a second.
    let heads: Vec<_> = (0..1000)
        .map(|_| {
            tokio::spawn(async move {
                let stream = connect_from("127.0.0.2", addr).await;
                trickle(
                    stream,
                    b"G",
                    b"ET /thirdparty/v1/folder/list HTTP/1.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaa",
                    Duration::from_secs(1),
                )
                .await
            })
        })
        .collect();
    // A connection from 127.0.0.3 that asks once, then keeps the connection idle.
    let idle = tokio::spawn(async move {
        let stream = connect_from("127.0.0.3", addr).await;
        trickle(
            stream,
            b"GET /thirdparty/v1/openapi.json HTTP/1.1\r\nHost: localhost\r\n\r\n",
            b"",
            Duration::from_secs(3600),
        )
        .await
    });
    // A body trickled a byte at a time, from 127.0.0.4.
    let body = tokio::spawn(async move {
        let stream = connect_from("127.0.0.4", addr).await;
        trickle(
            stream,
            b"POST /thirdparty/v1/user/apilogin HTTP/1.1\r\nHost: localhost\r\n\
              Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{",
            b" ",
            Duration::from_millis(300),
        )
        .await
    });

    let bound = Duration::from_secs(HEAD) + MARGIN;
    let mut admitted = 0;
    for head in heads {
        let (open, answer) = tokio::time::timeout(bound + WAIT, head)
            .await
            .expect("a trickling head is cut off")
            .unwrap();
        assert!(open < bound, "a trickling head stayed open {open:?}");
        assert!(answer.is_empty(), "{answer}");
        // Refused connections close at once; admitted ones when the head timeout strikes.
        if open >= Duration::from_secs(HEAD) {
            admitted += 1;
        }
    }
    assert!(
        (1..=PER_CLIENT).contains(&admitted),
        "{admitted} connections of one client were held open"
    );
    let (open, answer) = tokio::time::timeout(WAIT, idle).await.unwrap().unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(
        open >= Duration::from_secs(IDLE) && open < Duration::from_secs(IDLE) + MARGIN,
        "an idle connection stayed open {open:?}"
    );
    let (open, answer) = tokio::time::timeout(WAIT, body).await.unwrap().unwrap();
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("did not arrive within 2 s"), "{answer}");
    assert!(
        open < Duration::from_secs(BODY) + MARGIN,
        "a trickled body held its connection {open:?}"
    );

    let _ = stop.send(true);
    let (slowest, answered) = lister.await.unwrap();
    eprintln!(
        "admitted {admitted}; the normal client's slowest of {answered} answers: {slowest:?}"
    );
    assert!(answered > 0);
    assert!(slowest < PROMPT, "the normal client waited {slowest:?}");
    assert_eq!(server.terminate().await, Some(0));
}
