//! The web interface: notifications with their deliveries, settings and feeds, over the real service and in real headless Chromium.

use crate::api::delivery::{Receiver, quick};
use crate::support::web::{self, no_dialog, signed_in_browser};
use crate::support::web::{
    PASSWORD, click_and_wait, client, csrf_of, dark, eval, page_text, price_page, screenshot,
    session_cookie, sign_in_through_the_form, type_into, until, until_value,
};
use crate::{Api, User};
use chromiumoxide::Page;
use reqwest::Method;
use serde_json::{Value, json};
use std::time::Duration;
use wachet::testing::FixtureServer;

const HOSTILE: &str = "<script>alert(1)</script>";

/// A monitor of `site`'s `/tea` named `name`, checked every second by the scheduler, whose price
/// goes from 3.50 to 3.90 (one change); its id.
async fn changed_monitor(
    api: &Api,
    user: &User,
    site: &FixtureServer,
    name: &str,
    folder: Option<&str>,
) -> String {
    site.set("/tea", wachet::testing::Reply::html(price_page("3.50")));
    let created = api
        .task(
            user,
            json!({"name": name, "url": site.url("/tea"), "recurrenceInSeconds": 1,
                   "xPath": "//body", "alerts": [{"type": "NotEq"}], "folderId": folder}),
        )
        .await;
    let id = created["id"].as_str().unwrap().to_string();
    until_value(api, user, &id, "3.50").await;
    site.set("/tea", wachet::testing::Reply::html(price_page("3.90")));
    until_value(api, user, &id, "3.90").await;
    id
}

