//! Monitors: create, read, update, delete, search, pages, and validation of what is stored.

use crate::{Api, id, monitor};
use serde_json::{Value, json};
use wachet::model::{ClientData, Monitor};
use wachet_server::store::Series;

const TASK: &str = "/thirdparty/v1/task";

both!(a_monitor_is_created_read_updated_and_deleted);
async fn a_monitor_is_created_read_updated_and_deleted() {
    let api = Api::start().await;
    let user = api.user("ann@example.com").await;
    let folder = api.folder(&user, "Shops", None).await;
    let created = api
        .task(
            &user,
            json!({
                "name": "Tea", "url": "https://example.com/tea", "xPath": "//p[@class='price']",
                "regex": "\\d+", "recurrenceInSeconds": 3600, "folderId": folder,
                "alerts": [{"type": 1}, {"type": "contains", "value": "in stock"}],
                "headers": [{"key": "Accept-Language", "value": "en"}],
                "jobType": "portal", "crawlingDepth": 3, "location": 0,
                "urlFilter": {"include": [{"filter": "/tea/", "type": "Contains"}]},
                "notificationEndpoints": [{"type": "Webhook", "value": "https://hooks.example.com/x"}],
                "note": "green"
            }),
        )
        .await;
    let task_id = id(&created);
    assert_eq!(created["name"], "Tea");
    assert_eq!(created["folderId"], folder.as_str());
    assert_eq!(
        created["alerts"][0]["type"], "NotEq",
        "enums are written by name"
    );
    assert_eq!(created["alerts"][1]["type"], "Contains");
    assert_eq!(created["jobType"], "Portal");
    assert_eq!(created["location"], "Default");
    assert_eq!(created["notificationEndpoints"][0]["type"], "Webhook");
    assert_eq!(created["data"], crate::not_checked(), "not checked yet");

    let path = format!("{TASK}/{task_id}");
    assert_eq!(api.get(&user, &path).await.ok(), &created);

    // An update replaces the definition; a null folderId keeps the folder.
    let mut update = monitor("Green tea", "https://example.com/green");
    update["id"] = json!(task_id);
    let updated = api.put(&user, TASK, update).await.ok().clone();
    assert_eq!(updated["name"], "Green tea");
    assert_eq!(updated["folderId"], folder.as_str());
    assert_eq!(updated["alerts"], Value::Null);
    assert_eq!(updated["jobType"], "SinglePage");
    assert_eq!(api.get(&user, &path).await.ok(), &updated);

    // Unknown ids: a well-formed one, a malformed one, a huge one.
    for unknown in [
        "01a208a4-0000-7000-8000-000000000000",
        "nope",
        &"x".repeat(10_000),
    ] {
        let mut body = monitor("x", "https://example.com/");
        body["id"] = json!(unknown);
        api.put(&user, TASK, body).await.problem(404);
        api.get(&user, &format!("{TASK}/{unknown}"))
            .await
            .problem(404);
        api.delete(&user, &format!("{TASK}/{unknown}"))
            .await
            .problem(404);
    }

    let reply = api.delete(&user, &path).await;
    reply.ok();
    api.get(&user, &path).await.problem(404);
    api.delete(&user, &path).await.problem(404);
}

