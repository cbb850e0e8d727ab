//! [`ScheduleStore`] on PostgreSQL: when each monitor is next due (`schedules`, one narrow row a
//! monitor, the only row a claim writes), claims with `FOR UPDATE SKIP LOCKED` under leases, and
//! a check's writes in one transaction. Leases are on the database's clock: the caller's
//! `lease_until` is read as a length (`lease_until - now`) added to `clock_timestamp()`, so
//! processes whose clocks differ agree on when a lease ran out; due times stay the caller's, as
//! they were written by a check's own clock. Each claim also raises the row's `token` (the
//! fencing token). The monitors' own module tells it of a new or changed definition through
//! [`schedule_in`] and [`forget_learning_in`]. What a check learned, the hourly limit and the
//! alert states are written once for both backends in [`crate::store::both::schedule`].

use super::{PgStore, history};
use crate::store::shape::schedule::{claimed_monitor, retry_unreadable};
use crate::store::{
    AlertStates, CheckRecord, Claim, DueCheck, Millis, NewNotification, Recorded, ScheduleStore,
    Series, StorageUse, StoreError,
};
use sqlx::{AssertSqlSafe, Postgres, Transaction};

/// The database's clock in UTC milliseconds, the clock of every lease.
pub(super) const DB_NOW: &str = "(extract(epoch FROM clock_timestamp()) * 1000)::BIGINT";

/// The database's clock now.
pub(super) async fn db_now(conn: &mut sqlx::PgConnection) -> Result<Millis, StoreError> {
    let (now,): (i64,) = sqlx::query_as(AssertSqlSafe(format!("SELECT {DB_NOW}")))
        .fetch_one(conn)
        .await?;
    Ok(now)
}

/// (Re)schedules the monitor `task` of `user` after its definition was written in `tx`:
/// checked first at `next_check_at` (`None`: paused, never due), by a browser when `dynamic`,
/// by a worker of `location` (a LocationCode's code) holding `host_bucket`.
/// A lease a check holds stays: that check ends as it would have.
pub(super) async fn schedule_in(
    tx: &mut Transaction<'_, Postgres>,
    task: &str,
    user: &str,
    next_check_at: Option<Millis>,
    (dynamic, location, host_bucket, host): (bool, i16, i16, i64),
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO schedules (task_id, user_id, dynamic, next_check_at, location, host_bucket, \
         host) VALUES ($1, $2, $3, $4, $5, $6, $7) \
         ON CONFLICT (task_id) DO UPDATE SET dynamic = EXCLUDED.dynamic, \
         next_check_at = EXCLUDED.next_check_at, location = EXCLUDED.location, \
         host_bucket = EXCLUDED.host_bucket, host = EXCLUDED.host",
    )
    .bind(task)
    .bind(user)
    .bind(dynamic)
    .bind(next_check_at)
    .bind(location)
    .bind(host_bucket)
    .bind(host)
    .execute(&mut **tx)
    .await?;
    history::series_in(tx, task, user).await
}

