//! Storage of history: the retention keeps the newest entries of each series, values no entry
//! names any more are collected (also after a monitor is deleted) while shared ones stay, and a
//! value stored compressed reads back byte for byte. The database is read with a connection of
//! its own, as an operator would look at it.

use crate::{Api, Setup, User, id, monitor};
use chrono::{DateTime, Duration, Utc};
use serde_json::Value;
use wachet::model::ClientData;
use wachet_server::store::Series;

async fn with_retention(entries: u32) -> Api {
    let mut setup = Setup::api();
    setup.store.history_retention = entries;
    Api::start_as(setup).await
}

fn base() -> DateTime<Utc> {
    DateTime::from_timestamp(Utc::now().timestamp() - 86_400, 0).unwrap()
}

/// Runs the collector until it finds nothing more; returns how many values went.
async fn collect(api: &Api) -> u64 {
    let mut total = 0;
    loop {
        let n = api.store.collect_garbage(4).await.unwrap();
        total += n;
        if n < 4 {
            return total;
        }
    }
}

/// The values of a history, newest first, read through the API.
async fn values(api: &Api, user: &User, id: &str) -> Vec<Value> {
    let reply = api
        .get(user, &format!("/thirdparty/v1/data/list/{id}?count=500"))
        .await;
    reply.ok()["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["raw"].clone())
        .collect()
}

both!(the_retention_keeps_the_newest_entries_of_the_monitor_and_of_each_page);
async fn the_retention_keeps_the_newest_entries_of_the_monitor_and_of_each_page() {
    let api = with_retention(5).await;
    let user = api.user("ann@example.com").await;
    let mut portal = monitor("shop", "https://example.com/");
    portal["jobType"] = "Portal".into();
    let task = id(&api.task(&user, portal).await);
    let at = |s: i64| base() + Duration::seconds(s);
    for i in 0..12 {
        let page = Series::Page {
            task_id: task.clone(),
            url: "https://example.com/a".into(),
            name: None,
        };
        api.store
            .append_entry(&page, &ClientData::value(at(i), format!("page {i}")))
            .await
            .unwrap();
        api.store
            .append_entry(
                &Series::Task(task.clone()),
                &ClientData::value(at(i), format!("own {i}")),
            )
            .await
            .unwrap();
    }
    let own = values(&api, &user, &task).await;
    let expected: Vec<Value> = (7..12).rev().map(|i| format!("own {i}").into()).collect();
    assert_eq!(own, expected);
    let pages = api
        .get(&user, &format!("/thirdparty/v1/task/{task}/pages"))
        .await;
    let page = pages.ok()[0]["id"].as_str().unwrap().to_string();
    let expected: Vec<Value> = (7..12).rev().map(|i| format!("page {i}").into()).collect();
    assert_eq!(values(&api, &user, &page).await, expected);
    // The latest data is still the newest check.
    let shown = api.get(&user, &format!("/thirdparty/v1/task/{task}")).await;
    assert_eq!(shown.ok()["data"]["raw"], "own 11");

    // The pruned values are garbage; the kept ones are not.
    let pool = api.sql().await;
    assert_eq!(pool.count("SELECT count(*) FROM contents").await, 24);
    assert_eq!(collect(&api).await, 14);
    assert_eq!(pool.count("SELECT count(*) FROM contents").await, 10);
    assert_eq!(values(&api, &user, &task).await.len(), 5);

    // A run of failed checks longer than the retention keeps the last value found, which the
    // alerts compare the next value with.
    for i in 12..20 {
        api.store
            .append_entry(
                &Series::Task(task.clone()),
                &ClientData::failure(at(i), "HTTP 503".into()),
            )
            .await
            .unwrap();
    }
    let own = values(&api, &user, &task).await;
    assert_eq!(own.len(), 5, "{own:?}");
    assert!(own[..4].iter().all(Value::is_null), "{own:?}");
    assert_eq!(own[4], "own 11");
}

both!(the_values_of_a_deleted_monitor_go_and_values_it_shared_stay);
async fn the_values_of_a_deleted_monitor_go_and_values_it_shared_stay() {
    let api = Api::start().await;
    let user = api.user("ann@example.com").await;
    let doomed = id(&api.task(&user, monitor("a", "https://example.com/a")).await);
    let kept = id(&api.task(&user, monitor("b", "https://example.com/b")).await);
    let at = |s: i64| base() + Duration::seconds(s);
    for i in 0..10 {
        api.store
            .append_entry(
                &Series::Task(doomed.clone()),
                &ClientData::value(at(i), format!("only a {i}")),
            )
            .await
            .unwrap();
    }
    for task in [&doomed, &kept] {
        api.store
            .append_entry(
                &Series::Task(task.clone()),
                &ClientData::value(at(20), "shared".into()),
            )
            .await
            .unwrap();
    }
    let pool = api.sql().await;
    assert_eq!(pool.count("SELECT count(*) FROM contents").await, 11);
    assert_eq!(collect(&api).await, 0, "nothing is garbage yet");

    api.delete(&user, &format!("/thirdparty/v1/task/{doomed}"))
        .await
        .ok();
    assert_eq!(collect(&api).await, 10);
    assert_eq!(pool.count("SELECT count(*) FROM contents").await, 1);
    assert_eq!(
        values(&api, &user, &kept).await,
        vec![Value::from("shared")]
    );

    // A folder's monitors go the same way.
    let folder = api.folder(&user, "f", None).await;
    let mut inside = monitor("c", "https://example.com/c");
    inside["folderId"] = folder.clone().into();
    let inside = id(&api.task(&user, inside).await);
    api.store
        .append_entry(
            &Series::Task(inside),
            &ClientData::value(at(30), "in the folder".into()),
        )
        .await
        .unwrap();
    api.delete(&user, &format!("/thirdparty/v1/folder/{folder}"))
        .await
        .ok();
    assert_eq!(collect(&api).await, 1);
    assert_eq!(pool.count("SELECT count(*) FROM contents").await, 1);
}

both!(a_large_value_is_stored_compressed_and_reads_back_identically);
async fn a_large_value_is_stored_compressed_and_reads_back_identically() {
    let api = Api::start().await;
    let user = api.user("ann@example.com").await;
    let task = id(&api
        .task(&user, monitor("big", "https://example.com/"))
        .await);
    // 100 KB of a page's text, with non-ASCII characters and line breaks.
    let large: String = (0..4_000)
        .map(|i| format!("Zeile {i}: Grüße — €{}.50\r\n", i % 97))
        .collect::<String>()
        .chars()
        .take(100_000)
        .collect();
    let small = "3.50 EUR".to_string();
    let at = base();
    for (i, value) in [&large, &small].into_iter().enumerate() {
        api.store
            .append_entry(
                &Series::Task(task.clone()),
                &ClientData::value(at + Duration::seconds(i as i64), value.clone()),
            )
            .await
            .unwrap();
    }
    assert_eq!(
        values(&api, &user, &task).await,
        vec![Value::from(small.as_str()), Value::from(large.as_str())]
    );
    let pool = api.sql().await;
    let plain = "SELECT length(body) FROM contents WHERE codec = 0";
    assert_eq!(pool.count("SELECT count(*) FROM contents").await, 2);
    assert_eq!(
        pool.count(plain).await,
        small.len() as i64,
        "a short value is plain"
    );
    let zstd = pool
        .count("SELECT length(body) FROM contents WHERE codec = 1")
        .await;
    assert!(zstd > 0, "a long value is zstd");
    assert!(
        (zstd as usize) < large.len() / 4,
        "compressed to {zstd} bytes of {}",
        large.len()
    );
}

/// The cost of history in the database: 100,000 checks of an unchanged 100 KB page, each
/// appended through the store as the scheduler does, with a retention that keeps them all.
/// Slow in a debug build; run it in release:
/// `cargo test --release -p wachet-server --test service -- --ignored --nocapture hundred_thousand`
// SQLite only: the size of the file.
#[tokio::test]
#[ignore = "appends 100,000 entries; run on demand, in release"]
async fn a_hundred_thousand_checks_of_an_unchanged_100_kb_page_take_under_20_mb() {
    let api = with_retention(1_000_000).await;
    let user = api.user("ann@example.com").await;
    let task = id(&api
        .task(&user, monitor("big", "https://example.com/"))
        .await);
    let page: String = (0..100_000u32)
        .map(|i| char::from(b'a' + ((i.wrapping_mul(2_654_435_761) >> 27) % 26) as u8))
        .collect();
    let start = base() - Duration::days(100);
    let began = std::time::Instant::now();
    for i in 0..100_000 {
        api.store
            .append_entry(
                &Series::Task(task.clone()),
                &ClientData::value(start + Duration::seconds(60 * i), page.clone()),
            )
            .await
            .unwrap();
    }
    let took = began.elapsed();
    let path = api.db_path();
    // Kept until the sizes are read.
    let _database = api.shutdown().await;
    let size = std::fs::metadata(&path).unwrap().len();
    let wal = std::fs::metadata(path.with_extension("db-wal"))
        .map(|m| m.len())
        .unwrap_or(0);
    println!(
        "100,000 checks of an unchanged 100 KB page: database {:.2} MB (+ WAL {:.2} MB), \
         appended in {:.1} s",
        size as f64 / 1e6,
        wal as f64 / 1e6,
        took.as_secs_f64()
    );
    assert!(size + wal < 20_000_000, "{size} + {wal} bytes");
}
