//! [`OutboxStore`] on SQLite: deliveries of notifications to endpoints, claimed under a lease
//! and retried; test notifications (deliveries without a notification), a retry asked for by
//! the owner; and the confirmation mails of e-mail addresses (rows of `email_addresses`, asked
//! for in `users.rs`), claimed and retried alike.

use super::SqliteStore;
use crate::store::shape::outbox::{
    CLAIM_PAGES, DUE_EXTRA_COLUMNS, DigestRow, DueRow, Lanes, RECORD_COLUMNS, RecordRow, asked,
    counted, delivery, digest_columns, digest_item, digest_items, endpoints_to_notify, first_state,
    free_at, held_until, lane, mail_address, nth_offset, record, template_column,
};
use crate::store::{
    ConfirmationMail, Delivery, DeliveryOutcome, DeliveryRecord, Millis, OutboxStore, StoreError,
    is_id, new_id, now_millis,
};
use async_trait::async_trait;
use sqlx::{Sqlite, Transaction};
use wachet::model::{MessagingServiceType, NotificationEndpoint};

/// Writes a notification's deliveries, in the transaction that stores it: to `endpoints`, or
/// (when empty) to every endpoint of the monitor's owner. An e-mail address other than the
/// owner's own that is not confirmed gets no message: its delivery is failed at once with
/// [`UNCONFIRMED`], and a confirmation message is asked for (when the owner may have one more
/// address waiting).
pub(super) async fn create_in(
    tx: &mut Transaction<'_, Sqlite>,
    notification: &str,
    task: &str,
    endpoints: &[NotificationEndpoint],
    now: Millis,
) -> Result<(), StoreError> {
    // The nearest folder up the monitor's tree that names endpoints, as the tree is now (a
    // folder moved since the monitor was saved passes its own on from its new place).
    #[allow(clippy::type_complexity)]
    let (user, email, json, inherited, muted, zone): (
        String,
        String,
        String,
        Option<String>,
        bool,
        String,
    ) = sqlx::query_as(
        "WITH RECURSIVE up (id, parent_id, endpoints, depth) AS ( \
               SELECT f.id, f.parent_id, f.notification_endpoints, 0 FROM folders f \
               JOIN tasks t ON t.folder_id = f.id WHERE t.id = ?1 \
               UNION ALL SELECT f.id, f.parent_id, f.notification_endpoints, up.depth + 1 \
               FROM folders f JOIN up ON f.id = up.parent_id) \
             SELECT u.id, u.email, u.notification_endpoints, \
               (SELECT endpoints FROM up WHERE endpoints IS NOT NULL AND endpoints <> '[]' \
                ORDER BY depth LIMIT 1), \
               coalesce(json_extract(t.definition, '$.muted'), 0) = 1, u.time_zone \
             FROM users u JOIN tasks t ON t.user_id = u.id WHERE t.id = ?1",
    )
    .bind(task)
    .fetch_one(&mut **tx)
    .await?;
    let to_notify = endpoints_to_notify(endpoints, inherited.as_deref(), &json, muted)?;
    for endpoint in to_notify.iter() {
        let target = endpoint.value.as_deref().unwrap_or("");
        let unconfirmed = endpoint.kind == MessagingServiceType::Email
            && !confirmed(tx, &user, &email, target).await?;
        if unconfirmed {
            let address = mail_address(target);
            asked(super::users::request_in(tx, &user, &address, now, false).await)?;
        }
        let (state, error) = first_state(unconfirmed);
        // Held for a digest or quiet hours: pending until then, with the others of its message.
        let held = held_until(endpoint, &zone, &user, now);
        let due = held.as_ref().map_or(now, |(until, _)| *until);
        sqlx::query(
            "INSERT INTO deliveries (id, notification_id, kind, target, state, next_attempt_at, \
             updated_at, user_id, last_error, template, digest_key, lane) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(new_id())
        .bind(notification)
        .bind(endpoint.kind.code())
        .bind(target)
        .bind(state)
        .bind(due)
        .bind(now)
        .bind(&user)
        .bind(error)
        .bind(template_column(endpoint))
        .bind(held.map(|(_, key)| key))
        .bind(lane(endpoint.kind, target))
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}

/// Whether `user` (whose own address is `own`) may get e-mail at `address`.
async fn confirmed(
    tx: &mut Transaction<'_, Sqlite>,
    user: &str,
    own: &str,
    address: &str,
) -> Result<bool, StoreError> {
    let address = mail_address(address);
    if address == own {
        return Ok(true);
    }
    let found: Option<(i64,)> = sqlx::query_as(
        "SELECT 1 FROM email_addresses WHERE user_id = ? AND address = ? \
         AND confirmed_at IS NOT NULL",
    )
    .bind(user)
    .bind(&address)
    .fetch_optional(&mut **tx)
    .await?;
    Ok(found.is_some())
}

/// When `user` may have another delivery released, if the last hour already holds `per_hour`
/// of theirs: an hour after the `per_hour`-th newest.
async fn hour_full_until(
    tx: &mut Transaction<'_, Sqlite>,
    user: &str,
    per_hour: std::num::NonZeroU32,
    now: Millis,
) -> Result<Option<Millis>, StoreError> {
    let nth: Option<(Millis,)> = sqlx::query_as(
        "SELECT released_at FROM deliveries WHERE user_id = ? AND released_at IS NOT NULL \
         ORDER BY released_at DESC LIMIT 1 OFFSET ?",
    )
    .bind(user)
    .bind(nth_offset(per_hour))
    .fetch_optional(&mut **tx)
    .await?;
    Ok(free_at(nth.map(|(at,)| at), now))
}

#[async_trait]
impl OutboxStore for SqliteStore {
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

    async fn finish_delivery(
        &self,
        id: &str,
        token: i64,
        outcome: &DeliveryOutcome,
    ) -> Result<bool, StoreError> {
        let (state, next, error) = match outcome {
            DeliveryOutcome::Delivered => ("delivered", None, None),
            DeliveryOutcome::Retry { at, error } => ("pending", Some(*at), Some(error.as_str())),
            DeliveryOutcome::Failed { error } => ("failed", None, Some(error.as_str())),
        };
        let done = sqlx::query(
            "UPDATE deliveries SET state = ?, attempts = attempts + 1, \
             next_attempt_at = COALESCE(?, next_attempt_at), last_error = ?, lease_until = NULL, \
             updated_at = ? WHERE id = ? AND lease_token = ?",
        )
        .bind(state)
        .bind(next)
        .bind(error)
        .bind(now_millis())
        .bind(id)
        .bind(token)
        .execute(&self.writer)
        .await?;
        if done.rows_affected() == 1 && !matches!(outcome, DeliveryOutcome::Retry { .. }) {
            // The deliveries a digest carried end as it ended.
            sqlx::query(
                "UPDATE deliveries SET state = ?, last_error = ?, updated_at = ? \
                 WHERE digest_of = ? AND state = 'grouped'",
            )
            .bind(state)
            .bind(error)
            .bind(now_millis())
            .bind(id)
            .execute(&self.writer)
            .await?;
        }
        Ok(done.rows_affected() == 1)
    }

    async fn delivery_counts(&self) -> Result<Vec<(String, u64)>, StoreError> {
        let rows: Vec<(String, i64)> =
            sqlx::query_as("SELECT state, COUNT(*) FROM deliveries GROUP BY state")
                .fetch_all(&self.reader)
                .await?;
        Ok(rows
            .into_iter()
            .map(|(state, n)| (state, u64::try_from(n).unwrap_or(0)))
            .collect())
    }

    async fn delivery_records(
        &self,
        notification: &str,
    ) -> Result<Vec<DeliveryRecord>, StoreError> {
        let rows: Vec<RecordRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {RECORD_COLUMNS} FROM deliveries WHERE notification_id = ? ORDER BY target, id"
        )))
        .bind(notification)
        .fetch_all(&self.reader)
        .await?;
        rows.into_iter().map(record).collect()
    }

    async fn retry_delivery(
        &self,
        user: &str,
        notification: Option<&str>,
        delivery: &str,
        now: Millis,
    ) -> Result<(), StoreError> {
        if !is_id(delivery) || notification.is_some_and(|n| !is_id(n)) {
            return Err(StoreError::NotFound);
        }
        let mut tx = self.write().await?;
        // The owner is the notification's (a delivery row's own user_id may predate it), or the
        // test delivery's.
        let row: Option<(i64, String, String, Option<Millis>, String)> = sqlx::query_as(
            "SELECT d.kind, d.target, d.state, d.lease_until, u.email FROM deliveries d \
             LEFT JOIN notifications n ON n.id = d.notification_id \
             JOIN users u ON u.id = COALESCE(n.user_id, d.user_id) \
             WHERE d.id = ? AND u.id = ? AND d.notification_id IS ?",
        )
        .bind(delivery)
        .bind(user)
        .bind(notification)
        .fetch_optional(&mut *tx)
        .await?;
        let (kind, target, state, lease, own) = row.ok_or(StoreError::NotFound)?;
        let refuse = |message: &str| Err(StoreError::invalid("deliveryId", message));
        if state == "delivered" {
            return refuse("was delivered already");
        }
        if lease.is_some_and(|until| until >= now) {
            return refuse("is being tried right now");
        }
        // A retry must not become a way around the confirmation of an e-mail address.
        if kind == MessagingServiceType::Email.code()
            && !confirmed(&mut tx, user, &own, &target).await?
        {
            return refuse(
                "goes to an e-mail address that has not confirmed it wants notifications; enter \
                 the code mailed to it first",
            );
        }
        sqlx::query(
            "UPDATE deliveries SET state = 'pending', next_attempt_at = ?, updated_at = ? \
             WHERE id = ?",
        )
        .bind(now)
        .bind(now)
        .bind(delivery)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    async fn queue_test_delivery(
        &self,
        user: &str,
        kind: MessagingServiceType,
        target: &str,
        now: Millis,
        waiting: u32,
    ) -> Result<String, StoreError> {
        let mut tx = self.write().await?;
        let (pending,): (i64,) = sqlx::query_as(
            "SELECT COUNT(*) FROM deliveries WHERE user_id = ? AND notification_id IS NULL \
             AND state = 'pending'",
        )
        .bind(user)
        .fetch_one(&mut *tx)
        .await?;
        if pending >= i64::from(waiting) {
            return Err(StoreError::invalid(
                "endpoint",
                format!(
                    "{pending} test notifications are still waiting to be delivered; send another \
                     once they are"
                ),
            ));
        }
        let id = new_id();
        sqlx::query(
            "INSERT INTO deliveries (id, notification_id, kind, target, state, next_attempt_at, \
             updated_at, user_id, lane) VALUES (?, NULL, ?, ?, 'pending', ?, ?, ?, ?)",
        )
        .bind(&id)
        .bind(kind.code())
        .bind(target)
        .bind(now)
        .bind(now)
        .bind(user)
        .bind(lane(kind, target))
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(id)
    }

    async fn test_deliveries(
        &self,
        user: &str,
        limit: u32,
    ) -> Result<Vec<DeliveryRecord>, StoreError> {
        let rows: Vec<RecordRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {RECORD_COLUMNS} FROM deliveries WHERE user_id = ? AND notification_id IS NULL \
             ORDER BY updated_at DESC, id DESC LIMIT ?"
        )))
        .bind(user)
        .bind(i64::from(limit))
        .fetch_all(&self.reader)
        .await?;
        rows.into_iter().map(record).collect()
    }

    async fn claim_confirmation_mails(
        &self,
        now: Millis,
        lease_until: Millis,
        limit: u32,
    ) -> Result<Vec<ConfirmationMail>, StoreError> {
        let mut tx = self.write().await?;
        let rows: Vec<(String, String, String, i64)> = sqlx::query_as(
            "SELECT a.user_id, u.email, a.address, a.mail_attempts FROM email_addresses a \
             JOIN users u ON u.id = a.user_id \
             WHERE a.mail_due_at IS NOT NULL AND a.mail_due_at <= ? \
             AND (a.lease_until IS NULL OR a.lease_until < ?) ORDER BY a.mail_due_at LIMIT ?",
        )
        .bind(now)
        .bind(now)
        .bind(i64::from(limit))
        .fetch_all(&mut *tx)
        .await?;
        let mut claimed = Vec::with_capacity(rows.len());
        for (user_id, account_email, address, attempts) in rows {
            // A new code for each message: only the last one mailed confirms.
            let code = crate::secrets::new_token();
            sqlx::query(
                "UPDATE email_addresses SET lease_until = ?, token_hash = ? \
                 WHERE user_id = ? AND address = ?",
            )
            .bind(lease_until)
            .bind(crate::secrets::sha256_hex(&code))
            .bind(&user_id)
            .bind(&address)
            .execute(&mut *tx)
            .await?;
            claimed.push(ConfirmationMail {
                user_id,
                account_email,
                address,
                code,
                attempts: u32::try_from(attempts).unwrap_or(0),
            });
        }
        tx.commit().await?;
        Ok(claimed)
    }

    async fn finish_confirmation_mail(
        &self,
        mail: &ConfirmationMail,
        outcome: &DeliveryOutcome,
    ) -> Result<(), StoreError> {
        let (next, error) = match outcome {
            DeliveryOutcome::Delivered => (None, None),
            DeliveryOutcome::Retry { at, error } => (Some(*at), Some(error.as_str())),
            DeliveryOutcome::Failed { error } => (None, Some(error.as_str())),
        };
        sqlx::query(
            "UPDATE email_addresses SET mail_due_at = ?, mail_attempts = mail_attempts + 1, \
             last_error = ?, lease_until = NULL WHERE user_id = ? AND address = ? \
             AND token_hash = ?",
        )
        .bind(next)
        .bind(error)
        .bind(&mail.user_id)
        .bind(&mail.address)
        .bind(mail.claim())
        .execute(&self.writer)
        .await?;
        Ok(())
    }
}

