//! What a new user meets on the first day in the web interface, over the real service: a
//! quick-added monitor named after its page's title (a person's name kept), and the Atom feed
//! offered on a monitor's and a folder's page, whose address (with its key, kept sealed in the
//! database) a feed reader fetches without a session; in real Chromium with screenshots.

use crate::support::web::post_form;
use crate::support::web::{
    Driver, click_and_wait, client, csrf_of, eval, monitor_data, page_text, price_page, screenshot,
    session_cookie, sign_in_through_the_form, until,
};
use crate::{Api, Backend, User, checked, id};
use serde_json::json;
use std::time::Duration;
use wachet::testing::FixtureServer;

/// Quick-adds `url` through the form of the monitors list.
async fn quick_add(api: &Api, cookie: &str, url: &str) {
    let (_, home) = page_text(api, cookie, "/").await;
    let csrf = csrf_of(&home);
    let response = post_form(
        api,
        cookie,
        "/monitors/quick-add",
        &[("csrf", &csrf), ("url", url)],
    )
    .await;
    assert_eq!(response.status(), 303, "{}", response.text().await.unwrap());
}

/// The id of the user's monitor of `url`.
async fn monitor_of(api: &Api, user: &User, url: &str) -> String {
    let found = api.get(user, "/thirdparty/v1/task/search").await;
    let monitors = found.ok().as_array().unwrap();
    let monitor = monitors
        .iter()
        .find(|m| m["url"] == url)
        .unwrap_or_else(|| panic!("no monitor of {url}: {monitors:?}"));
    id(monitor)
}

