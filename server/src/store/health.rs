//! Whether the database can serve: the readiness probe's question ([`HealthStore::readiness`]:
//! does it answer, are its migrations the binary's), and the failures that mean it cannot be
//! written for now (a full disk, an I/O error, a lock held past the busy timeout, a lost
//! connection), told apart from every other failure ([`unavailable`], which makes them
//! [`StoreError::Unavailable`]). Such a failure repeats on every write until an operator frees
//! space or the database comes back, so it is logged once a minute with the count of writes it
//! failed ([`outage`]), not once a write, and shown in `/metrics`; the first write that succeeds
//! again ([`writes_resumed`]) says so once.

use super::StoreError;
use async_trait::async_trait;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How often a database that keeps failing writes is logged.
pub const LOG_EVERY: Duration = Duration::from_secs(60);

/// Why the database cannot serve.
#[derive(Debug, thiserror::Error)]
pub enum NotReady {
    /// It does not answer (or answers an error).
    #[error("the database does not answer: {0}")]
    Unreachable(String),
    /// Its schema is not the one this binary was built for: migrations missing, failed or from
    /// a newer binary.
    #[error("the database's migrations are at version {applied}, this binary's at {known}")]
    Migrations {
        /// The newest migration applied successfully (0: none).
        applied: i64,
        /// The newest migration this binary has.
        known: i64,
    },
}

/// The database's health, as the readiness probe asks it.
#[async_trait]
pub trait HealthStore: Send + Sync + 'static {
    /// Reads the newest migration applied from the database itself: `Ok` when it answers and
    /// that migration is this binary's newest, and none failed.
    async fn readiness(&self) -> Result<(), NotReady>;
}

/// The query both backends answer the readiness probe with: the newest migration applied
/// successfully, and how many failed (sqlx marks a failed one `success = false`).
pub(crate) const MIGRATIONS_APPLIED: &str = "SELECT CAST(COALESCE(MAX(CASE WHEN success THEN version END), 0) AS BIGINT), \
     CAST(COUNT(CASE WHEN NOT success THEN 1 END) AS BIGINT) FROM _sqlx_migrations";

/// The readiness answer from [`MIGRATIONS_APPLIED`]'s row.
pub(crate) fn judge(
    row: Result<(i64, i64), sqlx::Error>,
    migrator: &sqlx::migrate::Migrator,
) -> Result<(), NotReady> {
    let known = migrator.iter().map(|m| m.version).max().unwrap_or(0);
    match row {
        Ok((applied, 0)) if applied == known => Ok(()),
        Ok((applied, _)) => Err(NotReady::Migrations { applied, known }),
        Err(err) => Err(NotReady::Unreachable(err.to_string())),
    }
}

/// Whether `err` means the database cannot be written (or reached) for now, through nothing the
/// call did: it will fail the same for every write until the cause goes away.
pub(crate) fn unavailable(err: &sqlx::Error) -> bool {
    match err {
        sqlx::Error::Io(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::WorkerCrashed
        | sqlx::Error::Tls(_) => true,
        sqlx::Error::Database(db) => {
            if db.try_downcast_ref::<sqlx::sqlite::SqliteError>().is_some() {
                // The primary result code (the low byte of an extended one).
                let code = db
                    .code()
                    .and_then(|code| code.parse::<i32>().ok())
                    .unwrap_or(0);
                const BUSY: i32 = 5;
                const LOCKED: i32 = 6;
                const NOMEM: i32 = 7;
                const READONLY: i32 = 8;
                const IOERR: i32 = 10;
                const FULL: i32 = 13;
                const CANTOPEN: i32 = 14;
                return matches!(
                    code & 0xff,
                    BUSY | LOCKED | NOMEM | READONLY | IOERR | FULL | CANTOPEN
                );
            }
            // PostgreSQL's classes: connection exceptions, insufficient resources (a full
            // disk), operator intervention (a shutdown), system errors (I/O); a standby that
            // cannot be written.
            let code = db.code().unwrap_or_default();
            ["08", "53", "57P", "58"]
                .iter()
                .any(|class| code.starts_with(class))
                || code == "25006"
        }
        _ => false,
    }
}

/// The failing writes of this process, for the log and `/metrics`.
struct Outage {
    /// Writes failed since the database was last written.
    failed: AtomicU64,
    /// Whether the last write failed.
    failing: AtomicBool,
    /// When the outage was last logged, and the failures counted then.
    logged: Mutex<Option<(Instant, u64)>>,
}

static OUTAGE: Outage = Outage {
    failed: AtomicU64::new(0),
    failing: AtomicBool::new(false),
    logged: Mutex::new(None),
};

/// Writes of this process that failed because the database could not be written, in all.
static FAILED_TOTAL: AtomicU64 = AtomicU64::new(0);

/// Takes `err`, met by `what` (a check's record, a claim, a heartbeat): when it says the
/// database cannot be written for now ([`StoreError::Unavailable`]), counts it and logs it at
/// most once a [`LOG_EVERY`], with the failures since the last line, and answers `true`;
/// any other error is the caller's to log (`false`).
pub fn outage(err: &StoreError, what: &str) -> bool {
    let StoreError::Unavailable(detail) = err else {
        return false;
    };
    FAILED_TOTAL.fetch_add(1, Ordering::Relaxed);
    let failed = OUTAGE.failed.fetch_add(1, Ordering::AcqRel) + 1;
    OUTAGE.failing.store(true, Ordering::Release);
    let mut logged = OUTAGE
        .logged
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let now = Instant::now();
    let due = logged.is_none_or(|(at, _)| now.duration_since(at) >= LOG_EVERY);
    if due {
        let since = logged.map_or(0, |(_, count)| count);
        tracing::error!(
            %detail,
            what,
            failed_writes = failed - since,
            "the database cannot be written; reads go on, writes are tried again (logged once a minute)"
        );
        *logged = Some((now, failed));
    }
    true
}

/// A write succeeded: when writes were failing, says once that they resumed.
pub fn writes_resumed() {
    if !OUTAGE.failing.swap(false, Ordering::AcqRel) {
        return;
    }
    let failed = OUTAGE.failed.swap(0, Ordering::AcqRel);
    *OUTAGE
        .logged
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
    tracing::warn!(failed_writes = failed, "the database is written again");
}

/// Whether the last write of this process failed because the database could not be written.
pub fn writes_failing() -> bool {
    OUTAGE.failing.load(Ordering::Acquire)
}

/// The metrics of failing writes, in the Prometheus text format.
pub fn render_metrics(out: &mut String) {
    use std::fmt::Write;
    let _ = writeln!(
        out,
        "# HELP wachet_database_writes_failing 1 while the database cannot be written (a full \
         disk, an I/O error, a lock held too long), 0 once a write succeeds again.\n\
         # TYPE wachet_database_writes_failing gauge\nwachet_database_writes_failing {}\n\
         # HELP wachet_database_write_failures_total Writes that failed because the database \
         could not be written.\n# TYPE wachet_database_write_failures_total counter\n\
         wachet_database_write_failures_total {}",
        u8::from(writes_failing()),
        FAILED_TOTAL.load(Ordering::Relaxed),
    );
}
