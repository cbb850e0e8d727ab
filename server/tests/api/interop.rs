//! What clients written for Wachete's API send and read: date-times and booleans in the query
//! as ISO 8601 and ASP.NET read them, every field the specification types as not nullable
//! present in every response, and webhook payloads read with a Wachete receiver's field names.

use super::history::notification;
use super::{Api, id, monitor};
use chrono::{DateTime, Utc};
use serde_json::Value;
use wachet::model::ClientData;
use wachet_server::store::Series;

/// The times of the entries and notifications `ranges` writes: one the evening before, and
/// three on the day, an hour apart.
const TIMES: [&str; 4] = [
    "2026-12-05T23:00:00Z",
    "2026-12-06T01:00:00Z",
    "2026-12-06T02:00:00Z",
    "2026-12-06T03:00:00Z",
];

/// The times of a page of a list, as its entries say them.
fn times(page: &Value, field: &str) -> Vec<String> {
    page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry[field].as_str().unwrap().to_string())
        .collect()
}

both!(date_times_and_booleans_read_as_clients_send_them);
async fn date_times_and_booleans_read_as_clients_send_them() {
    let api = Api::start().await;
    let user = api.user("ada@example.com").await;
    let task = id(&api
        .task(&user, monitor("tea", "https://example.com/"))
        .await);
    for (i, time) in TIMES.iter().enumerate() {
        let at: DateTime<Utc> = time.parse().unwrap();
        let data = ClientData::value(at, format!("Tea {i}.50 EUR"));
        api.store
            .append_entry(&Series::Task(task.clone()), &data)
            .await
            .unwrap();
        api.store
            .insert_notification(&notification(&task, at, i))
            .await
            .unwrap();
    }
    let history = format!("/thirdparty/v1/data/list/{task}");
    let notifications = format!("/thirdparty/v1/notification/list?taskId={task}");
    let lists = [
        (history.clone() + "?", "lastCheckTimestamp"),
        (notifications.clone() + "&", "timestamp"),
    ];
    let from_two = ["2026-12-06T03:00:00Z", "2026-12-06T02:00:00Z"];
    // Each spelling of 02:00 UTC: with Z, an offset (encoded, and as a `+` a client left
    // unencoded, which the query reads as a space), no offset (Python's isoformat), 0 to 9
    // fractional digits (.NET's "o" writes seven).
    for spelling in [
        "2026-12-06T02:00:00Z",
        "2026-12-06T03:00:00%2B01:00",
        "2026-12-06T03:00:00+01:00",
        "2026-12-05T22:00:00-04:00",
        "2026-12-06T02:00:00",
        "2026-12-06T02:00:00.000000",
        "2026-12-06T02:00:00.0000000",
        "2026-12-06T02:00:00.000000000Z",
        "2026-12-06T02:00",
    ] {
        for (list, field) in &lists {
            let page = api.get(&user, &format!("{list}from={spelling}")).await;
            assert_eq!(times(page.ok(), field), from_two, "{list} from={spelling}");
        }
    }
    // Python's datetime.utcnow().isoformat(): microseconds, no offset, taken as UTC.
    for (list, field) in &lists {
        let page = api
            .get(&user, &format!("{list}to=2026-12-06T01:00:00.123456"))
            .await;
        assert_eq!(
            times(page.ok(), field),
            ["2026-12-06T01:00:00Z", "2026-12-05T23:00:00Z"],
            "{list}"
        );
        // A bare date is its midnight, UTC.
        let page = api.get(&user, &format!("{list}from=2026-12-06")).await;
        assert_eq!(times(page.ok(), field).len(), 3, "{list}");
        let page = api.get(&user, &format!("{list}to=2026-12-06")).await;
        assert_eq!(times(page.ok(), field), ["2026-12-05T23:00:00Z"], "{list}");
    }

    // Booleans in any case, or 1 and 0.
    for (spelling, on) in [
        ("true", true),
        ("True", true),
        ("TRUE", true),
        ("1", true),
        ("false", false),
        ("False", false),
        ("0", false),
    ] {
        let page = api
            .get(&user, &format!("{history}?returnDiff={spelling}"))
            .await;
        let diff = &page.ok()["data"][0]["diff"];
        assert_eq!(diff.is_array(), on, "returnDiff={spelling}: {diff}");
        let page = api
            .get(&user, &format!("{notifications}&html={spelling}"))
            .await;
        let html = &page.ok()["data"][0]["html"];
        assert_eq!(html.is_string(), on, "html={spelling}: {html}");
    }

    // What is none of these: a 400 naming the parameter, saying what is read.
    for (list, _) in &lists {
        for (query, field, words) in [
            ("from=2026-13-40", "from", "no such date"),
            ("from=yesterday", "from", "RFC 3339"),
            ("to=2026-12-06T02:00:00.1234567890Z", "to", "1 to 9 digits"),
            ("count=-1", "count", "between 1 and 500"),
        ] {
            let reply = api.get(&user, &format!("{list}{query}")).await;
            reply.field_error(field, words);
            reply.field_error(field, if field == "count" { "-1" } else { "such as" });
        }
    }
    api.get(&user, &format!("{history}?returnDiff=maybe"))
        .await
        .field_error("returnDiff", "send true or false (in any case), 1 or 0");
    api.get(&user, &format!("{notifications}&html=maybe"))
        .await
        .field_error("html", "send true or false (in any case), 1 or 0");
}
