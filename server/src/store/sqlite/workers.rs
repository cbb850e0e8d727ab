//! [`WorkerStore`] on SQLite: a beat writes the worker's row and renews the leases it holds
//! (each still under its claim's token) in the writer's one transaction; leaving frees them.
//! Every process on the file shares its clock, the machine's. The beat and leaving are written
//! once for both backends in [`crate::store::both::workers`]; here is how each lease is
//! renewed and freed, and how the host buckets are balanced.

use super::SqliteStore;
use crate::store::shape::workers::{WORKER_COLUMNS, WorkerRow, live, window};
use crate::store::{
    Beat, HOST_BUCKETS, Held, Holdings, HostBuckets, LiveWorker, Lost, Millis, StoreError,
    WorkerInfo, WorkerStore, now_millis,
};
use sqlx::{AssertSqlSafe, Sqlite, Transaction};
use std::time::Duration;

/// The statements that renew and free a lease of each kind, by id and token.
const CHECK_RENEW: &str = "UPDATE tasks SET lease_until = ?1 \
                           WHERE id = ?2 AND lease_token = ?3 AND lease_until IS NOT NULL";
const DELIVERY_RENEW: &str = "UPDATE deliveries SET lease_until = ?1 \
                              WHERE id = ?2 AND lease_token = ?3 AND lease_until IS NOT NULL";
/// Freeing also raises the token: a check the leaving process could not stop stores nothing.
const MAIL_RENEW: &str = "UPDATE email_addresses SET lease_until = ?1 \
                          WHERE token_hash = ?2 AND ?3 = 0 AND lease_until IS NOT NULL";
/// A mail is named by its claim's code hash, new with each claim: freeing it needs no token.
const MAIL_FREE: &str =
    "UPDATE email_addresses SET lease_until = NULL WHERE token_hash = ?1 AND ?2 = 0";
const CHECK_FREE: &str = "UPDATE tasks SET lease_until = NULL, lease_token = lease_token + 1 \
                          WHERE id = ?1 AND lease_token = ?2";
const DELIVERY_FREE: &str = "UPDATE deliveries SET lease_until = NULL, \
                             lease_token = lease_token + 1 WHERE id = ?1 AND lease_token = ?2";

/// A kind of lease: the statements that renew and free one, by id and token.
struct Leases {
    renew: &'static str,
    free: &'static str,
}

const CHECKS: Leases = Leases {
    renew: CHECK_RENEW,
    free: CHECK_FREE,
};
const DELIVERIES: Leases = Leases {
    renew: DELIVERY_RENEW,
    free: DELIVERY_FREE,
};
const MAILS: Leases = Leases {
    renew: MAIL_RENEW,
    free: MAIL_FREE,
};

/// Now, on the leases' clock: the machine's, which every process on the file shares.
async fn clock_in(_tx: &mut Transaction<'_, Sqlite>) -> Result<Millis, StoreError> {
    Ok(now_millis())
}

/// Renews each of `held` until `until`; those no longer held.
async fn renew(
    tx: &mut Transaction<'_, Sqlite>,
    leases: &Leases,
    held: &[Held],
    until: Millis,
) -> Result<Vec<Held>, StoreError> {
    let mut lost = Vec::new();
    for claim in held {
        let done = sqlx::query(leases.renew)
            .bind(until)
            .bind(&claim.id)
            .bind(claim.token)
            .execute(&mut **tx)
            .await?;
        if done.rows_affected() == 0 {
            lost.push(claim.clone());
        }
    }
    Ok(lost)
}

/// Frees each of `held`.
async fn free(
    tx: &mut Transaction<'_, Sqlite>,
    leases: &Leases,
    held: &[Held],
) -> Result<(), StoreError> {
    for claim in held {
        sqlx::query(leases.free)
            .bind(&claim.id)
            .bind(claim.token)
            .execute(&mut **tx)
            .await?;
    }
    Ok(())
}

/// Makes the rows of `pool`'s host buckets if they are not all there: the single writer
/// balances one pool at a time already.
async fn pool_in(tx: &mut Transaction<'_, Sqlite>, pool: &str) -> Result<(), StoreError> {
    let (rows,): (i64,) = sqlx::query_as("SELECT count(*) FROM host_buckets WHERE pool = ?")
        .bind(pool)
        .fetch_one(&mut **tx)
        .await?;
    if rows < i64::from(HOST_BUCKETS) {
        for bucket in 0..HOST_BUCKETS {
            sqlx::query("INSERT OR IGNORE INTO host_buckets (pool, bucket) VALUES (?, ?)")
                .bind(pool)
                .bind(bucket)
                .execute(&mut **tx)
                .await?;
        }
    }
    Ok(())
}

/// Drains `buckets` of `pool` until `until`, one at a time.
async fn drain_in(
    tx: &mut Transaction<'_, Sqlite>,
    pool: &str,
    buckets: &[i64],
    until: Millis,
) -> Result<(), StoreError> {
    for bucket in buckets {
        sqlx::query(
            "UPDATE host_buckets SET draining = TRUE, lease_until = ? \
             WHERE pool = ? AND bucket = ?",
        )
        .bind(until)
        .bind(pool)
        .bind(bucket)
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}

crate::store::both::workers::worker_store!(SqliteStore, Sqlite, pid: i64, bucket: i64, {
    async fn live_workers(&self, within: Duration) -> Result<Vec<LiveWorker>, StoreError> {
        let since = now_millis().saturating_sub(window(within));
        let rows: Vec<WorkerRow<i64>> = sqlx::query_as(AssertSqlSafe(format!(
            "SELECT {WORKER_COLUMNS} FROM workers WHERE heartbeat_at >= $1 ORDER BY started_at, id"
        )))
        .bind(since)
        .fetch_all(&self.reader)
        .await?;
        Ok(rows.into_iter().map(live).collect())
    }
});
