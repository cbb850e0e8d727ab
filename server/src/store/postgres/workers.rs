//! [`WorkerStore`] on PostgreSQL: a beat writes the worker's row and renews every lease it holds
//! (each still under its claim's token) in one transaction, one statement a kind whatever it
//! holds; leases and beats are on the database's clock, so workers on machines whose clocks
//! differ agree on who is live and whose lease ran out.

use super::PgStore;
use super::schedule::DB_NOW;
use crate::store::{Held, Holdings, LiveWorker, Lost, StoreError, WorkerInfo, WorkerStore};
use async_trait::async_trait;
use sqlx::{AssertSqlSafe, Postgres, Transaction};
use std::collections::HashSet;
use std::time::Duration;

/// How long a worker that stopped beating stays in the table, in milliseconds.
const FORGET_AFTER: i64 = 3_600_000;

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
    let renewed: Vec<(String,)> = sqlx::query_as(AssertSqlSafe(format!(
        "UPDATE {table} l SET lease_until = $1 \
         FROM unnest($2::TEXT[], $3::BIGINT[]) AS h(id, token) \
         WHERE l.{id} = h.id AND l.{token} = h.token AND l.lease_until IS NOT NULL \
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
    sqlx::query(AssertSqlSafe(format!(
        "UPDATE {table} l SET lease_until = NULL, {token} = l.{token} + 1 \
         FROM unnest($1::TEXT[], $2::BIGINT[]) AS h(id, token) \
         WHERE l.{id} = h.id AND l.{token} = h.token"
    )))
    .bind(&ids)
    .bind(&tokens)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

#[derive(sqlx::FromRow)]
struct WorkerRow {
    id: String,
    roles: String,
    location: Option<String>,
    kinds: String,
    host: String,
    pid: i32,
    started_at: i64,
    heartbeat_at: i64,
}

#[async_trait]
impl WorkerStore for PgStore {
    async fn beat(
        &self,
        worker: &WorkerInfo,
        held: &Holdings,
        lease: Duration,
    ) -> Result<Lost, StoreError> {
        let mut tx = self.pool.begin().await?;
        let now = super::schedule::db_now(&mut tx).await?;
        let until = now.saturating_add(i64::try_from(lease.as_millis()).unwrap_or(i64::MAX));
        sqlx::query(
            "INSERT INTO workers (id, roles, location, kinds, host, pid, started_at, heartbeat_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO UPDATE SET \
             heartbeat_at = EXCLUDED.heartbeat_at",
        )
        .bind(&worker.id)
        .bind(super::storable(Some(&worker.roles)))
        .bind(super::storable(worker.location.as_deref()))
        .bind(super::storable(Some(&worker.kinds)))
        .bind(super::storable(Some(&worker.host)))
        .bind(i32::try_from(worker.pid).unwrap_or(i32::MAX))
        .bind(worker.started_at)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        let lost = Lost {
            checks: renew(&mut tx, &CHECKS, &held.checks, until).await?,
            deliveries: renew(&mut tx, &DELIVERIES, &held.deliveries, until).await?,
        };
        sqlx::query("DELETE FROM workers WHERE heartbeat_at < $1")
            .bind(now - FORGET_AFTER)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(lost)
    }

    async fn leave(&self, worker: &str, held: &Holdings) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await?;
        free(&mut tx, &CHECKS, &held.checks).await?;
        free(&mut tx, &DELIVERIES, &held.deliveries).await?;
        sqlx::query("DELETE FROM workers WHERE id = $1")
            .bind(worker)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    async fn live_workers(&self, within: Duration) -> Result<Vec<LiveWorker>, StoreError> {
        let within = i64::try_from(within.as_millis()).unwrap_or(i64::MAX);
        let rows: Vec<WorkerRow> = sqlx::query_as(AssertSqlSafe(format!(
            "SELECT id, roles, location, kinds, host, pid, started_at, heartbeat_at FROM workers \
             WHERE heartbeat_at >= {DB_NOW} - $1 ORDER BY started_at, id"
        )))
        .bind(within)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .into_iter()
            .map(|row| LiveWorker {
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
            })
            .collect())
    }
}
