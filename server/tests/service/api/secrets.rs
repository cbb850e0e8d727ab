//! Secrets moved and rotated: an export that carries the monitors' secrets encrypted to a
//! passphrase, imported into another service whose scheduler then signs in with them; and a
//! rotation of the service's key that seals every stored secret again, all or nothing.

use crate::{Api, Backend, Setup, User, id, monitor};
use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use std::time::Duration;
use wachet::testing::SignInSite;
use wachet_server::secrets::{Sealer, open_step, session_context};

/// A monitor of `url` that signs in to the fixture site (the password a secret step) and
/// notifies a Telegram bot whose token is a secret part of its URL.
fn signing_in(url: &str) -> Value {
    let mut body = monitor("orders", url);
    body["xPath"] = json!("//p[@id='orders']");
    body["recurrenceInSeconds"] = json!(60);
    body["login"] = json!({
        "steps": [
            {"action": "click", "selector": "#signin"},
            {"action": "type", "selector": "#user", "value": "tea"},
            {"action": "type", "selector": "#password", "value": SignInSite::PASSWORD, "secret": true},
            {"action": "click", "selector": "//button[@id='login']"}
        ],
        "loggedInWhen": "#account"
    });
    body["notificationEndpoints"] = json!([{"type": "Url", "value": "tgram://123:BOTSECRET/42"}]);
    body
}

