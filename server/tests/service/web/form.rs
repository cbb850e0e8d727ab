//! The monitor form (`/monitors/new`, `/monitors/{id}/edit`) and its preview over the real
//! service: in real Chromium, a monitor created through the full form after a preview showing
//! its value, validation messages at their fields, an edit, a Portal preview listing the pages
//! of a fixture site; over HTTP, a double submit, a missing CSRF token, another user's monitor,
//! a preview the network policy refuses, the preview rate limit and a value of 10 MB.

use crate::support::web::{
    csrf_of, eval, monitor_count, page_text, screenshot, session_cookie, until, width,
};
use crate::support::web::{location, post_form, screenshots, signed_in_browser};
use crate::{Api, Setup, id};
use serde_json::json;
use std::sync::Arc;
use wachet::testing::FixtureServer;

fn shop_page() -> String {
    "<html><head><title>Shop</title></head><body><h1>Tea</h1>\
     <p class=\"price\">Price: 12.40 EUR</p><p>Other 99.99</p></body></html>"
        .to_string()
}

/// Sets a form control's value as typing would, by its id.
async fn set(page: &chromiumoxide::Page, id: &str, value: &str) {
    let js = format!(
        "(() => {{ const e = document.getElementById({}); e.value = {}; \
         e.dispatchEvent(new Event('change')); return true; }})()",
        serde_json::to_string(id).unwrap(),
        serde_json::to_string(value).unwrap()
    );
    assert!(eval::<bool>(page, &js).await, "{id}");
}

async fn click(page: &chromiumoxide::Page, selector: &str) {
    page.find_element(selector)
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
}

