//! [`FeedStore`](crate::store::FeedStore) on SQLite, written once for both backends in
//! [`crate::store::both::feeds`]: SQLite's text compares byte-wise already.

use super::SqliteStore;

crate::store::both::feeds::feed_store!(
    SqliteStore,
    sqlx::Sqlite,
    feeds_order: "lower(COALESCE(t.name, t.url, fo.name, '')), f.id",
    small_int: i64,
);
