//! The scheduler beside the API: monitors are checked on their schedule against a real fixture
//! server, each check lands in the history, paused monitors are never checked, and a Portal
//! check stores every page.

use crate::{Api, User, id};
use serde_json::{Value, json};
use std::time::Duration;
use wachet::testing::FixtureServer;

/// Waits (15 s at most) until `path` lists at least `n` history entries, and returns them.
async fn history_of(api: &Api, user: &User, path: &str, n: usize) -> Vec<Value> {
    entries_where(api, user, path, n, |_| true).await
}

both!(
    monitors_are_checked_on_schedule_and_paused_ones_never,
    multi_thread
);
async fn monitors_are_checked_on_schedule_and_paused_ones_never() {
    let site = FixtureServer::builder()
        .page("/tea", "<h1>Tea</h1><p class=price>3.50 EUR</p>")
        .page("/paused", "<p>never fetched</p>")
        .start()
        .await
        .unwrap();
    let api = Api::start_checking().await;
    let user = api.user("ann@example.com").await;
    let body = json!({"name": "tea", "url": site.url("/tea"), "xPath": "//p[@class='price']", "recurrenceInSeconds": 1});
    let task = id(&api.task(&user, body).await);
    let paused = json!({"name": "paused", "url": site.url("/paused"), "recurrenceInSeconds": 0});
    api.task(&user, paused).await;
    let path = format!("/thirdparty/v1/data/list/{task}?returnDiff=true");

    let first = history_of(&api, &user, &path, 1).await;
    assert_eq!(first[0]["raw"], "3.50 EUR");
    let monitor = api
        .get(&user, &format!("/thirdparty/v1/task/{task}"))
        .await
        .ok()
        .clone();
    assert_eq!(
        monitor["data"]["raw"], "3.50 EUR",
        "the latest check is the monitor's data"
    );

    // The page changes; a later check sees it, and the diff shows the change.
    site.set(
        "/tea",
        wachet::testing::Reply::html("<h1>Tea</h1><p class=price>3.90 EUR</p>"),
    );
    let mut changed = None;
    for _ in 0..100 {
        let entries = history_of(&api, &user, &path, 1).await;
        if entries[0]["raw"] == "3.90 EUR" {
            changed = Some(entries);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let entries = changed.expect("the change is seen within 10 s");
    let newest = &entries[0];
    assert_eq!(
        newest["valueChangedTimestamp"],
        newest["lastCheckTimestamp"]
    );
    assert!(newest["diff"].to_string().contains("3.90"), "{newest}");
    let times: Vec<chrono::DateTime<chrono::Utc>> = entries
        .iter()
        .map(|e| e["lastCheckTimestamp"].as_str().unwrap().parse().unwrap())
        .collect();
    assert!(
        times.windows(2).all(|w| w[0] > w[1]),
        "one entry a check: {times:?}"
    );
    assert!(site.hits("/tea") >= 2);
    assert_eq!(site.hits("/paused"), 0, "a paused monitor is never checked");
}

both!(
    a_failing_check_is_stored_as_an_error_and_marks_the_folder_count,
    multi_thread
);
async fn a_failing_check_is_stored_as_an_error_and_marks_the_folder_count() {
    let site = FixtureServer::builder()
        .reply(
            "/gone",
            wachet::testing::Reply::new(404).delay(Duration::from_secs(1)),
        )
        .start()
        .await
        .unwrap();
    let api = Api::start_checking().await;
    let user = api.user("bob@example.com").await;
    let folder = api.folder(&user, "broken", None).await;
    let body = json!({"url": site.url("/gone"), "recurrenceInSeconds": 60, "folderId": folder});
    let task = id(&api.task(&user, body).await);
    // Listed while the check is still waiting for its answer: a listing kept from now on
    // must not outlive the check's failure.
    let before = api
        .get(&user, "/thirdparty/v1/folder/list")
        .await
        .ok()
        .clone();
    assert_eq!(before["subfolders"][0]["failedCount"], 0, "{before}");
    let entries = history_of(&api, &user, &format!("/thirdparty/v1/data/list/{task}"), 1).await;
    assert!(
        entries[0]["error"].as_str().unwrap().contains("404"),
        "{}",
        entries[0]
    );
    let root = api
        .get(&user, "/thirdparty/v1/folder/list")
        .await
        .ok()
        .clone();
    assert_eq!(root["subfolders"][0]["failedCount"], 1);
}

both!(
    a_portal_check_stores_every_page_with_its_own_history,
    multi_thread
);
async fn a_portal_check_stores_every_page_with_its_own_history() {
    let site = FixtureServer::builder()
        .page("/", "<a href=/a>A</a> <a href=/b>B</a> home")
        .page("/a", "<p>page a</p>")
        .page("/b", "<p>page b</p>")
        .start()
        .await
        .unwrap();
    let api = Api::start_checking().await;
    let user = api.user("cy@example.com").await;
    let body = json!({"url": site.url("/"), "jobType": "Portal", "crawlingDepth": 1, "recurrenceInSeconds": 3600});
    let task = id(&api.task(&user, body).await);
    let own = history_of(&api, &user, &format!("/thirdparty/v1/data/list/{task}"), 1).await;
    let urls = own[0]["raw"].as_str().unwrap();
    assert_eq!(urls.lines().count(), 3, "{urls}");
    let pages = api
        .get(&user, &format!("/thirdparty/v1/task/{task}/pages"))
        .await
        .ok()
        .clone();
    let pages = pages.as_array().unwrap();
    assert_eq!(pages.len(), 3);
    let a = pages
        .iter()
        .find(|p| p["url"].as_str().unwrap().ends_with("/a"))
        .unwrap();
    assert_eq!(a["data"]["raw"], "page a");
    let history = api
        .get(&user, &format!("/thirdparty/v1/data/list/{}", id(a)))
        .await
        .ok()
        .clone();
    assert_eq!(history["data"][0]["raw"], "page a");
}

/// Waits (40 s at most: a slow page's first check fetches it three times, the quick samples
/// that learn its noise included) until `path` lists at least `n` entries for which `matches`
/// holds, and returns the whole list, newest first.
async fn entries_where(
    api: &Api,
    user: &User,
    path: &str,
    n: usize,
    matches: impl Fn(&Value) -> bool,
) -> Vec<Value> {
    let sep = if path.contains('?') { '&' } else { '?' };
    for _ in 0..400 {
        let reply = api.get(user, &format!("{path}{sep}count=500")).await;
        let data = reply.ok()["data"].as_array().unwrap().clone();
        if data.iter().filter(|e| matches(e)).count() >= n {
            return data;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{path}: fewer than {n} matching entries after 40 s");
}

/// Waits (15 s at most) until the monitor's notifications number at least `n`, newest first.
async fn notifications_of(api: &Api, user: &User, task: &str, n: usize) -> Vec<Value> {
    let path = format!("/thirdparty/v1/notification/list?taskId={task}&html=true");
    for _ in 0..150 {
        let data = api.get(user, &path).await.ok()["data"]
            .as_array()
            .unwrap()
            .clone();
        if data.len() >= n {
            return data;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("fewer than {n} notifications after 15 s");
}

both!(
    changes_failures_and_recoveries_raise_notifications_once,
    multi_thread
);
async fn changes_failures_and_recoveries_raise_notifications_once() {
    use wachet::testing::Reply;
    let site = FixtureServer::builder()
        .page("/tea", "<p class=price>3.50 EUR</p>")
        .start()
        .await
        .unwrap();
    let api = Api::start_checking().await;
    let user = api.user("dee@example.com").await;
    let body = json!({
        "name": "Tea", "url": site.url("/tea"), "xPath": "//p[@class='price']", "recurrenceInSeconds": 1,
        "alerts": [{"type": "NotEq"}, {"type": "Error"}, {"type": "Contains", "value": "in stock"}]
    });
    let task = id(&api.task(&user, body).await);
    let history = format!("/thirdparty/v1/data/list/{task}");
    // The first checks set the baseline and raise nothing.
    history_of(&api, &user, &history, 2).await;
    let none = api
        .get(
            &user,
            &format!("/thirdparty/v1/notification/list?taskId={task}"),
        )
        .await;
    assert_eq!(none.ok()["data"], json!([]));

    site.set("/tea", Reply::html("<p class=price>3.90 EUR in stock</p>"));
    let raised = notifications_of(&api, &user, &task, 2).await;
    let kinds: Vec<&str> = raised.iter().map(|n| n["type"].as_str().unwrap()).collect();
    assert!(
        kinds.contains(&"NotEq") && kinds.contains(&"Contains"),
        "{kinds:?}"
    );
    let changed = raised.iter().find(|n| n["type"] == "NotEq").unwrap();
    assert_eq!(changed["current"], "3.90 EUR in stock");
    assert_eq!(changed["comparand"], "3.50 EUR");
    assert_eq!(changed["taskName"], "Tea");
    let html = changed["html"].as_str().unwrap();
    assert!(
        html.contains("<del") && html.contains("3.50") && html.contains("<ins"),
        "{html}"
    );
    let content = api
        .get(
            &user,
            &format!("/thirdparty/v1/notification/{}", id(changed)),
        )
        .await
        .ok()
        .clone();
    assert_eq!(content["jobType"], "SinglePage");
    assert_eq!(content["syntheticExpression"], "content changed");
    assert_eq!(content["url"], site.url("/tea"));

    // The page fails: one Error, however many failing checks follow; then one recovery.
    site.set("/tea", Reply::new(503));
    let with_error = notifications_of(&api, &user, &task, 3).await;
    assert_eq!(with_error[0]["type"], "Error");
    assert!(
        with_error[0]["error"].as_str().unwrap().contains("503"),
        "{}",
        with_error[0]
    );
    // Several failing checks later, still one Error.
    entries_where(&api, &user, &history, 3, |e| !e["error"].is_null()).await;
    assert_eq!(notifications_of(&api, &user, &task, 3).await.len(), 3);
    site.set("/tea", Reply::html("<p class=price>3.90 EUR in stock</p>"));
    let recovered = notifications_of(&api, &user, &task, 4).await;
    assert_eq!(recovered[0]["type"], "Error");
    assert_eq!(recovered[0]["error"], Value::Null, "recovered");
    // Nothing else: the value is the one before the failure, and still contains the operand.
    // Two successful checks after the recovery's raise nothing more.
    let recovery_at: chrono::DateTime<chrono::Utc> =
        recovered[0]["timestamp"].as_str().unwrap().parse().unwrap();
    entries_where(&api, &user, &history, 3, |e| {
        let at: chrono::DateTime<chrono::Utc> =
            e["lastCheckTimestamp"].as_str().unwrap().parse().unwrap();
        e["error"].is_null() && at >= recovery_at
    })
    .await;
    let all = notifications_of(&api, &user, &task, 4).await;
    assert_eq!(all.len(), 4, "{all:#?}");
}

both!(a_new_page_raises_added_on_a_portal_monitor, multi_thread);
async fn a_new_page_raises_added_on_a_portal_monitor() {
    use wachet::testing::Reply;
    let site = FixtureServer::builder()
        .page("/", "<a href=/a>A</a> home")
        .page("/a", "<p>page a</p>")
        .page("/b", "<p>page b</p>")
        .start()
        .await
        .unwrap();
    let api = Api::start_checking().await;
    let user = api.user("eve@example.com").await;
    let body = json!({
        "url": site.url("/"), "jobType": "Portal", "crawlingDepth": 1, "recurrenceInSeconds": 1,
        "alerts": [{"type": "Added"}, {"type": "NotEq"}]
    });
    let task = id(&api.task(&user, body).await);
    history_of(&api, &user, &format!("/thirdparty/v1/data/list/{task}"), 2).await;
    site.set("/", Reply::html("<a href=/a>A</a> <a href=/b>B</a> home"));
    let raised = notifications_of(&api, &user, &task, 2).await;
    let added = raised
        .iter()
        .find(|n| n["type"] == "Added")
        .expect("Added raised");
    let content = api
        .get(&user, &format!("/thirdparty/v1/notification/{}", id(added)))
        .await
        .ok()
        .clone();
    assert_eq!(content["jobType"], "Portal");
    assert_eq!(content["syntheticExpression"], "1 page added");
    // A page's own change raises NotEq for that page.
    site.set("/a", Reply::html("<p>page a, changed</p>"));
    let mut page_change = None;
    for _ in 0..150 {
        let all = notifications_of(&api, &user, &task, 1).await;
        page_change = all
            .into_iter()
            .find(|n| n["url"].as_str().unwrap_or("").ends_with("/a"));
        if page_change.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let page_change = page_change.expect("the page's NotEq");
    assert_eq!(page_change["type"], "NotEq");
    assert_eq!(page_change["current"], "page a, changed");
    let content = api
        .get(
            &user,
            &format!("/thirdparty/v1/notification/{}", id(&page_change)),
        )
        .await
        .ok()
        .clone();
    assert_eq!(content["jobType"], "PortalPage");
}

both!(
    a_check_of_a_definition_edited_meanwhile_is_dropped,
    multi_thread
);
async fn a_check_of_a_definition_edited_meanwhile_is_dropped() {
    use wachet::testing::Reply;
    let page = "<p class=a>old choice</p><p class=b>new choice</p>";
    let site = FixtureServer::builder()
        .reply("/slow", Reply::html(page).delay(Duration::from_secs(3)))
        .start()
        .await
        .unwrap();
    let api = Api::start_checking().await;
    let user = api.user("fay@example.com").await;
    let mut body = json!({"url": site.url("/slow"), "xPath": "//p[@class='a']", "recurrenceInSeconds": 60,
                          "alerts": [{"type": "NotEq"}]});
    let task = id(&api.task(&user, body.clone()).await);
    // The first check is in flight (its page answers in 3 s) when the monitor is edited.
    for _ in 0..100 {
        if site.hits("/slow") >= 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    body["id"] = json!(task);
    body["xPath"] = json!("//p[@class='b']");
    api.put(&user, "/thirdparty/v1/task", body).await.ok();
    let entries = history_of(&api, &user, &format!("/thirdparty/v1/data/list/{task}"), 1).await;
    // Let the edited definition's own check land too, then look at all of it.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let all = api
        .get(&user, &format!("/thirdparty/v1/data/list/{task}"))
        .await
        .ok()["data"]
        .clone();
    assert_eq!(entries[0]["raw"], "new choice");
    for entry in all.as_array().unwrap() {
        assert_eq!(
            entry["raw"], "new choice",
            "the old definition's result was stored: {all}"
        );
    }
    // And no notification compares the two definitions.
    let notes = api
        .get(
            &user,
            &format!("/thirdparty/v1/notification/list?taskId={task}"),
        )
        .await;
    assert_eq!(notes.ok()["data"], json!([]));
}

both!(
    a_dynamic_content_monitor_is_checked_in_chromium,
    multi_thread
);
async fn a_dynamic_content_monitor_is_checked_in_chromium() {
    if !wachet::testing::chromium_or_skip() {
        return;
    }
    let page = "<div id=out>loading</div><script>setTimeout(() => \
                document.getElementById('out').textContent = 'rendered 42', 100)</script>";
    let site = FixtureServer::builder()
        .page("/js", page)
        .start()
        .await
        .unwrap();
    let api = Api::start_checking().await;
    let user = api.user("gil@example.com").await;
    let body = json!({"url": site.url("/js"), "xPath": "//div[@id='out']", "dynamicContent": true,
                      "recurrenceInSeconds": 3600});
    let task = id(&api.task(&user, body).await);
    let entries = history_of(&api, &user, &format!("/thirdparty/v1/data/list/{task}"), 1).await;
    assert_eq!(entries[0]["raw"], "rendered 42", "{}", entries[0]);
}

both!(
    metrics_count_checks_and_deliveries_and_show_no_secret,
    multi_thread
);
async fn metrics_count_checks_and_deliveries_and_show_no_secret() {
    let site = FixtureServer::builder()
        .page("/m", "<p>m</p>")
        .start()
        .await
        .unwrap();
    let api = Api::start_checking().await;
    let user = api.user("hal@example.com").await;
    let body = json!({"url": site.url("/m"), "recurrenceInSeconds": 3600});
    let task = id(&api.task(&user, body).await);
    history_of(&api, &user, &format!("/thirdparty/v1/data/list/{task}"), 1).await;
    let reply = api.raw(api.client().get(api.url("/metrics"))).await;
    assert_eq!(reply.status, 200);
    assert!(
        reply.content_type().starts_with("text/plain"),
        "{}",
        reply.content_type()
    );
    let text = &reply.text;
    let value = |line: &str| -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix(line))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {line} in\n{text}"))
    };
    assert!(value("wachet_checks_total{outcome=\"ok\"}") >= 1.0);
    assert!(value("wachet_check_duration_seconds_count") >= 1.0);
    assert!(value("wachet_check_lateness_seconds_bucket{le=\"+Inf\"}") >= 1.0);
    value("wachet_browser_checks_in_flight");
    value("wachet_deliveries{state=\"pending\"}");
    let secret = api
        .get(&user, "/thirdparty/v1/user/notificationEndpoints")
        .await
        .ok()["webhookSecret"]
        .as_str()
        .unwrap()
        .to_string();
    for hidden in [
        &user.token,
        &user.account.api_key,
        &user.account.password,
        &secret,
    ] {
        assert!(!text.contains(hidden.as_str()), "a secret in the metrics");
    }
}

/// Pauses a monitor and waits out a check that may be in flight, so its history and
/// notifications can be compared at rest.
async fn pause(api: &Api, user: &User, mut body: Value, task: &str) {
    body["id"] = json!(task);
    body["recurrenceInSeconds"] = json!(0);
    api.put(user, "/thirdparty/v1/task", body).await.ok();
    tokio::time::sleep(Duration::from_millis(1_500)).await;
}

async fn all_notifications(api: &Api, user: &User, task: &str) -> Vec<Value> {
    api.get(
        user,
        &format!("/thirdparty/v1/notification/list?taskId={task}&count=500"),
    )
    .await
    .ok()["data"]
        .as_array()
        .unwrap()
        .clone()
}

both!(
    a_monitor_deleted_while_its_check_is_in_flight_leaves_nothing_and_others_go_on,
    multi_thread
);
async fn a_monitor_deleted_while_its_check_is_in_flight_leaves_nothing_and_others_go_on() {
    use wachet::testing::Reply;
    let site = FixtureServer::builder()
        .reply(
            "/slow",
            Reply::html("<p>slow</p>").delay(Duration::from_secs(3)),
        )
        .page("/fast", "<p>fast</p>")
        .start()
        .await
        .unwrap();
    let api = Api::start_checking().await;
    let user = api.user("gil@example.com").await;
    let doomed = id(&api
        .task(
            &user,
            json!({"url": site.url("/slow"), "recurrenceInSeconds": 1, "alerts": [{"type": "Error"}]}),
        )
        .await);
    let other = id(&api
        .task(
            &user,
            json!({"url": site.url("/fast"), "recurrenceInSeconds": 1}),
        )
        .await);
    for _ in 0..100 {
        if site.hits("/slow") >= 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(site.hits("/slow"), 1, "the check is in flight");
    api.delete(&user, &format!("/thirdparty/v1/task/{doomed}"))
        .await
        .ok();
    // The check ends after the delete; the other monitor goes on being checked.
    let before = site.hits("/fast");
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert!(site.hits("/fast") >= before + 2, "the scheduler goes on");
    let gone = api
        .get(&user, &format!("/thirdparty/v1/task/{doomed}"))
        .await;
    assert_eq!(gone.status, 404);
    let db = api.sql().await;
    for table in ["entries", "notifications"] {
        let n = db
            .count(&format!(
                "SELECT count(*) FROM {table} WHERE task_id = '{doomed}'"
            ))
            .await;
        assert_eq!(n, 0, "{table} of the deleted monitor");
    }
    assert_eq!(site.hits("/slow"), 1, "never checked again");
    history_of(&api, &user, &format!("/thirdparty/v1/data/list/{other}"), 2).await;
}

both!(
    a_page_alternating_between_two_values_on_every_request_raises_nothing,
    multi_thread
);
async fn a_page_alternating_between_two_values_on_every_request_raises_nothing() {
    // Every request gets the other of two values: no value lasts for two checks in a row, so
    // no change is ever confirmed (wachet::alerts::confirm), while the history keeps every
    // check as seen.
    let hits = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let app = axum::Router::new().route(
        "/flip",
        axum::routing::get(move || {
            let n = hits.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let value = if n.is_multiple_of(2) { "red" } else { "blue" };
            async move { axum::response::Html(format!("<p>{value}</p>")) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/flip", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let api = Api::start_checking().await;
    let user = api.user("hob@example.com").await;
    let body = json!({"url": url, "recurrenceInSeconds": 1, "alerts": [{"type": "NotEq"}]});
    let task = id(&api.task(&user, body.clone()).await);
    let history = format!("/thirdparty/v1/data/list/{task}");
    history_of(&api, &user, &history, 5).await;
    pause(&api, &user, body, &task).await;

    let entries = history_of(&api, &user, &history, 5).await;
    let values: Vec<&str> = entries
        .iter()
        .rev()
        .map(|e| e["raw"].as_str().unwrap())
        .collect();
    let changes = values.windows(2).filter(|w| w[0] != w[1]).count();
    assert_eq!(changes, values.len() - 1, "it alternates: {values:?}");
    let notes = all_notifications(&api, &user, &task).await;
    assert_eq!(notes, Vec::<Value>::new(), "a flip-flop is never confirmed");
    // Each check after the first changed the value.
    for entry in &entries[..entries.len() - 1] {
        assert_eq!(entry["valueChangedTimestamp"], entry["lastCheckTimestamp"]);
    }
    // Two values, stored once each however many checks found them.
    let stored = api.sql().await.count("SELECT count(*) FROM contents").await;
    assert_eq!(stored, 2);
}

both!(a_page_failing_every_check_raises_one_error, multi_thread);
async fn a_page_failing_every_check_raises_one_error() {
    use wachet::testing::Reply;
    let site = FixtureServer::builder()
        .reply("/down", Reply::new(503))
        .start()
        .await
        .unwrap();
    let api = Api::start_checking().await;
    let user = api.user("ida@example.com").await;
    let body = json!({"url": site.url("/down"), "recurrenceInSeconds": 1,
                      "alerts": [{"type": "Error"}, {"type": "NotEq"}]});
    let task = id(&api.task(&user, body.clone()).await);
    let history = format!("/thirdparty/v1/data/list/{task}");
    // Failures raise once they lasted the early check's delay (5 s): eight checks a second
    // apart outlast it.
    entries_where(&api, &user, &history, 8, |e| !e["error"].is_null()).await;
    pause(&api, &user, body, &task).await;
    let entries = history_of(&api, &user, &history, 8).await;
    assert!(
        entries.iter().all(|e| !e["error"].is_null()),
        "{entries:#?}"
    );
    let notes = all_notifications(&api, &user, &task).await;
    assert_eq!(
        notes.len(),
        1,
        "one failure edge, one notification: {notes:#?}"
    );
    assert_eq!(notes[0]["type"], "Error");
    assert!(notes[0]["error"].as_str().unwrap().contains("503"));
}

/// Another process takes the database's write lock for three seconds: on SQLite the file's
/// (`BEGIN EXCLUSIVE` from Python), on PostgreSQL every table's against writes (`LOCK TABLE ...
/// IN EXCLUSIVE MODE`: plain reads go on). Returns once the lock is held; the task ends when it
/// was released as it should be.
async fn lock_for_three_seconds(api: &Api) -> tokio::task::JoinHandle<()> {
    use tokio::io::AsyncBufReadExt;
    match &api.database {
        crate::Database::Sqlite(_) => {
            let script = "import sqlite3, sys, time\n\
                          c = sqlite3.connect(sys.argv[1], isolation_level=None)\n\
                          c.execute('BEGIN EXCLUSIVE')\n\
                          print('locked', flush=True)\n\
                          time.sleep(3)\n\
                          c.execute('COMMIT')\n";
            let mut locker = tokio::process::Command::new("python3")
                .args(["-c", script])
                .arg(api.db_path())
                .stdout(std::process::Stdio::piped())
                .kill_on_drop(true)
                .spawn()
                .unwrap();
            let mut lines = tokio::io::BufReader::new(locker.stdout.take().unwrap()).lines();
            let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
                .await
                .expect("the lock within 10 s")
                .unwrap();
            assert_eq!(line.as_deref(), Some("locked"));
            tokio::spawn(async move { assert!(locker.wait().await.unwrap().success()) })
        }
        crate::Database::Postgres(url) => {
            use sqlx::Connection;
            let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
            let tables: String = sqlx::query_scalar(
                "SELECT string_agg(quote_ident(tablename), ', ') FROM pg_tables \
                 WHERE schemaname = 'public'",
            )
            .fetch_one(&mut conn)
            .await
            .unwrap();
            sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
                "BEGIN; LOCK TABLE {tables} IN EXCLUSIVE MODE"
            )))
            .execute(&mut conn)
            .await
            .unwrap();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_secs(3)).await;
                sqlx::raw_sql("COMMIT").execute(&mut conn).await.unwrap();
                conn.close().await.unwrap();
            })
        }
    }
}

both!(
    a_database_locked_by_another_process_for_a_while_loses_nothing,
    multi_thread
);
async fn a_database_locked_by_another_process_for_a_while_loses_nothing() {
    use wachet::testing::Reply;
    let site = FixtureServer::builder()
        .page("/tea", "<p>3.50 EUR</p>")
        .start()
        .await
        .unwrap();
    let api = Api::start_checking().await;
    let user = api.user("jo@example.com").await;
    let body =
        json!({"url": site.url("/tea"), "recurrenceInSeconds": 1, "alerts": [{"type": "NotEq"}]});
    let task = id(&api.task(&user, body.clone()).await);
    let history = format!("/thirdparty/v1/data/list/{task}");
    let before = history_of(&api, &user, &history, 2).await.len();

    let locker = lock_for_three_seconds(&api).await;
    // The page changes while the lock is held; reads still answer, a write waits for the lock.
    site.set("/tea", Reply::html("<p>3.90 EUR</p>"));
    let shown = api.get(&user, &format!("/thirdparty/v1/task/{task}")).await;
    assert_eq!(shown.status, 200, "{}", shown.text);
    let folder = api
        .post(
            &user,
            "/thirdparty/v1/folder",
            json!({"name": "during the lock"}),
        )
        .await;
    assert_eq!(
        folder.status, 200,
        "a write waits for the lock: {}",
        folder.text
    );
    tokio::time::timeout(Duration::from_secs(20), locker)
        .await
        .expect("the locker ends")
        .unwrap();

    // The change is stored and notified once; nothing stored before is lost.
    entries_where(&api, &user, &history, 2, |e| e["raw"] == "3.90 EUR").await;
    pause(&api, &user, body, &task).await;
    let entries = history_of(&api, &user, &history, before + 2).await;
    assert!(entries.iter().any(|e| e["raw"] == "3.50 EUR"));
    assert!(entries.iter().all(|e| e["error"].is_null()), "{entries:#?}");
    let notes = all_notifications(&api, &user, &task).await;
    assert_eq!(notes.len(), 1, "{notes:#?}");
    assert_eq!(notes[0]["current"], "3.90 EUR");
    let listing = api.get(&user, "/thirdparty/v1/folder/list").await;
    assert!(listing.text.contains("during the lock"), "{}", listing.text);
}

both!(
    spelling_variants_raise_nothing_and_one_edited_character_raises_one_not_eq,
    multi_thread
);
async fn spelling_variants_raise_nothing_and_one_edited_character_raises_one_not_eq() {
    // The same text spelled five ways, a different one at each request, until the test turns
    // on the edit: one digit.
    const VARIANTS: [&str; 5] = [
        "<p>Café: “Earl Grey” – 3.50&nbsp;EUR</p>",
        "<p>Cafe\u{301}:  \"Earl Grey\" - 3.50 EUR</p>",
        "<p>Caf&eacute;:\t&laquo;Earl\u{3000}Grey&raquo; &#8210; 3.50&#160;EUR</p>",
        // Escaped twice: the entity spellings reach the value.
        "<p>Caf&amp;#233;: &amp;ldquo;Earl\u{200b} Grey&amp;rdquo; &amp;mdash; 3.50 EUR</p>",
        "<p>\u{feff}Café:\u{2009}„Earl Grey‟\u{a0}— 3.50\u{202f}EUR </p>",
    ];
    let hits = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let edited = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (served, edit) = (hits.clone(), edited.clone());
    let app = axum::Router::new().route(
        "/tea",
        axum::routing::get(move || {
            use std::sync::atomic::Ordering::SeqCst;
            let n = served.fetch_add(1, SeqCst);
            let page = match edit.load(SeqCst) {
                true => "<p>Café: “Earl Grey” – 3.51&nbsp;EUR</p>".to_string(),
                false => VARIANTS[n % VARIANTS.len()].to_string(),
            };
            async move { axum::response::Html(page) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/tea", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let api = Api::start_checking().await;
    let user = api.user("ivy@example.com").await;
    let body = json!({"url": url, "xPath": "//p", "recurrenceInSeconds": 1,
                      "alerts": [{"type": "NotEq"}, {"type": "Added"}, {"type": "Removed"}]});
    let task = id(&api.task(&user, body.clone()).await);
    let history = format!("/thirdparty/v1/data/list/{task}");

    // Every spelling twice over.
    let before = history_of(&api, &user, &history, 2 * VARIANTS.len()).await;
    let spelled: std::collections::HashSet<&str> =
        before.iter().filter_map(|e| e["raw"].as_str()).collect();
    assert_eq!(
        spelled.len(),
        VARIANTS.len(),
        "history keeps each spelling as it was seen: {spelled:#?}"
    );
    assert!(
        all_notifications(&api, &user, &task).await.is_empty(),
        "spelling variants raised notifications"
    );
    let first_change = &before.last().unwrap()["valueChangedTimestamp"];
    assert!(
        before
            .iter()
            .all(|e| &e["valueChangedTimestamp"] == first_change),
        "a spelling variant counted as a change of the value: {before:#?}"
    );

    edited.store(true, std::sync::atomic::Ordering::SeqCst);
    let entries = entries_where(&api, &user, &history, 3, |e| {
        e["raw"].as_str().is_some_and(|raw| raw.contains("3.51"))
    })
    .await;
    pause(&api, &user, body, &task).await;
    let notes = all_notifications(&api, &user, &task).await;
    let kinds: Vec<&str> = notes.iter().map(|n| n["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds.iter().filter(|k| **k == "NotEq").count(),
        1,
        "one NotEq for one edited digit: {notes:#?}"
    );
    assert_eq!(
        kinds.len(),
        3,
        "NotEq, Added and Removed once each: {kinds:?}"
    );
    // The edit's entry is the change; the checks after it are not.
    let edit = entries
        .iter()
        .rev()
        .find(|e| e["raw"].as_str().is_some_and(|raw| raw.contains("3.51")))
        .unwrap();
    assert_eq!(edit["valueChangedTimestamp"], edit["lastCheckTimestamp"]);
    assert_eq!(
        entries[0]["valueChangedTimestamp"],
        edit["lastCheckTimestamp"]
    );
}

both!(
    a_challenge_or_empty_page_between_checks_is_a_failure_never_the_value_compared_with,
    multi_thread
);
async fn a_challenge_or_empty_page_between_checks_is_a_failure_never_the_value_compared_with() {
    // The page, then a bot challenge served with 200, an empty 200 and the page again, in
    // turn; the value never changes.
    const PAGE: &str = "<title>Tea</title><p>Earl Grey 3.50 EUR</p>";
    const CHALLENGE: &str = "<html><head><title>Just a moment...</title></head><body>\
        <p>Checking your browser before accessing shop.example.</p>\
        <script>window._cf_chl_opt={cType:'managed'};</script></body></html>";
    let hits = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let served = hits.clone();
    let app = axum::Router::new().route(
        "/tea",
        axum::routing::get(move || {
            let n = served.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let body = [PAGE, CHALLENGE, PAGE, ""][n % 4];
            async move { axum::response::Html(body) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/tea", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let api = Api::start_checking().await;
    let user = api.user("jan@example.com").await;
    let body = json!({"url": url, "recurrenceInSeconds": 1,
                      "alerts": [{"type": "NotEq"}, {"type": "Added"}, {"type": "Removed"}]});
    let task = id(&api.task(&user, body.clone()).await);
    let history = format!("/thirdparty/v1/data/list/{task}");
    let entries = history_of(&api, &user, &history, 8).await;
    pause(&api, &user, body, &task).await;

    let errors: std::collections::HashSet<&str> =
        entries.iter().filter_map(|e| e["error"].as_str()).collect();
    assert_eq!(
        errors,
        [
            "the site answered with a bot challenge (Cloudflare) instead of the page",
            "the page was empty (HTTP 200 with no body)",
        ]
        .into(),
        "{entries:#?}"
    );
    assert!(
        entries
            .iter()
            .filter_map(|e| e["raw"].as_str())
            .all(|raw| raw == "Earl Grey 3.50 EUR")
    );
    let notes = all_notifications(&api, &user, &task).await;
    assert!(
        notes.is_empty(),
        "a wall or an empty page read as a change: {notes:#?}"
    );
    // The history's difference view skips them too: every value entry keeps the first change.
    let first = &entries.last().unwrap()["valueChangedTimestamp"];
    assert!(
        entries
            .iter()
            .filter(|e| e["raw"].is_string())
            .all(|e| &e["valueChangedTimestamp"] == first)
    );
}
