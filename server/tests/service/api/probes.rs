//! What operators and their tools ask of every process: the health probes (`/healthz`,
//! `/readyz`, on the API's listener or `--health-listen`) and the request id every response
//! carries (a 500 logged with its request is the command line's test: `tests/cli/logs.rs`).

use crate::{Api, Backend, Setup};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wachet_server::service::{self, Parts};
use wachet_server::store::TaskStore;

/// A fresh request id replaces the client's: a UUID.
fn is_fresh(id: &str) -> bool {
    id.len() == 36 && uuid::Uuid::parse_str(id).is_ok()
}

both!(readiness_follows_the_database_and_request_ids_come_back);
async fn readiness_follows_the_database_and_request_ids_come_back() {
    let api = Api::start_checking().await;
    let get = |path: &str, id: Option<&str>| {
        let mut request = api.client().get(api.url(path));
        if let Some(id) = id {
            request = request.header("x-request-id", id);
        }
        api.raw(request)
    };
    let live = get("/healthz", None).await;
    assert_eq!(live.status, 200, "{}", live.text);
    let ready = get("/readyz", Some("lb-probe.42_a")).await;
    assert_eq!(ready.status, 200, "{}", ready.text);
    assert_eq!(ready.body["status"], "ready");
    assert_eq!(ready.headers["x-request-id"], "lb-probe.42_a");

    // A request id that is too long, or carries what a log line or header must not, is
    // replaced by a fresh one; an unknown path carries one too.
    let long = "a".repeat(10 * 1024);
    for bad in [long.as_str(), "a b", "tab\there", "ünï"] {
        let reply = api
            .raw(
                api.client()
                    .get(api.url("/thirdparty/v1/no-such-path"))
                    .header(
                        "x-request-id",
                        reqwest::header::HeaderValue::from_bytes(bad.as_bytes()).unwrap(),
                    ),
            )
            .await;
        assert_eq!(reply.status, 404);
        let id = reply.headers["x-request-id"].to_str().unwrap();
        assert!(is_fresh(id), "{bad:?} gave {id:?}");
    }
    let first = get("/healthz", None).await;
    let second = get("/healthz", None).await;
    assert_ne!(
        first.headers["x-request-id"],
        second.headers["x-request-id"]
    );

    // A schema behind the binary's (its newest migration missing), then a database that no
    // longer answers the question: not ready, saying why, and live all the while.
    let sql = api.sql().await;
    sql.execute(
        "DELETE FROM _sqlx_migrations WHERE version = (SELECT MAX(version) FROM _sqlx_migrations)",
    )
    .await;
    let behind = get("/readyz", None).await;
    assert_eq!(behind.status, 503, "{}", behind.text);
    assert!(
        behind.body["reason"]
            .as_str()
            .unwrap()
            .contains("migrations"),
        "{}",
        behind.text
    );
    sql.execute("DROP TABLE _sqlx_migrations").await;
    let gone = get("/readyz", None).await;
    assert_eq!(gone.status, 503, "{}", gone.text);
    assert_eq!(
        gone.body["reason"], "the database does not answer",
        "{}",
        gone.text
    );
    assert_eq!(get("/healthz", None).await.status, 200);
}

/// A process without the API answers the probes on `--health-listen` only.
#[tokio::test]
async fn a_worker_without_the_api_is_probed_on_its_own_address() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(
        wachet_server::store::sqlite::SqliteStore::open(&dir.path().join("wachet.db"))
            .await
            .unwrap(),
    );
    let mut setup = Setup::checking();
    setup.backend = Backend::Sqlite;
    setup.service.parts = Parts {
        api: false,
        ..Parts::ALL
    };
    setup.service.health_listen = Some(std::net::SocketAddr::from(([127, 0, 0, 1], 0)));
    let engine = setup.engine.build().unwrap();
    let running = service::start(setup.service, store, &engine).await.unwrap();
    assert_eq!(running.addr(), None);
    let base = format!("http://{}", running.health_addr().unwrap());
    let client = reqwest::Client::new();
    for path in ["/healthz", "/readyz"] {
        let reply = client.get(format!("{base}{path}")).send().await.unwrap();
        assert_eq!(reply.status(), 200, "{path}");
        assert!(reply.headers().contains_key("x-request-id"));
    }
    // The worker's own counts, which no other process has.
    let metrics = client.get(format!("{base}/metrics")).send().await.unwrap();
    assert_eq!(metrics.status(), 200);
    let text = metrics.text().await.unwrap();
    assert!(
        text.contains("wachet_check_lateness_seconds_bucket"),
        "{text}"
    );
    let api = client
        .get(format!("{base}/thirdparty/v1/task"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        api.status(),
        404,
        "the probes' listener serves nothing else"
    );
    running.shutdown().await.unwrap();
}

/// A worker that is shutting down keeps answering its probes until everything else has
/// stopped: `/readyz` says 503 while the check in flight finishes, `/healthz` still 200; then
/// the listener closes.
#[tokio::test]
async fn a_worker_shutting_down_is_not_ready_until_it_has_stopped() {
    use wachet::testing::{FixtureServer, Reply};
    let site = FixtureServer::builder()
        .reply(
            "/slow",
            Reply::html("<p>slow</p>").delay(Duration::from_secs(3)),
        )
        .start()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(
        wachet_server::store::sqlite::SqliteStore::open(&dir.path().join("wachet.db"))
            .await
            .unwrap(),
    );
    let user = crate::store::add_user(store.as_ref(), "worker@example.com").await;
    store
        .create_task(&user, &crate::store::monitor("Slow", &site.url("/slow")))
        .await
        .unwrap();
    let mut setup = Setup::checking();
    setup.backend = Backend::Sqlite;
    setup.service.parts = Parts {
        api: false,
        ..Parts::ALL
    };
    setup.service.health_listen = Some(std::net::SocketAddr::from(([127, 0, 0, 1], 0)));
    let engine = setup.engine.build().unwrap();
    let running = service::start(setup.service, store, &engine).await.unwrap();
    let base = format!("http://{}", running.health_addr().unwrap());
    let client = reqwest::Client::new();

    // Once the check is on its way, the worker is told to stop.
    let begun = Instant::now();
    while site.hits("/slow") == 0 {
        assert!(begun.elapsed() < Duration::from_secs(30), "never checked");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let stopping = tokio::spawn(running.shutdown());
    tokio::time::sleep(Duration::from_millis(200)).await;
    let ready = client.get(format!("{base}/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), 503);
    assert!(
        ready.text().await.unwrap().contains("shutting down"),
        "the reason is given"
    );
    let alive = client.get(format!("{base}/healthz")).send().await.unwrap();
    assert_eq!(alive.status(), 200);
    assert!(
        !stopping.is_finished(),
        "the check in flight was not waited for"
    );

    tokio::time::timeout(Duration::from_secs(40), stopping)
        .await
        .expect("stopped within the grace")
        .unwrap()
        .unwrap();
    assert!(
        client.get(format!("{base}/healthz")).send().await.is_err(),
        "the probes' listener closes once all else has stopped"
    );
}