/// Drops what noise learning remembered in the confirmation state of `task` (what it watches
/// changed, so what it learned belongs to the old value).
pub(super) async fn forget_learning_in(
    tx: &mut Transaction<'_, Postgres>,
    task: &str,
) -> Result<(), StoreError> {
    let stored: Option<(Option<String>,)> =
        sqlx::query_as("SELECT alert_state FROM task_series WHERE task_id = $1 FOR UPDATE")
            .bind(task)
            .fetch_optional(&mut **tx)
            .await?;
    let Some((Some(json),)) = stored else {
        return Ok(());
    };
    let json = crate::store::shape::tasks::forget_learning(json)?;
    sqlx::query("UPDATE task_series SET alert_state = $2 WHERE task_id = $1")
        .bind(task)
        .bind(json)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

#[derive(sqlx::FromRow)]
struct DueRow {
    id: String,
    user_id: String,
    folder_id: Option<String>,
    definition: String,
    next_check_at: i64,
    updated_at: i64,
    sample_noise: bool,
    token: i64,
    host: i64,
}

/// The due monitors a claim takes, locked as it takes them: the same fair share as on SQLite
/// (`store/sqlite/schedule.rs`, `CLAIM`: each user at most `max(1, share / active users)` checks
/// of the kind in flight, users taking turns, earliest due first), each waiting user's range
/// read through a `LATERAL` join on its own index. The outer select locks the rows it returns
/// `FOR UPDATE SKIP LOCKED`: processes claiming at once skip each other's rows instead of
/// waiting, and its `WHERE` is checked again on a row another claim changed since this one's
/// snapshot, so a monitor is never claimed twice. `$5` is the database's clock (leases), `$2`
/// the caller's (due times). Hosts are capped as on SQLite: `$8` and `$9` are the worker's
/// hosts with checks in flight and how many, `$10` how many a host may have.
const CLAIM: &str = "\
    WITH hosts AS (SELECT * FROM unnest($8::BIGINT[], $9::BIGINT[]) AS h (host, n)), \
    no_room AS (SELECT host FROM hosts WHERE n >= $10), \
    busy AS ( \
        SELECT user_id, count(*) AS n FROM schedules \
        WHERE dynamic = $1 AND (1 << location) & $6 <> 0 \
          AND lease_until IS NOT NULL AND lease_until >= $5 \
        GROUP BY user_id), \
    waiting AS ( \
        SELECT DISTINCT user_id FROM schedules \
        WHERE dynamic = $1 AND (1 << location) & $6 <> 0 AND next_check_at <= $2 \
          AND host_bucket >= 0 AND (1::BIGINT << host_bucket) & $7 <> 0 \
          AND host NOT IN (SELECT host FROM no_room) \
          AND (lease_until IS NULL OR lease_until < $5)), \
    active AS ( \
        SELECT count(*) AS n FROM (SELECT user_id FROM busy UNION SELECT user_id FROM waiting) u), \
    candidates AS ( \
        SELECT x.task_id, x.user_id, x.next_check_at, x.host FROM waiting w CROSS JOIN LATERAL ( \
            SELECT s.task_id, s.user_id, s.next_check_at, s.host FROM schedules s \
            WHERE s.user_id = w.user_id AND s.dynamic = $1 AND (1 << s.location) & $6 <> 0 \
              AND s.next_check_at <= $2 \
              AND s.host_bucket >= 0 AND (1::BIGINT << s.host_bucket) & $7 <> 0 \
              AND s.host NOT IN (SELECT host FROM no_room) \
              AND (s.lease_until IS NULL OR s.lease_until < $5) \
            ORDER BY s.next_check_at, s.task_id LIMIT $4) x), \
    ranked AS ( \
        SELECT c.task_id, c.next_check_at, coalesce(b.n, 0) \
               + row_number() OVER (PARTITION BY c.user_id ORDER BY c.next_check_at, c.task_id) \
               AS place, \
               coalesce(h.n, 0) \
               + row_number() OVER (PARTITION BY c.host ORDER BY c.next_check_at, c.task_id) \
               AS on_host \
        FROM candidates c LEFT JOIN busy b ON b.user_id = c.user_id \
        LEFT JOIN hosts h ON h.host = c.host), \
    picked AS ( \
        SELECT r.task_id, r.place, r.next_check_at FROM ranked r, active a \
        WHERE r.place <= greatest(1, $3 / a.n) AND r.on_host <= $10 \
        ORDER BY r.place, r.next_check_at, r.task_id LIMIT $4) \
    SELECT t.id, t.user_id, t.folder_id, t.definition, s.next_check_at, t.updated_at, \
           t.sample_noise, s.token, s.host \
    FROM picked p JOIN schedules s ON s.task_id = p.task_id JOIN tasks t ON t.id = s.task_id \
    WHERE s.next_check_at <= $2 AND (s.lease_until IS NULL OR s.lease_until < $5) \
    ORDER BY p.place, p.next_check_at, p.task_id \
    FOR UPDATE OF s SKIP LOCKED";

impl PgStore {
    /// Applies the retention to the series of `task` after a check. A failure is logged, not
    /// returned: the check itself is stored, and the next one prunes again. Also called by the
    /// test seeding, which writes through a check's path.
    pub(super) async fn prune(&self, task: &str) {
        if let Err(err) = history::prune(self, task, self.history_retention).await {
            tracing::warn!(%task, %err, "cannot prune the history");
        }
    }
}

crate::store::both::schedule::schedule_store!(
    PgStore,
    Postgres,
    lock_row: " FOR UPDATE",
    own_state: (
        "task_series ts LEFT JOIN entries le ON le.id = ts.latest_entry_id",
        "ts.task_id = $1",
        "v.task_id = ts.task_id AND v.page_id IS NULL",
        "ts.alert_state"
    ),
    small_int: i32,
    {
        /// On PostgreSQL `now` decides which monitors are due (their due times are on the callers'
        /// clocks) and the lease is `lease_until - now` long on the database's clock, as is the test
        /// whether another claim's lease ran out.
        async fn claim_due(
            &self,
            now: Millis,
            lease_until: Millis,
            claim: &Claim,
        ) -> Result<Vec<DueCheck>, StoreError> {
            let mut tx = self.pool.begin().await?;
            let db_now = db_now(&mut tx).await?;
            let until = db_now.saturating_add(lease_until.saturating_sub(now));
            let rows: Vec<DueRow> = sqlx::query_as(CLAIM)
                .bind(claim.browser)
                .bind(now)
                .bind(i64::from(claim.share))
                .bind(i64::from(claim.limit))
                .bind(db_now)
                .bind(claim.locations.bits())
                .bind(claim.buckets.bits())
                .bind(
                    claim
                        .hosts
                        .in_flight
                        .iter()
                        .map(|(host, _)| *host)
                        .collect::<Vec<i64>>(),
                )
                .bind(
                    claim
                        .hosts
                        .in_flight
                        .iter()
                        .map(|(_, n)| i64::from(*n))
                        .collect::<Vec<i64>>(),
                )
                .bind(claim.hosts.limit())
                .fetch_all(&mut *tx)
                .await?;
            let mut claimed = Vec::with_capacity(rows.len());
            let mut held = Vec::with_capacity(rows.len());
            for row in rows {
                let Some(monitor) = claimed_monitor(&row.id, row.folder_id.clone(), &row.definition)
                else {
                    sqlx::query("UPDATE schedules SET next_check_at = $2 WHERE task_id = $1")
                        .bind(&row.id)
                        .bind(retry_unreadable(now))
                        .execute(&mut *tx)
                        .await?;
                    continue;
                };
                held.push(row.id.clone());
                claimed.push(DueCheck {
                    monitor,
                    user: row.user_id,
                    due_at: row.next_check_at,
                    version: row.updated_at,
                    sample_noise: row.sample_noise,
                    token: row.token + 1,
                    host: row.host,
                    known: None,
                });
            }
            if !held.is_empty() {
                sqlx::query(
                    "UPDATE schedules SET lease_until = $2, token = token + 1 WHERE task_id = ANY($1)",
                )
                .bind(&held)
                .bind(until)
                .execute(&mut *tx)
                .await?;
            }
            tx.commit().await?;
            Ok(claimed)
        }

        async fn finish_check(
            &self,
            task: &str,
            version: Millis,
            token: i64,
            next_check_at: Millis,
        ) -> Result<(), StoreError> {
            // An update during the check set its own next check (at once) and version; keep it.
            // The definition is read locked, in the order an edit takes its rows, so an edit being
            // saved is waited for and its version seen. (Read in the UPDATE's join, the version
            // would be the one from before the edit, compared again after the edit's schedule:
            // the edited monitor would be parked for its old samples.)
            let mut tx = self.pool.begin().await?;
            let stored: Option<(i64,)> =
                sqlx::query_as("SELECT updated_at FROM tasks WHERE id = $1 FOR SHARE")
                    .bind(task)
                    .fetch_optional(&mut *tx)
                    .await?;
            sqlx::query(
                "UPDATE schedules SET lease_until = NULL, \
                 next_check_at = CASE WHEN $2 THEN $3 ELSE next_check_at END \
                 WHERE task_id = $1 AND token = $4",
            )
            .bind(task)
            .bind(stored == Some((version,)))
            .bind(next_check_at)
            .bind(token)
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            Ok(())
        }

        async fn stored_bytes(&self, task: &str) -> Result<StorageUse, StoreError> {
            history::usage(self, task).await
        }

        async fn task_session(&self, task: &str) -> Result<Option<String>, StoreError> {
            let found: Option<(String,)> =
                sqlx::query_as("SELECT sealed FROM task_sessions WHERE task_id = $1")
                    .bind(task)
                    .fetch_optional(&self.pool)
                    .await?;
            Ok(found.map(|(sealed,)| sealed))
        }
    }
);

impl PgStore {
    /// Writes `records` in one transaction: each record's outcome, or the error that rolled
    /// the whole group back. Their schedule rows are locked in the order of their ids (bytewise,
    /// PostgreSQL's `COLLATE "C"`), so two processes' groups take them alike, and so does a
    /// worker's beat renewing their leases (`workers.rs`, `renew`). A record of a deleted monitor is `NotFound` and
    /// writes nothing, so it never costs the others.
    async fn record_group(
        &self,
        records: &[CheckRecord],
    ) -> Result<Vec<Result<Recorded, StoreError>>, StoreError> {
        let mut order: Vec<usize> = (0..records.len()).collect();
        order.sort_by(|a, b| records[*a].task.cmp(&records[*b].task));
        let mut tx = self.pool.begin().await?;
        let mut outcomes: Vec<Option<Result<Recorded, StoreError>>> =
            (0..records.len()).map(|_| None).collect();
        for i in order {
            // Any error (a `NotFound` from within the writes too) rolls the group back.
            outcomes[i] = Some(match self.record_in(&mut tx, &records[i]).await? {
                None => Err(StoreError::NotFound),
                Some(recorded) => Ok(recorded),
            });
        }
        tx.commit().await?;
        Ok(outcomes
            .into_iter()
            .map(|o| o.unwrap_or(Err(StoreError::NotFound)))
            .collect())
    }

    /// Writes one check within the group's transaction ([`ScheduleStore::record_checks`]);
    /// `None`, having written nothing, when its monitor was deleted.
    async fn record_in(
        &self,
        tx: &mut Transaction<'static, Postgres>,
        record: &CheckRecord,
    ) -> Result<Option<Recorded>, StoreError> {
        let quotas = self.quotas;
        // The definition's row first, shared, as an edit or a delete takes it (before the
        // schedule's): an edit waits for this check to be stored, or lands first and the
        // version says so, as SQLite's single writer orders them. Taken after the schedule's,
        // an edit saved meanwhile deadlocked with the record.
        let version: Option<(i64, String)> =
            sqlx::query_as("SELECT updated_at, user_id FROM tasks WHERE id = $1 FOR SHARE")
                .bind(&record.task)
                .fetch_optional(&mut **tx)
                .await?;
        let Some((version, user)) = version else {
            return Ok(None);
        };
        // Then the schedule's row: a claim (`SKIP LOCKED`) cannot take the monitor over
        // between this test of the token and the commit.
        let token: Option<(i64,)> =
            sqlx::query_as("SELECT token FROM schedules WHERE task_id = $1 FOR UPDATE")
                .bind(&record.task)
                .fetch_optional(&mut **tx)
                .await?;
        match token {
            None => return Ok(None),
            Some((token,)) if token != record.token => return Ok(Some(Recorded::Fenced)),
            Some(_) => {}
        }
        if version != record.version {
            // Edited during the check: the edit scheduled its own first check.
            sqlx::query("UPDATE schedules SET lease_until = NULL WHERE task_id = $1")
                .bind(&record.task)
                .execute(&mut **tx)
                .await?;
            return Ok(Some(Recorded::Edited));
        }
        // Pages first: a page's notification names the page, which must exist by then.
        for (url, name, data) in &record.pages {
            let series = Series::Page {
                task_id: record.task.clone(),
                url: url.clone(),
                name: name.clone(),
            };
            history::append_in(tx, &series, data, quotas.stored_bytes).await?;
        }
        let own = Series::Task(record.task.clone());
        history::append_in(tx, &own, &record.own, quotas.stored_bytes).await?;
        if !record.notifications.is_empty() {
            let limit = quotas.notifications_per_hour;
            for notification in
                hourly_limited(tx, &record.task, &user, limit, &record.notifications).await?
            {
                super::notifications::insert_in(tx, &notification).await?;
            }
        }
        for (page, state) in &record.alert_states {
            let json = match state {
                Some(state) => Some(
                    serde_json::to_string(state)
                        .map_err(|err| StoreError::Backend(err.to_string()))?,
                ),
                None => None,
            };
            // Forgetting a state nobody stored is no write.
            let forget = if json.is_none() {
                " AND alert_state IS NOT NULL"
            } else {
                ""
            };
            match page {
                None => sqlx::query(AssertSqlSafe(format!(
                    "UPDATE task_series SET alert_state = $1 WHERE task_id = $2{forget}"
                )))
                .bind(json)
                .bind(&record.task),
                Some(url) => sqlx::query(AssertSqlSafe(format!(
                    "UPDATE pages SET alert_state = $1 WHERE task_id = $2 AND url = $3{forget}"
                )))
                .bind(json)
                .bind(&record.task)
                .bind(super::storable(Some(url))),
            }
            .execute(&mut **tx)
            .await?;
        }
        // The definition's row is written only when what a check keeps there changes.
        sqlx::query(
            "UPDATE tasks SET noise_notice = $2 WHERE id = $1 \
             AND noise_notice IS DISTINCT FROM $2",
        )
        .bind(&record.task)
        .bind(super::storable(record.noise_notice.as_deref()))
        .execute(&mut **tx)
        .await?;
        if !record.learned.is_empty() || record.learned_order.is_some() {
            learn_in(tx, &record.task, &record.learned, record.learned_order).await?;
        }
        if record.sampled {
            sqlx::query("UPDATE tasks SET sample_noise = false WHERE id = $1 AND sample_noise")
                .bind(&record.task)
                .execute(&mut **tx)
                .await?;
        }
        sqlx::query(
            "UPDATE schedules SET lease_until = NULL, next_check_at = $2 WHERE task_id = $1",
        )
        .bind(&record.task)
        .bind(record.next_check_at)
        .execute(&mut **tx)
        .await?;
        Ok(Some(Recorded::Stored))
    }
}
