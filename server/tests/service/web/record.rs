//! The step recorder in real Chromium against a fixture site behind a sign-in: opened from the
//! monitor form, driven by clicks on its screenshot (at 1440 and at 375 px), its steps edited,
//! replayed and used in the form, whose saved monitor then signs in on its checks with the
//! secret typed while recording; the bounds per user, and another user's recording as
//! unknown as a made-up one.

use crate::Api;
use crate::support::web::{
    csrf_of, eval, get_page, page_text, post_form, screenshot, session_cookie, signed_in_browser,
    type_into, until, until_value, width,
};
use chromiumoxide::Page;
use chromiumoxide::layout::Point;
use wachet::testing::SignInSite;

/// Where `selector` is in `probe` (the fixture page opened as the recorder's browser shows it:
/// as wide as its screenshot), in the page's pixels.
async fn spot(probe: &Page, selector: &str) -> (f64, f64) {
    let js = format!(
        "(() => {{ const r = document.querySelector({selector:?}).getBoundingClientRect();
           return [r.left + Math.min(8, r.width / 2), r.top + window.scrollY + r.height / 2]; }})()"
    );
    let [x, y]: [f64; 2] = eval(probe, &js).await;
    (x, y)
}

/// Clicks the screenshot where the page's point (`x`, `y`) is shown, as a person would, then
/// waits for the recorder to answer with `then` true.
async fn click_shot(page: &Page, (x, y): (f64, f64), then: &str) {
    let js = format!(
        "(() => {{ const s = document.getElementById('record-shot');
           s.scrollIntoView({{block: 'nearest'}});
           const box = s.parentElement; box.scrollTop = Math.max(0, {y} * s.clientHeight / Number(s.dataset.height) - 40);
           const r = s.getBoundingClientRect();
           return [r.left + {x} * r.width / Number(s.dataset.width), r.top + {y} * r.height / Number(s.dataset.height)]; }})()"
    );
    let [px, py]: [f64; 2] = eval(page, &js).await;
    let point = Point { x: px, y: py };
    page.move_mouse(point).await.unwrap();
    page.click(point).await.unwrap();
    until(page, then).await;
}

/// Steps listed on the recorder now.
const ROWS: &str = "document.querySelectorAll('#record-steps li').length";