in_browser!(
    create_with_a_preview_fix_errors_edit_and_preview_a_portal_in_a_real_browser,
    multi_thread
);
async fn create_with_a_preview_fix_errors_edit_and_preview_a_portal_in_a_real_browser() {
    let Some(_guard) = wachet::testing::browser_test().await else {
        return;
    };
    let site = FixtureServer::builder()
        .page("/shop", shop_page())
        .page(
            "/portal",
            "<html><head><title>Start</title></head><body>\
             <a href=\"/portal/a\">A</a> <a href=\"/portal/b\">B</a></body></html>",
        )
        .page(
            "/portal/a",
            "<html><head><title>Page A</title></head><body>a</body></html>",
        )
        .page(
            "/portal/b",
            "<html><head><title>Page B &lt;i&gt;</title></head><body>b</body></html>",
        )
        .start()
        .await
        .unwrap();
    let api = Api::start().await;
    let user = api.user("former@example.com").await;
    let (driver, page, _) = signed_in_browser(&api, &user).await;

    // The list's "New monitor" link, then the form prefilled from the query as the
    // point-and-click page links it.
    let new = format!(
        "/monitors/new?url={}&xPath={}",
        urlencode(&site.url("/shop")),
        urlencode("//p[@class='price']")
    );
    page.goto(api.url(&new)).await.unwrap();
    until(&page, "!!document.querySelector('#monitor-form')").await;
    assert_eq!(
        eval::<String>(&page, "document.getElementById('f-xPath').value").await,
        "//p[@class='price']"
    );
    assert_eq!(
        eval::<String>(&page, "document.getElementById('f-url').value").await,
        site.url("/shop")
    );
    // Every control has a label.
    let unlabelled: Vec<String> = eval(
        &page,
        "[...document.querySelectorAll('#monitor-form input:not([type=hidden]), \
         #monitor-form select, #monitor-form textarea')]\
         .filter(e => !(e.labels && e.labels.length)).map(e => e.name)",
    )
    .await;
    assert!(unlabelled.is_empty(), "without a label: {unlabelled:?}");

    set(&page, "f-name", "Tea price").await;
    set(&page, "f-regex", r"(\d+\.\d+)").await;
    set(&page, "f-recurrenceInSeconds", "300").await;
    set(&page, "f-headers-0--key", "X-Wachet-Test").await;
    set(&page, "f-headers-0--value", "form").await;
    set(&page, "f-note", "<b>not bold</b>").await;

    // Preview: the value the monitor would store, before anything is saved.
    click(&page, "#preview-button").await;
    until(&page, "!!document.querySelector('.preview-value')").await;
    assert_eq!(
        eval::<String>(
            &page,
            "document.querySelector('.preview-value').textContent"
        )
        .await,
        "12.40"
    );
    assert_eq!(
        monitor_count(&api, &user).await,
        0,
        "a preview saves nothing"
    );
    let fetched = site.requests();
    assert!(
        fetched
            .iter()
            .any(|r| r.header("x-wachet-test") == Some("form")),
        "the preview sent the form's header"
    );
    // Everything typed is still there.
    assert_eq!(
        eval::<String>(&page, "document.getElementById('f-regex').value").await,
        r"(\d+\.\d+)"
    );
    assert_eq!(
        eval::<String>(&page, "document.getElementById('f-note').value").await,
        "<b>not bold</b>"
    );
    screenshots(&page, "monitor-form-preview", 375).await;

    // Save: the monitor's page, and the API has every field set.
    click(&page, ".form-actions button.primary").await;
    until(
        &page,
        "/^\\/monitors\\/[^/]+$/.test(location.pathname) && !document.getElementById('monitor-form')",
    )
    .await;
    let path: String = eval(&page, "location.pathname").await;
    let task_id = path.trim_start_matches("/monitors/").to_string();
    let stored = api
        .get(&user, &format!("/thirdparty/v1/task/{task_id}"))
        .await
        .ok()
        .clone();
    assert_eq!(stored["name"], "Tea price");
    assert_eq!(stored["url"], site.url("/shop"));
    assert_eq!(stored["xPath"], "//p[@class='price']");
    assert_eq!(stored["regex"], r"(\d+\.\d+)");
    assert_eq!(stored["recurrenceInSeconds"], 300);
    assert_eq!(stored["note"], "<b>not bold</b>");
    assert_eq!(
        stored["headers"],
        json!([{"key": "X-Wachet-Test", "value": "form"}])
    );
    assert_eq!(stored["alerts"][0]["type"], "NotEq");
    assert_eq!(stored["jobType"], "SinglePage");

    // Edit through the monitor page's "Edit" link: a daily check, an alert on a threshold.
    click(&page, "a[href$='/edit']").await;
    until(&page, "!!document.querySelector('#monitor-form')").await;
    assert_eq!(
        eval::<String>(&page, "document.getElementById('f-name').value").await,
        "Tea price"
    );
    screenshot(&page, "monitor-edit", 1440).await;
    screenshot(&page, "monitor-edit", 375).await;
    width(&page, 1440).await;
    set(&page, "f-recurrenceInSeconds", "86400").await;
    // "Add another alert" posts the form back with an empty row (no script needed).
    click(&page, "button[name=add][value=alerts]").await;
    until(&page, "!!document.getElementById('f-alerts-1--type')").await;
    assert_eq!(
        eval::<String>(
            &page,
            "document.getElementById('f-recurrenceInSeconds').value"
        )
        .await,
        "86400",
        "the change typed before adding a row is kept"
    );
    // A reminder belongs to Error alerts: its field shows on those rows only.
    let remind_shown = |row: usize| {
        format!(
            "!document.getElementById('f-alerts-{row}--remindEverySeconds').closest('.field').hidden"
        )
    };
    assert!(
        !eval::<bool>(&page, &remind_shown(0)).await,
        "hidden on NotEq"
    );
    set(&page, "f-alerts-1--type", "Error").await;
    assert!(
        eval::<bool>(&page, &remind_shown(1)).await,
        "shown on Error"
    );
    screenshot(&page, "monitor-form-reminder", 1440).await;
    screenshot(&page, "monitor-form-reminder", 375).await;
    width(&page, 1440).await;
    set(&page, "f-alerts-1--type", "Gt").await;
    set(&page, "f-alerts-1--value", "20").await;
    click(&page, ".form-actions button.primary").await;
    until(
        &page,
        &format!("location.pathname === '/monitors/{task_id}'"),
    )
    .await;
    let edited = api
        .get(&user, &format!("/thirdparty/v1/task/{task_id}"))
        .await
        .ok()
        .clone();
    assert_eq!(edited["recurrenceInSeconds"], 86400);
    assert_eq!(edited["alerts"][1]["type"], "Gt");
    assert_eq!(edited["alerts"][1]["value"], "20");
    assert_eq!(edited["name"], "Tea price");
    assert_eq!(
        monitor_count(&api, &user).await,
        1,
        "an edit creates nothing"
    );

    // Validation: an empty URL, a bad XPath and a bad regex, each at its field, typed values kept.
    page.goto(api.url("/monitors/new")).await.unwrap();
    until(&page, "!!document.querySelector('#monitor-form')").await;
    set(&page, "f-name", "Broken <i>one</i>").await;
    set(&page, "f-xPath", "//p[").await;
    set(&page, "f-regex", "(unclosed").await;
    click(&page, ".form-actions button.primary").await;
    until(&page, "!!document.querySelector('#problems')").await;
    for field in ["f-url", "f-xPath", "f-regex"] {
        let js = format!(
            "(() => {{ const e = document.getElementById('{field}'); \
             const m = document.getElementById(e.getAttribute('aria-describedby').split(' ')[0]); \
             return [e.getAttribute('aria-invalid'), m ? m.textContent : ''] }})()"
        );
        let (invalid, message): (String, String) = eval(&page, &js).await;
        assert_eq!(invalid, "true", "{field}");
        assert!(!message.trim().is_empty(), "{field} has its message");
        let linked: bool = eval(
            &page,
            &format!("!!document.querySelector('#problems a[href=\"#{field}\"]')"),
        )
        .await;
        assert!(linked, "the summary links to {field}");
    }
    assert_eq!(
        eval::<String>(&page, "document.getElementById('f-xPath').value").await,
        "//p["
    );
    assert_eq!(
        eval::<String>(&page, "document.getElementById('f-name').value").await,
        "Broken <i>one</i>"
    );
    assert_eq!(monitor_count(&api, &user).await, 1, "nothing stored");
    screenshot(&page, "monitor-form-errors", 1440).await;
    screenshot(&page, "monitor-form-errors", 375).await;
    width(&page, 1440).await;

    // A Portal preview: the pages of the fixture site, listed as the crawl finds them.
    page.goto(api.url("/monitors/new")).await.unwrap();
    until(&page, "!!document.querySelector('#monitor-form')").await;
    let portal_hidden: bool = eval(&page, "document.querySelector('fieldset.portal').hidden").await;
    assert!(
        portal_hidden,
        "the Portal fields hide for a single page (script on)"
    );
    set(&page, "f-url", &site.url("/portal")).await;
    click(&page, "input[name=jobType][value=Portal]").await;
    until(&page, "!document.querySelector('fieldset.portal').hidden").await;
    set(&page, "f-crawlingDepth", "1").await;
    click(&page, "#preview-button").await;
    until(&page, "!!document.querySelector('.crawl-summary')").await;
    let urls: Vec<String> = eval(
        &page,
        "[...document.querySelectorAll('.crawled-url')].map(e => e.textContent).sort()",
    )
    .await;
    assert_eq!(
        urls,
        vec![
            site.url("/portal"),
            site.url("/portal/a"),
            site.url("/portal/b")
        ]
    );
    let titles: Vec<String> = eval(
        &page,
        "[...document.querySelectorAll('.crawled-title')].map(e => e.textContent).sort()",
    )
    .await;
    assert!(titles.contains(&"Page B <i>".to_string()), "{titles:?}");
    assert!(
        eval::<String>(
            &page,
            "document.querySelector('.crawl-summary').textContent"
        )
        .await
        .contains("3 pages found")
    );
    screenshot(&page, "monitor-form-portal-preview", 1440).await;
    screenshot(&page, "monitor-form-portal-preview", 375).await;
    assert_eq!(
        monitor_count(&api, &user).await,
        1,
        "a preview saves nothing"
    );
    driver.close().await;
}

