//! [`ScheduleStore`] on SQLite: claiming due monitors under a lease, recording a check (its
//! entries, notifications and deliveries in one transaction) and setting the next check, and
//! what a check reads first: the alert states and the owner's storage. What a check learned,
//! the hourly limit and the alert states are written once for both backends in
//! [`crate::store::both::schedule`].

use super::history::OwnAppend;
use super::{SqliteStore, history, notifications};
use crate::store::shape::schedule::{Written, claimed_monitor, retry_unreadable};
use crate::store::shape::storable;
use crate::store::{
    AlertStates, CheckRecord, Claim, DueCheck, Known, Millis, NewNotification, Recorded,
    ScheduleStore, Series, StorageUse, StoreError,
};
use sha2::{Digest, Sha256};
use sqlx::AssertSqlSafe;

#[derive(sqlx::FromRow)]
struct DueRow {
    id: String,
    user_id: String,
    folder_id: Option<String>,
    definition: String,
    next_check_at: i64,
    updated_at: i64,
    sample_noise: i64,
    lease_token: i64,
    alert_state: Option<String>,
    stored_bytes: i64,
    host: i64,
}

/// The due monitors a claim takes, leased by the same statement (`?9`: the lease's end), which
/// returns them with their new lease token. Each user may hold at most
/// `max(1, share / active users)` checks of the kind in flight, counting the monitors under a
/// lease (of any process) and those claimed now; users are "active" when they have a check in
/// flight or due. Within that cap the users take turns: every user's first due monitor comes
/// before anyone's second (fewest checks in flight first), so 1,000 due monitors of one user
/// never queue ahead of another's one. A lone user's cap is the whole share.
///
/// Each waiting user contributes at most `limit` of their earliest due monitors (an index
/// range of their own), so the ranking never sorts a backlog. Nor is a backlog read to find
/// who waits: when fewer than 1,024 monitors are due (the usual case) their owners are read
/// from them, and past that each user is probed for one due monitor (`tasks_user_due`), so a
/// claim costs what the users cost, not what the overdue rows cost (with 94,000 of one user's
/// monitors overdue, 2 ms instead of 31 ms reading every due row). `CROSS JOIN` keeps SQLite
/// from turning the join inside out, and `INDEXED BY` from probing each user through the
/// whole due range. Standard SQL but for `max(1, x)` (PostgreSQL: `GREATEST`, and a `LATERAL`
/// join for the per-user range); there the outer select takes its rows `FOR UPDATE SKIP
/// LOCKED`, so processes claiming at once skip each other's rows instead of waiting.
///
/// Hosts are capped too ([`crate::store::schedule::BusyHosts`]): `?7` is the worker's checks in
/// flight per host as a JSON array of `[host, n]` and `?8` how many a host may have. A host with
/// no room left is not looked at (its backlog neither counts its owner as waiting nor fills the
/// per-user range), and the others give at most their room, earliest due first.
const CLAIM: &str = "\
    WITH hosts AS ( \
        SELECT json_extract(value, '$[0]') AS host, json_extract(value, '$[1]') AS n \
        FROM json_each(?7)), \
    no_room AS (SELECT host FROM hosts WHERE n >= ?8), \
    busy AS ( \
        SELECT user_id, count(*) AS n FROM tasks \
        WHERE dynamic = ?1 AND (1 << location) & ?5 != 0 \
          AND lease_until IS NOT NULL AND lease_until >= ?2 \
        GROUP BY user_id), \
    due AS MATERIALIZED ( \
        SELECT +user_id AS user_id FROM tasks \
        WHERE dynamic = ?1 AND (1 << location) & ?5 != 0 AND next_check_at <= ?2 \
          AND host_bucket >= 0 AND (1 << host_bucket) & ?6 != 0 \
          AND host NOT IN (SELECT host FROM no_room) \
          AND (lease_until IS NULL OR lease_until < ?2) \
        LIMIT 1024), \
    waiting AS ( \
        SELECT DISTINCT user_id FROM due \
        UNION \
        SELECT u.id FROM users u \
        WHERE (SELECT count(*) FROM due) = 1024 AND EXISTS ( \
            SELECT 1 FROM tasks x INDEXED BY tasks_user_due \
            WHERE x.user_id = u.id AND x.dynamic = ?1 AND (1 << x.location) & ?5 != 0 \
              AND x.next_check_at <= ?2 \
              AND x.host_bucket >= 0 AND (1 << x.host_bucket) & ?6 != 0 \
              AND x.host NOT IN (SELECT host FROM no_room) \
              AND (x.lease_until IS NULL OR x.lease_until < ?2))), \
    active AS ( \
        SELECT count(*) AS n FROM (SELECT user_id FROM busy UNION SELECT user_id FROM waiting) u), \
    candidates AS ( \
        SELECT t.id, t.user_id, t.next_check_at, t.host FROM waiting w CROSS JOIN tasks t \
        WHERE t.id IN ( \
            SELECT x.id FROM tasks x \
            WHERE x.user_id = w.user_id AND x.dynamic = ?1 AND (1 << x.location) & ?5 != 0 \
              AND x.next_check_at <= ?2 \
              AND x.host_bucket >= 0 AND (1 << x.host_bucket) & ?6 != 0 \
              AND x.host NOT IN (SELECT host FROM no_room) \
              AND (x.lease_until IS NULL OR x.lease_until < ?2) \
            ORDER BY x.next_check_at, x.id LIMIT ?4)), \
    ranked AS ( \
        SELECT c.id, c.next_check_at, coalesce(b.n, 0) \
               + row_number() OVER (PARTITION BY c.user_id ORDER BY c.next_check_at, c.id) AS place, \
               coalesce(h.n, 0) \
               + row_number() OVER (PARTITION BY c.host ORDER BY c.next_check_at, c.id) AS on_host \
        FROM candidates c LEFT JOIN busy b ON b.user_id = c.user_id \
        LEFT JOIN hosts h ON h.host = c.host), \
    chosen AS ( \
        SELECT r.id FROM ranked r, active a \
        WHERE r.place <= max(1, ?3 / a.n) AND r.on_host <= ?8 \
        ORDER BY r.place, r.next_check_at, r.id LIMIT ?4) \
    UPDATE tasks SET lease_until = ?9, lease_token = lease_token + 1 \
    WHERE id IN (SELECT id FROM chosen) \
    RETURNING id, user_id, folder_id, definition, next_check_at, updated_at, sample_noise, \
        lease_token, alert_state, \
        (SELECT u.stored_bytes FROM users u WHERE u.id = tasks.user_id) AS stored_bytes, host";

