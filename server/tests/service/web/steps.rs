//! The monitor form's browser steps over HTTP: rows read, added and stored, a secret typed once
//! and never shown again, nor lost when the form is saved without it.

use crate::Api;
use crate::support::web::{csrf_of, location, page_text, post_form, session_cookie};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steps_are_edited_in_the_form_and_a_secret_is_never_shown() {
    // SQLite only: what the form stores goes through the same operations as the API's tests,
    // which run on both backends.
    let api = Api::start().await;
    let user = api.user("kim@example.com").await;
    let cookie = session_cookie(&api, &user).await;
    let (_, html) = page_text(&api, &cookie, "/monitors/new").await;
    let token = {
        let start = html.find("name=\"token\" value=\"").expect("a token") + 20;
        html[start..][..32].to_string()
    };
    let csrf = csrf_of(&html);
    let mut form: Vec<(&str, String)> = vec![
        ("csrf", csrf.clone()),
        ("token", token),
        ("url", "https://shop.example/orders".into()),
        ("name", "Orders".into()),
        ("jobType", "SinglePage".into()),
        ("recurrence", "3600".into()),
        ("steps[0].action", "click".into()),
        ("steps[0].selector", "#accept".into()),
        ("steps[0].optional", "true".into()),
        ("login.steps[0].action", "type".into()),
        ("login.steps[0].selector", "#password".into()),
        ("login.steps[0].value", "hunter2".into()),
        ("login.steps[0].secret", "true".into()),
        ("loggedInWhen", "#account".into()),
    ];
    let send = |form: Vec<(&'static str, String)>, path: String| {
        let (api, cookie) = (&api, cookie.clone());
        async move {
            let refs: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let response = post_form(api, &cookie, &path, &refs).await;
            let status = response.status().as_u16();
            let to = location(&response);
            (status, to, response.text().await.unwrap())
        }
    };
    // "Add a step" shows the form again with a new row, the secret not echoed.
    let mut adding = form.clone();
    adding.push(("add", "steps".into()));
    let (status, _, page) = send(adding, "/monitors/new".into()).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("name=\"steps[1].action\""), "{page}");

    let (status, to, page) = send(form.clone(), "/monitors/new".into()).await;
    assert_eq!(status, 303, "{page}");
    let task = to.trim_start_matches("/monitors/").to_string();
    let stored = api.get(&user, &format!("/thirdparty/v1/task/{task}")).await;
    let stored = stored.ok();
    assert_eq!(
        stored["steps"],
        serde_json::json!([{"action": "click", "selector": "#accept", "optional": true}])
    );
    assert_eq!(
        stored["login"],
        serde_json::json!({"steps": [{"action": "type", "selector": "#password", "secret": true}],
                           "loggedInWhen": "#account"})
    );

    // The edit form shows the step, its secret as an empty password field.
    let (_, edit) = page_text(&api, &cookie, &format!("/monitors/{task}/edit")).await;
    assert!(
        edit.contains("name=\"login.steps[0].value\" type=\"password\" value=\"\""),
        "{edit}"
    );
    assert!(!edit.contains("hunter2") && !edit.contains("sealed~"));
    // Saved without the secret (as the page posts it): the stored one is kept.
    form[0] = ("csrf", csrf_of(&edit));
    form.retain(|(k, _)| *k != "token" && *k != "login.steps[0].value");
    form.push(("id", task.clone()));
    let (status, _, page) = send(form, format!("/monitors/{task}/edit")).await;
    assert_eq!(status, 303, "{page}");
    let sql = api.sql().await;
    assert_eq!(
        sql.count("SELECT count(*) FROM tasks WHERE definition LIKE '%sealed~%'")
            .await,
        1
    );
}