fn urlencode(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

/// The form of `path` as a browser would post it: every field of the page's form with its
/// value, then `extra` on top.
async fn new_form(api: &Api, cookie: &str) -> (String, String) {
    let (_, html) = page_text(api, cookie, "/monitors/new").await;
    let start = html.find("name=\"token\" value=\"").expect("a token") + 20;
    (csrf_of(&html), html[start..][..32].to_string())
}

async fn post(api: &Api, cookie: &str, path: &str, form: &[(&str, &str)]) -> (u16, String, String) {
    let response = post_form(api, cookie, path, form).await;
    let status = response.status().as_u16();
    let location = location(&response);
    (status, location, response.text().await.unwrap())
}

both!(a_double_submit_creates_one_monitor_and_a_form_without_csrf_creates_none);
async fn a_double_submit_creates_one_monitor_and_a_form_without_csrf_creates_none() {
    let site = FixtureServer::builder()
        .page("/shop", shop_page())
        .start()
        .await
        .unwrap();
    let api = Arc::new(Api::start().await);
    let user = api.user("twice@example.com").await;
    let cookie = session_cookie(&api, &user).await;
    let (csrf, token) = new_form(&api, &cookie).await;
    let url = site.url("/shop");
    let form = vec![
        ("csrf", csrf.clone()),
        ("token", token.clone()),
        ("url", url.clone()),
        ("name", "Twice".to_string()),
        ("recurrence", "3600".to_string()),
        ("alerts[0].type", "NotEq".to_string()),
    ];
    // Two submits at once, then a third after: one monitor, all three taken to it.
    let submit = |form: Vec<(&'static str, String)>| {
        let api = api.clone();
        let cookie = cookie.clone();
        async move {
            let pairs: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
            post(&api, &cookie, "/monitors/new", &pairs).await
        }
    };
    let (first, second) = tokio::join!(submit(form.clone()), submit(form.clone()));
    let third = submit(form.clone()).await;
    for (status, location, body) in [&first, &second, &third] {
        assert_eq!(*status, 303, "{body}");
        assert!(location.starts_with("/monitors/"), "{location}");
    }
    assert_eq!(first.1, second.1);
    assert_eq!(first.1, third.1);
    assert_eq!(monitor_count(&api, &user).await, 1);

    // A fresh form's token creates a second one.
    let (_, token2) = new_form(&api, &cookie).await;
    let mut again = form.clone();
    again[1].1 = token2;
    let (status, location, _) = submit(again).await;
    assert_eq!(status, 303);
    assert_ne!(location, first.1);
    assert_eq!(monitor_count(&api, &user).await, 2);

    // Without the CSRF token, or with another session's: refused, nothing created.
    let mut no_csrf = form.clone();
    no_csrf.remove(0);
    no_csrf[0].1 = "0123456789abcdef0123456789abcdef".into();
    let (status, _, body) = submit(no_csrf).await;
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("This form was refused"));
    let (status, _, _) = post(
        &api,
        &cookie,
        "/monitors/preview",
        &[("url", url.as_str()), ("recurrence", "3600")],
    )
    .await;
    assert_eq!(status, 403, "a preview needs the token too");
    assert_eq!(monitor_count(&api, &user).await, 2);

    // Another user's monitor: the same 404 page as an unknown id, for the form, its post
    // and its preview; the monitor stays as it was.
    let other = api.user("other@example.com").await;
    let other_cookie = session_cookie(&api, &other).await;
    let (other_csrf, _) = new_form(&api, &other_cookie).await;
    let mine = first.1.trim_start_matches("/monitors/").to_string();
    let unknown = "0190aaaa-0000-7000-8000-000000000000";
    let (status, foreign) =
        crate::support::web::page_text(&api, &other_cookie, &format!("/monitors/{mine}/edit"))
            .await;
    let (unknown_status, unknown_page) =
        crate::support::web::page_text(&api, &other_cookie, &format!("/monitors/{unknown}/edit"))
            .await;
    assert_eq!((status, unknown_status), (404, 404));
    assert_eq!(foreign, unknown_page);
    assert!(!foreign.contains("Twice"));
    let (status, _, _) = post(
        &api,
        &other_cookie,
        &format!("/monitors/{mine}/edit"),
        &[
            ("csrf", &other_csrf),
            ("url", "https://example.com/"),
            ("name", "Taken"),
            ("recurrence", "3600"),
        ],
    )
    .await;
    assert_eq!(status, 404);
    let (status, _, _) = post(
        &api,
        &other_cookie,
        "/monitors/preview",
        &[
            ("csrf", &other_csrf),
            ("id", &mine),
            ("url", "https://example.com/"),
            ("recurrence", "3600"),
        ],
    )
    .await;
    assert_eq!(status, 404);
    let unchanged = api
        .get(&user, &format!("/thirdparty/v1/task/{mine}"))
        .await
        .ok()
        .clone();
    assert_eq!(unchanged["name"], "Twice");
    assert_eq!(id(&unchanged), mine);
}

