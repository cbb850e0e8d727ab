//! [`WorkerStore`] on SQLite: a beat writes the worker's row and renews the leases it holds
//! (each still under its claim's token) in the writer's one transaction; leaving frees them.
//! Every process on the file shares its clock, the machine's. The beat and leaving are written
//! once for both backends in [`crate::store::both::workers`]; here is how each lease is
//! renewed and freed, and how the host buckets are balanced.

use super::SqliteStore;
use crate::store::shape::workers::{WORKER_COLUMNS, WorkerRow, live};
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

/// Balances the host buckets of `worker`'s pool at a beat ([`WorkerStore::beat`]); the buckets
/// it holds after.
async fn balance(
    tx: &mut Transaction<'_, Sqlite>,
    worker: &WorkerInfo,
    now: Millis,
    until: Millis,
    lease: Millis,
) -> Result<HostBuckets, StoreError> {
    if !worker.checks() {
        return Ok(HostBuckets::NONE);
    }
    let pool = worker.location.as_deref().unwrap_or("");
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
    let (live,): (i64,) = sqlx::query_as(
        "SELECT count(*) FROM workers WHERE coalesce(location, '') = ? \
         AND ',' || roles || ',' LIKE '%,worker,%' AND heartbeat_at >= ?",
    )
    .bind(pool)
    .bind(now - lease)
    .fetch_one(&mut **tx)
    .await?;
    let share = crate::store::workers::bucket_share(live);
    let mut owned: Vec<(i64,)> = sqlx::query_as(
        "UPDATE host_buckets SET lease_until = ? WHERE pool = ? AND worker_id = ? \
         AND NOT draining RETURNING bucket",
    )
    .bind(until)
    .bind(pool)
    .bind(&worker.id)
    .fetch_all(&mut **tx)
    .await?;
    owned.sort_unstable();
    let have = i64::try_from(owned.len()).unwrap_or(i64::MAX);
    if have > share {
        // A worker joined: the highest buckets go back for it to take, once this worker's
        // checks of their hosts had a lease's time to end (so two workers never check one host
        // at once while the buckets move).
        let keep = usize::try_from(share).unwrap_or(0);
        for (bucket,) in owned.split_off(keep) {
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
    } else if have < share {
        let taken: Vec<(i64,)> = sqlx::query_as(
            "UPDATE host_buckets SET worker_id = ?1, lease_until = ?2, draining = FALSE \
             WHERE pool = ?3 AND bucket IN (SELECT bucket FROM host_buckets WHERE pool = ?3 \
             AND coalesce(lease_until, 0) < ?4 ORDER BY bucket LIMIT ?5) \
             RETURNING bucket",
        )
        .bind(&worker.id)
        .bind(until)
        .bind(pool)
        .bind(now)
        .bind(share - have)
        .fetch_all(&mut **tx)
        .await?;
        owned.extend(taken);
    }
    Ok(HostBuckets::of(
        owned.into_iter().map(|(b,)| i16::try_from(b).unwrap_or(0)),
    ))
}

crate::store::both::workers::worker_store!(SqliteStore, Sqlite, pid: i64, {
    async fn live_workers(&self, within: Duration) -> Result<Vec<LiveWorker>, StoreError> {
        let since = now_millis().saturating_sub(i64::try_from(within.as_millis()).unwrap_or(0));
        let rows: Vec<WorkerRow<i64>> = sqlx::query_as(AssertSqlSafe(format!(
            "SELECT {WORKER_COLUMNS} FROM workers WHERE heartbeat_at >= $1 ORDER BY started_at, id"
        )))
        .bind(since)
        .fetch_all(&self.reader)
        .await?;
        Ok(rows.into_iter().map(live).collect())
    }
});