/// The deliveries of `note` through the API once `settled` holds them (15 s at most).
async fn deliveries_when(
    api: &Api,
    user: &User,
    note: &str,
    settled: impl Fn(&Value) -> bool,
) -> Value {
    let path = format!("/thirdparty/v1/notification/{note}/deliveries");
    let mut listed = Value::Null;
    for _ in 0..150 {
        listed = api.get(user, &path).await.ok().clone();
        if settled(&listed) {
            return listed;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("deliveries of {note} not settled: {listed}");
}

async fn text_of(page: &Page, selector: &str) -> String {
    eval(
        page,
        &format!("document.querySelector({selector:?})?.textContent ?? ''"),
    )
    .await
}

in_browser!(
    notifications_show_each_delivery_and_retry_now_delivers_in_a_real_browser,
    multi_thread
);
async fn notifications_show_each_delivery_and_retry_now_delivers_in_a_real_browser() {
    let Some(_guard) = wachet::testing::browser_test().await else {
        return;
    };
    let site = FixtureServer::builder()
        .page("/tea", price_page("3.50"))
        .start()
        .await
        .unwrap();
    // The receiver answers 500 once; with one try in all, that delivery fails for good.
    let (receiver, hook) = Receiver::start(1).await;
    let api = Api::start_checking_with(quick(1)).await;
    let user = api.user("notes@example.com").await;
    let other = api.user("other@example.com").await;
    api.put(
        &user,
        "/thirdparty/v1/user/notificationEndpoints",
        json!({"notificationEndpoints": [{"type": "Webhook", "value": hook}]}),
    )
    .await
    .ok();
    let id = changed_monitor(&api, &user, &site, HOSTILE, None).await;
    let notes = api
        .get(
            &user,
            &format!("/thirdparty/v1/notification/list?taskId={id}"),
        )
        .await;
    let mut note = notes.ok()["data"][0]["id"].as_str().map(str::to_string);
    for _ in 0..100 {
        if note.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        let notes = api
            .get(
                &user,
                &format!("/thirdparty/v1/notification/list?taskId={id}"),
            )
            .await;
        note = notes.ok()["data"][0]["id"].as_str().map(str::to_string);
    }
    let note = note.expect("a notification of the change");
    deliveries_when(&api, &user, &note, |d| d[0]["state"] == "failed").await;
    assert_eq!(receiver.count(), 1);

    let (driver, page, mut dialogs) = signed_in_browser(&api, &user).await;
    click_and_wait(
        &page,
        ".account-links a[href='/notifications']",
        "!!document.querySelector('.notification')",
    )
    .await;
    assert_eq!(
        eval::<String>(&page, "location.pathname").await,
        "/notifications"
    );
    let item = format!("#n-{note}");
    // The monitor's name as text, its type and time, the content sanitised (no script), the
    // delivery failed with its try and error.
    assert_eq!(
        text_of(&page, &format!("{item} .monitor-name")).await,
        HOSTILE
    );
    assert_eq!(
        eval::<String>(
            &page,
            &format!("document.querySelector('{item} a.monitor-name').getAttribute('href')")
        )
        .await,
        format!("/monitors/{id}")
    );
    assert_eq!(
        text_of(&page, &format!("{item} .alert-type")).await,
        "NotEq"
    );
    assert!(
        eval::<bool>(
            &page,
            &format!("!!document.querySelector('{item} .notification-meta time')")
        )
        .await
    );
    let content = text_of(&page, &format!("{item} .notification-content")).await;
    assert!(content.contains("3.90"), "{content}");
    assert!(
        content.contains(HOSTILE),
        "the name quoted as text: {content}"
    );
    assert_eq!(
        eval::<usize>(
            &page,
            "document.querySelectorAll('main script, main [onerror], main [onclick]').length"
        )
        .await,
        0
    );
    assert_eq!(
        text_of(&page, &format!("{item} .delivery .badge")).await,
        "Failed"
    );
    assert_eq!(
        text_of(&page, &format!("{item} .delivery-tries")).await,
        "1 try"
    );
    assert_eq!(
        text_of(&page, &format!("{item} .delivery-target")).await,
        hook
    );
    let error = text_of(&page, &format!("{item} .delivery-error")).await;
    assert!(error.contains("HTTP 500"), "{error}");
    no_dialog(&mut dialogs).await;

    screenshot(&page, "notifications", 1440).await;
    screenshot(&page, "notifications", 375).await;
    dark(&page, true).await;
    screenshot(&page, "notifications-dark", 1440).await;
    dark(&page, false).await;

    // Retry now: due at once through the outbox, delivered on the second try.
    click_and_wait(
        &page,
        &format!("{item} .delivery form button"),
        "location.hash.startsWith('#n-')",
    )
    .await;
    receiver.wait_for(2).await;
    deliveries_when(&api, &user, &note, |d| d[0]["state"] == "delivered").await;
    page.reload().await.unwrap();
    until(
        &page,
        &format!("document.querySelector('{item} .delivery .badge')?.textContent === 'Delivered'"),
    )
    .await;
    assert_eq!(
        text_of(&page, &format!("{item} .delivery-tries")).await,
        "2 tries"
    );
    assert!(
        !eval::<bool>(
            &page,
            &format!("!!document.querySelector('{item} .delivery form')")
        )
        .await
    );

    // The feed of the monitor in the browser (which shows Atom as its source): the name is
    // escaped text, nothing runs.
    let created = api
        .post(
            &user,
            "/thirdparty/v1/user/feeds",
            json!({"scope": "monitor", "targetId": id}),
        )
        .await;
    let feed = created.ok()["url"].as_str().unwrap().to_string();
    page.goto(feed.as_str()).await.unwrap();
    until(
        &page,
        "document.documentElement.textContent.includes('3.90')",
    )
    .await;
    let feed_text: String = eval(&page, "document.documentElement.textContent").await;
    assert!(
        feed_text.contains("<title>&lt;script&gt;alert(1)&lt;/script&gt; changed</title>"),
        "{feed_text}"
    );
    assert_eq!(
        eval::<usize>(&page, "document.getElementsByTagName('script').length").await,
        0
    );
    no_dialog(&mut dialogs).await;

    // Another user sees none of it, and cannot retry it.
    let other_cookie = session_cookie(&api, &other).await;
    let (status, html) = page_text(&api, &other_cookie, "/notifications").await;
    assert_eq!(status, 200);
    assert!(
        !html.contains("3.90") && !html.contains("alert(1)"),
        "{html}"
    );
    let csrf = csrf_of(&html);
    let retry = web::post_form(
        &api,
        &other_cookie,
        &format!("/notifications/{note}/deliveries/12/retry"),
        &[("csrf", csrf.as_str())],
    )
    .await;
    assert_eq!(retry.status(), 404);
    let retry_page = retry.text().await.unwrap();
    let (status, unknown) = page_text(&api, &other_cookie, "/monitors/12345").await;
    assert_eq!(status, 404);
    assert_eq!(retry_page, unknown, "the same 404 page as an unknown id");
    driver.close().await;
}

in_browser!(
    settings_endpoints_test_notification_api_key_sign_out_everywhere_and_password_in_a_real_browser,
    multi_thread
);
async fn settings_endpoints_test_notification_api_key_sign_out_everywhere_and_password_in_a_real_browser()
 {
    let Some(_guard) = wachet::testing::browser_test().await else {
        return;
    };
    let (receiver, hook) = Receiver::start(0).await;
    let api = Api::start_checking().await;
    let user = api.user("settings@example.com").await;
    let (driver, page, _) = signed_in_browser(&api, &user).await;
    click_and_wait(
        &page,
        ".account-links a[href='/settings']",
        "!!document.querySelector('#endpoint-value')",
    )
    .await;

    // A bad endpoint: the message at the field, nothing stored.
    type_into(&page, "#endpoint-value", "ftp://example.com/hook").await;
    click_and_wait(
        &page,
        ".add-endpoint button[type=submit]",
        "!!document.querySelector('#endpoint-value-error')",
    )
    .await;
    assert_eq!(
        eval::<String>(
            &page,
            "document.querySelector('#endpoint-value').getAttribute('aria-invalid')"
        )
        .await,
        "true"
    );
    assert_eq!(
        eval::<String>(
            &page,
            "document.querySelector('#endpoint-value').getAttribute('aria-describedby')"
        )
        .await,
        "endpoint-value-error"
    );
    let stored = api
        .get(&user, "/thirdparty/v1/user/notificationEndpoints")
        .await;
    assert_eq!(stored.ok()["notificationEndpoints"], json!([]));

    // The webhook endpoint added, then a test notification through the outbox.
    page.evaluate("document.querySelector('#endpoint-value').value = ''")
        .await
        .unwrap();
    type_into(&page, "#endpoint-value", &hook).await;
    click_and_wait(
        &page,
        ".add-endpoint button[type=submit]",
        "!!document.querySelector('.endpoint-value')",
    )
    .await;
    assert_eq!(text_of(&page, ".endpoint-value").await, hook);
    let stored = api
        .get(&user, "/thirdparty/v1/user/notificationEndpoints")
        .await;
    assert_eq!(
        stored.ok()["notificationEndpoints"][0]["value"],
        hook.as_str()
    );
    click_and_wait(
        &page,
        ".endpoint form[action='/settings/endpoints/test'] button",
        "!!document.querySelector('#tests')",
    )
    .await;
    let seen = receiver.wait_for(1).await;
    let body: Value = serde_json::from_str(&seen[0].1).unwrap();
    assert_eq!(body["test"], true, "{body}");
    page.reload().await.unwrap();
    until(
        &page,
        "document.querySelector('#tests .badge')?.textContent === 'Delivered'",
    )
    .await;
    // A feed in the list, for the screenshots.
    api.post(&user, "/thirdparty/v1/user/feeds", json!({"scope": "all"}))
        .await
        .ok();
    page.reload().await.unwrap();
    until(&page, "!!document.querySelector('.feed-name')").await;
    screenshot(&page, "settings", 1440).await;
    screenshot(&page, "settings", 375).await;
    dark(&page, true).await;
    screenshot(&page, "settings-dark", 375).await;
    dark(&page, false).await;

    // The API key: a new one shown once; the old one stops working.
    click_and_wait(
        &page,
        "#api-key button[type=submit]",
        "!!document.querySelector('#shown-secret')",
    )
    .await;
    let key: String = eval(&page, "document.querySelector('#shown-secret').value").await;
    assert!(key.starts_with("wk_"), "{key}");
    screenshot(&page, "settings-secret", 1440).await;
    let login = |key: String| {
        let api = &api;
        let user_id = user.account.id.clone();
        async move {
            api.send(
                Method::POST,
                "/thirdparty/v1/user/apilogin",
                None,
                Some(json!({"userId": user_id, "apiKey": key})),
            )
            .await
            .status
        }
    };
    assert_eq!(login(user.account.api_key.clone()).await, 401);
    assert_eq!(login(key.clone()).await, 200);
    page.reload().await.unwrap();
    until(&page, "!!document.querySelector('#endpoint-value')").await;
    assert!(
        !page.content().await.unwrap().contains(&key),
        "shown once only"
    );

    // Sign out everywhere: another browser's session and an API token end with this one.
    let other_session = session_cookie(&api, &user).await;
    assert_eq!(page_text(&api, &other_session, "/settings").await.0, 200);
    click_and_wait(
        &page,
        "#sessions button[type=submit]",
        "location.pathname === '/signin'",
    )
    .await;
    let (status, _) = page_text(&api, &other_session, "/settings").await;
    assert_eq!(status, 303, "the other session ended");
    assert_eq!(
        api.get(&user, "/thirdparty/v1/user/notificationEndpoints")
            .await
            .status,
        401
    );
    // (From the list: the sign-in then comes back to it, not to this page.)
    page.goto(api.url("/")).await.unwrap();
    until(&page, "location.pathname === '/signin'").await;

    // The password: a wrong current one is refused at its field, then the change.
    sign_in_through_the_form(&page, &user).await;
    page.goto(api.url("/settings#password")).await.unwrap();
    until(&page, "!!document.querySelector('#current-password')").await;
    type_into(&page, "#current-password", "not the password").await;
    type_into(&page, "#new-password", "a new pass phrase").await;
    click_and_wait(
        &page,
        ".password-form button[type=submit]",
        "!!document.querySelector('#current-password-error')",
    )
    .await;
    assert_eq!(
        text_of(&page, "#current-password-error").await,
        "This is not your current password."
    );
    assert_eq!(
        eval::<String>(
            &page,
            "document.querySelector('#current-password').getAttribute('aria-invalid')"
        )
        .await,
        "true"
    );
    assert_eq!(
        eval::<String>(
            &page,
            "document.querySelector('#current-password').getAttribute('aria-describedby')"
        )
        .await,
        "current-password-error"
    );
    screenshot(&page, "settings-password-error", 375).await;
    let password_login = |password: &'static str| {
        let api = &api;
        let email = user.account.email.clone();
        async move {
            api.send(
                Method::POST,
                "/thirdparty/v1/user/login",
                None,
                Some(json!({"email": email, "password": password})),
            )
            .await
            .status
        }
    };
    assert_eq!(password_login(PASSWORD).await, 200, "unchanged");
    type_into(&page, "#current-password", PASSWORD).await;
    type_into(&page, "#new-password", "a new pass phrase").await;
    click_and_wait(
        &page,
        ".password-form button[type=submit]",
        "document.querySelector('.flash')?.textContent.includes('password was changed')",
    )
    .await;
    assert_eq!(password_login(PASSWORD).await, 401);
    assert_eq!(password_login("a new pass phrase").await, 200);
    // This session stays.
    page.goto(api.url("/settings")).await.unwrap();
    until(&page, "!!document.querySelector('#endpoint-value')").await;
    driver.close().await;
}

/// A form posted with reqwest: its status and page.
async fn post_form(api: &Api, cookie: &str, path: &str, fields: &[(&str, &str)]) -> (u16, String) {
    let response = web::post_form(api, cookie, path, fields).await;
    (response.status().as_u16(), response.text().await.unwrap())
}

fn shown_secret(html: &str) -> String {
    let at = html.find("id=\"shown-secret\"").expect("a secret shown");
    let value = &html[at..];
    let start = value.find("value=\"").unwrap() + 7;
    let end = value[start..].find('"').unwrap();
    value[start..start + end].replace("&amp;", "&")
}

async fn get_feed(url: &str) -> (u16, String, String) {
    let response = client().get(url).send().await.unwrap();
    let status = response.status().as_u16();
    let kind = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    (status, kind, response.text().await.unwrap())
}

fn push(entry: &mut Option<(String, String, String)>, field: &str, text: &str) {
    if let Some(entry) = entry.as_mut() {
        match field {
            "title" => entry.0.push_str(text),
            "summary" => entry.1.push_str(text),
            _ => {}
        }
    }
}

/// The entries of an Atom document as (title, summary, link), parsed with quick-xml (so a
/// document that is not well-formed XML fails).
fn entries(xml: &str) -> Vec<(String, String, String)> {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_str(xml);
    let mut entries = Vec::new();
    let mut current: Option<(String, String, String)> = None;
    let mut field = String::new();
    loop {
        match reader.read_event().unwrap() {
            Event::Start(e) | Event::Empty(e) => {
                let name = String::from_utf8(e.name().as_ref().to_vec()).unwrap();
                if name == "entry" {
                    current = Some(Default::default());
                }
                if name == "link"
                    && let Some(entry) = current.as_mut()
                {
                    let href = e.try_get_attribute("href").unwrap().unwrap();
                    entry.2 = href
                        .normalized_value(quick_xml::XmlVersion::Implicit1_0)
                        .unwrap()
                        .into_owned();
                }
                field = name;
            }
            Event::Text(t) => {
                let text = t.decode().unwrap();
                push(
                    &mut current,
                    &field,
                    &quick_xml::escape::unescape(&text).unwrap(),
                );
            }
            Event::GeneralRef(r) => {
                let reference = format!("&{};", r.decode().unwrap());
                push(
                    &mut current,
                    &field,
                    &quick_xml::escape::unescape(&reference).unwrap(),
                );
            }
            Event::End(e) => {
                if e.name().as_ref() == b"entry" {
                    entries.extend(current.take());
                }
                field.clear();
            }
            Event::Eof => break,
            _ => {}
        }
    }
    entries
}

both!(
    feeds_list_the_changes_behind_a_secret_of_their_own,
    multi_thread
);
async fn feeds_list_the_changes_behind_a_secret_of_their_own() {
    let site = FixtureServer::builder()
        .page("/tea", price_page("3.50"))
        .start()
        .await
        .unwrap();
    let api = Api::start_checking().await;
    let user = api.user("feeds@example.com").await;
    let other = api.user("other@example.com").await;
    let folder = api.folder(&user, "Shops", None).await;
    let id = changed_monitor(&api, &user, &site, HOSTILE, Some(&folder)).await;
    let quiet = api
        .task(
            &user,
            json!({"name": "Quiet", "url": site.url("/tea"), "recurrenceInSeconds": 3600}),
        )
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();

    // No feed yet: the monitor's page announces none.
    let cookie = session_cookie(&api, &user).await;
    let (_, monitor_page) = page_text(&api, &cookie, &format!("/monitors/{id}")).await;
    assert!(!monitor_page.contains("application/atom+xml"));

    // Created through the settings form: its URL shown once.
    let (_, settings) = page_text(&api, &cookie, "/settings").await;
    let csrf = csrf_of(&settings);
    let target = format!("monitor:{id}");
    let (status, created) = post_form(
        &api,
        &cookie,
        "/settings/feeds",
        &[("csrf", &csrf), ("target", &target)],
    )
    .await;
    assert_eq!(status, 200, "{created}");
    let url = shown_secret(&created);
    assert!(
        url.starts_with(&api.url(&format!("/feeds/monitors/{id}.atom?key="))),
        "{url}"
    );
    let (_, settings) = page_text(&api, &cookie, "/settings").await;
    assert!(!settings.contains(&url) && settings.contains(&format!("/feeds/monitors/{id}.atom")));

    let (status, kind, xml) = get_feed(&url).await;
    assert_eq!(status, 200, "{xml}");
    assert_eq!(kind, "application/atom+xml; charset=utf-8");
    assert!(!xml.contains(HOSTILE), "escaped: {xml}");
    let listed = entries(&xml);
    assert_eq!(listed.len(), 1, "{xml}");
    assert_eq!(listed[0].0, format!("{HOSTILE} changed"));
    assert_eq!(listed[0].1, "Removed: 3.50\nAdded: 3.90");
    assert!(
        listed[0]
            .2
            .starts_with(&api.url(&format!("/monitors/{id}/diff?to="))),
        "{:?}",
        listed[0]
    );
    // The link leads to the difference page.
    let diff = listed[0].2.strip_prefix(&api.url("")).unwrap().to_string();
    let (status, diff_page) = page_text(&api, &cookie, &diff).await;
    assert_eq!(status, 200);
    assert!(
        diff_page.contains("<ins>") || diff_page.contains("<ins "),
        "{diff_page}"
    );

    // The monitor's page announces it now, with its key; another monitor's page does not.
    let (_, monitor_page) = page_text(&api, &cookie, &format!("/monitors/{id}")).await;
    assert!(monitor_page.contains(&format!(
        "<link rel=\"alternate\" type=\"application/atom+xml\" title=\"Changes of &lt;script&gt;alert(1)&lt;/script&gt;\" href=\"{url}\">"
    )), "{monitor_page}");
    let (_, quiet_page) = page_text(&api, &cookie, &format!("/monitors/{quiet}")).await;
    assert!(!quiet_page.contains("application/atom+xml"));

    // A wrong key, no key, another feed's key: 404.
    let wrong = format!("{}x", url);
    assert_eq!(get_feed(&wrong).await.0, 404);
    assert_eq!(
        get_feed(&api.url(&format!("/feeds/monitors/{id}.atom")))
            .await
            .0,
        404
    );
    let folder_feed = api
        .post(
            &user,
            "/thirdparty/v1/user/feeds",
            json!({"scope": "folder", "targetId": folder}),
        )
        .await;
    let folder_url = folder_feed.ok()["url"].as_str().unwrap().to_string();
    let folder_key = folder_url.split("key=").nth(1).unwrap();
    assert_eq!(
        get_feed(&api.url(&format!("/feeds/monitors/{id}.atom?key={folder_key}")))
            .await
            .0,
        404
    );
    // The folder's and the all-monitors feeds list the change too; the folder page announces.
    let (_, _, xml) = get_feed(&folder_url).await;
    assert_eq!(entries(&xml).len(), 1, "{xml}");
    let all = api
        .post(&user, "/thirdparty/v1/user/feeds", json!({"scope": "all"}))
        .await;
    let (_, _, xml) = get_feed(all.ok()["url"].as_str().unwrap()).await;
    assert_eq!(entries(&xml).len(), 1, "{xml}");
    let (_, folder_page) = page_text(&api, &cookie, &format!("/folders/{folder}")).await;
    assert!(folder_page.contains(&format!("href=\"{folder_url}\"")));

    // Another user: cannot make a feed of this monitor, and their own key opens nothing here.
    let foreign = api
        .post(
            &other,
            "/thirdparty/v1/user/feeds",
            json!({"scope": "monitor", "targetId": id}),
        )
        .await;
    foreign.problem(404);
    let theirs = api
        .post(&other, "/thirdparty/v1/user/feeds", json!({"scope": "all"}))
        .await;
    let their_url = theirs.ok()["url"].as_str().unwrap().to_string();
    let (status, _, their_xml) = get_feed(&their_url).await;
    assert_eq!(status, 200);
    assert!(entries(&their_xml).is_empty(), "{their_xml}");
    let their_key = their_url.split("key=").nth(1).unwrap();
    assert_eq!(
        get_feed(&api.url(&format!("/feeds/monitors/{id}.atom?key={their_key}")))
            .await
            .0,
        404
    );
    let other_cookie = session_cookie(&api, &other).await;
    assert_eq!(
        page_text(&api, &other_cookie, &format!("/feeds/monitors/{id}.atom"))
            .await
            .0,
        404
    );

    // Renewed: the old URL is a 404, the new one works; removed: 404.
    let (_, settings) = page_text(&api, &cookie, "/settings").await;
    let (status, renewed) = post_form(
        &api,
        &cookie,
        "/settings/feeds",
        &[("csrf", &csrf), ("target", &target)],
    )
    .await;
    assert_eq!(status, 200);
    let new_url = shown_secret(&renewed);
    assert_ne!(new_url, url);
    assert_eq!(get_feed(&url).await.0, 404);
    assert_eq!(get_feed(&new_url).await.0, 200);
    let feeds = api.get(&user, "/thirdparty/v1/user/feeds").await;
    let feed_id = feeds
        .ok()
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["scope"] == "monitor")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(settings.contains(&format!("/settings/feeds/{feed_id}/delete")));
    let (status, _) = post_form(
        &api,
        &cookie,
        &format!("/settings/feeds/{feed_id}/delete"),
        &[("csrf", "wrong")],
    )
    .await;
    assert_eq!(status, 403);
    assert_eq!(
        get_feed(&new_url).await.0,
        200,
        "a refused form changes nothing"
    );
    let (status, _) = post_form(
        &api,
        &cookie,
        &format!("/settings/feeds/{feed_id}/delete"),
        &[("csrf", &csrf)],
    )
    .await;
    assert_eq!(status, 303);
    assert_eq!(get_feed(&new_url).await.0, 404);
}

