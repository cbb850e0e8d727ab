//! The [`Store`](super::Store) on one SQLite file: WAL journal, one writer connection (SQLite takes one writer
//! at a time anyway, and a single connection keeps writers from waiting on each other's locks)
//! and a small pool of readers that never block on it; the WAL is copied back into the file by a
//! connection of its own (`checkpoints`), not in the writer's commits. Migrations are embedded in the binary and
//! each runs in a transaction. Other processes (`wachet user add`) may open the same file while
//! the service runs: a busy database is waited for, not failed.
//!
//! The SQL is standard where it can be (row-value keyset comparisons, recursive common table
//! expressions, `ON CONFLICT`), so a PostgreSQL store can follow it closely. Each resource's
//! trait is implemented in the module that holds its SQL (`users`, `tasks`, `folders`,
//! `history`, `notifications`, `schedule`, `outbox`, `feeds`), most of it by instantiating the
//! implementation both backends share (`super::both`) with the statements SQLite spells its own
//! way; the cache is used, and invalidated, by those same methods.

pub mod backup;
mod checkpoints;
mod feeds;
mod folders;
mod history;
mod notifications;
mod outbox;
mod readers;
mod schedule;
mod tasks;
#[cfg(any(test, feature = "testing"))]
mod testing;
mod users;
mod workers;

use super::cache::Caches;
use super::settings::migrate;
// Where the settings were first defined, and where callers of the SQLite store still name them.
pub use super::settings::{
    DEFAULT_DELIVERIES_PER_HOUR, DEFAULT_HISTORY_RETENTION, OpenError, StoreSettings,
};
use super::shape::before_key;
use super::{Quotas, StoreError};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How long a call waits for another connection's (or process's) write lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);
/// Reader connections.
const READERS: u32 = 4;

/// The migrations, embedded at build time.
static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/sqlite");

/// The SQLite store. Cheap to clone (the pools and the cache are shared).
#[derive(Clone, Debug)]
pub struct SqliteStore {
    writer: SqlitePool,
    reader: SqlitePool,
    /// Connections of the hottest reads (history pages, folder listings), lent without sqlx's
    /// pings.
    lent_readers: Arc<readers::Readers>,
    /// The hot reads' answers, invalidated by the writes below that change them.
    cache: Arc<Caches>,
    /// Set by the writer connection whenever it changes a row of `folders` (their counts
    /// included, which the monitors' triggers keep): a write that cannot tell whether it did
    /// (a check's record, changing a monitor's failing state or not) reads it after its commit.
    folders_written: Arc<AtomicBool>,
    /// The WAL's checkpoints, off the writer.
    checkpoints: Arc<checkpoints::Checkpoints>,
    history_retention: u32,
    deliveries_per_hour: Option<std::num::NonZeroU32>,
    quotas: Quotas,
    /// The shared lock every process using the file holds, so a restore refuses while it is
    /// used ([`backup::Lock`]).
    _lock: Arc<backup::Lock>,
}

impl SqliteStore {
    /// Opens (creating if needed) and migrates the database at `path`, with the default
    /// settings.
    pub async fn open(path: &Path) -> Result<SqliteStore, OpenError> {
        SqliteStore::open_with(path, &StoreSettings::default()).await
    }

    /// Opens (creating if needed) and migrates the database at `path`.
    pub async fn open_with(
        path: &Path,
        settings: &StoreSettings,
    ) -> Result<SqliteStore, OpenError> {
        let shown = path.display().to_string();
        private_file(path).map_err(|err| OpenError::Open {
            path: shown.clone(),
            reason: err.to_string(),
        })?;
        let lock = backup::Lock::shared(path).map_err(|err| OpenError::Open {
            path: shown.clone(),
            reason: err.to_string(),
        })?;
        let open_err = |err: sqlx::Error| OpenError::Open {
            path: shown.clone(),
            reason: err.to_string(),
        };
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // With WAL, NORMAL loses nothing when the process dies; only a power cut can take
            // the last transactions.
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            .busy_timeout(BUSY_TIMEOUT);
        // Checkpoints are taken by a connection of their own (`checkpoints`); the writer's are
        // the bound on the WAL.
        let writer_options = options.clone().pragma(
            "wal_autocheckpoint",
            checkpoints::WRITER_CHECKPOINT_PAGES.to_string(),
        );
        // A connection to a local file does not go stale: a ping before each transaction would
        // only be one more round trip to its thread, on the writer that every check waits for.
        let folders_written = Arc::new(AtomicBool::new(false));
        let written = folders_written.clone();
        let writer = SqlitePoolOptions::new()
            .max_connections(1)
            .test_before_acquire(false)
            .acquire_timeout(BUSY_TIMEOUT * 3)
            .after_connect(move |conn, _| {
                let written = written.clone();
                Box::pin(async move {
                    conn.lock_handle().await?.set_update_hook(move |change| {
                        if change.table == "folders" {
                            written.store(true, Ordering::Release);
                        }
                    });
                    Ok(())
                })
            })
            .after_release(|conn, _| Box::pin(discard_if_in_transaction(conn)))
            .connect_with(writer_options)
            .await
            .map_err(open_err)?;
        migrate(&MIGRATOR, &writer, &shown, || bucket_hosts(&writer)).await?;
        let checkpoints = Arc::new(checkpoints::Checkpoints::start(options.clone()));
        let options = options.read_only(true);
        let lent_readers = readers::Readers::new(options.clone(), READERS as usize);
        let reader = SqlitePoolOptions::new()
            .max_connections(READERS)
            .test_before_acquire(false)
            .acquire_timeout(BUSY_TIMEOUT * 3)
            .connect_with(options)
            .await
            .map_err(open_err)?;
        Ok(SqliteStore {
            writer,
            reader,
            lent_readers: Arc::new(lent_readers),
            cache: Arc::new(Caches::default()),
            folders_written,
            checkpoints,
            history_retention: settings.retention(),
            deliveries_per_hour: settings.delivery_limit(),
            quotas: settings.quotas,
            _lock: Arc::new(lock),
        })
    }

