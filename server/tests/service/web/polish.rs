//! What a person still missed in the web interface, in real Chromium over the real service: a
//! history that grows as checks finish, the keyboard alone (from sign-in to the second change
//! of a diff, the focus always outlined), a top bar of one row at 375 px, every page type under
//! 100 KB with its assets, everything working with scripts off, and the monitor form's way to
//! the point-and-click page.

use crate::support::web::{
    Driver, PASSWORD, client, dark, eval, monitor_data, screenshot, session_cookie,
    sign_in_through_the_form, until, until_value, width,
};
use crate::{Api, User, id};
use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::emulation::SetScriptExecutionDisabledParams;
use chromiumoxide::cdp::browser_protocol::input::{
    DispatchKeyEventParams, DispatchKeyEventType, InsertTextParams,
};
use serde_json::json;
use wachet::testing::{FixtureServer, Reply};

/// A page whose two prices change apart, with unchanged lines between them, so a diff of two
/// of its values has two changes.
fn two_prices(tea: &str, coffee: &str) -> String {
    let lines: String = (1..=12)
        .map(|n| format!("<p>Unchanged line {n}</p>"))
        .collect();
    format!(
        "<html><body><h1>Prices</h1><p>Tea {tea}</p>{lines}<p>Coffee {coffee}</p></body></html>"
    )
}

in_browser!(
    an_open_history_shows_new_checks_and_the_change_without_a_reload_in_a_real_browser,
    multi_thread
);
async fn an_open_history_shows_new_checks_and_the_change_without_a_reload_in_a_real_browser() {
    let Some(_guard) = wachet::testing::browser_test().await else {
        return;
    };
    let site = FixtureServer::builder()
        .page("/tea", two_prices("3.50", "2.00"))
        .start()
        .await
        .unwrap();
    let api = Api::start_checking().await;
    let user = api.user("history-live@example.com").await;
    let tea = id(&api
        .task(
            &user,
            json!({"name": "Tea", "url": site.url("/tea"), "recurrenceInSeconds": 1,
                "xPath": "//body", "alerts": [{"type": "NotEq"}]}),
        )
        .await);
    until_value(&api, &user, &tea, "3.50").await;

    let driver = Driver::launch().await;
    let page = driver.browser.new_page(api.url("/signin")).await.unwrap();
    sign_in_through_the_form(&page, &user).await;
    page.goto(api.url(&format!("/monitors/{tea}/history")))
        .await
        .unwrap();
    until(
        &page,
        "document.documentElement.dataset.liveStream === 'ready'",
    )
    .await;
    page.evaluate("window.notReloaded = true").await.unwrap();
    let shown: i64 = eval(&page, "document.querySelectorAll('.entry').length").await;

    // The page changes; the check that sees it lands at the top of the open history.
    site.set("/tea", Reply::html(two_prices("3.90", "2.40")));
    let arrived_change = "[...document.querySelectorAll('.entry.arrived')].find(e => \
        e.querySelector('.excerpt')?.textContent.includes('3.90') \
        && e.querySelector('.entry-link a')?.textContent === 'changes')";
    until(&page, &format!("!!({arrived_change})")).await;
    assert!(
        eval::<bool>(&page, "window.notReloaded === true").await,
        "the page was not reloaded"
    );
    assert!(eval::<i64>(&page, "document.querySelectorAll('.entry').length").await > shown);
    // Newest first, each check once.
    let keys: Vec<String> = eval(
        &page,
        "[...document.querySelectorAll('.entry')].map(e => e.id)",
    )
    .await;
    let mut sorted = keys.clone();
    sorted.sort_by_key(|k| {
        std::cmp::Reverse(
            k.trim_start_matches("check-")
                .split('-')
                .next()
                .unwrap()
                .parse::<u64>()
                .unwrap(),
        )
    });
    assert_eq!(keys, sorted, "newest first");
    let unique: std::collections::HashSet<&String> = keys.iter().collect();
    assert_eq!(unique.len(), keys.len(), "no check twice");
    // The top bar is one row at 375 px (brand, links and sign-out side by side).
    width(&page, 375).await;
    let bar: f64 = eval(
        &page,
        "document.querySelector('.topbar').getBoundingClientRect().height",
    )
    .await;
    let brand: f64 = eval(
        &page,
        "document.querySelector('.brand').getBoundingClientRect().height",
    )
    .await;
    assert!(
        bar < brand + 40.0,
        "the top bar wraps at 375 px: {bar} px high"
    );
    let hidden_words: bool = eval(
        &page,
        "[...document.querySelectorAll('.topbar .top-label')].every(l => l.getBoundingClientRect().width <= 1)",
    )
    .await;
    assert!(hidden_words, "icons only at 375 px");
    let named: Vec<String> = eval(
        &page,
        "[...document.querySelectorAll('.topbar .top-link')].map(l => l.textContent.trim())",
    )
    .await;
    assert_eq!(named, ["Notifications", "Settings", "Sign out"]);
    screenshot(&page, "history-live", 1440).await;
    screenshot(&page, "history-live", 375).await;
    dark(&page, true).await;
    screenshot(&page, "history-live-dark", 375).await;
    dark(&page, false).await;
    width(&page, 1440).await;

    // Its link leads to the difference, old and new values marked.
    let href: String = eval(
        &page,
        &format!("({arrived_change}).querySelector('.entry-link a').getAttribute('href')"),
    )
    .await;
    page.goto(api.url(&href)).await.unwrap();
    until(&page, "!!document.querySelector('.diff')").await;
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
    assert_eq!(deleted, ["3.50", "2.00"]);
    assert_eq!(inserted, ["3.90", "2.40"]);

    // The fragment is the owner's only: another user gets the 404 page.
    let other = api.user("other-live@example.com").await;
    let cookie = session_cookie(&api, &other).await;
    let response = client()
        .get(api.url(&format!("/monitors/{tea}/history/latest")))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
    driver.close().await;
}

