//! History and notifications: paging newest first while new entries arrive, date ranges,
//! diffs, and notification content.

use crate::{Api, User, id, monitor};
use chrono::{DateTime, Duration, Utc};
use serde_json::{Value, json};
use std::collections::HashSet;
use wachet::model::{Alert, AlertType, ClientData, JobType};
use wachet_server::store::{NewNotification, Series};

fn at(base: DateTime<Utc>, seconds: i64) -> DateTime<Utc> {
    base + Duration::seconds(seconds)
}

pub(super) fn notification(task: &str, created: DateTime<Utc>, n: usize) -> NewNotification {
    NewNotification {
        task_id: task.to_string(),
        page_url: None,
        job_type: JobType::SinglePage,
        alert: Alert {
            kind: AlertType::NotEq,
            value: None,
            parameters: None,
            remind_every_seconds: None,
        },
        created_at: created.timestamp_millis(),
        current: Some(format!("value {n}")),
        comparand: Some(format!("value {}", n.saturating_sub(1))),
        error: None,
        url: Some("https://example.com/".into()),
        synthetic_expression: "content changed".into(),
        html: format!("<p>change {n}</p>"),
        endpoints: Vec::new(),
        explanation: None,
    }
}

/// Reads a whole list with `count=500`, writing `during` new entries after the first page.
async fn read_all<F, Fut>(api: &Api, user: &User, path: &str, mut during: F) -> Vec<Value>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut all = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let sep = if path.contains('?') { '&' } else { '?' };
        let mut url = format!("{path}{sep}count=500");
        if let Some(t) = &token {
            url.push_str(&format!("&continuationToken={t}"));
        }
        let page = api.get(user, &url).await.ok().clone();
        let data = page["data"].as_array().unwrap();
        assert!(data.len() <= 500);
        all.extend(data.iter().cloned());
        during().await;
        match page["continuationToken"].as_str() {
            Some(t) => token = Some(t.to_string()),
            None => return all,
        }
    }
}

both!(history_pages_newest_first_without_misses_or_repeats_while_checks_arrive);
async fn history_pages_newest_first_without_misses_or_repeats_while_checks_arrive() {
    let api = Api::start().await;
    let user = api.user("ann@example.com").await;
    let task = id(&api
        .task(&user, monitor("tea", "https://example.com/"))
        .await);
    let base = DateTime::from_timestamp(Utc::now().timestamp() - 86_400, 0).unwrap();
    for i in 0..1200 {
        // Every third check changes the value; every 100th fails.
        let data = if i % 100 == 99 {
            ClientData::failure(at(base, i), "HTTP 503".into())
        } else {
            ClientData::value(at(base, i), format!("price {}", i / 3))
        };
        api.store
            .append_entry(&Series::Task(task.clone()), &data)
            .await
            .unwrap();
    }
    let mut next = 0;
    let store = api.store.clone();
    let t = task.clone();
    let all = read_all(
        &api,
        &user,
        &format!("/thirdparty/v1/data/list/{task}"),
        || {
            next += 1;
            let (store, t, n) = (store.clone(), t.clone(), next);
            async move {
                let data = ClientData::value(Utc::now() + Duration::seconds(n), format!("new {n}"));
                store.append_entry(&Series::Task(t), &data).await.unwrap();
            }
        },
    )
    .await;
    assert_eq!(
        all.len(),
        1200,
        "entries written during paging are newer and not in this walk"
    );
    let times: Vec<DateTime<Utc>> = all
        .iter()
        .map(|d| d["lastCheckTimestamp"].as_str().unwrap().parse().unwrap())
        .collect();
    assert_eq!(times[0], at(base, 1199));
    assert_eq!(times[1199], at(base, 0));
    assert!(
        times.windows(2).all(|w| w[0] > w[1]),
        "newest first, no repeats"
    );
    assert_eq!(all[0]["error"], "HTTP 503");
    assert_eq!(all[1]["raw"], "price 399");
    // The value changed at the first check that showed it and is carried by the failure too.
    assert_eq!(
        all[1]["valueChangedTimestamp"]
            .as_str()
            .unwrap()
            .parse::<DateTime<Utc>>()
            .unwrap(),
        at(base, 1197)
    );
    assert_eq!(
        all[0]["valueChangedTimestamp"],
        all[1]["valueChangedTimestamp"]
    );
    assert_eq!(all[1]["diff"], Value::Null, "no diff unless asked");

    // The monitor's data is its newest check.
    let monitor = api.get(&user, &format!("/thirdparty/v1/task/{task}")).await;
    assert!(
        monitor.ok()["data"]["raw"]
            .as_str()
            .unwrap()
            .starts_with("new ")
    );
}

