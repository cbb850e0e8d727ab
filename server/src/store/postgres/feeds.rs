//! [`FeedStore`](crate::store::FeedStore) on PostgreSQL, written once for both backends in
//! [`crate::store::both::feeds`]: names and ids compare byte-wise (`"C"`), as SQLite's do,
//! whatever the database's collation.

use super::PgStore;

crate::store::both::feeds::feed_store!(
    PgStore,
    sqlx::Postgres,
    feeds_order: "lower(COALESCE(t.name, t.url, fo.name, '')) COLLATE \"C\", f.id COLLATE \"C\"",
    small_int: i32,
);
