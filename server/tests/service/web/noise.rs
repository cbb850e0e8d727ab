//! The monitor form's Noise section in real Chromium: the masks listed (learned or yours, the
//! text a learned one masked, escaped), a learned mask switched off, one of yours removed and
//! one added (a broken pattern first: its message at its field), the line order chosen, a mask
//! learned while the form was open kept, and the monitor's page saying what is masked.

use crate::support::web::{eval, page_text, screenshot, session_cookie, until};
use crate::support::web::{post_form, screenshots, signed_in_browser};
use crate::{Api, User, id};
use serde_json::{Value, json};
use wachet::model::{ClientData, NoiseMask};
use wachet_server::store::{CheckRecord, Claim, now_millis};

/// Stores a check of `task` that learned `masks` and left `notice`, as the scheduler stores
/// one: claimed under a lease, then recorded.
async fn checked(api: &Api, task: &str, masks: &[(&str, &str)], notice: Option<&str>) {
    let later = now_millis() + 36_000_000;
    let claim = Claim {
        limit: 10,
        share: 10,
        browser: false,
        locations: wachet_server::store::Locations::DEFAULT,
        buckets: wachet_server::store::HostBuckets::ALL,
        hosts: Default::default(),
    };
    let due = api
        .store
        .claim_due(later, later + 60_000, &claim)
        .await
        .unwrap();
    let check = due
        .into_iter()
        .find(|c| c.monitor.id.as_deref() == Some(task))
        .expect("the monitor is due");
    let learned = masks
        .iter()
        .map(|(pattern, example)| NoiseMask {
            pattern: pattern.to_string(),
            learned: true,
            active: true,
            example: Some(example.to_string()),
        })
        .collect();
    let record = CheckRecord {
        task: task.to_string(),
        version: check.version,
        token: check.token,
        own: ClientData::value(
            chrono::Utc::now(),
            "Tea 3.50 · 12 people are looking".into(),
        ),
        pages: Vec::new(),
        notifications: Vec::new(),
        alert_states: Vec::new(),
        next_check_at: later,
        learned,
        learned_order: None,
        sampled: true,
        noise_notice: notice.map(str::to_string),
    };
    assert_eq!(
        api.store.record_check(&record).await.unwrap(),
        wachet_server::store::Recorded::Stored
    );
}

async fn masks_of(api: &Api, user: &User, task: &str) -> Vec<(String, bool, bool)> {
    let monitor = api
        .get(user, &format!("/thirdparty/v1/task/{task}"))
        .await
        .ok()
        .clone();
    monitor["noise"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m: &Value| {
            (
                m["pattern"].as_str().unwrap().to_string(),
                m["learned"].as_bool().unwrap(),
                m["active"].as_bool().unwrap(),
            )
        })
        .collect()
}

async fn click(page: &chromiumoxide::Page, selector: &str) {
    page.find_element(selector)
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
}

async fn set(page: &chromiumoxide::Page, id: &str, value: &str) {
    let js = format!(
        "(() => {{ const e = document.getElementById({}); e.value = {}; return true; }})()",
        serde_json::to_string(id).unwrap(),
        serde_json::to_string(value).unwrap()
    );
    assert!(eval::<bool>(page, &js).await, "{id}");
}