/// The statement that ends a stored check ([`SqliteStore::record_in`]), written once: its
/// newest-entry test is [`history::NEWEST`] with the check time as `?9`.
static END_CHECK: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    let newest = history::NEWEST.replace('?', "?9");
    format!(
        "UPDATE tasks SET noise_notice = ?1, \
         sample_noise = CASE WHEN ?2 THEN 0 ELSE sample_noise END, \
         lease_until = NULL, next_check_at = ?3, \
         latest_entry_id = CASE WHEN {newest} THEN ?5 ELSE latest_entry_id END, \
         failed = CASE WHEN {newest} THEN ?6 ELSE failed END, \
         alert_state = CASE WHEN ?7 THEN ?8 ELSE alert_state END \
         WHERE id = ?4"
    )
});

/// A check that found its monitor's value as the previous check left it, recorded in one round
/// trip to the writer's thread (most checks: the general path takes three). The entry is the
/// one the general path would write, whether the check signed in again (`?12`) included. It
/// is written only when the claim still holds (`?3`: lease token, `?4`: version) and the
/// series' previous value (before check time `?2`) is the one hashed `?5`, stored whole; the
/// update that ends the check (as [`END_CHECK`]) runs only when that entry was written
/// (`changes()` counts the insert alone, not its triggers), making it the latest data when it
/// is the newest, and returns whether a series of the monitor may now hold more than the
/// `?11` entries the retention keeps. No row: nothing was written, and the general path decides.
static UNCHANGED_CHECK: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    let newest = history::NEWEST.replace('?', "?2");
    let delta = crate::store::codec::DELTA;
    format!(
        "INSERT INTO entries (task_id, page_id, checked_at, changed_at, content_hash, error, \
             logged_in) \
         SELECT t.id, NULL, ?2, p.changed_at, p.content_hash, NULL, ?12 \
         FROM tasks t JOIN entries p ON p.id = (SELECT id FROM entries \
             WHERE task_id = ?1 AND page_id IS NULL AND content_hash IS NOT NULL \
             AND (checked_at, id) < (?2, '~') ORDER BY checked_at DESC, id DESC LIMIT 1) \
         JOIN contents c ON c.hash = p.content_hash \
         WHERE t.id = ?1 AND t.lease_token = ?3 AND t.updated_at = ?4 \
             AND p.content_hash = ?5 AND c.codec != {delta}; \
         UPDATE tasks SET noise_notice = ?6, \
             sample_noise = CASE WHEN ?7 THEN 0 ELSE sample_noise END, \
             lease_until = NULL, next_check_at = ?8, \
             latest_entry_id = CASE WHEN {newest} \
                 THEN CAST(last_insert_rowid() AS TEXT) ELSE latest_entry_id END, \
             failed = CASE WHEN {newest} THEN 0 ELSE failed END, \
             alert_state = CASE WHEN ?9 THEN ?10 ELSE alert_state END \
         WHERE id = ?1 AND changes() = 1 \
         RETURNING entry_count > ?11 OR EXISTS (SELECT 1 FROM pages \
             WHERE task_id = tasks.id AND entry_count + 1 > ?11)"
    )
});

