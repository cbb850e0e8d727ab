//! Alerts about how long something lasted, through the real scheduler: an Error alert's
//! reminders while a page keeps failing and the message when it is back, and the Unchanged
//! alert of a page that stopped changing, each sent once to a local webhook receiver, and
//! once only across a crash. The time that passed is set back in the stored alert state (the
//! service's own clock is not ours to move).

use super::delivery::Receiver;
use crate::{Api, Backend, Setup, User, id};
use serde_json::{Value, json};
use std::time::Duration;
use wachet::testing::{FixtureServer, Reply};

/// The notifications of `task` whose expression (from each one's content) starts with
/// `words`, newest first.
async fn raised(api: &Api, user: &User, task: &str, words: &str) -> Vec<Value> {
    let path = format!("/thirdparty/v1/notification/list?taskId={task}");
    let list = api.get(user, &path).await.ok()["data"].clone();
    let mut found = Vec::new();
    for n in list.as_array().unwrap() {
        let one = api
            .get(user, &format!("/thirdparty/v1/notification/{}", id(n)))
            .await;
        let expression = one.ok()["syntheticExpression"].as_str().unwrap_or("");
        if expression.starts_with(words) {
            let mut n = n.clone();
            n["syntheticExpression"] = expression.into();
            found.push(n);
        }
    }
    found
}

