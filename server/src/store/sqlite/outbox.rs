//! [`OutboxStore`] on SQLite: deliveries of notifications and tests claimed under a lease, on
//! the machine's clock, which every process on the file shares; the single writer makes each
//! claim the only one. The rest (a notification's deliveries written, tests queued, retries,
//! the confirmation mails of e-mail addresses) is written once for both backends in
//! [`crate::store::both::outbox`].

use super::SqliteStore;
use crate::store::shape::outbox::{
    CLAIM_PAGES, DUE_EXTRA_COLUMNS, DigestRow, DueRow, Lanes, RECORD_COLUMNS, RecordRow, counted,
    delivery, digest_columns, digest_item, digest_items, free_at, mail_address, nth_offset, record,
};
use crate::store::{
    ConfirmationMail, Delivery, DeliveryOutcome, DeliveryRecord, Millis, OutboxStore, StoreError,
    is_id, now_millis,
};
use sqlx::{Sqlite, Transaction};

/// Due mails are compared with the caller's `now` and a claimed one is leased until
/// `lease_until`: every process on the file shares the machine's clock.
async fn mail_clock_in(
    _tx: &mut Transaction<'_, Sqlite>,
    now: Millis,
    lease_until: Millis,
) -> Result<(Millis, Millis), StoreError> {
    Ok((now, lease_until))
}

crate::store::both::outbox::outbox_store!(SqliteStore, Sqlite, conn: sqlx::SqliteConnection,
    records: (RECORD_COLUMNS, "target, id"), lease_now: "$4", lock_delivery: "", claim_mails: "",
    muted: "coalesce(json_extract(t.definition, '$.muted'), 0) = 1", small_int: i64, {
    async fn claim_deliveries(
        &self,
        now: Millis,
        lease_until: Millis,
        limit: u32,
        per_lane: u32,
    ) -> Result<Vec<Delivery>, StoreError> {
        let mut tx = self.write().await?;
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
            // Due rows of the lanes below their cap (counting this claim's own, leased above).
            let rows: Vec<DueRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                "SELECT d.id, d.kind, d.target, d.attempts, n.id AS notification_id, \
                 n.alert_type, n.alert, n.current_value, n.comparand, n.error, n.created_at, \
                 n.task_id, n.task_name, n.url, u.webhook_secret, n.html, \
                 n.synthetic_expression, d.user_id, d.released_at, n.explanation, \
                 d.lease_token, u.id AS owner, u.login_base, {DUE_EXTRA_COLUMNS} \
                 FROM deliveries d \
                 LEFT JOIN notifications n ON n.id = d.notification_id \
                 JOIN users u ON u.id = d.user_id \
                 WHERE d.state = 'pending' AND d.next_attempt_at <= ?1 \
                 AND (d.lease_until IS NULL OR d.lease_until < ?1) \
                 AND d.lane NOT IN (SELECT lane FROM deliveries WHERE lease_until >= ?1 \
                   AND state = 'pending' GROUP BY lane HAVING COUNT(*) >= ?2) \
                 ORDER BY d.next_attempt_at LIMIT ?3"
            )))
            .bind(now)
            .bind(lanes.cap())
            .bind(want as i64)
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
                    let (busy,): (i64,) = sqlx::query_as(
                        "SELECT COUNT(*) FROM deliveries WHERE lane = ? AND lease_until >= ? \
                         AND state = 'pending'",
                    )
                    .bind(&row.lane)
                    .bind(now)
                    .fetch_one(&mut *tx)
                    .await?;
                    lanes.count(&row.lane, busy);
                }
                if !lanes.has_room(&row.lane) {
                    continue;
                }
                // A first try is released only when the user's deliveries of the last hour
                // leave room; otherwise it waits (pending, its time moved) until they do.
                // Retries were counted.
                let held = match counted(&row, self.deliveries_per_hour) {
                    Some((user, per_hour)) => hour_full_until(&mut tx, user, per_hour, now).await?,
                    _ => None,
                };
                if let Some(free_at) = held {
                    sqlx::query("UPDATE deliveries SET next_attempt_at = ? WHERE id = ?")
                        .bind(free_at)
                        .bind(&row.id)
                        .execute(&mut *tx)
                        .await?;
                    continue;
                }
                sqlx::query(
                    "UPDATE deliveries SET lease_until = ?, \
                     released_at = COALESCE(released_at, ?), lease_token = lease_token + 1 \
                     WHERE id = ?",
                )
                .bind(lease_until)
                .bind(now)
                .bind(&row.id)
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
