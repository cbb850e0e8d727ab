//! Routing by folder: the endpoints a folder names reach the monitors inside it and in its
//! subfolders that name none of their own, a monitor's own win, a muted monitor's
//! notifications are kept and sent nowhere, and a monitor with none anywhere up its tree goes
//! to the user's own endpoints, as the specification says. The tree is followed as it is when
//! a notification is raised: a folder moved passes its endpoints on from its new place.

use crate::support::web::{client, csrf_of, page_text, session_cookie};
use crate::{Api, User, id};
use serde_json::{Value, json};
use wachet::model::{Alert, AlertType, JobType, NotificationEndpoint};
use wachet_server::store::NewNotification;

fn hook(name: &str) -> Value {
    json!({"type": "Webhook", "value": format!("https://{name}.example/hook")})
}

/// Raises a notification of `task` (naming `own` endpoints, as the monitor does) through the
/// store's write path; the targets its deliveries went to, sorted.
async fn targets(api: &Api, user: &User, task: &str) -> Vec<String> {
    let monitor = api.get(user, &format!("/thirdparty/v1/task/{task}")).await;
    let own: Option<Vec<NotificationEndpoint>> =
        serde_json::from_value(monitor.ok()["notificationEndpoints"].clone()).unwrap();
    let note = api
        .store
        .insert_notification(&NewNotification {
            task_id: task.to_string(),
            page_url: None,
            job_type: JobType::SinglePage,
            alert: Alert {
                kind: AlertType::NotEq,
                value: None,
                parameters: None,
                remind_every_seconds: None,
            },
            created_at: wachet_server::store::now_millis(),
            current: Some("new".into()),
            comparand: Some("old".into()),
            error: None,
            url: Some("https://shop.example/".into()),
            synthetic_expression: "content changed".into(),
            html: "<p>new</p>".into(),
            endpoints: own.unwrap_or_default(),
            explanation: None,
        })
        .await
        .unwrap();
    let path = format!("/thirdparty/v1/notification/{note}/deliveries");
    let mut found: Vec<String> = api
        .get(user, &path)
        .await
        .ok()
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["target"].as_str().unwrap().to_string())
        .collect();
    found.sort();
    found
}

fn url(name: &str) -> String {
    format!("https://{name}.example/hook")
}

