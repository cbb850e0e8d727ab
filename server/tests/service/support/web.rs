//! What the web interface's tests share: headless Chromium launched and driven (widths, dark
//! mode, typing, clicks, screenshots, axe-core), a user signed in through the form or by a
//! session cookie, a form posted as a browser posts it, and the check that a page opened no
//! dialog.

use crate::{Api, User};
use chromiumoxide::cdp::browser_protocol::emulation::{
    MediaFeature, SetDeviceMetricsOverrideParams, SetEmulatedMediaParams,
};
use chromiumoxide::cdp::browser_protocol::page::EventJavascriptDialogOpening;
use chromiumoxide::listeners::EventStream;
use chromiumoxide::page::ScreenshotParams;
use chromiumoxide::{Browser, BrowserConfig, Page};
use futures::StreamExt;
use std::time::Duration;

/// The JavaScript dialogs (`alert`, `confirm`, ...) a page opens.
pub(crate) type Dialogs = EventStream<EventJavascriptDialogOpening>;

/// Headless Chromium signed in as `user` through the sign-in form, on the page the form leads
/// to, with every dialog opened from the sign-in page on.
pub(crate) async fn signed_in_browser(api: &Api, user: &User) -> (Driver, Page, Dialogs) {
    let driver = Driver::launch().await;
    let page = driver.browser.new_page(api.url("/signin")).await.unwrap();
    let dialogs = page
        .event_listener::<EventJavascriptDialogOpening>()
        .await
        .unwrap();
    sign_in_through_the_form(&page, user).await;
    (driver, page, dialogs)
}

/// Fails if a dialog opened, or opens within 300 ms (what a hostile page's script would do).
pub(crate) async fn no_dialog(dialogs: &mut Dialogs) {
    assert!(
        tokio::time::timeout(Duration::from_millis(300), dialogs.next())
            .await
            .is_err(),
        "a dialog opened"
    );
}

/// Posts `fields` to `path` with the session `cookie`, as the page's form would; the response,
/// redirects not followed.
pub(crate) async fn post_form(
    api: &Api,
    cookie: &str,
    path: &str,
    fields: &[(&str, &str)],
) -> reqwest::Response {
    client()
        .post(api.url(path))
        .header("cookie", cookie)
        .form(fields)
        .send()
        .await
        .unwrap()
}

/// `path` with the session `cookie`; the response, redirects not followed.
pub(crate) async fn get_page(api: &Api, cookie: &str, path: &str) -> reqwest::Response {
    client()
        .get(api.url(path))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap()
}

/// Where a response redirects to ("" when it does not).
pub(crate) fn location(response: &reqwest::Response) -> String {
    response
        .headers()
        .get("location")
        .map(|l| l.to_str().unwrap().to_string())
        .unwrap_or_default()
}

/// Screenshots of the page as it is, at 1440 and 375 pixels wide, then in dark mode at
/// `dark_width`; the page is left light and 1440 pixels wide.
pub(crate) async fn screenshots(page: &Page, name: &str, dark_width: i64) {
    screenshot(page, name, 1440).await;
    screenshot(page, name, 375).await;
    dark(page, true).await;
    screenshot(page, &format!("{name}-dark"), dark_width).await;
    dark(page, false).await;
    width(page, 1440).await;
}

/// The password `Api::user` gives every account.
pub(crate) const PASSWORD: &str = "pass word 1";

pub(crate) fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// Signs in through the form; the session cookie's `Set-Cookie` line.
pub(crate) async fn sign_in(api: &Api, email: &str, password: &str) -> reqwest::Response {
    client()
        .post(api.url("/signin"))
        .form(&[("email", email), ("password", password)])
        .send()
        .await
        .unwrap()
}

pub(crate) fn set_cookie(response: &reqwest::Response) -> String {
    response
        .headers()
        .get("set-cookie")
        .unwrap_or_else(|| panic!("no cookie set: {}", response.status()))
        .to_str()
        .unwrap()
        .to_string()
}

/// The `name=value` of the session cookie, for a `Cookie` header.
pub(crate) async fn session_cookie(api: &Api, user: &User) -> String {
    let response = sign_in(api, &user.account.email, PASSWORD).await;
    assert_eq!(response.status(), 303);
    set_cookie(&response).split(';').next().unwrap().to_string()
}