/// Waits (60 s at most) for an entry of `task` checked after `since` that signed in, and
/// gives it.
async fn signed_in(api: &Api, user: &User, task: &str, since: DateTime<Utc>) -> Value {
    let path = format!("/thirdparty/v1/data/list/{task}?count=50");
    let after = |e: &Value| {
        e["lastCheckTimestamp"]
            .as_str()
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
            .is_some_and(|t| t > since)
    };
    let mut newest = Value::Null;
    for _ in 0..600 {
        let reply = api.get(user, &path).await;
        let data = reply.ok()["data"].as_array().cloned().unwrap_or_default();
        newest = data.first().cloned().unwrap_or_default();
        if let Some(entry) = data.into_iter().find(|e| e["loggedIn"] == true && after(e)) {
            return entry;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{task}: no check signed in after {since} within 60 s; the newest: {newest}");
}

/// Waits (60 s at most) for a check of `task` after `since`, and gives its entry.
async fn checked_after(api: &Api, user: &User, task: &str, since: DateTime<Utc>) -> Value {
    let path = format!("/thirdparty/v1/data/list/{task}?count=1");
    for _ in 0..600 {
        let reply = api.get(user, &path).await;
        let newest = reply.ok()["data"][0].clone();
        let at = newest["lastCheckTimestamp"]
            .as_str()
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok());
        if at.is_some_and(|t| t > since) {
            return newest;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{task}: no check after {since} within 60 s");
}

/// A request with the passphrase header.
fn with_passphrase(
    request: reqwest::RequestBuilder,
    user: &User,
    passphrase: &str,
) -> reqwest::RequestBuilder {
    request
        .bearer_auth(&user.token)
        .header("X-Wachet-Passphrase", passphrase)
}

in_browser!(
    exported_secrets_come_back_only_with_their_passphrase,
    multi_thread
);
async fn exported_secrets_come_back_only_with_their_passphrase() {
    if !wachet::testing::chromium_or_skip() {
        return;
    }
    let site = SignInSite::start(100).await.unwrap();
    let began = Utc::now();
    let source = Api::start().await;
    let ann = source.user("ann@example.com").await;
    source.task(&ann, signing_in(&site.url("/"))).await;
    // A folder whose endpoint's URL is a secret too.
    let folder = json!({"name": "Shop", "notificationEndpoints":
                        [{"type": "Url", "value": "tgram://456:FOLDERSECRET/7"}]});
    source
        .post(&ann, "/thirdparty/v1/folder", folder)
        .await
        .ok();

    let export = |query: &'static str, passphrase: Option<&'static str>| {
        let (source, ann) = (&source, &ann);
        async move {
            let url = source.url(&format!("/thirdparty/v1/export{query}"));
            let request = match passphrase {
                Some(p) => with_passphrase(source.client().get(url), ann, p),
                None => source.client().get(url).bearer_auth(&ann.token),
            };
            source.raw(request).await
        }
    };
    export("?secrets=true", None)
        .await
        .field_error("passphrase", "X-Wachet-Passphrase");
    export("?secrets=true", Some("short"))
        .await
        .field_error("passphrase", "shorter than 8");
    let file = export("?secrets=true", Some("tea at five o'clock")).await;
    assert_eq!(file.status, 200, "{}", file.text);
    for secret in [SignInSite::PASSWORD, "BOTSECRET", "FOLDERSECRET", "sealed~"] {
        assert!(!file.text.contains(secret), "{secret} in {}", file.text);
    }
    assert_eq!(file.body["secrets"]["kdf"], "argon2id", "{}", file.text);
    let password = &file.body["monitors"][0]["login"]["steps"][2];
    assert!(
        password["value"]
            .as_str()
            .unwrap()
            .starts_with("passphrase~")
    );
    // Without the opt-in, as before: no value at all.
    let plain = export("", Some("tea at five o'clock")).await;
    assert!(plain.body.get("secrets").is_none());
    assert!(
        plain.body["monitors"][0]["login"]["steps"][2]
            .get("value")
            .is_none()
    );

    let target = Api::start_checking().await;
    let bob = target.user("bob@example.com").await;
    let import = |passphrase: Option<&'static str>| {
        let (target, bob, bytes) = (&target, &bob, file.text.clone());
        async move {
            let url = target.url("/thirdparty/v1/import");
            let request = target
                .client()
                .post(url)
                .header("Content-Type", "application/json")
                .body(bytes);
            let request = match passphrase {
                Some(p) => with_passphrase(request, bob, p),
                None => request.bearer_auth(&bob.token),
            };
            target.raw(request).await
        }
    };
    let sql = target.sql().await;
    let wrong = import(Some("tea at six o'clock")).await;
    assert_eq!(wrong.status, 400, "{}", wrong.text);
    assert!(
        wrong.text.contains("passphrase does not open"),
        "{}",
        wrong.text
    );
    assert!(!wrong.text.contains("six"), "{}", wrong.text);
    let missing = import(None).await;
    assert_eq!(missing.status, 400, "{}", missing.text);
    assert!(missing.text.contains("carries secrets"), "{}", missing.text);
    assert_eq!(sql.count("SELECT count(*) FROM tasks").await, 0);

    let report = import(Some("tea at five o'clock")).await;
    assert_eq!(report.status, 200, "{}", report.text);
    assert!(!report.text.contains("URL of a webhook"), "{}", report.text);
    assert!(!report.text.contains("not carried over"), "{}", report.text);
    // The folder names its endpoint again, its URL sealed with the target's key.
    let folders = target.get(&bob, "/thirdparty/v1/folder/list").await;
    let shop = folders.ok()["subfolders"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|f| f["name"] == "Shop")
        .cloned()
        .unwrap_or_else(|| panic!("no folder Shop: {}", folders.ok()));
    assert_eq!(shop["notificationEndpoints"][0]["type"], "Url", "{shop}");
    let clear = "SELECT count(*) FROM folders WHERE notification_endpoints LIKE '%FOLDERSECRET%'";
    assert_eq!(sql.count(clear).await, 0);
    let sealed = "SELECT count(*) FROM folders WHERE notification_endpoints LIKE '%sealed~%'";
    assert_eq!(sql.count(sealed).await, 1);
    let task = report.body["monitors"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let stored = "SELECT count(*) FROM tasks WHERE definition LIKE '%sealed~%' \
                  AND definition NOT LIKE '%correct horse%' AND definition NOT LIKE '%BOTSECRET%'";
    assert_eq!(sql.count(stored).await, 1);
    // The target's scheduler signs in with the password the file carried.
    let entry = signed_in(&target, &bob, &task, began).await;
    assert_eq!(entry["raw"], "Order 17: shipped", "{entry}");
    assert_eq!(site.sign_ins(), 1);
}

both!(rotating_the_key_seals_every_secret_again, multi_thread);
async fn rotating_the_key_seals_every_secret_again() {
    if !wachet::testing::chromium_or_skip() {
        return;
    }
    // A session lasts 3 page loads: the checks sign in again and again.
    let site = SignInSite::start(3).await.unwrap();
    let began = Utc::now();
    let api = Api::start_checking().await;
    let ann = api.user("ann@example.com").await;
    let user = ann.account.id.clone();
    let mut body = signing_in(&site.url("/"));
    body["recurrenceInSeconds"] = json!(1);
    let task = id(&api.task(&ann, body).await);
    let feed = api
        .post(&ann, "/thirdparty/v1/user/feeds", json!({"scope": "all"}))
        .await;
    let key = feed.ok()["url"]
        .as_str()
        .unwrap()
        .split("key=")
        .nth(1)
        .unwrap()
        .to_string();
    signed_in(&api, &ann, &task, began).await;
    // Refused while the service runs: it holds the key it read at start.
    let running = wachet_server::ops::keys::rotate(api.store.as_ref()).await;
    assert!(running.unwrap_err().to_string().contains("stop every"));

    let database = api.shutdown().await;
    let store = database.store().await;
    let sql = database.sql().await;
    let old = Sealer::new(&store.paging_secret().await.unwrap()).unwrap();
    let definition = "SELECT definition FROM tasks";
    let session = "SELECT sealed FROM task_sessions";
    let feed_key = "SELECT secret_sealed FROM feeds";
    let before = (sql.text(definition).await, sql.text(session).await);

    // A rotation that fails half way (the sessions' table refuses writes, after the monitors
    // were sealed again) changes nothing.
    let halt = match Backend::current() {
        Backend::Sqlite => vec![
            "CREATE TRIGGER halt BEFORE UPDATE ON task_sessions \
             BEGIN SELECT RAISE(ABORT, 'halted'); END",
        ],
        Backend::Postgres => vec![
            "CREATE FUNCTION halt() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'halted'; END \
             $$ LANGUAGE plpgsql",
            "CREATE TRIGGER halt BEFORE UPDATE ON task_sessions FOR EACH ROW \
             EXECUTE FUNCTION halt()",
        ],
    };
    for statement in halt {
        sql.execute(statement).await;
    }
    let halted = wachet_server::ops::keys::rotate(store.as_ref()).await;
    assert!(halted.unwrap_err().to_string().contains("halted"));
    assert_eq!(
        (sql.text(definition).await, sql.text(session).await),
        before
    );
    let unchanged = Sealer::new(&store.paging_secret().await.unwrap()).unwrap();
    assert!(unchanged.open(&before.1, &session_context(&task)).is_some());
    sql.execute(match Backend::current() {
        Backend::Sqlite => "DROP TRIGGER halt",
        Backend::Postgres => "DROP TRIGGER halt ON task_sessions",
    })
    .await;

    // Run again, it finishes: every secret opens with the new key and none with the old.
    let done = wachet_server::ops::keys::rotate(store.as_ref())
        .await
        .unwrap();
    assert_eq!(done.unopened, 0, "{done:?}");
    // The step's password, the bot's token, the feed's key and the session.
    assert_eq!(done.resealed, 4, "{done:?}");
    let new = Sealer::new(&store.paging_secret().await.unwrap()).unwrap();
    let stored: Value = serde_json::from_str(&sql.text(definition).await).unwrap();
    let password = stored["login"]["steps"][2]["value"].as_str().unwrap();
    assert_eq!(
        open_step(&new, &user, password).as_deref(),
        Some(SignInSite::PASSWORD)
    );
    assert_eq!(open_step(&old, &user, password), None);
    let sealed_session = sql.text(session).await;
    assert!(new.open(&sealed_session, &session_context(&task)).is_some());
    assert!(old.open(&sealed_session, &session_context(&task)).is_none());
    let feed_context = format!("{user}\n/feeds/all.atom");
    let sealed_key = sql.text(feed_key).await;
    assert_eq!(new.open(&sealed_key, &feed_context), Some(key));
    assert_eq!(old.open(&sealed_key, &feed_context), None);
    drop(store);

    // The service on the new key: its checks sign in again with the password sealed anew (a
    // check after that succeeds: a password that did not open would have been refused); the
    // bot's URL given back as shown is still this account's.
    let before = site.sign_ins();
    let api = Api::start_in(database, Setup::checking()).await;
    let shown = api.get(&ann, &format!("/thirdparty/v1/task/{task}")).await;
    let saved = api.task(&ann, shown.ok().clone()).await;
    assert_eq!(
        saved["notificationEndpoints"],
        shown.ok()["notificationEndpoints"]
    );
    for _ in 0..600 {
        if site.sign_ins() > before {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(site.sign_ins() > before, "no sign-in within 60 s");
    let entry = checked_after(&api, &ann, &task, Utc::now()).await;
    assert_eq!(entry["error"], Value::Null, "{entry}");
    assert_eq!(entry["raw"], "Order 17: shipped", "{entry}");
}
