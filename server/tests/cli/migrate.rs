//! `wachet migrate` as an operator runs it: a service that ran on a SQLite file, moved to a
//! private PostgreSQL cluster, serves the same account, folders, monitors, history and
//! notifications there and goes on checking; a second move into the now filled database, and
//! arguments that name no SQLite file or no PostgreSQL database, are refused, changing nothing.

use super::backup::Serve;
use super::{pg, stderr, stdout};
use reqwest::Method;
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

async fn wachet(args: &[&str]) -> std::process::Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_wachet"))
        .args(args)
        .output()
        .await
        .unwrap()
}

/// What a user reads of their account through the API: folders, monitors, each monitor's
/// history and the notifications.
async fn everything(serve: &Serve) -> Value {
    let read = |path: String| async move {
        let (status, body) = serve.call(Method::GET, &path, None).await;
        assert_eq!(status, 200, "{path}: {body}");
        body
    };
    let folders = read("/thirdparty/v1/folder/list".into()).await;
    let tasks = read("/thirdparty/v1/task/search".into()).await;
    let mut history = serde_json::Map::new();
    for task in tasks.as_array().expect("a list of monitors") {
        let id = task["id"].as_str().unwrap();
        let data = read(format!("/thirdparty/v1/data/list/{id}?count=500")).await;
        history.insert(id.to_string(), data);
    }
    let mut notifications = read("/thirdparty/v1/notification/list".into()).await;
    // The time of the answer, not of anything stored.
    for note in notifications["data"].as_array_mut().into_iter().flatten() {
        note.as_object_mut().unwrap().remove("serverTime");
    }
    json!({"folders": folders, "tasks": tasks, "history": history, "notifications": notifications})
}

/// Where `a` and `b` differ, as JSON paths with both values.
fn differences(a: &Value, b: &Value, at: &str, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for key in x.keys().chain(y.keys().filter(|k| !x.contains_key(*k))) {
                let (left, right) = (&x.get(key), &y.get(key));
                match (left, right) {
                    (Some(l), Some(r)) => differences(l, r, &format!("{at}.{key}"), out),
                    _ => out.push(format!("{at}.{key}: {left:?} / {right:?}")),
                }
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (l, r)) in x.iter().zip(y).enumerate() {
                differences(l, r, &format!("{at}[{i}]"), out);
            }
        }
        _ if a != b => out.push(format!("{at}: {a} / {b}")),
        _ => {}
    }
}

/// Values stored as deltas against another, in the SQLite file.
async fn sqlite_deltas(db: &Path) -> i64 {
    use sqlx::{ConnectOptions, Connection};
    let mut conn = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(db)
        .read_only(true)
        .connect()
        .await
        .unwrap();
    let n = sqlx::query_scalar("SELECT count(*) FROM contents WHERE codec = 2")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();
    n
}