/// Records `record` by [`UNCHANGED_CHECK`] when it can be (a SinglePage check that found a
/// value, raised no notification and learned nothing: what most checks are); `None`, having
/// written nothing, when it cannot or when its value changed or its claim is gone.
async fn record_unchanged_in(
    tx: &mut sqlx::Transaction<'static, sqlx::Sqlite>,
    record: &CheckRecord,
    keep: i64,
) -> Result<Option<Written>, StoreError> {
    let plain = record.pages.is_empty()
        && record.notifications.is_empty()
        && record.learned.is_empty()
        && record.learned_order.is_none()
        && record.own.error.is_none()
        && record.alert_states.iter().all(|(page, _)| page.is_none());
    let Some(raw) = record.own.raw.as_ref().filter(|_| plain) else {
        return Ok(None);
    };
    let own_state = match record.alert_states.last() {
        Some((_, Some(state))) => Some(Some(
            serde_json::to_string(state).map_err(|err| StoreError::Backend(err.to_string()))?,
        )),
        Some((_, None)) => Some(None),
        None => None,
    };
    let hash = Sha256::digest(raw.as_bytes()).to_vec();
    // All rows, not the first: the statements run to their end either way.
    let full: Vec<(bool,)> = sqlx::query_as(AssertSqlSafe(UNCHANGED_CHECK.as_str()))
        .bind(&record.task)
        .bind(record.own.last_check_timestamp.timestamp_millis())
        .bind(record.token)
        .bind(record.version)
        .bind(hash)
        .bind(storable(record.noise_notice.as_deref()))
        .bind(record.sampled)
        .bind(record.next_check_at)
        .bind(own_state.is_some())
        .bind(own_state.flatten())
        .bind(keep)
        .bind(record.own.logged_in)
        .fetch_all(&mut **tx)
        .await?;
    Ok(full.first().map(|&(full,)| Written {
        recorded: Recorded::Stored,
        prune: full,
    }))
}

