//! [`OutboxStore`] on PostgreSQL: deliveries of notifications and tests, claimed with `FOR UPDATE
//! SKIP LOCKED` under leases on the database's clock, and the confirmation mails of e-mail
//! addresses (rows of `email_addresses`, asked for in `users.rs`), claimed alike. A
//! notification's deliveries are written by [`create_in`] in the transaction that stores it.
//! The rows and texts are the shared ones of `store/shape/outbox.rs`, so both backends
//! deliver the same message.

use super::PgStore;
use super::schedule::{DB_NOW, db_now};
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
use sqlx::{AssertSqlSafe, PgConnection, Postgres, Transaction};
use wachet::model::{MessagingServiceType, NotificationEndpoint};

/// Queues the deliveries of the new notification `notification` of monitor `task` in `tx`: one
/// for each of `endpoints`, or of the owner's endpoints when it is empty. An e-mail address
/// other than the owner's own that is not confirmed gets no message: its delivery is failed at
/// once with [`UNCONFIRMED`], and a confirmation message is asked for.
pub(super) async fn create_in(
    tx: &mut Transaction<'_, Postgres>,
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
               JOIN tasks t ON t.folder_id = f.id WHERE t.id = $1 \
               UNION ALL SELECT f.id, f.parent_id, f.notification_endpoints, up.depth + 1 \
               FROM folders f JOIN up ON f.id = up.parent_id) \
             SELECT u.id, u.email, u.notification_endpoints, \
               (SELECT endpoints FROM up WHERE endpoints IS NOT NULL AND endpoints <> '[]' \
                ORDER BY depth LIMIT 1), \
               coalesce((t.definition::jsonb ->> 'muted') = 'true', false), u.time_zone \
             FROM users u JOIN tasks t ON t.user_id = u.id WHERE t.id = $1",
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
             updated_at, user_id, last_error, template, digest_key, lane) VALUES ($1, $2, $3, $4, \
             $5, $6, $7, $8, $9, $10, $11, $12)",
        )
        .bind(new_id())
        .bind(notification)
        .bind(endpoint.kind.code() as i32)
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
    conn: &mut PgConnection,
    user: &str,
    own: &str,
    address: &str,
) -> Result<bool, StoreError> {
    let address = mail_address(address);
    if address == own {
        return Ok(true);
    }
    let found: Option<(i32,)> = sqlx::query_as(
        "SELECT 1 FROM email_addresses WHERE user_id = $1 AND address = $2 \
         AND confirmed_at IS NOT NULL",
    )
    .bind(user)
    .bind(&address)
    .fetch_optional(conn)
    .await?;
    Ok(found.is_some())
}

/// When `user` may have another delivery released, if the last hour already holds `per_hour`
/// of theirs: an hour after the `per_hour`-th newest. The caller holds the user's release lock.
async fn hour_full_until(
    conn: &mut PgConnection,
    user: &str,
    per_hour: std::num::NonZeroU32,
    now: Millis,
) -> Result<Option<Millis>, StoreError> {
    let nth: Option<(Millis,)> = sqlx::query_as(
        "SELECT released_at FROM deliveries WHERE user_id = $1 AND released_at IS NOT NULL \
         ORDER BY released_at DESC LIMIT 1 OFFSET $2",
    )
    .bind(user)
    .bind(nth_offset(per_hour))
    .fetch_optional(conn)
    .await?;
    Ok(free_at(nth.map(|(at,)| at), now))
}

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

