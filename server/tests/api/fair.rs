//! Fair share of the check slots among users, and the quotas per user: one user's monitors on
//! hosts that never answer do not hold back another user's checks, and a user who reaches a
//! quota (monitors, stored bytes, value size, notifications an hour) is told so, by name.

use super::{Api, User, id};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use wachet::testing::FixtureServer;

/// A second connection to the service's database file, read-only.
async fn database(api: &Api) -> sqlx::SqlitePool {
    sqlx::SqlitePool::connect_with(
        sqlx::sqlite::SqliteConnectOptions::new()
            .filename(api.db_path())
            .read_only(true),
    )
    .await
    .unwrap()
}

async fn count(pool: &sqlx::SqlitePool, sql: &str) -> i64 {
    let (n,): (i64,) = sqlx::query_as(sqlx::AssertSqlSafe(sql.to_string()))
        .fetch_one(pool)
        .await
        .unwrap();
    n
}

/// A host that accepts connections and never answers: each check of it holds its slot until
/// the engine's timeout (30 s).
async fn silent_host() -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    (format!("http://{addr}"), task)
}

/// Waits up to `within` until the history at `path` has an entry; returns how long it took.
async fn first_entry(api: &Api, user: &User, task: &str, within: Duration) -> Option<Duration> {
    let started = Instant::now();
    let path = format!("/thirdparty/v1/data/list/{task}");
    while started.elapsed() < within {
        let reply = api.get(user, &path).await;
        if !reply.ok()["data"].as_array().unwrap().is_empty() {
            return Some(started.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hanging_hosts_of_one_user_hold_back_only_that_users_checks() {
    let (silent, _listener) = silent_host().await;
    let site = FixtureServer::builder()
        .page("/tea", "<p class=price>3.50 EUR</p>")
        .start()
        .await
        .unwrap();
    let api = Api::start_checking().await;
    let (ann, bob) = (
        api.user("ann@example.com").await,
        api.user("bob@example.com").await,
    );
    for i in 0..40 {
        let body = json!({"name": format!("silent {i}"), "url": format!("{silent}/page/{i}"),
                          "recurrenceInSeconds": 60});
        api.task(&ann, body).await;
    }
    // Alone, Ann may use every slot: all 32 are taken by her hanging checks.
    let db = database(&api).await;
    let held = "SELECT count(*) FROM tasks WHERE lease_until IS NOT NULL";
    let started = Instant::now();
    while count(&db, held).await < 32 && started.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(count(&db, held).await, 32, "a lone user uses every slot");

    let body = json!({"name": "tea", "url": site.url("/tea"), "recurrenceInSeconds": 60});
    let tea = id(&api.task(&bob, body).await);
    // Before the fair share Bob waited for Ann's checks to time out (27 s).
    let took = first_entry(&api, &bob, &tea, Duration::from_secs(25)).await;
    let took = took.expect("Bob's monitor is checked while Ann's hosts hang");
    assert!(took < Duration::from_secs(10), "first check after {took:?}");
    let monitor: Value = api
        .get(&bob, &format!("/thirdparty/v1/task/{tea}"))
        .await
        .ok()
        .clone();
    assert_eq!(monitor["data"]["raw"], "3.50 EUR");
    // Ann's monitors beyond her share wait for her own checks to end.
    let anns = "SELECT count(*) FROM tasks t JOIN users u ON u.id = t.user_id \
                WHERE u.email = 'ann@example.com' AND t.lease_until IS NOT NULL";
    assert_eq!(count(&db, anns).await, 32, "Ann is given no more while over her share");
}