crate::store::both::schedule::schedule_store!(
    SqliteStore,
    sqlx::Sqlite,
    lock_row: "",
    own_state: (
        "tasks t LEFT JOIN entries le ON le.id = t.latest_entry_id",
        "t.id = $1",
        "v.task_id = t.id AND v.page_id IS NULL",
        "t.alert_state"
    ),
    small_int: i64,
    {
        async fn claim_due(
            &self,
            now: Millis,
            lease_until: Millis,
            claim: &Claim,
        ) -> Result<Vec<DueCheck>, StoreError> {
            let mut tx = self.write().await?;
            let held = std::time::Instant::now();
            // The definition only: a check needs no latest data, and this runs in the writer's lock.
            let mut rows: Vec<DueRow> = sqlx::query_as(CLAIM)
                .bind(super::flag(claim.browser))
                .bind(now)
                .bind(i64::from(claim.share))
                .bind(i64::from(claim.limit))
                .bind(claim.locations.bits())
                .bind(claim.buckets.bits())
                .bind(claim.hosts.counts_json())
                .bind(claim.hosts.limit())
                .bind(lease_until)
                .fetch_all(&mut *tx)
                .await?;
            // Earliest due first, as the checks were planned.
            rows.sort_unstable_by(|a, b| (a.next_check_at, &a.id).cmp(&(b.next_check_at, &b.id)));
            let mut claimed = Vec::with_capacity(rows.len());
            for row in rows {
                let Some(monitor) = claimed_monitor(&row.id, row.folder_id.clone(), &row.definition)
                else {
                    sqlx::query("UPDATE tasks SET next_check_at = ?, lease_until = NULL WHERE id = ?")
                        .bind(retry_unreadable(now))
                        .bind(&row.id)
                        .execute(&mut *tx)
                        .await?;
                    continue;
                };
                claimed.push(DueCheck {
                    monitor,
                    user: row.user_id,
                    due_at: row.next_check_at,
                    version: row.updated_at,
                    sample_noise: row.sample_noise != 0,
                    token: row.lease_token,
                    host: row.host,
                    known: Some(Known {
                        // Unreadable, it is read again (and reported) by the check's own look.
                        own_state: row
                            .alert_state
                            .and_then(|stored| serde_json::from_str(&stored).ok()),
                        storage: StorageUse {
                            used: row.stored_bytes.max(0).unsigned_abs(),
                            max: self.quotas.stored_bytes,
                        },
                    }),
                });
            }
            tx.commit().await?;
            crate::metrics::METRICS.claim_held.observe(held.elapsed());
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
            sqlx::query(
                "UPDATE tasks SET lease_until = NULL, \
                 next_check_at = CASE WHEN updated_at = ? THEN ? ELSE next_check_at END \
                 WHERE id = ? AND lease_token = ?",
            )
            .bind(version)
            .bind(next_check_at)
            .bind(task)
            .bind(token)
            .execute(&self.writer)
            .await?;
            Ok(())
        }

        async fn stored_bytes(&self, task: &str) -> Result<StorageUse, StoreError> {
            let (used,): (i64,) = sqlx::query_as(
                "SELECT u.stored_bytes FROM users u JOIN tasks t ON t.user_id = u.id WHERE t.id = ?",
            )
            .bind(task)
            .fetch_optional(&self.reader)
            .await?
            .ok_or(StoreError::NotFound)?;
            Ok(StorageUse {
                used: used.max(0).unsigned_abs(),
                max: self.quotas.stored_bytes,
            })
        }

        async fn task_session(&self, task: &str) -> Result<Option<String>, StoreError> {
            let mut reader = self.lent_readers.get().await?;
            let found: Option<(String,)> =
                sqlx::query_as("SELECT sealed FROM task_sessions WHERE task_id = ?")
                    .bind(task)
                    .fetch_optional(reader.conn()?)
                    .await?;
            Ok(found.map(|(sealed,)| sealed))
        }
    }
);

impl SqliteStore {
    /// Writes `records` in one transaction (one `BEGIN IMMEDIATE` and one commit for the
    /// group): each record's outcome, or the error that rolled the whole group back. A record
    /// of a deleted monitor is `NotFound` and writes nothing, so it never costs the others.
    async fn record_group(
        &self,
        records: &[CheckRecord],
    ) -> Result<Vec<Result<Written, StoreError>>, StoreError> {
        let mut tx = self.write().await?;
        let held = std::time::Instant::now();
        let mut outcomes = Vec::with_capacity(records.len());
        for record in records {
            // Any error (a `NotFound` from within the writes too) rolls the group back.
            outcomes.push(match self.record_in(&mut tx, record).await? {
                None => Err(StoreError::NotFound),
                Some(written) => Ok(written),
            });
        }
        tx.commit().await?;
        crate::metrics::METRICS.group_held.observe(held.elapsed());
        Ok(outcomes)
    }

