//! Several processes on PostgreSQL: the service checking and restarting on it, workers that keep
//! their checks while alive and hand them over when they die, roles that split the API from
//! workers, locations, and the per-host limit kept by three workers together.

use crate::*;
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;

/// Until the PostgreSQL store has history, schedule and outbox, a PostgreSQL URL is refused at
/// once, by every subcommand that opens the database, without showing the password.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_on_postgresql_checks_alerts_and_keeps_everything_across_a_restart() {
    use wachet::testing::{FixtureServer, Reply};
    let Some(url) = pg::database().await else {
        return;
    };
    let site = FixtureServer::builder()
        .counted("/price", |n| {
            Reply::html(if n < 4 {
                "<p>3.50 EUR</p>"
            } else {
                "<p>3.90 EUR</p>"
            })
        })
        .start()
        .await
        .unwrap();
    let flags = [
        "--allow-private-networks",
        "--min-recurrence",
        "1",
        "--confirm-after",
        "1",
    ];
    let db = Path::new(&url);
    let first = serve(db, &flags).await;
    let admin = account(&first.printed);
    let token = first.login(&admin).await;
    let body = json!({"url": site.url("/price"), "recurrenceInSeconds": 1,
                      "alerts": [{"type": "NotEq"}]});
    let (status, task) = first
        .call(
            reqwest::Method::PUT,
            "/thirdparty/v1/task",
            Some(&token),
            Some(body),
        )
        .await;
    assert_eq!(status, 200, "{task}");
    let id = task["id"].as_str().unwrap().to_string();
    // The change is checked, confirmed and notified, all through PostgreSQL.
    let notes = format!("/thirdparty/v1/notification/list?taskId={id}");
    let mut listed = Value::Null;
    for _ in 0..300 {
        let (status, reply) = first.get(&notes, Some(&token)).await;
        assert_eq!(status, 200, "{reply}");
        listed = reply["data"].clone();
        if listed.as_array().is_some_and(|n| !n.is_empty()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(listed[0]["type"], "NotEq", "{listed}");
    assert_eq!(listed[0]["current"], "3.90 EUR", "{listed}");
    assert_eq!(listed[0]["comparand"], "3.50 EUR", "{listed}");
    assert_eq!(first.terminate().await, Some(0));

    // A second process on the same database finds the user, the monitor and its history.
    let again = serve(db, &flags).await;
    assert!(
        again.printed.iter().all(|l| !l.starts_with("password")),
        "no new user"
    );
    let (status, history) = again
        .get(&format!("/thirdparty/v1/data/list/{id}"), Some(&token))
        .await;
    assert_eq!(status, 200, "{history}");
    let values: Vec<&str> = history["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["raw"].as_str())
        .collect();
    assert!(
        values.contains(&"3.90 EUR") && values.contains(&"3.50 EUR"),
        "{history}"
    );
    assert_eq!(again.terminate().await, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_on_postgresql_keep_their_checks_while_alive_and_hand_them_over_when_they_die_or_stop()
 {
    use wachet::testing::{FixtureServer, Reply};
    let Some(url) = pg::database().await else {
        return;
    };
    let site = FixtureServer::builder()
        .reply(
            "/slow",
            Reply::html("<p>slow</p>").delay(Duration::from_secs(5)),
        )
        .reply(
            "/hang",
            Reply::html("<p>hang</p>").delay(Duration::from_secs(60)),
        )
        .reply(
            "/held",
            Reply::html("<p>held</p>").delay(Duration::from_secs(60)),
        )
        .start()
        .await
        .unwrap();
    let db = Path::new(&url);
    // Leases of 2 s, renewed by beats: a check longer than its lease stays with a live worker.
    let short = [
        "--allow-private-networks",
        "--check-lease",
        "2",
        "--heartbeat",
        "1",
    ];
    let a = serve(db, &short).await;
    let admin = account(&a.printed);
    let token = a.login(&admin).await;
    let slow = a.monitor(&token, &site.url("/slow")).await;
    let hang = a.monitor(&token, &site.url("/hang")).await;
    assert!(hit(&site, "/slow", 1).await && hit(&site, "/hang", 1).await);
    let b = serve(db, &short).await;
    assert!(b.history(&token, &slow).await[0]["error"].is_null());
    assert_eq!(
        site.hits("/slow"),
        1,
        "the live worker kept its 5 s check under a 2 s lease"
    );
    assert_eq!(site.hits("/hang"), 1, "and its hanging one");

    // A dies with its check of /hang in flight: B takes it over once the lease runs out, long
    // before A's check would have timed out.
    let mut dead = a.child;
    dead.kill().await.unwrap();
    assert!(
        hit(&site, "/hang", 2).await,
        "the dead worker's check was taken over"
    );
    let _ = hang;

    assert_eq!(b.terminate().await, Some(0));

    // On a database of their own (every worker of one database has the same lease): C holds a
    // check under a lease of two minutes; on SIGTERM it hands it back at once, so D checks it
    // long before that lease would have run out.
    let Some(url) = pg::database().await else {
        return;
    };
    let db = Path::new(&url);
    let long = ["--allow-private-networks", "--check-lease", "120"];
    let c = serve(db, &long).await;
    let token = c.login(&account(&c.printed)).await;
    c.monitor(&token, &site.url("/held")).await;
    assert!(hit(&site, "/held", 1).await);
    let d = serve(db, &long).await;
    assert_eq!(c.terminate().await, Some(0));
    assert!(
        hit(&site, "/held", 2).await,
        "the stopped worker's check was handed over"
    );
    assert_eq!(d.terminate().await, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn roles_split_the_api_from_workers_and_a_location_is_checked_only_by_its_workers() {
    use wachet::testing::{FixtureServer, Reply};
    let Some(url) = pg::database().await else {
        return;
    };
    let site = FixtureServer::builder()
        .reply("/gb", Reply::html("<p>from gb</p>"))
        .reply("/anywhere", Reply::html("<p>anywhere</p>"))
        .start()
        .await
        .unwrap();
    let db = Path::new(&url);
    let api = serve(db, &["--roles", "api", "--allow-private-networks"]).await;
    let admin = account(&api.printed);
    let token = api.login(&admin).await;
    let in_britain = json!({"url": site.url("/gb"), "recurrenceInSeconds": 3600, "location": "Gb"});
    let create = || {
        api.call(
            reqwest::Method::PUT,
            "/thirdparty/v1/task",
            Some(&token),
            Some(in_britain.clone()),
        )
    };
    // No worker checks from Great Britain yet, and no proxy serves it.
    let (status, refused) = create().await;
    assert_eq!(status, 400, "{refused}");
    assert!(refused.to_string().contains("location"), "{refused}");

    let gb = serve_without_api(
        db,
        &[
            "--roles",
            "worker",
            "--location",
            "gb",
            "--allow-private-networks",
        ],
    )
    .await;
    let (status, task) = create().await;
    assert_eq!(status, 200, "a live worker checks from there: {task}");
    let anywhere = api.monitor(&token, &site.url("/anywhere")).await;
    let id = task["id"].as_str().unwrap();
    assert_eq!(api.history(&token, id).await[0]["raw"], "from gb");
    // The API process checks nothing, and the worker in Great Britain only its own location's.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        site.hits("/anywhere"),
        0,
        "nobody checks the default location"
    );
    let path = format!("/thirdparty/v1/task/{id}");
    let (_, shown) = api.get(&path, Some(&token)).await;
    assert!(shown.get("locationNotice").is_none(), "{shown}");
    // Once its only worker stopped, the monitor says it is not checked.
    assert_eq!(terminate(gb).await, Some(0));
    let (status, shown) = api.get(&path, Some(&token)).await;
    assert_eq!(status, 200, "{shown}");
    let notice = shown["locationNotice"].as_str().unwrap_or_default();
    assert!(notice.contains("location Gb"), "{shown}");
    // A listing of its folder says so too, and of the monitor checked anywhere, nothing.
    let (status, listed) = api.get("/thirdparty/v1/folder/list", Some(&token)).await;
    assert_eq!(status, 200, "{listed}");
    let tasks = listed["tasks"].as_array().cloned().unwrap_or_default();
    let listed_notice = |id: &str| {
        tasks
            .iter()
            .find(|t| t["id"] == id)
            .map(|t| t["locationNotice"].clone())
    };
    assert_eq!(
        listed_notice(id),
        Some(shown["locationNotice"].clone()),
        "{listed}"
    );
    let anywhere_id = anywhere.as_str();
    assert_eq!(
        listed_notice(anywhere_id),
        Some(serde_json::Value::Null),
        "{listed}"
    );
    assert_eq!(api.terminate().await, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_workers_together_keep_the_per_host_limit_at_the_host() {
    use wachet::testing::{FixtureServer, Reply};
    let Some(url) = pg::database().await else {
        return;
    };
    let site = FixtureServer::builder()
        .reply(
            "/page",
            Reply::html("<p>a page</p>").delay(Duration::from_millis(50)),
        )
        .start()
        .await
        .unwrap();
    let db = Path::new(&url);
    let api = serve(db, &["--roles", "api", "--allow-private-networks"]).await;
    let admin = account(&api.printed);
    let token = api.login(&admin).await;
    // Each worker alone allows 2 requests in flight at a host; three of them, had they all
    // taken the host's monitors, would send up to 6.
    let flags = [
        "--roles",
        "worker",
        "--allow-private-networks",
        "--per-host-concurrency",
        "2",
        "--per-host-rps",
        "0",
        "--check-lease",
        "2",
        "--heartbeat",
        "1",
    ];
    let mut workers = Vec::new();
    for _ in 0..3 {
        workers.push(serve_without_api(db, &flags).await);
    }
    // The buckets settle among the three (a lease, 2 s, for those handed back) before the
    // monitors come.
    tokio::time::sleep(Duration::from_secs(5)).await;
    // The target figure: 500 monitors of one host, made at once with the bulk form (Portal
    // monitors, one request a check).
    let monitors = 500;
    let bulk: Vec<Value> = (0..monitors)
        .map(|i| {
            json!({"url": site.url(&format!("/page?{i}")), "recurrenceInSeconds": 3600,
                   "jobType": "Portal", "crawlingDepth": 1})
        })
        .collect();
    let (status, made) = api
        .call(
            reqwest::Method::PUT,
            "/thirdparty/v1/tasks",
            Some(&token),
            Some(Value::Array(bulk)),
        )
        .await;
    assert_eq!(status, 200, "{made}");
    assert!(
        hit(&site, "/page", monitors).await,
        "every monitor is checked"
    );
    assert!(
        site.peak_in_flight() <= 2,
        "at most 2 requests at once at the host, not {}",
        site.peak_in_flight()
    );
    for worker in workers {
        assert_eq!(terminate(worker).await, Some(0));
    }
    assert_eq!(api.terminate().await, Some(0));
}
