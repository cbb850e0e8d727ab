//! An endpoint's own message on the settings page, in real headless Chromium: the templates
//! previewed against a monitor's last change (an HTML body shown sandboxed), a bad template
//! refused at the templates with its line, and the endpoint added with them.

use crate::Api;
use crate::support::web::{
    click_and_wait, eval, price_page, screenshot, signed_in_browser, type_into, until_value,
};
use serde_json::json;
use wachet::testing::{FixtureServer, Reply};

in_browser!(
    an_endpoints_templates_are_previewed_and_checked_on_the_settings_page,
    multi_thread
);
async fn an_endpoints_templates_are_previewed_and_checked_on_the_settings_page() {
    let Some(_guard) = wachet::testing::browser_test().await else {
        return;
    };
    let site = FixtureServer::builder()
        .page("/tea", price_page("3.50"))
        .start()
        .await
        .unwrap();
    let api = Api::start_checking().await;
    let user = api.user("preview@example.com").await;
    let created = api
        .task(
            &user,
            json!({"name": "Green tea", "url": site.url("/tea"), "recurrenceInSeconds": 1,
                   "xPath": "//body", "alerts": [{"type": "NotEq"}]}),
        )
        .await;
    let task = created["id"].as_str().unwrap().to_string();
    until_value(&api, &user, &task, "3.50").await;
    site.set("/tea", Reply::html(price_page("3.90")));
    until_value(&api, &user, &task, "3.90").await;

    let (_driver, page, _) = signed_in_browser(&api, &user).await;
    page.goto(api.url("/settings")).await.unwrap();
    click_and_wait(
        &page,
        ".templates summary",
        "document.querySelector('.templates').open",
    )
    .await;
    type_into(&page, "#endpoint-value", "https://hooks.example/tea").await;
    type_into(
        &page,
        "#endpoint-title",
        "{{ monitor.name }}: {{ change.removed | join }} -> {{ change.added | join }}",
    )
    .await;
    type_into(
        &page,
        "#endpoint-body",
        "<p>{{ monitor.name }} changed at {{ time }}</p><p>{{ change.diff }}</p>",
    )
    .await;
    page.evaluate("document.querySelector('#endpoint-format').value = 'html'")
        .await
        .unwrap();
    click_and_wait(
        &page,
        "button[formaction='/settings/endpoints/preview']",
        "!!document.querySelector('.preview')",
    )
    .await;
    let title: String = eval(
        &page,
        "document.querySelector('.preview-subject').textContent",
    )
    .await;
    assert_eq!(title, "Green tea: Tea 3.50 -> Tea 3.90");
    let body: String = eval(&page, "document.querySelector('.preview-html').srcdoc").await;
    assert!(body.starts_with("<p>Green tea changed at "), "{body}");
    assert!(
        body.contains("3.50</del>") && body.contains("3.90</ins>"),
        "{body}"
    );
    assert_eq!(
        eval::<String>(
            &page,
            "document.querySelector('.preview-html').getAttribute('sandbox')"
        )
        .await,
        ""
    );
    // The form keeps what was typed, for the next try or for adding.
    assert_eq!(
        eval::<String>(&page, "document.querySelector('#endpoint-format').value").await,
        "html"
    );
    screenshot(&page, "settings-template-preview", 1440).await;
    screenshot(&page, "settings-template-preview", 375).await;

    // A bad template: refused at the templates, with its line, on preview and on adding.
    page.evaluate("document.querySelector('#endpoint-body').value = 'fine\\n{% if %}'")
        .await
        .unwrap();
    click_and_wait(
        &page,
        "button[formaction='/settings/endpoints/preview']",
        "!!document.querySelector('#template-error')",
    )
    .await;
    let error: String = eval(
        &page,
        "document.querySelector('#template-error').textContent",
    )
    .await;
    assert!(
        error.starts_with("The body template cannot be used: line 2:"),
        "{error}"
    );
    // (The marker gone, so that the wait below sees the page the click brings.)
    page.evaluate("document.querySelector('#template-error').remove()")
        .await
        .unwrap();
    click_and_wait(
        &page,
        ".add-endpoint button.primary",
        "!!document.querySelector('#template-error')",
    )
    .await;
    let stored = api
        .get(&user, "/thirdparty/v1/user/notificationEndpoints")
        .await;
    assert_eq!(stored.ok()["notificationEndpoints"], json!([]));
    // Fixed, the endpoint is added with its templates.
    page.evaluate("document.querySelector('#endpoint-body').value = '{{ change.diff }}'")
        .await
        .unwrap();
    click_and_wait(
        &page,
        ".add-endpoint button.primary",
        "!!document.querySelector('.endpoint-value')",
    )
    .await;
    let stored = api
        .get(&user, "/thirdparty/v1/user/notificationEndpoints")
        .await;
    let endpoint = &stored.ok()["notificationEndpoints"][0];
    assert_eq!(endpoint["body"], "{{ change.diff }}");
    assert_eq!(endpoint["format"], "html");
}
