//! Notification delivery: a real webhook receiver on loopback gets each notification signed,
//! failures are retried until a 2xx, and the last state of each delivery is stored.

use crate::{Api, Setup, User, id};
use axum::http::HeaderMap;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use wachet::testing::{FixtureServer, Reply};

/// A webhook receiver that answers 500 to the first `fail` requests, then 200.
#[derive(Clone, Default)]
pub(crate) struct Receiver {
    seen: Arc<Mutex<Vec<(HeaderMap, String)>>>,
    fail: Arc<Mutex<usize>>,
}

impl Receiver {
    pub(crate) async fn start(fail: usize) -> (Receiver, String) {
        Receiver::start_on("127.0.0.1", fail).await
    }

    /// A receiver listening on the loopback address `ip`.
    async fn start_on(ip: &str, fail: usize) -> (Receiver, String) {
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
        let listener = tokio::net::TcpListener::bind((ip, 0)).await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        (receiver, url)
    }

    pub(crate) fn count(&self) -> usize {
        self.seen.lock().unwrap().len()
    }

    pub(crate) async fn wait_for(&self, n: usize) -> Vec<(HeaderMap, String)> {
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
pub(crate) fn smtp_at(port: u16) -> wachet_server::notify::deliver::DeliverySettings {
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

/// The deliveries of `note`, by target: (target, state, attempts, last error).
async fn deliveries_of(api: &Api, note: &str) -> Vec<(String, String, u32, Option<String>)> {
    api.store
        .delivery_records(note)
        .await
        .unwrap()
        .into_iter()
        .map(|d| (d.target, d.state, d.attempts, d.last_error))
        .collect()
}

/// The deliveries of `note` (target, state, attempts, error) once `settled` holds, waited for
/// 15 s at most.
pub(super) async fn deliveries_when(
    api: &Api,
    note: &str,
    settled: impl Fn(&[(String, String, u32, Option<String>)]) -> bool,
) -> Vec<(String, String, u32, Option<String>)> {
    let mut states = Vec::new();
    for _ in 0..150 {
        states = deliveries_of(api, note).await;
        if settled(&states) {
            return states;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("deliveries of {note} not settled after 15 s: {states:?}");
}

/// The id of the first notification of `task`, waited for 15 s at most.
pub(super) async fn first_notification(api: &Api, user: &User, task: &str) -> String {
    let path = format!("/thirdparty/v1/notification/list?taskId={task}");
    for _ in 0..150 {
        let notes = api.get(user, &path).await.ok()["data"].clone();
        if let Some(note) = notes[0]["id"].as_str() {
            return note.to_string();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no notification of {task} within 15 s");
}

/// A monitor of a page whose price changes once, with a NotEq alert.
pub(super) async fn changing_monitor(
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

both!(
    a_webhook_gets_each_notification_signed_with_the_users_secret,
    multi_thread
);
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
    let first = settings["webhookSecret"].as_str().unwrap().to_string();
    // Rotated: the new secret signs from now on.
    let reply = api
        .send(
            reqwest::Method::POST,
            "/thirdparty/v1/user/webhookSecret",
            Some(&user.token),
            None,
        )
        .await;
    let secret = reply.ok()["webhookSecret"].as_str().unwrap().to_string();
    assert_ne!(secret, first);
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

both!(
    a_failing_webhook_is_retried_until_it_takes_the_delivery,
    multi_thread
);
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
    // The API tells the same (extension), to the owner only.
    let path = format!("/thirdparty/v1/notification/{note}/deliveries");
    let shown = api.get(&user, &path).await.ok().clone();
    assert_eq!(
        shown,
        json!([{"id": ids[0], "target": hook, "state": "delivered", "attempts": 3,
                "lastError": null}])
    );
    let other = api.user("eve@example.com").await;
    let foreign = api.get(&other, &path).await;
    let unknown = api
        .get(&other, "/thirdparty/v1/notification/no-such-id/deliveries")
        .await;
    assert_eq!((foreign.status, &foreign.body), (404, &unknown.body));
    // Nothing more arrives once it is delivered.
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(receiver.seen.lock().unwrap().len(), 3);
}

both!(
    an_email_endpoint_gets_the_notification_through_a_real_smtp_server,
    multi_thread
);
async fn an_email_endpoint_gets_the_notification_through_a_real_smtp_server() {
    // aiosmtpd, a real SMTP server, on loopback; it prints every message it receives.
    let Some((_smtp, port, mut lines)) = debugging_smtp().await else {
        return;
    };
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

    let message = next_message(&mut lines).await;
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
    // Both parts show the change: marked in the plain text, in `ins` and `del` in the HTML.
    let decoded = super::explain::decoded(&message);
    assert!(decoded.contains("[-3.50-]{+3.90+} EUR"), "{decoded}");
    assert!(decoded.contains(">3.90</ins> EUR"), "{decoded}");
}

both!(
    an_smtp_server_that_is_down_leaves_the_delivery_pending_with_its_error,
    multi_thread
);
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
    let note = first_notification(&api, &user, &task).await;
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

/// Delivery settings for the bad-webhook tests: quick retries, `tries` in all, and a try that
/// takes more than a second counts as failed.
pub(crate) fn quick(tries: u32) -> wachet_server::notify::deliver::DeliverySettings {
    wachet_server::notify::deliver::DeliverySettings {
        first_retry: Duration::from_millis(200),
        tries,
        attempt_timeout: Duration::from_secs(1),
        ..Default::default()
    }
}

fn site() -> wachet::testing::FixtureServerBuilder {
    FixtureServer::builder().page("/tea", "<p>3.50 EUR</p>")
}

both!(
    a_webhook_into_a_private_network_is_refused_like_any_fetch,
    multi_thread
);
async fn a_webhook_into_a_private_network_is_refused_like_any_fetch() {
    let site = site().start().await.unwrap();
    // The service may reach 127.0.0.1 (the site) and nothing else of the private space.
    let (refused, hook) = Receiver::start_on("127.0.0.2", 0).await;
    let (allowed, good) = Receiver::start(0).await;
    let mut setup = Setup::checking();
    setup.engine =
        wachet::Engine::builder().allow_network("127.0.0.1/32".parse::<ipnet::IpNet>().unwrap());
    setup.service.delivery = quick(8);
    let api = Api::start_as(setup).await;
    let user = api.user("eve@example.com").await;
    let task = changing_monitor(
        &api,
        &user,
        &site,
        json!([{"type": "Webhook", "value": hook}, {"type": "Webhook", "value": good}]),
    )
    .await;
    let note = first_notification(&api, &user, &task).await;
    let states = deliveries_when(&api, &note, |s| {
        s.len() == 2 && s.iter().all(|(_, state, _, _)| state != "pending")
    })
    .await;
    let by_target = |t: &str| states.iter().find(|s| s.0 == t).unwrap().clone();
    let (_, state, attempts, error) = by_target(&hook);
    // Refused for good at the first try: no retry can change the policy.
    assert_eq!((state.as_str(), attempts), ("failed", 1));
    let error = error.unwrap_or_default();
    assert!(
        error.contains("127.0.0.2") && error.contains("allow private networks"),
        "{error}"
    );
    assert_eq!(refused.count(), 0, "nothing reached the private address");
    assert_eq!(by_target(&good).1, "delivered");
    assert_eq!(allowed.count(), 1);
}

/// A webhook endpoint that takes connections and never answers; counts the requests.
async fn hanging_endpoint() -> (Arc<Mutex<usize>>, String) {
    use tokio::io::AsyncReadExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let requests = Arc::new(Mutex::new(0));
    let counted = requests.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            *counted.lock().unwrap() += 1;
            tokio::spawn(async move {
                let mut buf = vec![0; 64 * 1024];
                // Reads the request, then holds the connection until the client gives up.
                while let Ok(n) = socket.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                }
            });
        }
    });
    (requests, url)
}

both!(
    a_hanging_webhook_times_out_is_retried_and_never_delays_another_endpoint,
    multi_thread
);
async fn a_hanging_webhook_times_out_is_retried_and_never_delays_another_endpoint() {
    let site = site().start().await.unwrap();
    let (hung, hanging) = hanging_endpoint().await;
    let (receiver, good) = Receiver::start(0).await;
    let api = Api::start_checking_with(wachet_server::notify::deliver::DeliverySettings {
        attempt_timeout: Duration::from_secs(2),
        ..quick(3)
    })
    .await;
    let user = api.user("fay@example.com").await;
    let task = changing_monitor(
        &api,
        &user,
        &site,
        json!([{"type": "Webhook", "value": hanging}, {"type": "Webhook", "value": good}]),
    )
    .await;
    let note = first_notification(&api, &user, &task).await;
    receiver.wait_for(1).await;
    // The good endpoint has its delivery while the hanging one is still at its first try.
    let states = deliveries_of(&api, &note).await;
    let hanging_state = states.iter().find(|s| s.0 == hanging).unwrap();
    assert_eq!(
        (hanging_state.1.as_str(), hanging_state.2),
        ("pending", 0),
        "{states:?}"
    );
    let states = deliveries_when(&api, &note, |s| {
        s.iter().all(|(_, state, _, _)| state != "pending")
    })
    .await;
    let hanging_state = states.iter().find(|s| s.0 == hanging).unwrap();
    assert_eq!((hanging_state.1.as_str(), hanging_state.2), ("failed", 3));
    let error = hanging_state.3.clone().unwrap_or_default();
    assert!(error.contains("no answer within 2 s"), "{error}");
    assert_eq!(*hung.lock().unwrap(), 3, "one request a try");
    let good_state = states.iter().find(|s| s.0 == good).unwrap();
    assert_eq!((good_state.1.as_str(), good_state.2), ("delivered", 1));
}

both!(a_webhook_redirecting_in_a_loop_ends_failed, multi_thread);
async fn a_webhook_redirecting_in_a_loop_ends_failed() {
    let site = site().start().await.unwrap();
    let hits = Arc::new(Mutex::new(0usize));
    let counted = hits.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move || {
            let counted = counted.clone();
            async move {
                *counted.lock().unwrap() += 1;
                // 307 keeps the method and body: the loop is followed as a POST.
                (
                    axum::http::StatusCode::TEMPORARY_REDIRECT,
                    [("location", "/hook")],
                )
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hook = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let api = Api::start_checking_with(quick(2)).await;
    let user = api.user("gus@example.com").await;
    let task = changing_monitor(
        &api,
        &user,
        &site,
        json!([{"type": "Webhook", "value": hook}]),
    )
    .await;
    let note = first_notification(&api, &user, &task).await;
    let states = deliveries_when(&api, &note, |s| {
        s.first().is_some_and(|(_, state, _, _)| state != "pending")
    })
    .await;
    let (_, state, attempts, error) = &states[0];
    assert_eq!((state.as_str(), *attempts), ("failed", 2));
    let error = error.clone().unwrap_or_default();
    assert!(error.contains("redirects"), "{error}");
    // Each try follows a bounded number of hops.
    let hits = *hits.lock().unwrap();
    assert!((2..=30).contains(&hits), "{hits} requests");
}

both!(
    a_webhook_answering_500_forever_ends_failed_after_the_configured_tries,
    multi_thread
);
async fn a_webhook_answering_500_forever_ends_failed_after_the_configured_tries() {
    let site = site().start().await.unwrap();
    let (receiver, hook) = Receiver::start(usize::MAX).await;
    let api = Api::start_checking_with(quick(4)).await;
    let user = api.user("hal@example.com").await;
    let task = changing_monitor(
        &api,
        &user,
        &site,
        json!([{"type": "Webhook", "value": hook}]),
    )
    .await;
    let note = first_notification(&api, &user, &task).await;
    let states = deliveries_when(&api, &note, |s| {
        s.first().is_some_and(|(_, state, _, _)| state != "pending")
    })
    .await;
    assert_eq!(
        states,
        vec![(
            hook.clone(),
            "failed".to_string(),
            4,
            Some("the endpoint answered HTTP 500".to_string())
        )]
    );
    // Failed is final: nothing more is sent.
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    assert_eq!(receiver.count(), 4);
    let ids: std::collections::HashSet<String> = receiver
        .seen
        .lock()
        .unwrap()
        .iter()
        .map(|(h, _)| h["x-wachet-delivery"].to_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 1, "the same delivery each time");
}

both!(
    an_smtp_server_rejecting_the_recipient_fails_that_delivery_at_once,
    multi_thread
);
async fn an_smtp_server_rejecting_the_recipient_fails_that_delivery_at_once() {
    use tokio::io::{AsyncBufReadExt, BufReader};
    if !aiosmtpd_present() {
        return;
    }
    // A real SMTP server (aiosmtpd) that knows one mailbox and rejects every other recipient
    // with 550, as a mail server does; it prints each message it accepts.
    let script = "import sys, threading\n\
                  from aiosmtpd.controller import Controller\n\
                  class Handler:\n\
                  \x20   async def handle_RCPT(self, server, session, envelope, address, options):\n\
                  \x20       if address != 'known@example.com':\n\
                  \x20           return '550 5.1.1 no such mailbox'\n\
                  \x20       envelope.rcpt_tos.append(address)\n\
                  \x20       return '250 OK'\n\
                  \x20   async def handle_DATA(self, server, session, envelope):\n\
                  \x20       print('MESSAGE TO', ','.join(envelope.rcpt_tos), flush=True)\n\
                  \x20       return '250 OK'\n\
                  c = Controller(Handler(), hostname='127.0.0.1', port=int(sys.argv[1]))\n\
                  c.start()\n\
                  print('READY', flush=True)\n\
                  threading.Event().wait()\n";
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut smtp = tokio::process::Command::new("python3")
        .args(["-u", "-c", script, &port.to_string()])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(smtp.stdout.take().unwrap()).lines();
    let ready = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .expect("aiosmtpd starts within 20 s")
        .unwrap();
    assert_eq!(ready.as_deref(), Some("READY"));
    let site = site().start().await.unwrap();
    let api = Api::start_checking_with(smtp_at(port)).await;
    let user = api.user("kim@example.com").await;
    // Both confirmed long ago; one mailbox has gone since.
    confirmed(&api, &user, &["nobody@example.com", "known@example.com"]).await;
    let task = changing_monitor(
        &api,
        &user,
        &site,
        json!([{"type": "Email", "value": "nobody@example.com"},
               {"type": "Email", "value": "known@example.com"}]),
    )
    .await;
    let note = first_notification(&api, &user, &task).await;
    let states = deliveries_when(&api, &note, |s| {
        s.len() == 2 && s.iter().all(|(_, state, _, _)| state != "pending")
    })
    .await;
    let rejected = states.iter().find(|s| s.0 == "nobody@example.com").unwrap();
    // Rejected for good: failed at the first try, with the server's answer.
    assert_eq!(
        (rejected.1.as_str(), rejected.2),
        ("failed", 1),
        "{states:?}"
    );
    let error = rejected.3.clone().unwrap_or_default();
    assert!(
        error.contains("550") || error.contains("no such mailbox"),
        "{error}"
    );
    let known = states.iter().find(|s| s.0 == "known@example.com").unwrap();
    assert_eq!(known.1, "delivered", "{states:?}");
    let message = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
        .await
        .expect("the accepted message")
        .unwrap();
    assert_eq!(message.as_deref(), Some("MESSAGE TO known@example.com"));
}

/// Marks `addresses` as confirmed for `user`, as the migration does for addresses in use before
/// confirmation existed.
async fn confirmed(api: &Api, user: &User, addresses: &[&str]) {
    let db = api.sql().await;
    for address in addresses {
        db.execute(&format!(
            "INSERT INTO email_addresses (user_id, address, confirmed_at, requested_at) \
             VALUES ('{}', '{address}', 1, 1)",
            user.account.id
        ))
        .await;
    }
}

/// Whether aiosmtpd is installed; where it is missing and CI is not set, says the test skips.
fn aiosmtpd_present() -> bool {
    let present = std::process::Command::new("python3")
        .args(["-c", "import aiosmtpd"])
        .status()
        .is_ok_and(|s| s.success());
    if !present {
        assert!(
            std::env::var_os("CI").is_none(),
            "aiosmtpd is missing but CI is set: .ci/run must install it"
        );
        eprintln!("SKIPPED: no aiosmtpd (pip install aiosmtpd)");
    }
    present
}

/// aiosmtpd on loopback printing every message it receives, and its port; `None` (the test
/// skips) where aiosmtpd is missing and CI is not set.
pub(crate) async fn debugging_smtp() -> Option<(
    tokio::process::Child,
    u16,
    tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
)> {
    use tokio::io::AsyncBufReadExt;
    if !aiosmtpd_present() {
        return None;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut smtp = tokio::process::Command::new("python3")
        .args(["-u", "-m", "aiosmtpd", "-n", "-l"])
        .arg(format!("127.0.0.1:{port}"))
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
    let lines = tokio::io::BufReader::new(smtp.stdout.take().unwrap()).lines();
    Some((smtp, port, lines))
}

/// The next message aiosmtpd prints, waited for 30 s at most.
pub(crate) async fn next_message(
    lines: &mut tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
) -> String {
    tokio::time::timeout(Duration::from_secs(30), async {
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
    .expect("an e-mail within 30 s")
}

both!(
    an_email_address_gets_notifications_only_once_it_confirmed,
    multi_thread
);
async fn an_email_address_gets_notifications_only_once_it_confirmed() {
    let Some((_smtp, port, mut lines)) = debugging_smtp().await else {
        return;
    };
    let site = site().start().await.unwrap();
    let api = Api::start_checking_with(smtp_at(port)).await;
    let user = api.user("cy@example.com").await;
    let endpoints = "/thirdparty/v1/user/notificationEndpoints";
    let reply = api
        .put(
            &user,
            endpoints,
            json!({"notificationEndpoints": [
                {"type": "Email", "value": "Friend@Example.com", "confirmed": true},
                {"type": "Email", "value": "cy@example.com"}]}),
        )
        .await;
    let shown = reply.ok()["notificationEndpoints"].clone();
    assert_eq!(shown[0]["confirmed"], false, "{shown}");
    assert_eq!(shown[1]["confirmed"], true, "the account's own: {shown}");

    // The address is asked first, with a code, naming the account that asks.
    let message = next_message(&mut lines).await;
    assert!(
        message.contains("Subject: Confirm notifications from wachet"),
        "{message}"
    );
    assert!(message.contains("To: friend@example.com"), "{message}");
    assert!(message.contains("cy@example.com"), "{message}");
    let code = message
        .lines()
        .map(str::trim)
        .find(|l| {
            l.len() == 43
                && l.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_".contains(c))
        })
        .unwrap_or_else(|| panic!("no code in {message}"))
        .to_string();

    // Not confirmed yet: a notification reaches the account's own address only.
    let task = changing_monitor(&api, &user, &site, json!([])).await;
    let note = first_notification(&api, &user, &task).await;
    let states = deliveries_when(&api, &note, |s| {
        s.len() == 2 && s.iter().all(|(_, state, _, _)| state != "pending")
    })
    .await;
    let friend = states.iter().find(|s| s.0 == "Friend@Example.com").unwrap();
    assert_eq!((friend.1.as_str(), friend.2), ("failed", 0), "{states:?}");
    assert!(
        friend.3.as_deref().unwrap_or("").contains("not confirmed"),
        "{states:?}"
    );
    let own = next_message(&mut lines).await;
    assert!(own.contains("To: cy@example.com"), "{own}");
    let decoded = super::explain::decoded(&own);
    assert!(decoded.contains("{+3.90+} EUR"), "{decoded}");

    // A wrong code confirms nothing; the mailed one does.
    let confirm = "/thirdparty/v1/user/notificationEndpoints/confirm";
    api.post(&user, confirm, json!({"code": "not-the-code"}))
        .await
        .field_error("code", "no address waits for this code");
    let reply = api.post(&user, confirm, json!({"code": code})).await;
    assert_eq!(reply.ok()["notificationEndpoints"][0]["confirmed"], true);
    // A monitor's endpoints say the same, wherever the monitor is shown.
    let shown = api
        .put(
            &user,
            "/thirdparty/v1/task",
            json!({"url": site.url("/tea"), "notificationEndpoints": [
                {"type": "Email", "value": "friend@example.com"},
                {"type": "Email", "value": "stranger@example.com"},
                {"type": "Webhook", "value": "https://example.com/hook"}]}),
        )
        .await
        .ok()
        .clone();
    let endpoints = &shown["notificationEndpoints"];
    assert_eq!(endpoints[0]["confirmed"], true, "{shown}");
    assert_eq!(endpoints[1]["confirmed"], false, "{shown}");
    assert!(
        endpoints[2].get("confirmed").is_none_or(|c| c.is_null()),
        "{shown}"
    );
    let listed = api
        .get(&user, "/thirdparty/v1/folder/list")
        .await
        .ok()
        .clone();
    let listed = listed["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == shown["id"])
        .unwrap()
        .clone();
    assert_eq!(listed["notificationEndpoints"], *endpoints, "{listed}");
    api.post(&user, confirm, json!({"code": code}))
        .await
        .field_error("code", "no address waits");

    // Now it gets the next notification (and never got the one before).
    site.set("/tea", Reply::html("<p>3.95 EUR</p>"));
    let mut to_friend = None;
    for _ in 0..2 {
        let message = next_message(&mut lines).await;
        if message.to_lowercase().contains("to: friend@example.com") {
            to_friend = Some(message);
        }
    }
    let message = to_friend.expect("a notification to the confirmed address");
    assert!(
        message.contains("Subject: Tea: content changed"),
        "{message}"
    );
    let decoded = super::explain::decoded(&message);
    assert!(decoded.contains("[-3.90-]{+3.95+} EUR"), "{decoded}");

    // Asking again for an address: one message an hour at most.
    api.post(&user, confirm, json!({"address": "other@example.com"}))
        .await
        .ok();
    api.post(&user, confirm, json!({"address": "other@example.com"}))
        .await
        .field_error("address", "less than an hour ago");
    api.post(&user, confirm, json!({"address": "not an address"}))
        .await
        .field_error("address", "not an e-mail address");
}

/// The service checking, delivering with quick retries, at most `per_hour` deliveries an hour.
async fn limited_to(per_hour: u32) -> Api {
    let mut setup = Setup::checking();
    setup.service.delivery = quick(8);
    setup.store.deliveries_per_hour = per_hour;
    Api::start_as(setup).await
}

both!(
    deliveries_beyond_the_hourly_limit_wait_and_are_never_dropped,
    multi_thread
);
async fn deliveries_beyond_the_hourly_limit_wait_and_are_never_dropped() {
    let site = FixtureServer::builder()
        .page("/a", "<p>1</p>")
        .page("/b", "<p>1</p>")
        .page("/c", "<p>1</p>")
        .start()
        .await
        .unwrap();
    let (receiver, hook) = Receiver::start(0).await;
    let api = limited_to(2).await;
    let user = api.user("ida@example.com").await;
    let mut tasks = Vec::new();
    for page in ["/a", "/b", "/c"] {
        let body = json!({"name": page, "url": site.url(page), "recurrenceInSeconds": 1,
                          "alerts": [{"type": "NotEq"}],
                          "notificationEndpoints": [{"type": "Webhook", "value": hook}]});
        tasks.push(id(&api.task(&user, body).await));
    }
    for task in &tasks {
        let path = format!("/thirdparty/v1/data/list/{task}");
        for _ in 0..100 {
            let data = api.get(&user, &path).await.ok()["data"].clone();
            if !data.as_array().unwrap().is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    for page in ["/a", "/b", "/c"] {
        site.set(page, Reply::html("<p>2</p>"));
    }
    let mut notes = Vec::new();
    for task in &tasks {
        notes.push(first_notification(&api, &user, task).await);
    }
    receiver.wait_for(2).await;
    // The third waits in the outbox, pending, for the hour to have room again.
    // No store call shows when a delivery is due: the database is asked.
    let db = api.sql().await;
    let pending = "FROM deliveries WHERE state = 'pending'";
    let mut held = None;
    for _ in 0..100 {
        let next = db
            .count(&format!("SELECT max(next_attempt_at) {pending}"))
            .await;
        if db.count(&format!("SELECT count(*) {pending}")).await == 1
            && next > wachet_server::store::now_millis() + 30 * 60_000
        {
            held = Some((
                db.count(&format!("SELECT max(attempts) {pending}")).await,
                next,
            ));
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (attempts, next) = held.expect("one delivery held for about an hour, pending");
    assert_eq!(attempts, 0);
    let wait = next - wachet_server::store::now_millis();
    assert!((30 * 60_000..=3_600_000).contains(&wait), "{wait} ms");
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(receiver.count(), 2, "no more than two in the hour");
}

both!(
    a_monitors_unconfirmed_address_is_asked_when_its_first_notification_comes,
    multi_thread
);
async fn a_monitors_unconfirmed_address_is_asked_when_its_first_notification_comes() {
    let Some((_smtp, port, mut lines)) = debugging_smtp().await else {
        return;
    };
    let site = site().start().await.unwrap();
    let api = Api::start_checking_with(smtp_at(port)).await;
    let user = api.user("dan@example.com").await;
    let task = changing_monitor(
        &api,
        &user,
        &site,
        json!([{"type": "Email", "value": "boss@example.com"}]),
    )
    .await;
    let note = first_notification(&api, &user, &task).await;
    let states = deliveries_when(&api, &note, |s| {
        s.first().is_some_and(|(_, state, _, _)| state != "pending")
    })
    .await;
    assert_eq!(
        (states[0].1.as_str(), states[0].2),
        ("failed", 0),
        "{states:?}"
    );
    // The one message that address gets is the question, not the notification.
    let message = next_message(&mut lines).await;
    assert!(
        message.contains("Subject: Confirm notifications from wachet"),
        "{message}"
    );
    assert!(message.contains("To: boss@example.com"), "{message}");
    assert!(message.contains("dan@example.com"), "{message}");
    assert!(!message.contains("3.90 EUR"), "{message}");
    let shown = api
        .get(&user, &format!("/thirdparty/v1/task/{task}"))
        .await
        .ok()
        .clone();
    assert_eq!(
        shown["notificationEndpoints"][0]["confirmed"], false,
        "{shown}"
    );
    // A retry is no way around the confirmation.
    let path = format!("/thirdparty/v1/notification/{note}/deliveries");
    let delivery = api.get(&user, &path).await.ok()[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    api.post(&user, &format!("{path}/{delivery}/retry"), json!({}))
        .await
        .field_error("deliveryId", "not confirmed");
    assert_eq!(api.get(&user, &path).await.ok()[0]["state"], "failed");
}

both!(
    a_failed_delivery_is_retried_now_through_the_outbox_by_its_owner_only,
    multi_thread
);
async fn a_failed_delivery_is_retried_now_through_the_outbox_by_its_owner_only() {
    let site = site().start().await.unwrap();
    // One try in all: the first failure is final.
    let (receiver, hook) = Receiver::start(1).await;
    let api = Api::start_checking_with(quick(1)).await;
    let user = api.user("retry@example.com").await;
    let other = api.user("other@example.com").await;
    let task = changing_monitor(
        &api,
        &user,
        &site,
        json!([{"type": "Webhook", "value": hook}]),
    )
    .await;
    let note = first_notification(&api, &user, &task).await;
    deliveries_when(&api, &note, |s| {
        s.iter().all(|(_, state, _, _)| state == "failed")
    })
    .await;
    let path = format!("/thirdparty/v1/notification/{note}/deliveries");
    let listed = api.get(&user, &path).await.ok().clone();
    assert_eq!(listed[0]["state"], "failed", "{listed}");
    assert_eq!(listed[0]["attempts"], 1);
    let delivery = listed[0]["id"].as_str().unwrap().to_string();
    let retry = format!("{path}/{delivery}/retry");

    // Another user's, and unknown ids, are the same 404; nothing moves.
    let foreign = api.post(&other, &retry, json!({})).await;
    foreign.problem(404);
    let unknown = api
        .post(&user, &format!("{path}/12345/retry"), json!({}))
        .await;
    assert_eq!(unknown.text, foreign.text);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(receiver.count(), 1);

    // The owner's retry: due now, sent by the delivery loop, delivered on its second try.
    let answered = api.post(&user, &retry, json!({})).await;
    assert!(
        ["pending", "delivered"].contains(&answered.ok()[0]["state"].as_str().unwrap()),
        "{}",
        answered.text
    );
    receiver.wait_for(2).await;
    let states = deliveries_when(&api, &note, |s| {
        s.iter().all(|(_, state, _, _)| state == "delivered")
    })
    .await;
    assert_eq!(states[0].2, 2, "{states:?}");
    // Delivered: nothing to retry.
    api.post(&user, &retry, json!({}))
        .await
        .field_error("deliveryId", "delivered already");
}

both!(
    a_test_notification_goes_through_the_outbox_signed_and_within_the_hourly_bound,
    multi_thread
);
async fn a_test_notification_goes_through_the_outbox_signed_and_within_the_hourly_bound() {
    let (receiver, hook) = Receiver::start(0).await;
    let api = limited_to(1).await;
    let user = api.user("tester@example.com").await;
    let settings = api
        .put(
            &user,
            "/thirdparty/v1/user/notificationEndpoints",
            json!({"notificationEndpoints": [{"type": "Webhook", "value": hook}]}),
        )
        .await;
    let secret = settings.ok()["webhookSecret"].as_str().unwrap().to_string();
    let test = "/thirdparty/v1/user/notificationEndpoints/test";

    // Only the user's own endpoints.
    api.post(
        &user,
        test,
        json!({"value": "http://127.0.0.1:9/elsewhere"}),
    )
    .await
    .field_error("value", "none of your notification endpoints");

    let queued = api.post(&user, test, json!({"value": hook})).await;
    assert_eq!(queued.status, 200, "{}", queued.text);
    let seen = receiver.wait_for(1).await;
    let (headers, body) = &seen[0];
    let payload: Value = serde_json::from_str(body).unwrap();
    assert_eq!(payload["test"], true, "{body}");
    assert_eq!(payload["taskName"], "wachet test notification");
    assert_eq!(
        headers["x-wachet-delivery"].to_str().unwrap(),
        queued.body["deliveryId"].as_str().unwrap()
    );
    assert_eq!(
        headers["x-wachet-signature"].to_str().unwrap(),
        wachet_server::notify::deliver::signature(&secret, body).unwrap()
    );

    // The hour holds one delivery: the second test waits, pending, and is not dropped.
    let second = api.post(&user, test, json!({"value": hook})).await;
    assert_eq!(second.status, 200, "{}", second.text);
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(receiver.count(), 1);
    let listed = api.get(&user, test).await.ok().clone();
    let states: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["state"].as_str().unwrap())
        .collect();
    assert_eq!(states.len(), 2, "{listed}");
    assert!(
        states.contains(&"delivered") && states.contains(&"pending"),
        "{listed}"
    );

    // At most five tests wait at once.
    for _ in 0..4 {
        assert_eq!(
            api.post(&user, test, json!({"value": hook})).await.status,
            200
        );
    }
    api.post(&user, test, json!({"value": hook}))
        .await
        .field_error("endpoint", "still waiting");
}
