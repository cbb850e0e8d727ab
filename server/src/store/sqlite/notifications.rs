//! [`NotificationStore`](crate::store::NotificationStore) on SQLite, written once for both
//! backends in [`crate::store::both::notifications`].

use super::SqliteStore;

crate::store::both::notifications::notification_store!(SqliteStore, sqlx::Sqlite, small_int: i64);
