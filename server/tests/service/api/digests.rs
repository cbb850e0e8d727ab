//! Digests and quiet hours: an endpoint's notifications held in the outbox until their window
//! ends, then sent as one message in order; a held message survives a crash of the service.
//! Time is driven as the other outbox tests drive it: by moving the stored due time.

use super::delivery::Receiver;
use crate::{Api, Setup, id};
use serde_json::{Value, json};
use std::time::Duration;
use wachet::model::{Alert, AlertType, JobType};
use wachet_server::store::{Explanation, NewNotification};

const ENDPOINTS: &str = "/thirdparty/v1/user/notificationEndpoints";

fn raised(task: &str, n: usize) -> NewNotification {
    NewNotification {
        task_id: task.to_string(),
        page_url: None,
        job_type: JobType::SinglePage,
        alert: Alert {
            kind: AlertType::NotEq,
            value: None,
            parameters: None,
            remind_every_seconds: None,
        },
        created_at: wachet_server::store::now_millis() + n as i64,
        current: Some(format!("price {n}")),
        comparand: None,
        error: None,
        url: Some("https://shop.example/".into()),
        synthetic_expression: format!("change number {n}"),
        html: format!("<p>price {n}</p>"),
        endpoints: Vec::new(),
        explanation: Some(Explanation {
            text: format!("price went to {n}"),
            ..Explanation::default()
        }),
    }
}

both!(
    a_digest_is_held_through_a_crash_then_sent_as_one_message_in_order,
    multi_thread
);
async fn a_digest_is_held_through_a_crash_then_sent_as_one_message_in_order() {
    let (receiver, hook) = Receiver::start(0).await;
    let api = Api::start_checking().await;
    let user = api.user("digest@example.com").await;
    // Refused at save: a window of none, a time that is none, both kinds at once, quiet hours
    // that are no hours.
    let refused = |extra: Value, field: &'static str| {
        let mut endpoint = json!({"type": "Webhook", "value": hook});
        endpoint
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        (json!({"notificationEndpoints": [endpoint]}), field)
    };
    for (body, field) in [
        refused(
            json!({"digest": {"everyMinutes": 0}}),
            "digest.everyMinutes",
        ),
        refused(json!({"digest": {"dailyAt": "8 am"}}), "digest.dailyAt"),
        refused(
            json!({"digest": {"everyMinutes": 5, "dailyAt": "08:00"}}),
            "digest",
        ),
        refused(
            json!({"quietHours": {"from": "25:00", "to": "07:00"}}),
            "quietHours.from",
        ),
    ] {
        api.put(&user, ENDPOINTS, body)
            .await
            .field_error(&format!("notificationEndpoints[0].{field}"), "");
    }
    let saved = api
        .put(
            &user,
            ENDPOINTS,
            json!({"notificationEndpoints": [{"type": "Webhook", "value": hook,
                "digest": {"everyMinutes": 60}, "quietHours": {"from": "22:00", "to": "07:00"}}]}),
        )
        .await;
    assert_eq!(
        saved.ok()["notificationEndpoints"][0]["digest"]["everyMinutes"],
        60
    );
    let task = id(&api
        .task(
            &user,
            json!({"name": "Tea", "url": "https://shop.example/", "paused": true}),
        )
        .await);
    let mut notes = Vec::new();
    for n in 0..3 {
        notes.push(
            api.store
                .insert_notification(&raised(&task, n))
                .await
                .unwrap(),
        );
    }
    // Held: nothing goes while the window lasts, though delivery runs.
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(receiver.count(), 0);
    let held = "SELECT COUNT(*) FROM deliveries WHERE state = 'pending' AND digest_key IS NOT NULL";
    assert_eq!(api.sql().await.count(held).await, 3);

    // The service dies; another starts on its database, and the window ends.
    let database = api.crash();
    let api = Api::start_in(database, Setup::checking()).await;
    let sql = api.sql().await;
    assert_eq!(sql.count(held).await, 3, "the held messages survived");
    sql.execute("UPDATE deliveries SET next_attempt_at = 0 WHERE digest_key IS NOT NULL")
        .await;
    let seen = receiver.wait_for(1).await;
    let payload: Value = serde_json::from_str(&seen[0].1).unwrap();
    assert_eq!(payload["title"], "3 notifications", "{payload}");
    let listed: Vec<&str> = payload["digest"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["id"].as_str().unwrap())
        .collect();
    assert_eq!(listed, notes.iter().map(String::as_str).collect::<Vec<_>>());
    let body = payload["body"].as_str().unwrap();
    let at = |text: &str| {
        body.find(text)
            .unwrap_or_else(|| panic!("{text} in {body}"))
    };
    assert!(at("change number 0") < at("change number 1"));
    assert!(at("change number 1") < at("change number 2"));
    assert!(body.contains("price went to 2"), "{body}");
    // One message for the three, and each delivery ends delivered with it.
    for _ in 0..100 {
        if sql
            .count("SELECT COUNT(*) FROM deliveries WHERE state = 'delivered'")
            .await
            == 3
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        sql.count("SELECT COUNT(*) FROM deliveries WHERE state = 'delivered'")
            .await,
        3
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(receiver.count(), 1);
}

/// Notifications a digest carries in the test of a long digest.
const MANY: i64 = 10_000;

