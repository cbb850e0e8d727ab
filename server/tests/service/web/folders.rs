//! The web interface: folder management, bulk actions, search, filters and live updates, over
//! the real service (with its scheduler where checks matter) and in real headless Chromium.

use crate::support::web::{
    csrf_of, eval, monitor_count, page_text, screenshot, session_cookie, type_into, until,
    until_value, width,
};
use crate::support::web::{get_page, location, post_form, screenshots, signed_in_browser};
use crate::{Api, User, id};
use serde_json::{Value, json};
use std::time::Duration;
use wachet::model::ClientData;
use wachet::testing::{FixtureServer, Reply};
use wachet_server::store::Series;

/// Appends checks to a monitor's history as the scheduler would.
async fn history(api: &Api, task: &str, checks: &[Result<&str, &str>]) {
    let base = chrono::Utc::now() - chrono::Duration::hours(1);
    for (i, check) in checks.iter().enumerate() {
        let at = base + chrono::Duration::seconds(i as i64);
        let data = match check {
            Ok(value) => ClientData::value(at, value.to_string()),
            Err(error) => ClientData::failure(at, error.to_string()),
        };
        api.store
            .append_entry(&Series::Task(task.to_string()), &data)
            .await
            .unwrap();
    }
}

/// The ids of the monitor rows of a list page, in order.
fn rows(html: &str) -> Vec<String> {
    html.split("data-monitor=\"")
        .skip(1)
        .map(|part| part[..36].to_string())
        .collect()
}

/// The HTML of the row of monitor `id`.
fn row<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html
        .find(&format!("id=\"monitor-{id}\""))
        .unwrap_or_else(|| panic!("no row of {id}"));
    let end = html[start..]
        .find("</dl></li>")
        .map_or(html.len(), |e| start + e);
    &html[start..end]
}

both!(search_and_filters_narrow_the_list_and_stay_in_the_address);
async fn search_and_filters_narrow_the_list_and_stay_in_the_address() {
    let api = Api::start().await;
    let user = api.user("search@example.com").await;
    let other = api.user("other@example.com").await;
    let shops = api.folder(&user, "Shops", None).await;
    let teas = api.folder(&user, "Tea shops", Some(&shops)).await;
    let task = |name: &str, folder: Option<&str>, recurrence: i64| {
        json!({"name": name, "url": format!("https://{}.example.com/", name.replace(' ', "-")),
               "recurrenceInSeconds": recurrence, "folderId": folder})
    };
    let house = id(&api.task(&user, task("Tea house", Some(&teas), 3600)).await);
    let coffee = id(&api
        .task(&user, task("Coffee bar", Some(&shops), 3600))
        .await);
    let paused = id(&api.task(&user, task("Paused tea", None, 0)).await);
    let theirs = id(&api.task(&other, task("Tea elsewhere", None, 3600)).await);
    history(&api, &house, &[Ok("a"), Ok("a"), Ok("b")]).await;
    history(&api, &coffee, &[Ok("x"), Err("HTTP 503 <b>down</b>")]).await;
    let cookie = session_cookie(&api, &user).await;
    let list = |path: String| {
        let cookie = cookie.clone();
        let api = &api;
        async move {
            let (status, html) = page_text(api, &cookie, &path).await;
            assert_eq!(status, 200, "{path}: {html}");
            html
        }
    };

    // The plain root: its folder and its one monitor, each row with its strip and state.
    let root = list("/".into()).await;
    assert_eq!(rows(&root), [paused.as_str()]);
    assert!(root.contains(">Shops<"), "{root}");
    // The API's search over names and URLs (and only this user's monitors).
    let found = list("/?q=tea".into()).await;
    assert_eq!(rows(&found), [paused.as_str(), house.as_str()], "by name");
    assert!(!found.contains(&theirs));
    assert!(found.contains("2 monitors match"), "{found}");
    assert!(
        found.contains("value=\"tea\""),
        "the search stays in its field"
    );
    // Searching everywhere names each monitor's folder.
    assert!(
        row(&found, &house).contains("in Shops / Tea shops"),
        "{found}"
    );
    assert_eq!(
        rows(&list("/?q=coffee-bar.example".into()).await),
        [coffee.as_str()],
        "by URL"
    );
    // Failed: with its error, escaped; and the strip says what each check did.
    let failed = list("/?state=failed".into()).await;
    assert_eq!(rows(&failed), [coffee.as_str()]);
    assert!(
        failed.contains("<option value=\"failed\" selected>"),
        "{failed}"
    );
    let coffee_row = row(&failed, &coffee);
    assert!(
        coffee_row.contains("HTTP 503 &lt;b&gt;down&lt;/b&gt;"),
        "{coffee_row}"
    );
    assert!(coffee_row.contains("badge failed"), "{coffee_row}");
    let house_row = row(&found, &house);
    let marks: Vec<&str> = house_row
        .split("class=\"mark ")
        .skip(1)
        .map(|m| &m[..m.find('"').unwrap()])
        .collect();
    assert_eq!(marks, ["changed", "unchanged", "changed"], "{house_row}");
    assert!(house_row.contains("<span class=\"visually-hidden\">unchanged</span>"));
    assert!(house_row.contains("Last 3 checks, oldest first"));
    // Paused, alone and with a search.
    assert_eq!(
        rows(&list("/?state=paused".into()).await),
        [paused.as_str()]
    );
    assert_eq!(
        rows(&list("/?q=house&state=paused".into()).await),
        Vec::<String>::new()
    );
    assert_eq!(
        rows(&list("/?q=tea&state=paused".into()).await),
        [paused.as_str()]
    );
    // In a folder: that folder and below, or everywhere.
    let within = list(format!("/folders/{shops}?q=tea")).await;
    assert_eq!(rows(&within), [house.as_str()]);
    let everywhere = list(format!("/folders/{shops}?q=tea&scope=all")).await;
    assert_eq!(rows(&everywhere), [paused.as_str(), house.as_str()]);
    assert!(everywhere.contains("<option value=\"all\" selected>"));
    assert_eq!(
        rows(&list(format!("/folders/{teas}?state=failed")).await),
        Vec::<String>::new()
    );
    assert_eq!(
        rows(&list(format!("/folders/{shops}?state=failed")).await),
        [coffee.as_str()]
    );
    // The bulk form returns to the same filtered list.
    assert!(
        within.contains("name=\"back\" value=\"/folders/"),
        "{within}"
    );
    assert!(within.contains("?q=tea\""), "{within}");

    // Bad input: a 400 page or the message at the field; never a 500.
    let (status, html) = page_text(&api, &cookie, "/?state=broken").await;
    assert_eq!(status, 400, "{html}");
    assert!(html.contains("“state”"), "{html}");
    let long = "t".repeat(1001);
    let (status, html) = page_text(&api, &cookie, &format!("/?q={long}")).await;
    assert_eq!(status, 400, "{html}");
    assert!(html.contains("aria-invalid=\"true\""), "{html}");
    assert!(
        html.contains("aria-describedby=\"search-q-error\""),
        "{html}"
    );
    assert!(html.contains("at most 1000 characters"), "{html}");
    let (status, _) = page_text(&api, &cookie, "/?q=a&q=b").await;
    assert_eq!(status, 400);
    // Another user's folder, filtered or not: the 404 page.
    let theirs_cookie = session_cookie(&api, &other).await;
    let (status, html) = page_text(&api, &theirs_cookie, &format!("/folders/{shops}?q=tea")).await;
    assert_eq!(status, 404);
    assert!(!html.contains("Tea house"));
}

