//! Notification URLs: each service's delivery reaches a local receiver standing in for it, which
//! records the request so the test can hold it against the service's public API documentation
//! (path, authorization, fields, limits); what is stored and shown keeps the secrets sealed; bad
//! URLs are refused at save with the field named. One change feeds every service at once, so
//! the whole set runs in a few seconds.

use super::delivery::{changing_monitor, debugging_smtp, deliveries_when, first_notification};
use crate::{Api, Setup};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use wachet::testing::FixtureServer;

/// One request a receiver got.
#[derive(Debug, Clone)]
struct Seen {
    method: Method,
    path: String,
    query: HashMap<String, String>,
    headers: HeaderMap,
    body: String,
}

impl Seen {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|_| panic!("not JSON: {}", self.body))
    }

    fn form(&self) -> HashMap<String, String> {
        form_urlencoded::parse(self.body.as_bytes())
            .into_owned()
            .collect()
    }

    fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }
}

/// A receiver for every service: records each request and answers as the service documents a
/// success (a Matrix or Rocket.Chat login, a room alias, Slack's and Telegram's `ok`).
async fn receiver() -> (Arc<Mutex<Vec<Seen>>>, String) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let state = seen.clone();
    let app = axum::Router::new().fallback(
        move |method: Method, uri: Uri, headers: HeaderMap, body: String| {
            let state = state.clone();
            async move {
                let path = decoded(uri.path());
                let query = uri
                    .query()
                    .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
                    .unwrap_or_default();
                state.lock().unwrap().push(Seen {
                    method,
                    path: path.clone(),
                    query,
                    headers,
                    body,
                });
                if path.starts_with("/refuse") {
                    return (
                        StatusCode::UNAUTHORIZED,
                        axum::Json(json!({"ok": false, "description": "Unauthorized"})),
                    );
                }
                let answer = if path.ends_with("/_matrix/client/v3/login") {
                    json!({"access_token": "syt_session", "user_id": "@w:h"})
                } else if path.contains("/_matrix/client/v3/directory/room/") {
                    json!({"room_id": "!abc:h", "servers": ["h"]})
                } else if path.ends_with("/api/v1/login") {
                    json!({"status": "success", "data": {"authToken": "rc-session", "userId": "rc-user"}})
                } else if path.ends_with("/sendMessage") || path.ends_with("/chat.postMessage") {
                    json!({"ok": true, "result": {"message_id": 1}})
                } else if path.ends_with("/1/messages.json") {
                    json!({"status": 1, "request": "r1"})
                } else {
                    json!({})
                };
                (StatusCode::OK, axum::Json(answer))
            }
        },
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (seen, base)
}

