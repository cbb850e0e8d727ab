//! [`OutboxStore`] on PostgreSQL: deliveries of notifications and tests, claimed with `FOR UPDATE
//! SKIP LOCKED` under leases on the database's clock. The rest (a notification's deliveries
//! written, tests queued, retries, the confirmation mails of e-mail addresses) is written once
//! for both backends in [`crate::store::both::outbox`], with the statements PostgreSQL spells
//! its own way given here; the rows and texts are the shared ones of `store/shape/outbox.rs`,
//! so both backends deliver the same message.

use super::PgStore;
use super::schedule::{DB_NOW, db_now};
use crate::store::shape::outbox::{
    CLAIM_PAGES, DUE_EXTRA_COLUMNS, DigestRow, DueRow, Lanes, RECORD_COLUMNS, RecordRow, counted,
    delivery, digest_columns, digest_item, digest_items, free_at, mail_address, nth_offset, record,
};
use crate::store::{
    ConfirmationMail, Delivery, DeliveryOutcome, DeliveryRecord, Millis, OutboxStore, StoreError,
    is_id, now_millis,
};
use sqlx::{AssertSqlSafe, PgConnection, Postgres, Transaction};

/// The columns of [`DueRow`], PostgreSQL's integers widened to SQLite's.
const DUE_COLUMNS: &str = "d.id, d.kind::BIGINT AS kind, d.target, d.attempts::BIGINT AS attempts, \
     n.id AS notification_id, n.alert_type::BIGINT AS alert_type, n.alert, n.current_value, \
     n.comparand, n.error, n.created_at, n.task_id, n.task_name, n.url, u.webhook_secret, n.html, \
     n.synthetic_expression, d.user_id, d.released_at, n.explanation, d.lease_token, \
     u.id AS owner, u.login_base";

/// The columns of [`RecordRow`], widened alike.
fn record_columns() -> String {
    RECORD_COLUMNS
        .replace("kind", "kind::BIGINT AS kind")
        .replace("attempts", "attempts::BIGINT AS attempts")
}

/// A claimed mail's lease is `lease_until - now` long on the database's clock, as is the test
/// whether another claim's lease ran out.
async fn mail_clock_in(
    tx: &mut Transaction<'_, Postgres>,
    now: Millis,
    lease_until: Millis,
) -> Result<(Millis, Millis), StoreError> {
    let db_now = db_now(tx).await?;
    Ok((
        db_now,
        db_now.saturating_add(lease_until.saturating_sub(now)),
    ))
}