both!(folder_endpoints_reach_the_monitors_inside_unless_they_name_their_own);
async fn folder_endpoints_reach_the_monitors_inside_unless_they_name_their_own() {
    let api = Api::start().await;
    let user = api.user("route@example.com").await;
    api.put(
        &user,
        "/thirdparty/v1/user/notificationEndpoints",
        json!({"notificationEndpoints": [hook("mine")]}),
    )
    .await
    .ok();
    // A folder's endpoints are checked as a monitor's are.
    api.post(&user, "/thirdparty/v1/folder", json!({"name": "Shops", "notificationEndpoints": [{"type": "Webhook", "value": "not a url"}]}))
        .await
        .field_error("notificationEndpoints[0].value", "");
    let shops = api
        .post(
            &user,
            "/thirdparty/v1/folder",
            json!({"name": "Shops", "notificationEndpoints": [hook("shops")]}),
        )
        .await;
    assert_eq!(
        shops.ok()["notificationEndpoints"][0]["value"],
        url("shops")
    );
    let shops = id(shops.ok());
    let tea = api.folder(&user, "Tea", Some(&shops)).await;
    let other = api.folder(&user, "Other", None).await;
    // Renaming without the field keeps them (a client that knows nothing of them).
    api.post(
        &user,
        "/thirdparty/v1/folder",
        json!({"id": shops, "name": "All shops"}),
    )
    .await
    .ok();
    let root = api.get(&user, "/thirdparty/v1/folder/list").await;
    let listed = root.ok()["subfolders"].as_array().unwrap().clone();
    let listed_shops = listed.iter().find(|f| f["id"] == shops.as_str()).unwrap();
    assert_eq!(
        listed_shops["notificationEndpoints"][0]["value"],
        url("shops")
    );
    let listed_other = listed.iter().find(|f| f["id"] == other.as_str()).unwrap();
    assert!(
        listed_other.get("notificationEndpoints").is_none(),
        "{listed_other}"
    );

    let monitor = |name: &str, folder: &str, extra: Value| {
        let mut body = json!({"name": name, "url": "https://shop.example/", "folderId": folder});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        body
    };
    let inherits = id(&api.task(&user, monitor("inherits", &tea, json!({}))).await);
    let own = id(&api
        .task(
            &user,
            monitor("own", &tea, json!({"notificationEndpoints": [hook("own")]})),
        )
        .await);
    let muted = id(&api
        .task(&user, monitor("muted", &tea, json!({"muted": true})))
        .await);
    let outside = id(&api.task(&user, monitor("outside", &other, json!({}))).await);
    assert_eq!(targets(&api, &user, &inherits).await, [url("shops")]);
    assert_eq!(targets(&api, &user, &own).await, [url("own")]);
    assert_eq!(targets(&api, &user, &outside).await, [url("mine")]);
    assert_eq!(targets(&api, &user, &muted).await, Vec::<String>::new());
    let muted_list = api
        .get(
            &user,
            &format!("/thirdparty/v1/notification/list?taskId={muted}"),
        )
        .await;
    assert_eq!(
        muted_list.ok()["data"].as_array().unwrap().len(),
        1,
        "kept on the list"
    );
    assert_eq!(
        api.get(&user, &format!("/thirdparty/v1/task/{muted}"))
            .await
            .ok()["muted"],
        true
    );

    // Tea moved out of Shops: its monitors go to the user's own endpoints from then on; a
    // folder above it naming some again passes them on.
    api.post(
        &user,
        "/thirdparty/v1/folder/move",
        json!({"folderIds": [tea], "folderId": null}),
    )
    .await
    .ok();
    assert_eq!(targets(&api, &user, &inherits).await, [url("mine")]);
    api.post(
        &user,
        "/thirdparty/v1/folder/move",
        json!({"folderIds": [tea], "folderId": other}),
    )
    .await
    .ok();
    api.post(&user, "/thirdparty/v1/folder", json!({"id": other, "name": "Other", "notificationEndpoints": [hook("other"), hook("more")]}))
        .await
        .ok();
    assert_eq!(
        targets(&api, &user, &inherits).await,
        [url("more"), url("other")]
    );
    // `[]` clears them; another user's folder is unknown.
    api.post(
        &user,
        "/thirdparty/v1/folder",
        json!({"id": other, "name": "Other", "notificationEndpoints": []}),
    )
    .await
    .ok();
    assert_eq!(targets(&api, &user, &inherits).await, [url("mine")]);

    // The web interface: the folder's page says where its monitors notify without endpoints
    // of their own and sets them; the monitor form says where its alerts go.
    let cookie = session_cookie(&api, &user).await;
    let page = format!("/folders/{other}/notifications");
    let (status, html) = page_text(&api, &cookie, &page).await;
    assert_eq!(status, 200);
    assert!(
        html.contains("your own endpoints: Webhook https://mine.example/hook"),
        "{html}"
    );
    let post = |text: &'static str| {
        client()
            .post(api.url(&page))
            .header("cookie", &cookie)
            .form(&[("csrf", csrf_of(&html)), ("endpoints", text.to_string())])
            .send()
    };
    let refused = post("Webhook https://web.example/hook\nWebhook not a url")
        .await
        .unwrap();
    assert_eq!(refused.status(), 400);
    assert!(refused.text().await.unwrap().contains("Line 2: "));
    assert_eq!(
        post("Webhook https://web.example/hook")
            .await
            .unwrap()
            .status(),
        303
    );
    assert_eq!(targets(&api, &user, &inherits).await, [url("web")]);
    // The form edits an endpoint's kind and value: a message the API gave it stays when the
    // form is saved again with another endpoint beside it.
    let templated = json!({"type": "Webhook", "value": "https://web.example/hook",
        "body": "{{ monitor.name }} changed"});
    api.post(
        &user,
        "/thirdparty/v1/folder",
        json!({"id": other, "name": "Other", "notificationEndpoints": [templated]}),
    )
    .await
    .ok();
    let (_, html) = page_text(&api, &cookie, &page).await;
    let saved = client()
        .post(api.url(&page))
        .header("cookie", &cookie)
        .form(&[
            ("csrf", csrf_of(&html)),
            (
                "endpoints",
                "Webhook https://web.example/hook\nWebhook https://two.example/hook".to_string(),
            ),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(saved.status(), 303);
    let listed = api.get(&user, "/thirdparty/v1/folder/list").await;
    let folder = listed.ok()["subfolders"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == json!(other))
        .cloned()
        .unwrap();
    let kept = &folder["notificationEndpoints"];
    assert_eq!(kept[0]["body"], "{{ monitor.name }} changed", "{folder}");
    assert_eq!(kept[1]["value"], "https://two.example/hook", "{folder}");
    assert!(kept[1]["body"].is_null(), "{folder}");
    let (_, form) = page_text(&api, &cookie, &format!("/monitors/{inherits}/edit")).await;
    assert!(
        form.contains("the endpoints of the folder “Other”: Webhook https://web.example/hook"),
        "{form}"
    );
    let (_, tea_page) = page_text(&api, &cookie, &format!("/folders/{tea}/notifications")).await;
    assert!(
        tea_page.contains("the endpoints of the folder “Other”"),
        "{tea_page}"
    );

    let stranger = api.user("stranger@example.com").await;
    api.post(
        &stranger,
        "/thirdparty/v1/folder",
        json!({"id": other, "name": "Mine now", "notificationEndpoints": [hook("evil")]}),
    )
    .await
    .problem(404);

    // The folder deleted: its monitors go with their notifications, and the deliveries
    // waiting for its endpoints with them (none left pointing nowhere); its page is a 404.
    let sql = api.sql().await;
    let waiting = format!(
        "SELECT COUNT(*) FROM deliveries d JOIN notifications n ON n.id = d.notification_id \
         WHERE n.task_id = '{inherits}'"
    );
    assert!(sql.count(&waiting).await > 0);
    api.delete(&user, &format!("/thirdparty/v1/folder/{other}"))
        .await
        .ok();
    assert_eq!(sql.count(&waiting).await, 0);
    assert_eq!(
        sql.count(
            "SELECT COUNT(*) FROM deliveries WHERE notification_id IS NOT NULL \
             AND notification_id NOT IN (SELECT id FROM notifications)"
        )
        .await,
        0
    );
    api.get(&user, &format!("/thirdparty/v1/task/{inherits}"))
        .await
        .problem(404);
    let (status, _) = page_text(&api, &cookie, &page).await;
    assert_eq!(status, 404);
}
