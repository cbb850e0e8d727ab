//! [`WorkerStore`] on PostgreSQL: a beat writes the worker's row and renews every lease it holds
//! (each still under its claim's token) in one transaction, one statement a kind whatever it
//! holds; leases and beats are on the database's clock, so workers on machines whose clocks
//! differ agree on who is live and whose lease ran out. The beat and leaving are written once for
//! both backends in [`crate::store::both::workers`]; here is how each kind of lease is renewed
//! and freed, and how the host buckets are balanced.

use super::PgStore;
use super::schedule::DB_NOW;
use crate::store::shape::workers::{WORKER_COLUMNS, WorkerRow, live, window};
use crate::store::{
    Beat, HOST_BUCKETS, Held, Holdings, HostBuckets, LiveWorker, Lost, StoreError, WorkerInfo,
    WorkerStore,
};
use sqlx::{AssertSqlSafe, Postgres, Transaction};
use std::collections::HashSet;
use std::time::Duration;

/// A kind of lease: its table, id column and token column.
struct Leases {
    table: &'static str,
    id: &'static str,
    token: &'static str,
}

const CHECKS: Leases = Leases {
    table: "schedules",
    id: "task_id",
    token: "token",
};
const DELIVERIES: Leases = Leases {
    table: "deliveries",
    id: "id",
    token: "lease_token",
};
/// A mail is named by its claim's code hash, new with each claim; its token is always 0.
const MAILS: Leases = Leases {
    table: "email_addresses",
    id: "token_hash",
    token: "0",
};

/// The SQL of a lease's token: its column, or the constant `0` of mails.
fn token_column(token: &str) -> String {
    match token {
        "0" => "0".to_string(),
        column => format!("l.{column}"),
    }
}

/// Renews each of `held` until `until`; those no longer held.
async fn renew(
    tx: &mut Transaction<'_, Postgres>,
    leases: &Leases,
    held: &[Held],
    until: i64,
) -> Result<Vec<Held>, StoreError> {
    if held.is_empty() {
        return Ok(Vec::new());
    }
    let (ids, tokens): (Vec<&str>, Vec<i64>) =
        held.iter().map(|h| (h.id.as_str(), h.token)).unzip();
    let Leases { table, id, token } = leases;
    let token_of = token_column(token);
    // The rows locked first, one by one in the order of their ids (bytewise, as a group of
    // checks locks its schedules: `record_group`), so a beat and a group never hold one row
    // each while waiting for the other's: the UPDATE alone locks them in whatever order its
    // join meets them, which deadlocked with a group writing two of them (PostgreSQL then ends
    // one of the two after a second).
    sqlx::query(AssertSqlSafe(format!(
        "SELECT 1 FROM {table} WHERE {id} = ANY($1::TEXT[]) \
         ORDER BY {id} COLLATE \"C\" FOR UPDATE"
    )))
    .bind(&ids)
    .execute(&mut **tx)
    .await?;
    let renewed: Vec<(String,)> = sqlx::query_as(AssertSqlSafe(format!(
        "UPDATE {table} l SET lease_until = $1 \
         FROM unnest($2::TEXT[], $3::BIGINT[]) AS h(id, token) \
         WHERE l.{id} = h.id AND {token_of} = h.token AND l.lease_until IS NOT NULL \
         RETURNING l.{id}"
    )))
    .bind(until)
    .bind(&ids)
    .bind(&tokens)
    .fetch_all(&mut **tx)
    .await?;
    let renewed: HashSet<String> = renewed.into_iter().map(|(id,)| id).collect();
    Ok(held
        .iter()
        .filter(|claim| !renewed.contains(&claim.id))
        .cloned()
        .collect())
}

/// Frees each of `held`, raising its token: a check the leaving process could not stop stores
/// nothing.
async fn free(
    tx: &mut Transaction<'_, Postgres>,
    leases: &Leases,
    held: &[Held],
) -> Result<(), StoreError> {
    if held.is_empty() {
        return Ok(());
    }
    let (ids, tokens): (Vec<&str>, Vec<i64>) =
        held.iter().map(|h| (h.id.as_str(), h.token)).unzip();
    let Leases { table, id, token } = leases;
    let token_of = token_column(token);
    // Freeing raises the token (a mail's claim is its code hash: nothing to raise).
    let raise = match *token {
        "0" => String::new(),
        column => format!(", {column} = l.{column} + 1"),
    };
    sqlx::query(AssertSqlSafe(format!(
        "UPDATE {table} l SET lease_until = NULL{raise} \
         FROM unnest($1::TEXT[], $2::BIGINT[]) AS h(id, token) \
         WHERE l.{id} = h.id AND {token_of} = h.token"
    )))
    .bind(&ids)
    .bind(&tokens)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Makes the rows of `pool`'s host buckets, under a lock of the pool's for the transaction:
/// workers of one pool beating at once balance one after the other, so two never take the same
/// free bucket nor count each other's half-done share.
async fn pool_in(tx: &mut Transaction<'_, Postgres>, pool: &str) -> Result<(), StoreError> {
    sqlx::query("SELECT pg_advisory_xact_lock(hashtext('wachet.buckets:' || $1))")
        .bind(pool)
        .execute(&mut **tx)
        .await?;
    sqlx::query(
        "INSERT INTO host_buckets (pool, bucket) SELECT $1, b::SMALLINT \
         FROM generate_series(0, $2 - 1) AS b ON CONFLICT DO NOTHING",
    )
    .bind(pool)
    .bind(i32::try_from(HOST_BUCKETS).unwrap_or(64))
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Drains `buckets` of `pool` until `until`, in one statement.
async fn drain_in(
    tx: &mut Transaction<'_, Postgres>,
    pool: &str,
    buckets: &[i16],
    until: i64,
) -> Result<(), StoreError> {
    sqlx::query(
        "UPDATE host_buckets SET draining = TRUE, lease_until = $3 \
         WHERE pool = $1 AND bucket = ANY($2)",
    )
    .bind(pool)
    .bind(buckets)
    .bind(until)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Now, on the leases' clock: the database's, which every process shares.
async fn clock_in(tx: &mut Transaction<'_, Postgres>) -> Result<i64, StoreError> {
    super::schedule::db_now(tx).await
}

crate::store::both::workers::worker_store!(PgStore, Postgres, pid: i32, bucket: i16, {
    async fn live_workers(&self, within: Duration) -> Result<Vec<LiveWorker>, StoreError> {
        let within = window(within);
        let rows: Vec<WorkerRow<i32>> = sqlx::query_as(AssertSqlSafe(format!(
            "SELECT {WORKER_COLUMNS} FROM workers \
             WHERE heartbeat_at >= {DB_NOW} - $1 ORDER BY started_at, id"
        )))
        .bind(within)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().map(live).collect())
    }
});
