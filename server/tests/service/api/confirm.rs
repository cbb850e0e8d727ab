//! Confirmation before notifying, with the real scheduler and pages driven by request count: a
//! value shown for one request raises nothing, a real change raises exactly one NotEq once the
//! early check confirms it (the history holding every check as seen), a failure that clears
//! raises nothing, one that lasts raises one Error and one recovery, and a service stopped
//! between a changed check and its confirmation confirms after its restart.

use crate::{Api, Backend, Database, Setup, User, id};
use serde_json::{Value, json};
use std::time::Duration;
use wachet::testing::{FixtureServer, Reply};

/// The scheduler with early checks 1 s after a check that waits for confirmation and no quick
/// samples, and an engine whose fetches give up after 2 s.
async fn start_in(database: Database) -> Api {
    let mut setup = Setup::checking();
    setup.engine = setup.engine.total_timeout(Duration::from_secs(2));
    setup.service.schedule.confirm_after = Duration::from_secs(1);
    // These pages answer by request count from the first check on; the quick samples a new
    // monitor takes to learn its noise (tests/service/api/noise.rs) would take the 2nd and 3rd.
    setup.service.schedule.noise_samples = 0;
    Api::start_in(database, setup).await
}

async fn start() -> Api {
    start_in(Database::fresh(Backend::current()).await).await
}

/// A monitor of `url` with Error and NotEq alerts, checked every `every` seconds.
async fn watched(api: &Api, user: &User, url: &str, every: i32) -> String {
    let body = json!({"name": "watched", "url": url, "xPath": "//p", "recurrenceInSeconds": every,
                      "alerts": [{"type": "Error"}, {"type": "NotEq"}]});
    id(&api.task(user, body).await)
}

