//! Folders: the tree, listings with recursive counts and paging, moves and deletes.

use crate::{Api, User, id, monitor};
use serde_json::{Value, json};
use std::collections::HashSet;
use wachet::model::{Alert, AlertType, ClientData};
use wachet_server::store::{NewNotification, Series};

const LIST: &str = "/thirdparty/v1/folder/list";
const FOLDER: &str = "/thirdparty/v1/folder";
const MOVE: &str = "/thirdparty/v1/folder/move";

async fn task_in(api: &Api, user: &User, name: &str, folder: &str, recurrence: i32) -> String {
    let mut body = monitor(name, "https://example.com/");
    body["folderId"] = json!(folder);
    body["recurrenceInSeconds"] = json!(recurrence);
    id(&api.task(user, body).await)
}

fn names(list: &Value, key: &str) -> Vec<String> {
    list[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap_or("").to_string())
        .collect()
}

both!(listings_show_subfolders_then_monitors_by_name_with_path_and_recursive_counts);
async fn listings_show_subfolders_then_monitors_by_name_with_path_and_recursive_counts() {
    let api = Api::start().await;
    let user = api.user("ann@example.com").await;
    let shops = api.folder(&user, "Shops", None).await;
    let _news = api.folder(&user, "news", None).await;
    let tea = api.folder(&user, "Tea", Some(&shops)).await;
    let green = api.folder(&user, "Green", Some(&tea)).await;
    let _a = task_in(&api, &user, "b-shop", &shops, 3600).await;
    let failing = task_in(&api, &user, "sencha", &green, 3600).await;
    let _paused = task_in(&api, &user, "matcha", &green, 0).await;
    let _c = task_in(&api, &user, "Assam", &tea, 3600).await;
    api.task(&user, monitor("root monitor", "https://example.com/"))
        .await;
    let at = chrono::Utc::now();
    api.store
        .append_entry(
            &Series::Task(failing),
            &ClientData::failure(at, "timeout".into()),
        )
        .await
        .unwrap();

    let root = api.get(&user, LIST).await.ok().clone();
    assert_eq!(
        names(&root, "subfolders"),
        ["news", "Shops"],
        "by name, case-insensitive"
    );
    assert_eq!(names(&root, "tasks"), ["root monitor"]);
    assert_eq!(root["path"], json!([]));
    assert_eq!(root["continuationToken"], Value::Null);
    let shops_entry = &root["subfolders"][1];
    assert_eq!(
        (
            &shops_entry["count"],
            &shops_entry["failedCount"],
            &shops_entry["pausedCount"]
        ),
        (&json!(4), &json!(1), &json!(1)),
        "counts cover the whole subtree: {shops_entry}"
    );
    // A saved folder comes back with the same counts.
    let saved = api
        .post(&user, FOLDER, json!({"id": shops, "name": "Shops"}))
        .await
        .ok()
        .clone();
    assert_eq!(
        (
            &saved["count"],
            &saved["failedCount"],
            &saved["pausedCount"]
        ),
        (&json!(4), &json!(1), &json!(1)),
        "{saved}"
    );

    let listed = api
        .get(&user, &format!("{LIST}?parentId={tea}"))
        .await
        .ok()
        .clone();
    assert_eq!(names(&listed, "subfolders"), ["Green"]);
    assert_eq!(names(&listed, "tasks"), ["Assam"]);
    assert_eq!(listed["subfolders"][0]["count"], 2);
    assert_eq!(listed["subfolders"][0]["parentId"], tea.as_str());
    let path: Vec<&str> = listed["path"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        path,
        ["Shops", "Tea"],
        "from the root's child down to the folder"
    );

    let deep = api
        .get(&user, &format!("{LIST}?parentId={green}"))
        .await
        .ok()
        .clone();
    assert_eq!(names(&deep, "tasks"), ["matcha", "sencha"]);
    assert_eq!(deep["tasks"][1]["data"]["error"], "timeout");

    api.get(
        &user,
        &format!("{LIST}?parentId=01a208a4-0000-7000-8000-000000000000"),
    )
    .await
    .problem(404);
    api.get(&user, &format!("{LIST}?parentId=x"))
        .await
        .problem(404);
}

