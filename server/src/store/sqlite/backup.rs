//! Backups of a SQLite database while the service runs on it, and putting one back.
//!
//! A copy of the file alone can be torn (the newest transactions live in the `-wal` file until a
//! checkpoint), so [`backup`] asks SQLite for a consistent snapshot (`VACUUM INTO`, which reads
//! in one transaction while the service goes on writing) into a file beside the target, checks
//! it (`PRAGMA integrity_check`, and that it is a wachet database) and only then renames it to
//! the name asked for: a failure (a full disk) leaves nothing half-written.
//!
//! Every process that opens a database for the service holds a shared lock on its lock file
//! (`<db>-lock`, [`Lock`]); [`restore`] takes it exclusively, so it refuses while a service, or
//! `wachet user`, uses the target, and nothing starts on the target while it runs. It checks the
//! backup as [`backup`] checks its copy, copies it beside the target, moves the database it
//! replaces (with its `-wal` and `-shm`, which belong to it alone) aside under a dated name, and
//! renames the copy into place. A refusal changes nothing.

use super::MIGRATOR;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};
use sqlx::{ConnectOptions, Connection};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a backup waits for the service's write lock (the copy itself takes none).
const BUSY: Duration = Duration::from_secs(30);

/// Why a backup or restore did nothing.
#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    /// There is no database to back up.
    #[error("no database at {0}")]
    NoDatabase(String),
    /// The file to write exists already.
    #[error("{0} exists already; choose a new name (a backup never overwrites)")]
    Exists(String),
    /// The file is not a database of this wachet (or not a SQLite database at all).
    #[error("{path} is not a wachet database: {reason}")]
    NotWachet {
        /// The file.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The copy failed its integrity check.
    #[error("the copy in {path} is damaged: {reason}")]
    Damaged {
        /// The file.
        path: String,
        /// What SQLite's check said.
        reason: String,
    },
    /// A service (or another command) uses the database.
    #[error(
        "{0} is in use by a running wachet (a service or a command); stop it first, then restore"
    )]
    InUse(String),
    /// Reading or writing failed (a full disk, permissions).
    #[error("{what}: {reason}")]
    Io {
        /// What was being done.
        what: String,
        /// Why it failed.
        reason: String,
    },
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> BackupError {
    let what = what.into();
    move |err| BackupError::Io {
        what,
        reason: err.to_string(),
    }
}

fn sql(what: impl Into<String>) -> impl FnOnce(sqlx::Error) -> BackupError {
    let what = what.into();
    move |err| BackupError::Io {
        what,
        reason: err.to_string(),
    }
}

/// What a backup wrote.
#[derive(Debug)]
pub struct Backup {
    /// Its size in bytes.
    pub bytes: u64,
    /// Monitors in it.
    pub monitors: i64,
    /// History entries in it.
    pub entries: i64,
}

/// The lock every process using a database holds: shared by the service and the commands,
/// exclusive for a restore. Released when dropped.
#[derive(Debug)]
pub struct Lock {
    _file: std::fs::File,
}

/// The lock file of database `db`: `<db>-lock`, beside SQLite's `-wal` and `-shm`.
fn lock_path(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push("-lock");
    PathBuf::from(name)
}

impl Lock {
    /// The shared lock on `db`, as the service holds it; an error when a restore holds it.
    pub fn shared(db: &Path) -> std::io::Result<Lock> {
        let file = open_lock(db)?;
        match file.try_lock_shared() {
            Ok(()) => Ok(Lock { _file: file }),
            Err(std::fs::TryLockError::WouldBlock) => Err(std::io::Error::other(
                "a restore is replacing this database; try again once it has finished",
            )),
            Err(std::fs::TryLockError::Error(err)) => Err(err),
        }
    }

    /// Whether a process (a service or a command) holds `db` open now. The answer may be old
    /// by the time it is read: for a command that asks before it opens the database itself.
    pub fn in_use(db: &Path) -> std::io::Result<bool> {
        Lock::exclusive(db).map(|lock| lock.is_none())
    }

    /// The exclusive lock on `db`; `None` while any process holds it.
    fn exclusive(db: &Path) -> std::io::Result<Option<Lock>> {
        let file = open_lock(db)?;
        match file.try_lock() {
            Ok(()) => Ok(Some(Lock { _file: file })),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(err)) => Err(err),
        }
    }
}

