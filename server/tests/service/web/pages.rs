//! The web interface over the real service: HTTP-level checks of its headers, assets, cookie
//! and form protections, and real headless Chromium driving the pages as a person would
//! (sign-in, quick-add, escaping, CSRF, sign-out, another user's folder), with screenshots
//! written under `target/screenshots/`.

use crate::Api;
use crate::support::web::*;
use chromiumoxide::cdp::browser_protocol::page::EventJavascriptDialogOpening;
use futures::StreamExt;
use serde_json::json;
use std::time::Duration;
use wachet::testing::FixtureServer;
use wachet_server::api::{ApiSettings, LimitSettings};
use wachet_server::web::WebSettings;

both!(pages_carry_the_security_headers_and_assets_are_hashed_and_cached_for_a_year);
async fn pages_carry_the_security_headers_and_assets_are_hashed_and_cached_for_a_year() {
    let api = Api::start().await;
    let response = client().get(api.url("/signin")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let headers = response.headers().clone();
    let header = |name: &str| headers.get(name).map(|v| v.to_str().unwrap().to_string());
    let csp = header("content-security-policy").expect("a CSP");
    assert!(csp.contains("script-src 'self'"), "{csp}");
    assert!(!csp.contains("unsafe-inline"), "{csp}");
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    assert_eq!(header("x-frame-options").as_deref(), Some("DENY"));
    assert_eq!(header("x-content-type-options").as_deref(), Some("nosniff"));
    assert_eq!(header("referrer-policy").as_deref(), Some("same-origin"));
    assert!(header("content-type").unwrap().starts_with("text/html"));
    let html = response.text().await.unwrap();
    assert!(!html.contains("https://"), "nothing from elsewhere: {html}");
    assert!(
        !html.contains("<script>") && !html.contains("style="),
        "no inline code: {html}"
    );

    // Every linked asset has a content hash in its name and is kept for a year.
    let mut weight = html.len();
    let mut assets = 0;
    for part in html.split("\"/assets/").skip(1) {
        let name = &part[..part.find('"').unwrap()];
        let (stem, rest) = name.split_once('.').unwrap();
        let (hash, _extension) = rest.split_once('.').unwrap();
        assert!(!stem.is_empty());
        assert_eq!(hash.len(), 16, "{name}");
        assert!(hash.chars().all(|c| c.is_ascii_hexdigit()), "{name}");
        let asset = client()
            .get(api.url(&format!("/assets/{name}")))
            .send()
            .await
            .unwrap();
        assert_eq!(asset.status(), 200, "{name}");
        assert_eq!(
            asset.headers()["cache-control"],
            "public, max-age=31536000, immutable"
        );
        weight += asset.bytes().await.unwrap().len();
        assets += 1;
        // Another hash is another file: never today's under a year-long cache.
        let stale = client()
            .get(api.url(&format!("/assets/{stem}.0000000000000000.{_extension}")))
            .send()
            .await
            .unwrap();
        assert_eq!(stale.status(), 404);
    }
    assert!(assets >= 1, "the page links its style sheet: {html}");
    assert!(weight < 100_000, "the sign-in page weighs {weight} bytes");
}

both!(the_session_cookie_is_httponly_lax_and_secure_when_https);
async fn the_session_cookie_is_httponly_lax_and_secure_when_https() {
    let api = Api::start().await;
    let user = api.user("cookie@example.com").await;
    let plain = set_cookie(&sign_in(&api, &user.account.email, PASSWORD).await);
    assert!(plain.starts_with("wachet_session="), "{plain}");
    for attribute in ["HttpOnly", "SameSite=Lax", "Path=/"] {
        assert!(plain.contains(attribute), "{attribute} missing: {plain}");
    }
    assert!(!plain.contains("Secure"), "plain http: {plain}");
    // Behind a proxy that says the request came over https.
    let forwarded = client()
        .post(api.url("/signin"))
        .header("x-forwarded-proto", "https")
        .form(&[
            ("email", user.account.email.as_str()),
            ("password", PASSWORD),
        ])
        .send()
        .await
        .unwrap();
    assert!(set_cookie(&forwarded).contains("; Secure"));
    // With an https public URL, whatever the request says.
    let public = Api::start_with(ApiSettings {
        web: WebSettings {
            public_url: Some("https://watch.example.com".into()),
            ..WebSettings::default()
        },
        ..ApiSettings::default()
    })
    .await;
    let user = public.user("cookie@example.com").await;
    let secure = set_cookie(&sign_in(&public, &user.account.email, PASSWORD).await);
    assert!(secure.contains("; Secure"), "{secure}");
}

both!(a_form_without_the_right_csrf_token_or_from_another_site_changes_nothing);
async fn a_form_without_the_right_csrf_token_or_from_another_site_changes_nothing() {
    let api = Api::start().await;
    let user = api.user("csrf@example.com").await;
    let cookie = session_cookie(&api, &user).await;
    let (_, html) = page_text(&api, &cookie, "/").await;
    let csrf = csrf_of(&html);
    let add = |fields: Vec<(&'static str, String)>, extra: Option<(&'static str, String)>| {
        let mut request = client()
            .post(api.url("/monitors/quick-add"))
            .header("cookie", &cookie)
            .form(&fields);
        if let Some((name, value)) = extra {
            request = request.header(name, value);
        }
        request.send()
    };
    let url = || ("url", "https://example.com/".to_string());
    let wrong = "0".repeat(64);
    for (fields, extra) in [
        (vec![url()], None),
        (vec![url(), ("csrf", wrong.clone())], None),
        (vec![url(), ("csrf", String::new())], None),
        (
            vec![url(), ("csrf", csrf.clone())],
            Some(("origin", "http://evil.example".to_string())),
        ),
        (
            vec![url(), ("csrf", csrf.clone())],
            Some(("sec-fetch-site", "cross-site".to_string())),
        ),
    ] {
        let response = add(fields.clone(), extra.clone()).await.unwrap();
        assert_eq!(response.status(), 403, "{fields:?} {extra:?}");
        let page = response.text().await.unwrap();
        assert!(page.contains("This form was refused"), "{page}");
        assert!(page.contains("nothing was changed"), "{page}");
    }
    assert_eq!(monitor_count(&api, &user).await, 0);
    // Sign-out is a form too: refused without the token, and the session goes on.
    let out = client()
        .post(api.url("/signout"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(out.status(), 403);
    assert_eq!(page_text(&api, &cookie, "/").await.0, 200);
    // The real form, same origin, works.
    let response = add(vec![url(), ("csrf", csrf)], Some(("origin", api.url(""))))
        .await
        .unwrap();
    assert_eq!(response.status(), 303);
    assert_eq!(monitor_count(&api, &user).await, 1);
}

both!(invalidate_tokens_and_sign_out_end_the_web_session);
async fn invalidate_tokens_and_sign_out_end_the_web_session() {
    let api = Api::start().await;
    let user = api.user("session@example.com").await;
    let cookie = session_cookie(&api, &user).await;
    assert_eq!(page_text(&api, &cookie, "/").await.0, 200);
    api.post(&user, "/thirdparty/v1/user/invalidateTokens", json!({}))
        .await
        .ok();
    let response = client()
        .get(api.url("/"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 303);
    assert_eq!(response.headers()["location"], "/signin?ended=1");

    // Sign-out ends that session's token: the old cookie no longer works.
    let cookie = session_cookie(&api, &user).await;
    let (_, html) = page_text(&api, &cookie, "/").await;
    let out = client()
        .post(api.url("/signout"))
        .header("cookie", &cookie)
        .form(&[("csrf", csrf_of(&html))])
        .send()
        .await
        .unwrap();
    assert_eq!(out.status(), 303);
    assert!(set_cookie(&out).contains("Max-Age=0"));
    assert_eq!(page_text(&api, &cookie, "/").await.0, 303);
}

both!(sign_in_failures_show_a_message_and_the_wait_after_too_many);
async fn sign_in_failures_show_a_message_and_the_wait_after_too_many() {
    let api = Api::start_with(ApiSettings {
        limits: LimitSettings {
            login_failures_per_minute: 2,
            ..LimitSettings::default()
        },
        ..ApiSettings::default()
    })
    .await;
    let user = api.user("limit@example.com").await;
    let empty = sign_in(&api, "", "").await;
    assert_eq!(empty.status(), 400);
    let text = empty.text().await.unwrap();
    assert!(text.contains("aria-invalid=\"true\""), "{text}");
    assert!(text.contains("is required"), "{text}");
    // Wrong passwords, each with its message, until the limit stops them.
    let mut failures = 0;
    loop {
        let wrong = sign_in(&api, &user.account.email, "wrong password").await;
        if wrong.status() == 429 {
            break;
        }
        assert_eq!(wrong.status(), 401);
        assert!(
            wrong
                .text()
                .await
                .unwrap()
                .contains("Wrong e-mail address or password.")
        );
        failures += 1;
        assert!(failures <= 3, "no limit after {failures} failures");
    }
    // Now even the right password waits.
    let limited = sign_in(&api, &user.account.email, PASSWORD).await;
    assert_eq!(limited.status(), 429);
    assert!(limited.headers().contains_key("retry-after"));
    let text = limited.text().await.unwrap();
    assert!(text.contains("Too many attempts, try again in "), "{text}");
}

// --- in a real browser

in_browser!(
    sign_in_quick_add_escaping_csrf_and_sign_out_in_a_real_browser,
    multi_thread
);
async fn sign_in_quick_add_escaping_csrf_and_sign_out_in_a_real_browser() {
    let Some(_guard) = wachet::testing::browser_test().await else {
        return;
    };
    let site = FixtureServer::builder()
        .page(
            "/prices",
            "<html><body><h1>Prices</h1><p>Tea 3.50</p></body></html>",
        )
        .page("/gone", "<html><body>missing</body></html>")
        .start()
        .await
        .unwrap();
    let api = Api::start_checking().await;
    let user = api.user("reader@example.com").await;
    // Monitors in every state, one named like an attack, and a folder.
    let folder = api.folder(&user, "Shops <b>bold</b>", None).await;
    api.task(
        &user,
        json!({"name": "<script>alert(1)</script>", "url": site.url("/prices"),
        "recurrenceInSeconds": 3600, "folderId": folder}),
    )
    .await;
    api.task(
        &user,
        json!({"name": "Paused page", "url": site.url("/prices"),
        "recurrenceInSeconds": 0}),
    )
    .await;
    api.task(
        &user,
        json!({"name": "Broken page", "url": site.url("/prices"), "xPath": "//table",
        "recurrenceInSeconds": 3600}),
    )
    .await;

    let driver = Driver::launch().await;
    let page = driver.browser.new_page(api.url("/")).await.unwrap();
    let mut dialogs = page
        .event_listener::<EventJavascriptDialogOpening>()
        .await
        .unwrap();
    until(
        &page,
        "location.pathname === '/signin' && !!document.querySelector('#email')",
    )
    .await;
    screenshot(&page, "signin", 1440).await;
    screenshot(&page, "signin", 375).await;
    width(&page, 1440).await;

    // A wrong password: the message on the page.
    type_into(&page, "#email", &user.account.email).await;
    type_into(&page, "#password", "not the password").await;
    click_and_wait(
        &page,
        "button[type=submit]",
        "!!document.querySelector('#signin-error')",
    )
    .await;
    let message: String = eval(&page, "document.querySelector('#signin-error').textContent").await;
    assert_eq!(message, "Wrong e-mail address or password.");

    // The right one: the list of the root folder.
    page.evaluate("document.querySelector('#password').value = ''")
        .await
        .unwrap();
    type_into(&page, "#password", PASSWORD).await;
    click_and_wait(
        &page,
        ".signin button[type=submit]",
        "!!document.querySelector('#quick-url')",
    )
    .await;
    assert_eq!(eval::<String>(&page, "location.pathname").await, "/");
    assert_eq!(
        eval::<String>(
            &page,
            "document.querySelector('label[for=quick-url]').textContent"
        )
        .await,
        "URL"
    );
    assert_eq!(
        eval::<String>(&page, "document.querySelector('#quick-url').type").await,
        "url"
    );
    assert!(
        eval::<bool>(
            &page,
            "[...document.querySelectorAll('a')].some(a => a.textContent === 'New monitor')"
        )
        .await
    );

    // Quick-add the fixture page.
    type_into(&page, "#quick-url", &site.url("/gone")).await;
    click_and_wait(
        &page,
        ".quick-add button[type=submit]",
        "[...document.querySelectorAll('.monitor-url')].some(e => e.textContent.endsWith('/gone'))",
    )
    .await;
    let stored = api
        .get(&user, "/thirdparty/v1/task/search?query=gone")
        .await;
    let stored = stored.ok().as_array().unwrap().clone();
    assert_eq!(stored.len(), 1);
    // A page without a title: named after its host and path.
    assert_eq!(stored[0]["name"], "127.0.0.1/gone");
    assert_eq!(stored[0]["recurrenceInSeconds"], 3600);
    assert_eq!(stored[0]["alerts"][0]["type"], "NotEq");

    // A bad URL: the message at the field, nothing stored.
    type_into(&page, "#quick-url", "ftp://example.com/").await;
    click_and_wait(
        &page,
        ".quick-add button[type=submit]",
        "!!document.querySelector('#quick-url-error')",
    )
    .await;
    assert_eq!(
        eval::<String>(
            &page,
            "document.querySelector('#quick-url').getAttribute('aria-invalid')"
        )
        .await,
        "true"
    );
    assert_eq!(
        eval::<String>(
            &page,
            "document.querySelector('#quick-url').getAttribute('aria-describedby')"
        )
        .await,
        "quick-url-error"
    );
    assert_eq!(monitor_count(&api, &user).await, 4);

    // Let the checks finish, so the list shows each state.
    for _ in 0..300 {
        let all = api.get(&user, "/thirdparty/v1/task/search").await;
        let checked = all
            .ok()
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| crate::checked(m))
            .count();
        if checked >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    page.reload().await.unwrap();
    until(&page, "document.querySelectorAll('.monitor').length === 3").await;
    let badges: Vec<String> = eval(
        &page,
        "[...document.querySelectorAll('.badge')].map(b => b.textContent)",
    )
    .await;
    assert!(badges.contains(&"OK".to_string()), "{badges:?}");
    assert!(badges.contains(&"Failed".to_string()), "{badges:?}");
    assert!(badges.contains(&"Paused".to_string()), "{badges:?}");
    let error: String = eval(
        &page,
        "document.querySelector('.monitor-error').textContent",
    )
    .await;
    assert!(error.contains("matched nothing"), "{error}");
    let folder_text: String = eval(&page, "document.querySelector('.folder').textContent").await;
    assert!(
        folder_text.contains("Shops <b>bold</b>") && folder_text.contains("1 monitor"),
        "{folder_text}"
    );
    screenshot(&page, "monitors", 1440).await;
    screenshot(&page, "monitors", 375).await;
    dark(&page, true).await;
    screenshot(&page, "monitors-dark", 1440).await;
    dark(&page, false).await;
    width(&page, 1440).await;

    // The attack's name shows as text, in the folder's page with its breadcrumbs.
    page.goto(api.url(&format!("/folders/{folder}")))
        .await
        .unwrap();
    until(&page, "!!document.querySelector('.monitor-name')").await;
    assert_eq!(
        eval::<String>(&page, "document.querySelector('.monitor-name').textContent").await,
        "<script>alert(1)</script>"
    );
    // Only the interface's own script assets; nothing the name injected.
    assert_eq!(
        eval::<i64>(
            &page,
            "[...document.scripts].filter(s => !s.src.startsWith(location.origin + '/assets/')).length"
        )
        .await,
        0
    );
    assert_eq!(
        eval::<String>(
            &page,
            "document.querySelector('[aria-current=page]').textContent"
        )
        .await,
        "Shops <b>bold</b>"
    );

    // A form with a tampered token: refused with a clear page, nothing stored.
    page.evaluate("document.querySelector('.quick-add input[name=csrf]').value = 'f'.repeat(64)")
        .await
        .unwrap();
    type_into(&page, "#quick-url", &site.url("/prices")).await;
    click_and_wait(
        &page,
        ".quick-add button[type=submit]",
        "document.title.startsWith('This form was refused')",
    )
    .await;
    assert_eq!(monitor_count(&api, &user).await, 4);

    // Sign out: the old cookie no longer opens the list.
    page.goto(api.url("/")).await.unwrap();
    until(&page, "!!document.querySelector('.account button')").await;
    let cookie = page
        .get_cookies()
        .await
        .unwrap()
        .into_iter()
        .find(|c| c.name == "wachet_session")
        .expect("the session cookie");
    assert!(cookie.http_only);
    click_and_wait(&page, ".account button", "location.pathname === '/signin'").await;
    let old = format!("wachet_session={}", cookie.value);
    assert_eq!(page_text(&api, &old, "/").await.0, 303);

    assert!(
        tokio::time::timeout(Duration::from_millis(200), dialogs.next())
            .await
            .is_err(),
        "a dialog opened"
    );
    driver.close().await;
}

in_browser!(
    another_users_folder_is_the_same_404_page_as_an_unknown_one_in_a_real_browser,
    multi_thread
);
async fn another_users_folder_is_the_same_404_page_as_an_unknown_one_in_a_real_browser() {
    let Some(_guard) = wachet::testing::browser_test().await else {
        return;
    };
    let api = Api::start().await;
    let first = api.user("first@example.com").await;
    let second = api.user("second@example.com").await;
    let folder = api.folder(&first, "Private", None).await;
    let driver = Driver::launch().await;
    let page = driver.browser.new_page(api.url("/signin")).await.unwrap();
    sign_in_through_the_form(&page, &second).await;

    page.goto(api.url(&format!("/folders/{folder}")))
        .await
        .unwrap();
    until(&page, "document.readyState === 'complete'").await;
    let theirs: String = eval(&page, "document.querySelector('main').innerHTML").await;
    assert!(theirs.contains("Not found"), "{theirs}");
    assert!(!theirs.contains("Private"), "{theirs}");
    page.goto(api.url("/folders/019ab0c2-5c4e-7d2a-9f1e-3b8e2c1d0a11"))
        .await
        .unwrap();
    until(&page, "document.readyState === 'complete'").await;
    let unknown: String = eval(&page, "document.querySelector('main').innerHTML").await;
    assert_eq!(theirs, unknown);
    // At the HTTP level too: the same status and body.
    let cookie = session_cookie(&api, &second).await;
    let a = page_text(&api, &cookie, &format!("/folders/{folder}")).await;
    let b = page_text(
        &api,
        &cookie,
        "/folders/019ab0c2-5c4e-7d2a-9f1e-3b8e2c1d0a11",
    )
    .await;
    assert_eq!(a.0, 404);
    assert_eq!(a, b);
    driver.close().await;
}

both!(a_form_too_large_or_unreadable_is_a_clear_page_and_changes_nothing);
async fn a_form_too_large_or_unreadable_is_a_clear_page_and_changes_nothing() {
    let api = Api::start().await;
    let user = api.user("big@example.com").await;
    let cookie = session_cookie(&api, &user).await;
    let (_, html) = page_text(&api, &cookie, "/").await;
    let csrf = csrf_of(&html);
    let post = |body: Vec<u8>| {
        client()
            .post(api.url("/monitors/quick-add"))
            .header("cookie", &cookie)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
    };
    let huge = format!(
        "csrf={csrf}&url=https://example.com/{}",
        "a".repeat(100_000)
    );
    let response = post(huge.into_bytes()).await.unwrap();
    assert_eq!(response.status(), 413);
    let page = response.text().await.unwrap();
    assert!(page.contains("The form is larger than 16 KiB."), "{page}");
    // Two values for one field.
    let twice = format!("csrf={csrf}&url=https://a.example/&url=https://b.example/");
    let response = post(twice.into_bytes()).await.unwrap();
    assert_eq!(response.status(), 400);
    let page = response.text().await.unwrap();
    assert!(page.contains("The form could not be read."), "{page}");
    assert_eq!(monitor_count(&api, &user).await, 0);
}

in_browser!(
    a_monitors_page_history_and_difference_in_a_real_browser,
    multi_thread
);
async fn a_monitors_page_history_and_difference_in_a_real_browser() {
    let Some(_guard) = wachet::testing::browser_test().await else {
        return;
    };
    let site = FixtureServer::builder()
        .page("/tea", price_page("3.50"))
        .start()
        .await
        .unwrap();
    let api = Api::start_checking().await;
    let user = api.user("history@example.com").await;
    let other = api.user("other@example.com").await;
    let created = api
        .task(
            &user,
            json!({"name": "Tea <i>price</i>", "url": site.url("/tea"),
            "recurrenceInSeconds": 1, "xPath": "//body",
            "alerts": [{"type": "NotEq"}]}),
        )
        .await;
    let id = created["id"].as_str().unwrap().to_string();
    // The scheduler checks it, the price changes, the scheduler sees the change.
    until_value(&api, &user, &id, "3.50").await;
    site.set("/tea", wachet::testing::Reply::html(price_page("3.90")));
    until_value(&api, &user, &id, "3.90").await;

    let driver = Driver::launch().await;
    let page = driver.browser.new_page(api.url("/signin")).await.unwrap();
    let mut dialogs = page
        .event_listener::<EventJavascriptDialogOpening>()
        .await
        .unwrap();
    sign_in_through_the_form(&page, &user).await;

    // From the list to the monitor's page.
    click_and_wait(
        &page,
        "a.monitor-name",
        "!!document.querySelector('pre.value')",
    )
    .await;
    assert_eq!(
        eval::<String>(&page, "location.pathname").await,
        format!("/monitors/{id}")
    );
    assert_eq!(
        eval::<String>(&page, "document.querySelector('h1').textContent").await,
        "Tea <i>price</i>"
    );
    assert_eq!(
        eval::<String>(
            &page,
            "document.querySelector('.page-head a.monitor-url').rel"
        )
        .await,
        "noopener noreferrer"
    );
    assert_eq!(
        eval::<String>(&page, "document.querySelector('.badge').textContent").await,
        "OK"
    );
    let value: String = eval(&page, "document.querySelector('pre.value').textContent").await;
    assert!(
        value.contains("Tea 3.90") && value.contains("<b>html</b>"),
        "{value}"
    );
    assert_eq!(
        eval::<i64>(&page, "document.querySelectorAll('main b, main i').length").await,
        0,
        "values and names show as text"
    );
    let settings: String = eval(&page, "document.querySelector('.settings').textContent").await;
    assert!(
        settings.contains("every second") && settings.contains("//body"),
        "{settings}"
    );
    screenshot(&page, "monitor", 1440).await;
    screenshot(&page, "monitor", 375).await;
    width(&page, 1440).await;

    // Pause, then resume, through the page: the API sees each.
    click_and_wait(
        &page,
        ".actions button",
        "document.querySelector('.actions button').textContent === 'Resume'",
    )
    .await;
    assert_eq!(
        monitor_data(&api, &user, &id).await["recurrenceInSeconds"],
        0
    );
    assert_eq!(
        eval::<String>(&page, "document.querySelector('.badge').textContent").await,
        "Paused"
    );
    click_and_wait(
        &page,
        ".actions button",
        "document.querySelector('.actions button').textContent === 'Pause'",
    )
    .await;
    assert_eq!(
        monitor_data(&api, &user, &id).await["recurrenceInSeconds"],
        3600
    );

    // History: newest first, each check with a time; the change links to its difference.
    click_and_wait(&page, ".actions a", "!!document.querySelector('.history')").await;
    let entries: i64 = eval(&page, "document.querySelectorAll('.entry').length").await;
    assert!(entries >= 2, "{entries} entries");
    // The newest change (confirming and later checks may stand above it, unchanged, their
    // excerpts from the start of the value) shows the new price near the start of its excerpt.
    let first: String = eval(
        &page,
        "[...document.querySelectorAll('.entry')].find(e => [...e.querySelectorAll('.entry-link a')]
            .some(a => a.textContent === 'changes')).querySelector('.excerpt').textContent",
    )
    .await;
    assert!(first.contains("Tea 3.90"), "{first}");
    let links: i64 = eval(
        &page,
        "[...document.querySelectorAll('.entry-link a')].filter(a => a.textContent === 'changes').length",
    )
    .await;
    assert_eq!(links, 2, "the first value and the change");
    screenshot(&page, "history", 1440).await;
    screenshot(&page, "history", 375).await;
    width(&page, 1440).await;

    click_and_wait(&page, ".entry-link a", "!!document.querySelector('.diff')").await;
    let deleted: Vec<String> = eval(
        &page,
        "[...document.querySelectorAll('.diff del')].map(e => e.textContent)",
    )
    .await;
    let inserted: Vec<String> = eval(
        &page,
        "[...document.querySelectorAll('.diff ins')].map(e => e.textContent)",
    )
    .await;
    assert_eq!(deleted, ["3.50"]);
    assert_eq!(inserted, ["3.90"]);
    assert!(
        eval::<bool>(&page, "!!document.querySelector('#change-1 del')").await,
        "each change is an anchor"
    );
    let diff_text: String = eval(&page, "document.querySelector('.diff').textContent").await;
    assert!(diff_text.contains("<b>html</b>"), "{diff_text}");
    let folded: String = eval(
        &page,
        "document.querySelector('.diff details summary')?.textContent ?? ''",
    )
    .await;
    assert!(folded.ends_with("unchanged lines"), "{diff_text}");
    screenshot(&page, "diff", 1440).await;
    screenshot(&page, "diff", 375).await;
    dark(&page, true).await;
    screenshot(&page, "diff-dark", 1440).await;
    dark(&page, false).await;
    width(&page, 1440).await;

    // Side by side: the old value with its deletion beside the new with its insertion,
    // stacked on a narrow screen.
    click_and_wait(
        &page,
        ".views a:not([aria-current])",
        "!!document.querySelector('.split')",
    )
    .await;
    let sides: Vec<Vec<String>> = eval(
        &page,
        "[...document.querySelectorAll('.side')].map(s => [...s.querySelectorAll('del, ins')].map(e => e.localName + ' ' + e.textContent))",
    )
    .await;
    assert_eq!(sides, [["del 3.50"], ["ins 3.90"]]);
    let beside = "(() => { const [a, b] = [...document.querySelectorAll('.side')].map(s => s.getBoundingClientRect()); return b.left >= a.right; })()";
    assert!(eval::<bool>(&page, beside).await, "side by side at 1440 px");
    screenshot(&page, "diff-split", 1440).await;
    width(&page, 375).await;
    let stacked = "(() => { const [a, b] = [...document.querySelectorAll('.side')].map(s => s.getBoundingClientRect()); return b.top >= a.bottom; })()";
    assert!(eval::<bool>(&page, stacked).await, "stacked at 375 px");
    screenshot(&page, "diff-split", 375).await;
    width(&page, 1440).await;

    // Without from and to: the latest change, the same difference.
    page.goto(api.url(&format!("/monitors/{id}/diff")))
        .await
        .unwrap();
    until(&page, "!!document.querySelector('.diff')").await;
    let inserted: Vec<String> = eval(
        &page,
        "[...document.querySelectorAll('.diff ins')].map(e => e.textContent)",
    )
    .await;
    assert_eq!(inserted, ["3.90"]);

    // A bad entry name: a 400 page saying which, not a 500.
    let cookie = session_cookie(&api, &user).await;
    for (query, field) in [
        ("from=junk", "from"),
        ("to=1-1", "to"),
        ("from=1&from=2", "from"),
        ("view=sideways", "view"),
    ] {
        let (status, html) =
            page_text(&api, &cookie, &format!("/monitors/{id}/diff?{query}")).await;
        assert_eq!(status, 400, "{query}: {html}");
        assert!(html.contains(&format!("“{field}”")), "{query}: {html}");
    }

    // Another user: the same 404 page as an unknown id, for each address.
    let theirs = session_cookie(&api, &other).await;
    let unknown = "019ab0c2-5c4e-7d2a-9f1e-3b8e2c1d0a11";
    for suffix in ["", "/history", "/diff"] {
        let a = page_text(&api, &theirs, &format!("/monitors/{id}{suffix}")).await;
        let b = page_text(&api, &theirs, &format!("/monitors/{unknown}{suffix}")).await;
        assert_eq!(a.0, 404, "{suffix}");
        assert_eq!(a, b, "{suffix}");
        assert!(!a.1.contains("Tea"), "{suffix}");
    }
    // A pause without the session's CSRF token is refused, nothing changed.
    let response = client()
        .post(api.url(&format!("/monitors/{id}/pause")))
        .header("cookie", &cookie)
        .form(&[("csrf", "f".repeat(64))])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);
    assert_eq!(
        monitor_data(&api, &user, &id).await["recurrenceInSeconds"],
        3600
    );
    // Nor can another user pause it.
    let (_, html) = page_text(&api, &theirs, "/").await;
    let response = client()
        .post(api.url(&format!("/monitors/{id}/pause")))
        .header("cookie", &theirs)
        .form(&[("csrf", csrf_of(&html))])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
    assert_eq!(
        monitor_data(&api, &user, &id).await["recurrenceInSeconds"],
        3600
    );

    assert!(
        tokio::time::timeout(Duration::from_millis(200), dialogs.next())
            .await
            .is_err(),
        "a dialog opened"
    );
    driver.close().await;
}

in_browser!(
    deleting_a_monitor_states_what_goes_with_it_then_deletes_in_a_real_browser,
    multi_thread
);
async fn deleting_a_monitor_states_what_goes_with_it_then_deletes_in_a_real_browser() {
    let Some(_guard) = wachet::testing::browser_test().await else {
        return;
    };
    let site = FixtureServer::builder()
        .page("/tea", price_page("3.50"))
        .start()
        .await
        .unwrap();
    let api = Api::start_checking().await;
    let user = api.user("delete@example.com").await;
    let folder = api.folder(&user, "Shops", None).await;
    let created = api
        .task(
            &user,
            json!({"name": "Tea", "url": site.url("/tea"), "recurrenceInSeconds": 1,
            "folderId": folder, "alerts": [{"type": "NotEq"}]}),
        )
        .await;
    let id = created["id"].as_str().unwrap().to_string();
    until_value(&api, &user, &id, "3.50").await;
    site.set("/tea", wachet::testing::Reply::html(price_page("3.90")));
    until_value(&api, &user, &id, "3.90").await;
    // The change raises once the scheduler's next check confirms it.
    let notes_path = format!("/thirdparty/v1/notification/list?taskId={id}&count=500");
    let mut notifications = 0;
    for _ in 0..150 {
        notifications = api.get(&user, &notes_path).await.ok()["data"]
            .as_array()
            .unwrap()
            .len();
        if notifications > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(notifications > 0, "the change raised a notification");
    // Stop the checks so the counts hold still, then count through the API.
    let mut paused = monitor_data(&api, &user, &id).await;
    paused["recurrenceInSeconds"] = json!(0);
    paused["data"] = serde_json::Value::Null;
    api.put(&user, "/thirdparty/v1/task", paused).await.ok();
    let entries = api
        .get(&user, &format!("/thirdparty/v1/data/list/{id}?count=500"))
        .await
        .ok()["data"]
        .as_array()
        .unwrap()
        .len();
    assert!(entries >= 2, "{entries}");

    let driver = Driver::launch().await;
    let page = driver.browser.new_page(api.url("/signin")).await.unwrap();
    sign_in_through_the_form(&page, &user).await;
    page.goto(api.url(&format!("/monitors/{id}")))
        .await
        .unwrap();
    until(&page, "!!document.querySelector('.actions')").await;
    let crumbs: Vec<String> = eval(
        &page,
        "[...document.querySelectorAll('.breadcrumbs a')].map(a => a.textContent)",
    )
    .await;
    assert_eq!(crumbs, ["All monitors", "Shops", "Tea"]);
    click_and_wait(
        &page,
        ".actions a.danger-quiet",
        "!!document.querySelector('.history-count')",
    )
    .await;
    let stated: String = eval(&page, "document.querySelector('.message p').textContent").await;
    let expected = format!(
        "This deletes the monitor with {entries} history entries and {notifications} {}. It cannot be undone.",
        if notifications == 1 {
            "notification"
        } else {
            "notifications"
        }
    );
    assert_eq!(stated, expected);
    screenshot(&page, "delete", 1440).await;
    screenshot(&page, "delete", 375).await;
    width(&page, 1440).await;
    // Nothing goes until the button is pressed.
    assert_eq!(monitor_count(&api, &user).await, 1);
    click_and_wait(
        &page,
        ".message button.danger",
        &format!("location.pathname === '/folders/{folder}'"),
    )
    .await;
    assert_eq!(monitor_count(&api, &user).await, 0);
    assert_eq!(
        api.get(&user, &format!("/thirdparty/v1/task/{id}"))
            .await
            .status,
        404
    );
    driver.close().await;
}

both!(history_pages_by_50_with_the_apis_tokens_and_links_each_change);
async fn history_pages_by_50_with_the_apis_tokens_and_links_each_change() {
    use wachet::model::ClientData;
    use wachet_server::store::Series;
    let api = Api::start().await;
    let user = api.user("pages@example.com").await;
    let task = api
        .task(&user, crate::monitor("tea", "https://example.com/"))
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let base = chrono::Utc::now() - chrono::Duration::days(1);
    // 60 checks: the value changes every tenth, the 55th fails.
    for i in 0..60 {
        let at = base + chrono::Duration::seconds(i);
        let data = if i == 55 {
            ClientData::failure(at, "HTTP 503 <b>down</b>".into())
        } else {
            ClientData::value(at, format!("price {}", i / 10))
        };
        api.store
            .append_entry(&Series::Task(task.clone()), &data)
            .await
            .unwrap();
    }
    let cookie = session_cookie(&api, &user).await;
    let (status, first) = page_text(&api, &cookie, &format!("/monitors/{task}/history")).await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(occurrences(&first, "class=\"entry\""), 50);
    // Newest first: checks 59 down to 10; changes at 50, 40, 30, 20 and 10.
    assert_eq!(occurrences(&first, ">changes</a>"), 5);
    assert!(
        first.contains("HTTP 503 &lt;b&gt;down&lt;/b&gt;"),
        "{first}"
    );
    let start = first
        .find("continuationToken=")
        .expect("a link to older checks")
        + 18;
    let token = &first[start..start + first[start..].find('"').unwrap()];
    let (status, second) = page_text(
        &api,
        &cookie,
        &format!("/monitors/{task}/history?continuationToken={token}"),
    )
    .await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(occurrences(&second, "class=\"entry\""), 10);
    // Check 0, the first value, is a change from nothing.
    assert_eq!(occurrences(&second, ">changes</a>"), 1);
    assert!(!second.contains("continuationToken="), "the last page");
    // The API's token of the same list opens the same page.
    let from_api = api
        .get(&user, &format!("/thirdparty/v1/data/list/{task}?count=50"))
        .await
        .ok()["continuationToken"]
        .as_str()
        .unwrap()
        .to_string();
    let (status, same) = page_text(
        &api,
        &cookie,
        &format!(
            "/monitors/{task}/history?continuationToken={}",
            from_api
                .replace('+', "%2B")
                .replace('/', "%2F")
                .replace('=', "%3D")
        ),
    )
    .await;
    assert_eq!(status, 200, "{same}");
    assert_eq!(occurrences(&same, "class=\"entry\""), 10);
    // A damaged token: a 400 page, not a 500.
    let (status, bad) = page_text(
        &api,
        &cookie,
        &format!("/monitors/{task}/history?continuationToken=junk"),
    )
    .await;
    assert_eq!(status, 400, "{bad}");
    assert!(bad.contains("continuation token"), "{bad}");
    // The failed check has no value to compare.
    let failed_at = (base + chrono::Duration::seconds(55)).timestamp_millis();
    let start = first
        .find(&format!("id=\"check-{failed_at}-"))
        .expect("each check is an anchor")
        + 10;
    let key = &first[start..start + first[start..].find('"').unwrap()];
    let failed = page_text(&api, &cookie, &format!("/monitors/{task}/diff?to={key}")).await;
    assert!(failed.1.contains("names a failed check"), "{}", failed.1);
    assert_eq!(failed.0, 400, "{}", failed.1);
}

in_browser!(
    axe_core_finds_an_unlabelled_control_and_faint_text,
    multi_thread
);
/// The accessibility check every screenshot runs can fail: a control without a label and
/// text too faint to read, put into a real page, are found.
async fn axe_core_finds_an_unlabelled_control_and_faint_text() {
    let Some(_guard) = wachet::testing::browser_test().await else {
        return;
    };
    let api = Api::start().await;
    let driver = Driver::launch().await;
    let page = driver.browser.new_page(api.url("/signin")).await.unwrap();
    until(&page, "!!document.querySelector('#email')").await;
    assert_eq!(axe_violations(&page).await, Vec::<String>::new());
    page.evaluate(
        "(() => { const main = document.querySelector('main');
            main.insertAdjacentHTML('beforeend',
                '<input type=text id=unlabelled><p id=faint>hard to read</p>');
            const faint = document.querySelector('#faint');
            faint.style.background = '#ffffff';
            faint.style.color = '#d0d0d0';
        })()",
    )
    .await
    .unwrap();
    let found = axe_violations(&page).await;
    assert!(found.iter().any(|v| v.starts_with("label ")), "{found:#?}");
    assert!(
        found.iter().any(|v| v.starts_with("color-contrast ")),
        "{found:#?}"
    );
    driver.close().await;
}