both!(folders_are_renamed_and_moved_but_never_into_themselves);
async fn folders_are_renamed_and_moved_but_never_into_themselves() {
    let api = Api::start().await;
    let user = api.user("bob@example.com").await;
    let a = api.folder(&user, "A", None).await;
    let b = api.folder(&user, "B", Some(&a)).await;
    let c = api.folder(&user, "C", Some(&b)).await;

    let renamed = api
        .post(
            &user,
            FOLDER,
            json!({"id": b, "name": "Bee", "parentId": a}),
        )
        .await;
    assert_eq!(renamed.ok()["name"], "Bee");
    assert_eq!(renamed.body["parentId"], a.as_str());

    for target in [&a, &b, &c] {
        let reply = api
            .post(
                &user,
                FOLDER,
                json!({"id": a, "name": "A", "parentId": target}),
            )
            .await;
        reply.field_error("parentId", "itself");
    }
    let reply = api
        .post(
            &user,
            FOLDER,
            json!({"name": "x", "parentId": "01a208a4-0000-7000-8000-000000000000"}),
        )
        .await;
    reply.field_error("parentId", "no such folder");
    let reply = api
        .post(
            &user,
            FOLDER,
            json!({"id": "01a208a4-0000-7000-8000-000000000000", "name": "x"}),
        )
        .await;
    reply.problem(404);
    api.post(&user, FOLDER, json!({"name": "n".repeat(257)}))
        .await
        .field_error("name", "256");

    // Moves are all or nothing.
    let t1 = task_in(&api, &user, "t1", &c, 3600).await;
    let reply = api
        .post(
            &user,
            MOVE,
            json!({"taskIds": [t1], "folderIds": [a], "folderId": c}),
        )
        .await;
    reply.field_error("folderIds", "itself");
    let t1_now = api.get(&user, &format!("/thirdparty/v1/task/{t1}")).await;
    assert_eq!(t1_now.ok()["folderId"], c.as_str(), "nothing moved");
    let missing = "01a208a4-0000-7000-8000-000000000000";
    api.post(&user, MOVE, json!({"taskIds": [t1], "folderId": missing}))
        .await
        .problem(404);
    api.post(
        &user,
        MOVE,
        json!({"taskIds": [t1, missing], "folderId": a}),
    )
    .await
    .problem(404);
    assert_eq!(
        api.get(&user, &format!("/thirdparty/v1/task/{t1}"))
            .await
            .ok()["folderId"],
        c.as_str()
    );

    api.post(
        &user,
        MOVE,
        json!({"taskIds": [t1], "folderIds": [c], "folderId": a}),
    )
    .await
    .ok();
    let listed = api
        .get(&user, &format!("{LIST}?parentId={a}"))
        .await
        .ok()
        .clone();
    assert_eq!(names(&listed, "subfolders"), ["Bee", "C"]);
    assert_eq!(names(&listed, "tasks"), ["t1"]);
    // A null target is the root.
    api.post(&user, MOVE, json!({"folderIds": [c], "folderId": null}))
        .await
        .ok();
    let root = api.get(&user, LIST).await.ok().clone();
    assert_eq!(names(&root, "subfolders"), ["A", "C"]);
}

