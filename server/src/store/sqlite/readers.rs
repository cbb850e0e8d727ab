//! Read-only connections held by the store itself, for the hottest reads that must reach the
//! database: a page of history, a page of a folder. sqlx's pool pings a SQLite connection when
//! it hands it out and again when it takes it back (each ping a round trip to the connection's
//! worker thread: a wake-up and a context switch each way), so a page read through the pool
//! cost three round trips for one statement; a profile of `GET /data/list` showed those
//! hand-offs as the largest part of its CPU. A file on the local disk cannot hang up, and these
//! connections only run read statements (no transaction is ever left open on them), so neither
//! ping buys anything here. A statement cut off by a dropped request is harmless: the
//! connection's worker runs commands in order and resets a statement whose rows nobody takes.

use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};
use sqlx::{ConnectOptions, Connection};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use tokio::sync::{Mutex, MutexGuard};

/// A few read-only connections, each opened on first use and lent to one caller at a time.
#[derive(Debug)]
pub(super) struct Readers {
    options: SqliteConnectOptions,
    slots: Vec<Mutex<Option<SqliteConnection>>>,
    /// Where the next caller starts looking for a free connection, so callers spread.
    next: AtomicUsize,
    /// Set by [`Readers::close`]: no connection is opened again.
    closed: AtomicBool,
}

/// A connection lent by [`Readers::get`]; back to its slot when dropped.
pub(super) struct Lent<'a>(MutexGuard<'a, Option<SqliteConnection>>);

impl Lent<'_> {
    /// The connection.
    pub(super) fn conn(&mut self) -> Result<&mut SqliteConnection, sqlx::Error> {
        self.0.as_mut().ok_or(sqlx::Error::PoolClosed)
    }
}

impl Readers {
    /// `count` connections (at least one) opened with `options`, which should be read-only.
    pub(super) fn new(options: SqliteConnectOptions, count: usize) -> Readers {
        Readers {
            options,
            slots: (0..count.max(1)).map(|_| Mutex::new(None)).collect(),
            next: AtomicUsize::new(0),
            closed: AtomicBool::new(false),
        }
    }

    /// A free connection, or the first one to come free; opened now when it is not yet.
    pub(super) async fn get(&self) -> Result<Lent<'_>, sqlx::Error> {
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        let count = self.slots.len();
        let free = (0..count).find_map(|i| self.slots[(start + i) % count].try_lock().ok());
        let mut slot = match free {
            Some(slot) => slot,
            None => self.slots[start % count].lock().await,
        };
        if slot.is_none() {
            if self.closed.load(Ordering::Acquire) {
                return Err(sqlx::Error::PoolClosed);
            }
            *slot = Some(self.options.connect().await?);
        }
        Ok(Lent(slot))
    }

    /// Closes every connection (waiting for those lent out), so the store's last connection to
    /// close is its writer's, which checkpoints the WAL.
    pub(super) async fn close(&self) {
        self.closed.store(true, Ordering::Release);
        for slot in &self.slots {
            if let Some(conn) = slot.lock().await.take() {
                let _ = conn.close().await;
            }
        }
    }
}
