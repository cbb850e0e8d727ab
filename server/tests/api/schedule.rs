//! The scheduler beside the API: monitors are checked on their schedule against a real fixture
//! server, each check lands in the history, paused monitors are never checked, and a Portal
//! check stores every page.

use super::{Api, User, id};
use serde_json::{Value, json};
use std::time::Duration;
use wachet::testing::FixtureServer;

/// Waits (10 s at most) until `path` lists at least `n` history entries, and returns them.
async fn history_of(api: &Api, user: &User, path: &str, n: usize) -> Vec<Value> {
    for _ in 0..100 {
        let reply = api.get(user, path).await;
        let data = reply.ok()["data"].as_array().unwrap().clone();
        if data.len() >= n {
            return data;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{path}: fewer than {n} entries after 10 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
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
    let times: Vec<&str> = entries
        .iter()
        .map(|e| e["lastCheckTimestamp"].as_str().unwrap())
        .collect();
    assert!(
        times.windows(2).all(|w| w[0] > w[1]),
        "one entry a check: {times:?}"
    );
    assert!(site.hits("/tea") >= 2);
    assert_eq!(site.hits("/paused"), 0, "a paused monitor is never checked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_check_is_stored_as_an_error_and_marks_the_folder_count() {
    let site = FixtureServer::builder()
        .reply("/gone", wachet::testing::Reply::new(404))
        .start()
        .await
        .unwrap();
    let api = Api::start_checking().await;
    let user = api.user("bob@example.com").await;
    let folder = api.folder(&user, "broken", None).await;
    let body = json!({"url": site.url("/gone"), "recurrenceInSeconds": 60, "folderId": folder});
    let task = id(&api.task(&user, body).await);
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
    // A one-minute monitor is not checked again in the next seconds.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(site.hits("/gone"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
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
