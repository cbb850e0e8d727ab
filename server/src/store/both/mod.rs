//! Each resource's trait written once for both SQL backends. The Rust around the statements
//! (which statement runs where, in what transaction, how its rows become the API's types
//! through [`shape`](super::shape), what a write invalidates in the cache) is the same on
//! SQLite and PostgreSQL; only some statements and the width of some integer columns differ.
//! So each trait's implementation is a macro here, which `sqlite/<resource>.rs` and
//! `postgres/<resource>.rs` instantiate with their store type, their database and, by name,
//! whatever they spell differently. A statement both backends read alike is written once, in
//! the macro, with numbered parameters (`$1`), which SQLite reads as PostgreSQL does.
//!
//! A macro rather than one function generic over `sqlx::Database`: sqlx's bounds for a
//! generic query (the argument, row and executor types of every column, for every lifetime)
//! would outweigh the code they spare, and the instantiated code is each backend's own,
//! checked by the compiler as if written out.
//!
//! What a store type must offer the macros, as inherent methods of its module:
//!
//! - `reads(&self) -> &sqlx::Pool<DB>`: where a read runs (SQLite's pool of readers);
//! - `writes(&self) -> &sqlx::Pool<DB>`: where a write of one statement runs (SQLite's
//!   single writer);
//! - `write(&self)`: a write transaction (SQLite's `BEGIN IMMEDIATE`);
//! - `write_for(&self, user)`: a write transaction of a user's monitors and folders, which
//!   runs after any other of that user's (PostgreSQL takes the owner's row first);
//! - a `cache: Arc<Caches>` field, and `quotas` where the trait has limits.

pub(crate) mod feeds;
pub(crate) mod folders;
pub(crate) mod history;
pub(crate) mod notifications;
pub(crate) mod outbox;
pub(crate) mod schedule;
pub(crate) mod tasks;
#[cfg(any(test, feature = "testing"))]
pub(crate) mod testing;
pub(crate) mod users;
pub(crate) mod workers;

use super::StoreError;
use std::time::Duration;

/// How many times a write that met a concurrent one ([`StoreError::Conflict`]) is run again.
pub(crate) const CONFLICT_RETRIES: u32 = 4;

/// Runs `write`, one transaction, again when PostgreSQL ended it to break a deadlock or a
/// serialization failure with a concurrent write (it stored nothing), after a short wait that
/// grows with each try; [`StoreError::Conflict`] once the tries are spent. SQLite's single
/// writer never meets a concurrent write, so there `write` runs once.
pub(crate) async fn retrying<T, F, Fut>(mut write: F) -> Result<T, StoreError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, StoreError>>,
{
    let mut tries = 0;
    loop {
        match write().await {
            Err(StoreError::Conflict(detail)) if tries < CONFLICT_RETRIES => {
                tries += 1;
                tracing::debug!(%detail, tries, "a write met a concurrent one; running it again");
                tokio::time::sleep(Duration::from_millis(5 << tries)).await;
            }
            outcome => return outcome,
        }
    }
}

/// Defines `delete_owned` and `bucket_hosts` in the calling module (a backend's `mod.rs`) and
/// implements [`HealthStore`](crate::store::HealthStore) for `$store` against its embedded
/// `MIGRATOR`. By name, where the schema keeps a monitor's host bucket:
///
/// - `unbucketed`: the id and URL of at most 1,000 monitors whose bucket is not set yet;
/// - `bucket`: sets monitor `$3`'s bucket (`$1`) and host hash (`$2`).
macro_rules! store_basics {
    ($store:ty, $db:ty, unbucketed: $unbucketed:literal, bucket: $bucket:literal $(,)?) => {
        /// Puts each monitor stored before host buckets (or host hashes) existed in its host's
        /// bucket ([`crate::store::host_bucket`], [`crate::store::host_hash`]): SQL cannot hash
        /// the host as the service does.
        async fn bucket_hosts(pool: &::sqlx::Pool<$db>) -> Result<(), ::sqlx::Error> {
            loop {
                let rows: Vec<(String, String)> =
                    ::sqlx::query_as($unbucketed).fetch_all(pool).await?;
                if rows.is_empty() {
                    return Ok(());
                }
                // A transaction a batch: one commit for 1,000 rows, not one each.
                let mut tx = pool.begin().await?;
                for (id, url) in rows {
                    ::sqlx::query($bucket)
                        .bind($crate::store::host_bucket(&url))
                        .bind($crate::store::host_hash(&url))
                        .bind(id)
                        .execute(&mut *tx)
                        .await?;
                }
                tx.commit().await?;
            }
        }

        /// Deletes the row `id` of `table` if it is the user's (what hangs on it cascades, in
        /// this one statement, within a write of the user's tree); `NotFound` otherwise.
        async fn delete_owned(
            store: &$store,
            table: &'static str,
            user: &str,
            id: &str,
        ) -> Result<(), $crate::store::StoreError> {
            use $crate::store::StoreError;
            if !$crate::store::is_id(id) {
                return Err(StoreError::NotFound);
            }
            $crate::store::both::retrying(|| async {
                let mut tx = store.write_for(user).await?;
                let deleted = ::sqlx::query(::sqlx::AssertSqlSafe(format!(
                    "DELETE FROM {table} WHERE id = $1 AND user_id = $2"
                )))
                .bind(id)
                .bind(user)
                .execute(&mut *tx)
                .await?;
                if deleted.rows_affected() == 0 {
                    return Err(StoreError::NotFound);
                }
                tx.commit().await?;
                Ok(())
            })
            .await
        }

        #[::async_trait::async_trait]
        impl $crate::store::HealthStore for $store {
            async fn readiness(&self) -> Result<(), $crate::store::NotReady> {
                // A reader: the probe must not queue behind a write, and reads go on when the
                // disk is full.
                let row = ::sqlx::query_as($crate::store::health::MIGRATIONS_APPLIED)
                    .fetch_one(self.reads())
                    .await;
                $crate::store::health::judge(row, &MIGRATOR)
            }
        }
    };
}

pub(crate) use store_basics;