#[async_trait]
impl OutboxStore for PgStore {
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
            "UPDATE deliveries SET state = $2, attempts = attempts + 1, \
             next_attempt_at = COALESCE($3, next_attempt_at), last_error = $4, \
             lease_until = NULL, updated_at = $5 WHERE id = $1 AND lease_token = $6",
        )
        .bind(id)
        .bind(state)
        .bind(next)
        .bind(super::storable(error))
        .bind(now_millis())
        .bind(token)
        .execute(&self.pool)
        .await?;
        if done.rows_affected() == 1 && !matches!(outcome, DeliveryOutcome::Retry { .. }) {
            // The deliveries a digest carried end as it ended.
            sqlx::query(
                "UPDATE deliveries SET state = $1, last_error = $2, updated_at = $3 \
                 WHERE digest_of = $4 AND state = 'grouped'",
            )
            .bind(state)
            .bind(error)
            .bind(now_millis())
            .bind(id)
            .execute(&self.pool)
            .await?;
        }
        Ok(done.rows_affected() == 1)
    }

    async fn delivery_counts(&self) -> Result<Vec<(String, u64)>, StoreError> {
        let rows: Vec<(String, i64)> =
            sqlx::query_as("SELECT state, count(*) FROM deliveries GROUP BY state")
                .fetch_all(&self.pool)
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
        let rows: Vec<RecordRow> = sqlx::query_as(AssertSqlSafe(format!(
            "SELECT {} FROM deliveries WHERE notification_id = $1 \
             ORDER BY target COLLATE \"C\", id",
            record_columns()
        )))
        .bind(notification)
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter().map(record).collect()
    }

    /// Whether the delivery is in flight is told by the database's clock.
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
        let mut tx = self.pool.begin().await?;
        // The owner is the notification's (a delivery row's own user_id may predate it), or the
        // test delivery's.
        let row: Option<(i32, String, String, bool, String)> =
            sqlx::query_as(AssertSqlSafe(format!(
                "SELECT d.kind, d.target, d.state, \
                 coalesce(d.lease_until >= {DB_NOW}, false), u.email FROM deliveries d \
                 LEFT JOIN notifications n ON n.id = d.notification_id \
                 JOIN users u ON u.id = COALESCE(n.user_id, d.user_id) \
                 WHERE d.id = $1 AND u.id = $2 AND d.notification_id IS NOT DISTINCT FROM $3 \
                 FOR UPDATE OF d"
            )))
            .bind(delivery)
            .bind(user)
            .bind(notification)
            .fetch_optional(&mut *tx)
            .await?;
        let (kind, target, state, leased, own) = row.ok_or(StoreError::NotFound)?;
        let refuse = |message: &str| Err(StoreError::invalid("deliveryId", message));
        if state == "delivered" {
            return refuse("was delivered already");
        }
        if leased {
            return refuse("is being tried right now");
        }
        // A retry must not become a way around the confirmation of an e-mail address.
        if i64::from(kind) == MessagingServiceType::Email.code()
            && !confirmed(&mut tx, user, &own, &target).await?
        {
            return refuse(
                "goes to an e-mail address that has not confirmed it wants notifications; enter \
                 the code mailed to it first",
            );
        }
        sqlx::query(
            "UPDATE deliveries SET state = 'pending', next_attempt_at = $2, updated_at = $2 \
             WHERE id = $1",
        )
        .bind(delivery)
        .bind(now)
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
        let mut tx = self.pool.begin().await?;
        // Two requests at once must not both pass the count.
        sqlx::query("SELECT pg_advisory_xact_lock(hashtext('wachet.tests:' || $1))")
            .bind(user)
            .execute(&mut *tx)
            .await?;
        let (pending,): (i64,) = sqlx::query_as(
            "SELECT count(*) FROM deliveries WHERE user_id = $1 AND notification_id IS NULL \
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
             updated_at, user_id, lane) VALUES ($1, NULL, $2, $3, 'pending', $4, $4, $5, $6)",
        )
        .bind(&id)
        .bind(kind.code() as i32)
        .bind(target)
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
        let rows: Vec<RecordRow> = sqlx::query_as(AssertSqlSafe(format!(
            "SELECT {} FROM deliveries WHERE user_id = $1 AND notification_id IS NULL \
             ORDER BY updated_at DESC, id DESC LIMIT $2",
            record_columns()
        )))
        .bind(user)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter().map(record).collect()
    }

    /// The lease is `lease_until - now` long on the database's clock.
    async fn claim_confirmation_mails(
        &self,
        now: Millis,
        lease_until: Millis,
        limit: u32,
    ) -> Result<Vec<ConfirmationMail>, StoreError> {
        let mut tx = self.pool.begin().await?;
        let db_now = db_now(&mut tx).await?;
        let until = db_now.saturating_add(lease_until.saturating_sub(now));
        let rows: Vec<(String, String, String, i32)> = sqlx::query_as(
            "SELECT a.user_id, u.email, a.address, a.mail_attempts FROM email_addresses a \
             JOIN users u ON u.id = a.user_id \
             WHERE a.mail_due_at IS NOT NULL AND a.mail_due_at <= $1 \
             AND (a.lease_until IS NULL OR a.lease_until < $2) ORDER BY a.mail_due_at LIMIT $3 \
             FOR UPDATE OF a SKIP LOCKED",
        )
        .bind(now)
        .bind(db_now)
        .bind(i64::from(limit))
        .fetch_all(&mut *tx)
        .await?;
        let mut claimed = Vec::with_capacity(rows.len());
        for (user_id, account_email, address, attempts) in rows {
            // A new code for each message: only the last one mailed confirms.
            let code = crate::secrets::new_token();
            sqlx::query(
                "UPDATE email_addresses SET lease_until = $3, token_hash = $4 \
                 WHERE user_id = $1 AND address = $2",
            )
            .bind(&user_id)
            .bind(&address)
            .bind(until)
            .bind(crate::secrets::sha256_hex(&code))
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
            "UPDATE email_addresses SET mail_due_at = $3, mail_attempts = mail_attempts + 1, \
             last_error = $4, lease_until = NULL WHERE user_id = $1 AND address = $2 \
             AND token_hash = $5",
        )
        .bind(&mail.user_id)
        .bind(&mail.address)
        .bind(next)
        .bind(super::storable(error))
        .bind(mail.claim())
        .execute(&self.pool)
        .await?;
        Ok(())
    }
}

/// The digest `key` whose delivery `lead` was just claimed: the others held for it become
/// `grouped` under `lead` (kept so, should this claim's process die, for the next claim of
/// `lead`); its first [`DIGEST_ITEMS`](crate::store::DIGEST_ITEMS) notifications, oldest
/// first, and how many it carries in all.
async fn digest_in(
    tx: &mut Transaction<'_, Postgres>,
    lead: &str,
    key: &str,
) -> Result<(Vec<crate::store::DigestItem>, u64), StoreError> {
    sqlx::query(
        "UPDATE deliveries SET state = 'grouped', digest_of = $1 \
         WHERE digest_key = $2 AND id <> $1 AND state = 'pending'",
    )
    .bind(lead)
    .bind(key)
    .execute(&mut **tx)
    .await?;
    let rows: Vec<DigestRow> = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT {} FROM deliveries d JOIN notifications n ON n.id = d.notification_id \
         WHERE d.id = $1 OR d.digest_of = $1 ORDER BY n.created_at, n.id LIMIT $2",
        digest_columns()
    )))
    .bind(lead)
    .bind(digest_items())
    .fetch_all(&mut **tx)
    .await?;
    let (total,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM deliveries WHERE id = $1 OR digest_of = $1")
            .bind(lead)
            .fetch_one(&mut **tx)
            .await?;
    let items = rows.into_iter().map(digest_item).collect();
    Ok((items, u64::try_from(total).unwrap_or(0)))
}
