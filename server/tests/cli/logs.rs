//! What `wachet serve` logs of a request that failed: one line, with the request it came from.

use super::backup::Serve;
use serde_json::Value;

/// A 500 (here the database failing: a table gone from under the service) is logged once, at
/// error, inside the request's span: the route's pattern, the request id sent, the user, and
/// the cause, which the answer itself does not show.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_500_is_logged_once_with_its_request() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("wachet.db");
    let (serve, (user, _)) = Serve::start(&db, None, &["--log-format", "json"]).await;
    {
        use sqlx::{ConnectOptions, Connection};
        let mut conn = sqlx::sqlite::SqliteConnectOptions::new()
            .filename(&db)
            .connect()
            .await
            .unwrap();
        sqlx::query("ALTER TABLE notifications RENAME TO notifications_gone")
            .execute(&mut conn)
            .await
            .unwrap();
        conn.close().await.unwrap();
    }
    let reply = reqwest::Client::new()
        .get(format!("{}/thirdparty/v1/notification/list", serve.base))
        .bearer_auth(&serve.token)
        .header("x-request-id", "trace-me-1")
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), 500);
    assert_eq!(reply.headers()["x-request-id"], "trace-me-1");
    let text = reply.text().await.unwrap();
    assert!(
        !text.contains("no such table"),
        "the cause stays in the log: {text}"
    );
    serve_stop_and_check(serve, &user).await;
}

async fn serve_stop_and_check(serve: Serve, user: &str) {
    let log = serve.log.clone();
    serve.stop().await;
    let log = log.lock().unwrap().clone();
    let errors: Vec<Value> = log
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        // The table dropped under the service also fails its background loops (the
        // deliverer's claims): only the errors of requests are the 500's.
        .filter(|l| l["level"] == "ERROR" && !l["span"].is_null())
        .collect();
    assert_eq!(errors.len(), 1, "{log}");
    let error = &errors[0];
    let span = &error["span"];
    assert_eq!(span["name"], "request", "{error}");
    assert_eq!(span["request_id"], "trace-me-1", "{error}");
    assert_eq!(span["route"], "/thirdparty/v1/notification/list", "{error}");
    assert_eq!(span["method"], "GET", "{error}");
    assert_eq!(span["user"], user, "{error}");
    assert!(
        error["fields"]["detail"]
            .as_str()
            .is_some_and(|d| d.contains("no such table")),
        "{error}"
    );
}