// --- the keyboard alone

/// Presses `key` (a DOM key name) as a keyboard would.
async fn press(page: &Page, key: &str) {
    let (code, vk, text) = match key {
        "Tab" => ("Tab".to_string(), 9, None),
        "Enter" => ("Enter".to_string(), 13, Some("\r".to_string())),
        letter => (
            format!("Key{}", letter.to_uppercase()),
            i64::from(letter.to_uppercase().as_bytes()[0]),
            Some(letter.to_string()),
        ),
    };
    let down = DispatchKeyEventParams::builder()
        .r#type(if text.is_some() {
            DispatchKeyEventType::KeyDown
        } else {
            DispatchKeyEventType::RawKeyDown
        })
        .key(key)
        .code(code.clone())
        .windows_virtual_key_code(vk)
        .native_virtual_key_code(vk);
    let down = match &text {
        Some(text) => down.text(text.clone()).unmodified_text(text.clone()),
        None => down,
    };
    page.execute(down.build().unwrap()).await.unwrap();
    let up = DispatchKeyEventParams::builder()
        .r#type(DispatchKeyEventType::KeyUp)
        .key(key)
        .code(code)
        .windows_virtual_key_code(vk)
        .native_virtual_key_code(vk)
        .build()
        .unwrap();
    page.execute(up).await.unwrap();
}

/// Types `text` into the focused field, as a keyboard's input would.
async fn type_text(page: &Page, text: &str) {
    page.execute(InsertTextParams::new(text)).await.unwrap();
}

/// Whether the focused element shows it: an outline, or a box-shadow ring.
const FOCUS_SHOWN: &str = "(() => { const e = document.activeElement; \
    if (!e || e === document.body) return 'nothing focused'; \
    const s = getComputedStyle(e); \
    return (s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) >= 2) || s.boxShadow !== 'none' \
        ? 'ok' : 'no visible focus on ' + e.outerHTML.slice(0, 120); })()";

/// Presses Tab until the focused element matches `wanted` (a JS expression over `e`), each
/// focused element on the way visibly outlined; 80 presses at most.
async fn tab_to(page: &Page, wanted: &str) {
    let test =
        format!("(() => {{ const e = document.activeElement; return !!e && ({wanted}); }})()");
    for _ in 0..80 {
        press(page, "Tab").await;
        let shown: String = eval(page, FOCUS_SHOWN).await;
        assert_eq!(shown, "ok");
        if eval::<bool>(page, &test).await {
            return;
        }
    }
    panic!("Tab never reached {wanted}");
}