both!(
    bad_input_to_the_account_pages_is_a_clear_page_and_changes_nothing,
    multi_thread
);
async fn bad_input_to_the_account_pages_is_a_clear_page_and_changes_nothing() {
    let api = Api::start().await;
    let user = api.user("careful@example.com").await;
    let other = api.user("other@example.com").await;
    let their_folder = api.folder(&other, "Theirs", None).await;
    let cookie = session_cookie(&api, &user).await;
    let (_, settings) = page_text(&api, &cookie, "/settings").await;
    let csrf = csrf_of(&settings);

    // A damaged page token of the notifications list.
    let (status, html) = page_text(&api, &cookie, "/notifications?page=garbage").await;
    assert_eq!(status, 400);
    assert!(html.contains("does not exist"), "{html}");

    // An endpoint of a type not offered, or a bad address: the message at the field.
    let (status, html) = post_form(
        &api,
        &cookie,
        "/settings/endpoints",
        &[
            ("csrf", &csrf),
            ("kind", "999"),
            ("value", "http://x.example/"),
        ],
    )
    .await;
    assert_eq!(status, 400);
    assert!(html.contains("Choose one of the types offered."), "{html}");
    let (status, html) = post_form(
        &api,
        &cookie,
        "/settings/endpoints",
        &[("csrf", &csrf), ("kind", "0"), ("value", "not an address")],
    )
    .await;
    assert_eq!(status, 400);
    assert!(
        html.contains("aria-invalid=\"true\" aria-describedby=\"endpoint-value-error\""),
        "{html}"
    );
    assert!(html.contains("must be an e-mail address"), "{html}");
    assert!(
        html.contains("value=\"not an address\""),
        "typed text kept: {html}"
    );
    let stored = api
        .get(&user, "/thirdparty/v1/user/notificationEndpoints")
        .await;
    assert_eq!(stored.ok()["notificationEndpoints"], json!([]));

    // A test to an address that is none of the user's endpoints.
    let (status, html) = post_form(
        &api,
        &cookie,
        "/settings/endpoints/test",
        &[("csrf", &csrf), ("value", "http://127.0.0.1:9/x")],
    )
    .await;
    assert_eq!(status, 400);
    assert!(html.contains("No test notification was sent"), "{html}");
    let tests = api
        .get(&user, "/thirdparty/v1/user/notificationEndpoints/test")
        .await;
    assert_eq!(tests.ok(), &json!([]));

    // A feed of another user's folder is the 404 page; a target that is nothing, a 400 page.
    let target = format!("folder:{their_folder}");
    let (status, _) = post_form(
        &api,
        &cookie,
        "/settings/feeds",
        &[("csrf", &csrf), ("target", &target)],
    )
    .await;
    assert_eq!(status, 404);
    let (status, html) = post_form(
        &api,
        &cookie,
        "/settings/feeds",
        &[("csrf", &csrf), ("target", "everything")],
    )
    .await;
    assert_eq!(status, 400);
    assert!(html.contains("Choose what the feed follows."), "{html}");
    let feeds = api.get(&user, "/thirdparty/v1/user/feeds").await;
    assert_eq!(feeds.ok(), &json!([]));

    // Forms without the session's token change nothing.
    for (path, fields) in [
        (
            "/settings/password",
            vec![
                ("currentPassword", PASSWORD),
                ("newPassword", "another pass phrase"),
            ],
        ),
        ("/settings/api-key", vec![]),
        ("/settings/sign-out-everywhere", vec![]),
    ] {
        let mut fields = fields.clone();
        fields.push(("csrf", "wrong"));
        let (status, _) = post_form(&api, &cookie, path, &fields).await;
        assert_eq!(status, 403, "{path}");
    }
    assert_eq!(
        page_text(&api, &cookie, "/settings").await.0,
        200,
        "still signed in"
    );
    let login = api
        .send(
            Method::POST,
            "/thirdparty/v1/user/apilogin",
            None,
            Some(json!({"userId": user.account.id, "apiKey": user.account.api_key})),
        )
        .await;
    assert_eq!(login.status, 200, "the key unchanged");

    // A new password of the wrong length: the message at its field, the password unchanged.
    let (status, html) = post_form(
        &api,
        &cookie,
        "/settings/password",
        &[
            ("csrf", &csrf),
            ("currentPassword", PASSWORD),
            ("newPassword", "short"),
        ],
    )
    .await;
    assert_eq!(status, 400);
    assert!(
        html.contains("aria-invalid=\"true\" aria-describedby=\"new-password-error\""),
        "{html}"
    );
    let relogin = crate::support::web::sign_in(&api, &user.account.email, PASSWORD).await;
    assert_eq!(relogin.status(), 303);

    // Feed addresses that name nothing.
    for path in [
        "/feeds/monitors/abc",
        "/feeds/all.atom?key=",
        &format!("/feeds/all.atom?key={}", "k".repeat(300)),
    ] {
        assert_eq!(get_feed(&api.url(path)).await.0, 404, "{path}");
    }
}