/// The recorder has shown its page.
const READY: &str = "(() => { const s = document.getElementById('record-shot'); \
                     return !!s && Number(s.dataset.width) > 0; })()";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steps_are_recorded_by_clicking_the_page_and_the_saved_monitor_signs_in_with_them() {
    let api = Api::start_checking().await;
    let user = api.user("rec@example.com").await;
    let site = SignInSite::start(1000).await.unwrap();
    let (driver, page, _dialogs) = signed_in_browser(&api, &user).await;

    // The form's "Record steps" opens the form's page on the server.
    page.goto(api.url("/monitors/new")).await.unwrap();
    until(&page, "!!document.getElementById('record-steps')").await;
    type_into(&page, "#f-url", &site.url("/")).await;
    type_into(&page, "#f-xPath", "//*[@id='price']").await;
    page.find_element("#record-steps")
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    until(&page, READY).await;
    let recorder: String = eval(&page, "location.pathname").await;
    assert!(recorder.starts_with("/monitors/record/"), "{recorder}");
    let shot_width: f64 = eval(
        &page,
        "Number(document.getElementById('record-shot').dataset.width)",
    )
    .await;

    // A probe shows the site as the recorder's browser does, to know where to click.
    let probe = driver.browser.new_page(site.url("/")).await.unwrap();
    #[allow(clippy::cast_possible_truncation)]
    width(&probe, shot_width as i64).await;

    // A link: clicked at once, its XPath proposed from its id as the picker proposes it.
    click_shot(
        &page,
        spot(&probe, "#signin").await,
        &format!("{ROWS} === 1"),
    )
    .await;
    let first: String = eval(
        &page,
        "document.querySelector('[name=\"rows[0].selector\"]').value",
    )
    .await;
    assert_eq!(first, "//*[@id=\"signin\"]");
    until(
        &page,
        "document.getElementById('record-where').textContent.includes('/login')",
    )
    .await;

    // A field asks for its text; a password field's step is secret.
    probe.goto(site.url("/login")).await.unwrap();
    click_shot(
        &page,
        spot(&probe, "#user").await,
        "!!document.getElementById('record-typed')",
    )
    .await;
    type_into(&page, "#record-typed", "tea").await;
    page.find_element("#record-type-it")
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    until(&page, &format!("{ROWS} === 2")).await;
    click_shot(
        &page,
        spot(&probe, "#password").await,
        "!!document.getElementById('record-typed') && document.getElementById('record-typed').type === 'password' \
         && document.querySelector('[name=secret]').checked",
    )
    .await;
    type_into(&page, "#record-typed", SignInSite::PASSWORD).await;
    page.find_element("#record-type-it")
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    until(&page, &format!("{ROWS} === 3")).await;
    let html = page.content().await.unwrap();
    assert!(
        !html.contains(SignInSite::PASSWORD),
        "the secret never comes back to the page"
    );
    assert!(html.contains("secret"), "the row says it is secret");
    click_shot(
        &page,
        spot(&probe, "#login").await,
        &format!("{ROWS} === 4"),
    )
    .await;
    assert_eq!(site.sign_ins(), 1, "the click on the button signed in");

    // The sign-in leads elsewhere: the recorder goes to an address.
    type_into(&page, "#record-address", &site.url("/")).await;
    page.find_element("#record-go")
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    until(&page, &format!("{ROWS} === 5")).await;

    // At 375 px: a list asks for its option, at the point shown on the narrow screen.
    width(&page, 375).await;
    probe.goto(site.url("/login")).await.unwrap();
    type_into(&probe, "#user", "tea").await;
    type_into(&probe, "#password", SignInSite::PASSWORD).await;
    probe
        .find_element("#login")
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    until(&probe, "location.pathname === '/account'").await;
    probe.goto(site.url("/")).await.unwrap();
    click_shot(
        &page,
        spot(&probe, "#region").await,
        "!!document.getElementById('record-chosen')",
    )
    .await;
    let offered: Vec<String> = eval(
        &page,
        "Array.from(document.querySelectorAll('#record-chosen option')).map(o => o.textContent)",
    )
    .await;
    assert_eq!(offered, ["Choose", "United States", "Europe"]);
    eval::<serde_json::Value>(
        &page,
        "document.getElementById('record-chosen').value = 'eu'",
    )
    .await;
    page.find_element("#record-choose")
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    until(&page, &format!("{ROWS} === 6")).await;
    screenshot(&page, "record-steps", 375).await;
    screenshot(&page, "record-steps", 1440).await;

    // Edited (the first step marked optional) and replayed from the start: every step works.
    let before = site.sign_ins();
    page.find_element("[name=\"rows[0].optional\"]")
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    page.find_element("#record-replay")
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    until(
        &page,
        "!!document.getElementById('record-notice') && document.getElementById('record-notice').textContent.includes('every step worked')",
    )
    .await;
    assert_eq!(
        site.sign_ins(),
        before + 1,
        "the replay signed in with the recorded secret"
    );
    let optional: bool = eval(
        &page,
        "document.querySelector('[name=\"rows[0].optional\"]').checked",
    )
    .await;
    assert!(optional);
    // Reordered and back.
    page.find_element("button[value='down:4']")
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    until(
        &page,
        "document.querySelector('[name=\"rows[4].action\"]').value === 'select'",
    )
    .await;
    page.find_element("button[value='up:5']")
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    until(
        &page,
        "document.querySelector('[name=\"rows[4].action\"]').value === 'goto'",
    )
    .await;

    // Another user: the same 404 as a made-up token, for the page, its screenshot and a post.
    let other = api.user("other@example.com").await;
    let cookie = session_cookie(&api, &other).await;
    let (unknown_status, unknown) = page_text(
        &api,
        &cookie,
        "/monitors/record/00000000000000000000000000000000",
    )
    .await;
    let (status, theirs) = page_text(&api, &cookie, &recorder).await;
    assert_eq!((status, unknown_status), (404, 404));
    assert_eq!(theirs, unknown);
    let shot = get_page(&api, &cookie, &format!("{recorder}/shot")).await;
    assert_eq!(shot.status().as_u16(), 404);
    let (_, home) = page_text(&api, &cookie, "/").await;
    let posted = post_form(
        &api,
        &cookie,
        &recorder,
        &[("csrf", &csrf_of(&home)), ("do", "close")],
    )
    .await;
    assert_eq!(posted.status().as_u16(), 404);
    // Its owner without the CSRF token changes nothing.
    let mine = session_cookie(&api, &user).await;
    let refused = post_form(&api, &mine, &recorder, &[("do", "close")]).await;
    assert_eq!(refused.status().as_u16(), 403);

    // At most two recordings a user: a second opens, a third is refused in words.
    let (_, form) = page_text(&api, &mine, "/monitors/new").await;
    let url = site.url("/");
    let opening = [
        ("csrf", csrf_of(&form)),
        ("url", url),
        ("jobType", "SinglePage".into()),
        ("recurrence", "3600".into()),
        ("record", "1".into()),
    ];
    let opening: Vec<(&str, &str)> = opening.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let second = post_form(&api, &mine, "/monitors/new", &opening).await;
    assert_eq!(second.status().as_u16(), 303);
    let third = post_form(&api, &mine, "/monitors/new", &opening).await;
    assert_eq!(third.status().as_u16(), 400);
    assert!(
        third
            .text()
            .await
            .unwrap()
            .contains("already have 2 recordings")
    );

    // Used in the form and saved: the monitor's checks sign in with the recorded secret.
    width(&page, 1440).await;
    page.find_element("#record-use")
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    until(
        &page,
        "!!document.querySelector('[name=\"steps[5].action\"]')",
    )
    .await;
    let secret_shown: String = eval(
        &page,
        "document.querySelector('[name=\"steps[2].value\"]').value",
    )
    .await;
    assert_eq!(secret_shown, "", "the form never holds the secret");
    page.find_element("#monitor-form button.primary[type=submit]")
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    until(&page, "/^\\/monitors\\/[^/]+$/.test(location.pathname)").await;
    let id: String = eval(&page, "location.pathname.split('/')[2]").await;
    let stored = api.get(&user, &format!("/thirdparty/v1/task/{id}")).await;
    let steps = stored.ok()["steps"].clone();
    assert_eq!(steps.as_array().map(Vec::len), Some(6), "{steps}");
    assert_eq!(
        steps[2],
        serde_json::json!({"action": "type", "selector": "//*[@id=\"password\"]", "secret": true})
    );
    assert_eq!(steps[0]["optional"], true);
    until_value(&api, &user, &id, "12 EUR").await;
    driver.close().await;
}
