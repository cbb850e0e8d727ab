//! Ends a service meets: SIGTERM with a request in flight, SIGKILL in the middle of checks,
//! deliveries, delta history, grouped writes and migrations, a database that goes away for a
//! while; after each restart nothing reported stored is lost and the work goes on.

use crate::*;
use serde_json::{Value, json};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_a_request_in_flight_finish() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap();
    let server = serve(&dir.path().join("wachet.db"), &[]).await;
    let admin = account(&server.printed);
    let token = server.login(&admin).await;
    // A request whose body is still on its way when the signal arrives.
    let body =
        json!({"name": "in flight", "url": "http://127.0.0.1:9/", "recurrenceInSeconds": 3600})
            .to_string();
    let (head, tail) = body.split_at(body.len() / 2);
    let addr = server.base.trim_start_matches("http://").to_string();
    let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let request = format!(
        "PUT /thirdparty/v1/task HTTP/1.1\r\nHost: {addr}\r\nAuthorization: bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{head}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let pid = nix::unistd::Pid::from_raw(server.child.id().unwrap() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    stream.write_all(tail.as_bytes()).await.unwrap();
    let mut response = String::new();
    tokio::time::timeout(WAIT, stream.read_to_string(&mut response))
        .await
        .unwrap()
        .unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.contains("\"name\":\"in flight\""), "{response}");
    let mut child = server.child;
    let status = tokio::time::timeout(WAIT, child.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status.code(), Some(0));
    // No new connection is accepted after the signal.
    assert!(tokio::net::TcpStream::connect(&addr).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_check_killed_with_the_process_runs_again_after_a_restart() {
    use wachet::testing::{FixtureServer, Reply};
    let site = FixtureServer::builder()
        .reply(
            "/slow",
            Reply::html("<p>the value</p>").delay(Duration::from_secs(4)),
        )
        .start()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("wachet.db");
    let flags = ["--allow-private-networks", "--check-lease", "2"];
    let first = serve(&db, &flags).await;
    let admin = account(&first.printed);
    let token = first.login(&admin).await;
    let body = json!({"url": site.url("/slow"), "recurrenceInSeconds": 3600});
    let (status, task) = first
        .call(
            reqwest::Method::PUT,
            "/thirdparty/v1/task",
            Some(&token),
            Some(body),
        )
        .await;
    assert_eq!(status, 200, "{task}");
    // Kill the service with SIGKILL while its first check waits for the page.
    for _ in 0..200 {
        if site.hits("/slow") >= 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(site.hits("/slow"), 1);
    let mut child = first.child;
    child.kill().await.unwrap();

    // After a restart the lease runs out and the check runs again; nothing was lost.
    let again = serve(&db, &flags).await;
    let path = format!("/thirdparty/v1/data/list/{}", task["id"].as_str().unwrap());
    let mut entries = Value::Null;
    for _ in 0..300 {
        let (status, reply) = again.get(&path, Some(&token)).await;
        assert_eq!(status, 200, "the monitor and the token survived: {reply}");
        entries = reply["data"].clone();
        if entries.as_array().is_some_and(|e| !e.is_empty()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(entries[0]["raw"], "the value", "{entries}");
    assert!(site.hits("/slow") >= 2);
    assert_eq!(again.terminate().await, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_killed_with_the_process_is_delivered_after_a_restart() {
    use std::sync::{Arc, Mutex};
    use wachet::testing::{FixtureServer, Reply};
    let site = FixtureServer::builder()
        .page("/tea", "<p>3.50 EUR</p>")
        .start()
        .await
        .unwrap();
    // A webhook receiver that holds the first request open (the service is killed meanwhile)
    // and takes every later one; it keeps each request's delivery id.
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let recorded = seen.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: axum::http::HeaderMap| {
            let recorded = recorded.clone();
            async move {
                let id = headers
                    .get("x-wachet-delivery")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
                    .to_string();
                let first = {
                    let mut seen = recorded.lock().unwrap();
                    seen.push(id);
                    seen.len() == 1
                };
                if first {
                    tokio::time::sleep(Duration::from_secs(120)).await;
                }
                axum::http::StatusCode::OK
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hook = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });

    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("wachet.db");
    // A try may take 3 s, so a delivery lost in a crash is claimed again 6 s after.
    let flags = [
        "--allow-private-networks",
        "--min-recurrence",
        "1",
        "--delivery-timeout",
        "3",
    ];
    let first = serve(&db, &flags).await;
    let admin = account(&first.printed);
    let token = first.login(&admin).await;
    let body = json!({"name": "Tea", "url": site.url("/tea"), "recurrenceInSeconds": 1,
                      "alerts": [{"type": "NotEq"}],
                      "notificationEndpoints": [{"type": "Webhook", "value": hook}]});
    let (status, task) = first
        .call(
            reqwest::Method::PUT,
            "/thirdparty/v1/task",
            Some(&token),
            Some(body),
        )
        .await;
    assert_eq!(status, 200, "{task}");
    let path = format!("/thirdparty/v1/data/list/{}", task["id"].as_str().unwrap());
    for _ in 0..100 {
        let (_, reply) = first.get(&path, Some(&token)).await;
        if reply["data"].as_array().is_some_and(|d| !d.is_empty()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    site.set("/tea", Reply::html("<p>3.90 EUR</p>"));
    // SIGKILL while the receiver holds the delivery's request open.
    for _ in 0..300 {
        if !seen.lock().unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(seen.lock().unwrap().len(), 1, "the delivery is in flight");
    let mut child = first.child;
    child.kill().await.unwrap();
    child.wait().await.unwrap();
    // Nothing else changes the page: any later request is the same delivery again.
    let again = serve(&db, &flags).await;
    for _ in 0..300 {
        if seen.lock().unwrap().len() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let ids = seen.lock().unwrap().clone();
    assert!(ids.len() >= 2, "retried after the restart: {ids:?}");
    assert!(!ids[0].is_empty() && ids[1] == ids[0], "{ids:?}");

    // The outbox says delivered, read from the database file itself.
    let pool = sqlx::SqlitePool::connect_with(
        sqlx::sqlite::SqliteConnectOptions::new()
            .filename(&db)
            .read_only(true),
    )
    .await
    .unwrap();
    let mut state = (String::new(), 0);
    for _ in 0..100 {
        state = sqlx::query_as("SELECT state, attempts FROM deliveries WHERE id = ?")
            .bind(&ids[0])
            .fetch_one(&pool)
            .await
            .unwrap();
        if state.0 == "delivered" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(state.0, "delivered", "{state:?}");
    // The notification itself survived the crash, once.
    let (_, notes) = again
        .call(
            reqwest::Method::GET,
            &format!(
                "/thirdparty/v1/notification/list?taskId={}",
                task["id"].as_str().unwrap()
            ),
            Some(&token),
            None,
        )
        .await;
    assert_eq!(notes["data"].as_array().map(Vec::len), Some(1), "{notes}");
    pool.close().await;
    assert_eq!(again.terminate().await, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_that_goes_away_for_a_while_loses_no_check_and_the_service_recovers() {
    use sqlx::Connection;
    use wachet::testing::{FixtureServer, Reply};
    let Some(url) = pg::database().await else {
        return;
    };
    let site = FixtureServer::builder()
        .reply("/price", Reply::html("<p>3.50 EUR</p>"))
        .start()
        .await
        .unwrap();
    let db = Path::new(&url);
    // A check whose record the outage refused runs again once its lease (4 s) ran out.
    let flags = [
        "--allow-private-networks",
        "--min-recurrence",
        "1",
        "--check-lease",
        "4",
    ];
    let service = serve(db, &flags).await;
    let token = service.login(&account(&service.printed)).await;
    let body = json!({"url": site.url("/price"), "recurrenceInSeconds": 1});
    let (status, task) = service
        .call(
            reqwest::Method::PUT,
            "/thirdparty/v1/task",
            Some(&token),
            Some(body),
        )
        .await;
    assert_eq!(status, 200, "{task}");
    let id = task["id"].as_str().unwrap().to_string();
    assert!(!service.history(&token, &id).await.is_empty());

    // The database goes away: every connection of the service is cut and no new one is let in,
    // for three seconds.
    let options: sqlx::postgres::PgConnectOptions = url.parse().unwrap();
    let name = options.get_database().unwrap().to_string();
    // From another database of the cluster: a database cannot shut itself.
    let mut admin = sqlx::PgConnection::connect_with(&options.database("postgres"))
        .await
        .unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "ALTER DATABASE \"{name}\" ALLOW_CONNECTIONS false"
    )))
    .execute(&mut admin)
    .await
    .unwrap();
    let path = format!("/thirdparty/v1/data/list/{id}");
    let mut refused = Vec::new();
    for _ in 0..6 {
        sqlx::query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1")
            .bind(&name)
            .execute(&mut admin)
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(500)).await;
        let (status, _) = service.get(&path, Some(&token)).await;
        refused.push(status);
    }
    assert!(
        refused.iter().any(|status| *status >= 500),
        "the outage reached the service: {refused:?}"
    );
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "ALTER DATABASE \"{name}\" ALLOW_CONNECTIONS true"
    )))
    .execute(&mut admin)
    .await
    .unwrap();
    let back_at = chrono::Utc::now();

    // The service is still there, answers, and checks again: an entry newer than the outage.
    let mut after = 0;
    for _ in 0..300 {
        let (status, reply) = service.get(&path, Some(&token)).await;
        if status == 200 {
            after = reply["data"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|e| {
                    e["lastCheckTimestamp"]
                        .as_str()
                        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
                        .is_some_and(|t| t > back_at)
                })
                .count();
            if after >= 2 {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(after >= 2, "checks go on once the database is back");
    assert_eq!(service.terminate().await, Some(0), "no crash");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_migration_killed_half_way_is_run_again_and_finishes() {
    use sqlx::Connection;
    let Some(url) = pg::database().await else {
        return;
    };
    let db = Path::new(&url);
    // A database at the latest schema, taken back to before the folder counts (migration 4).
    let first = serve(db, &["--roles", "api"]).await;
    let token = first.login(&account(&first.printed)).await;
    let (status, folder) = first
        .call(
            reqwest::Method::POST,
            "/thirdparty/v1/folder",
            Some(&token),
            Some(json!({"name": "Shops"})),
        )
        .await;
    assert_eq!(status, 200, "{folder}");
    assert_eq!(first.terminate().await, Some(0));
    let mut admin = sqlx::PgConnection::connect(&url).await.unwrap();
    for statement in [
        "DROP TRIGGER tasks_counted_in ON tasks",
        "DROP TRIGGER tasks_counted_again ON tasks",
        "DROP FUNCTION tasks_count_folders()",
        "ALTER TABLE folders DROP COLUMN own_count, DROP COLUMN own_failed, \
         DROP COLUMN own_paused",
        "DELETE FROM _sqlx_migrations WHERE version = 4",
    ] {
        sqlx::query(statement).execute(&mut admin).await.unwrap();
    }
    // The migration is held half way (its ALTER TABLE waits for a lock another connection
    // holds) and its process killed there.
    let mut blocker = sqlx::PgConnection::connect(&url).await.unwrap();
    let mut held = blocker.begin().await.unwrap();
    sqlx::query("LOCK TABLE folders IN ACCESS EXCLUSIVE MODE")
        .execute(&mut *held)
        .await
        .unwrap();
    let mut killed = wachet()
        .args(["serve", "--listen", "127.0.0.1:0", "--db", &url])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut waiting = false;
    for _ in 0..300 {
        let (n,): (i64,) = sqlx::query_as(
            "SELECT count(*) FROM pg_locks WHERE relation = 'folders'::regclass AND NOT granted",
        )
        .fetch_one(&mut admin)
        .await
        .unwrap();
        if n > 0 {
            waiting = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(waiting, "the migration reached the locked table");
    killed.kill().await.unwrap();
    let _ = killed.wait().await;
    held.rollback().await.unwrap();

    // Run again, it finishes: the service starts, and the folder has its counts.
    let again = serve(db, &["--roles", "api"]).await;
    let (status, listing) = again.get("/thirdparty/v1/folder/list", Some(&token)).await;
    assert_eq!(status, 200, "{listing}");
    assert_eq!(listing["subfolders"][0]["count"], 0, "{listing}");
    let (done,): (i64,) =
        sqlx::query_as("SELECT count(*) FROM _sqlx_migrations WHERE version = 4 AND success")
            .fetch_one(&mut admin)
            .await
            .unwrap();
    assert_eq!(done, 1, "migration 4 is recorded as done");
    assert_eq!(again.terminate().await, Some(0));
}

/// The text of the ~100 KB page `page` a delta-history test serves to its `n`-th request: the
/// same 15,000 made-up words each time but for one, `changed{n}`, at a place that moves with
/// `n`, so every check stores a new value that differs from the others by a word or two. Each
/// page starts with its own word: a value several monitors share stays whole.
fn one_word_changed(page: usize, n: usize) -> String {
    let mut x: u64 = 21;
    let mut words: Vec<String> = (0..15_000)
        .map(|_| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let len = 3 + (x >> 60) as usize % 6;
            (0..len)
                .map(|i| char::from(b'a' + ((x >> (8 + 5 * i)) % 26) as u8))
                .collect()
        })
        .collect();
    let at = n.wrapping_mul(7_919) % words.len();
    words[at] = format!("changed{n}");
    format!("page{page} {}", words.join(" "))
}

/// How many stored values are deltas (codec 2) in the service's database.
async fn deltas_stored(db: &Path) -> i64 {
    use sqlx::Connection;
    let sql = "SELECT count(*) FROM contents WHERE codec = 2";
    let db = db.to_string_lossy();
    let (count,): (i64,) = if db.starts_with("postgres") {
        let mut conn = sqlx::PgConnection::connect(&db).await.unwrap();
        let count = sqlx::query_as(sql).fetch_one(&mut conn).await.unwrap();
        conn.close().await.unwrap();
        count
    } else {
        let options = sqlx::sqlite::SqliteConnectOptions::new()
            .filename(db.as_ref())
            .read_only(true);
        let mut conn = sqlx::SqliteConnection::connect_with(&options)
            .await
            .unwrap();
        let count = sqlx::query_as(sql).fetch_one(&mut conn).await.unwrap();
        conn.close().await.unwrap();
        count
    };
    count
}

/// Every entry of each monitor in `ids` (the `i`-th watching page `i`) as the API lists it
/// (monitor, check time), with its value; each value is checked to be exactly the text the page
/// server sent to the request its `changed{n}` word names.
async fn delta_entries(
    serve: &Serve,
    token: &str,
    ids: &[String],
) -> std::collections::BTreeMap<(String, String), String> {
    let mut entries = std::collections::BTreeMap::new();
    for (page, id) in ids.iter().enumerate() {
        let path = format!("/thirdparty/v1/data/list/{id}?count=500");
        let (status, reply) = serve.get(&path, Some(token)).await;
        assert_eq!(status, 200, "{reply}");
        assert!(reply["continuationToken"].is_null(), "one page holds all");
        for entry in reply["data"].as_array().unwrap() {
            let at = entry["lastCheckTimestamp"].as_str().unwrap().to_string();
            let Some(raw) = entry["raw"].as_str() else {
                panic!("a check of a served page failed: {entry}");
            };
            let n: usize = raw
                .split(' ')
                .find_map(|w| w.strip_prefix("changed"))
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("{id} {at}: a value with no changed word"));
            assert!(
                raw == one_word_changed(page, n),
                "{id} {at}: the value does not read back as request {n}'s page ({} bytes)",
                raw.len()
            );
            entries.insert((id.clone(), at), raw.to_string());
        }
    }
    entries
}

/// Bad input for delta history: ~100 KB pages whose one word changes on every
/// check, many of their values stored as deltas, and the process killed with SIGKILL while
/// checks are being written. Every entry the API listed before the kill reads back whole and
/// exact after the restart, as the page server sent it.
async fn delta_history_killed_mid_run_reads_back_whole(db: &Path) {
    use wachet::testing::{FixtureServer, Reply};
    const MONITORS: usize = 3;
    const DELTAS: i64 = 40;
    let mut site = FixtureServer::builder();
    for i in 0..MONITORS {
        site = site.counted(format!("/large{i}"), move |n| {
            Reply::html(format!(
                "<html><body><p>{}</p></body></html>",
                one_word_changed(i, n)
            ))
        });
    }
    let site = site.start().await.unwrap();
    let flags = [
        "--allow-private-networks",
        "--min-recurrence",
        "1",
        "--confirm-after",
        "1",
        "--per-host-rps",
        "0",
        "--per-host-concurrency",
        "0",
        // A first check learns the noise of a page that changes on every request: in a debug
        // build on a busy machine that takes longer than a short lease.
        "--check-lease",
        "60",
    ];
    let first = serve(db, &flags).await;
    let admin = account(&first.printed);
    let token = first.login(&admin).await;
    let mut ids = Vec::new();
    for i in 0..MONITORS {
        let body = json!({"name": format!("large {i}"), "url": site.url(&format!("/large{i}")),
                          "xPath": "//p", "recurrenceInSeconds": 1});
        let (status, task) = first
            .call(
                reqwest::Method::PUT,
                "/thirdparty/v1/task",
                Some(&token),
                Some(body),
            )
            .await;
        assert_eq!(status, 200, "{task}");
        ids.push(task["id"].as_str().unwrap().to_string());
    }

    // Running until many replaced values were stored as deltas.
    let mut deltas = 0;
    for _ in 0..600 {
        deltas = deltas_stored(db).await;
        if deltas >= DELTAS {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        deltas >= DELTAS,
        "{deltas} values stored as deltas, of {} entries",
        delta_entries(&first, &token, &ids).await.len()
    );
    // What the API lists right before the kill, with checks still being written.
    let before = delta_entries(&first, &token, &ids).await;
    assert!(
        before.len() as i64 > DELTAS,
        "{} entries listed",
        before.len()
    );
    let mut child = first.child;
    child.kill().await.unwrap();
    child.wait().await.unwrap();

    let again = serve(db, &flags).await;
    let after = delta_entries(&again, &token, &ids).await;
    for (entry, raw) in &before {
        match after.get(entry) {
            Some(read) => assert!(read == raw, "{entry:?} reads back changed"),
            None => panic!("{entry:?} lost in the kill"),
        }
    }
    assert!(
        deltas_stored(db).await >= deltas,
        "the deltas are still deltas"
    );
    assert_eq!(again.terminate().await, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delta_history_killed_mid_run_reads_back_whole_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    delta_history_killed_mid_run_reads_back_whole(&dir.path().join("wachet.db")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delta_history_killed_mid_run_reads_back_whole_on_postgresql() {
    let Some(url) = pg::database().await else {
        return;
    };
    delta_history_killed_mid_run_reads_back_whole(Path::new(&url)).await;
}

/// The entries of every monitor in `ids` (`lastCheckTimestamp` and value or error of each,
/// newest 500), and the user's notifications (id and monitor of each, newest 500), as the API
/// shows them now.
async fn reported(serve: &Serve, token: &str, ids: &[String]) -> (Vec<String>, Vec<String>) {
    let mut checks = Vec::new();
    for id in ids {
        let path = format!("/thirdparty/v1/data/list/{id}?count=500");
        let (status, reply) = serve.get(&path, Some(token)).await;
        assert_eq!(status, 200, "{reply}");
        for entry in reply["data"].as_array().unwrap() {
            checks.push(format!(
                "{id} {} {} {}",
                entry["lastCheckTimestamp"], entry["raw"], entry["error"]
            ));
        }
    }
    let (status, reply) = serve
        .get("/thirdparty/v1/notification/list?count=500", Some(token))
        .await;
    assert_eq!(status, 200, "{reply}");
    let notes = reply["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| format!("{} {} {}", n["id"], n["taskId"], n["current"]))
        .collect();
    (checks, notes)
}

/// A counter of `/metrics`.
async fn counter(serve: &Serve, name: &str) -> u64 {
    let text = reqwest::get(format!("{}/metrics", serve.base))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Bad input for grouped writes: checks of many monitors stored together (a group a transaction) and
/// the process killed with SIGKILL while they run. Every check the API showed before the kill
/// and every notification it listed are there after the restart, and every monitor is checked
/// again (a group the kill cut off held its monitors' leases only until they ran out).
async fn grouped_checks_killed_mid_run_lose_nothing_reported(db: &Path) {
    use wachet::testing::{FixtureServer, Reply};
    const MONITORS: usize = 40;
    // Each page's value moves on every fourth request: the first check and its two noise
    // samples see one value, later checks see changes, confirmed and notified.
    let mut site = FixtureServer::builder();
    for i in 0..MONITORS {
        site = site.counted(format!("/p{i}"), move |n| {
            Reply::html(format!("<p>item {i} v{}</p>", n / 4))
        });
    }
    let site = site.start().await.unwrap();
    let flags = [
        "--allow-private-networks",
        "--min-recurrence",
        "1",
        "--confirm-after",
        "1",
        "--per-host-rps",
        "0",
        "--per-host-concurrency",
        "0",
        "--check-lease",
        "3",
        "--heartbeat",
        "1",
    ];
    let first = serve(db, &flags).await;
    let admin = account(&first.printed);
    let token = first.login(&admin).await;
    let monitors: Vec<Value> = (0..MONITORS)
        .map(|i| {
            json!({"name": format!("item {i}"), "url": site.url(&format!("/p{i}")),
                   "recurrenceInSeconds": 1, "alerts": [{"type": "NotEq"}]})
        })
        .collect();
    let (status, created) = first
        .call(
            reqwest::Method::PUT,
            "/thirdparty/v1/tasks",
            Some(&token),
            Some(Value::Array(monitors)),
        )
        .await;
    assert_eq!(status, 200, "{created}");
    let ids: Vec<String> = created
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), MONITORS);

    // Running until groups of several checks were committed and notifications were raised.
    let mut before = (Vec::new(), Vec::new());
    for _ in 0..300 {
        let groups = counter(&first, "wachet_check_groups_total").await;
        let grouped = counter(&first, "wachet_checks_grouped_total").await;
        before = reported(&first, &token, &ids).await;
        if grouped > groups && groups > 0 && before.1.len() >= 10 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        before.1.len() >= 10,
        "notifications before the kill: {:?}",
        before.1
    );
    assert!(
        counter(&first, "wachet_checks_grouped_total").await
            > counter(&first, "wachet_check_groups_total").await,
        "some transaction stored several checks"
    );
    // What the API reports right before the kill, with checks still being written.
    let last = reported(&first, &token, &ids).await;
    let mut child = first.child;
    child.kill().await.unwrap();
    child.wait().await.unwrap();
    let killed_at = chrono::Utc::now();

    let again = serve(db, &flags).await;
    let (checks, notes) = reported(&again, &token, &ids).await;
    for seen in before.0.iter().chain(&last.0) {
        assert!(checks.contains(seen), "check lost in the kill: {seen}");
    }
    for seen in before.1.iter().chain(&last.1) {
        assert!(
            notes.contains(seen),
            "notification lost in the kill: {seen}"
        );
    }
    // Every monitor is checked again after the restart, those of a group cut off too.
    for id in &ids {
        let mut checked_again = false;
        for _ in 0..300 {
            let entries = again.history(&token, id).await;
            let newest = entries[0]["lastCheckTimestamp"].as_str().unwrap_or("");
            let newest = chrono::DateTime::parse_from_rfc3339(newest).unwrap();
            if newest > killed_at {
                checked_again = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(checked_again, "{id} is checked after the restart");
    }
    assert_eq!(again.terminate().await, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grouped_checks_killed_mid_run_lose_nothing_reported_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    grouped_checks_killed_mid_run_lose_nothing_reported(&dir.path().join("wachet.db")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grouped_checks_killed_mid_run_lose_nothing_reported_on_postgresql() {
    let Some(url) = pg::database().await else {
        return;
    };
    grouped_checks_killed_mid_run_lose_nothing_reported(Path::new(&url)).await;
}