/// Moves the times named `fields` in the monitor's stored alert state a year back, again and
/// again (a check storing its state meanwhile would undo it) until `task` has a notification
/// saying `words` (20 s at most; never once it has one, which the state stored with it
/// records); that notification.
async fn year_later(api: &Api, user: &User, task: &str, fields: &[&str], words: &str) -> Value {
    let sql = api.sql().await;
    let (table, key) = match api.backend() {
        Backend::Sqlite => ("tasks", "id"),
        Backend::Postgres => ("task_series", "task_id"),
    };
    let year = chrono::Utc::now().format("%Y").to_string();
    let before = year.parse::<i32>().unwrap() - 1;
    for _ in 0..100 {
        for field in fields {
            // The time as stored now, set back only while it is still that time: a check that
            // raised meanwhile wrote a new one, which must stay (on PostgreSQL the statement's
            // own test for the notification may not see that check's commit yet).
            let state = sql
                .text(&format!(
                    "SELECT COALESCE((SELECT CAST(alert_state AS TEXT) FROM {table} \
                     WHERE {key} = '{task}'), '')"
                ))
                .await;
            let marker = format!("\"{field}\":\"{year}-");
            let Some(at) = state.find(&marker) else {
                continue;
            };
            let now = &state[at..];
            let now = &now[..now[marker.len()..]
                .find('"')
                .map_or(now.len(), |end| end + marker.len() + 1)];
            let then = now.replacen(&format!("\"{year}-"), &format!("\"{before}-"), 1);
            sql.execute(&format!(
                "UPDATE {table} SET alert_state = replace(alert_state, '{now}', '{then}') \
                 WHERE {key} = '{task}' AND NOT EXISTS (SELECT 1 FROM notifications \
                 WHERE task_id = '{task}' AND synthetic_expression LIKE '{words}%')"
            ))
            .await;
        }
        if let Some(found) = raised(api, user, task, words).await.pop() {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("no notification saying {words:?} after 20 s");
}

/// The service, a crashed service's claim on a check lapsing after 2 s, its checks bounded
/// to 2 s, and its failures confirmed a second after they begin.
fn setup() -> Setup {
    let mut setup = Setup::checking();
    setup.engine = setup.engine.total_timeout(Duration::from_secs(2));
    setup.service.schedule.confirm_after = Duration::from_secs(1);
    setup.service.schedule.lease = Duration::from_secs(2);
    setup
}

/// Waits until the site served `n` more requests for `path` than `seen` (20 s at most): that
/// many more checks ran.
async fn checks_after(site: &FixtureServer, path: &str, seen: usize, n: usize) -> usize {
    for _ in 0..200 {
        let hits = site.hits(path);
        if hits >= seen + n {
            return hits;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!(
        "fewer than {n} more checks after 20 s (from {seen}: {})",
        site.hits(path)
    );
}

both!(
    a_failing_page_reminds_and_a_stale_page_alerts_once,
    multi_thread
);
async fn a_failing_page_reminds_and_a_stale_page_alerts_once() {
    let site = FixtureServer::builder()
        .page("/news", "<p id=n>Issue 41</p>")
        .start()
        .await
        .unwrap();
    let (receiver, hook) = Receiver::start(0).await;
    let api = Api::start_as(setup()).await;
    let user = api.user("stale@example.com").await;
    let monitor = |alerts: Value| {
        json!({
            "name": "News", "url": site.url("/news"), "xPath": "//p[@id='n']",
            "recurrenceInSeconds": 1, "alerts": alerts,
            "notificationEndpoints": [{"type": "Webhook", "value": hook}],
        })
    };
    // What the API refuses, at the field.
    for (alerts, field, words) in [
        (
            json!([{"type": "NotEq", "remindEverySeconds": 3600}]),
            "alerts[0].remindEverySeconds",
            "only an Error alert",
        ),
        (
            json!([{"type": "Error", "remindEverySeconds": 5}]),
            "alerts[0].remindEverySeconds",
            "from 60 to",
        ),
        (
            json!([{"type": "Unchanged", "value": "a month"}]),
            "alerts[0].value",
            "in seconds",
        ),
        (
            json!([{"type": "Unchanged"}]),
            "alerts[0].value",
            "in seconds",
        ),
    ] {
        api.put(&user, "/thirdparty/v1/task", monitor(alerts))
            .await
            .field_error(field, words);
    }
    let saved = api
        .put(
            &user,
            "/thirdparty/v1/task",
            monitor(json!([
                {"type": "Error", "remindEverySeconds": 3600},
                {"type": "Unchanged", "value": "86400"},
            ])),
        )
        .await;
    let task = id(saved.ok());
    let stored = api.get(&user, &format!("/thirdparty/v1/task/{task}")).await;
    assert_eq!(stored.ok()["alerts"][0]["remindEverySeconds"], 3600);
    assert_eq!(stored.ok()["alerts"][1]["type"], "Unchanged");
    assert!(stored.ok()["alerts"][1].get("remindEverySeconds").is_none());
    checks_after(&site, "/news", 0, 2).await;

    // A day unchanged (here a year): one Unchanged notification, not one a check, and not
    // again from a service started after a crash.
    let stale = year_later(&api, &user, &task, &["changedAt"], "not changed for").await;
    assert_eq!(stale["syntheticExpression"], "not changed for 365 d");
    let database = api.crash();
    let api = Api::start_in(database, setup()).await;
    checks_after(&site, "/news", site.hits("/news"), 4).await;
    assert_eq!(raised(&api, &user, &task, "not changed").await.len(), 1);

    // Failing: the Error notification, a reminder once an hour has passed (a year here),
    // none at the next checks, and the recovery says for how long it failed.
    site.set("/news", Reply::new(503));
    for _ in 0..100 {
        if !raised(&api, &user, &task, "check failed").await.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let failing = ["remindedAt", "failingSince"];
    let reminder = year_later(&api, &user, &task, &failing, "still failing").await;
    assert!(
        reminder["syntheticExpression"]
            .as_str()
            .unwrap()
            .starts_with("still failing after 365 d"),
        "{reminder}"
    );
    assert_eq!(reminder["type"], "Error");
    assert!(
        reminder["error"].as_str().unwrap().contains("503"),
        "{reminder}"
    );
    assert_eq!(raised(&api, &user, &task, "check failed").await.len(), 1);
    checks_after(&site, "/news", site.hits("/news"), 4).await;
    assert_eq!(raised(&api, &user, &task, "still failing").await.len(), 1);
    site.set("/news", Reply::html("<p id=n>Issue 41</p>"));
    let back = year_later(&api, &user, &task, &[], "was failing for").await;
    let words = back["syntheticExpression"].as_str().unwrap();
    assert!(
        words.starts_with("was failing for 365 d") && words.ends_with("now returns a value again"),
        "{words}"
    );
    let delivered = receiver.wait_for(4).await;
    let bodies: Vec<&str> = delivered.iter().map(|(_, body)| body.as_str()).collect();
    for said in [
        "not changed for 365 d",
        "still failing after 365 d",
        "was failing for 365 d",
    ] {
        assert!(
            bodies.iter().any(|b| b.contains(said)),
            "{said}: {bodies:#?}"
        );
    }
}