/// Presses Enter and waits for a new page where `marker` holds.
async fn enter_and_wait(page: &Page, marker: &str) {
    page.evaluate("window.beforeEnter = true").await.unwrap();
    press(page, "Enter").await;
    until(page, &format!("!window.beforeEnter && ({marker})")).await;
}

in_browser!(
    sign_in_to_the_second_change_with_the_keyboard_alone_the_focus_always_outlined,
    multi_thread
);
async fn sign_in_to_the_second_change_with_the_keyboard_alone_the_focus_always_outlined() {
    let Some(_guard) = wachet::testing::browser_test().await else {
        return;
    };
    let site = FixtureServer::builder()
        .page("/tea", two_prices("3.50", "2.00"))
        .page("/new", "<p>new</p>")
        .start()
        .await
        .unwrap();
    let api = Api::start_checking().await;
    let user = api.user("keys@example.com").await;
    let tea = id(&api
        .task(
            &user,
            json!({"name": "Tea", "url": site.url("/tea"), "recurrenceInSeconds": 1,
                "xPath": "//body", "alerts": [{"type": "NotEq"}]}),
        )
        .await);
    until_value(&api, &user, &tea, "3.50").await;
    site.set("/tea", Reply::html(two_prices("3.90", "2.40")));
    until_value(&api, &user, &tea, "3.90").await;

    let driver = Driver::launch().await;
    let page = driver.browser.new_page(api.url("/signin")).await.unwrap();
    until(&page, "!!document.querySelector('#email')").await;
    tab_to(&page, "e.id === 'email'").await;
    type_text(&page, &user.account.email).await;
    tab_to(&page, "e.id === 'password'").await;
    type_text(&page, PASSWORD).await;
    enter_and_wait(&page, "!!document.querySelector('#quick-url')").await;

    // Quick-add with the keyboard.
    tab_to(&page, "e.id === 'quick-url'").await;
    type_text(&page, &site.url("/new")).await;
    enter_and_wait(&page, "!!document.querySelector('#quick-url')").await;
    let searched = api.get(&user, "/thirdparty/v1/task/search").await;
    assert_eq!(searched.ok().as_array().unwrap().len(), 2, "quick-added");

    // The monitor, its history, the newest change.
    tab_to(
        &page,
        "e.matches('a.monitor-name') && e.textContent === 'Tea'",
    )
    .await;
    enter_and_wait(&page, "!!document.querySelector('pre.value')").await;
    tab_to(&page, "e.textContent === 'History'").await;
    enter_and_wait(&page, "!!document.querySelector('.history')").await;
    tab_to(&page, "e.matches('.entry-link a')").await;
    enter_and_wait(&page, "!!document.querySelector('.diff')").await;
    let legend: String = eval(&page, "document.querySelector('.keys')?.textContent ?? ''").await;
    assert!(legend.contains("next change"), "{legend}");

    // n twice: the second change, focused and outlined; p: back to the first.
    press(&page, "n").await;
    press(&page, "n").await;
    until(&page, "document.activeElement.id === 'change-2'").await;
    assert_eq!(eval::<String>(&page, FOCUS_SHOWN).await, "ok");
    assert_eq!(
        eval::<String>(
            &page,
            "document.activeElement.querySelector('ins').textContent"
        )
        .await,
        "2.40"
    );
    assert_eq!(eval::<String>(&page, "location.hash").await, "#change-2");
    let said: String = eval(
        &page,
        "document.querySelector('.keys [aria-live]').textContent",
    )
    .await;
    assert_eq!(said, "Change 2 of 2.");
    screenshot(&page, "diff-keys", 1440).await;
    screenshot(&page, "diff-keys", 375).await;
    width(&page, 1440).await;
    press(&page, "k").await;
    until(&page, "document.activeElement.id === 'change-1'").await;
    // j in a field types; it does not move.
    page.evaluate(
        "(() => { const i = document.createElement('input'); i.id = 'typing'; \
         i.setAttribute('aria-label', 'typing'); document.querySelector('main').append(i); i.focus(); })()",
    )
    .await
    .unwrap();
    press(&page, "j").await;
    assert_eq!(
        eval::<String>(&page, "document.querySelector('#typing').value").await,
        "j"
    );
    assert_eq!(eval::<String>(&page, "location.hash").await, "#change-1");
    driver.close().await;
}

