//! One user never sees or changes another's data: every id of another user is a 404, exactly
//! like an id that does not exist, and lists leave other users' items out.

use crate::{Api, id, monitor};
use serde_json::json;
use wachet::model::{Alert, AlertType, ClientData, JobType};
use wachet_server::store::{NewNotification, Series};

both!(another_users_ids_are_404_everywhere_and_lists_leave_them_out);
async fn another_users_ids_are_404_everywhere_and_lists_leave_them_out() {
    let api = Api::start().await;
    let ann = api.user("ann@example.com").await;
    let bob = api.user("bob@example.com").await;

    let folder = api.folder(&ann, "private", None).await;
    let mut body = monitor("secret portal", "https://example.com/");
    body["jobType"] = json!("Portal");
    body["folderId"] = json!(folder);
    let task = id(&api.task(&ann, body).await);
    let now = chrono::Utc::now();
    let page = Series::Page {
        task_id: task.clone(),
        url: "https://example.com/a".into(),
        name: None,
    };
    api.store
        .append_entry(&page, &ClientData::value(now, "page value".into()))
        .await
        .unwrap();
    api.store
        .append_entry(
            &Series::Task(task.clone()),
            &ClientData::value(now, "own value".into()),
        )
        .await
        .unwrap();
    let note = api
        .store
        .insert_notification(&NewNotification {
            task_id: task.clone(),
            page_url: Some("https://example.com/a".into()),
            job_type: JobType::PortalPage,
            alert: Alert {
                kind: AlertType::NotEq,
                value: None,
                parameters: None,
                remind_every_seconds: None,
            },
            created_at: now.timestamp_millis(),
            current: Some("page value".into()),
            comparand: None,
            error: None,
            url: Some("https://example.com/a".into()),
            synthetic_expression: "content changed".into(),
            html: "<p>x</p>".into(),
            endpoints: Vec::new(),
            explanation: None,
        })
        .await
        .unwrap();
    let pages = api
        .get(&ann, &format!("/thirdparty/v1/task/{task}/pages"))
        .await
        .ok()
        .clone();
    let page_id = id(&pages[0]);
    let bobs_folder = api.folder(&bob, "mine", None).await;
    let bobs_task = id(&api
        .task(&bob, monitor("bob's", "https://example.com/"))
        .await);

    // Reads.
    for path in [
        format!("/thirdparty/v1/task/{task}"),
        format!("/thirdparty/v1/task/{task}/pages"),
        format!("/thirdparty/v1/data/list/{task}"),
        format!("/thirdparty/v1/data/list/{page_id}"),
        format!("/thirdparty/v1/notification/{note}"),
        format!("/thirdparty/v1/notification/list?taskId={task}"),
        format!("/thirdparty/v1/folder/list?parentId={folder}"),
    ] {
        api.get(&bob, &path).await.problem(404);
    }
    // Writes.
    let mut update = monitor("taken over", "https://evil.example.com/");
    update["id"] = json!(task);
    api.put(&bob, "/thirdparty/v1/task", update)
        .await
        .problem(404);
    api.delete(&bob, &format!("/thirdparty/v1/task/{task}"))
        .await
        .problem(404);
    api.delete(&bob, &format!("/thirdparty/v1/folder/{folder}"))
        .await
        .problem(404);
    api.post(
        &bob,
        "/thirdparty/v1/folder",
        json!({"id": folder, "name": "mine now"}),
    )
    .await
    .problem(404);
    api.post(
        &bob,
        "/thirdparty/v1/folder/move",
        json!({"taskIds": [task], "folderId": bobs_folder}),
    )
    .await
    .problem(404);
    api.post(
        &bob,
        "/thirdparty/v1/folder/move",
        json!({"folderIds": [folder], "folderId": bobs_folder}),
    )
    .await
    .problem(404);
    api.post(
        &bob,
        "/thirdparty/v1/folder/move",
        json!({"taskIds": [bobs_task], "folderId": folder}),
    )
    .await
    .problem(404);
    let mut into_anns = monitor("sneaky", "https://example.com/");
    into_anns["folderId"] = json!(folder);
    api.put(&bob, "/thirdparty/v1/task", into_anns)
        .await
        .field_error("folderId", "no such folder");
    api.post(
        &bob,
        "/thirdparty/v1/folder",
        json!({"name": "sub", "parentId": folder}),
    )
    .await
    .field_error("parentId", "no such folder");

    // Lists.
    let root = api
        .get(&bob, "/thirdparty/v1/folder/list")
        .await
        .ok()
        .clone();
    assert_eq!(root["subfolders"].as_array().unwrap().len(), 1);
    assert_eq!(root["subfolders"][0]["name"], "mine");
    assert_eq!(root["tasks"].as_array().unwrap().len(), 1);
    let found = api
        .get(&bob, "/thirdparty/v1/task/search?query=secret")
        .await
        .ok()
        .clone();
    assert_eq!(found, json!([]));
    let notes = api
        .get(&bob, "/thirdparty/v1/notification/list")
        .await
        .ok()
        .clone();
    assert_eq!(notes["data"], json!([]));
    // A continuation token of Ann's is no key to Bob's lists.
    for i in 0..3 {
        api.store
            .append_entry(
                &Series::Task(task.clone()),
                &ClientData::value(now + chrono::Duration::seconds(i + 1), format!("v{i}")),
            )
            .await
            .unwrap();
    }
    let anns = api
        .get(&ann, &format!("/thirdparty/v1/data/list/{task}?count=1"))
        .await
        .ok()
        .clone();
    let token = anns["continuationToken"].as_str().unwrap();
    api.get(
        &bob,
        &format!("/thirdparty/v1/data/list/{bobs_task}?continuationToken={token}"),
    )
    .await
    .field_error("continuationToken", "not a continuation token");

    // Ann's data is as it was.
    let mine = api
        .get(&ann, &format!("/thirdparty/v1/task/{task}"))
        .await
        .ok()
        .clone();
    assert_eq!(mine["name"], "secret portal");
    assert_eq!(mine["folderId"], folder.as_str());
    let listed = api
        .get(
            &ann,
            &format!("/thirdparty/v1/folder/list?parentId={folder}"),
        )
        .await
        .ok()
        .clone();
    assert_eq!(listed["tasks"].as_array().unwrap().len(), 1);
    assert!(crate::checked(&listed["tasks"][0]), "{listed}");
    api.get(&ann, &format!("/thirdparty/v1/notification/{note}"))
        .await
        .ok();
}