pub(crate) async fn page_text(api: &Api, cookie: &str, path: &str) -> (u16, String) {
    let response = client()
        .get(api.url(path))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

/// The value of the first hidden `csrf` field of an HTML page.
pub(crate) fn csrf_of(html: &str) -> String {
    let start = html.find("name=\"csrf\" value=\"").expect("a csrf field") + 19;
    html[start..][..64].to_string()
}

pub(crate) async fn monitor_count(api: &Api, user: &User) -> usize {
    api.get(user, "/thirdparty/v1/task/search")
        .await
        .ok()
        .as_array()
        .unwrap()
        .len()
}

pub(crate) fn chrome_path() -> std::path::PathBuf {
    if let Some(path) = std::env::var_os("CHROME_PATH") {
        return path.into();
    }
    [
        "/usr/lib/chromium/chromium-headless-shell",
        "/usr/bin/chromium-headless-shell",
        "/usr/bin/chromium",
    ]
    .into_iter()
    .map(std::path::PathBuf::from)
    .find(|path| path.exists())
    .expect("chromium_or_skip found one")
}

/// A test-only driver: Chromium over DevTools on loopback, with a profile of its own.
pub(crate) struct Driver {
    pub(crate) browser: Browser,
    handler: tokio::task::JoinHandle<()>,
    _profile: tempfile::TempDir,
}

pub(crate) async fn width(page: &Page, width: i64) {
    page.execute(SetDeviceMetricsOverrideParams::new(
        width,
        900,
        1.0,
        width < 600,
    ))
    .await
    .unwrap();
}

/// Emulates a system set to dark (or light) colours.
pub(crate) async fn dark(page: &Page, on: bool) {
    let feature = MediaFeature::new("prefers-color-scheme", if on { "dark" } else { "light" });
    page.execute(
        SetEmulatedMediaParams::builder()
            .features(vec![feature])
            .build(),
    )
    .await
    .unwrap();
}

pub(crate) async fn eval<T: serde::de::DeserializeOwned>(page: &Page, js: &str) -> T {
    page.evaluate(js).await.unwrap().into_value().unwrap()
}

/// Waits (10 s at most) until `js` is true in the page.
pub(crate) async fn until(page: &Page, js: &str) {
    for _ in 0..100 {
        if page
            .evaluate(js)
            .await
            .ok()
            .and_then(|r| r.into_value::<bool>().ok())
            == Some(true)
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let html = page.content().await.unwrap_or_default();
    panic!("never true: {js}\n{html}");
}

pub(crate) async fn type_into(page: &Page, selector: &str, text: &str) {
    page.find_element(selector)
        .await
        .unwrap()
        .click()
        .await
        .unwrap()
        .type_str(text)
        .await
        .unwrap();
}

/// Submits the form of `button` by clicking it, then waits for the next page to load. A live
/// page may replace the element between finding and clicking it (the monitors list redraws
/// its rows as checks end): then the new one is clicked, as a person would.
pub(crate) async fn click_and_wait(page: &Page, selector: &str, marker: &str) {
    let mut tries = 0;
    loop {
        tries += 1;
        let clicked = match page.find_element(selector).await {
            Ok(element) => element.click().await.map(|_| ()),
            Err(err) => Err(err),
        };
        match clicked {
            Ok(()) => break,
            Err(err) if tries >= 20 => panic!("cannot click {selector}: {err}"),
            Err(_) => tokio::time::sleep(std::time::Duration::from_millis(100)).await,
        }
    }
    until(page, marker).await;
}

/// Signs `user` in through the sign-in form `page` shows, and waits for the monitors list.
pub(crate) async fn sign_in_through_the_form(page: &Page, user: &User) {
    until(page, "!!document.querySelector('#email')").await;
    type_into(page, "#email", &user.account.email).await;
    type_into(page, "#password", PASSWORD).await;
    // The list, or the page the browser was sent to sign in from.
    click_and_wait(
        page,
        "button[type=submit]",
        "!!document.querySelector('#quick-url') \
         || (location.pathname !== '/signin' && document.readyState === 'complete')",
    )
    .await;
}

pub(crate) fn screenshot_dir() -> std::path::PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"));
    let dir = target.join("screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The serious and critical violations axe-core finds in the page as it is now (width and
/// colour scheme included), each naming the rule and the elements.
pub(crate) async fn axe_violations(page: &Page) -> Vec<String> {
    // Through DevTools, which the page's Content-Security-Policy does not govern: the page
    // itself still runs no inline script.
    page.evaluate(AXE).await.unwrap();
    eval(
        page,
        "axe.run(document, {resultTypes: ['violations']}).then(r => r.violations
            .filter(v => v.impact === 'serious' || v.impact === 'critical')
            .map(v => v.id + ' (' + v.impact + '): ' + v.help + ' at '
                + v.nodes.map(n => n.target.join(' ')).join(', ')))",
    )
    .await
}

/// Fails on any serious or critical violation axe-core finds in the page.
pub(crate) async fn assert_accessible(page: &Page, name: &str) {
    let found = axe_violations(page).await;
    assert!(found.is_empty(), "{name}: axe-core finds {found:#?}");
}

/// Writes a full-page screenshot at `px` wide and checks it is not blank (many colours), after
/// axe-core found nothing serious in the page at that width.
pub(crate) async fn screenshot(page: &Page, name: &str, px: i64) -> std::path::PathBuf {
    width(page, px).await;
    assert_accessible(page, &format!("{name} at {px} px")).await;
    let png = page
        .screenshot(ScreenshotParams::builder().full_page(true).build())
        .await
        .unwrap();
    let (png_width, colours) = width_and_colours(&png);
    assert!(
        colours > 50,
        "{name} at {px} px looks blank: {colours} colours"
    );
    assert_eq!(
        i64::from(png_width),
        px,
        "{name}: nothing wider than the screen"
    );
    let path = screenshot_dir().join(format!("{name}-{px}.png"));
    std::fs::write(&path, png).unwrap();
    path
}

/// A PNG's width, and how many colours its pixels show counted up to 51: enough to tell a page
/// from a blank one (whose count is then exact) without decoding and hashing every pixel of a
/// full-page screenshot, which took seconds a screenshot in a test build.
fn width_and_colours(png: &[u8]) -> (u32, usize) {
    let mut reader = png::Decoder::new(std::io::Cursor::new(png))
        .read_info()
        .unwrap();
    let width = reader.info().width;
    let channels = reader.output_color_type().0.samples();
    let mut colours = std::collections::HashSet::new();
    while colours.len() <= 50
        && let Some(row) = reader.next_row().unwrap()
    {
        colours.extend(row.data().chunks(channels).map(<[u8]>::to_vec));
    }
    (width, colours.len())
}

/// The latest data of a monitor, through the API.
pub(crate) async fn monitor_data(api: &Api, user: &User, id: &str) -> serde_json::Value {
    api.get(user, &format!("/thirdparty/v1/task/{id}"))
        .await
        .ok()
        .clone()
}

/// Waits (30 s at most) until the monitor's latest value contains `text`.
pub(crate) async fn until_value(api: &Api, user: &User, id: &str, text: &str) {
    for _ in 0..300 {
        let monitor = monitor_data(api, user, id).await;
        if monitor["data"]["raw"]
            .as_str()
            .is_some_and(|raw| raw.contains(text))
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the value never held {text}");
}

pub(crate) fn price_page(price: &str) -> String {
    let lines: String = (1..=12)
        .map(|n| format!("<p>Unchanged line {n}</p>"))
        .collect();
    format!(
        "<html><body><h1>Prices</h1>{lines}<p>Tea {price}</p><p>&lt;b&gt;html&lt;/b&gt;</p></body></html>"
    )
}

/// How many times `needle` occurs in `html`.
pub(crate) fn occurrences(html: &str, needle: &str) -> usize {
    html.matches(needle).count()
}

impl Driver {
    pub(crate) async fn launch() -> Driver {
        let profile = tempfile::tempdir().unwrap();
        let config = BrowserConfig::builder()
            .chrome_executable(chrome_path())
            .no_sandbox()
            .user_data_dir(profile.path())
            .viewport(None)
            .window_size(1440, 900)
            .launch_timeout(Duration::from_secs(60))
            .build()
            .unwrap();
        let (browser, mut events) = Browser::launch(config).await.unwrap();
        let handler = tokio::spawn(async move { while events.next().await.is_some() {} });
        Driver {
            browser,
            handler,
            _profile: profile,
        }
    }

    pub(crate) async fn close(mut self) {
        let _ = self.browser.close().await;
        let _ = self.browser.wait().await;
        self.handler.abort();
    }
}

/// axe-core, vendored as a test asset (never served by wachet).
const AXE: &str = include_str!("../../assets/axe-core/axe.min.js");