    /// Where a read runs: the pool of readers, which never wait for the writer.
    fn reads(&self) -> &SqlitePool {
        &self.reader
    }

    /// Where a write of one statement runs: the single writer.
    fn writes(&self) -> &SqlitePool {
        &self.writer
    }

    /// A write transaction that takes the write lock at once (`BEGIN IMMEDIATE`): a deferred
    /// one that reads first can find its snapshot stale when another process (`wachet user
    /// add`) wrote meanwhile, and SQLite fails it instead of waiting.
    async fn write(&self) -> Result<sqlx::Transaction<'static, sqlx::Sqlite>, sqlx::Error> {
        self.writer.begin_with("BEGIN IMMEDIATE").await
    }

    /// A write transaction of `user`'s monitors and folders: the single writer runs them one
    /// after another already.
    async fn write_for(
        &self,
        _user: &str,
    ) -> Result<sqlx::Transaction<'static, sqlx::Sqlite>, StoreError> {
        Ok(self.write().await?)
    }

    /// A committed write may have changed a folder's counts: when it did (or any write since
    /// the last look did), the folder pages listed before it are not used again.
    fn listings_changed_if_folders_were(&self) {
        if self.folders_written.swap(false, Ordering::AcqRel) {
            self.cache.listings.moved_on();
        }
    }

    /// Applies the retention to the series of `task` after a write to them. A failure is logged,
    /// not returned: the write itself is stored, and the next one prunes again.
    async fn prune(&self, task: &str) {
        if let Err(err) = history::prune(self, task, self.history_retention).await {
            tracing::warn!(%task, %err, "cannot prune the history");
        }
    }

    /// The pool of read-only connections, for a command that reads every table as it is
    /// (`wachet migrate`).
    pub(crate) fn read_pool(&self) -> &SqlitePool {
        &self.reader
    }

    /// Closes the pools, checkpointing the WAL.
    pub async fn close(&self) {
        self.checkpoints.close().await;
        self.lent_readers.close().await;
        self.reader.close().await;
        self.writer.close().await;
    }
}

/// Whether the writer connection coming back to its pool may be lent again (`false`: it is
/// closed, and the pool opens a new one for the next write). A transaction dropped without its
/// commit (its write failed, or its caller was cancelled) queued a `ROLLBACK`; the ping waits
/// for it. When that `ROLLBACK` failed too (SQLite had already rolled the transaction back
/// itself, as it does on a full disk or an I/O error, so there was none to roll back), sqlx
/// still counts the connection inside a transaction, and would refuse every later `BEGIN` on
/// it ("attempted to call begin_with at non-zero transaction depth"): every write would fail
/// from then on, even once the disk has room again. Such a connection is not lent again.
async fn discard_if_in_transaction(conn: &mut sqlx::SqliteConnection) -> Result<bool, sqlx::Error> {
    use sqlx::Connection;
    if !conn.is_in_transaction() {
        return Ok(true);
    }
    conn.ping().await?;
    if conn.is_in_transaction() {
        tracing::debug!("the writer was left inside a failed transaction; it is replaced");
        return Ok(false);
    }
    Ok(true)
}

/// Makes the database file readable by its owner only (0600), creating it so when it is new,
/// whatever the umask: SQLite gives its -wal and -shm files the mode of the database file, so
/// they follow. An existing file open to others is narrowed, with its -wal and -shm.
fn private_file(path: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
        {
            Ok(_) => return Ok(()),
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(err) => return Err(err),
        }
        for suffix in ["", "-wal", "-shm"] {
            let mut file = path.as_os_str().to_owned();
            file.push(suffix);
            let file = Path::new(&file);
            let Ok(metadata) = std::fs::metadata(file) else {
                continue;
            };
            let open_to_others = metadata.permissions().mode() & 0o077 != 0;
            if open_to_others
                && let Err(err) =
                    std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o600))
            {
                tracing::warn!(file = %file.display(), %err, "cannot make the database private");
            }
        }
    }
    Ok(())
}

super::both::store_basics!(
    SqliteStore,
    sqlx::Sqlite,
    unbucketed: "SELECT id, url FROM tasks WHERE host_bucket < 0 LIMIT 1000",
    bucket: "UPDATE tasks SET host_bucket = $1, host = $2 WHERE id = $3",
);

/// `true`/`false` as stored.
fn flag(value: bool) -> i64 {
    i64::from(value)
}
