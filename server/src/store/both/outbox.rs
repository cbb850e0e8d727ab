//! [`OutboxStore`](crate::store::OutboxStore)'s parts both backends share: a notification's
//! deliveries written, a test queued, a delivery finished (and the deliveries its digest
//! carried with it), retried by its owner, counted and listed; the confirmation mails claimed
//! and finished; a digest's notifications gathered; whether an address may get mail, and when
//! a user's hourly bound has room again. Claiming deliveries (which rows, under which locks, on
//! whose clock) is each backend's own.

/// Defines `create_in`, `confirmed`, `hour_full_until` and `digest_in` in the calling module
/// and implements `OutboxStore` for `$store` on `$db` with the methods given in braces
/// (`claim_deliveries`). It reads the names its module imports from `shape::outbox` and
/// `store` (`RecordRow`, `record`, `DigestRow`, `digest_columns`, `digest_item`, `digest_items`,
/// `mail_address`, `nth_offset`, `free_at`, `DeliveryOutcome`, ...). By name:
///
/// - `conn`: the database's connection type;
/// - `records`: the columns of `RecordRow` and the order of a notification's deliveries;
/// - `lease_now`: the time a lease is compared with (`$4` is the caller's `now`);
/// - `lock_delivery`, `claim_mails`: what a read adds to lock the delivery a retry changes, and
///   the mails a claim takes;
/// - `muted`: whether the monitor `t` is muted, read from its definition (JSON);
/// - `lock_tests` (where writes may run side by side): a statement that makes a user's
///   queueing of a test the only one until the commit (the user is `$1`);
/// - `small_int`: the width of the schema's small integer columns.
///
/// The calling module also brings `mail_clock_in(tx, now, lease_until)`: the time due mails
/// are compared with and the lease of a claimed one, on the leases' clock.
macro_rules! outbox_store {
    (
        $store:ty,
        $db:ty,
        conn: $conn:ty,
        records: ($record_columns:expr, $records_order:literal),
        lease_now: $lease_now:expr,
        lock_delivery: $lock_delivery:literal,
        claim_mails: $claim_mails:literal,
        muted: $muted:literal,
        $(lock_tests: $lock_tests:literal,)?
        small_int: $int:ty,
        { $($own:tt)* }
    ) => {
        /// Queues the deliveries of the new notification `notification` of monitor `task` in
        /// `tx`, the transaction that stores it: one for each of `endpoints`, or (when empty)
        /// for each endpoint the monitor's folders or its owner name. An e-mail address other
        /// than the owner's own that is not confirmed gets no message: its delivery is failed
        /// at once with [`UNCONFIRMED`]($crate::store::shape::outbox::UNCONFIRMED), and a
        /// confirmation message is asked for (when the owner may have one more address
        /// waiting).
        pub(super) async fn create_in(
            tx: &mut ::sqlx::Transaction<'_, $db>,
            notification: &str,
            task: &str,
            endpoints: &[::wachet::model::NotificationEndpoint],
            now: Millis,
        ) -> Result<(), StoreError> {
            use $crate::store::shape::outbox::{
                asked, endpoints_to_notify, first_state, held_until, lane, template_column,
            };
            // The nearest folder up the monitor's tree that names endpoints, as the tree is now
            // (a folder moved since the monitor was saved passes its own on from its new place).
            #[allow(clippy::type_complexity)]
            let (user, email, json, inherited, muted, zone): (
                String,
                String,
                String,
                Option<String>,
                bool,
                String,
            ) = ::sqlx::query_as(concat!(
                "WITH RECURSIVE up (id, parent_id, endpoints, depth) AS ( \
                   SELECT f.id, f.parent_id, f.notification_endpoints, 0 FROM folders f \
                   JOIN tasks t ON t.folder_id = f.id WHERE t.id = $1 \
                   UNION ALL SELECT f.id, f.parent_id, f.notification_endpoints, up.depth + 1 \
                   FROM folders f JOIN up ON f.id = up.parent_id) \
                 SELECT u.id, u.email, u.notification_endpoints, \
                   (SELECT endpoints FROM up WHERE endpoints IS NOT NULL AND endpoints <> '[]' \
                    ORDER BY depth LIMIT 1), ",
                $muted,
                ", u.time_zone FROM users u JOIN tasks t ON t.user_id = u.id WHERE t.id = $1"
            ))
            .bind(task)
            .fetch_one(&mut **tx)
            .await?;
            let to_notify = endpoints_to_notify(endpoints, inherited.as_deref(), &json, muted)?;
            for endpoint in to_notify.iter() {
                let target = endpoint.value.as_deref().unwrap_or("");
                let unconfirmed = endpoint.kind == ::wachet::model::MessagingServiceType::Email
                    && !confirmed(tx, &user, &email, target).await?;
                if unconfirmed {
                    let address = mail_address(target);
                    asked(super::users::request_in(tx, &user, &address, now, false).await)?;
                }
                let (state, error) = first_state(unconfirmed);
                // Held for a digest or quiet hours: pending until then, with the others of its
                // message.
                let held = held_until(endpoint, &zone, &user, now);
                let due = held.as_ref().map_or(now, |(until, _)| *until);
                ::sqlx::query(
                    "INSERT INTO deliveries (id, notification_id, kind, target, state, \
                     next_attempt_at, updated_at, user_id, last_error, template, digest_key, \
                     lane) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
                )
                .bind($crate::store::new_id())
                .bind(notification)
                .bind(endpoint.kind.code() as $int)
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
            conn: &mut $conn,
            user: &str,
            own: &str,
            address: &str,
        ) -> Result<bool, StoreError> {
            let address = mail_address(address);
            if address == own {
                return Ok(true);
            }
            let found: Option<(String,)> = ::sqlx::query_as(
                "SELECT address FROM email_addresses WHERE user_id = $1 AND address = $2 \
                 AND confirmed_at IS NOT NULL",
            )
            .bind(user)
            .bind(&address)
            .fetch_optional(conn)
            .await?;
            Ok(found.is_some())
        }

        /// When `user` may have another delivery released, if the last hour already holds
        /// `per_hour` of theirs: an hour after the `per_hour`-th newest. The caller holds
        /// whatever makes its count the only one (SQLite's writer, PostgreSQL's release lock).
        async fn hour_full_until(
            conn: &mut $conn,
            user: &str,
            per_hour: std::num::NonZeroU32,
            now: Millis,
        ) -> Result<Option<Millis>, StoreError> {
            let nth: Option<(Millis,)> = ::sqlx::query_as(
                "SELECT released_at FROM deliveries WHERE user_id = $1 \
                 AND released_at IS NOT NULL ORDER BY released_at DESC LIMIT 1 OFFSET $2",
            )
            .bind(user)
            .bind(nth_offset(per_hour))
            .fetch_optional(conn)
            .await?;
            Ok(free_at(nth.map(|(at,)| at), now))
        }

        /// The digest `key` whose delivery `lead` was just claimed: the others held for it
        /// become `grouped` under `lead` (kept so, should this claim's process die, for the
        /// next claim of `lead`); its first [`DIGEST_ITEMS`](crate::store::DIGEST_ITEMS)
        /// notifications, oldest first, and how many it carries in all.
        async fn digest_in(
            tx: &mut ::sqlx::Transaction<'_, $db>,
            lead: &str,
            key: &str,
        ) -> Result<(Vec<$crate::store::DigestItem>, u64), StoreError> {
            ::sqlx::query(
                "UPDATE deliveries SET state = 'grouped', digest_of = $1 \
                 WHERE digest_key = $2 AND id <> $1 AND state = 'pending'",
            )
            .bind(lead)
            .bind(key)
            .execute(&mut **tx)
            .await?;
            let rows: Vec<DigestRow> = ::sqlx::query_as(::sqlx::AssertSqlSafe(format!(
                "SELECT {} FROM deliveries d JOIN notifications n ON n.id = d.notification_id \
                 WHERE d.id = $1 OR d.digest_of = $1 ORDER BY n.created_at, n.id LIMIT $2",
                digest_columns()
            )))
            .bind(lead)
            .bind(digest_items())
            .fetch_all(&mut **tx)
            .await?;
            let (total,): (i64,) =
                ::sqlx::query_as("SELECT COUNT(*) FROM deliveries WHERE id = $1 OR digest_of = $1")
                    .bind(lead)
                    .fetch_one(&mut **tx)
                    .await?;
            let items = rows.into_iter().map(digest_item).collect();
            Ok((items, u64::try_from(total).unwrap_or(0)))
        }

        #[::async_trait::async_trait]
        impl OutboxStore for $store {
            async fn finish_delivery(
                &self,
                id: &str,
                token: i64,
                outcome: &DeliveryOutcome,
            ) -> Result<bool, StoreError> {
                use $crate::store::shape::storable;
                let (state, next, error) = match outcome {
                    DeliveryOutcome::Delivered => ("delivered", None, None),
                    DeliveryOutcome::Retry { at, error } => {
                        ("pending", Some(*at), Some(error.as_str()))
                    }
                    DeliveryOutcome::Failed { error } => ("failed", None, Some(error.as_str())),
                };
                let done = ::sqlx::query(
                    "UPDATE deliveries SET state = $2, attempts = attempts + 1, \
                     next_attempt_at = COALESCE($3, next_attempt_at), last_error = $4, \
                     lease_until = NULL, updated_at = $5 WHERE id = $1 AND lease_token = $6",
                )
                .bind(id)
                .bind(state)
                .bind(next)
                .bind(storable(error))
                .bind(now_millis())
                .bind(token)
                .execute(self.writes())
                .await?;
                if done.rows_affected() == 1 && !matches!(outcome, DeliveryOutcome::Retry { .. }) {
                    // The deliveries a digest carried end as it ended.
                    ::sqlx::query(
                        "UPDATE deliveries SET state = $1, last_error = $2, updated_at = $3 \
                         WHERE digest_of = $4 AND state = 'grouped'",
                    )
                    .bind(state)
                    .bind(storable(error))
                    .bind(now_millis())
                    .bind(id)
                    .execute(self.writes())
                    .await?;
                }
                Ok(done.rows_affected() == 1)
            }

            async fn delivery_counts(&self) -> Result<Vec<(String, u64)>, StoreError> {
                let rows: Vec<(String, i64)> =
                    ::sqlx::query_as("SELECT state, count(*) FROM deliveries GROUP BY state")
                        .fetch_all(self.reads())
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
                let rows: Vec<RecordRow> = ::sqlx::query_as(::sqlx::AssertSqlSafe(format!(
                    "SELECT {} FROM deliveries WHERE notification_id = $1 ORDER BY {}",
                    $record_columns, $records_order
                )))
                .bind(notification)
                .fetch_all(self.reads())
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
                // The owner is the notification's (a delivery row's own user_id may predate
                // it), or the test delivery's; a lease still running means it is in flight.
                let row: Option<($int, String, String, bool, String)> =
                    ::sqlx::query_as(::sqlx::AssertSqlSafe(format!(
                        "SELECT d.kind, d.target, d.state, \
                         coalesce(d.lease_until >= {}, FALSE), u.email FROM deliveries d \
                         LEFT JOIN notifications n ON n.id = d.notification_id \
                         JOIN users u ON u.id = COALESCE(n.user_id, d.user_id) \
                         WHERE d.id = $1 AND u.id = $2 \
                         AND d.notification_id IS NOT DISTINCT FROM $3{}",
                        $lease_now, $lock_delivery
                    )))
                    .bind(delivery)
                    .bind(user)
                    .bind(notification)
                    .bind(now)
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
                if $crate::store::shape::wide(kind) == ::wachet::model::MessagingServiceType::Email.code()
                    && !confirmed(&mut tx, user, &own, &target).await?
                {
                    return refuse(
                        "goes to an e-mail address that has not confirmed it wants \
                         notifications; enter the code mailed to it first",
                    );
                }
                ::sqlx::query(
                    "UPDATE deliveries SET state = 'pending', next_attempt_at = $2, \
                     updated_at = $2 WHERE id = $1",
                )
                .bind(delivery)
                .bind(now)
                .execute(&mut *tx)
                .await?;
                tx.commit().await?;
                Ok(())
            }

            async fn test_deliveries(
                &self,
                user: &str,
                limit: u32,
            ) -> Result<Vec<DeliveryRecord>, StoreError> {
                let rows: Vec<RecordRow> = ::sqlx::query_as(::sqlx::AssertSqlSafe(format!(
                    "SELECT {} FROM deliveries WHERE user_id = $1 AND notification_id IS NULL \
                     ORDER BY updated_at DESC, id DESC LIMIT $2",
                    $record_columns
                )))
                .bind(user)
                .bind(i64::from(limit))
                .fetch_all(self.reads())
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
                let (lease_now, until) = mail_clock_in(&mut tx, now, lease_until).await?;
                let rows: Vec<(String, String, String, $int)> =
                    ::sqlx::query_as(::sqlx::AssertSqlSafe(format!(
                        "SELECT a.user_id, u.email, a.address, a.mail_attempts \
                         FROM email_addresses a JOIN users u ON u.id = a.user_id \
                         WHERE a.mail_due_at IS NOT NULL AND a.mail_due_at <= $1 \
                         AND (a.lease_until IS NULL OR a.lease_until < $2) \
                         ORDER BY a.mail_due_at LIMIT $3{}",
                        $claim_mails
                    )))
                    .bind(now)
                    .bind(lease_now)
                    .bind(i64::from(limit))
                    .fetch_all(&mut *tx)
                    .await?;
                let mut claimed = Vec::with_capacity(rows.len());
                for (user_id, account_email, address, attempts) in rows {
                    // A new code for each message: only the last one mailed confirms.
                    let code = $crate::secrets::new_token();
                    ::sqlx::query(
                        "UPDATE email_addresses SET lease_until = $3, token_hash = $4 \
                         WHERE user_id = $1 AND address = $2",
                    )
                    .bind(&user_id)
                    .bind(&address)
                    .bind(until)
                    .bind($crate::secrets::sha256_hex(&code))
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
                ::sqlx::query(
                    "UPDATE email_addresses SET mail_due_at = $3, \
                     mail_attempts = mail_attempts + 1, last_error = $4, lease_until = NULL \
                     WHERE user_id = $1 AND address = $2 AND token_hash = $5",
                )
                .bind(&mail.user_id)
                .bind(&mail.address)
                .bind(next)
                .bind($crate::store::shape::storable(error))
                .bind(mail.claim())
                .execute(self.writes())
                .await?;
                Ok(())
            }

            async fn queue_test_delivery(
                &self,
                user: &str,
                kind: ::wachet::model::MessagingServiceType,
                target: &str,
                now: Millis,
                waiting: u32,
            ) -> Result<String, StoreError> {
                let mut tx = self.write().await?;
                // Two requests at once must not both pass the count (SQLite's single writer
                // runs them one after the other already).
                $(
                    ::sqlx::query($lock_tests)
                        .bind(user)
                        .execute(&mut *tx)
                        .await?;
                )?
                let (pending,): (i64,) = ::sqlx::query_as(
                    "SELECT count(*) FROM deliveries WHERE user_id = $1 \
                     AND notification_id IS NULL AND state = 'pending'",
                )
                .bind(user)
                .fetch_one(&mut *tx)
                .await?;
                if pending >= i64::from(waiting) {
                    return Err(StoreError::invalid(
                        "endpoint",
                        format!(
                            "{pending} test notifications are still waiting to be delivered; \
                             send another once they are"
                        ),
                    ));
                }
                let id = $crate::store::new_id();
                ::sqlx::query(
                    "INSERT INTO deliveries (id, notification_id, kind, target, state, \
                     next_attempt_at, updated_at, user_id, lane) \
                     VALUES ($1, NULL, $2, $3, 'pending', $4, $4, $5, $6)",
                )
                .bind(&id)
                .bind(kind.code() as $int)
                .bind(target)
                .bind(now)
                .bind(user)
                .bind($crate::store::shape::outbox::lane(kind, target))
                .execute(&mut *tx)
                .await?;
                tx.commit().await?;
                Ok(id)
            }

            $($own)*
        }
    };
}

pub(crate) use outbox_store;