both!(invalid_monitors_are_400_naming_each_field_and_store_nothing);
async fn invalid_monitors_are_400_naming_each_field_and_store_nothing() {
    let api = Api::start().await;
    let user = api.user("bob@example.com").await;
    let cases: Vec<(Value, &str, &str)> = vec![
        (
            json!({"url": "ftp://example.com/"}),
            "url",
            "only http and https",
        ),
        (json!({"url": "not a url"}), "url", ""),
        (json!({"name": "x"}), "url", "required"),
        (
            json!({"url": "https://e.com/", "xPath": "//["}),
            "xPath",
            "position",
        ),
        (
            json!({"url": "https://e.com/", "excludeXPath": "count("}),
            "excludeXPath",
            "",
        ),
        (
            json!({"url": "https://e.com/", "regex": "(unclosed"}),
            "regex",
            "",
        ),
        (
            json!({"url": "https://e.com/", "jobType": "Portal", "crawlingDepth": 4}),
            "crawlingDepth",
            "1, 2 or 3",
        ),
        (
            json!({"url": "https://e.com/", "jobType": "Crawler"}),
            "jobType",
            "SinglePage (0), Portal (1)",
        ),
        (
            json!({"url": "https://e.com/", "alerts": [{"type": "Sometimes"}]}),
            "alerts[0].type",
            "unknown AlertType",
        ),
        (
            json!({"url": "https://e.com/", "alerts": [{"type": 12}]}),
            "alerts[0].type",
            "Unchanged (11)",
        ),
        (
            json!({"url": "https://e.com/", "alerts": [{"type": 0, "parameters": {"compare": 4}}]}),
            "alerts[0].parameters.compare",
            "CaseInsensitive (3)",
        ),
        (
            json!({"url": "https://e.com/", "recurrenceInSeconds": 30}),
            "recurrenceInSeconds",
            "at least 60",
        ),
        (
            json!({"url": "https://e.com/", "recurrenceInSeconds": -5}),
            "recurrenceInSeconds",
            "paused",
        ),
        (
            json!({"url": "https://e.com/", "recurrenceInSeconds": 3_000_000_000u64}),
            "recurrenceInSeconds",
            "",
        ),
        (
            json!({"url": "https://e.com/", "recurrenceInSeconds": "60"}),
            "recurrenceInSeconds",
            "invalid type",
        ),
        (
            json!({"url": "https://e.com/", "name": "n".repeat(257)}),
            "name",
            "at most 256",
        ),
        (
            json!({"url": "https://e.com/", "note": "n".repeat(4097)}),
            "note",
            "at most 4096",
        ),
        (
            json!({"url": "https://e.com/", "body": "b".repeat(64 * 1024 + 1)}),
            "body",
            "64 KiB",
        ),
        (
            json!({"url": "https://e.com/", "headers": (0..51).map(|i| json!({"key": format!("X-{i}"), "value": "v"})).collect::<Vec<_>>()}),
            "headers",
            "at most 50",
        ),
        (
            json!({"url": "https://e.com/", "headers": [{"key": "X-A", "value": "a\r\nX-Injected: 1"}]}),
            "headers[0].value",
            "",
        ),
        (
            json!({"url": "https://e.com/", "folderId": "01a208a4-0000-7000-8000-000000000000"}),
            "folderId",
            "no such folder",
        ),
        (
            json!({"url": "https://e.com/", "notificationEndpoints": [{"type": "Telegram", "value": "x"}]}),
            "notificationEndpoints[0].value",
            "tgram:// URL",
        ),
        (
            json!({"url": "https://e.com/", "notificationEndpoints": [{"type": 92, "value": "+4912345"}]}),
            "notificationEndpoints[0].type",
            "not supported by this server",
        ),
        (
            json!({"url": "https://e.com/", "notificationEndpoints": [{"type": "Email", "value": "not an address"}]}),
            "notificationEndpoints[0].value",
            "e-mail address",
        ),
        (
            json!({"url": "https://e.com/", "notificationEndpoints": [{"type": "Webhook", "value": "file:///etc/passwd"}]}),
            "notificationEndpoints[0].value",
            "http(s) URL",
        ),
        (
            json!({"url": "https://e.com/", "proxies": [{"location": "us"}]}),
            "proxies",
            "",
        ),
        (
            json!({"url": "https://e.com/", "name": "a\u{0}b"}),
            "name",
            "NUL",
        ),
        (
            json!({"url": "https://e.com/", "alerts": [{"type": "Eq", "value": "\u{0}"}]}),
            "alerts[0].value",
            "NUL",
        ),
        (json!([{"url": "https://e.com/"}]), ".", "not a JSON object"),
        (json!("just a string"), ".", "not a JSON object"),
    ];
    for (body, field, words) in cases {
        let reply = api.put(&user, TASK, body.clone()).await;
        assert_eq!(reply.status, 400, "{body}: {}", reply.text);
        let errors = reply.problem(400);
        let messages = errors
            .as_object()
            .and_then(|e| e.iter().find(|(k, _)| k.starts_with(field)))
            .map(|(_, v)| v.to_string())
            .unwrap_or_else(|| panic!("{body}: no error for {field}: {}", reply.text));
        assert!(
            messages.contains(words),
            "{body}: {field}: {words:?} not in {messages}"
        );
    }
    // Several problems are reported together.
    let reply = api
        .put(
            &user,
            TASK,
            json!({"url": "ftp://x/", "xPath": "//[", "recurrenceInSeconds": 1}),
        )
        .await;
    let errors = reply.problem(400).as_object().unwrap();
    assert!(errors.contains_key("url") && errors.contains_key("xPath"));
    assert!(errors.contains_key("recurrenceInSeconds"));

    // Malformed JSON.
    let request = api
        .client()
        .put(api.url(TASK))
        .header("authorization", format!("bearer {}", user.token))
        .header("content-type", "application/json")
        .body("{\"url\": \"https://e.com/\",");
    let reply = api.raw(request).await;
    assert!(
        reply.problem(400).to_string().contains("EOF while parsing"),
        "{}",
        reply.text
    );

    // Nothing was stored.
    let list = api.get(&user, "/thirdparty/v1/folder/list").await;
    assert_eq!(list.ok()["tasks"], json!([]));
}

