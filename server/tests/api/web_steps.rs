//! Steps the web-interface tests share: a browser signed in as a user, a form posted as a
//! browser posts it, and the check that a page opened no dialog.

use super::web::{Driver, client, dark, screenshot, sign_in_through_the_form, width};
use super::{Api, User};
use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::page::EventJavascriptDialogOpening;
use chromiumoxide::listeners::EventStream;
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
