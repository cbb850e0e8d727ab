//! [`UserStore`](crate::store::UserStore) on PostgreSQL: the statements are standard SQL,
//! written once for both backends in [`crate::store::both::users`]; the outbox asks for
//! confirmation mails through its `request_in`.

use super::PgStore;

crate::store::both::users::user_store!(PgStore, sqlx::Postgres, lock_row: " FOR UPDATE");