in_browser!(a_change_the_rules_were_in_doubt_about_says_so_on_its_notification_in_a_real_browser);
/// A change raised although the monitor's learned masks would have hidden it (some of its lines
/// were news) says so on its notification's page, set apart from the change, light and dark, at
/// 1440 and 375 px.
async fn a_change_the_rules_were_in_doubt_about_says_so_on_its_notification_in_a_real_browser() {
    let Some(_guard) = wachet::testing::browser_test().await else {
        return;
    };
    let api = Api::start().await;
    let user = api.user("doubt@example.com").await;
    let created = api
        .put(
            &user,
            "/thirdparty/v1/task",
            json!({"name": "Coast news", "url": "https://news.example/coast", "recurrenceInSeconds": 3600}),
        )
        .await;
    let id = created.ok()["id"].as_str().unwrap().to_string();
    let monitor: wachet::model::Monitor = serde_json::from_value(json!({
        "id": id, "name": "Coast news", "url": "https://news.example/coast",
        "noise": [{"pattern": "Storm warning", "learned": true}]
    }))
    .unwrap();
    let previous = "Headlines\nFerry timetable for the winter\n";
    let current = "Headlines\nStorm warning for the north coast\nFerry timetable for the winter\n";
    let doubt = "This part of the page changed often before: 1 line never shown before: \
                 \u{201c}Storm warning for the north coast\u{201d}.";
    let raised: wachet::alerts::Raised = serde_json::from_value(json!({
        "alert": {"type": "NotEq"},
        "jobType": "SinglePage",
        "current": current,
        "comparand": previous,
        "syntheticExpression": "content changed",
        "matches": [],
        "doubt": doubt,
    }))
    .unwrap();
    let note =
        wachet_server::notify::notification(&monitor, &raised, chrono::Utc::now(), Some(previous))
            .expect("the news is visible");
    let note_id = api.store.insert_notification(&note).await.unwrap();

    let (_driver, page, mut dialogs) = signed_in_browser(&api, &user).await;
    page.goto(api.url(&format!("/notifications/{note_id}")))
        .await
        .unwrap();
    crate::support::web::until(
        &page,
        "!!document.querySelector('.notification-content .doubt')",
    )
    .await;
    assert_eq!(text_of(&page, ".notification-content .doubt").await, doubt);
    assert!(
        text_of(&page, ".notification-content ins")
            .await
            .contains("Storm warning"),
        "the news itself is marked as added"
    );
    // Set apart from the text around it by the page's own style.
    let looks: Vec<String> = eval(
        &page,
        "[document.querySelector('.notification-content .doubt'), document.querySelector('.notification-content p')]\
         .map(e => getComputedStyle(e).backgroundColor)",
    )
    .await;
    assert_ne!(looks[0], looks[1], "{looks:?}");
    no_dialog(&mut dialogs).await;
    web::screenshots(&page, "notification-doubt", 375).await;
}
