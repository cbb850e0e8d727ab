//! The store's contract, written once and run on both backends: each `contract!` test becomes
//! `<name>::sqlite` (a temporary SQLite file) and `<name>::postgres` (a fresh database on the
//! private cluster of [`crate::pg`]), and talks to the store only through its traits, so both
//! backends answer every call alike: what each method returns, ownership (another user's id is
//! `NotFound`), quotas, paging order, expiry.

use std::future::Future;
use std::sync::Arc;
use wachet_server::store::postgres::PgStore;
use wachet_server::store::sqlite::{SqliteStore, StoreSettings};
use wachet_server::store::*;

mod feeds;
mod folders;
mod notifications;
mod nul;
mod open;
mod tasks;
mod users;

pub use crate::TestStore;

/// Runs `test` on a fresh SQLite store.
pub async fn on_sqlite<F, Fut>(settings: StoreSettings, test: F)
where
    F: FnOnce(Arc<dyn TestStore>) -> Fut,
    Fut: Future<Output = ()>,
{
    let dir = tempfile::tempdir().expect("temporary directory");
    let store = SqliteStore::open_with(&dir.path().join("wachet.db"), &settings)
        .await
        .expect("open SQLite");
    test(Arc::new(store.clone())).await;
    store.close().await;
}

/// Runs `test` on a fresh PostgreSQL database (skipped, with a printed reason, when PostgreSQL
/// is not installed and `CI` is not set).
pub async fn on_postgres<F, Fut>(settings: StoreSettings, test: F)
where
    F: FnOnce(Arc<dyn TestStore>) -> Fut,
    Fut: Future<Output = ()>,
{
    let Some(url) = crate::pg::database().await else {
        return;
    };
    let store = PgStore::connect(&url, &settings)
        .await
        .expect("connect to PostgreSQL");
    test(Arc::new(store.clone())).await;
    store.close().await;
}

/// `contract!(name, |store| async move { ... })` (default settings) or
/// `contract!(name, settings, |store| async move { ... })`: one test on each backend.
macro_rules! contract {
    ($name:ident, $test:expr) => {
        contract!(
            $name,
            ::wachet_server::store::sqlite::StoreSettings::default(),
            $test
        );
    };
    ($name:ident, $settings:expr, $test:expr) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            #[tokio::test]
            async fn sqlite() {
                $crate::store_contract::on_sqlite($settings, $test).await;
            }

            #[tokio::test]
            async fn postgres() {
                $crate::store_contract::on_postgres($settings, $test).await;
            }
        }
    };
}
pub(crate) use contract;

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