fn open_lock(db: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(lock_path(db))
}

/// A connection to the existing database `path`, read-only when `read_only`.
async fn connect(path: &Path, read_only: bool) -> Result<SqliteConnection, sqlx::Error> {
    SqliteConnectOptions::new()
        .filename(path)
        .read_only(read_only)
        .busy_timeout(BUSY)
        .connect()
        .await
}

/// Checks that the database on `conn` (the file `path`) is whole and is a wachet database this
/// binary can open: its migrations are this binary's (or older), the monitors' table is there.
/// Answers its counts of monitors and history entries.
async fn verify(conn: &mut SqliteConnection, path: &Path) -> Result<(i64, i64), BackupError> {
    let shown = path.display().to_string();
    let not_wachet = |reason: String| BackupError::NotWachet {
        path: shown.clone(),
        reason,
    };
    let check: Vec<String> = sqlx::query_scalar("PRAGMA integrity_check")
        .fetch_all(&mut *conn)
        .await
        .map_err(|err| not_wachet(err.to_string()))?;
    if check != ["ok"] {
        return Err(BackupError::Damaged {
            path: shown.clone(),
            reason: check.join("; "),
        });
    }
    let known = MIGRATOR.iter().map(|m| m.version).max().unwrap_or(0);
    let applied: Option<i64> =
        sqlx::query_scalar("SELECT MAX(version) FROM _sqlx_migrations WHERE success")
            .fetch_one(&mut *conn)
            .await
            .map_err(|_| not_wachet("it has no wachet schema".into()))?;
    let applied = applied.ok_or_else(|| not_wachet("it has no wachet schema".into()))?;
    if applied > known {
        return Err(not_wachet(format!(
            "its schema version {applied} is newer than this wachet's ({known})"
        )));
    }
    let counts: (i64, i64) =
        sqlx::query_as("SELECT (SELECT COUNT(*) FROM tasks), (SELECT COUNT(*) FROM entries)")
            .fetch_one(&mut *conn)
            .await
            .map_err(|err| not_wachet(err.to_string()))?;
    Ok(counts)
}

