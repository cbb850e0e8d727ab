//! Notification delivery: a real webhook receiver on loopback gets each notification signed,
//! failures are retried until a 2xx, and the last state of each delivery is stored.

use super::{Api, User, id};
use axum::http::HeaderMap;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use wachet::testing::{FixtureServer, Reply};
use wachet_server::store::Store;

/// A webhook receiver that answers 500 to the first `fail` requests, then 200.
#[derive(Clone, Default)]
struct Receiver {
    seen: Arc<Mutex<Vec<(HeaderMap, String)>>>,
    fail: Arc<Mutex<usize>>,
}

impl Receiver {
    async fn start(fail: usize) -> (Receiver, String) {
        let receiver = Receiver::default();
        *receiver.fail.lock().unwrap() = fail;
        let state = receiver.clone();
        let app = axum::Router::new().route(
            "/hook",
            axum::routing::post(move |headers: HeaderMap, body: String| {
                let state = state.clone();
                async move {
                    state.seen.lock().unwrap().push((headers, body));
                    let mut fail = state.fail.lock().unwrap();
                    if *fail > 0 {
                        *fail -= 1;
                        axum::http::StatusCode::INTERNAL_SERVER_ERROR
                    } else {
                        axum::http::StatusCode::OK
                    }
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        (receiver, url)
    }

    async fn wait_for(&self, n: usize) -> Vec<(HeaderMap, String)> {
        for _ in 0..200 {
            let seen = self.seen.lock().unwrap().clone();
            if seen.len() >= n {
                return seen;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("fewer than {n} deliveries after 20 s");
    }
}

/// Delivery through the SMTP server on loopback `port`, plain (as a local relay is).
fn smtp_at(port: u16) -> wachet_server::notify::deliver::DeliverySettings {
    use wachet_server::notify::email::{SmtpSettings, SmtpTls};
    wachet_server::notify::deliver::DeliverySettings {
        smtp: Some(SmtpSettings {
            host: "127.0.0.1".into(),
            port,
            tls: SmtpTls::None,
            credentials: None,
            from: "wachet@example.com".into(),
        }),
        ..Default::default()
    }
}

/// The deliveries of `note` (target, state, attempts, error) once `settled` holds, waited for
/// 15 s at most.
async fn deliveries_when(
    api: &Api,
    note: &str,
    settled: impl Fn(&[(String, String, u32, Option<String>)]) -> bool,
) -> Vec<(String, String, u32, Option<String>)> {
    let mut states = Vec::new();
    for _ in 0..150 {
        states = api.store.deliveries_of(note).await.unwrap();
        if settled(&states) {
            return states;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("deliveries of {note} not settled after 15 s: {states:?}");
}

/// A monitor of a page whose price changes once, with a NotEq alert.
async fn changing_monitor(
    api: &Api,
    user: &User,
    site: &FixtureServer,
    endpoints: Value,
) -> String {
    let body = json!({"name": "Tea", "url": site.url("/tea"), "recurrenceInSeconds": 1,
                      "alerts": [{"type": "NotEq"}], "notificationEndpoints": endpoints});
    let task = id(&api.task(user, body).await);
    let path = format!("/thirdparty/v1/data/list/{task}");
    for _ in 0..100 {
        if !api.get(user, &path).await.ok()["data"]
            .as_array()
            .unwrap()
            .is_empty()
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    site.set("/tea", Reply::html("<p>3.90 EUR</p>"));
    task
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_gets_each_notification_signed_with_the_users_secret() {
    let site = FixtureServer::builder()
        .page("/tea", "<p>3.50 EUR</p>")
        .start()
        .await
        .unwrap();
    let (receiver, hook) = Receiver::start(0).await;
    let api = Api::start_checking().await;
    let user = api.user("ann@example.com").await;
    // The user's own endpoints serve monitors that have none.
    let settings = api
        .put(
            &user,
            "/thirdparty/v1/user/notificationEndpoints",
            json!({"notificationEndpoints": [{"type": "Webhook", "value": hook}]}),
        )
        .await
        .ok()
        .clone();
    let secret = settings["webhookSecret"].as_str().unwrap().to_string();
    let task = changing_monitor(&api, &user, &site, json!([])).await;

    let seen = receiver.wait_for(1).await;
    let (headers, body) = &seen[0];
    let payload: Value = serde_json::from_str(body).unwrap();
    assert_eq!(payload["type"], "NotEq");
    assert_eq!(payload["taskId"], task.as_str());
    assert_eq!(payload["taskName"], "Tea");
    assert_eq!(payload["current"], "3.90 EUR");
    assert_eq!(payload["comparand"], "3.50 EUR");
    assert_eq!(payload["alertDefinition"]["type"], "NotEq");
    assert!(
        payload["alertUrl"]
            .as_str()
            .unwrap()
            .ends_with(payload["id"].as_str().unwrap())
    );
    assert_eq!(headers["content-type"], "application/json");
    assert!(!headers["x-wachet-delivery"].to_str().unwrap().is_empty());
    // The signature is the HMAC-SHA256 of the body, keyed with the secret as the API shows it.
    use hmac::Mac;
    let mut mac = <hmac::Hmac<sha2::Sha256> as Mac>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(body.as_bytes());
    let expected: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(
        headers["x-wachet-signature"].to_str().unwrap(),
        format!("sha256={expected}")
    );

    let note = payload["id"].as_str().unwrap();
    let states = deliveries_when(&api, note, |s| {
        s.iter().all(|(_, state, _, _)| state == "delivered")
    })
    .await;
    assert_eq!(
        states,
        vec![(hook.clone(), "delivered".to_string(), 1, None)]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_webhook_is_retried_until_it_takes_the_delivery() {
    let site = FixtureServer::builder()
        .page("/tea", "<p>3.50 EUR</p>")
        .start()
        .await
        .unwrap();
    let (receiver, hook) = Receiver::start(2).await;
    let api = Api::start_checking().await;
    let user = api.user("bob@example.com").await;
    changing_monitor(
        &api,
        &user,
        &site,
        json!([{"type": "Webhook", "value": hook}]),
    )
    .await;
    let seen = receiver.wait_for(3).await;
    let ids: Vec<&str> = seen
        .iter()
        .map(|(h, _)| h["x-wachet-delivery"].to_str().unwrap())
        .collect();
    assert!(
        ids.iter().all(|i| *i == ids[0]),
        "one delivery, tried three times: {ids:?}"
    );
    let payload: Value = serde_json::from_str(&seen[0].1).unwrap();
    let note = payload["id"].as_str().unwrap();
    let states = deliveries_when(&api, note, |s| {
        s.first()
            .is_some_and(|(_, state, _, _)| state == "delivered")
    })
    .await;
    let (_, state, attempts, error) = &states[0];
    assert_eq!((state.as_str(), *attempts), ("delivered", 3));
    assert_eq!(*error, None, "delivered at last: no error left");
    // Nothing more arrives once it is delivered.
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(receiver.seen.lock().unwrap().len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_email_endpoint_gets_the_notification_through_a_real_smtp_server() {
    use tokio::io::{AsyncBufReadExt, BufReader};
    let have_aiosmtpd = std::process::Command::new("python3")
        .args(["-c", "import aiosmtpd"])
        .status()
        .is_ok_and(|s| s.success());
    if !have_aiosmtpd {
        assert!(
            std::env::var_os("CI").is_none(),
            "aiosmtpd is missing but CI is set: .ci/run must install it"
        );
        eprintln!("SKIPPED: no aiosmtpd (pip install aiosmtpd)");
        return;
    }
    // aiosmtpd, a real SMTP server, on loopback; it prints every message it receives.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut smtp = tokio::process::Command::new("python3")
        .args([
            "-u",
            "-m",
            "aiosmtpd",
            "-n",
            "-l",
            &format!("127.0.0.1:{port}"),
        ])
        .args(["-c", "aiosmtpd.handlers.Debugging", "stdout"])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let site = FixtureServer::builder()
        .page("/tea", "<p>3.50 EUR</p>")
        .start()
        .await
        .unwrap();
    let api = Api::start_checking_with(smtp_at(port)).await;
    let user = api.user("cy@example.com").await;
    changing_monitor(
        &api,
        &user,
        &site,
        json!([{"type": "Email", "value": "cy@example.com"}]),
    )
    .await;

    let mut lines = BufReader::new(smtp.stdout.take().unwrap()).lines();
    let message = tokio::time::timeout(Duration::from_secs(30), async {
        let mut message = String::new();
        while let Some(line) = lines.next_line().await.unwrap() {
            if line.contains("END MESSAGE") {
                return message;
            }
            message.push_str(&line);
            message.push('\n');
        }
        panic!("aiosmtpd ended: {message}");
    })
    .await
    .expect("an e-mail within 30 s");
    assert!(
        message.contains("Subject: Tea: content changed"),
        "{message}"
    );
    assert!(message.contains("From: wachet@example.com"), "{message}");
    assert!(message.contains("To: cy@example.com"), "{message}");
    assert!(
        message.contains("text/plain") && message.contains("text/html"),
        "{message}"
    );
    assert!(message.contains("3.90 EUR"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_smtp_server_that_is_down_leaves_the_delivery_pending_with_its_error() {
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let site = FixtureServer::builder()
        .page("/tea", "<p>3.50 EUR</p>")
        .start()
        .await
        .unwrap();
    let api = Api::start_checking_with(smtp_at(port)).await;
    let user = api.user("dee@example.com").await;
    let task = changing_monitor(
        &api,
        &user,
        &site,
        json!([{"type": "Email", "value": "dee@example.com"}]),
    )
    .await;
    let path = format!("/thirdparty/v1/notification/list?taskId={task}");
    let mut note = None;
    for _ in 0..150 {
        let notes = api.get(&user, &path).await.ok()["data"].clone();
        note = notes[0]["id"].as_str().map(str::to_string);
        if note.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let note = note.expect("a notification within 15 s");
    let states = deliveries_when(&api, &note, |s| {
        s.first().is_some_and(|(_, _, attempts, _)| *attempts >= 1)
    })
    .await;
    let (target, state, attempts, error) = &states[0];
    assert_eq!(
        (target.as_str(), state.as_str(), *attempts),
        ("dee@example.com", "pending", 1)
    );
    assert!(error.as_deref().unwrap_or("").contains("SMTP"), "{error:?}");
}
