//! Opening a PostgreSQL store: migrations that run again harmlessly, a schema newer than the
//! binary refused, an unreachable server a clear error naming it (without its password).

use std::time::{Duration, Instant};
use wachet_server::store::postgres::PgStore;
use wachet_server::store::sqlite::{OpenError, StoreSettings};
use wachet_server::store::{UserStore, new_id};

#[tokio::test]
async fn migrations_run_again_harmlessly() {
    let Some(url) = crate::support::pg::database().await else {
        return;
    };
    let first = PgStore::connect(&url, &StoreSettings::default())
        .await
        .unwrap();
    first
        .create_user(&super::user_record("ada@example.com"))
        .await
        .unwrap();
    first.close().await;
    let again = PgStore::connect(&url, &StoreSettings::default())
        .await
        .unwrap();
    assert_eq!(again.user_count().await.unwrap(), 1);
    again.close().await;
}

#[tokio::test]
async fn a_schema_newer_than_the_binary_is_refused() {
    let Some(url) = crate::support::pg::database().await else {
        return;
    };
    PgStore::connect(&url, &StoreSettings::default())
        .await
        .unwrap()
        .close()
        .await;
    {
        use sqlx::Connection;
        let mut conn = sqlx::PgConnection::connect(&url).await.unwrap();
        sqlx::query(
            "INSERT INTO _sqlx_migrations (version, description, success, checksum, \
             execution_time) VALUES (9999, 'from the future', true, '\\x00', 0)",
        )
        .execute(&mut conn)
        .await
        .unwrap();
        conn.close().await.unwrap();
    }
    match PgStore::connect(&url, &StoreSettings::default()).await {
        Err(err @ OpenError::TooNew { found: 9999, .. }) => {
            assert!(
                err.to_string().contains("newer than this wachet knows"),
                "{err}"
            );
        }
        other => panic!("a schema from the future: {:?}", other.map(|_| ())),
    }
}

#[tokio::test]
async fn an_unreachable_server_is_a_clear_error() {
    let missing = std::env::temp_dir().join(format!("no-postgres-{}", new_id()));
    let url = format!(
        "postgres://wachet:s3cret@localhost/wachet?host={}",
        missing.display()
    );
    let started = Instant::now();
    let result = tokio::time::timeout(
        Duration::from_secs(60),
        PgStore::connect(&url, &StoreSettings::default()),
    )
    .await
    .expect("connect gives up within a minute");
    let Err(err @ OpenError::Open { .. }) = result else {
        panic!("connecting to nothing succeeded");
    };
    let message = err.to_string();
    assert!(
        message.contains("postgres://wachet:***@localhost/wachet"),
        "{message}"
    );
    assert!(!message.contains("s3cret"), "{message}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
}