/// The monitor's history, oldest first, once it holds at least `n` checks (20 s at most).
async fn checks(api: &Api, user: &User, task: &str, n: usize) -> Vec<Value> {
    let path = format!("/thirdparty/v1/data/list/{task}?count=500");
    for _ in 0..200 {
        let mut data = api.get(user, &path).await.ok()["data"]
            .as_array()
            .unwrap()
            .clone();
        if data.len() >= n {
            data.reverse();
            return data;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("fewer than {n} checks of {task} after 20 s");
}

/// What each check found: its value, or `!` and its error.
fn seen(history: &[Value]) -> Vec<String> {
    history
        .iter()
        .map(|e| match e["error"].as_str() {
            Some(error) => format!("!{error}"),
            None => e["raw"].as_str().unwrap_or("").to_string(),
        })
        .collect()
}

async fn notifications(api: &Api, user: &User, task: &str) -> Vec<Value> {
    let path = format!("/thirdparty/v1/notification/list?taskId={task}&html=true");
    let mut data = api.get(user, &path).await.ok()["data"]
        .as_array()
        .unwrap()
        .clone();
    data.reverse();
    data
}

fn page(text: &str) -> Reply {
    Reply::html(format!("<p>{text}</p>"))
}

/// Serves `path` with `replies` in turn, counted from now; the last one again after them.
fn in_turn(site: &FixtureServer, path: &str, replies: Vec<Reply>) {
    site.set_counted(path, move |n| {
        let last = replies.len().saturating_sub(1);
        replies[(n - 1).min(last)].clone()
    });
}

both!(a_value_shown_for_one_request_raises_nothing, multi_thread);
async fn a_value_shown_for_one_request_raises_nothing() {
    let site = FixtureServer::builder().start().await.unwrap();
    in_turn(&site, "/p", vec![page("A"), page("B"), page("A")]);
    let api = start().await;
    let user = api.user("ann@example.com").await;
    let task = watched(&api, &user, &site.url("/p"), 1).await;

    let history = checks(&api, &user, &task, 5).await;
    assert_eq!(seen(&history[..3]), ["A", "B", "A"], "every check as seen");
    assert_eq!(notifications(&api, &user, &task).await, Vec::<Value>::new());
}

both!(a_real_change_raises_one_not_eq_once_confirmed, multi_thread);
async fn a_real_change_raises_one_not_eq_once_confirmed() {
    let site = FixtureServer::builder().start().await.unwrap();
    in_turn(&site, "/p", vec![page("A"), page("B")]);
    let api = start().await;
    let user = api.user("bo@example.com").await;
    let task = watched(&api, &user, &site.url("/p"), 1).await;

    let history = checks(&api, &user, &task, 5).await;
    assert_eq!(seen(&history[..3]), ["A", "B", "B"]);
    let raised = notifications(&api, &user, &task).await;
    let kinds: Vec<&str> = raised.iter().map(|n| n["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["NotEq"], "one notification for one change");
    assert_eq!(raised[0]["current"], "B");
    assert_eq!(raised[0]["comparand"], "A");
    // Raised by the confirming check, and it says when the change was first seen.
    let at = |v: &Value| v.as_str().unwrap().parse::<chrono::DateTime<chrono::Utc>>();
    let first_b = at(&history[1]["lastCheckTimestamp"]).unwrap();
    let second_b = at(&history[2]["lastCheckTimestamp"]).unwrap();
    assert!(at(&raised[0]["timestamp"]).unwrap() >= second_b);
    let html = raised[0]["html"].as_str().unwrap();
    let first = first_b
        .format("First seen at %Y-%m-%d %H:%M:%S UTC")
        .to_string();
    assert!(html.contains(&first), "{html}");
}

both!(a_failure_that_clears_raises_nothing, multi_thread);
async fn a_failure_that_clears_raises_nothing() {
    let site = FixtureServer::builder().start().await.unwrap();
    let slow = page("A").delay(Duration::from_secs(4));
    in_turn(
        &site,
        "/p",
        vec![page("A"), Reply::new(500), page("A"), slow, page("A")],
    );
    let api = start().await;
    let user = api.user("cy@example.com").await;
    let task = watched(&api, &user, &site.url("/p"), 1).await;

    let history = checks(&api, &user, &task, 6).await;
    let failed: Vec<bool> = history[..5].iter().map(|e| !e["error"].is_null()).collect();
    assert_eq!(failed, [false, true, false, true, false], "{history:?}");
    assert_eq!(notifications(&api, &user, &task).await, Vec::<Value>::new());
}

both!(
    a_lasting_failure_raises_one_error_after_two_checks_and_one_recovery,
    multi_thread
);
async fn a_lasting_failure_raises_one_error_after_two_checks_and_one_recovery() {
    let site = FixtureServer::builder().start().await.unwrap();
    in_turn(&site, "/p", vec![page("A"), Reply::new(503)]);
    let api = start().await;
    let user = api.user("di@example.com").await;
    let task = watched(&api, &user, &site.url("/p"), 1).await;

    let history = checks(&api, &user, &task, 5).await;
    let raised = notifications(&api, &user, &task).await;
    assert_eq!(raised.len(), 1, "{raised:?}");
    assert_eq!(raised[0]["type"], "Error");
    assert!(raised[0]["error"].as_str().unwrap().contains("503"));
    let at = |v: &Value| v.as_str().unwrap().parse::<chrono::DateTime<chrono::Utc>>();
    let second_failure = at(&history[2]["lastCheckTimestamp"]).unwrap();
    assert!(at(&raised[0]["timestamp"]).unwrap() >= second_failure);

    in_turn(&site, "/p", vec![page("A")]);
    let n = checks(&api, &user, &task, 1).await.len();
    let history = checks(&api, &user, &task, n + 2).await;
    assert!(history.last().unwrap()["error"].is_null());
    let raised = notifications(&api, &user, &task).await;
    let kinds: Vec<(&str, bool)> = raised
        .iter()
        .map(|n| (n["type"].as_str().unwrap(), n["error"].is_null()))
        .collect();
    assert_eq!(
        kinds,
        [("Error", false), ("Error", true)],
        "then one recovered"
    );
}

both!(
    error_after_failures_is_a_validated_setting_of_the_monitor,
    multi_thread
);
async fn error_after_failures_is_a_validated_setting_of_the_monitor() {
    let api = start().await;
    let user = api.user("ed@example.com").await;
    for bad in [0, 11, -1] {
        let body = json!({"url": "https://example.com/", "errorAfterFailures": bad});
        api.put(&user, "/thirdparty/v1/task", body)
            .await
            .field_error("errorAfterFailures", "from 1 to 10");
    }
    let body = json!({"url": "https://example.com/", "errorAfterFailures": 3});
    let task = id(&api.task(&user, body).await);
    let stored = api.get(&user, &format!("/thirdparty/v1/task/{task}")).await;
    assert_eq!(stored.ok()["errorAfterFailures"], 3);
    // Documented as an extension of ClientTask.
    let doc: Value = api
        .client()
        .get(api.url("/thirdparty/v1/openapi.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let field = &doc["components"]["schemas"]["Monitor"]["properties"]["errorAfterFailures"];
    let description = field["description"].as_str().unwrap_or_default();
    assert!(description.starts_with("Extension:"), "{field}");
}

both!(
    a_change_seen_before_a_crash_is_confirmed_after_the_restart,
    multi_thread
);
async fn a_change_seen_before_a_crash_is_confirmed_after_the_restart() {
    let site = FixtureServer::builder().start().await.unwrap();
    in_turn(&site, "/p", vec![page("A"), page("B")]);
    let api = start().await;
    let user = api.user("flo@example.com").await;
    // Regular checks 3 s apart, the confirmation 1 s after a change: the service stops within
    // a tenth of a second of the changed check, before its confirmation.
    let task = watched(&api, &user, &site.url("/p"), 3).await;
    checks(&api, &user, &task, 2).await;
    let before = notifications(&api, &user, &task).await;
    let database = api.crash();
    assert_eq!(
        before,
        Vec::<Value>::new(),
        "the change waits for its confirmation"
    );
    assert_eq!(site.hits("/p"), 2, "stopped before the confirming check");
    tokio::time::sleep(Duration::from_millis(1500)).await;

    let api = start_in(database).await;
    let history = checks(&api, &user, &task, 3).await;
    assert_eq!(seen(&history[..3]), ["A", "B", "B"]);
    let mut raised = Vec::new();
    for _ in 0..50 {
        raised = notifications(&api, &user, &task).await;
        if !raised.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let kinds: Vec<&str> = raised.iter().map(|n| n["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["NotEq"]);
    let at = |v: &Value| v.as_str().unwrap().parse::<chrono::DateTime<chrono::Utc>>();
    let confirmed = at(&history[2]["lastCheckTimestamp"]).unwrap();
    assert!(
        at(&raised[0]["timestamp"]).unwrap() >= confirmed,
        "raised after the restart"
    );
    // Later checks find B again: still exactly one.
    checks(&api, &user, &task, 5).await;
    assert_eq!(notifications(&api, &user, &task).await.len(), 1);
}