both!(history_ranges_counts_and_diffs);
async fn history_ranges_counts_and_diffs() {
    let api = Api::start().await;
    let user = api.user("bob@example.com").await;
    let task = id(&api
        .task(&user, monitor("tea", "https://example.com/"))
        .await);
    let base: DateTime<Utc> = "2026-01-01T00:00:00Z".parse().unwrap();
    let values = [
        Some("Tea 3.50 EUR"),
        Some("Tea 3.90 EUR"),
        None,
        Some("Tea 3.90 EUR"),
        Some("Coffee 3.90 EUR"),
    ];
    for (i, value) in values.iter().enumerate() {
        let data = match value {
            Some(v) => ClientData::value(at(base, i as i64 * 60), v.to_string()),
            None => ClientData::failure(at(base, i as i64 * 60), "timeout".into()),
        };
        api.store
            .append_entry(&Series::Task(task.clone()), &data)
            .await
            .unwrap();
    }
    let path = format!("/thirdparty/v1/data/list/{task}");
    let page = api
        .get(&user, &format!("{path}?returnDiff=true&count=2"))
        .await
        .ok()
        .clone();
    let data = page["data"].as_array().unwrap();
    assert_eq!(data.len(), 2);
    assert_eq!(
        data[0]["diff"],
        json!([{"operation": 0, "text": "Tea"}, {"operation": 1, "text": "Coffee"}, {"operation": 2, "text": " 3.90 EUR"}])
    );
    // The diff looks past the failed check, beyond the page, to the previous value.
    assert_eq!(
        data[1]["diff"],
        json!([{"operation": 2, "text": "Tea 3.90 EUR"}])
    );
    let token = page["continuationToken"].as_str().unwrap();
    let rest = api
        .get(
            &user,
            &format!("{path}?returnDiff=true&count=10&continuationToken={token}"),
        )
        .await
        .ok()
        .clone();
    let rest = rest["data"].as_array().unwrap();
    assert_eq!(rest.len(), 3);
    assert_eq!(rest[0]["error"], "timeout");
    assert_eq!(rest[0]["diff"], Value::Null);
    assert_eq!(
        rest[1]["diff"],
        json!([{"operation": 2, "text": "Tea "}, {"operation": 0, "text": "3.50"}, {"operation": 1, "text": "3.90"}, {"operation": 2, "text": " EUR"}])
    );
    assert_eq!(
        rest[2]["diff"],
        json!([{"operation": 1, "text": "Tea 3.50 EUR"}]),
        "the first value is all new"
    );

    // from and to are inclusive.
    let ranged = api
        .get(
            &user,
            &format!("{path}?from=2026-01-01T00:01:00Z&to=2026-01-01T00:03:00%2B00:00"),
        )
        .await
        .ok()
        .clone();
    let ranged = ranged["data"].as_array().unwrap();
    assert_eq!(ranged.len(), 3);
    assert_eq!(ranged[0]["lastCheckTimestamp"], "2026-01-01T00:03:00Z");

    for bad in [
        "from=yesterday",
        "to=2026-13-01T00:00:00Z",
        "count=0",
        "count=501",
        "returnDiff=maybe",
    ] {
        let reply = api.get(&user, &format!("{path}?{bad}")).await;
        assert_eq!(reply.status, 400, "{bad}: {}", reply.text);
        reply.problem(400);
    }
    // Tampered and foreign tokens.
    let mut tampered = token.to_string();
    tampered.replace_range(0..1, if tampered.starts_with('e') { "f" } else { "e" });
    api.get(&user, &format!("{path}?continuationToken={tampered}"))
        .await
        .field_error("continuationToken", "not a continuation token");
    let other = id(&api
        .task(&user, monitor("other", "https://example.com/"))
        .await);
    api.get(
        &user,
        &format!("/thirdparty/v1/data/list/{other}?continuationToken={token}"),
    )
    .await
    .field_error("continuationToken", "not a continuation token");
}