// --- weight

/// The bytes of the page at `path` and of every asset it links.
async fn weight(api: &Api, cookie: Option<&str>, path: &str) -> usize {
    let get = |url: String| {
        let request = client().get(url);
        match cookie {
            Some(cookie) => request.header("cookie", cookie),
            None => request,
        }
    };
    // The picker answers its address with the page it kept (a redirect, followed here).
    let mut response = get(api.url(path)).send().await.unwrap();
    for _ in 0..3 {
        let Some(location) = response.headers().get("location") else {
            break;
        };
        let location = location.to_str().unwrap().to_string();
        response = get(api.url(&location)).send().await.unwrap();
    }
    assert_eq!(response.status(), 200, "{path}");
    let html = response.text().await.unwrap();
    let mut total = html.len();
    let mut assets: Vec<&str> = html
        .split("\"/assets/")
        .skip(1)
        .map(|rest| &rest[..rest.find('"').unwrap()])
        .collect();
    assets.sort_unstable();
    assets.dedup();
    assert!(
        assets.iter().any(|a| a.ends_with(".css")),
        "{path} links its style sheet"
    );
    for asset in assets {
        let body = get(api.url(&format!("/assets/{asset}")))
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        assert!(!body.is_empty(), "{asset}");
        total += body.len();
    }
    total
}

both!(
    every_page_type_weighs_under_100_kb_with_its_assets,
    multi_thread
);
async fn every_page_type_weighs_under_100_kb_with_its_assets() {
    let site = FixtureServer::builder()
        .page("/tea", two_prices("3.50", "2.00"))
        .start()
        .await
        .unwrap();
    let api = Api::start_checking().await;
    let user = api.user("light@example.com").await;
    let tea = id(&api
        .task(
            &user,
            json!({"name": "Tea", "url": site.url("/tea"), "recurrenceInSeconds": 1,
                "alerts": [{"type": "NotEq"}]}),
        )
        .await);
    until_value(&api, &user, &tea, "3.50").await;
    site.set("/tea", Reply::html(two_prices("3.90", "2.40")));
    until_value(&api, &user, &tea, "3.90").await;
    let cookie = session_cookie(&api, &user).await;
    let pick = format!("/monitors/pick?url={}", site.url("/tea"));
    let pages = [
        ("sign-in", None, "/signin".to_string()),
        ("list", Some(&cookie), "/".to_string()),
        ("monitor", Some(&cookie), format!("/monitors/{tea}")),
        ("history", Some(&cookie), format!("/monitors/{tea}/history")),
        ("diff", Some(&cookie), format!("/monitors/{tea}/diff")),
        ("form", Some(&cookie), "/monitors/new".to_string()),
        ("edit form", Some(&cookie), format!("/monitors/{tea}/edit")),
        ("picker", Some(&cookie), pick),
        ("notifications", Some(&cookie), "/notifications".to_string()),
        ("settings", Some(&cookie), "/settings".to_string()),
    ];
    for (name, cookie, path) in pages {
        let bytes = weight(&api, cookie.map(String::as_str), &path).await;
        eprintln!("{name}: {bytes} bytes with its assets");
        assert!(bytes < 100_000, "{name} weighs {bytes} bytes");
    }
}

// --- scripts off