/// Waits (30 s at most) until the monitor was checked after `after` (a `lastCheckTimestamp`,
/// or none for its first check); the monitor as the API gives it then.
async fn checked_after(api: &Api, user: &User, id: &str, after: Option<&str>) -> serde_json::Value {
    for _ in 0..300 {
        let monitor = monitor_data(api, user, id).await;
        if checked(&monitor) && monitor["data"]["lastCheckTimestamp"].as_str() != after {
            return monitor;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("monitor {id} was not checked after {after:?}");
}

both!(
    a_quick_added_monitor_takes_its_pages_title_until_a_person_names_it,
    multi_thread
);
async fn a_quick_added_monitor_takes_its_pages_title_until_a_person_names_it() {
    let site = FixtureServer::builder()
        .page(
            "/news/today",
            "<html><head><title>  Morning &amp; <b>News</b>\n</title></head><body><p>Hello</p></body></html>",
        )
        .page("/plain/page", "<html><body><p>No title here</p></body></html>")
        .start()
        .await
        .unwrap();
    let api = Api::start_checking().await;
    let user = api.user("names@example.com").await;
    let cookie = session_cookie(&api, &user).await;
    let (titled_url, plain_url) = (site.url("/news/today"), site.url("/plain/page"));
    quick_add(&api, &cookie, &titled_url).await;
    quick_add(&api, &cookie, &plain_url).await;
    let titled = monitor_of(&api, &user, &titled_url).await;
    let plain = monitor_of(&api, &user, &plain_url).await;

    // After the first check: the title (as a browser shows it), and host and path without one.
    let first = checked_after(&api, &user, &titled, None).await;
    let mut named = first["name"].clone();
    for _ in 0..50 {
        if named == "Morning & <b>News</b>" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        named = monitor_data(&api, &user, &titled).await["name"].clone();
    }
    assert_eq!(named, "Morning & <b>News</b>");
    let (_, page) = page_text(&api, &cookie, &format!("/monitors/{titled}")).await;
    assert!(
        page.contains("<h1 class=\"monitor-title\">Morning &amp; &lt;b&gt;News&lt;/b&gt;</h1>"),
        "{page}"
    );
    let untitled = checked_after(&api, &user, &plain, None).await;
    assert_eq!(untitled["name"], "127.0.0.1/plain/page");

    // A person names it, even exactly as the service would: later checks keep that name.
    let mut monitor = monitor_data(&api, &user, &titled).await;
    let before = monitor["data"]["lastCheckTimestamp"]
        .as_str()
        .unwrap()
        .to_string();
    monitor.as_object_mut().unwrap().remove("data");
    monitor["name"] = json!("127.0.0.1/news/today");
    api.put(&user, "/thirdparty/v1/task", monitor).await.ok();
    // An edit is checked at once.
    let later = checked_after(&api, &user, &titled, Some(&before)).await;
    assert_eq!(later["name"], "127.0.0.1/news/today");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        monitor_data(&api, &user, &titled).await["name"],
        "127.0.0.1/news/today"
    );
}

/// The `href` of the page's `<link rel="alternate" type="application/atom+xml">`, if any.
fn alternate_href(html: &str) -> Option<String> {
    let at = html.find("<link rel=\"alternate\" type=\"application/atom+xml\"")?;
    let link = &html[at..at + html[at..].find('>')?];
    let start = link.find("href=\"")? + 6;
    let end = link[start..].find('"')?;
    Some(link[start..start + end].replace("&amp;", "&"))
}

/// The value of the page's `#feed-url` field.
fn shown_address(html: &str) -> Option<String> {
    let at = html.find("id=\"feed-url\"")?;
    let field = &html[at..];
    let start = field.find("value=\"")? + 7;
    let end = field[start..].find('"')?;
    Some(field[start..start + end].replace("&amp;", "&"))
}

/// Status and body of `url` fetched as a feed reader does: no cookie.
async fn fetch_feed(url: &str) -> (u16, String) {
    let response = client().get(url).send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

/// Creates or renews a feed from a page's form; the redirect's target.
async fn renew(api: &Api, cookie: &str, page: &str, target: &str) -> (u16, String) {
    let (_, html) = page_text(api, cookie, page).await;
    let csrf = csrf_of(&html);
    let response = post_form(
        api,
        cookie,
        "/feeds/renew",
        &[("csrf", &csrf), ("target", target), ("back", page)],
    )
    .await;
    let status = response.status().as_u16();
    let location = response
        .headers()
        .get("location")
        .map(|l| l.to_str().unwrap().to_string())
        .unwrap_or_default();
    (status, location)
}

both!(
    a_monitors_feed_is_created_shown_and_renewed_on_its_page,
    multi_thread
);
async fn a_monitors_feed_is_created_shown_and_renewed_on_its_page() {
    let site = FixtureServer::builder()
        .page("/tea", price_page("3.50"))
        .start()
        .await
        .unwrap();
    let api = Api::start().await;
    let user = api.user("feeds@example.com").await;
    let other = api.user("other@example.com").await;
    let folder = api.folder(&user, "Shops", None).await;
    let monitor = id(&api
        .task(
            &user,
            json!({"name": "Tea", "url": site.url("/tea"), "recurrenceInSeconds": 3600,
                   "folderId": folder}),
        )
        .await);
    let cookie = session_cookie(&api, &user).await;
    let page = format!("/monitors/{monitor}");

    // No feed yet: the page offers one and announces none.
    let (_, html) = page_text(&api, &cookie, &page).await;
    assert!(html.contains(">Create a feed</button>"), "{html}");
    assert_eq!(alternate_href(&html), None);

    // Created from the page: back to it, which shows the whole address and announces it.
    let (status, location) = renew(&api, &cookie, &page, &format!("monitor:{monitor}")).await;
    assert_eq!(
        (status, location.as_str()),
        (303, format!("{page}#feed").as_str())
    );
    let (_, html) = page_text(&api, &cookie, &page).await;
    let url = alternate_href(&html).expect("the head announces the feed");
    assert!(
        url.starts_with(&api.url(&format!("/feeds/monitors/{monitor}.atom?key="))),
        "{url}"
    );
    assert_eq!(shown_address(&html).as_deref(), Some(url.as_str()));
    assert!(html.contains(">Renew address</button>") && html.contains("data-copy=\"feed-url\""));
    // A feed reader fetches it without a session.
    let (status, xml) = fetch_feed(&url).await;
    assert_eq!(status, 200, "{xml}");
    assert!(
        xml.starts_with("<?xml") && xml.contains("<feed xmlns=\"http://www.w3.org/2005/Atom\">"),
        "{xml}"
    );

    // The key is not in the database in clear: hashed and sealed only.
    let key = url.split("key=").nth(1).unwrap().to_string();
    let sql = api.sql().await;
    assert_eq!(
        sql.count(
            "SELECT COUNT(*) FROM feeds WHERE secret_sealed IS NOT NULL AND secret_hash IS NOT NULL"
        )
        .await,
        1
    );
    assert_eq!(
        sql.count(&format!(
            "SELECT COUNT(*) FROM feeds WHERE secret_hash LIKE '%{key}%' OR secret_sealed LIKE '%{key}%'"
        ))
        .await,
        0
    );
    if api.backend() == Backend::Sqlite {
        // Nor anywhere in the database's files.
        let db = api.db_path();
        let mut bytes = std::fs::read(&db).unwrap();
        bytes.extend(std::fs::read(db.with_extension("db-wal")).unwrap_or_default());
        assert!(
            !bytes.windows(key.len()).any(|w| w == key.as_bytes()),
            "the key is in the SQLite files"
        );
    }

    // Another user: the page, the feed form and a made-up id are the same 404.
    let other_cookie = session_cookie(&api, &other).await;
    let (status, _) = page_text(&api, &other_cookie, &page).await;
    assert_eq!(status, 404);
    let (_, their_home) = page_text(&api, &other_cookie, "/").await;
    let their_csrf = csrf_of(&their_home);
    let mut answers = Vec::new();
    for target in [
        format!("monitor:{monitor}"),
        "monitor:0123456789abcdef".to_string(),
    ] {
        let response = post_form(
            &api,
            &other_cookie,
            "/feeds/renew",
            &[("csrf", &their_csrf), ("target", &target), ("back", &page)],
        )
        .await;
        answers.push((response.status().as_u16(), response.text().await.unwrap()));
    }
    assert_eq!(answers[0].0, 404);
    assert_eq!(answers[0], answers[1]);
    assert_eq!(fetch_feed(&url).await.0, 200, "still the owner's address");

    // Bad input: an unknown kind of target is a clear 400; a way back off this service is
    // never followed; neither changes the feed.
    let (_, html) = page_text(&api, &cookie, &page).await;
    let csrf = csrf_of(&html);
    let response = post_form(
        &api,
        &cookie,
        "/feeds/renew",
        &[("csrf", &csrf), ("target", "everything"), ("back", &page)],
    )
    .await;
    assert_eq!(response.status(), 400);
    assert!(
        response
            .text()
            .await
            .unwrap()
            .contains("Choose what the feed follows.")
    );
    for back in [
        "//evil.example/",
        "https://evil.example/",
        "/\\evil.example",
    ] {
        let target = format!("folder:{folder}");
        let response = post_form(
            &api,
            &cookie,
            "/feeds/renew",
            &[("csrf", &csrf), ("target", &target), ("back", back)],
        )
        .await;
        assert_eq!(response.status(), 303);
        assert_eq!(
            response.headers()["location"],
            format!("/folders/{folder}#feed").as_str(),
            "{back}"
        );
    }
    sql.execute("DELETE FROM feeds WHERE scope = 'folder'")
        .await;
    assert_eq!(fetch_feed(&url).await.0, 200);

    // Renewed: a new address; the old one stops working.
    let (status, _) = renew(&api, &cookie, &page, &format!("monitor:{monitor}")).await;
    assert_eq!(status, 303);
    let (_, html) = page_text(&api, &cookie, &page).await;
    let renewed = alternate_href(&html).unwrap();
    assert_ne!(renewed, url);
    assert_eq!(fetch_feed(&url).await.0, 404);
    assert_eq!(fetch_feed(&renewed).await.0, 200);

    // A feed whose key was kept only hashed: the page says it cannot be shown and offers to
    // renew; the address the reader has still works.
    sql.execute("UPDATE feeds SET secret_sealed = NULL").await;
    let (_, html) = page_text(&api, &cookie, &page).await;
    assert!(html.contains("cannot be shown"), "{html}");
    assert!(html.contains(">Renew address</button>"));
    assert_eq!(alternate_href(&html), None);
    assert_eq!(shown_address(&html), None);
    assert_eq!(fetch_feed(&renewed).await.0, 200);

    // A folder's page the same way.
    let folder_page = format!("/folders/{folder}");
    let (_, html) = page_text(&api, &cookie, &folder_page).await;
    assert!(html.contains(">Create a feed</button>"));
    let (status, _) = renew(&api, &cookie, &folder_page, &format!("folder:{folder}")).await;
    assert_eq!(status, 303);
    let (_, html) = page_text(&api, &cookie, &folder_page).await;
    let folder_url = alternate_href(&html).unwrap();
    assert!(folder_url.starts_with(&api.url(&format!("/feeds/folders/{folder}.atom?key="))));
    assert_eq!(fetch_feed(&folder_url).await.0, 200);
}

// On SQLite only: the page is the same on both backends, and Chromium is costly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_monitors_feed_control_in_a_real_browser() {
    let Some(_guard) = wachet::testing::browser_test().await else {
        return;
    };
    let site = FixtureServer::builder()
        .page("/tea", price_page("3.50"))
        .start()
        .await
        .unwrap();
    let api = Api::start().await;
    let user = api.user("reader@example.com").await;
    let monitor = id(&api
        .task(
            &user,
            json!({"name": "Tea prices", "url": site.url("/tea"), "recurrenceInSeconds": 3600}),
        )
        .await);
    let driver = Driver::launch().await;
    let page = driver
        .browser
        .new_page(api.url(&format!("/monitors/{monitor}")))
        .await
        .unwrap();
    sign_in_through_the_form(&page, &user).await;
    until(&page, "!!document.querySelector('#feed')").await;
    screenshot(&page, "monitor-feed-none", 1440).await;
    click_and_wait(
        &page,
        "#feed button[type=submit]",
        "!!document.querySelector('#feed-url') && document.readyState === 'complete'",
    )
    .await;
    let address: String = eval(&page, "document.querySelector('#feed-url').value").await;
    let announced: String = eval(
        &page,
        "document.querySelector('link[rel=alternate][type=\"application/atom+xml\"]').href",
    )
    .await;
    assert_eq!(address, announced);
    assert!(address.contains(".atom?key="), "{address}");
    // The copy button shows where scripts run, and says it copied.
    until(&page, "!document.querySelector('button[data-copy]').hidden").await;
    page.find_element("button[data-copy]")
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    until(
        &page,
        "document.querySelector('button[data-copy]').textContent === 'Copied'",
    )
    .await;
    for px in [1440, 375] {
        let path = screenshot(&page, "monitor-feed", px).await;
        assert!(path.exists());
    }
    // Nothing wider than a phone's screen at 375 px.
    let wide: bool = eval(
        &page,
        "document.documentElement.scrollWidth <= window.innerWidth",
    )
    .await;
    assert!(wide, "the page scrolls sideways at 375 px");
    driver.close().await;
}
