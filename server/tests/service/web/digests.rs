//! When an endpoint's messages go, set through the pages in real headless Chromium: a digest
//! and quiet hours on the settings page's new endpoint and on a listed one, and on a monitor
//! form's endpoint, read back through the API, with what the API set beside them kept.

use crate::Api;
use crate::support::web::{click_and_wait, eval, screenshot, signed_in_browser, type_into, until};
use serde_json::json;

const ENDPOINTS: &str = "/thirdparty/v1/user/notificationEndpoints";

in_browser!(
    digests_and_quiet_hours_are_set_on_the_settings_page_and_the_monitor_form,
    multi_thread
);
async fn digests_and_quiet_hours_are_set_on_the_settings_page_and_the_monitor_form() {
    let Some(_guard) = wachet::testing::browser_test().await else {
        return;
    };
    let api = Api::start().await;
    let user = api.user("digest-form@example.com").await;
    // An endpoint the API gave a daily digest and its own message.
    api.put(
        &user,
        ENDPOINTS,
        json!({"notificationEndpoints": [{"type": "Webhook", "value": "https://hooks.example/daily",
            "digest": {"dailyAt": "08:00"}, "body": "{{ monitor.name }} changed"}]}),
    )
    .await
    .ok();

    let (_driver, page, _) = signed_in_browser(&api, &user).await;
    page.goto(api.url("/settings")).await.unwrap();
    until(&page, "!!document.querySelector('.schedule-badge')").await;
    assert_eq!(
        eval::<String>(
            &page,
            "document.querySelector('.schedule-badge').textContent"
        )
        .await,
        "daily at 08:00"
    );
    // The listed endpoint's form shows what the API set.
    assert!(eval::<bool>(&page, "document.querySelector('#endpoint-0-daily').checked").await);
    assert_eq!(
        eval::<String>(
            &page,
            "document.querySelector('#endpoint-0-digest-dailyAt').value"
        )
        .await,
        "08:00"
    );

    // A new endpoint: at most one message every 30 minutes, quiet from 22:00 to 07:00.
    type_into(&page, "#endpoint-value", "https://hooks.example/tea").await;
    page.find_element("#endpoint-every")
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    type_into(&page, "#endpoint-digest-everyMinutes", "30").await;
    page.evaluate(
        "document.querySelector('#endpoint-quietHours-from').value = '22:00';
         document.querySelector('#endpoint-quietHours-to').value = '07:00';",
    )
    .await
    .unwrap();
    click_and_wait(
        &page,
        ".add-endpoint button.primary",
        "document.querySelectorAll('.schedule-badge').length === 2",
    )
    .await;
    let stored = api.get(&user, ENDPOINTS).await.ok()["notificationEndpoints"].clone();
    assert_eq!(stored[0]["digest"], json!({"dailyAt": "08:00"}), "{stored}");
    assert_eq!(
        stored[0]["body"], "{{ monitor.name }} changed",
        "kept: {stored}"
    );
    assert_eq!(stored[1]["value"], "https://hooks.example/tea");
    assert_eq!(stored[1]["digest"], json!({"everyMinutes": 30}), "{stored}");
    assert_eq!(
        stored[1]["quietHours"],
        json!({"from": "22:00", "to": "07:00"}),
        "{stored}"
    );
    page.evaluate("document.querySelectorAll('.endpoint-schedule').forEach(d => d.open = true)")
        .await
        .unwrap();
    screenshot(&page, "settings-digests", 1440).await;
    screenshot(&page, "settings-digests", 375).await;

    // The listed one goes at once from now on; its own message stays.
    page.find_element("#endpoint-0-now")
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    click_and_wait(
        &page,
        "button[aria-label='Save when messages go to https://hooks.example/daily']",
        "document.querySelectorAll('.schedule-badge').length === 1",
    )
    .await;
    let stored = api.get(&user, ENDPOINTS).await.ok()["notificationEndpoints"].clone();
    assert!(stored[0]["digest"].is_null(), "{stored}");
    assert_eq!(
        stored[0]["body"], "{{ monitor.name }} changed",
        "kept: {stored}"
    );
    assert_eq!(stored[1]["digest"], json!({"everyMinutes": 30}), "{stored}");

    // A monitor's endpoint: one message a day at 07:30, through the monitor form.
    let task = api
        .task(
            &user,
            json!({"name": "Tea", "url": "https://shop.example/", "paused": true,
                   "notificationEndpoints": [{"type": "Webhook", "value": "https://hooks.example/m",
                       "title": "{{ monitor.name }}"}]}),
        )
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    page.goto(api.url(&format!("/monitors/{task}/edit")))
        .await
        .unwrap();
    until(
        &page,
        "!!document.querySelector('#f-notificationEndpoints-0--daily')",
    )
    .await;
    page.find_element("#f-notificationEndpoints-0--daily")
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    page.evaluate(
        "document.querySelector('#f-notificationEndpoints-0--digest-dailyAt').value = '07:30';",
    )
    .await
    .unwrap();
    click_and_wait(
        &page,
        ".form-actions button.primary",
        &format!("location.pathname === '/monitors/{task}'"),
    )
    .await;
    let monitor = api
        .get(&user, &format!("/thirdparty/v1/task/{task}"))
        .await
        .ok()
        .clone();
    let endpoint = &monitor["notificationEndpoints"][0];
    assert_eq!(endpoint["digest"], json!({"dailyAt": "07:30"}), "{monitor}");
    assert!(endpoint["quietHours"].is_null(), "{monitor}");
    assert_eq!(endpoint["title"], "{{ monitor.name }}", "kept: {monitor}");
}
