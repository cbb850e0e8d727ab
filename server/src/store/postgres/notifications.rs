//! [`NotificationStore`](crate::store::NotificationStore) on PostgreSQL, written once for both
//! backends in [`crate::store::both::notifications`].

use super::PgStore;

crate::store::both::notifications::notification_store!(PgStore, sqlx::Postgres, small_int: i32);