/// The digest `key` whose delivery `lead` was just claimed: the others held for it become
/// `grouped` under `lead` (kept so, should this claim's process die, for the next claim of
/// `lead`); its first [`DIGEST_ITEMS`](crate::store::DIGEST_ITEMS) notifications, oldest
/// first, and how many it carries in all.
async fn digest_in(
    tx: &mut Transaction<'_, Sqlite>,
    lead: &str,
    key: &str,
) -> Result<(Vec<crate::store::DigestItem>, u64), StoreError> {
    sqlx::query(
        "UPDATE deliveries SET state = 'grouped', digest_of = ?1 \
         WHERE digest_key = ?2 AND id <> ?1 AND state = 'pending'",
    )
    .bind(lead)
    .bind(key)
    .execute(&mut **tx)
    .await?;
    let rows: Vec<DigestRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {} FROM deliveries d JOIN notifications n ON n.id = d.notification_id \
         WHERE d.id = ?1 OR d.digest_of = ?1 ORDER BY n.created_at, n.id LIMIT ?2",
        digest_columns()
    )))
    .bind(lead)
    .bind(digest_items())
    .fetch_all(&mut **tx)
    .await?;
    let (total,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM deliveries WHERE id = ?1 OR digest_of = ?1")
            .bind(lead)
            .fetch_one(&mut **tx)
            .await?;
    let items = rows.into_iter().map(digest_item).collect();
    Ok((items, u64::try_from(total).unwrap_or(0)))
}
