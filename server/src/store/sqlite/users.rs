//! [`UserStore`](crate::store::UserStore) on SQLite: the statements are standard SQL, written
//! once for both backends in [`crate::store::both::users`].

use super::SqliteStore;

crate::store::both::users::user_store!(SqliteStore, sqlx::Sqlite, lock_row: "");