both!(notifications_page_newest_first_and_show_html_only_when_asked);
async fn notifications_page_newest_first_and_show_html_only_when_asked() {
    let api = Api::start().await;
    let user = api.user("cy@example.com").await;
    let tea = id(&api
        .task(&user, monitor("tea", "https://example.com/tea"))
        .await);
    let coffee = id(&api
        .task(&user, monitor("coffee", "https://example.com/coffee"))
        .await);
    let base = Utc::now() - Duration::days(1);
    for i in 0..1200usize {
        let task = if i % 4 == 0 { &coffee } else { &tea };
        api.store
            .insert_notification(&notification(task, at(base, i as i64), i))
            .await
            .unwrap();
    }
    let store = api.store.clone();
    let t = tea.clone();
    let mut n = 0;
    let all = read_all(&api, &user, "/thirdparty/v1/notification/list", || {
        n += 1;
        let (store, t, n) = (store.clone(), t.clone(), n);
        async move {
            store
                .insert_notification(&notification(
                    &t,
                    Utc::now() + Duration::seconds(n as i64),
                    5000 + n,
                ))
                .await
                .unwrap();
        }
    })
    .await;
    assert_eq!(all.len(), 1200);
    let ids: HashSet<&str> = all.iter().map(|n| n["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 1200, "no repeats");
    assert_eq!(all[0]["current"], "value 1199");
    assert_eq!(all[1199]["current"], "value 0");
    assert_eq!(all[0]["type"], "NotEq");
    assert_eq!(all[0]["taskName"], "tea");
    assert_eq!(all[0]["url"], "https://example.com/");
    assert!(all[0]["serverTime"].is_string());
    assert_eq!(all[0]["html"], Value::Null);

    let only_coffee = api
        .get(
            &user,
            &format!("/thirdparty/v1/notification/list?taskId={coffee}&count=500&html=true"),
        )
        .await
        .ok()
        .clone();
    let data = only_coffee["data"].as_array().unwrap();
    assert_eq!(data.len(), 300);
    assert!(data.iter().all(|n| n["taskId"] == coffee.as_str()));
    assert_eq!(data[0]["html"], "<p>change 1196</p>");
    assert_eq!(only_coffee["continuationToken"], Value::Null);

    let content = api
        .get(
            &user,
            &format!(
                "/thirdparty/v1/notification/{}",
                data[0]["id"].as_str().unwrap()
            ),
        )
        .await
        .ok()
        .clone();
    assert_eq!(content["jobType"], "SinglePage");
    assert_eq!(content["syntheticExpression"], "content changed");
    assert_eq!(content["name"], "coffee");
    assert_eq!(content["html"], "<p>change 1196</p>");
    assert_eq!(content["timestampUtc"], data[0]["timestamp"]);

    api.get(
        &user,
        "/thirdparty/v1/notification/01a208a4-0000-7000-8000-000000000000",
    )
    .await
    .problem(404);
    api.get(
        &user,
        "/thirdparty/v1/notification/list?taskId=01a208a4-0000-7000-8000-000000000000",
    )
    .await
    .problem(404);
    let from = (base + Duration::seconds(1190)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let to = (base + Duration::seconds(1195)).to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let ranged = api
        .get(
            &user,
            &format!("/thirdparty/v1/notification/list?from={from}&to={to}"),
        )
        .await
        .ok()
        .clone();
    assert!(ranged["data"].as_array().unwrap().len() >= 5);
}