/// Rows of a few tables of the PostgreSQL database, and its values stored as deltas.
async fn pg_rows(url: &str) -> Vec<i64> {
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
    let rows = sqlx::query_as::<_, (i64, i64, i64, i64, i64)>(
        "SELECT (SELECT count(*) FROM users), (SELECT count(*) FROM tasks), \
         (SELECT count(*) FROM entries), (SELECT count(*) FROM notifications), \
         (SELECT count(*) FROM contents WHERE codec = 2)",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    conn.close().await.unwrap();
    vec![rows.0, rows.1, rows.2, rows.3, rows.4]
}

/// A notification of `task` in the file `db`, to be delivered to `hook` (the store's own write
/// of a raised alert, with its deliveries in the outbox).
async fn notify(db: &Path, task: &str, hook: String) {
    use wachet::model::{Alert, AlertType, NotificationEndpoint};
    use wachet_server::store::testing::Seed;
    use wachet_server::store::{NewNotification, sqlite::SqliteStore};
    let store = SqliteStore::open(db).await.unwrap();
    let endpoint: NotificationEndpoint =
        serde_json::from_value(json!({"type": "Webhook", "value": hook})).unwrap();
    store
        .insert_notification(&NewNotification {
            task_id: task.to_string(),
            page_url: None,
            job_type: wachet::model::JobType::SinglePage,
            alert: Alert {
                kind: AlertType::NotEq,
                value: None,
                parameters: None,
                remind_every_seconds: None,
            },
            created_at: chrono_now(),
            current: Some("the winter edition".into()),
            comparand: Some("the autumn edition".into()),
            error: None,
            url: None,
            synthetic_expression: "content changed".into(),
            html: "<p>the winter edition</p>".into(),
            endpoints: vec![endpoint],
            explanation: None,
        })
        .await
        .unwrap();
    store.close().await;
}

/// Now in UTC milliseconds.
fn chrono_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// A page of words that do not compress, so its stored values pass the delta's threshold,
/// with its edition's name.
fn edition(page: u64, n: usize) -> String {
    let mut seed = page;
    let words: String = (0..800)
        .map(|_| {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            format!("{:x} ", seed >> 40)
        })
        .collect();
    // A word, not a number: a number that moves could be taken for a counter.
    let season = ["spring", "summer", "autumn", "winter", "harvest"][n % 5];
    format!("<p>{words}</p><p>the {season} edition</p>")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_moved_from_sqlite_to_postgresql_goes_on_where_it_stopped() {
    use wachet::testing::{FixtureServer, Reply};
    let Some(url) = pg::database().await else {
        return;
    };
    // A page long enough that the values it replaces are stored as deltas, changed by hand
    // (a value changing on every fetch would be learned as noise).
    let site = FixtureServer::builder()
        .page("/news/0", edition(0, 0))
        .page("/news/1", edition(1, 0))
        .page("/hook", "ok")
        .start()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("wachet.db");
    let (serve, login) = Serve::start(&db, None, &[]).await;
    let (status, folder) = serve
        .call(
            Method::POST,
            "/thirdparty/v1/folder",
            Some(json!({"name": "News"})),
        )
        .await;
    assert_eq!(status, 200, "{folder}");
    for i in 0..2 {
        let body = json!({"name": format!("news {i}"), "url": site.url(&format!("/news/{i}")),
                          "folderId": folder["id"], "recurrenceInSeconds": 1,
                          "alerts": [{"type": "NotEq"}],
                          "notificationEndpoints": [{"type": "Webhook", "value": site.url("/hook")}]});
        let (status, reply) = serve
            .call(Method::PUT, "/thirdparty/v1/task", Some(body))
            .await;
        assert_eq!(status, 200, "{reply}");
    }
    let mut tasks = Vec::new();
    let (_, found) = serve
        .call(Method::GET, "/thirdparty/v1/task/search", None)
        .await;
    for task in found.as_array().unwrap() {
        tasks.push(task["id"].as_str().unwrap().to_string());
    }
    // Each first check fetches its page a few more times to learn its noise: a change during
    // those would be learned as noise, and notify nothing.
    let started = Instant::now();
    for page in 0..2 {
        while site.hits(&format!("/news/{page}")) < 1 + wachet::alerts::noise::QUICK_SAMPLES {
            assert!(started.elapsed() < Duration::from_secs(30), "samples taken");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    for n in 1..=3 {
        let started = Instant::now();
        for task in &tasks {
            loop {
                let path = format!("/thirdparty/v1/data/list/{task}?count=500");
                let (_, data) = serve.call(Method::GET, &path, None).await;
                if data["data"].as_array().map_or(0, Vec::len) >= n {
                    break;
                }
                assert!(started.elapsed() < Duration::from_secs(30), "checks run");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        for page in 0..2 {
            site.set(format!("/news/{page}"), Reply::html(edition(page, n)));
        }
    }
    serve.stop().await;
    assert!(sqlite_deltas(&db).await > 0, "the history holds deltas");
    notify(&db, &tasks[0], site.url("/hook")).await;

    // What the account reads before the move, with no checks running.
    let api_only = ["--roles", "api"];
    let (old, _) = Serve::start(&db, Some(login.clone()), &api_only).await;
    let before = everything(&old).await;
    old.stop().await;
    assert!(
        before["notifications"]["data"]
            .as_array()
            .is_some_and(|notes| !notes.is_empty()),
        "{}",
        before["notifications"]
    );

    let from = format!("sqlite:{}", db.display());
    // While a service still runs on the file: refused before the target is touched.
    let (running, _) = Serve::start(&db, Some(login.clone()), &api_only).await;
    let refused = wachet(&["migrate", "--from", &from, "--to", &url]).await;
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("in use by a running wachet"),
        "{}",
        stderr(&refused)
    );
    running.stop().await;

    let out = wachet(&["migrate", "--from", &from, "--to", &url]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let said = stdout(&out);
    assert!(
        said.contains("entries") && said.contains("row counts checked"),
        "{said}"
    );
    let moved = pg_rows(&url).await;
    assert!(moved[4] > 0, "the deltas moved as deltas: {moved:?}");

    // Into a database that holds data now: refused, and nothing changes.
    let again = wachet(&["migrate", "--from", &from, "--to", &url]).await;
    assert!(!again.status.success());
    assert!(stderr(&again).contains("not empty"), "{}", stderr(&again));
    assert_eq!(pg_rows(&url).await, moved);
    // Arguments that name no SQLite file, no wachet database or no PostgreSQL database.
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "not a database").unwrap();
    let bad = [
        (vec!["--from", &from, "--to", "wachet.db"], "PostgreSQL URL"),
        (vec!["--from", &url, "--to", &url], "SQLite file"),
        (
            vec!["--from", text.to_str().unwrap(), "--to", &url],
            "not a wachet database",
        ),
    ];
    for (args, why) in bad {
        let out = wachet(&[&["migrate"][..], &args].concat()).await;
        assert!(!out.status.success(), "{args:?} moved");
        assert!(stderr(&out).contains(why), "{args:?}: {}", stderr(&out));
    }
    assert_eq!(pg_rows(&url).await, moved);

    // The same API key logs in on the new database, and reads back the same.
    let (new, _) = Serve::start(Path::new(&url), Some(login.clone()), &api_only).await;
    let after = everything(&new).await;
    new.stop().await;
    let mut differ = Vec::new();
    differences(&before, &after, "", &mut differ);
    assert!(differ.is_empty(), "read back otherwise: {differ:?}");

    // Started as it was, the service checks the same monitors on their schedule.
    site.set("/news/0", Reply::html(edition(0, 4)));
    let hits = site.hits("/news/0");
    let (new, _) = Serve::start(Path::new(&url), Some(login), &[]).await;
    let started = Instant::now();
    while site.hits("/news/0") < hits + 2 {
        assert!(started.elapsed() < Duration::from_secs(30), "checks go on");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    new.stop().await;
    assert!(pg_rows(&url).await[2] > moved[2], "the history grows on");
}

/// Whether another connection to `url` is inserting history entries: the copy under way.
async fn copying(url: &str) -> bool {
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
    let busy: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() \
         AND pid <> pg_backend_pid() AND query ILIKE 'INSERT INTO entries%'",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    conn.close().await.unwrap();
    busy > 0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_migrate_killed_half_way_leaves_nothing_and_runs_again_to_the_end() {
    let Some(url) = pg::database().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("wachet.db");
    let (serve, _) = Serve::start(&db, None, &["--roles", "api"]).await;
    let monitor = json!({"name": "long history", "url": "https://example.org/",
                         "recurrenceInSeconds": 86400});
    let (status, task) = serve
        .call(Method::PUT, "/thirdparty/v1/task", Some(monitor))
        .await;
    assert_eq!(status, 200, "{task}");
    serve.stop().await;
    // A history long enough that the copy takes a while: 100,000 failed checks, written
    // straight into the file.
    let entries = 100_000;
    {
        use sqlx::{ConnectOptions, Connection};
        let mut conn = sqlx::sqlite::SqliteConnectOptions::new()
            .filename(&db)
            .connect()
            .await
            .unwrap();
        sqlx::query(
            "WITH RECURSIVE n (i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) \
             INSERT INTO entries (task_id, checked_at, error) SELECT ?, i, 'timed out' FROM n",
        )
        .bind(entries)
        .bind(task["id"].as_str().unwrap())
        .execute(&mut conn)
        .await
        .unwrap();
        conn.close().await.unwrap();
    }
    let from = format!("sqlite:{}", db.display());

    // Unreachable: a clear error, at once.
    let out = wachet(&[
        "migrate",
        "--from",
        &from,
        "--to",
        "postgres://wachet@127.0.0.1:9/none",
    ])
    .await;
    assert!(!out.status.success());
    assert!(stderr(&out).contains("127.0.0.1:9"), "{}", stderr(&out));

    // Killed while it copies the history: nothing is in the target.
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_wachet"))
        .args(["migrate", "--from", &from, "--to", &url])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while !copying(&url).await {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the copy ended before it was seen"
        );
        assert!(started.elapsed() < Duration::from_secs(60), "copy started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    child.start_kill().unwrap();
    child.wait().await.unwrap();
    assert_eq!(pg_rows(&url).await, [0, 0, 0, 0, 0], "nothing half-written");

    // Run again: it finishes, with every entry.
    let out = wachet(&["migrate", "--from", &from, "--to", &url]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let moved = pg_rows(&url).await;
    assert_eq!((moved[0], moved[1]), (1, 1), "{moved:?}");
    assert!(moved[2] >= entries, "{moved:?}");
}