crate::store::both::outbox::outbox_store!(PgStore, Postgres, conn: PgConnection,
    records: (record_columns(), "target COLLATE \"C\", id"), lease_now: DB_NOW,
    lock_delivery: " FOR UPDATE OF d", claim_mails: " FOR UPDATE OF a SKIP LOCKED",
    muted: "coalesce((t.definition::jsonb ->> 'muted') = 'true', false)",
    lock_tests: "SELECT pg_advisory_xact_lock(hashtext('wachet.tests:' || $1))",
    small_int: i32, {
    /// On PostgreSQL `now` decides which deliveries are due and the lease is `lease_until -
    /// now` long on the database's clock, as is the test whether another claim's lease ran out.
    /// Two processes claiming at once skip each other's rows (`FOR UPDATE SKIP LOCKED`); a
    /// lane is counted under a lock of that lane's, taken without waiting (a lane another claim
    /// holds is passed over, so claims never wait on each other's lanes), so its cap holds
    /// across them; a user's hourly bound is counted under a lock of that user's, so it holds
    /// across them too.
    async fn claim_deliveries(
        &self,
        now: Millis,
        lease_until: Millis,
        limit: u32,
        per_lane: u32,
    ) -> Result<Vec<Delivery>, StoreError> {
        let mut tx = self.pool.begin().await?;
        let db_now = db_now(&mut tx).await?;
        let until = db_now.saturating_add(lease_until.saturating_sub(now));
        let limit = limit as usize;
        let mut lanes = Lanes::new(per_lane);
        let mut claimed = Vec::with_capacity(limit);
        // The digests led by a delivery of this claim: their other rows, read before, wait
        // grouped under it now.
        let mut led: Vec<String> = Vec::new();
        for _ in 0..CLAIM_PAGES {
            let want = limit.saturating_sub(claimed.len());
            if want == 0 {
                break;
            }
            // Due rows of the lanes below their cap (counting this claim's own, leased above)
            // and not passed over.
            let rows: Vec<DueRow> = sqlx::query_as(AssertSqlSafe(format!(
                "SELECT {DUE_COLUMNS}, {DUE_EXTRA_COLUMNS} FROM deliveries d \
                 LEFT JOIN notifications n ON n.id = d.notification_id \
                 JOIN users u ON u.id = d.user_id \
                 WHERE d.state = 'pending' AND d.next_attempt_at <= $1 \
                 AND (d.lease_until IS NULL OR d.lease_until < $2) \
                 AND d.lane <> ALL($4) \
                 AND d.lane NOT IN (SELECT lane FROM deliveries WHERE lease_until >= $2 \
                   AND state = 'pending' GROUP BY lane HAVING count(*) >= $5) \
                 ORDER BY d.next_attempt_at LIMIT $3 FOR UPDATE OF d SKIP LOCKED"
            )))
            .bind(now)
            .bind(db_now)
            .bind(want as i64)
            .bind(lanes.passed())
            .bind(lanes.cap())
            .fetch_all(&mut *tx)
            .await?;
            if rows.is_empty() {
                break;
            }
            for row in rows {
                if row.digest_key.as_ref().is_some_and(|key| led.contains(key)) {
                    continue;
                }
                if !lanes.counted(&row.lane) {
                    let (mine,): (bool,) = sqlx::query_as(
                        "SELECT pg_try_advisory_xact_lock(hashtext('wachet.lane:' || $1))",
                    )
                    .bind(&row.lane)
                    .fetch_one(&mut *tx)
                    .await?;
                    if mine {
                        let (busy,): (i64,) = sqlx::query_as(
                            "SELECT count(*) FROM deliveries WHERE lane = $1 \
                             AND lease_until >= $2 AND state = 'pending'",
                        )
                        .bind(&row.lane)
                        .bind(db_now)
                        .fetch_one(&mut *tx)
                        .await?;
                        lanes.count(&row.lane, busy);
                    } else {
                        lanes.pass(&row.lane);
                    }
                }
                if !lanes.has_room(&row.lane) {
                    continue;
                }
                // A first try is released only when the user's deliveries of the last hour
                // leave room; otherwise it waits (pending, its time moved) until they do.
                // Retries were counted.
                let held = match counted(&row, self.deliveries_per_hour) {
                    Some((user, per_hour)) => {
                        sqlx::query(
                            "SELECT pg_advisory_xact_lock(hashtext('wachet.release:' || $1))",
                        )
                        .bind(user)
                        .execute(&mut *tx)
                        .await?;
                        hour_full_until(&mut tx, user, per_hour, now).await?
                    }
                    _ => None,
                };
                if let Some(free_at) = held {
                    sqlx::query("UPDATE deliveries SET next_attempt_at = $2 WHERE id = $1")
                        .bind(&row.id)
                        .bind(free_at)
                        .execute(&mut *tx)
                        .await?;
                    continue;
                }
                sqlx::query(
                    "UPDATE deliveries SET lease_until = $2, \
                     released_at = COALESCE(released_at, $3), lease_token = lease_token + 1 \
                     WHERE id = $1",
                )
                .bind(&row.id)
                .bind(until)
                .bind(now)
                .execute(&mut *tx)
                .await?;
                lanes.take(&row.lane);
                let key = row.digest_key.clone();
                let lead = row.id.clone();
                let mut claimed_delivery = delivery(row, now)?;
                if let Some(key) = key {
                    let (items, total) = digest_in(&mut tx, &lead, &key).await?;
                    claimed_delivery.digest = items;
                    claimed_delivery.digest_total = total;
                    led.push(key);
                }
                claimed.push(claimed_delivery);
            }
        }
        tx.commit().await?;
        Ok(claimed)
    }
});
