//! Workers as stored: the row of a live worker read back as [`LiveWorker`], and the process id
//! in the width a schema keeps it.

use crate::store::{LiveWorker, WorkerInfo};
use std::time::Duration;

/// How far back the window `within` of [`WorkerStore::live_workers`](crate::store::WorkerStore)
/// reaches, in milliseconds: one too long to count reaches back to the start, never to now.
pub(crate) fn window(within: Duration) -> i64 {
    i64::try_from(within.as_millis()).unwrap_or(i64::MAX)
}

/// A worker's row, its process id `P` in the schema's width.
#[derive(sqlx::FromRow)]
pub(crate) struct WorkerRow<P> {
    id: String,
    roles: String,
    location: Option<String>,
    kinds: String,
    host: String,
    pid: P,
    started_at: i64,
    heartbeat_at: i64,
}

/// The columns of [`WorkerRow`], in its order.
pub(crate) const WORKER_COLUMNS: &str =
    "id, roles, location, kinds, host, pid, started_at, heartbeat_at";

/// The live worker of `row`.
pub(crate) fn live<P>(row: WorkerRow<P>) -> LiveWorker
where
    u32: TryFrom<P>,
{
    LiveWorker {
        info: WorkerInfo {
            id: row.id,
            roles: row.roles,
            location: row.location,
            kinds: row.kinds,
            host: row.host,
            pid: u32::try_from(row.pid).unwrap_or(0),
            started_at: row.started_at,
        },
        heartbeat_at: row.heartbeat_at,
    }
}

/// `pid` as a column of type `P`: `max` when it does not fit.
pub(crate) fn pid_column<P: TryFrom<u32>>(pid: u32, max: P) -> P {
    P::try_from(pid).unwrap_or(max)
}

/// A host bucket as its column holds it, in either schema's width (0 if it cannot be one).
pub(crate) fn bucket<B: TryInto<i16>>(column: B) -> i16 {
    column.try_into().unwrap_or(0)
}
