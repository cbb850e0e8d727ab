//! Browser steps and logins on monitors: validated with errors naming the field, secrets
//! sealed and never read back, sessions kept per monitor by the scheduler, and a check that
//! signed in again saying so in its history.

use crate::{Api, User, id, monitor};
use serde_json::{Value, json};
use std::time::Duration;
use wachet::testing::SignInSite;

/// A monitor of `url` that signs in to the fixture site with `password` (a secret step).
fn signing_in(url: &str, password: &str) -> Value {
    let mut body = monitor("orders", url);
    body["xPath"] = json!("//p[@id='orders']");
    body["login"] = json!({
        "steps": [
            {"action": "click", "selector": "#signin"},
            {"action": "type", "selector": "#user", "value": "tea"},
            {"action": "type", "selector": "#password", "value": password, "secret": true},
            {"action": "click", "selector": "//button[@id='login']"}
        ],
        "loggedInWhen": "#account"
    });
    body["steps"] = json!([{"action": "click", "selector": "#accept", "optional": true}]);
    body
}

both!(steps_are_validated_and_secrets_never_come_back);
async fn steps_are_validated_and_secrets_never_come_back() {
    let api = Api::start().await;
    let user = api.user("ivy@example.com").await;
    let put = |body: Value| {
        let (api, user) = (&api, &user);
        async move { api.put(user, "/thirdparty/v1/task", body).await }
    };
    let with = |steps: Value| {
        let mut body = monitor("m", "https://example.com/");
        body["steps"] = steps;
        body
    };
    let many: Vec<Value> = (0..51).map(|_| json!({"action": "scroll"})).collect();
    put(with(json!(many)))
        .await
        .field_error("steps", "at most 50 steps");
    put(with(
        json!([{"action": "click", "selector": "button[id='go'"}]),
    ))
    .await
    .field_error("steps[0].selector", "neither XPath");
    put(with(json!([{"action": "wait", "value": "3600"}])))
        .await
        .field_error("steps[0].value", "at most 10 seconds");
    put(with(
        json!([{"action": "goto", "value": "file:///etc/passwd"}]),
    ))
    .await
    .field_error("steps[0].value", "scheme");
    put(with(
        json!([{"action": "type", "selector": "#q", "value": "x".repeat(20_000)}]),
    ))
    .await
    .field_error("steps[0].value", "at most 10000 characters");
    put(with(json!([{"action": "hover", "selector": "#q"}])))
        .await
        .field_error("steps[0].action", "unknown variant");

    let saved = api
        .task(
            &user,
            signing_in("https://example.com/orders", "hunter2 secret"),
        )
        .await;
    let task = id(&saved);
    let shown = json!({"action": "type", "selector": "#password", "secret": true});
    assert_eq!(saved["login"]["steps"][2], shown, "{saved}");
    assert_eq!(saved["dynamicContent"], true);
    let read = api.get(&user, &format!("/thirdparty/v1/task/{task}")).await;
    assert_eq!(read.ok()["login"]["steps"][2], shown);
    let sql = api.sql().await;
    let sealed = "SELECT count(*) FROM tasks WHERE definition LIKE '%sealed~%'";
    assert_eq!(sql.count(sealed).await, 1);
    assert_eq!(
        sql.count("SELECT count(*) FROM tasks WHERE definition LIKE '%hunter2%'")
            .await,
        0
    );
    // Saved again as read (no value): the stored secret is kept, still never shown.
    let again = api.task(&user, read.ok().clone()).await;
    assert_eq!(again["login"]["steps"][2], shown);
    assert_eq!(sql.count(sealed).await, 1);
    // Nor in the folder's listing, nor in the export.
    let listing = api.get(&user, "/thirdparty/v1/folder/list").await;
    assert!(!listing.text.contains("sealed~"), "{}", listing.text);
    assert!(listing.text.contains("\"secret\":true"), "{}", listing.text);
    let export = api.get(&user, "/thirdparty/v1/export").await;
    assert!(!export.text.contains("sealed~") && export.text.contains("#password"));
}

/// Waits (60 s at most) for at least `n` history entries of `task`, newest first.
async fn entries(api: &Api, user: &User, task: &str, n: usize) -> Vec<Value> {
    let path = format!("/thirdparty/v1/data/list/{task}?count=500");
    for _ in 0..600 {
        let data = api.get(user, &path).await.ok()["data"]
            .as_array()
            .unwrap()
            .clone();
        if data.len() >= n {
            return data;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{task}: fewer than {n} entries after 60 s");
}

both!(
    the_scheduler_signs_in_once_and_keeps_the_session,
    multi_thread
);
async fn the_scheduler_signs_in_once_and_keeps_the_session() {
    if !wachet::testing::chromium_or_skip() {
        return;
    }
    let site = SignInSite::start(100).await.unwrap();
    let wrong = SignInSite::start(100).await.unwrap();
    let api = Api::start_checking().await;
    let user = api.user("joe@example.com").await;
    let mut good = signing_in(&site.url("/"), SignInSite::PASSWORD);
    good["recurrenceInSeconds"] = json!(1);
    let task = id(&api.task(&user, good).await);
    let bad = id(&api
        .task(&user, signing_in(&wrong.url("/"), "wrong horse"))
        .await);

    let history = entries(&api, &user, &task, 4).await;
    let oldest = history.last().unwrap();
    assert_eq!(oldest["raw"], "Order 17: shipped", "{oldest}");
    assert_eq!(oldest["loggedIn"], true, "{oldest}");
    assert!(history[0].get("loggedIn").is_none(), "{}", history[0]);
    assert!(history.iter().all(|e| e["raw"] == "Order 17: shipped"));
    assert_eq!(site.sign_ins(), 1, "the session was not kept");
    let sql = api.sql().await;
    assert_eq!(sql.count("SELECT count(*) FROM task_sessions").await, 1);
    assert_eq!(
        sql.count("SELECT count(*) FROM task_sessions WHERE sealed LIKE '%cookies%'")
            .await,
        0
    );

    let failed = entries(&api, &user, &bad, 1).await;
    let error = failed[0]["error"].as_str().unwrap_or_default();
    assert!(
        error.starts_with("login: the login steps ran, but the page does not show `#account`"),
        "{error}"
    );
    assert!(!error.contains("wrong horse"));
}

// SQLite only, a real browser being slow: its store records a check that found the value
// unchanged by a shorter path, which must say too whether the check signed in again (the
// store test of unchanged values covers both backends).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_check_that_signed_in_again_says_so_in_its_entry() {
    if !wachet::testing::chromium_or_skip() {
        return;
    }
    // A session lasts 3 page loads: the checks sign in again now and then.
    let site = SignInSite::start(3).await.unwrap();
    let api = Api::start_checking().await;
    let user = api.user("joe@example.com").await;
    let mut body = signing_in(&site.url("/"), SignInSite::PASSWORD);
    body["recurrenceInSeconds"] = json!(1);
    let task = id(&api.task(&user, body).await);
    let history = entries(&api, &user, &task, 12).await;
    // Sign-ins counted now can only be ahead of the entries read before.
    let sign_ins = site.sign_ins();
    let said = history.iter().filter(|e| e["loggedIn"] == true).count();
    assert!(sign_ins >= 2, "the session ran out: {sign_ins}");
    assert!(
        said >= 2 && said <= sign_ins,
        "{said} entries say they signed in, of {sign_ins} sign-ins: {history:?}"
    );
}
