//! The user's time zone: set through the API or the settings page, refused when it names no
//! zone, and the zone the web interface shows the user's times in.

use crate::support::web::{client, csrf_of, page_text, session_cookie};
use crate::{Api, monitor};
use serde_json::json;
use wachet::model::ClientData;
use wachet_server::store::Series;

const SETTINGS: &str = "/thirdparty/v1/user/settings";

both!(a_time_zone_is_an_iana_name_and_the_pages_show_times_in_it);
async fn a_time_zone_is_an_iana_name_and_the_pages_show_times_in_it() {
    let api = Api::start().await;
    let user = api.user("tz@example.com").await;
    let other = api.user("tz-other@example.com").await;
    assert_eq!(api.get(&user, SETTINGS).await.ok()["timeZone"], "UTC");

    for (body, words) in [
        (json!({"timeZone": "Mars/Olympus_Mons"}), "IANA time zone"),
        (json!({"timeZone": "europe/berlin"}), "IANA time zone"),
        (json!({"timeZone": ""}), "is required"),
        (json!({}), "is required"),
    ] {
        api.put(&user, SETTINGS, body)
            .await
            .field_error("timeZone", words);
    }
    api.put(&user, SETTINGS, json!({"timeZone": 3}))
        .await
        .problem(400);
    assert_eq!(api.get(&user, SETTINGS).await.ok()["timeZone"], "UTC");

    let set = api
        .put(&user, SETTINGS, json!({"timeZone": "Asia/Kolkata"}))
        .await;
    assert_eq!(set.ok()["timeZone"], "Asia/Kolkata");
    assert_eq!(
        api.get(&user, SETTINGS).await.ok()["timeZone"],
        "Asia/Kolkata"
    );
    assert_eq!(api.get(&other, SETTINGS).await.ok()["timeZone"], "UTC");

    // A check at 12:00 UTC is 17:30 in Kolkata (no summer time there) on the history page.
    let task = crate::id(
        &api.task(&user, monitor("tea", "https://example.com/"))
            .await,
    );
    let at = chrono::DateTime::parse_from_rfc3339("2026-07-01T12:00:00Z")
        .unwrap()
        .with_timezone(&chrono::Utc);
    api.store
        .append_entry(
            &Series::Task(task.clone()),
            &ClientData::value(at, "3.50".into()),
        )
        .await
        .unwrap();
    let cookie = session_cookie(&api, &user).await;
    let history = format!("/monitors/{task}/history");
    let (status, html) = page_text(&api, &cookie, &history).await;
    assert_eq!(status, 200);
    assert!(html.contains("2026-07-01 17:30:00 IST"), "{html}");
    assert!(!html.contains("12:00:00 UTC"), "{html}");

    // The settings page sets it too, and its answer already shows times in the new zone.
    let (_, settings) = page_text(&api, &cookie, "/settings").await;
    assert!(settings.contains(r#"<option value="Asia/Kolkata" selected>"#));
    let save = |zone: &'static str| {
        client()
            .post(api.url("/settings/time-zone"))
            .header("cookie", &cookie)
            .form(&[("csrf", csrf_of(&settings)), ("timeZone", zone.to_string())])
            .send()
    };
    let refused = save("Nowhere/Atlantis").await.unwrap();
    assert_eq!(refused.status(), 400);
    let page = refused.text().await.unwrap();
    assert!(
        page.contains("The time zone is not an IANA time zone name"),
        "{page}"
    );
    let saved = save("Europe/Berlin").await.unwrap();
    assert_eq!(saved.status(), 200);
    assert!(
        saved
            .text()
            .await
            .unwrap()
            .contains("Times are now shown in Europe/Berlin")
    );
    let (_, html) = page_text(&api, &cookie, &history).await;
    assert!(html.contains("2026-07-01 14:00:00 CEST"), "{html}");
    assert_eq!(
        api.get(&user, SETTINGS).await.ok()["timeZone"],
        "Europe/Berlin"
    );
}