both!(deleting_a_folder_deletes_its_subtree_with_history_and_notifications);
async fn deleting_a_folder_deletes_its_subtree_with_history_and_notifications() {
    let api = Api::start().await;
    let user = api.user("cy@example.com").await;
    let top = api.folder(&user, "top", None).await;
    let sub = api.folder(&user, "sub", Some(&top)).await;
    let keep = api.folder(&user, "keep", None).await;
    let doomed = task_in(&api, &user, "doomed", &sub, 3600).await;
    let kept = task_in(&api, &user, "kept", &keep, 3600).await;
    let now = chrono::Utc::now();
    for task in [&doomed, &kept] {
        api.store
            .append_entry(
                &Series::Task(task.clone()),
                &ClientData::value(now, "v".into()),
            )
            .await
            .unwrap();
        api.store
            .insert_notification(&NewNotification {
                task_id: task.clone(),
                page_url: None,
                job_type: wachet::model::JobType::SinglePage,
                alert: Alert {
                    kind: AlertType::NotEq,
                    value: None,
                    parameters: None,
                    remind_every_seconds: None,
                },
                created_at: now.timestamp_millis(),
                current: Some("v".into()),
                comparand: None,
                error: None,
                url: Some("https://example.com/".into()),
                synthetic_expression: "content changed".into(),
                html: "<p>changed</p>".into(),
                endpoints: Vec::new(),
                explanation: None,
            })
            .await
            .unwrap();
    }
    let listed = api
        .get(&user, "/thirdparty/v1/notification/list")
        .await
        .ok()
        .clone();
    let doomed_note = listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["taskId"] == doomed.as_str())
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();

    api.delete(&user, &format!("{FOLDER}/{top}")).await.ok();
    api.get(&user, &format!("{LIST}?parentId={top}"))
        .await
        .problem(404);
    api.get(&user, &format!("{LIST}?parentId={sub}"))
        .await
        .problem(404);
    api.get(&user, &format!("/thirdparty/v1/task/{doomed}"))
        .await
        .problem(404);
    api.get(&user, &format!("/thirdparty/v1/data/list/{doomed}"))
        .await
        .problem(404);
    api.get(&user, &format!("/thirdparty/v1/notification/{doomed_note}"))
        .await
        .problem(404);
    let left = api
        .get(&user, "/thirdparty/v1/notification/list")
        .await
        .ok()
        .clone();
    assert_eq!(left["data"].as_array().unwrap().len(), 1);
    assert_eq!(left["data"][0]["taskId"], kept.as_str());
    api.get(&user, &format!("/thirdparty/v1/data/list/{kept}"))
        .await
        .ok();
    api.delete(&user, &format!("{FOLDER}/{top}"))
        .await
        .problem(404);
}

both!(a_large_folder_is_paged_with_every_item_once);
async fn a_large_folder_is_paged_with_every_item_once() {
    let api = Api::start().await;
    let user = api.user("dee@example.com").await;
    let big = api.folder(&user, "big", None).await;
    for i in 0..30 {
        api.folder(&user, &format!("sub {i:02}"), Some(&big)).await;
    }
    let uid = &user.account.id;
    for i in 0..120 {
        let mut m = wachet::Monitor::new("https://example.com/");
        m.name = Some(format!("task {i:03}"));
        m.folder_id = Some(big.clone());
        api.store.create_task(uid, &m).await.unwrap();
    }
    let mut seen = Vec::new();
    let mut token: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut path = format!("{LIST}?parentId={big}&count=50");
        if let Some(t) = &token {
            path.push_str(&format!("&continuationToken={t}"));
        }
        let page = api.get(&user, &path).await.ok().clone();
        pages += 1;
        seen.extend(names(&page, "subfolders"));
        seen.extend(names(&page, "tasks"));
        match page["continuationToken"].as_str() {
            Some(t) => token = Some(t.to_string()),
            None => break,
        }
        // A token is bound to its folder.
        let foreign = api
            .get(
                &user,
                &format!("{LIST}?continuationToken={}", token.as_deref().unwrap()),
            )
            .await;
        foreign.field_error("continuationToken", "not a continuation token");
    }
    assert_eq!(pages, 3);
    assert_eq!(seen.len(), 150);
    assert_eq!(seen.iter().collect::<HashSet<_>>().len(), 150);
    assert_eq!(seen[0], "sub 00");
    assert_eq!(seen[30], "task 000");
    assert_eq!(seen[149], "task 119");
    for bad in [
        "count=0",
        "count=501",
        "count=-3",
        "count=abc",
        "count=99999999999999999999",
        "continuationToken=garbage",
    ] {
        let reply = api
            .get(&user, &format!("{LIST}?parentId={big}&{bad}"))
            .await;
        assert_eq!(reply.status, 400, "{bad}: {}", reply.text);
        reply.problem(400);
    }
}