in_browser!(
    the_noise_section_switches_removes_and_adds_masks_in_a_real_browser,
    multi_thread
);
async fn the_noise_section_switches_removes_and_adds_masks_in_a_real_browser() {
    let Some(_guard) = wachet::testing::browser_test().await else {
        return;
    };
    let api = Api::start().await;
    let user = api.user("noisy@example.com").await;
    let task = id(&api
        .task(
            &user,
            json!({"name": "Tea", "url": "https://shop.example/tea", "xPath": "//p",
                   "recurrenceInSeconds": 3600, "compareLines": "set",
                   "noise": [{"pattern": r"(\d+) views"}, {"pattern": r"token=\w+"}]}),
        )
        .await);
    checked(
        &api,
        &task,
        &[(r"(\d+) people are looking", "<b>12</b> people are looking")],
        None,
    )
    .await;
    let (driver, page, _) = signed_in_browser(&api, &user).await;

    page.goto(api.url(&format!("/monitors/{task}/edit")))
        .await
        .unwrap();
    until(&page, "!!document.querySelector('#f-noise')").await;
    let rows: Vec<String> = eval(
        &page,
        "[...document.querySelectorAll('#f-noise .mask')].map(m => m.innerText.replace(/\\s+/g, ' ').trim())",
    )
    .await;
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert!(
        rows[2].contains("learned") && rows[2].contains("<b>12</b> people are looking"),
        "the learned mask with the text it masked, as text: {rows:?}"
    );
    assert_eq!(
        eval::<String>(&page, "document.getElementById('f-noise-0--pattern').value").await,
        r"(\d+) views"
    );
    assert!(
        eval::<bool>(
            &page,
            "document.querySelector('input[name=compareLines][value=set]').checked"
        )
        .await
    );
    // Every control of the section has a label.
    let unlabelled: Vec<String> = eval(
        &page,
        "[...document.querySelectorAll('#f-noise input:not([type=hidden])')]\
         .filter(e => !(e.labels && e.labels.length)).map(e => e.name)",
    )
    .await;
    assert!(unlabelled.is_empty(), "without a label: {unlabelled:?}");
    screenshots(&page, "monitor-noise", 375).await;

    // Meanwhile the service learns another mask; the open form does not know it.
    checked(
        &api,
        &task,
        &[(r"Updated (\d+) min ago", "Updated 3 min ago")],
        None,
    )
    .await;

    // Switch the learned one off, remove "(\d+) views" (posted back, no script needed), add a
    // broken pattern.
    click(&page, "input[name='noise[2].active']").await;
    click(&page, "button[name=remove][value='noise[0]']").await;
    until(
        &page,
        "document.querySelectorAll('#f-noise .mask').length === 2",
    )
    .await;
    assert!(
        !eval::<bool>(
            &page,
            "document.querySelector(\"input[name='noise[1].active']\").checked"
        )
        .await,
        "the switch made before removing a row is kept"
    );
    set(&page, "f-noiseAdd", "price (unclosed").await;
    click(&page, "input[name=compareLines][value=ordered]").await;
    click(&page, ".form-actions button.primary").await;
    until(&page, "!!document.querySelector('#problems')").await;
    assert_eq!(
        eval::<String>(
            &page,
            "document.getElementById('f-noise-2--pattern').getAttribute('aria-invalid') || ''"
        )
        .await,
        "true",
        "the error is at the added pattern"
    );
    let message: String = eval(
        &page,
        "document.getElementById('f-noise-2--pattern-error').textContent",
    )
    .await;
    assert!(message.contains("unclosed"), "{message}");
    screenshot(&page, "monitor-noise-error", 1440).await;

    set(&page, "f-noise-2--pattern", r"Sale ends in \d+ h").await;
    click(&page, ".form-actions button.primary").await;
    until(&page, &format!("location.pathname === '/monitors/{task}'")).await;
    assert_eq!(
        masks_of(&api, &user, &task).await,
        [
            (r"token=\w+".to_string(), false, true),
            (r"(\d+) people are looking".to_string(), true, false),
            (r"Sale ends in \d+ h".to_string(), false, true),
            (r"Updated (\d+) min ago".to_string(), true, true),
        ],
        "switched off, removed, added, and the mask learned meanwhile kept"
    );
    let monitor = api
        .get(&user, &format!("/thirdparty/v1/task/{task}"))
        .await
        .ok()
        .clone();
    assert_eq!(monitor["compareLines"], "ordered");
    let settings: String = eval(&page, "document.querySelector('.settings').innerText").await;
    assert!(
        settings.contains("4 masks (2 learned, 1 off)"),
        "{settings}"
    );
    // What the learning has to say is on the monitor's page, beside its state.
    checked(&api, &task, &[], Some(wachet::alerts::noise::UNSTABLE)).await;
    page.reload().await.unwrap();
    until(&page, "!!document.querySelector('.status .noise-notice')").await;
    let notice: String = eval(
        &page,
        "document.querySelector('.status .noise-notice').textContent",
    )
    .await;
    assert!(notice.contains(wachet::alerts::noise::UNSTABLE), "{notice}");
    screenshot(&page, "monitor-noise-notice", 1440).await;
    screenshot(&page, "monitor-noise-notice", 375).await;
    driver.close().await;

    // Without a browser: a form posted by a script with a pattern too broken to compile lands
    // its message on the field, and stores nothing.
    let cookie = session_cookie(&api, &user).await;
    let (_, html) = page_text(&api, &cookie, &format!("/monitors/{task}/edit")).await;
    let csrf = crate::support::web::csrf_of(&html);
    let response = post_form(
        &api,
        &cookie,
        &format!("/monitors/{task}/edit"),
        &[
            ("csrf", &csrf),
            ("url", "https://shop.example/tea"),
            ("recurrence", "3600"),
            ("noise[0].pattern", "[z-a]"),
        ],
    )
    .await;
    assert_eq!(response.status(), 400);
    let body = response.text().await.unwrap();
    assert!(body.contains("id=\"f-noise-0--pattern\""), "{body}");
    assert_eq!(masks_of(&api, &user, &task).await.len(), 4);
}

both!(a_monitor_whose_location_no_worker_serves_says_so_on_its_page);
/// A monitor whose location no worker serves any more says so on its page, beside its state.
async fn a_monitor_whose_location_no_worker_serves_says_so_on_its_page() {
    use std::time::Duration;
    use wachet_server::store::{Holdings, WorkerInfo, new_id};
    let api = Api::start().await;
    let user = api.user("ann@example.com").await;
    // A worker in Britain runs, so the monitor may be made there; then it stops.
    let britain = WorkerInfo {
        id: new_id(),
        roles: "worker".into(),
        location: Some("gb".into()),
        kinds: "plain".into(),
        host: "london".into(),
        pid: 1,
        started_at: now_millis(),
    };
    let none = Holdings::default();
    api.store
        .beat(&britain, &none, Duration::from_secs(60))
        .await
        .unwrap();
    let made = api
        .task(
            &user,
            json!({"name": "Tea in London", "url": "https://example.com/tea",
                   "recurrenceInSeconds": 3600, "location": "Gb"}),
        )
        .await;
    let task = id(&made);
    assert!(made.get("locationNotice").is_none(), "{made}");
    api.store.leave(&britain.id, &none).await.unwrap();
    let (driver, page, _) = signed_in_browser(&api, &user).await;
    page.goto(api.url(&format!("/monitors/{task}")))
        .await
        .unwrap();
    until(
        &page,
        "!!document.querySelector('.status .location-notice')",
    )
    .await;
    let notice: String = eval(
        &page,
        "document.querySelector('.status .location-notice').textContent",
    )
    .await;
    assert!(notice.contains("location Gb"), "{notice}");
    screenshot(&page, "monitor-location-notice", 1440).await;
    screenshot(&page, "monitor-location-notice", 375).await;
    driver.close().await;
}