    /// Writes one check within the group's transaction ([`ScheduleStore::record_checks`]);
    /// `None`, having written nothing, when its monitor was deleted.
    async fn record_in(
        &self,
        tx: &mut sqlx::Transaction<'static, sqlx::Sqlite>,
        record: &CheckRecord,
    ) -> Result<Option<Written>, StoreError> {
        let quotas = self.quotas;
        let keep = i64::from(self.history_retention);
        if let Some(written) = record_unchanged_in(tx, record, keep).await? {
            return Ok(Some(written));
        }
        let ended = |recorded| {
            Some(Written {
                recorded,
                prune: false,
            })
        };
        let edited = async |tx: &mut sqlx::Transaction<'static, sqlx::Sqlite>| {
            // Edited during the check: the edit scheduled its own first check.
            sqlx::query("UPDATE tasks SET lease_until = NULL WHERE id = ?")
                .bind(&record.task)
                .execute(&mut **tx)
                .await
                .map(|_| ended(Recorded::Edited))
        };
        if !record.pages.is_empty() {
            // Pages are written before the monitor's own entry (a page's notification names
            // the page, which must exist by then), so the claim is tested first, alone.
            let found: Option<(i64, i64)> =
                sqlx::query_as("SELECT updated_at, lease_token FROM tasks WHERE id = ?")
                    .bind(&record.task)
                    .fetch_optional(&mut **tx)
                    .await?;
            let Some((version, token)) = found else {
                return Ok(None);
            };
            if token != record.token {
                return Ok(ended(Recorded::Fenced));
            }
            if version != record.version {
                return Ok(edited(tx).await?);
            }
            for (url, name, data) in &record.pages {
                let series = Series::Page {
                    task_id: record.task.clone(),
                    url: url.clone(),
                    name: name.clone(),
                };
                history::append_in(tx, &series, data, quotas.stored_bytes).await?;
            }
        }
        let claim = ((record.version, record.token), keep);
        let (own, monitor) =
            match history::append_own_in(tx, &record.task, &record.own, quotas.stored_bytes, claim)
                .await?
            {
                OwnAppend::Gone => return Ok(None),
                OwnAppend::Fenced => return Ok(ended(Recorded::Fenced)),
                OwnAppend::Edited => return Ok(edited(tx).await?),
                OwnAppend::Appended { appended, monitor } => (appended, monitor),
            };
        let (user, full) = (monitor.user, monitor.full);
        if !record.notifications.is_empty() {
            let limit = quotas.notifications_per_hour;
            for notification in
                hourly_limited(tx, &record.task, &user, limit, &record.notifications).await?
            {
                notifications::insert_in(tx, &notification).await?;
            }
        }
        // The monitor's own state is set by the statement that ends the check, below.
        let mut own_state = None;
        for (page, state) in &record.alert_states {
            let json = match state {
                Some(state) => Some(
                    serde_json::to_string(state)
                        .map_err(|err| StoreError::Backend(err.to_string()))?,
                ),
                None => None,
            };
            let Some(url) = page else {
                own_state = Some(json);
                continue;
            };
            // Forgetting a state nobody stored is no write.
            let forget = if json.is_none() {
                " AND alert_state IS NOT NULL"
            } else {
                ""
            };
            sqlx::query(AssertSqlSafe(format!(
                "UPDATE pages SET alert_state = ? WHERE task_id = ? AND url = ?{forget}"
            )))
            .bind(json)
            .bind(&record.task)
            .bind(storable(Some(url)))
            .execute(&mut **tx)
            .await?;
        }
        if !record.learned.is_empty() || record.learned_order.is_some() {
            learn_in(tx, &record.task, &record.learned, record.learned_order).await?;
        }
        // One statement for what every check writes to its monitor's row (its latest data when
        // the entry is the newest, its alert state when the check changed it, its next check):
        // each round trip to the writer's thread costs more than the write itself.
        sqlx::query(AssertSqlSafe(END_CHECK.as_str()))
            .bind(storable(record.noise_notice.as_deref()))
            .bind(record.sampled)
            .bind(record.next_check_at)
            .bind(&record.task)
            .bind(own.id.to_string())
            .bind(super::flag(own.failed))
            .bind(own_state.is_some())
            .bind(own_state.flatten())
            .bind(own.checked_at)
            .execute(&mut **tx)
            .await?;
        Ok(Some(Written {
            recorded: Recorded::Stored,
            prune: full || !record.pages.is_empty(),
        }))
    }
}