both!(paused_monitors_and_sql_text_are_stored_verbatim);
async fn paused_monitors_and_sql_text_are_stored_verbatim() {
    let api = Api::start().await;
    let user = api.user("cy@example.com").await;
    for recurrence in [json!(0), json!(null), json!(60)] {
        let mut body = monitor("p", "https://example.com/");
        body["recurrenceInSeconds"] = recurrence.clone();
        let created = api.task(&user, body).await;
        assert_eq!(created["recurrenceInSeconds"], recurrence);
    }
    let hostile = "Robert'); DROP TABLE tasks;-- % _ \\ \"quoted\" 🍵";
    let mut body = monitor(hostile, "https://example.com/?q=1'%20OR%20'1'='1");
    body["note"] = json!(hostile);
    let created = api.task(&user, body).await;
    assert_eq!(created["name"], hostile);
    let fetched = api.get(&user, &format!("{TASK}/{}", id(&created))).await;
    assert_eq!(fetched.ok()["note"], hostile);
    let found = api
        .get(&user, "/thirdparty/v1/task/search?query=%25%20_")
        .await;
    assert_eq!(
        found.ok().as_array().unwrap().len(),
        1,
        "% and _ match literally"
    );
    let nul = api
        .get(&user, "/thirdparty/v1/task/search?query=Robert%00")
        .await;
    nul.field_error("query", "NUL");
}

both!(search_matches_every_term_in_name_url_or_note_by_name_at_most_500);
async fn search_matches_every_term_in_name_url_or_note_by_name_at_most_500() {
    let api = Api::start().await;
    let user = api.user("dee@example.com").await;
    let make = |name: &str, url: &str, note: Option<&str>| {
        let mut m = Monitor::new(url);
        m.name = Some(name.to_string());
        m.note = note.map(str::to_string);
        m.recurrence_in_seconds = Some(3600);
        m
    };
    let uid = &user.account.id;
    for m in [
        make("Zebra Tea", "https://shop.example.com/tea", None),
        make(
            "apple juice",
            "https://shop.example.com/juice",
            Some("Organic"),
        ),
        make("Äpfel", "https://markt.example.de/obst", Some("bio TEA")),
    ] {
        api.store.create_task(uid, &m).await.unwrap();
    }
    let names = |reply: &crate::Reply| -> Vec<String> {
        reply
            .ok()
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["name"].as_str().unwrap().to_string())
            .collect()
    };
    let search = |q: &str| {
        let path = format!("/thirdparty/v1/task/search?query={q}");
        let (api, user) = (&api, &user);
        async move { api.get(user, &path).await }
    };
    assert_eq!(
        names(&search("tea").await),
        ["Zebra Tea", "Äpfel"].map(String::from),
        "by name, case-insensitive"
    );
    assert_eq!(names(&search("SHOP%20organic").await), ["apple juice"]);
    assert_eq!(
        names(&search("äPFEL").await),
        ["Äpfel"],
        "Unicode case folding"
    );
    assert!(
        names(&search("tea%20juice").await).is_empty(),
        "every term must match"
    );
    assert_eq!(names(&search("").await).len(), 3);
    api.get(
        &user,
        &format!("/thirdparty/v1/task/search?query={}", "x".repeat(1001)),
    )
    .await
    .field_error("query", "at most 1000");

    for i in 0..510 {
        api.store
            .create_task(
                uid,
                &make(&format!("bulk {i:04}"), "https://bulk.example.com/", None),
            )
            .await
            .unwrap();
    }
    let found = names(&search("bulk").await);
    assert_eq!(found.len(), 500);
    assert_eq!(found[0], "bulk 0000");
    assert_eq!(found[499], "bulk 0499");
}

