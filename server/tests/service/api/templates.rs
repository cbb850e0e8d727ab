//! Endpoint templates: a template is checked when its endpoint is saved (a syntax error, a
//! token that does not exist, an endless loop or a huge output is a 400 naming the field and
//! the line), reaches a real webhook receiver rendered with the monitor, its folder, the change
//! and the time in the user's time zone, and is previewed against a monitor's last change.

use super::delivery::Receiver;
use crate::{Api, id};
use serde_json::{Value, json};
use std::time::Duration;
use wachet::testing::FixtureServer;
use wachet::testing::Reply;

const ENDPOINTS: &str = "/thirdparty/v1/user/notificationEndpoints";
const PREVIEW: &str = "/thirdparty/v1/user/notificationEndpoints/preview";

fn templated(hook: &str) -> Value {
    json!({
        "type": "Webhook",
        "value": hook,
        "title": "{{ monitor.name }} in {{ monitor.folder }}: {{ change.before }} -> {{ change.after }}",
        "body": "added {{ change.added | join(', ') }}; {{ change.diff }}; {{ alert.type }}; \
                 {{ time_zone }}; {{ links.change }}",
    })
}

both!(
    a_template_is_refused_at_save_and_reaches_the_webhook_rendered,
    multi_thread
);
async fn a_template_is_refused_at_save_and_reaches_the_webhook_rendered() {
    let site = FixtureServer::builder()
        .page("/tea", "<p>3.50 EUR</p>")
        .start()
        .await
        .unwrap();
    let (receiver, hook) = Receiver::start(0).await;
    let api = Api::start_checking().await;
    let user = api.user("tpl@example.com").await;
    api.put(
        &user,
        "/thirdparty/v1/user/settings",
        json!({"timeZone": "Europe/Berlin"}),
    )
    .await
    .ok();
    // Refused at save, at the field, with the line: a syntax error, a misspelt token, an
    // endless loop, a 10 MB output; on the user's endpoints and on a monitor's alike.
    let bad = |field: &str, template: &str| {
        let mut endpoint = json!({"type": "Webhook", "value": hook});
        endpoint[field] = template.into();
        json!({"notificationEndpoints": [endpoint]})
    };
    api.put(&user, ENDPOINTS, bad("body", "fine\n{% if %}"))
        .await
        .field_error("notificationEndpoints[0].body", "line 2");
    api.put(&user, ENDPOINTS, bad("title", "{{ monitor.nmae }}"))
        .await
        .field_error("notificationEndpoints[0].title", "line 1");
    let endless = "{% for a in range(9999) %}{% for b in range(9999) %}{% endfor %}{% endfor %}";
    api.put(&user, ENDPOINTS, bad("body", endless))
        .await
        .field_error("notificationEndpoints[0].body", "runs too long");
    api.put(&user, ENDPOINTS, bad("body", "{{ 'x' * 10000000 }}"))
        .await
        .field_error("notificationEndpoints[0].body", "writes more than");
    let mut monitor = bad("body", "{{ change.diff | nosuchfilter }}");
    monitor["name"] = "Bad".into();
    monitor["url"] = site.url("/tea").into();
    api.put(&user, "/thirdparty/v1/task", monitor)
        .await
        .field_error("notificationEndpoints[0].body", "line 1");
    assert!(
        api.get(&user, ENDPOINTS).await.ok()["notificationEndpoints"]
            .as_array()
            .unwrap()
            .is_empty()
    );

    // Saved on the user's endpoints, read back as written, then delivered rendered.
    let saved = api
        .put(
            &user,
            ENDPOINTS,
            json!({"notificationEndpoints": [templated(&hook)]}),
        )
        .await;
    assert_eq!(
        saved.ok()["notificationEndpoints"][0]["title"],
        templated(&hook)["title"]
    );
    let shops = api.folder(&user, "Shops", None).await;
    let task = changing_monitor(&api, &user, &site, json!([]), Some(&shops)).await;
    let seen = receiver.wait_for(1).await;
    let payload: Value = serde_json::from_str(&seen[0].1).unwrap();
    let note = payload["id"].as_str().unwrap();
    assert_eq!(payload["title"], "Tea in Shops: 3.5 -> 3.9", "{payload}");
    let body = payload["body"].as_str().unwrap();
    assert!(
        body.starts_with("added 3.90 EUR; [-3.50-]{+3.90+} EUR; NotEq; Europe/Berlin; "),
        "{body}"
    );
    assert!(body.ends_with(note), "{body}");
    // The webhook's own fields are still there.
    assert_eq!(payload["current"], "3.90 EUR");

    // The preview renders the last change the same way, and HTML escapes the values.
    let mut endpoint = templated(&hook);
    endpoint["format"] = "html".into();
    endpoint["body"] = "<b>{{ monitor.name ~ ' <&>' }}</b> {{ change.diff }} at {{ time }}".into();
    let preview = api
        .post(
            &user,
            PREVIEW,
            json!({"endpoint": endpoint, "monitorId": task}),
        )
        .await;
    let preview = preview.ok();
    assert_eq!(preview["title"], "Tea in Shops: 3.5 -> 3.9", "{preview}");
    assert_eq!(preview["format"], "html");
    let body = preview["body"].as_str().unwrap();
    assert!(
        body.starts_with("<b>Tea &lt;&amp;&gt;</b> <del style=\"background:#fdd\">3.50</del>"),
        "{body}"
    );
    assert!(body.contains(" CET") || body.contains(" CEST"), "{body}");
    // A bad template is refused as saving refuses it; no change yet, or not the caller's
    // monitor, a clear 4xx (the same 404 as an unknown id).
    api.post(
        &user,
        PREVIEW,
        json!({"endpoint": {"type": "Webhook", "body": "{% for %}"}, "monitorId": task}),
    )
    .await
    .field_error("endpoint.body", "line 1");
    let fresh = id(&api
        .task(
            &user,
            json!({"name": "Fresh", "url": site.url("/tea"), "paused": true}),
        )
        .await);
    api.post(
        &user,
        PREVIEW,
        json!({"endpoint": endpoint, "monitorId": fresh}),
    )
    .await
    .field_error("monitorId", "no change");
    let other = api.user("other@example.com").await;
    let theirs = api
        .post(
            &other,
            PREVIEW,
            json!({"endpoint": endpoint, "monitorId": task}),
        )
        .await;
    let unknown = api
        .post(
            &other,
            PREVIEW,
            json!({"endpoint": endpoint, "monitorId": "nosuchmonitor"}),
        )
        .await;
    assert_eq!(theirs.problem(404), unknown.problem(404));
}

/// A monitor of the page `/tea` of `site` in `folder`, checked every second; once its first
/// value is stored the price changes, so its next check raises.
async fn changing_monitor(
    api: &Api,
    user: &crate::User,
    site: &FixtureServer,
    endpoints: Value,
    folder: Option<&str>,
) -> String {
    let body = json!({"name": "Tea", "url": site.url("/tea"), "recurrenceInSeconds": 1,
                      "alerts": [{"type": "NotEq"}], "notificationEndpoints": endpoints,
                      "folderId": folder});
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