/// `js` evaluated in the page, retried while a navigation replaces the document (an evaluation
/// caught in between may never answer); 30 s at most.
async fn ev<T: serde::de::DeserializeOwned>(page: &Page, js: &str) -> T {
    for _ in 0..60 {
        if let Ok(Ok(result)) =
            tokio::time::timeout(std::time::Duration::from_millis(500), page.evaluate(js)).await
            && let Ok(value) = result.into_value::<T>()
        {
            return value;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("no answer to {js}");
}

/// Waits (20 s at most) until `js` is true in the page.
async fn wait(page: &Page, js: &str) {
    for _ in 0..100 {
        if ev::<bool>(page, &format!("!!({js})")).await {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    let html: String = ev(page, "document.documentElement.outerHTML").await;
    panic!("never true: {js}\n{html}");
}

/// Submits the form of the button `selector` with that button (as a click on it would, its
/// name and value included), or follows the link `selector`, then waits for a new page where
/// `marker` holds. Through DevTools: a mouse click's dispatch can wait forever on a page whose
/// scripts are off.
async fn click_to(page: &Page, selector: &str, marker: &str) {
    let clicked: bool = ev(
        page,
        &format!(
            "(() => {{ window.beforeClick = true; const b = document.querySelector({selector:?}); \
             if (!b) return false; \
             if (b.form) b.form.requestSubmit(b); else b.click(); return true; }})()"
        ),
    )
    .await;
    assert!(clicked, "no {selector}");
    wait(page, &format!("!window.beforeClick && ({marker})")).await;
}

/// Ticks the checkbox `selector`.
async fn tick(page: &Page, selector: &str) {
    let ticked: bool = ev(
        page,
        &format!("(() => {{ const b = document.querySelector({selector:?}); b.click(); return b.checked; }})()"),
    )
    .await;
    assert!(ticked, "{selector} ticked");
}

/// Focuses the field `selector` with a click and types `text` into it.
async fn fill(page: &Page, selector: &str, text: &str) {
    ev::<bool>(
        page,
        &format!(
            "(() => {{ const f = document.querySelector({selector:?}); f.focus(); f.select?.(); return true; }})()"
        ),
    )
    .await;
    type_text(page, text).await;
}

async fn text_of(page: &Page, selector: &str) -> String {
    ev(
        page,
        &format!("document.querySelector({selector:?})?.textContent ?? ''"),
    )
    .await
}

async fn monitors_of(api: &Api, user: &User) -> Vec<serde_json::Value> {
    api.get(user, "/thirdparty/v1/task/search")
        .await
        .ok()
        .as_array()
        .unwrap()
        .clone()
}

in_browser!(
    with_scripts_off_every_form_works_and_shows_its_result_in_a_real_browser,
    multi_thread
);
async fn with_scripts_off_every_form_works_and_shows_its_result_in_a_real_browser() {
    let Some(_guard) = wachet::testing::browser_test().await else {
        return;
    };
    let site = FixtureServer::builder()
        .page("/tea", two_prices("3.50", "2.00"))
        .page(
            "/coffee",
            "<html><body><p class=\"price\">Coffee 2.00</p></body></html>",
        )
        .start()
        .await
        .unwrap();
    let api = Api::start_checking().await;
    let user = api.user("noscript@example.com").await;
    let driver = Driver::launch().await;
    let page = driver.browser.new_page("about:blank").await.unwrap();
    page.execute(SetScriptExecutionDisabledParams::new(true))
        .await
        .unwrap();
    page.goto(api.url("/signin")).await.unwrap();
    wait(&page, "document.querySelector('#email')").await;
    fill(&page, "#email", &user.account.email).await;
    fill(&page, "#password", PASSWORD).await;
    click_to(
        &page,
        "button[type=submit]",
        "document.querySelector('#quick-url')",
    )
    .await;
    // The scripts did not run: the live stream never opened, the bulk bar's "select all" is
    // still hidden.
    assert!(
        ev::<bool>(
            &page,
            "document.documentElement.dataset.liveStream === undefined"
        )
        .await
    );

    // Quick-add.
    fill(&page, "#quick-url", &site.url("/tea")).await;
    click_to(
        &page,
        ".quick-add button[type=submit]",
        "document.querySelectorAll('li.monitor').length === 1",
    )
    .await;
    assert_eq!(monitors_of(&api, &user).await.len(), 1);

    // The full form, with a preview of the value, then saved.
    page.goto(api.url("/monitors/new")).await.unwrap();
    wait(&page, "!!document.querySelector('#monitor-form')").await;
    fill(&page, "input[name=url]", &site.url("/coffee")).await;
    fill(&page, "input[name=name]", "Coffee").await;
    fill(&page, "input[name=xPath]", "//p[@class='price']").await;
    click_to(
        &page,
        "#preview-button",
        "!!document.querySelector('.preview-value')",
    )
    .await;
    assert_eq!(text_of(&page, ".preview-value").await.trim(), "Coffee 2.00");
    click_to(
        &page,
        "#monitor-form button.button.primary",
        "!!document.querySelector('pre.value') || location.pathname.startsWith('/monitors/') && !location.pathname.endsWith('/new')",
    )
    .await;
    let monitors = monitors_of(&api, &user).await;
    let coffee = monitors
        .iter()
        .find(|m| m["name"] == "Coffee")
        .expect("the form saved the monitor");
    assert_eq!(coffee["xPath"], "//p[@class='price']");
    let coffee = id(coffee);
    let tea = id(monitors.iter().find(|m| m["name"] != "Coffee").unwrap());

    // Pause from the monitor's page.
    page.goto(api.url(&format!("/monitors/{coffee}")))
        .await
        .unwrap();
    wait(&page, "!!document.querySelector('.actions button')").await;
    click_to(
        &page,
        ".actions button",
        "document.querySelector('.actions button')?.textContent === 'Resume'",
    )
    .await;
    assert_eq!(
        monitor_data(&api, &user, &coffee).await["recurrenceInSeconds"],
        0
    );
    click_to(
        &page,
        ".actions button",
        "document.querySelector('.actions button')?.textContent === 'Pause'",
    )
    .await;

    // Two ticked, paused in bulk.
    page.goto(api.url("/")).await.unwrap();
    wait(
        &page,
        "document.querySelectorAll('li.monitor').length === 2",
    )
    .await;
    for id in [&tea, &coffee] {
        tick(&page, &format!("#select-{id}")).await;
    }
    click_to(
        &page,
        "button[name=action][value=pause]",
        "location.search.includes('done=')",
    )
    .await;
    for id in [&tea, &coffee] {
        assert_eq!(
            monitor_data(&api, &user, id).await["recurrenceInSeconds"],
            0,
            "{id} paused"
        );
    }
    let done: String = ev(&page, "document.querySelector('main').textContent").await;
    assert!(done.contains("2 monitors paused."), "{done}");

    // A folder, created and renamed; a monitor moved into it.
    page.goto(api.url("/folders/new")).await.unwrap();
    wait(&page, "!!document.querySelector('#folder-name')").await;
    fill(&page, "#folder-name", "Drinks").await;
    click_to(
        &page,
        "main button[type=submit]",
        "!!document.querySelector('a.folder')",
    )
    .await;
    let href: String = ev(
        &page,
        "[...document.querySelectorAll('a.folder')].find(a => a.textContent.includes('Drinks'))?.getAttribute('href') ?? ''",
    )
    .await;
    let drinks = href
        .strip_prefix("/folders/")
        .expect("the folder was created and listed")
        .to_string();
    page.goto(api.url(&format!("/folders/{drinks}/rename")))
        .await
        .unwrap();
    wait(&page, "!!document.querySelector('#folder-name')").await;
    fill(&page, "#folder-name", "Hot drinks").await;
    click_to(
        &page,
        "main button[type=submit]",
        "document.querySelector('h1')?.textContent.includes('Hot drinks')",
    )
    .await;
    page.goto(api.url("/")).await.unwrap();
    wait(
        &page,
        "document.querySelectorAll('li.monitor').length === 2",
    )
    .await;
    tick(&page, &format!("#select-{coffee}")).await;
    click_to(
        &page,
        "button[name=action][value=move]",
        "!!document.querySelector('#move-folder')",
    )
    .await;
    ev::<String>(
        &page,
        &format!("document.querySelector('#move-folder').value = {drinks:?}"),
    )
    .await;
    click_to(
        &page,
        "main button.primary[type=submit]",
        "location.search.includes('done=')",
    )
    .await;
    page.goto(api.url(&format!("/folders/{drinks}")))
        .await
        .unwrap();
    wait(&page, "!!document.querySelector('h1')").await;
    let inside: Vec<String> = ev(
        &page,
        "[...document.querySelectorAll('li.monitor a.monitor-name')].map(a => a.textContent)",
    )
    .await;
    assert_eq!(inside, ["Coffee"]);

    // History and a difference of the quick-added monitor, checked twice by now.
    api.put(
        &user,
        "/thirdparty/v1/task",
        json!({"id": tea, "url": site.url("/tea"), "recurrenceInSeconds": 1, "xPath": "//body"}),
    )
    .await
    .ok();
    until_value(&api, &user, &tea, "3.50").await;
    site.set("/tea", Reply::html(two_prices("3.90", "2.40")));
    until_value(&api, &user, &tea, "3.90").await;
    page.goto(api.url(&format!("/monitors/{tea}/history")))
        .await
        .unwrap();
    wait(&page, "!!document.querySelector('.entry-link a')").await;
    click_to(&page, ".entry-link a", "!!document.querySelector('.diff')").await;
    let inserted: Vec<String> = ev(
        &page,
        "[...document.querySelectorAll('.diff ins')].map(e => e.textContent)",
    )
    .await;
    assert_eq!(inserted, ["3.90", "2.40"]);
    assert!(
        ev::<bool>(&page, "!document.querySelector('.keys')").await,
        "the keys' legend comes with its script only"
    );

    // The password, changed.
    page.goto(api.url("/settings")).await.unwrap();
    wait(&page, "!!document.querySelector('#current-password')").await;
    fill(&page, "#current-password", PASSWORD).await;
    fill(&page, "#new-password", "a new pass phrase").await;
    click_to(
        &page,
        "#password button[type=submit]",
        "!!document.querySelector('#current-password')",
    )
    .await;
    let said: String = ev(&page, "document.querySelector('main').textContent").await;
    assert!(said.contains("Your password was changed."), "{said}");
    let old = crate::support::web::sign_in(&api, &user.account.email, PASSWORD).await;
    assert_ne!(old.status(), 303, "the old password no longer signs in");
    let new = crate::support::web::sign_in(&api, &user.account.email, "a new pass phrase").await;
    assert_eq!(new.status(), 303, "the new one does");
    driver.close().await;
}

// --- the form's way to the picker

in_browser!(
    the_monitor_form_leads_to_the_picker_with_the_url_typed_in_a_real_browser,
    multi_thread
);
async fn the_monitor_form_leads_to_the_picker_with_the_url_typed_in_a_real_browser() {
    let Some(_guard) = wachet::testing::browser_test().await else {
        return;
    };
    let site = FixtureServer::builder()
        .page(
            "/coffee",
            "<html><body><p class=\"price\">Coffee 2.00</p></body></html>",
        )
        .start()
        .await
        .unwrap();
    let api = Api::start_checking().await;
    let user = api.user("to-pick@example.com").await;
    let driver = Driver::launch().await;
    for scripts in [true, false] {
        let page = driver.browser.new_page("about:blank").await.unwrap();
        page.execute(SetScriptExecutionDisabledParams::new(!scripts))
            .await
            .unwrap();
        page.goto(api.url("/signin")).await.unwrap();
        if scripts {
            sign_in_through_the_form(&page, &user).await;
        }
        page.goto(api.url("/monitors/new")).await.unwrap();
        wait(&page, "!!document.querySelector('#monitor-form')").await;
        fill(&page, "input[name=url]", &site.url("/coffee")).await;
        fill(&page, "input[name=xPath]", "//p").await;
        if scripts {
            screenshot(&page, "form-pick-button", 1440).await;
            screenshot(&page, "form-pick-button", 375).await;
            width(&page, 1440).await;
        }
        click_to(
            &page,
            "button[name=pick]",
            "location.pathname === '/monitors/pick'",
        )
        .await;
        // The picker has the page typed, with the XPath tried on it.
        let query: String = ev(&page, "location.search").await;
        assert!(query.contains("token="), "{query}");
        assert!(query.contains("xPath=%2F%2Fp"), "{query}");
        assert!(!query.contains("csrf"), "no secret in the address: {query}");
        let url: String = ev(&page, "document.querySelector('main').textContent").await;
        assert!(url.contains(&site.url("/coffee")), "{url}");
        assert!(monitors_of(&api, &user).await.is_empty(), "nothing saved");
        page.close().await.unwrap();
    }
    driver.close().await;
}