both!(a_portal_monitor_lists_its_pages_with_their_latest_data);
async fn a_portal_monitor_lists_its_pages_with_their_latest_data() {
    let api = Api::start().await;
    let user = api.user("eve@example.com").await;
    let single = api
        .task(&user, monitor("one", "https://example.com/"))
        .await;
    let reply = api
        .get(&user, &format!("{TASK}/{}/pages", id(&single)))
        .await;
    reply.field_error("id", "Portal");

    let mut body = monitor("site", "https://example.com/");
    body["jobType"] = json!("Portal");
    let portal = api.task(&user, body).await;
    let pages_path = format!("{TASK}/{}/pages", id(&portal));
    assert_eq!(
        api.get(&user, &pages_path).await.ok(),
        &json!([]),
        "empty until checked"
    );

    let at = |s: i64| chrono::DateTime::from_timestamp(1_800_000_000 + s, 0).unwrap();
    let task_id = id(&portal);
    let page = |url: &str, name: Option<&str>| Series::Page {
        task_id: task_id.clone(),
        url: url.to_string(),
        name: name.map(str::to_string),
    };
    let store = &api.store;
    store
        .append_entry(
            &page("https://example.com/", Some("Home")),
            &ClientData::value(at(0), "Welcome".into()),
        )
        .await
        .unwrap();
    store
        .append_entry(
            &page("https://example.com/b", None),
            &ClientData::value(at(0), "B one".into()),
        )
        .await
        .unwrap();
    store
        .append_entry(
            &page("https://example.com/b", None),
            &ClientData::failure(at(60), "HTTP 503".into()),
        )
        .await
        .unwrap();
    store
        .append_entry(
            &Series::Task(task_id.clone()),
            &ClientData::value(at(60), "https://example.com/\nhttps://example.com/b".into()),
        )
        .await
        .unwrap();

    let pages = api.get(&user, &pages_path).await.ok().clone();
    let pages = pages.as_array().unwrap();
    assert_eq!(pages.len(), 2);
    assert_eq!(pages[0]["url"], "https://example.com/");
    assert_eq!(pages[0]["name"], "Home");
    assert_eq!(pages[0]["data"]["raw"], "Welcome");
    assert_eq!(
        pages[1]["name"], "https://example.com/b",
        "a page without a title is named by its URL"
    );
    assert_eq!(pages[1]["data"]["error"], "HTTP 503");
    assert_eq!(pages[1]["data"]["raw"], Value::Null);

    // A page's own history, newest first.
    let history = api
        .get(
            &user,
            &format!("/thirdparty/v1/data/list/{}", id(&pages[1])),
        )
        .await;
    let entries = history.ok()["data"].as_array().unwrap().clone();
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[0]["error"], "HTTP 503");
    assert_eq!(entries[1]["raw"], "B one");
    // The monitor's own value and failed state come from its own entries only.
    let task = api.get(&user, &format!("{TASK}/{task_id}")).await;
    assert_eq!(
        task.ok()["data"]["raw"],
        "https://example.com/\nhttps://example.com/b"
    );
}

both!(monitors_are_created_in_bulk_all_or_none);
/// The bulk form (`PUT /tasks`, an extension) creates every monitor given or none: a problem is
/// named `[i].field`, the quota counts them together, and the stored ones come back in order.
async fn monitors_are_created_in_bulk_all_or_none() {
    let mut setup = crate::Setup::api();
    setup.store.quotas.monitors = 5;
    let api = Api::start_as(setup).await;
    let ann = api.user("ann@example.com").await;
    let folder = api.folder(&ann, "Shops", None).await;
    const TASKS: &str = "/thirdparty/v1/tasks";
    let mut with_folder = monitor("b", "https://example.com/b");
    with_folder["folderId"] = json!(folder);
    let created = api
        .put(
            &ann,
            TASKS,
            json!([
                monitor("a", "https://example.com/a"),
                with_folder,
                monitor("c", "https://example.com/c")
            ]),
        )
        .await
        .ok()
        .clone();
    let names: Vec<&str> = created
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["a", "b", "c"], "in the order given");
    assert_eq!(created[1]["folderId"], folder.as_str());
    let b = id(&created[1]);
    assert_eq!(
        api.get(&ann, &format!("{TASK}/{b}")).await.ok()["name"],
        "b"
    );
    assert_eq!(search_all(&api, &ann).await, 3);

    // One bad monitor, or one given with an id, and none is created.
    let mut bad = monitor("bad", "https://example.com/bad");
    bad["xPath"] = json!("//p[");
    let mut with_id = monitor("again", "https://example.com/a");
    with_id["id"] = json!(b);
    let refused = api
        .put(
            &ann,
            TASKS,
            json!([monitor("d", "https://example.com/d"), bad, with_id]),
        )
        .await;
    refused.field_error("[1].xPath", "");
    refused.field_error("[2].id", "PUT /task");
    let mut elsewhere = monitor("e", "https://example.com/e");
    elsewhere["folderId"] = json!("01a208a4-0000-7000-8000-000000000000");
    api.put(
        &ann,
        TASKS,
        json!([monitor("d", "https://example.com/d"), elsewhere]),
    )
    .await
    .field_error("[1].folderId", "");
    // Two more fit the quota of five; three do not, together.
    let three = json!([
        monitor("d", "https://example.com/d"),
        monitor("e", "https://example.com/e"),
        monitor("f", "https://example.com/f")
    ]);
    api.put(&ann, TASKS, three)
        .await
        .field_error("maxMonitorsPerUser", "3 more");
    api.put(&ann, TASKS, json!([]))
        .await
        .field_error("body", "1 to 1000");
    assert_eq!(
        search_all(&api, &ann).await,
        3,
        "nothing created by a refused request"
    );
}

/// How many monitors `user` has (a search without terms lists them all, up to 500).
async fn search_all(api: &Api, user: &crate::User) -> usize {
    let listed = api.get(user, "/thirdparty/v1/task/search?query=").await;
    listed.ok().as_array().unwrap().len()
}
