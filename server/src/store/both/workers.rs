//! [`WorkerStore`](crate::store::WorkerStore)'s beat and leave for both backends: a beat
//! writes the worker's row, renews the leases it holds (each still under its claim's token),
//! balances the host buckets of its pool and forgets workers long gone, in one transaction;
//! leaving frees what it held. How a kind of lease is renewed and freed (SQLite one row at a
//! time on its single writer, PostgreSQL a kind at a time, rows locked in a fixed order) and
//! whose clock the leases are on are each backend's own.

/// Implements `WorkerStore` for `$store` on `$db` with the methods given in braces
/// (`live_workers`), and defines `balance`; `pid` and `bucket` are the widths of the process
/// id's and a host bucket's columns. The calling module brings `clock_in(tx)` (now, on the
/// leases' clock), the kinds of lease `CHECKS`, `DELIVERIES` and `MAILS` with
/// `renew(tx, kind, held, until)` and `free(tx, kind, held)`, and for the host buckets
/// `pool_in(tx, pool)` and `drain_in(tx, pool, buckets, until)`.
macro_rules! worker_store {
    ($store:ty, $db:ty, pid: $pid:ty, bucket: $bucket:ty, { $($own:tt)* }) => {
        /// How long a worker that stopped beating stays in the table, in milliseconds.
        const FORGET_AFTER: i64 = 3_600_000;

        /// Balances the host buckets of `worker`'s pool at a beat ([`WorkerStore::beat`]); the
        /// buckets it holds after. The pool's rows are made (and, where others may balance the
        /// same pool at once, the pool locked) by `pool_in`; buckets this worker gives back
        /// are drained by `drain_in`.
        async fn balance(
            tx: &mut ::sqlx::Transaction<'_, $db>,
            worker: &WorkerInfo,
            now: i64,
            until: i64,
            lease: i64,
        ) -> Result<HostBuckets, StoreError> {
            if !worker.checks() {
                return Ok(HostBuckets::NONE);
            }
            let pool = worker.location.as_deref().unwrap_or("");
            pool_in(tx, pool).await?;
            let (live,): (i64,) = ::sqlx::query_as(
                "SELECT count(*) FROM workers WHERE coalesce(location, '') = $1 \
                 AND ',' || roles || ',' LIKE '%,worker,%' AND heartbeat_at >= $2",
            )
            .bind(pool)
            .bind(now - lease)
            .fetch_one(&mut **tx)
            .await?;
            let share = $crate::store::workers::bucket_share(live);
            let mut owned: Vec<($bucket,)> = ::sqlx::query_as(
                "UPDATE host_buckets SET lease_until = $1 WHERE pool = $2 AND worker_id = $3 \
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
                // A worker joined: the highest buckets go back for it to take, once this
                // worker's checks of their hosts had a lease's time to end (so two workers
                // never check one host at once while the buckets move).
                let extra: Vec<$bucket> = owned
                    .split_off(usize::try_from(share).unwrap_or(0))
                    .into_iter()
                    .map(|(b,)| b)
                    .collect();
                drain_in(tx, pool, &extra, until).await?;
            } else if have < share {
                let taken: Vec<($bucket,)> = ::sqlx::query_as(
                    "UPDATE host_buckets SET worker_id = $1, lease_until = $2, draining = FALSE \
                     WHERE pool = $3 AND bucket IN (SELECT bucket FROM host_buckets \
                     WHERE pool = $3 AND coalesce(lease_until, 0) < $4 ORDER BY bucket LIMIT $5) \
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
                owned
                    .into_iter()
                    .map(|(b,)| $crate::store::shape::workers::bucket(b)),
            ))
        }

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
