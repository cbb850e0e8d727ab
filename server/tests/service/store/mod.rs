//! The store's contract, written once and run on both backends: each store test declared with
//! [`both!`] becomes `<name>::sqlite` (a temporary SQLite file) and `<name>::postgres` (a fresh
//! database on the private cluster of [`crate::support::pg`]), and talks to the store only through its traits, so both
//! backends answer every call alike: what each method returns, ownership (another user's id is
//! `NotFound`), quotas, paging order, expiry.

use std::future::Future;
use std::sync::Arc;
use wachet_server::store::postgres::PgStore;
use wachet_server::store::sqlite::{SqliteStore, StoreSettings};
use wachet_server::store::*;

// What the history, schedule and outbox tests share: monitors made due, claims, checks.
mod checks;
// Values stored as deltas read back after many changes, pruning, deletes and failed checks.
mod delta;
// [`FeedStore`]: feeds of a user, a folder or a monitor.
mod feeds;
// [`FolderStore`]: the tree, listings with counts and paging, moves.
mod folders;
// [`HistoryStore`]: checks recorded all or nothing, retention, garbage, the quota's count.
mod history;
// [`NotificationStore`]: notifications of a user and of a monitor, newest first, paged.
mod notifications;
// NUL characters, refused (or, from a page, replaced) alike by both backends.
mod nul;
// Opening a PostgreSQL store: migrations, a newer schema, a database that is not there.
mod open;
// [`OutboxStore`]: deliveries and confirmation mails claimed, retried, bounded.
mod outbox;
// [`ScheduleStore`]: claims under leases, beats, workers, host buckets, races with edits.
mod schedule;
// [`TaskStore`]: monitors' definitions, ownership, quota, search.
mod tasks;
// [`UserStore`]: accounts, tokens and sessions, secrets, endpoints, e-mail confirmation.
mod users;

pub(crate) use crate::{Backend, Sql, TestStore};

/// Runs `test` on a fresh store of `backend` opened with `settings`, with a connection of its
/// own to the same database ([`Sql`]) for what no store call shows. On PostgreSQL it is
/// skipped, saying so, when PostgreSQL is not installed and `CI` is not set.
pub async fn on<F, Fut>(backend: Backend, settings: StoreSettings, test: F)
where
    F: FnOnce(Arc<dyn TestStore>, Sql) -> Fut,
    Fut: Future<Output = ()>,
{
    match backend {
        Backend::Sqlite => {
            let dir = tempfile::tempdir().expect("temporary directory");
            let path = dir.path().join("wachet.db");
            let store = SqliteStore::open_with(&path, &settings)
                .await
                .expect("open SQLite");
            let options = sqlx::sqlite::SqliteConnectOptions::new().filename(&path);
            let sql = Sql::Sqlite(sqlx::SqlitePool::connect_with(options).await.unwrap());
            test(Arc::new(store.clone()), sql).await;
            store.close().await;
        }
        Backend::Postgres => {
            let Some(url) = crate::support::pg::database().await else {
                return;
            };
            let store = PgStore::connect(&url, &settings)
                .await
                .expect("connect to PostgreSQL");
            let sql = Sql::Postgres(sqlx::PgPool::connect(&url).await.unwrap());
            test(Arc::new(store.clone()), sql).await;
            store.close().await;
        }
    }
}

/// A user record with this e-mail address and no endpoints.
pub fn user_record(email: &str) -> UserRecord {
    UserRecord {
        id: new_id(),
        email: email.to_string(),
        password_hash: "$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$aGFzaGhhc2g".into(),
        api_key_hash: format!("{:064x}", rand_u64()),
        webhook_secret: "whsec".into(),
        notification_endpoints: Vec::new(),
        created_at: now_millis(),
        time_zone: "UTC".into(),
    }
}

/// An hourly SinglePage monitor of `url`.
pub fn monitor(name: &str, url: &str) -> wachet::model::Monitor {
    wachet::model::Monitor {
        name: Some(name.to_string()),
        url: Some(url.to_string()),
        recurrence_in_seconds: Some(3600),
        ..Default::default()
    }
}

/// Creates a folder named `name` of `user` under `parent` (the root when `None`) and returns
/// its id.
pub async fn folder(store: &dyn TestStore, user: &str, name: &str, parent: Option<&str>) -> String {
    store
        .save_folder(
            user,
            &wachet::model::Folder {
                name: Some(name.into()),
                parent_id: parent.map(str::to_string),
                ..Default::default()
            },
        )
        .await
        .unwrap()
        .id
        .unwrap()
}

/// Creates a user and returns its id.
pub async fn add_user(store: &dyn TestStore, email: &str) -> String {
    let user = user_record(email);
    store.create_user(&user).await.expect("create user");
    user.id
}

fn rand_u64() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(1);
    N.fetch_add(1, Ordering::Relaxed)
}