both!(a_preview_the_network_policy_refuses_shows_the_engines_words_and_previews_are_limited);
async fn a_preview_the_network_policy_refuses_shows_the_engines_words_and_previews_are_limited() {
    let site = FixtureServer::builder()
        .page("/shop", shop_page())
        .start()
        .await
        .unwrap();
    let mut setup = Setup::api();
    setup.engine = wachet::Engine::builder();
    let api = Api::start_as(setup).await;
    let user = api.user("policy@example.com").await;
    let cookie = session_cookie(&api, &user).await;
    let (csrf, _) = new_form(&api, &cookie).await;
    let url = site.url("/shop");
    let form = [
        ("csrf", csrf.as_str()),
        ("url", url.as_str()),
        ("recurrence", "3600"),
    ];
    let (status, _, page) = post(&api, &cookie, "/monitors/preview", &form).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("The check failed: "), "{page}");
    assert!(page.contains("allow private networks"), "{page}");
    assert_eq!(site.hits("/shop"), 0, "nothing reached the private address");
    assert!(
        page.contains(&format!("value=\"{url}\"")),
        "the URL typed is kept"
    );

    // Ten previews a minute; the eleventh is refused with a clear message.
    for _ in 1..10 {
        let (status, _, _) = post(&api, &cookie, "/monitors/preview", &form).await;
        assert_eq!(status, 200);
    }
    let (status, _, page) = post(&api, &cookie, "/monitors/preview", &form).await;
    assert_eq!(status, 429, "{page}");
    assert!(
        page.contains("Too many previews: at most 10 a minute."),
        "{page}"
    );
    assert!(
        page.contains("id=\"monitor-form\""),
        "the form is still there"
    );
    assert_eq!(monitor_count(&api, &user).await, 0);
}