async fn entries(api: &Api, user: &User, task: &str) -> usize {
    api.get(user, &format!("/thirdparty/v1/data/list/{task}?count=500"))
        .await
        .ok()["data"]
        .as_array()
        .unwrap()
        .len()
}

/// The number of history entries of `task` once it reaches `n` (or after 30 s, what it has).
async fn wait_entries(api: &Api, user: &User, task: &str, n: usize) -> usize {
    let mut seen = 0;
    for _ in 0..300 {
        seen = entries(api, user, task).await;
        if seen >= n {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    seen
}

async fn recurrence(api: &Api, user: &User, task: &str) -> Value {
    api.get(user, &format!("/thirdparty/v1/task/{task}"))
        .await
        .ok()["recurrenceInSeconds"]
        .clone()
}

both!(
    bulk_actions_change_the_monitors_and_delete_states_its_counts_first,
    multi_thread
);
async fn bulk_actions_change_the_monitors_and_delete_states_its_counts_first() {
    let site = FixtureServer::builder()
        .page("/a", "<p>A</p>")
        .start()
        .await
        .unwrap();
    let api = Api::start_checking().await;
    let user = api.user("bulk@example.com").await;
    let other = api.user("bystander@example.com").await;
    let mut ids = Vec::new();
    for name in ["Alpha", "Beta", "Gamma"] {
        let created = api
            .task(
                &user,
                json!({"name": name, "url": site.url("/a"), "recurrenceInSeconds": 3600}),
            )
            .await;
        ids.push(id(&created));
    }
    let theirs = id(&api
        .task(
            &other,
            json!({"name": "Theirs", "url": site.url("/a"), "recurrenceInSeconds": 3600}),
        )
        .await);
    // Each is checked once at creation.
    for task in &ids {
        until_value(&api, &user, task, "A").await;
    }
    let (a, b, c) = (ids[0].as_str(), ids[1].as_str(), ids[2].as_str());
    let cookie = session_cookie(&api, &user).await;
    let (_, html) = page_text(&api, &cookie, "/").await;
    assert!(html.contains("form id=\"bulk\""), "{html}");
    let csrf = csrf_of(&html);
    let csrf = csrf.as_str();

    // Pause two: the API sees them paused, the third runs on; the list says so.
    let response = post_form(
        &api,
        &cookie,
        "/monitors/bulk",
        &[
            ("csrf", csrf),
            ("back", "/"),
            ("action", "pause"),
            ("id", a),
            ("id", b),
        ],
    )
    .await;
    assert_eq!(response.status(), 303);
    assert_eq!(location(&response), "/?done=paused&n=2");
    assert_eq!(recurrence(&api, &user, a).await, 0);
    assert_eq!(recurrence(&api, &user, b).await, 0);
    assert_eq!(recurrence(&api, &user, c).await, 3600);
    let (_, html) = page_text(&api, &cookie, "/?done=paused&n=2").await;
    assert!(html.contains("2 monitors paused."), "{html}");
    // Resume one.
    let response = post_form(
        &api,
        &cookie,
        "/monitors/bulk",
        &[
            ("csrf", csrf),
            ("back", "/?state=paused"),
            ("action", "resume"),
            ("id", a),
        ],
    )
    .await;
    assert_eq!(location(&response), "/?state=paused&done=resumed&n=1");
    assert_eq!(recurrence(&api, &user, a).await, 3600);
    // A stored monitor is checked at once, so the resumed one is checked again: wait for that
    // check before counting what "check now" adds.
    wait_entries(&api, &user, a, 2).await;
    // Check now: the running ones are checked at once (an hour before their time); the paused
    // one is not.
    let before = entries(&api, &user, b).await;
    let counts = [
        (a, entries(&api, &user, a).await),
        (c, entries(&api, &user, c).await),
    ];
    let response = post_form(
        &api,
        &cookie,
        "/monitors/bulk",
        &[
            ("csrf", csrf),
            ("back", "/"),
            ("action", "check"),
            ("id", a),
            ("id", b),
            ("id", c),
        ],
    )
    .await;
    assert_eq!(location(&response), "/?done=checking&n=2");
    for (task, was) in counts {
        assert_eq!(
            wait_entries(&api, &user, task, was + 1).await,
            was + 1,
            "checked again"
        );
    }
    assert_eq!(
        entries(&api, &user, b).await,
        before,
        "a paused monitor is not checked"
    );

    // Move: first the folder to choose, then the API's move.
    let folder = api.folder(&user, "Moved <here>", None).await;
    let response = post_form(
        &api,
        &cookie,
        "/monitors/bulk",
        &[
            ("csrf", csrf),
            ("back", "/"),
            ("action", "move"),
            ("id", a),
            ("id", b),
        ],
    )
    .await;
    assert_eq!(response.status(), 200);
    let page = response.text().await.unwrap();
    assert!(page.contains("Move 2 monitors"), "{page}");
    assert!(page.contains("Moved &lt;here&gt;"), "{page}");
    assert!(page.contains("<label for=\"move-folder\">"), "{page}");
    let response = post_form(
        &api,
        &cookie,
        "/monitors/bulk/move",
        &[
            ("csrf", csrf),
            ("back", "/"),
            ("folder", &folder),
            ("id", a),
            ("id", b),
        ],
    )
    .await;
    assert_eq!(
        location(&response),
        format!("/folders/{folder}?done=moved&n=2")
    );
    let listed = api
        .get(
            &user,
            &format!("/thirdparty/v1/folder/list?parentId={folder}"),
        )
        .await;
    let moved: Vec<&str> = listed.ok()["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(moved, [a, b]);

    // Delete: first what goes with them, counted through the API; nothing deleted yet.
    let history = entries(&api, &user, a).await + entries(&api, &user, b).await;
    let response = post_form(
        &api,
        &cookie,
        "/monitors/bulk",
        &[
            ("csrf", csrf),
            ("back", "/"),
            ("action", "delete"),
            ("id", a),
            ("id", b),
        ],
    )
    .await;
    assert_eq!(response.status(), 200);
    let page = response.text().await.unwrap();
    let stated = format!(
        "This deletes <strong class=\"monitor-count\">2 monitors</strong> with \
         <strong class=\"history-count\">{history} history entries</strong> and \
         <strong class=\"notification-count\">0 notifications</strong>"
    );
    assert!(page.contains(&stated), "{stated}\n{page}");
    assert_eq!(monitor_count(&api, &user).await, 3);
    let response = post_form(
        &api,
        &cookie,
        "/monitors/bulk/delete",
        &[("csrf", csrf), ("back", "/"), ("id", a), ("id", b)],
    )
    .await;
    assert_eq!(location(&response), "/?done=deleted&n=2");
    assert_eq!(monitor_count(&api, &user).await, 1);
    assert_eq!(
        api.get(&user, &format!("/thirdparty/v1/task/{a}"))
            .await
            .status,
        404
    );
    // A double submit deletes nothing more and fails nothing.
    let response = post_form(
        &api,
        &cookie,
        "/monitors/bulk/delete",
        &[("csrf", csrf), ("back", "/"), ("id", a), ("id", b)],
    )
    .await;
    assert_eq!(location(&response), "/?done=deleted&n=0");

    // Bad input changes nothing: another user's monitor in the selection (the 404 page, and
    // not even this user's own is paused), no CSRF token, nothing ticked, another site's
    // address to go back to.
    let response = post_form(
        &api,
        &cookie,
        "/monitors/bulk",
        &[
            ("csrf", csrf),
            ("action", "pause"),
            ("id", c),
            ("id", &theirs),
        ],
    )
    .await;
    assert_eq!(response.status(), 404);
    assert_eq!(recurrence(&api, &user, c).await, 3600);
    assert_eq!(recurrence(&api, &other, &theirs).await, 3600);
    let response = post_form(
        &api,
        &cookie,
        "/monitors/bulk/delete",
        &[("id", &theirs), ("id", c)],
    )
    .await;
    assert_eq!(response.status(), 403);
    assert_eq!(monitor_count(&api, &user).await, 1);
    let response = post_form(
        &api,
        &cookie,
        "/monitors/bulk",
        &[("csrf", csrf), ("action", "pause")],
    )
    .await;
    assert_eq!(response.status(), 400);
    assert!(
        response
            .text()
            .await
            .unwrap()
            .contains("No monitor was selected")
    );
    let response = post_form(
        &api,
        &cookie,
        "/monitors/bulk",
        &[
            ("csrf", csrf),
            ("back", "//evil.example/"),
            ("action", "pause"),
            ("id", c),
        ],
    )
    .await;
    assert_eq!(location(&response), "/?done=paused&n=1");
    assert_eq!(monitor_count(&api, &other).await, 1);
}

/// The folder names of a list page's folder cards.
const FOLDER_NAMES: &str = "[...document.querySelectorAll('.folder-name')].map(e => e.textContent)";
const CRUMBS: &str = "[...document.querySelectorAll('.breadcrumbs a')].map(a => a.textContent)";

/// Clicks the link or button whose text is `text`, then waits for `marker`.
async fn click_text(page: &chromiumoxide::Page, text: &str, marker: &str) {
    let js = format!(
        "(() => {{ const e = [...document.querySelectorAll('main a, main button')].find(e => e.textContent.trim() === {text:?}); if (!e) return false; e.click(); return true; }})()"
    );
    assert!(eval::<bool>(page, &js).await, "no {text:?} to click");
    until(page, marker).await;
}

in_browser!(
    folders_are_created_renamed_moved_and_deleted_through_the_pages_in_a_real_browser,
    multi_thread
);
async fn folders_are_created_renamed_moved_and_deleted_through_the_pages_in_a_real_browser() {
    let Some(_guard) = wachet::testing::browser_test().await else {
        return;
    };
    let api = Api::start().await;
    let user = api.user("folders@example.com").await;
    let (driver, page, _) = signed_in_browser(&api, &user).await;

    // Create at the top, then inside it.
    click_text(
        &page,
        "New folder",
        "!!document.querySelector('#folder-name')",
    )
    .await;
    // An empty name: the message at the field, nothing created.
    page.evaluate("document.querySelector('#folder-name').removeAttribute('required')")
        .await
        .unwrap();
    click_text(
        &page,
        "Create the folder",
        "!!document.querySelector('#folder-name-error')",
    )
    .await;
    assert_eq!(
        eval::<String>(
            &page,
            "document.querySelector('#folder-name').getAttribute('aria-describedby')"
        )
        .await,
        "folder-name-error"
    );
    screenshot(&page, "folder-new", 1440).await;
    screenshot(&page, "folder-new", 375).await;
    width(&page, 1440).await;
    type_into(&page, "#folder-name", "Shops").await;
    click_text(
        &page,
        "Create the folder",
        "location.pathname === '/' && !!document.querySelector('.folder')",
    )
    .await;
    assert_eq!(eval::<Vec<String>>(&page, FOLDER_NAMES).await, ["Shops"]);
    click_text(
        &page,
        "New folder",
        "!!document.querySelector('#folder-name')",
    )
    .await;
    type_into(&page, "#folder-name", "Archive").await;
    click_text(
        &page,
        "Create the folder",
        "!!document.querySelector('.folder')",
    )
    .await;
    page.evaluate("[...document.querySelectorAll('.folder')].find(a => a.textContent.includes('Shops')).click()")
        .await
        .unwrap();
    until(&page, "location.pathname.startsWith('/folders/')").await;
    let shops = eval::<String>(&page, "location.pathname").await["/folders/".len()..].to_string();
    click_text(
        &page,
        "New folder",
        "!!document.querySelector('#folder-name')",
    )
    .await;
    type_into(&page, "#folder-name", "Tea <i>leaves</i>").await;
    click_text(
        &page,
        "Create the folder",
        &format!("location.pathname === '/folders/{shops}' && !!document.querySelector('.folder')"),
    )
    .await;
    let listed = api
        .get(
            &user,
            &format!("/thirdparty/v1/folder/list?parentId={shops}"),
        )
        .await;
    let tea = listed.ok()["subfolders"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(listed.body["subfolders"][0]["name"], "Tea <i>leaves</i>");
    // A monitor with history in it: the counts up the tree include it.
    let task = id(&api
        .task(&user, json!({"name": "Sencha", "url": "https://example.com/", "recurrenceInSeconds": 3600, "folderId": tea}))
        .await);
    history(&api, &task, &[Ok("1"), Ok("2")]).await;
    page.reload().await.unwrap();
    until(&page, "!!document.querySelector('.folder')").await;
    assert_eq!(
        eval::<String>(
            &page,
            "document.querySelector('.folder .counts').textContent"
        )
        .await,
        "1 monitor"
    );
    assert_eq!(
        eval::<String>(
            &page,
            "document.querySelector('.folder-counts').textContent"
        )
        .await,
        "1 monitor",
        "Shops counts what its subfolder holds"
    );
    screenshots(&page, "folder", 375).await;

    // Rename the subfolder: its name shows as text.
    page.goto(api.url(&format!("/folders/{tea}")))
        .await
        .unwrap();
    until(&page, "!!document.querySelector('h1')").await;
    click_text(&page, "Rename", "!!document.querySelector('#folder-name')").await;
    assert_eq!(
        eval::<String>(&page, "document.querySelector('#folder-name').value").await,
        "Tea <i>leaves</i>"
    );
    page.evaluate("document.querySelector('#folder-name').value = ''")
        .await
        .unwrap();
    type_into(&page, "#folder-name", "Green <b>tea</b>").await;
    click_text(
        &page,
        "Rename",
        &format!(
            "location.pathname === '/folders/{tea}' && !document.querySelector('#folder-name')"
        ),
    )
    .await;
    assert_eq!(
        eval::<Vec<String>>(&page, CRUMBS).await,
        ["All monitors", "Shops", "Green <b>tea</b>"]
    );
    assert_eq!(
        eval::<i64>(&page, "document.querySelectorAll('main b, main i').length").await,
        0
    );

    // Move Shops: the form offers the top and Archive, never Shops' own subfolders. Meanwhile
    // another tab moves Archive into Shops: moving Shops into Archive is now refused, with the
    // message at the field, and nothing moves.
    page.goto(api.url(&format!("/folders/{shops}/move")))
        .await
        .unwrap();
    until(&page, "!!document.querySelector('#move-into')").await;
    let options: Vec<String> = eval(
        &page,
        "[...document.querySelectorAll('#move-into option')].map(o => o.textContent)",
    )
    .await;
    assert_eq!(options, ["All monitors (top level)", "Archive"]);
    let archive = eval::<String>(
        &page,
        "document.querySelectorAll('#move-into option')[1].value",
    )
    .await;
    api.post(
        &user,
        "/thirdparty/v1/folder/move",
        json!({"folderIds": [archive], "folderId": shops}),
    )
    .await
    .ok();
    page.evaluate(format!(
        "document.querySelector('#move-into').value = '{archive}'"
    ))
    .await
    .unwrap();
    click_text(
        &page,
        "Move",
        "!!document.querySelector('#move-into-error')",
    )
    .await;
    let message: String = eval(
        &page,
        "document.querySelector('#move-into-error').textContent",
    )
    .await;
    assert_eq!(
        message,
        "A folder cannot move into itself or into one of its own subfolders. Nothing was moved."
    );
    assert_eq!(
        eval::<String>(
            &page,
            "document.querySelector('#move-into').getAttribute('aria-invalid')"
        )
        .await,
        "true"
    );
    assert_eq!(
        eval::<String>(&page, "document.querySelector('#move-into').value").await,
        archive
    );
    screenshot(&page, "folder-move", 1440).await;
    screenshot(&page, "folder-move", 375).await;
    width(&page, 1440).await;
    let top = api.get(&user, "/thirdparty/v1/folder/list").await;
    let top: Vec<&str> = top.ok()["subfolders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(top, ["Shops"], "Shops did not move");

    // Move the tea folder to the top: its breadcrumbs and the counts follow.
    page.goto(api.url(&format!("/folders/{tea}/move")))
        .await
        .unwrap();
    until(&page, "!!document.querySelector('#move-into')").await;
    page.evaluate("document.querySelector('#move-into').value = ''")
        .await
        .unwrap();
    click_text(
        &page,
        "Move",
        &format!("location.pathname === '/folders/{tea}'"),
    )
    .await;
    assert_eq!(
        eval::<Vec<String>>(&page, CRUMBS).await,
        ["All monitors", "Green <b>tea</b>"]
    );
    page.goto(api.url("/")).await.unwrap();
    until(&page, "!!document.querySelector('.folder')").await;
    let cards: Vec<String> = eval(&page, "[...document.querySelectorAll('.folder')].map(a => a.querySelector('.folder-name').textContent + ': ' + a.querySelector('.counts').textContent)").await;
    assert_eq!(cards, ["Green <b>tea</b>: 1 monitor", "Shops: 0 monitors"]);

    // Delete the tea folder: first what goes with it, then it goes.
    page.goto(api.url(&format!("/folders/{tea}")))
        .await
        .unwrap();
    until(&page, "!!document.querySelector('h1')").await;
    click_text(&page, "Delete", "!!document.querySelector('.what-goes')").await;
    let stated: String = eval(&page, "document.querySelector('.what-goes').textContent").await;
    assert_eq!(
        stated,
        "This deletes the folder with 0 subfolders, 1 monitor, 2 history entries and 0 notifications. It cannot be undone."
    );
    screenshot(&page, "folder-delete", 1440).await;
    screenshot(&page, "folder-delete", 375).await;
    width(&page, 1440).await;
    assert_eq!(
        monitor_count(&api, &user).await,
        1,
        "nothing goes before the button"
    );
    click_text(&page, "Delete the folder", "location.pathname === '/'").await;
    assert_eq!(monitor_count(&api, &user).await, 0);
    assert_eq!(eval::<Vec<String>>(&page, FOLDER_NAMES).await, ["Shops"]);
    // Shops with Archive inside: the confirmation counts the subfolder.
    page.goto(api.url(&format!("/folders/{shops}/delete")))
        .await
        .unwrap();
    until(&page, "!!document.querySelector('.what-goes')").await;
    let stated: String = eval(&page, "document.querySelector('.what-goes').textContent").await;
    assert!(
        stated.starts_with("This deletes the folder with 1 subfolder, 0 monitors"),
        "{stated}"
    );

    // Another user: the same 404 page for each of these pages as for an unknown folder.
    let stranger = api.user("stranger@example.com").await;
    let cookie = session_cookie(&api, &stranger).await;
    let unknown = "019ab0c2-5c4e-7d2a-9f1e-3b8e2c1d0a11";
    for suffix in ["", "/rename", "/move", "/delete"] {
        let mine = page_text(&api, &cookie, &format!("/folders/{shops}{suffix}")).await;
        let none = page_text(&api, &cookie, &format!("/folders/{unknown}{suffix}")).await;
        assert_eq!(mine.0, 404, "{suffix}");
        assert_eq!(mine, none, "{suffix}");
    }
    let (_, html) = page_text(&api, &cookie, "/").await;
    let response = post_form(
        &api,
        &cookie,
        &format!("/folders/{shops}/delete"),
        &[("csrf", csrf_of(&html).as_str())],
    )
    .await;
    assert_eq!(response.status(), 404);
    assert_eq!(
        api.get(&user, "/thirdparty/v1/folder/list").await.ok()["subfolders"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    driver.close().await;
}

fn price(p: &str) -> String {
    format!("<html><body><p>Tea {p}</p></body></html>")
}

in_browser!(
    the_list_and_a_monitors_page_update_live_without_a_reload_in_a_real_browser,
    multi_thread
);
async fn the_list_and_a_monitors_page_update_live_without_a_reload_in_a_real_browser() {
    let Some(_guard) = wachet::testing::browser_test().await else {
        return;
    };
    let site = FixtureServer::builder()
        .page("/tea", price("3.50"))
        .page("/still", "<p>still</p>")
        .start()
        .await
        .unwrap();
    let api = Api::start_checking().await;
    let user = api.user("live@example.com").await;
    let tea = id(&api
        .task(&user, json!({"name": "Tea", "url": site.url("/tea"), "recurrenceInSeconds": 1, "alerts": [{"type": "NotEq"}]}))
        .await);
    let still = id(&api
        .task(
            &user,
            json!({"name": "Still", "url": site.url("/still"), "recurrenceInSeconds": 3600}),
        )
        .await);
    until_value(&api, &user, &tea, "3.50").await;
    until_value(&api, &user, &still, "still").await;

    let (driver, page, _) = signed_in_browser(&api, &user).await;
    until(
        &page,
        "document.documentElement.dataset.liveStream === 'ready'",
    )
    .await;
    page.evaluate("window.notReloaded = true").await.unwrap();
    let change = format!(
        "document.querySelector('#monitor-{tea} .last-change time')?.getAttribute('datetime') ?? ''"
    );
    let before: String = eval(&page, &change).await;
    assert!(!before.is_empty());
    // Tick a row: the live redraws keep it ticked.
    page.evaluate(format!("document.querySelector('#select-{tea}').click()"))
        .await
        .unwrap();

    site.set("/tea", Reply::html(price("3.90")));
    until(&page, &format!("({change}) !== '{before}'")).await;
    assert!(
        eval::<bool>(&page, "window.notReloaded === true").await,
        "the page was not reloaded"
    );
    assert!(
        eval::<bool>(
            &page,
            &format!("document.querySelector('#select-{tea}').checked")
        )
        .await
    );
    assert_eq!(
        eval::<String>(&page, "document.querySelector('#bulk-count').textContent").await,
        "1 selected"
    );
    // Select all: the count follows.
    page.evaluate("document.querySelector('#select-all').click()")
        .await
        .unwrap();
    assert_eq!(
        eval::<String>(&page, "document.querySelector('#bulk-count').textContent").await,
        "2 selected"
    );
    screenshots(&page, "list-bulk", 1440).await;
    // The bulk bar's steps that ask first: where to move, and what a delete takes.
    click_text(&page, "Move…", "!!document.querySelector('#move-folder')").await;
    assert!(
        eval::<String>(&page, "document.querySelector('h1').textContent").await
            == "Move 2 monitors"
    );
    screenshot(&page, "bulk-move", 1440).await;
    screenshot(&page, "bulk-move", 375).await;
    width(&page, 1440).await;
    page.goto(api.url("/")).await.unwrap();
    until(
        &page,
        "document.documentElement.dataset.liveStream === 'ready'",
    )
    .await;
    page.evaluate("document.querySelector('#select-all').click()")
        .await
        .unwrap();
    click_text(&page, "Delete…", "!!document.querySelector('.what-goes')").await;
    let stated: String = eval(&page, "document.querySelector('.what-goes').textContent").await;
    assert!(
        stated.starts_with("This deletes 2 monitors with "),
        "{stated}"
    );
    screenshot(&page, "bulk-delete", 1440).await;
    screenshot(&page, "bulk-delete", 375).await;
    width(&page, 1440).await;
    click_text(&page, "Keep them", "location.pathname === '/'").await;
    assert_eq!(monitor_count(&api, &user).await, 2);

    // A monitor's page: its value follows the page, without a reload.
    page.goto(api.url(&format!("/monitors/{tea}")))
        .await
        .unwrap();
    until(
        &page,
        "document.documentElement.dataset.liveStream === 'ready'",
    )
    .await;
    page.evaluate("window.notReloaded = true").await.unwrap();
    assert!(
        eval::<String>(&page, "document.querySelector('pre.value').textContent")
            .await
            .contains("3.90")
    );
    site.set("/tea", Reply::html(price("4.20")));
    until(
        &page,
        "document.querySelector('pre.value').textContent.includes('4.20')",
    )
    .await;
    assert!(
        eval::<bool>(&page, "window.notReloaded === true").await,
        "the page was not reloaded"
    );
    driver.close().await;
}

/// A live stream being read.
struct Stream {
    response: reqwest::Response,
    text: String,
}

impl Stream {
    async fn open(api: &Api, cookie: &str) -> reqwest::Response {
        get_page(api, cookie, "/live").await
    }

    async fn start(api: &Api, cookie: &str) -> Stream {
        let response = Stream::open(api, cookie).await;
        assert_eq!(response.status(), 200);
        assert!(
            response.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/event-stream")
        );
        let mut stream = Stream {
            response,
            text: String::new(),
        };
        stream.until("event: ready").await;
        stream
    }

    /// Reads (20 s at most) until the stream has said `text`.
    async fn until(&mut self, text: &str) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        while !self.text.contains(text) {
            let chunk = tokio::time::timeout_at(deadline, self.response.chunk())
                .await
                .unwrap_or_else(|_| panic!("never said {text:?}: {}", self.text))
                .unwrap()
                .unwrap_or_else(|| panic!("ended before {text:?}: {}", self.text));
            self.text.push_str(&String::from_utf8_lossy(&chunk));
        }
    }

    /// Reads (20 s at most) until the stream ends.
    async fn ended(&mut self) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let chunk = tokio::time::timeout_at(deadline, self.response.chunk())
                .await
                .unwrap_or_else(|_| panic!("still open: {}", self.text));
            match chunk {
                Ok(Some(chunk)) => self.text.push_str(&String::from_utf8_lossy(&chunk)),
                _ => return,
            }
        }
    }
}

both!(
    live_streams_carry_only_their_users_checks_are_bounded_and_end_with_the_session,
    multi_thread
);
async fn live_streams_carry_only_their_users_checks_are_bounded_and_end_with_the_session() {
    let site = FixtureServer::builder()
        .page("/p", "<p>P</p>")
        .start()
        .await
        .unwrap();
    let api = Api::start_checking().await;
    let first = api.user("first@example.com").await;
    let second = api.user("second@example.com").await;
    let first_cookie = session_cookie(&api, &first).await;
    let second_cookie = session_cookie(&api, &second).await;
    let mut mine = Stream::start(&api, &first_cookie).await;
    let mut theirs = Stream::start(&api, &second_cookie).await;

    // The first user's check reaches the first user's stream.
    let a = id(&api
        .task(
            &first,
            json!({"name": "A", "url": site.url("/p"), "recurrenceInSeconds": 3600}),
        )
        .await);
    mine.until(&format!("event: checked\ndata: {a}\n")).await;
    // The second user's own check comes after it on the same broadcast; by then the first
    // user's would have arrived too, had it been sent.
    let b = id(&api
        .task(
            &second,
            json!({"name": "B", "url": site.url("/p"), "recurrenceInSeconds": 3600}),
        )
        .await);
    theirs.until(&format!("data: {b}\n")).await;
    assert!(!theirs.text.contains(&a), "{}", theirs.text);
    // The fragments the script fetches: the owner's row and state, rendered as the pages do;
    // for another user the same 404 page as an unknown id.
    let (status, row) = page_text(&api, &first_cookie, &format!("/monitors/{a}/row")).await;
    assert_eq!(status, 200);
    assert!(
        row.starts_with(&format!("<li class=\"monitor row\" id=\"monitor-{a}\"")),
        "{row}"
    );
    let (status, part) = page_text(&api, &first_cookie, &format!("/monitors/{a}/status")).await;
    assert_eq!(status, 200);
    assert!(
        part.contains(
            "<pre class=\"value\" tabindex=\"0\" aria-labelledby=\"value-title\">P</pre>"
        ),
        "{part}"
    );
    let unknown = "019ab0c2-5c4e-7d2a-9f1e-3b8e2c1d0a11";
    for suffix in ["row", "status"] {
        let stolen = page_text(&api, &second_cookie, &format!("/monitors/{a}/{suffix}")).await;
        let none = page_text(
            &api,
            &second_cookie,
            &format!("/monitors/{unknown}/{suffix}"),
        )
        .await;
        assert_eq!(stolen.0, 404);
        assert_eq!(stolen, none);
    }

    // Four streams per user; the fifth is refused, the other user's still open.
    let mut more = Vec::new();
    for _ in 0..3 {
        more.push(Stream::start(&api, &second_cookie).await);
    }
    assert_eq!(Stream::open(&api, &second_cookie).await.status(), 429);
    let _another = Stream::start(&api, &first_cookie).await;
    // Closing one frees its place (once a keep-alive finds its connection closed).
    drop(more.pop());
    let mut reopened = None;
    for _ in 0..400 {
        let response = Stream::open(&api, &second_cookie).await;
        if response.status() == 200 {
            reopened = Some(response);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(reopened.is_some(), "a closed stream frees its place");

    // Signing out ends the first user's streams; without a session, 204 (do not come back).
    let (_, html) = page_text(&api, &first_cookie, "/").await;
    let out = post_form(
        &api,
        &first_cookie,
        "/signout",
        &[("csrf", csrf_of(&html).as_str())],
    )
    .await;
    assert_eq!(out.status(), 303);
    mine.ended().await;
    assert_eq!(Stream::open(&api, &first_cookie).await.status(), 204);
    // invalidateTokens ends the second user's.
    api.post(&second, "/thirdparty/v1/user/invalidateTokens", json!({}))
        .await
        .ok();
    theirs.ended().await;
}

both!(a_bulk_action_the_api_refuses_for_one_monitor_says_what_was_done_and_what_not);
async fn a_bulk_action_the_api_refuses_for_one_monitor_says_what_was_done_and_what_not() {
    // The server's minimum recurrence is 60 s; a monitor stored under a lower minimum (written
    // here straight to the store) is no longer accepted as it is.
    let api = Api::start().await;
    let user = api.user("partial@example.com").await;
    let good = id(&api
        .task(&user, crate::monitor("Good", "https://example.com/"))
        .await);
    let mut old = wachet::Monitor::new("https://example.org/".to_string());
    old.name = Some("Old <b>one</b>".into());
    old.recurrence_in_seconds = Some(10);
    let old = api
        .store
        .create_task(&user.account.id, &old)
        .await
        .unwrap()
        .id
        .unwrap();
    let cookie = session_cookie(&api, &user).await;
    let (_, html) = page_text(&api, &cookie, "/").await;
    let csrf = csrf_of(&html);
    let response = post_form(
        &api,
        &cookie,
        "/monitors/bulk",
        &[
            ("csrf", &csrf),
            ("action", "check"),
            ("id", &good),
            ("id", &old),
        ],
    )
    .await;
    assert_eq!(response.status(), 400);
    let page = response.text().await.unwrap();
    assert!(
        page.contains("1 monitor will be checked in a moment."),
        "{page}"
    );
    assert!(
        page.contains("“Old &lt;b&gt;one&lt;/b&gt;” could not be stored"),
        "{page}"
    );
    assert!(page.contains("were left as they were"), "{page}");
    assert_eq!(recurrence(&api, &user, &old).await, 10, "unchanged");
}

in_browser!(a_folders_notifications_page_says_where_its_monitors_notify_in_a_real_browser);
async fn a_folders_notifications_page_says_where_its_monitors_notify_in_a_real_browser() {
    let Some(_guard) = wachet::testing::browser_test().await else {
        return;
    };
    let api = Api::start().await;
    let user = api.user("routes@example.com").await;
    let hook = json!({"type": "Webhook", "value": "https://shops.example/hook"});
    let shops = api
        .post(
            &user,
            "/thirdparty/v1/folder",
            json!({"name": "Shops", "notificationEndpoints": [hook]}),
        )
        .await;
    let shops = id(shops.ok());
    let tea = api.folder(&user, "Tea", Some(&shops)).await;
    let (driver, page, _) = signed_in_browser(&api, &user).await;
    page.goto(api.url(&format!("/folders/{tea}/notifications")))
        .await
        .unwrap();
    let text: String = page
        .evaluate("document.querySelector('.folder-form').innerText")
        .await
        .unwrap()
        .into_value()
        .unwrap();
    assert!(
        text.contains("the endpoints of the folder “Shops”: Webhook https://shops.example/hook"),
        "{text}"
    );
    screenshots(&page, "folder-notifications", 375).await;
    driver.close().await;
}