both!(notification_endpoints_are_each_users_own);
async fn notification_endpoints_are_each_users_own() {
    let api = Api::start().await;
    let ann = api.user("ann@example.com").await;
    let bob = api.user("bob@example.com").await;
    let path = "/thirdparty/v1/user/notificationEndpoints";
    let initial = api.get(&ann, path).await.ok().clone();
    assert_eq!(initial["notificationEndpoints"], json!([]));
    let secret = initial["webhookSecret"].as_str().unwrap();
    assert_eq!(secret.len(), 64);
    let set = json!({"notificationEndpoints": [
        {"type": "Webhook", "value": "https://hooks.example.com/ann"},
        {"type": 0, "value": "ann@example.com"}
    ]});
    let saved = api.put(&ann, path, set).await.ok().clone();
    assert_eq!(saved["notificationEndpoints"][1]["type"], "Email");
    assert_eq!(saved["webhookSecret"], secret);
    assert_eq!(api.get(&ann, path).await.ok(), &saved);
    let bobs = api.get(&bob, path).await.ok().clone();
    assert_eq!(bobs["notificationEndpoints"], json!([]));
    assert_ne!(bobs["webhookSecret"], secret);
    let bad = json!({"notificationEndpoints": [{"type": "Sms", "value": "+1"}]});
    api.put(&ann, path, bad).await.field_error(
        "notificationEndpoints[0].type",
        "not supported by this server",
    );
    let nul = json!({"notificationEndpoints": [{"type": "Email", "value": "a\u{0}@example.com"}]});
    api.put(&ann, path, nul)
        .await
        .field_error("notificationEndpoints[0].value", "NUL");
    assert_eq!(
        api.get(&ann, path).await.ok(),
        &saved,
        "a rejected update changes nothing"
    );
}