both!(
    a_digest_of_ten_thousand_changes_lists_the_first_and_links_to_the_rest,
    multi_thread
);
async fn a_digest_of_ten_thousand_changes_lists_the_first_and_links_to_the_rest() {
    let (receiver, hook) = Receiver::start(0).await;
    let api = Api::start_checking().await;
    let user = api.user("many@example.com").await;
    api.put(
        &user,
        ENDPOINTS,
        json!({"notificationEndpoints": [{"type": "Webhook", "value": hook,
            "digest": {"everyMinutes": 60}}]}),
    )
    .await
    .ok();
    let task = id(&api
        .task(
            &user,
            json!({"name": "Tea", "url": "https://shop.example/", "paused": true}),
        )
        .await);
    api.store
        .insert_notification(&raised(&task, 0))
        .await
        .unwrap();
    // The other 9,999 notifications of the window, each held with its delivery, written at
    // once as the scheduler would write them one by one.
    let sql = api.sql().await;
    let numbers = format!(
        "WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < {})",
        MANY - 1
    );
    sql.execute(&format!(
        "{numbers} INSERT INTO notifications (id, user_id, task_id, job_type, alert_type, alert, \
         created_at, current_value, task_name, url, synthetic_expression, html, explanation) \
         SELECT n.id || '-' || k.i, n.user_id, n.task_id, n.job_type, n.alert_type, n.alert, \
         n.created_at + k.i, 'price ' || k.i, n.task_name, n.url, 'change number ' || k.i, \
         n.html, n.explanation FROM notifications n, k"
    ))
    .await;
    sql.execute(&format!(
        "{numbers} INSERT INTO deliveries (id, notification_id, kind, target, state, \
         next_attempt_at, updated_at, user_id, template, digest_key, lane) \
         SELECT d.id || '-' || k.i, d.notification_id || '-' || k.i, d.kind, d.target, \
         d.state, d.next_attempt_at, d.updated_at, d.user_id, d.template, d.digest_key, d.lane \
         FROM deliveries d, k"
    ))
    .await;
    let held = "SELECT COUNT(*) FROM deliveries WHERE state = 'pending' AND digest_key IS NOT NULL";
    assert_eq!(sql.count(held).await, MANY);

    // The window ends: one message, the first 50 in order, the rest counted with a link.
    sql.execute("UPDATE deliveries SET next_attempt_at = 0 WHERE digest_key IS NOT NULL")
        .await;
    let seen = receiver.wait_for(1).await;
    let payload: Value = serde_json::from_str(&seen[0].1).unwrap();
    assert_eq!(payload["title"], format!("{MANY} notifications"));
    assert_eq!(payload["digestTotal"], MANY);
    let listed = payload["digest"].as_array().unwrap();
    assert_eq!(listed.len(), 50);
    assert_eq!(listed[49]["syntheticExpression"], "change number 49");
    let body = payload["body"].as_str().unwrap();
    assert!(body.contains("change number 49 ("), "{body}");
    assert!(
        !body.contains("change number 50 ("),
        "only the first are listed"
    );
    assert!(
        body.ends_with(&format!(
            "{} more notifications in this digest: {}",
            MANY - 50,
            api.url("/thirdparty/v1/notification/list")
        )),
        "{}",
        &body[body.len().saturating_sub(300)..]
    );
    assert!(body.len() < 64 * 1024, "bounded: {} bytes", body.len());
    // Nothing lost: every delivery of the digest ends delivered with the one message.
    let delivered = "SELECT COUNT(*) FROM deliveries WHERE state = 'delivered'";
    for _ in 0..100 {
        if sql.count(delivered).await == MANY {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(sql.count(delivered).await, MANY);
    assert_eq!(receiver.count(), 1);
}

both!(
    a_digest_writes_each_change_with_the_endpoints_templates,
    multi_thread
);
async fn a_digest_writes_each_change_with_the_endpoints_templates() {
    let (receiver, hook) = Receiver::start(0).await;
    let api = Api::start_checking().await;
    let user = api.user("templated@example.com").await;
    api.put(
        &user,
        ENDPOINTS,
        json!({"notificationEndpoints": [{"type": "Webhook", "value": hook,
            "digest": {"everyMinutes": 60}, "format": "markdown",
            "title": "{{ monitor.folder }}/{{ monitor.name }} is {{ change.current }}",
            "body": "{{ alert.type }}: {{ change.text }}"}]}),
    )
    .await
    .ok();
    let shop = api.folder(&user, "Shop", None).await;
    let task = id(&api
        .task(
            &user,
            json!({"name": "Tea", "url": "https://shop.example/", "paused": true,
                   "folderId": shop}),
        )
        .await);
    let mut notes = Vec::new();
    for n in 0..3 {
        let mut note = raised(&task, n);
        note.explanation = Some(Explanation {
            text: format!("price went to {n}"),
            facts: Some(wachet_server::store::Facts {
                diff_text: format!("[-{}-]{{+{n}+}}", n + 10),
                ..Default::default()
            }),
            ..Explanation::default()
        });
        notes.push(api.store.insert_notification(&note).await.unwrap());
    }
    api.sql()
        .await
        .execute("UPDATE deliveries SET next_attempt_at = 0 WHERE digest_key IS NOT NULL")
        .await;
    let seen = receiver.wait_for(1).await;
    let payload: Value = serde_json::from_str(&seen[0].1).unwrap();
    // The digest's own title; each change under the heading its title template writes, its
    // text as its body template writes it, in Markdown, in order, each with its link.
    assert_eq!(payload["title"], "3 notifications", "{payload}");
    let body = payload["body"].as_str().unwrap();
    let items: Vec<String> = (0..3)
        .map(|n| {
            format!(
                "**Shop/Tea is price {n}**\nNotEq: [-{}-]{{+{n}+}}\n{}",
                n + 10,
                payload["digest"][n]["alertUrl"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(body, items.join("\n\n"), "{body}");
    assert_eq!(payload["digest"][2]["id"].as_str(), Some(notes[2].as_str()));
}