/// A new file's name beside `path`, for the copy made before it takes `path`'s name.
fn beside(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Removes a partial copy (and what SQLite may have left beside it); a failure to is ignored,
/// as the error that led here is the one to report.
fn discard(path: &Path) {
    for suffix in ["", "-journal", "-wal", "-shm"] {
        let _ = std::fs::remove_file(beside(path, suffix));
    }
}

/// Backs the database `db` up into the new file `to`: see the module's documentation.
pub async fn backup(db: &Path, to: &Path) -> Result<Backup, BackupError> {
    if !db.is_file() {
        return Err(BackupError::NoDatabase(db.display().to_string()));
    }
    if to.exists() {
        return Err(BackupError::Exists(to.display().to_string()));
    }
    // Held while copying: a restore cannot replace the database under the backup.
    let _lock = Lock::shared(db).map_err(io(format!("cannot lock {}", db.display())))?;
    let partial = beside(to, ".partial");
    discard(&partial);
    // The copy holds everything the database does (password hashes included): private from
    // the start. VACUUM INTO writes into an empty file.
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options
        .open(&partial)
        .map_err(io(format!("cannot create {}", partial.display())))?;
    let copied = async {
        let mut source = connect(db, false)
            .await
            .map_err(sql(format!("cannot open {}", db.display())))?;
        // The source must be a wachet database too: a backup of anything else is a mistake.
        let check: Option<i64> =
            sqlx::query_scalar("SELECT MAX(version) FROM _sqlx_migrations WHERE success")
                .fetch_one(&mut source)
                .await
                .map_err(|_| BackupError::NotWachet {
                    path: db.display().to_string(),
                    reason: "it has no wachet schema".into(),
                })?;
        if check.is_none() {
            return Err(BackupError::NotWachet {
                path: db.display().to_string(),
                reason: "it has no wachet schema".into(),
            });
        }
        let target = partial.to_str().ok_or_else(|| BackupError::Io {
            what: "cannot name the copy".into(),
            reason: "the path is not UTF-8".into(),
        })?;
        sqlx::query("VACUUM INTO ?")
            .bind(target)
            .execute(&mut source)
            .await
            .map_err(sql(format!("cannot write the backup {}", to.display())))?;
        source.close().await.ok();
        let mut copy = connect(&partial, true)
            .await
            .map_err(sql(format!("cannot read the copy {}", partial.display())))?;
        let counts = verify(&mut copy, &partial).await;
        copy.close().await.ok();
        counts
    }
    .await;
    let (monitors, entries) = match copied {
        Ok(counts) => counts,
        Err(err) => {
            discard(&partial);
            return Err(err);
        }
    };
    let synced = std::fs::File::open(&partial)
        .and_then(|file| file.sync_all())
        .and_then(|()| std::fs::rename(&partial, to));
    if let Err(err) = synced {
        discard(&partial);
        return Err(io(format!("cannot write the backup {}", to.display()))(err));
    }
    let bytes = std::fs::metadata(to).map(|m| m.len()).unwrap_or(0);
    Ok(Backup {
        bytes,
        monitors,
        entries,
    })
}

/// What a restore did.
#[derive(Debug)]
pub struct Restored {
    /// Monitors in the database restored.
    pub monitors: i64,
    /// History entries in it.
    pub entries: i64,
    /// Where the database it replaced was moved, if there was one.
    pub replaced: Option<PathBuf>,
}

/// Checks that the file `path` exists and is a wachet database this binary can open, reading
/// it only (a file of something else is never migrated into one); answers its counts of
/// monitors and history entries.
pub async fn check(path: &Path) -> Result<(i64, i64), BackupError> {
    if !path.is_file() {
        return Err(BackupError::NoDatabase(path.display().to_string()));
    }
    let mut conn = connect(path, true)
        .await
        .map_err(|err| BackupError::NotWachet {
            path: path.display().to_string(),
            reason: err.to_string(),
        })?;
    let verified = verify(&mut conn, path).await;
    conn.close().await.ok();
    verified
}

/// Puts the backup `from` in place of the database `db`: see the module's documentation.
pub async fn restore(from: &Path, db: &Path) -> Result<Restored, BackupError> {
    if !from.is_file() {
        return Err(BackupError::NoDatabase(from.display().to_string()));
    }
    let mut backup = connect(from, true)
        .await
        .map_err(|err| BackupError::NotWachet {
            path: from.display().to_string(),
            reason: err.to_string(),
        })?;
    let verified = verify(&mut backup, from).await;
    backup.close().await.ok();
    let (monitors, entries) = verified?;
    if let Some(dir) = db.parent().filter(|d| !d.as_os_str().is_empty())
        && !dir.is_dir()
    {
        return Err(BackupError::NoDatabase(dir.display().to_string()));
    }
    let Some(_lock) = Lock::exclusive(db).map_err(io(format!("cannot lock {}", db.display())))?
    else {
        return Err(BackupError::InUse(db.display().to_string()));
    };
    let partial = beside(db, ".restoring");
    discard(&partial);
    let copied = std::fs::copy(from, &partial)
        .and_then(|_| std::fs::File::open(&partial).and_then(|f| f.sync_all()));
    if let Err(err) = copied {
        discard(&partial);
        return Err(io(format!(
            "cannot copy {} beside {}",
            from.display(),
            db.display()
        ))(err));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(&partial, std::fs::Permissions::from_mode(0o600));
    }
    // The database replaced goes aside with its -wal and -shm, which belong to it: left beside
    // the restored file, SQLite would apply that WAL to it.
    let replaced = if db.exists() {
        let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
        let aside = beside(db, &format!(".before-restore-{stamp}"));
        let moved = ["", "-wal", "-shm"].iter().try_for_each(|suffix| {
            let file = beside(db, suffix);
            match std::fs::rename(&file, beside(&aside, suffix)) {
                Err(err) if err.kind() != std::io::ErrorKind::NotFound => Err(err),
                _ => Ok(()),
            }
        });
        if let Err(err) = moved {
            // Put back what moved, so the target is as it was.
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::rename(beside(&aside, suffix), beside(db, suffix));
            }
            discard(&partial);
            return Err(io(format!("cannot move {} aside", db.display()))(err));
        }
        Some(aside)
    } else {
        None
    };
    std::fs::rename(&partial, db).map_err(io(format!("cannot put {} in place", db.display())))?;
    Ok(Restored {
        monitors,
        entries,
        replaced,
    })
}
