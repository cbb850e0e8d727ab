//! Moving in and out through the API: `POST /import` with files the real tools made
//! (`tests/fixtures/import/`), dry and for real, the quota and an invalid monitor refusing the
//! whole file, and `GET /export` streamed and read back into another account.

use crate::{Api, Setup, User};
use serde_json::{Value, json};
use wachet_server::store::Quotas;

fn fixture(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/import")
        .join(name);
    std::fs::read(path).unwrap()
}

async fn import(api: &Api, user: &User, query: &str, media: &str, file: Vec<u8>) -> crate::Reply {
    api.raw(
        api.client()
            .post(api.url(&format!("/thirdparty/v1/import{query}")))
            .header("authorization", format!("bearer {}", user.token))
            .header("content-type", media)
            .body(file),
    )
    .await
}

async fn monitors(api: &Api, user: &User) -> Vec<Value> {
    let reply = api.get(user, "/thirdparty/v1/task/search").await;
    reply.ok().as_array().unwrap().clone()
}

async fn export(api: &Api, user: &User) -> crate::Reply {
    api.get(user, "/thirdparty/v1/export?history=true").await
}

both!(a_backup_is_imported_all_or_nothing_and_exported_again);
async fn a_backup_is_imported_all_or_nothing_and_exported_again() {
    let mut setup = Setup::api();
    setup.store.quotas = Quotas {
        monitors: 12,
        ..Quotas::default()
    };
    let api = Api::start_as(setup).await;
    let (ann, bob) = (
        api.user("ann@example.com").await,
        api.user("bob@example.com").await,
    );
    let backup = fixture("changedetection-0.60.10-backup.zip");

    // Dry: the report, nothing stored.
    let reply = import(
        &api,
        &ann,
        "?dryRun=true",
        "application/zip",
        backup.clone(),
    )
    .await;
    let report = reply.ok();
    assert_eq!(report["format"], "changedetection");
    assert_eq!(report["dryRun"], true);
    assert_eq!(report["monitors"].as_array().unwrap().len(), 9);
    assert!(
        report["leftOut"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l["item"] == "watch \"Status JSON\"" && l["what"] == "filter jq:.status"),
        "{report}"
    );
    assert!(monitors(&api, &ann).await.is_empty());

    // For real, its format read from its first bytes.
    let reply = import(&api, &ann, "?history=1", "application/octet-stream", backup).await;
    let report = reply.ok();
    assert_eq!(report["historyEntries"], 2);
    assert!(report["monitors"][0]["id"].is_string(), "{report}");
    let stored = monitors(&api, &ann).await;
    assert_eq!(stored.len(), 9);
    let css = stored
        .iter()
        .find(|m| m["name"] == "Articles (CSS)")
        .unwrap();
    assert_eq!(css["dynamicContent"], true);

    // Seven more would pass the quota of 12: none comes in, and no folder is left behind.
    let jobs = fixture("urlwatch-2.29-urls.yaml");
    let reply = import(&api, &ann, "", "application/yaml", jobs).await;
    reply.field_error("maxMonitorsPerUser", "9 monitors and 7 more");
    // One invalid monitor among valid ones: none, and the reply names it.
    let broken = "url: https://example.com/a\n---\nname: Broken\nurl: https://example.com/b\n\
                  filter:\n  - xpath: '//div['\n";
    let reply = import(&api, &ann, "", "text/yaml", broken.into()).await;
    let errors = reply.problem(400);
    assert!(
        errors["job 2 \"Broken\": xPath"].is_array(),
        "{}",
        reply.text
    );
    // A file no tool made.
    let reply = import(
        &api,
        &ann,
        "",
        "application/octet-stream",
        b"hello".to_vec(),
    )
    .await;
    reply.field_error("body", "none of the formats wachet imports");
    assert_eq!(monitors(&api, &ann).await.len(), 9);

    // The export: streamed, whole, without the webhook's URL, which is a secret.
    api.put(
        &ann,
        "/thirdparty/v1/user/notificationEndpoints",
        json!({"notificationEndpoints": [
            {"type": "Webhook", "value": "https://hooks.example.com/secret-path"}
        ]}),
    )
    .await
    .ok();
    let reply = export(&api, &ann).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(reply.content_type(), "application/json");
    assert!(!reply.text.contains("secret-path"), "{}", reply.text);
    let document = &reply.body;
    assert_eq!(document["complete"], true);
    assert_eq!(document["monitors"].as_array().unwrap().len(), 9);
    assert_eq!(document["folders"].as_array().unwrap().len(), 2);
    assert_eq!(document["notificationEndpoints"][0]["type"], "Webhook");

    // Another account reads it back; each sees only its own.
    let reply = import(
        &api,
        &bob,
        "?history=true",
        "application/json",
        reply.text.into(),
    )
    .await;
    assert_eq!(reply.ok()["historyEntries"], 2);
    assert_eq!(monitors(&api, &bob).await.len(), 9);
    let bobs = export(&api, &bob).await;
    let ids = |d: &Value| -> Vec<String> {
        d["monitors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap().to_string())
            .collect()
    };
    let anns = ids(document);
    assert!(ids(&bobs.body).iter().all(|id| !anns.contains(id)));
}

/// The folder named `name` among the subfolders `path` lists.
async fn subfolder(api: &Api, user: &User, path: &str, name: &str) -> Value {
    let listed = api.get(user, path).await;
    listed.ok()["subfolders"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("no folder {name} in {}", listed.text))
}

both!(a_folders_endpoints_travel_through_export_and_import_with_their_schedules);
async fn a_folders_endpoints_travel_through_export_and_import_with_their_schedules() {
    let api = Api::start().await;
    let (ann, bob) = (
        api.user("ann@example.com").await,
        api.user("bob@example.com").await,
    );
    let mail = json!({"type": "Email", "value": "news@example.com",
        "title": "{{ monitor.name }}", "format": "text",
        "digest": {"everyMinutes": 30}, "quietHours": {"from": "22:00", "to": "07:00"}});
    let news = api
        .post(
            &ann,
            "/thirdparty/v1/folder",
            json!({"name": "News", "notificationEndpoints": [mail,
                {"type": "Webhook", "value": "https://hooks.example/secret-news",
                 "digest": {"dailyAt": "08:00"}}]}),
        )
        .await
        .ok()["id"]
        .as_str()
        .unwrap()
        .to_string();
    api.post(
        &ann,
        "/thirdparty/v1/folder",
        json!({"name": "Local", "parentId": news,
               "notificationEndpoints": [{"type": "Email", "value": "local@example.com"}]}),
    )
    .await
    .ok();

    // Exported with the folder, the webhook's URL (a secret) left out.
    let exported = export(&api, &ann).await;
    assert!(!exported.text.contains("secret-news"), "{}", exported.text);
    let folders = exported.body["folders"].as_array().unwrap();
    assert_eq!(
        folders[0]["notificationEndpoints"][0], mail,
        "{}",
        exported.text
    );
    assert_eq!(
        folders[0]["notificationEndpoints"][1],
        json!({"type": "Webhook", "value": null, "digest": {"dailyAt": "08:00"}})
    );

    // Another account imports it: the folders name their endpoints again, with their
    // templates, digests and quiet hours; the webhook without its URL is said to be left out.
    let reply = import(
        &api,
        &bob,
        "",
        "application/json",
        exported.text.clone().into(),
    )
    .await;
    let report = reply.ok().clone();
    assert!(
        report["leftOut"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l["item"] == "folder \"News\"" && l["what"] == "1 notification endpoint(s)"),
        "{report}"
    );
    let imported = subfolder(&api, &bob, "/thirdparty/v1/folder/list", "News").await;
    assert_eq!(
        imported["notificationEndpoints"],
        json!([mail]),
        "{imported}"
    );
    let inner = format!(
        "/thirdparty/v1/folder/list?parentId={}",
        imported["id"].as_str().unwrap()
    );
    let local = subfolder(&api, &bob, &inner, "Local").await;
    assert_eq!(
        local["notificationEndpoints"],
        json!([{"type": "Email", "value": "local@example.com"}])
    );

    // Imported again: the folders exist and keep what they name, saying so.
    api.post(
        &bob,
        "/thirdparty/v1/folder",
        json!({"id": imported["id"], "name": "News", "notificationEndpoints": []}),
    )
    .await
    .ok();
    let again = import(&api, &bob, "", "application/json", exported.text.into()).await;
    let report = again.ok().clone();
    assert!(
        report["leftOut"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l["item"] == "folder \"News\""
                && l["reason"]
                    .as_str()
                    .unwrap()
                    .contains("keeps the endpoints it names")),
        "{report}"
    );
    let kept = subfolder(&api, &bob, "/thirdparty/v1/folder/list", "News").await;
    assert!(kept["notificationEndpoints"].is_null(), "{kept}");
}

/// The settings page in real Chromium: a backup uploaded, its report read (what comes in,
/// what does not) and confirmed, the export downloaded. On SQLite only: the storage behind it
/// is the same operation the API test runs on both backends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_settings_page_reads_confirms_and_exports_in_a_real_browser() {
    use crate::support::web::{click_and_wait, eval, screenshot, until};
    use chromiumoxide::cdp::browser_protocol::dom::SetFileInputFilesParams;
    let Some(_guard) = wachet::testing::browser_test().await else {
        return;
    };
    let api = Api::start().await;
    let user = api.user("mover@example.com").await;
    let (_driver, page, _dialogs) = crate::support::web::signed_in_browser(&api, &user).await;
    page.goto(api.url("/settings")).await.unwrap();
    until(&page, "!!document.querySelector('#import-file')").await;
    let input = page.find_element("#import-file").await.unwrap();
    let backup = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/import/changedetection-0.60.10-backup.zip");
    page.execute(
        SetFileInputFilesParams::builder()
            .file(backup.display().to_string())
            .backend_node_id(input.backend_node_id)
            .build()
            .unwrap(),
    )
    .await
    .unwrap();
    click_and_wait(
        &page,
        "form[action='/settings/import'] button",
        "document.querySelector('h1')?.textContent === 'Import: what comes in'",
    )
    .await;
    let text: String = eval(&page, "document.body.innerText").await;
    for words in [
        "9 monitor(s) will come in, 2 new folder(s)",
        "watch \"Status JSON\": filter jq:.status",
        "watch \"With browser steps\": browser steps (1)",
        "https://example.net/articles",
    ] {
        assert!(text.contains(words), "{words:?} not in {text}");
    }
    assert!(
        monitors(&api, &user).await.is_empty(),
        "nothing before the confirmation"
    );
    screenshot(&page, "import-report", 1440).await;
    screenshot(&page, "import-report", 375).await;
    click_and_wait(
        &page,
        "form[action='/settings/import/confirm'] button",
        "document.querySelector('h1')?.textContent === 'Imported'",
    )
    .await;
    assert_eq!(monitors(&api, &user).await.len(), 9);

    // The download link gives the export, with this session.
    let export: String = eval(&page, "fetch('/settings/export').then(r => r.text())").await;
    let document: Value = serde_json::from_str(&export).unwrap();
    assert_eq!(document["format"], "wachet-export");
    assert_eq!(document["monitors"].as_array().unwrap().len(), 9);
}
