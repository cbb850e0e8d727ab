//! The [`Store`](super::Store) on PostgreSQL: one connection pool shared by every process of
//! the service, migrations of its own (`migrations/postgres/`, embedded in the binary, each in a
//! transaction) and the same behaviour as [`SqliteStore`](super::sqlite::SqliteStore) behind the
//! same traits. Each resource's trait is implemented in the module that holds its SQL (`users`,
//! `tasks`, `folders`, `notifications`, `feeds`, `history`, `schedule`, `outbox`); where one
//! resource's write needs another's rows (a new monitor's schedule, a notification's deliveries,
//! a monitor's latest data) it calls a `pub(super)` function of that resource's module, so each
//! table is written by one module only.

mod feeds;
mod folders;
// Their helpers are called by the other resources as those are written.
mod history;
mod notifications;
// Their helpers are called by the other resources as those are written.
mod outbox;
// Their helpers are called by the other resources as those are written.
mod schedule;
mod tasks;
#[cfg(any(test, feature = "testing"))]
mod testing;
mod users;
mod workers;

use super::cache::Caches;
use super::settings::{OpenError, StoreSettings, migrate};
use super::shape::{sort_key, storable};
use super::{Quotas, StoreError};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

/// The migrations, embedded at build time.
static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/postgres");

/// Connections per process: enough for the API's requests and the workers' claims together,
/// few enough that several processes stay under PostgreSQL's default of 100.
const CONNECTIONS: u32 = 10;
/// How long a call waits for a free connection (or for the server to answer a connect).
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(30);

/// The PostgreSQL store. Cheap to clone (the pool and the cache are shared).
#[derive(Clone, Debug)]
pub struct PgStore {
    pool: PgPool,
    /// The hot reads' answers, invalidated by the writes that change them.
    cache: Arc<Caches>,
    history_retention: u32,
    deliveries_per_hour: Option<std::num::NonZeroU32>,
    quotas: Quotas,
}

impl PgStore {
    /// Connects to the database at `url` (`postgres://` or `postgresql://`), migrates it and
    /// checks that its schema is not newer than this binary's.
    pub async fn connect(url: &str, settings: &StoreSettings) -> Result<PgStore, OpenError> {
        let shown = redact(url);
        let open_err = |err: sqlx::Error| OpenError::Open {
            path: shown.clone(),
            reason: err.to_string(),
        };
        let options = PgConnectOptions::from_str(url).map_err(open_err)?;
        let pool = PgPoolOptions::new()
            .max_connections(CONNECTIONS)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_with(options)
            .await
            .map_err(open_err)?;
        migrate(&MIGRATOR, &pool, &shown, || bucket_hosts(&pool)).await?;
        Ok(PgStore {
            pool,
            cache: Arc::new(Caches::default()),
            history_retention: settings.retention(),
            deliveries_per_hour: settings.delivery_limit(),
            quotas: settings.quotas,
        })
    }

    /// Where a read runs: the pool.
    fn reads(&self) -> &PgPool {
        &self.pool
    }

    /// Where a write of one statement runs: the pool.
    fn writes(&self) -> &PgPool {
        &self.pool
    }

    /// A write transaction.
    async fn write(&self) -> Result<sqlx::Transaction<'static, sqlx::Postgres>, sqlx::Error> {
        self.pool.begin().await
    }

    /// A write transaction of `user`'s monitors and folders, the owner's row taken first
    /// ([`lock_owner`]).
    async fn write_for(
        &self,
        user: &str,
    ) -> Result<sqlx::Transaction<'static, sqlx::Postgres>, StoreError> {
        let mut tx = self.pool.begin().await?;
        lock_owner(&mut tx, user).await?;
        Ok(tx)
    }

    /// The pool, for a command that writes every table as it is (`wachet migrate`).
    pub(crate) fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Closes the pool.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// Whether `db` (the `--db` value) names a PostgreSQL database rather than a SQLite file.
pub fn is_url(db: &str) -> bool {
    db.starts_with("postgres://") || db.starts_with("postgresql://")
}

/// `url` without its password, for messages and logs.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((credentials, host)) if credentials.contains(':') => {
            let user = credentials.split(':').next().unwrap_or("");
            format!("{scheme}://{user}:***@{host}{tail}")
        }
        _ => url.to_string(),
    }
}

/// Takes the owner's row for the rest of the transaction. Every write a user makes to their
/// monitors and folders takes it first, so two of them never lock the rows below it (monitors,
/// the folders' counts, the user's count of monitors) in opposite orders and deadlock: a user's
/// writes to the tree run one after another, as SQLite's single writer runs them. A stored
/// check does not take it (it locks its monitor, then its folder's counts), so a move can still
/// meet one: [`retrying`](super::both::retrying) runs the loser again.
async fn lock_owner(tx: &mut sqlx::PgConnection, user: &str) -> Result<(), StoreError> {
    sqlx::query("SELECT 1 FROM users WHERE id = $1 FOR NO KEY UPDATE")
        .bind(user)
        .execute(tx)
        .await?;
    Ok(())
}

super::both::store_basics!(
    PgStore,
    sqlx::Postgres,
    unbucketed: "SELECT s.task_id, t.url FROM schedules s JOIN tasks t ON t.id = s.task_id \
                 WHERE s.host_bucket < 0 LIMIT 1000",
    bucket: "UPDATE schedules SET host_bucket = $1, host = $2 WHERE task_id = $3",
);

#[cfg(test)]
mod tests {
    use super::{StoreError, redact};
    use crate::store::both::{CONFLICT_RETRIES, retrying};
    use std::cell::Cell;

    #[tokio::test]
    async fn a_conflict_is_run_again_until_the_tries_are_spent() {
        let runs = Cell::new(0);
        let conflict = || StoreError::Conflict("deadlock detected".into());
        let outcome = retrying(|| async {
            runs.set(runs.get() + 1);
            if runs.get() < 3 {
                Err(conflict())
            } else {
                Ok(runs.get())
            }
        })
        .await;
        assert!(matches!(outcome, Ok(3)), "{outcome:?}");

        runs.set(0);
        let outcome: Result<(), _> = retrying(|| async {
            runs.set(runs.get() + 1);
            Err(conflict())
        })
        .await;
        assert!(
            matches!(outcome, Err(StoreError::Conflict(_))),
            "{outcome:?}"
        );
        assert_eq!(runs.get(), CONFLICT_RETRIES + 1);

        // Any other outcome is returned at once.
        runs.set(0);
        let outcome: Result<(), _> = retrying(|| async {
            runs.set(runs.get() + 1);
            Err(StoreError::NotFound)
        })
        .await;
        assert!(matches!(outcome, Err(StoreError::NotFound)));
        assert_eq!(runs.get(), 1);
    }

    #[test]
    fn a_password_never_shows() {
        assert_eq!(
            redact("postgres://wachet:s3cret@db.example:5432/wachet?sslmode=require"),
            "postgres://wachet:***@db.example:5432/wachet?sslmode=require"
        );
        assert_eq!(redact("postgres://db/wachet"), "postgres://db/wachet");
        assert_eq!(
            redact("postgresql:///w?host=/run/pg"),
            "postgresql:///w?host=/run/pg"
        );
    }
}