both!(a_value_of_10_mb_is_previewed_cut);
async fn a_value_of_10_mb_is_previewed_cut() {
    let words = "word ".repeat(2_000_000);
    let site = FixtureServer::builder()
        .page("/big", format!("<html><body><p>{words}</p></body></html>"))
        .start()
        .await
        .unwrap();
    let api = Api::start().await;
    let user = api.user("big@example.com").await;
    let cookie = session_cookie(&api, &user).await;
    let (csrf, _) = new_form(&api, &cookie).await;
    let url = site.url("/big");
    let (status, _, page) = post(
        &api,
        &cookie,
        "/monitors/preview",
        &[
            ("csrf", csrf.as_str()),
            ("url", url.as_str()),
            ("recurrence", "3600"),
        ],
    )
    .await;
    assert_eq!(status, 200);
    assert!(
        page.contains("Only the first 20000 characters are shown"),
        "{}",
        &page[..2000.min(page.len())]
    );
    assert!(page.len() < 200_000, "the page is {} bytes", page.len());
    let start = page.find("the value has ").unwrap() + 14;
    let chars: usize = page[start..].split(' ').next().unwrap().parse().unwrap();
    assert!(chars >= 9_999_000, "the whole value was checked: {chars}");
}

both!(a_portal_preview_streams_its_pages_and_runs_at_most_two_at_once);
async fn a_portal_preview_streams_its_pages_and_runs_at_most_two_at_once() {
    use wachet::testing::Reply;
    let site = FixtureServer::builder()
        .page(
            "/site",
            "<html><body><a href=\"/site/fast\">fast</a> <a href=\"/site/slow\">slow</a></body></html>",
        )
        .page("/site/fast", "<html><body>fast</body></html>")
        .reply(
            "/site/slow",
            Reply::html("<html><body>slow</body></html>")
                .delay(std::time::Duration::from_secs(600)),
        )
        .start()
        .await
        .unwrap();
    let api = Api::start().await;
    let user = api.user("stream@example.com").await;
    let cookie = session_cookie(&api, &user).await;
    let (csrf, _) = new_form(&api, &cookie).await;
    let url = site.url("/site");
    let form = [
        ("csrf", csrf.as_str()),
        ("url", url.as_str()),
        ("jobType", "Portal"),
        ("crawlingDepth", "1"),
        ("recurrence", "3600"),
    ];
    let start = || async { post_form(&api, &cookie, "/monitors/preview", &form).await };
    // The page arrives piece by piece: the fast page is listed while the slow one is still
    // being fetched, before the crawl's summary.
    let mut first = start().await;
    assert_eq!(first.status(), 200);
    let mut seen = String::new();
    let fast = site.url("/site/fast");
    tokio::time::timeout(std::time::Duration::from_secs(30), async {
        while !seen.contains(&fast) {
            let chunk = first.chunk().await.unwrap().expect("the page goes on");
            seen.push_str(&String::from_utf8_lossy(&chunk));
        }
    })
    .await
    .expect("the fast page is listed within 30 s");
    assert!(seen.contains("id=\"monitor-form\""), "the form comes first");
    assert!(
        !seen.contains("crawl-summary"),
        "the crawl is still running"
    );

    // Two run; a third is refused, saying why.
    let second = start().await;
    assert_eq!(second.status(), 200);
    let third = start().await;
    assert_eq!(third.status(), 429);
    let text = third.text().await.unwrap();
    assert!(text.contains("2 previews are still running."), "{text}");

    // Closing a preview ends its crawl and frees its turn.
    drop(first);
    drop(second);
    let mut accepted = false;
    for _ in 0..100 {
        let next = start().await;
        if next.status() == 200 {
            accepted = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(accepted, "a closed preview gave its turn back");
    assert_eq!(monitor_count(&api, &user).await, 0);
}

both!(without_scripts_rows_are_added_by_posting_back_and_every_field_is_stored);
async fn without_scripts_rows_are_added_by_posting_back_and_every_field_is_stored() {
    let api = Api::start().await;
    let user = api.user("noscript@example.com").await;
    let folder = api.folder(&user, "Shops", None).await;
    let cookie = session_cookie(&api, &user).await;
    let (csrf, token) = new_form(&api, &cookie).await;
    let mut form = vec![
        ("csrf", csrf.clone()),
        ("token", token.clone()),
        ("url", "https://example.com/news".to_string()),
        ("name", "News <b>site</b>".to_string()),
        ("jobType", "Portal".to_string()),
        ("crawlingDepth", "3".to_string()),
        ("urlFilter.include[0].type", "Regex".to_string()),
        ("urlFilter.include[0].filter", "/news/\\d+".to_string()),
        ("crawlPagesFromAllDomains", "true".to_string()),
        ("ignoreInvalidPages", "true".to_string()),
        ("alerts[0].type", "Contains".to_string()),
        ("alerts[0].parameters.compare", "Added".to_string()),
        ("alerts[0].value", "sale".to_string()),
        ("recurrence", "custom".to_string()),
        ("recurrenceCustom", "900".to_string()),
        ("method", "POST".to_string()),
        ("body", "q=1".to_string()),
        ("headers[0].key", "Accept-Language".to_string()),
        ("headers[0].value", "de".to_string()),
        ("collectRawHtml", "true".to_string()),
        ("note", "watch it".to_string()),
        ("folderId", folder.clone()),
    ];
    let as_pairs = |form: &[(&'static str, String)]| -> Vec<(String, String)> {
        form.iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    };
    let send = |pairs: Vec<(String, String)>, path: String| {
        let api = &api;
        let cookie = cookie.clone();
        async move {
            let refs: Vec<(&str, &str)> = pairs
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            post(api, &cookie, &path, &refs).await
        }
    };
    // "Add an endpoint": the form again, with everything typed and an empty endpoint row.
    let mut adding = as_pairs(&form);
    adding.push(("add".into(), "notificationEndpoints".into()));
    let (status, _, page) = send(adding, "/monitors/new".into()).await;
    assert_eq!(status, 200);
    assert!(
        page.contains("name=\"notificationEndpoints[0].value\""),
        "{page}"
    );
    assert!(page.contains("value=\"News &lt;b&gt;site&lt;/b&gt;\""));
    assert!(page.contains("value=\"/news/\\d+\""));
    assert!(
        page.contains(&format!("name=\"token\" value=\"{token}\"")),
        "the token is kept"
    );
    assert_eq!(
        monitor_count(&api, &user).await,
        0,
        "adding a row saves nothing"
    );

    form.push(("notificationEndpoints[0].type", "Webhook".into()));
    form.push((
        "notificationEndpoints[0].value",
        "https://hooks.example.com/w".into(),
    ));
    let (status, location, page) = send(as_pairs(&form), "/monitors/new".into()).await;
    assert_eq!(status, 303, "{page}");
    let task = location.trim_start_matches("/monitors/").to_string();
    let stored = api
        .get(&user, &format!("/thirdparty/v1/task/{task}"))
        .await
        .ok()
        .clone();
    assert_eq!(stored["name"], "News <b>site</b>");
    assert_eq!(stored["jobType"], "Portal");
    assert_eq!(stored["crawlingDepth"], 3);
    assert_eq!(
        stored["urlFilter"]["include"],
        json!([{"filter": "/news/\\d+", "type": "Regex"}])
    );
    assert_eq!(stored["crawlPagesFromAllDomains"], true);
    assert_eq!(stored["ignoreInvalidPages"], true);
    assert_eq!(stored["collectRawHtml"], true);
    assert_eq!(stored["alerts"][0]["type"], "Contains");
    assert_eq!(stored["alerts"][0]["value"], "sale");
    assert_eq!(stored["alerts"][0]["parameters"]["compare"], "Added");
    assert_eq!(stored["recurrenceInSeconds"], 900);
    assert_eq!(stored["method"], "POST");
    assert_eq!(stored["body"], "q=1");
    assert_eq!(stored["headers"][0]["key"], "Accept-Language");
    assert_eq!(stored["note"], "watch it");
    assert_eq!(stored["folderId"], folder.as_str());
    assert_eq!(
        stored["notificationEndpoints"][0]["value"],
        "https://hooks.example.com/w"
    );

    // The edit form shows what is stored; saving it with the top level moves it there, and
    // an empty endpoint value removes that endpoint.
    let (status, edit_page) =
        crate::support::web::page_text(&api, &cookie, &format!("/monitors/{task}/edit")).await;
    assert_eq!(status, 200);
    assert!(edit_page.contains("value=\"900\""));
    assert!(
        edit_page.contains("<option value=\"Portal\"")
            || edit_page.contains("value=\"Portal\" checked")
    );
    let mut edit: Vec<(&'static str, String)> = form
        .iter()
        .filter(|(k, _)| *k != "token")
        .cloned()
        .collect();
    for (key, value) in edit.iter_mut() {
        match *key {
            "folderId" => value.clear(),
            "notificationEndpoints[0].value" => value.clear(),
            "recurrence" => *value = "0".into(),
            _ => {}
        }
    }
    let (status, location, page) = send(as_pairs(&edit), format!("/monitors/{task}/edit")).await;
    assert_eq!(status, 303, "{page}");
    assert_eq!(location, format!("/monitors/{task}"));
    let edited = api
        .get(&user, &format!("/thirdparty/v1/task/{task}"))
        .await
        .ok()
        .clone();
    assert!(edited["folderId"].is_null(), "{edited}");
    assert_eq!(edited["recurrenceInSeconds"], 0);
    assert_eq!(edited["notificationEndpoints"], json!([]));
    assert_eq!(monitor_count(&api, &user).await, 1);

    // A bad custom interval: the form again, at its field, nothing changed.
    for (key, value) in edit.iter_mut() {
        if *key == "recurrence" {
            *value = "custom".into();
        }
        if *key == "recurrenceCustom" {
            *value = "soon".into();
        }
    }
    let (status, _, page) = send(as_pairs(&edit), format!("/monitors/{task}/edit")).await;
    assert_eq!(status, 400);
    assert!(
        page.contains("aria-invalid=\"true\" aria-describedby=\"f-recurrenceInSeconds-error"),
        "{page}"
    );
    assert!(page.contains("value=\"soon\""));
    let unchanged = api
        .get(&user, &format!("/thirdparty/v1/task/{task}"))
        .await
        .ok()
        .clone();
    assert_eq!(unchanged["recurrenceInSeconds"], 0);
}