/// `path` percent-decoded.
fn decoded(path: &str) -> String {
    let bytes = path.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match path
            .get(i + 1..i + 3)
            .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            Some(byte) if bytes[i] == b'%' => {
                out.push(byte);
                i += 3;
            }
            _ => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The requests `seen` holds at `path`, waited for until there are `n` (10 s at most).
async fn at(seen: &Arc<Mutex<Vec<Seen>>>, path: &str, n: usize) -> Vec<Seen> {
    for _ in 0..100 {
        let found: Vec<Seen> = seen
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s.path == path)
            .cloned()
            .collect();
        if found.len() >= n {
            return found;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let paths: Vec<String> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|s| s.path.clone())
        .collect();
    panic!("fewer than {n} requests at {path} within 10 s; seen {paths:?}");
}

/// The first request whose path starts with `prefix`, waited for 10 s at most.
async fn under(seen: &Arc<Mutex<Vec<Seen>>>, prefix: &str) -> Seen {
    for _ in 0..100 {
        let found = seen
            .lock()
            .unwrap()
            .iter()
            .find(|s| s.path.starts_with(prefix))
            .cloned();
        if let Some(found) = found {
            return found;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("no request under {prefix} within 10 s");
}

/// `Basic` authorization of `user` and `password`.
fn basic(user: &str, password: &str) -> String {
    use base64::Engine as _;
    let pair = format!("{user}:{password}");
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(pair)
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn every_notification_url_reaches_its_service_as_the_service_documents() {
    // SQLite only: what this checks is what is sent; the endpoints are stored as the
    // monitor's JSON, which both backends store alike.
    let site = FixtureServer::builder()
        .page("/tea", "<p>3.50 EUR</p>")
        .start()
        .await
        .unwrap();
    let (seen, base) = receiver().await;
    let port = base.rsplit(':').next().unwrap().to_string();
    let smtp = debugging_smtp().await;
    let mut setup = Setup::checking();
    if let Some((_, smtp_port, _)) = &smtp {
        setup.service.delivery = super::delivery::smtp_at(*smtp_port);
    }
    for service in ["tgram", "slack", "discord", "pover", "gchat", "workflows"] {
        let (name, url) = wachet_server::notify::channel::url::Bases::parse(&format!(
            "{service}={base}/{service}"
        ))
        .unwrap();
        setup.service.delivery.bases.insert(name, url);
    }
    setup.service.delivery.first_retry = std::time::Duration::from_millis(200);
    let api = Api::start_as(setup).await;
    let user = api.user("ann@example.com").await;
    let (pover_user, pover_app) = ("u".repeat(30), "a".repeat(30));
    let mut urls = vec![
        format!("json://hook:pw1@127.0.0.1:{port}/json/in?+X-Token=jsontoken&-src=wachet&:type="),
        format!("form://127.0.0.1:{port}/form/in?method=PUT"),
        "tgram://123456:TgSecret-1/-100200:7/@chan".to_string(),
        format!("ntfy://tk_ntfysecret@127.0.0.1:{port}/alerts?priority=high"),
        format!("gotify://127.0.0.1:{port}/gt/GotifySecret"),
        "discord://Watcher@123456/DiscordSecret".to_string(),
        "slack://T1/B2/SlackSecret/#general".to_string(),
        "slack://xoxb-1-2-BotSecret/#ops".to_string(),
        format!("pover://{pover_user}@{pover_app}/phone"),
        format!("matrix://w:MatrixSecret@127.0.0.1:{port}/#room"),
        format!("mmost://wachetbot@127.0.0.1:{port}/MmostSecret?channel=town"),
        format!("rocket://ru:RocketSecret@127.0.0.1:{port}/#general"),
        "gchat://SPACE/GchatKey/GchatSecret".to_string(),
        "workflows://flows.example/wf1/WorkflowSecret".to_string(),
        format!("hassio://127.0.0.1:{port}/HassSecret"),
        format!("apprise://127.0.0.1:{port}/AppriseSecret?tags=ops"),
    ];
    if let Some((_, smtp_port, _)) = &smtp {
        urls.push(format!(
            "mailto://127.0.0.1:{smtp_port}?to=ops@example.com&from=wachet@example.com"
        ));
    }
    let mut endpoints: Vec<Value> = urls
        .iter()
        .map(|u| json!({"type": "Url", "value": u}))
        .collect();
    endpoints.push(json!({"type": "Teams", "value": format!("{base}/teams")}));
    let task = changing_monitor(&api, &user, &site, Value::Array(endpoints)).await;

    // Stored and shown with every secret sealed.
    let shown = api
        .get(&user, &format!("/thirdparty/v1/task/{task}"))
        .await
        .ok()
        .clone();
    let shown = shown["notificationEndpoints"].to_string();
    let secrets = [
        "pw1",
        "jsontoken",
        "TgSecret",
        "ntfysecret",
        "GotifySecret",
        "DiscordSecret",
        "SlackSecret",
        "BotSecret",
        pover_app.as_str(),
        "MatrixSecret",
        "MmostSecret",
        "RocketSecret",
        "GchatSecret",
        "WorkflowSecret",
        "HassSecret",
        "AppriseSecret",
    ];
    for secret in secrets {
        assert!(!shown.contains(secret), "{secret} shown in {shown}");
    }
    assert!(shown.contains("sealed~"), "{shown}");

    // JSON: Apprise's fields, the `:` rename dropping `type`, headers, parameters, Basic.
    let json = &at(&seen, "/json/in", 1).await[0];
    assert_eq!(json.method, Method::POST);
    assert_eq!(json.header("authorization"), basic("hook", "pw1"));
    assert_eq!(json.header("x-token"), "jsontoken");
    assert_eq!(json.query["src"], "wachet");
    let body = json.json();
    assert_eq!(body["version"], "1.0");
    assert!(body["title"].as_str().unwrap().starts_with("Tea"));
    assert!(body["message"].as_str().unwrap().contains("3.90"));
    assert!(body.get("type").is_none(), "{body}");
    // Form: the method given, the same fields form-encoded.
    let form = &at(&seen, "/form/in", 1).await[0];
    assert_eq!(form.method, Method::PUT);
    assert_eq!(
        form.header("content-type"),
        "application/x-www-form-urlencoded"
    );
    let fields = form.form();
    assert_eq!(fields["type"], "info");
    assert!(fields["message"].contains("3.90"));

    // Telegram: sendMessage for each chat, HTML within 4,096 characters, a forum topic.
    let telegram = at(&seen, "/tgram/bot123456:TgSecret-1/sendMessage", 2).await;
    let chats: Vec<Value> = telegram.iter().map(Seen::json).collect();
    assert_eq!(chats[0]["chat_id"], -100200);
    assert_eq!(chats[0]["message_thread_id"], 7);
    assert_eq!(chats[1]["chat_id"], "@chan");
    for chat in &chats {
        assert_eq!(chat["parse_mode"], "HTML");
        let text = chat["text"].as_str().unwrap();
        assert!(
            text.starts_with("<b>Tea") && text.contains("3.90"),
            "{text}"
        );
        assert!(text.chars().count() <= 4096);
    }

    // ntfy: JSON publishing at the root, the topic in the body, a token as Bearer.
    let ntfy = at(&seen, "/", 1).await;
    let ntfy = ntfy
        .iter()
        .find(|s| s.body.contains("\"topic\""))
        .expect("an ntfy publish");
    assert_eq!(ntfy.header("authorization"), "Bearer tk_ntfysecret");
    let body = ntfy.json();
    assert_eq!(body["topic"], "alerts");
    assert_eq!(body["priority"], 4);
    assert!(body["click"].as_str().unwrap().contains("/notification"));

    // Gotify: /message under the path, the application token in X-Gotify-Key.
    let gotify = &at(&seen, "/gt/message", 1).await[0];
    assert_eq!(gotify.header("x-gotify-key"), "GotifySecret");
    assert_eq!(gotify.json()["priority"], 5);

    // Discord: execute-webhook with an embed within its limits and the bot's name.
    let discord = &at(&seen, "/discord/api/webhooks/123456/DiscordSecret", 1).await[0];
    let body = discord.json();
    assert_eq!(body["username"], "Watcher");
    let embed = &body["embeds"][0];
    assert!(embed["title"].as_str().unwrap().chars().count() <= 256);
    let description = embed["description"].as_str().unwrap();
    assert!(description.contains("3.90") && description.chars().count() <= 4096);

    // Slack: the incoming webhook's path, and the bot's chat.postMessage with Bearer.
    let hook = &at(&seen, "/slack/services/T1/B2/SlackSecret", 1).await[0];
    let body = hook.json();
    assert_eq!(body["channel"], "#general");
    for block in body["blocks"].as_array().unwrap() {
        assert!(block["text"]["text"].as_str().unwrap().chars().count() <= 3000);
    }
    let bot = &at(&seen, "/slack/api/chat.postMessage", 1).await[0];
    assert_eq!(bot.header("authorization"), "Bearer xoxb-1-2-BotSecret");
    assert_eq!(bot.json()["channel"], "#ops");

    // Pushover: the form fields of /1/messages.json within their limits.
    let pover = at(&seen, "/pover/1/messages.json", 1).await[0].form();
    assert_eq!(pover["token"], pover_app);
    assert_eq!(pover["user"], pover_user);
    assert_eq!(pover["device"], "phone");
    assert!(pover["message"].chars().count() <= 1024);
    assert!(pover["title"].chars().count() <= 250);

    // Matrix: a password login, the alias resolved, m.room.message PUT with the session.
    let login = at(&seen, "/_matrix/client/v3/login", 1).await[0].json();
    assert_eq!(login["type"], "m.login.password");
    assert_eq!(login["identifier"]["user"], "w");
    assert_eq!(login["password"], "MatrixSecret");
    let sent = under(
        &seen,
        "/_matrix/client/v3/rooms/!abc:h/send/m.room.message/",
    )
    .await;
    assert_eq!(sent.method, Method::PUT);
    assert_eq!(sent.header("authorization"), "Bearer syt_session");
    let event = sent.json();
    assert_eq!(event["msgtype"], "m.text");
    assert_eq!(event["format"], "org.matrix.custom.html");

    // Mattermost: the webhook's path, the bot's name and the channel.
    let mmost = at(&seen, "/hooks/MmostSecret", 1).await[0].json();
    assert_eq!(mmost["username"], "wachetbot");
    assert_eq!(mmost["channel"], "town");

    // Rocket.Chat: a login, then chat.postMessage with its token and user id.
    let login = at(&seen, "/api/v1/login", 1).await[0].json();
    assert_eq!(login["password"], "RocketSecret");
    let post = &at(&seen, "/api/v1/chat.postMessage", 1).await[0];
    assert_eq!(post.header("x-auth-token"), "rc-session");
    assert_eq!(post.header("x-user-id"), "rc-user");
    assert_eq!(post.json()["channel"], "#general");

    // Google Chat: the space's messages with key and token as parameters.
    let gchat = &at(&seen, "/gchat/v1/spaces/SPACE/messages", 1).await[0];
    assert_eq!(gchat.query["key"], "GchatKey");
    assert_eq!(gchat.query["token"], "GchatSecret");
    assert!(gchat.json()["text"].as_str().unwrap().chars().count() <= 4096);

    // Teams workflows, and the Teams kind: an Adaptive Card in `attachments`.
    let workflow = &at(
        &seen,
        "/workflows/workflows/wf1/triggers/manual/paths/invoke",
        1,
    )
    .await[0];
    assert_eq!(workflow.query["api-version"], "2016-06-01");
    assert_eq!(workflow.query["sp"], "/triggers/manual/run");
    assert_eq!(workflow.query["sv"], "1.0");
    assert_eq!(workflow.query["sig"], "WorkflowSecret");
    let teams = at(&seen, "/teams", 1).await[0].json();
    for card in [workflow.json(), teams] {
        assert_eq!(card["type"], "message");
        let attachment = &card["attachments"][0];
        assert_eq!(
            attachment["contentType"],
            "application/vnd.microsoft.card.adaptive"
        );
        assert_eq!(attachment["content"]["type"], "AdaptiveCard");
        assert!(attachment["content"]["body"].to_string().contains("3.90"));
    }

    // Home Assistant: a persistent notification with the long-lived token as Bearer.
    let hass = &at(&seen, "/api/services/persistent_notification/create", 1).await[0];
    assert_eq!(hass.header("authorization"), "Bearer HassSecret");
    let body = hass.json();
    assert!(body["message"].as_str().unwrap().contains("3.90"));
    assert!(
        body["notification_id"]
            .as_str()
            .unwrap()
            .starts_with("wachet-")
    );

    // Apprise API: /notify/{key} with its documented fields.
    let apprise = at(&seen, "/notify/AppriseSecret", 1).await[0].json();
    assert_eq!(apprise["type"], "info");
    assert_eq!(apprise["format"], "text");
    assert_eq!(apprise["tag"], "ops");
    assert!(apprise["body"].as_str().unwrap().contains("3.90"));

    // E-mail through the server the URL names.
    if let Some((_smtp, _, mut lines)) = smtp {
        let message = super::delivery::next_message(&mut lines).await;
        assert!(message.contains("ops@example.com"), "{message}");
        assert!(message.contains("Tea"), "{message}");
    }

    // Every delivery delivered, its target shown without a secret.
    let note = first_notification(&api, &user, &task).await;
    let states = deliveries_when(&api, &note, |s| {
        s.iter().all(|(_, state, _, _)| state == "delivered")
    })
    .await;
    for (target, ..) in &states {
        for secret in secrets {
            assert!(!target.contains(secret), "{target}");
        }
    }
}

#[tokio::test]
async fn a_bad_notification_url_is_refused_at_save_with_its_field() {
    // SQLite only: nothing is stored. The engine keeps to public addresses, as by default.
    let mut setup = Setup::api();
    setup.engine = wachet::Engine::builder();
    let api = Api::start_as(setup).await;
    let ann = api.user("ann@example.com").await;
    let path = "/thirdparty/v1/user/notificationEndpoints";
    let cases = [
        ("tgram://not-a-token/123", "bot token"),
        ("tgram://123:abc", "chat id"),
        ("foo://host/x", "not a notification URL"),
        ("json://host:99999/x", "not a port"),
        ("json://host/x?method=BREW", "method"),
        ("nourlatall", "must be a notification URL"),
        ("pover://short@short", "30 letters"),
        ("mailto://example.com?to=nobody", "not an e-mail address"),
        ("jsons://127.0.0.1:8443/hook", "not allowed"),
        ("gotify://[::1]/token", "not allowed"),
        (
            "mailto://example.com?to=a@example.com&from=w@example.com&smtp=localhost",
            "not allowed",
        ),
    ];
    for (value, words) in cases {
        let reply = api
            .put(
                &ann,
                path,
                json!({"notificationEndpoints": [{"type": "Url", "value": value}]}),
            )
            .await;
        reply.field_error("notificationEndpoints[0].value", words);
    }
    // Telegram as its own kind takes a tgram:// URL, sealed like any.
    let stored = api
        .put(
            &ann,
            path,
            json!({"notificationEndpoints": [{"type": "Telegram", "value": "tgram://123:SECRET/42"}]}),
        )
        .await
        .ok()
        .clone();
    let sealed = stored["notificationEndpoints"][0]["value"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        !sealed.contains("SECRET") && sealed.ends_with("/42"),
        "{sealed}"
    );
    // Given back as shown, it is kept; another user cannot take it over.
    let again = api
        .put(
            &ann,
            path,
            json!({"notificationEndpoints": [{"type": "Telegram", "value": sealed}]}),
        )
        .await
        .ok()
        .clone();
    assert_eq!(again["notificationEndpoints"][0]["value"], sealed.as_str());
    let bob = api.user("bob@example.com").await;
    api.put(
        &bob,
        path,
        json!({"notificationEndpoints": [{"type": "Url", "value": sealed}]}),
    )
    .await
    .field_error("notificationEndpoints[0].value", "not this account's");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_service_refusing_the_token_fails_the_delivery_at_once_with_its_answer() {
    // SQLite only: the outcome is judged before it is stored.
    let site = FixtureServer::builder()
        .page("/tea", "<p>3.50 EUR</p>")
        .start()
        .await
        .unwrap();
    let (_seen, base) = receiver().await;
    let mut setup = Setup::checking();
    let (name, url) =
        wachet_server::notify::channel::url::Bases::parse(&format!("tgram={base}/refuse")).unwrap();
    setup.service.delivery.bases.insert(name, url);
    let api = Api::start_as(setup).await;
    let user = api.user("ann@example.com").await;
    let endpoints = json!([{"type": "Url", "value": "tgram://123:REVOKED/42"}]);
    let task = changing_monitor(&api, &user, &site, endpoints).await;
    let note = first_notification(&api, &user, &task).await;
    let states = deliveries_when(&api, &note, |s| {
        s.iter().all(|(_, state, _, _)| state == "failed")
    })
    .await;
    let (target, _, attempts, error) = &states[0];
    assert_eq!(*attempts, 1, "a refused token is not tried again");
    assert!(!target.contains("REVOKED"));
    assert!(error.as_deref().unwrap().contains("401"), "{error:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_settings_form_and_an_import_seal_a_notification_url_as_the_api_does() {
    // SQLite only: the secret is sealed before anything is stored.
    let api = Api::start().await;
    let ann = api.user("ann@example.com").await;
    let sealed = |value: &Value| {
        let value = value.as_str().unwrap_or_default().to_string();
        assert!(
            value.contains("sealed~") && !value.contains("SECRET") && value.ends_with("/42"),
            "{value}"
        );
    };

    // Added on the settings page: stored and shown sealed.
    let cookie = crate::support::web::session_cookie(&api, &ann).await;
    let (_, page) = crate::support::web::page_text(&api, &cookie, "/settings").await;
    let csrf = crate::support::web::csrf_of(&page);
    let fields = [
        ("csrf", csrf.as_str()),
        ("kind", "128"),
        ("value", "tgram://123:SECRET/42"),
    ];
    let response =
        crate::support::web::post_form(&api, &cookie, "/settings/endpoints", &fields).await;
    assert_eq!(response.status(), 303);
    let stored = api
        .get(&ann, "/thirdparty/v1/user/notificationEndpoints")
        .await;
    sealed(&stored.ok()["notificationEndpoints"][0]["value"]);
    let (_, page) = crate::support::web::page_text(&api, &cookie, "/settings").await;
    assert!(!page.contains("SECRET"), "{page}");

    // A monitor of an imported file: stored sealed.
    let file = json!({
        "format": "wachet-export",
        "version": 1,
        "monitors": [{
            "name": "Sealed",
            "url": "https://example.com/",
            "recurrenceInSeconds": 3600,
            "notificationEndpoints": [{"type": "Url", "value": "tgram://123:SECRET/42"}],
        }],
        "complete": true,
    });
    let reply = api
        .raw(
            api.client()
                .post(api.url("/thirdparty/v1/import"))
                .header("authorization", format!("bearer {}", ann.token))
                .header("content-type", "application/json")
                .body(file.to_string()),
        )
        .await;
    assert_eq!(reply.ok()["monitors"].as_array().map(Vec::len), Some(1));
    let monitors = api.get(&ann, "/thirdparty/v1/task/search").await;
    sealed(&monitors.ok()[0]["notificationEndpoints"][0]["value"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_service_asking_to_wait_is_tried_after_its_retry_after_and_a_message_too_large_fails() {
    // SQLite only: the answers are judged before anything is stored.
    let site = FixtureServer::builder()
        .page("/tea", "<p>3.50 EUR</p>")
        .start()
        .await
        .unwrap();
    let hits = Arc::new(Mutex::new(Vec::<String>::new()));
    let seen = hits.clone();
    let app = axum::Router::new().fallback(move |uri: Uri| {
        let seen = seen.clone();
        async move {
            seen.lock().unwrap().push(uri.path().to_string());
            match uri.path() {
                "/limited" => (
                    StatusCode::TOO_MANY_REQUESTS,
                    [("retry-after", "120")],
                    "slow down",
                ),
                _ => (
                    StatusCode::PAYLOAD_TOO_LARGE,
                    [("retry-after", "1")],
                    "message too large",
                ),
            }
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let host = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let api = Api::start_checking().await;
    let user = api.user("ann@example.com").await;
    let endpoints = json!([{"type": "Url", "value": format!("json://{host}/limited")},
                           {"type": "Url", "value": format!("json://{host}/large")}]);
    let task = changing_monitor(&api, &user, &site, endpoints).await;
    let note = first_notification(&api, &user, &task).await;
    let states = deliveries_when(&api, &note, |s| {
        s.len() == 2 && s.iter().all(|(_, _, attempts, _)| *attempts == 1)
    })
    .await;
    let of = |path: &str| states.iter().find(|s| s.0.ends_with(path)).unwrap().clone();
    // 413: no retry makes a message smaller; failed at once, saying what the service said.
    let (_, state, _, error) = of("/large");
    let error = error.unwrap_or_default();
    assert_eq!(state, "failed");
    assert!(
        error.contains("413") && error.contains("message too large"),
        "{error}"
    );
    // 429: kept, and tried again when the service asked (120 s), not after the 30 s policy.
    let (_, state, _, error) = of("/limited");
    assert_eq!(state, "pending");
    assert!(error.unwrap_or_default().contains("429"));
    let wait = api
        .sql()
        .await
        .count(&format!(
            "SELECT next_attempt_at - updated_at FROM deliveries \
             WHERE notification_id = '{note}' AND target LIKE '%/limited'"
        ))
        .await;
    assert!((119_000..=120_000).contains(&wait), "waits {wait} ms");
    // One request each: neither was tried again meanwhile.
    let mut hit = hits.lock().unwrap().clone();
    hit.sort();
    assert_eq!(hit, ["/large", "/limited"]);
}