both!(subfolders_that_fill_a_page_exactly_leave_the_monitors_for_the_next);
async fn subfolders_that_fill_a_page_exactly_leave_the_monitors_for_the_next() {
    let api = Api::start().await;
    let user = api.user("eve@example.com").await;
    let parent = api.folder(&user, "parent", None).await;
    for i in 0..50 {
        api.folder(&user, &format!("sub {i:02}"), Some(&parent))
            .await;
    }
    let _task = task_in(&api, &user, "the monitor", &parent, 3600).await;
    let first = api
        .get(&user, &format!("{LIST}?parentId={parent}"))
        .await
        .ok()
        .clone();
    assert_eq!(names(&first, "subfolders").len(), 50);
    assert_eq!(names(&first, "tasks").len(), 0);
    let token = first["continuationToken"]
        .as_str()
        .expect("the monitor is on the next page");
    let second = api
        .get(
            &user,
            &format!("{LIST}?parentId={parent}&continuationToken={token}"),
        )
        .await
        .ok()
        .clone();
    assert_eq!(names(&second, "subfolders").len(), 0);
    assert_eq!(names(&second, "tasks"), ["the monitor"]);
    assert_eq!(second["continuationToken"], Value::Null);
}

both!(bad_folder_requests_change_nothing);
async fn bad_folder_requests_change_nothing() {
    let api = Api::start().await;
    let user = api.user("fay@example.com").await;
    let a = api.folder(&user, "A", None).await;
    let b = api.folder(&user, "B", Some(&a)).await;
    let before_root = api.get(&user, LIST).await.ok().clone();
    let before_a = api
        .get(&user, &format!("{LIST}?parentId={a}"))
        .await
        .ok()
        .clone();
    let bad = [
        json!({"name": "x\u{0}y"}),
        json!({"id": a, "name": "A", "parentId": b}),
        json!({"name": 5}),
        json!({"name": "x", "parentId": "x".repeat(10_000)}),
        json!(["not", "an", "object"]),
    ];
    for body in bad {
        let reply = api.post(&user, FOLDER, body.clone()).await;
        assert_eq!(reply.status, 400, "{body}: {}", reply.text);
        reply.problem(400);
    }
    // A rename with a null parent keeps the folder where it is.
    let renamed = api
        .post(&user, FOLDER, json!({"id": b, "name": "Bee"}))
        .await
        .ok()
        .clone();
    assert_eq!(renamed["parentId"], a.as_str());
    api.post(&user, FOLDER, json!({"id": b, "name": "B"}))
        .await
        .ok();
    assert_eq!(api.get(&user, LIST).await.ok(), &before_root);
    assert_eq!(
        api.get(&user, &format!("{LIST}?parentId={a}")).await.ok(),
        &before_a
    );
}

both!(a_listing_read_before_each_write_shows_the_write);
async fn a_listing_read_before_each_write_shows_the_write() {
    let api = Api::start().await;
    let user = api.user("ann@example.com").await;
    let shops = api.folder(&user, "Shops", None).await;
    let tea = task_in(&api, &user, "tea", &shops, 3600).await;
    let coffee = task_in(&api, &user, "coffee", &shops, 3600).await;
    let listing = || async {
        api.get(&user, &format!("{LIST}?parentId={shops}"))
            .await
            .ok()
            .clone()
    };
    assert_eq!(names(&listing().await, "tasks"), ["coffee", "tea"]);
    // A check's value.
    api.store
        .append_entry(
            &Series::Task(tea.clone()),
            &ClientData::value(chrono::Utc::now(), "4.90 EUR".into()),
        )
        .await
        .unwrap();
    let shown = listing().await;
    assert_eq!(shown["tasks"][1]["data"]["raw"], "4.90 EUR", "{shown}");
    // A rename, which also moves the monitor in the order.
    let mut renamed = monitor("assam", "https://example.com/");
    renamed["id"] = json!(tea);
    renamed["folderId"] = json!(shops);
    api.put(&user, "/thirdparty/v1/task", renamed).await.ok();
    assert_eq!(names(&listing().await, "tasks"), ["assam", "coffee"]);
    // A move out of the folder, and a delete.
    api.post(&user, MOVE, json!({"taskIds": [coffee], "folderId": null}))
        .await
        .ok();
    assert_eq!(names(&listing().await, "tasks"), ["assam"]);
    api.delete(&user, &format!("/thirdparty/v1/task/{tea}"))
        .await
        .ok();
    assert_eq!(names(&listing().await, "tasks"), Vec::<String>::new());
}
