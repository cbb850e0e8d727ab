//! [`WorkerStore`](crate::store::WorkerStore)'s beat and leave for both backends: a beat
//! writes the worker's row, renews the leases it holds (each still under its claim's token),
//! balances the host buckets of its pool and forgets workers long gone, in one transaction;
//! leaving frees what it held. How a kind of lease is renewed and freed (SQLite one row at a
//! time on its single writer, PostgreSQL a kind at a time, rows locked in a fixed order) and
//! whose clock the leases are on are each backend's own.

/// Implements `WorkerStore` for `$store` on `$db` with the methods given in braces
/// (`live_workers`); `pid` is the width of the process id's column. The calling module brings
/// `clock_in(tx)` (now, on the leases' clock), the kinds of lease `CHECKS`, `DELIVERIES` and
/// `MAILS` with `renew(tx, kind, held, until)` and `free(tx, kind, held)`, and
/// `balance(tx, worker, now, until, lease)`.
macro_rules! worker_store {
    ($store:ty, $db:ty, pid: $pid:ty, { $($own:tt)* }) => {
        /// How long a worker that stopped beating stays in the table, in milliseconds.
        const FORGET_AFTER: i64 = 3_600_000;

        #[::async_trait::async_trait]
        impl WorkerStore for $store {
            async fn beat(
                &self,
                worker: &WorkerInfo,
                held: &Holdings,
                lease: ::std::time::Duration,
            ) -> Result<Beat, StoreError> {
                use $crate::store::shape::storable;
                let mut tx = self.write().await?;
                let now = clock_in(&mut tx).await?;
                let lease = i64::try_from(lease.as_millis()).unwrap_or(i64::MAX);
                let until = now.saturating_add(lease);
                ::sqlx::query(
                    "INSERT INTO workers (id, roles, location, kinds, host, pid, started_at, \
                     heartbeat_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
                     ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at",
                )
                .bind(&worker.id)
                .bind(storable(Some(&worker.roles)))
                .bind(storable(worker.location.as_deref()))
                .bind(storable(Some(&worker.kinds)))
                .bind(storable(Some(&worker.host)))
                .bind($crate::store::shape::workers::pid_column(worker.pid, <$pid>::MAX))
                .bind(worker.started_at)
                .bind(now)
                .execute(&mut *tx)
                .await?;
                let lost = Lost {
                    checks: renew(&mut tx, &CHECKS, &held.checks, until).await?,
                    deliveries: renew(&mut tx, &DELIVERIES, &held.deliveries, until).await?,
                    mails: renew(&mut tx, &MAILS, &held.mails, until).await?,
                };
                let buckets = balance(&mut tx, worker, now, until, lease).await?;
                ::sqlx::query("DELETE FROM workers WHERE heartbeat_at < $1")
                    .bind(now - FORGET_AFTER)
                    .execute(&mut *tx)
                    .await?;
                tx.commit().await?;
                Ok(Beat { lost, buckets })
            }

            async fn leave(&self, worker: &str, held: &Holdings) -> Result<(), StoreError> {
                let mut tx = self.write().await?;
                free(&mut tx, &CHECKS, &held.checks).await?;
                free(&mut tx, &DELIVERIES, &held.deliveries).await?;
                free(&mut tx, &MAILS, &held.mails).await?;
                ::sqlx::query(
                    "UPDATE host_buckets SET worker_id = NULL, lease_until = NULL, \
                     draining = FALSE WHERE worker_id = $1",
                )
                .bind(worker)
                .execute(&mut *tx)
                .await?;
                ::sqlx::query("DELETE FROM workers WHERE id = $1")
                    .bind(worker)
                    .execute(&mut *tx)
                    .await?;
                tx.commit().await?;
                Ok(())
            }

            $($own)*
        }
    };
}

pub(crate) use worker_store;
