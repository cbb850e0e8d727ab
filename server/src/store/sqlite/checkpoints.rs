//! The WAL's checkpoints, taken off the writer. SQLite copies the WAL back into the database
//! file (a checkpoint) in whichever connection's commit finds the WAL past its
//! `wal_autocheckpoint` size: left at its default, that was the single writer, every 4 MB of
//! WAL, inside a check's commit, with two `fsync`s, while every other check waited for the
//! writer. Here a connection of its own copies the WAL every [`EVERY`] (a passive checkpoint
//! never takes the write lock nor waits for it), and the writer's own checkpoint is kept as the
//! bound on the WAL's size ([`WRITER_CHECKPOINT_PAGES`]): by the time the writer reaches it,
//! most frames are copied already, so it costs the writer little.
//!
//! The task stops when the last handle of the store is dropped or the store is closed. A
//! checkpoint cut off by either, or by a crash, is one SQLite recovers from: a checkpoint only
//! copies frames that stay in the WAL until it has finished.

use sqlx::Connection;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;

/// How often the WAL is copied back.
const EVERY: Duration = Duration::from_millis(200);

/// WAL pages (4 KB each) past which the writer checkpoints in its own commit: SQLite's own bound
/// on the WAL, for when the checkpointer has not kept up (40 MB; SQLite's default is 1,000).
pub(super) const WRITER_CHECKPOINT_PAGES: u32 = 10_000;

/// The checkpointing task: stopped by [`Checkpoints::close`], or when dropped.
#[derive(Debug)]
pub(super) struct Checkpoints {
    stop: Arc<Notify>,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Checkpoints {
    /// Starts checkpointing the database `options` opens, on a connection of its own. A failure
    /// to open it or to checkpoint is logged, not returned: the writer's own checkpoints bound
    /// the WAL without it.
    pub(super) fn start(options: SqliteConnectOptions) -> Checkpoints {
        let stop = Arc::new(Notify::new());
        let stopped = stop.clone();
        let task = tokio::spawn(async move {
            let mut conn = match SqliteConnection::connect_with(&options).await {
                Ok(conn) => conn,
                Err(err) => {
                    tracing::warn!(%err, "cannot open the checkpointing connection; the writer checkpoints alone");
                    return;
                }
            };
            let mut failing = false;
            loop {
                tokio::select! {
                    () = tokio::time::sleep(EVERY) => {}
                    () = stopped.notified() => break,
                }
                match sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
                    .execute(&mut conn)
                    .await
                {
                    Ok(_) => failing = false,
                    // Once per run of failures, not every 200 ms.
                    Err(err) if !failing => {
                        failing = true;
                        tracing::warn!(%err, "cannot checkpoint the WAL; the writer checkpoints alone");
                    }
                    Err(_) => {}
                }
            }
            // Closed before the writer, whose close (the last connection's) checkpoints the
            // whole WAL and removes it.
            let _ = conn.close().await;
        });
        Checkpoints {
            stop,
            task: Mutex::new(Some(task)),
        }
    }

    /// Stops checkpointing and closes the connection.
    pub(super) async fn close(&self) {
        let task = self.task.lock().ok().and_then(|mut task| task.take());
        if let Some(task) = task {
            self.stop.notify_one();
            let _ = task.await;
        }
    }
}

impl Drop for Checkpoints {
    fn drop(&mut self) {
        if let Ok(mut task) = self.task.lock()
            && let Some(task) = task.take()
        {
            task.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::SqliteStore;
    use sqlx::{ConnectOptions, Connection};
    use std::time::{Duration, Instant};

    /// Rows of `t` in the database file alone (a copy without its WAL), if it has the table.
    async fn rows_in_file(path: &std::path::Path, copy: &std::path::Path) -> Option<i64> {
        std::fs::copy(path, copy).expect("copy the database file");
        let mut conn = sqlx::sqlite::SqliteConnectOptions::new()
            .filename(copy)
            .connect()
            .await
            .expect("open the copy");
        let rows = sqlx::query_as::<_, (i64,)>("SELECT count(*) FROM t")
            .fetch_one(&mut conn)
            .await
            .ok()
            .map(|(n,)| n);
        conn.close().await.expect("close the copy");
        rows
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_write_reaches_the_database_file_without_the_writer_checkpointing() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("wachet.db");
        let store = SqliteStore::open(&path).await.expect("open");
        sqlx::query("CREATE TABLE t (x INTEGER)")
            .execute(&store.writer)
            .await
            .expect("create");
        for x in 0..100 {
            sqlx::query("INSERT INTO t (x) VALUES (?)")
                .bind(x)
                .execute(&store.writer)
                .await
                .expect("insert");
        }
        // A few pages of WAL: far below the writer's own checkpoint, so only the
        // checkpointing connection copies them into the file.
        let copy = dir.path().join("copy.db");
        let started = Instant::now();
        let mut rows = None;
        while started.elapsed() < Duration::from_secs(10) {
            rows = rows_in_file(&path, &copy).await;
            if rows == Some(100) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(rows, Some(100), "the file holds every row within seconds");
        store.close().await;
        let wal = dir.path().join("wachet.db-wal");
        assert!(
            std::fs::metadata(&wal).map_or(true, |m| m.len() == 0),
            "closing the store checkpoints the whole WAL and removes it"
        );
    }
}
