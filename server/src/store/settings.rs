//! What a store is opened with ([`StoreSettings`]) and how opening one fails ([`OpenError`]):
//! the same for every backend, so the command line builds one set of settings whichever
//! database `--db` names.

use super::Quotas;

/// How many entries each series keeps unless told otherwise.
pub const DEFAULT_HISTORY_RETENTION: u32 = 10_000;

/// Deliveries per user and hour unless told otherwise: more than a personal server sends.
pub const DEFAULT_DELIVERIES_PER_HOUR: u32 = 1_000;

/// Settings of a store, whichever its backend.
#[derive(Debug, Clone)]
pub struct StoreSettings {
    /// Entries kept in each series (a monitor's own history, each crawled page's): a check
    /// beyond it prunes the oldest. At least 1.
    pub history_retention: u32,
    /// Notification deliveries released per user in any hour; more wait, pending, until the
    /// hour has room (0: no limit).
    pub deliveries_per_hour: u32,
    /// What one user may keep.
    pub quotas: Quotas,
}

impl Default for StoreSettings {
    fn default() -> Self {
        StoreSettings {
            history_retention: DEFAULT_HISTORY_RETENTION,
            deliveries_per_hour: DEFAULT_DELIVERIES_PER_HOUR,
            quotas: Quotas::default(),
        }
    }
}

impl StoreSettings {
    /// The retention a store applies: at least one entry a series.
    pub(crate) fn retention(&self) -> u32 {
        self.history_retention.max(1)
    }

    /// The hourly bound on deliveries a store applies; `None` when there is none.
    pub(crate) fn delivery_limit(&self) -> Option<std::num::NonZeroU32> {
        std::num::NonZeroU32::new(self.deliveries_per_hour)
    }
}

/// Opening the database failed. `path` is the file, or the URL without its password.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The file could not be opened or created, or the server could not be reached.
    #[error("cannot open the database {path}: {reason}")]
    Open {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
    /// The database was written by a newer wachet.
    #[error(
        "the database {path} has schema version {found}, newer than this wachet knows (up to \
         {known}): run a newer wachet on it"
    )]
    TooNew {
        /// The file.
        path: String,
        /// The version found.
        found: i64,
        /// The newest version this binary has.
        known: i64,
    },
    /// A migration failed; the database is as it was before it.
    #[error("cannot migrate the database {path}: {reason}")]
    Migrate {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
}

/// Runs `migrator` on `conn`, then `after` (the fix-ups SQL cannot make), naming `path` in
/// what fails: a schema newer than `migrator` knows is [`OpenError::TooNew`].
pub(crate) async fn migrate<'a, A, F, Fut>(
    migrator: &sqlx::migrate::Migrator,
    conn: A,
    path: &str,
    after: F,
) -> Result<(), OpenError>
where
    A: sqlx::Acquire<'a>,
    <A::Connection as std::ops::Deref>::Target: sqlx::migrate::Migrate,
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Result<(), sqlx::Error>>,
{
    let known = migrator.iter().map(|m| m.version).max().unwrap_or(0);
    let failed = |reason: String| OpenError::Migrate {
        path: path.to_string(),
        reason,
    };
    match migrator.run(conn).await {
        Ok(()) => after().await.map_err(|err| failed(err.to_string())),
        Err(sqlx::migrate::MigrateError::VersionMissing(found))
        | Err(sqlx::migrate::MigrateError::VersionTooNew(found, _))
            if found > known =>
        {
            Err(OpenError::TooNew {
                path: path.to_string(),
                found,
                known,
            })
        }
        Err(err) => Err(failed(err.to_string())),
    }
}
