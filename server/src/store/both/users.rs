//! [`UserStore`](crate::store::UserStore) for both backends: users, tokens (the owner of a
//! token is cached), notification endpoints, the rotation of secrets, the confirmation of
//! e-mail addresses (their mails are sent from the outbox, which asks for them through the
//! `request_in` this defines beside the store) and the paging secret. The SQL is standard, the
//! same on both.

/// Implements `UserStore` for `$store` on the database `$db`, and defines `request_in` (a
/// confirmation asked for within the caller's transaction) in the calling module. `lock_row`
/// is what a read adds to lock the row it reads until the commit.
macro_rules! user_store {
    ($store:ty, $db:ty, lock_row: $lock_row:literal $(,)?) => {
        use ::sqlx::AssertSqlSafe;
        use ::wachet::model::NotificationEndpoint;
        use $crate::store::shape::invalidate;
        use $crate::store::shape::users::{
            USER_COLUMNS, UserRow, cache_owner, cached_owner, email_address, email_taken,
            endpoints_json, new_user_endpoints, room_to_wait, to_ask, user, waiting_since,
        };
        use $crate::store::{
            EmailAddress, Millis, StoreError, TokenRecord, UserRecord, UserStore, now_millis,
        };

        async fn set_column(
            store: &$store,
            column: &'static str,
            user: &str,
            value: &str,
        ) -> Result<(), StoreError> {
            let updated = ::sqlx::query(AssertSqlSafe(format!(
                "UPDATE users SET {column} = $1 WHERE id = $2"
            )))
            .bind(value)
            .bind(user)
            .execute(store.writes())
            .await?;
            if updated.rows_affected() == 0 {
                return Err(StoreError::NotFound);
            }
            Ok(())
        }

        /// Asks for a confirmation message to `address` (lower-cased) unless it is confirmed
        /// or one went out lately; within the caller's transaction. `resend` says the user
        /// asked explicitly, so an address asked for lately is an error rather than nothing to
        /// do.
        pub(super) async fn request_in(
            tx: &mut <$db as ::sqlx::Database>::Connection,
            user: &str,
            address: &str,
            now: Millis,
            resend: bool,
        ) -> Result<(), StoreError> {
            let known: Option<(Option<Millis>, Millis)> = ::sqlx::query_as(
                "SELECT confirmed_at, requested_at FROM email_addresses \
                 WHERE user_id = $1 AND address = $2",
            )
            .bind(user)
            .bind(address)
            .fetch_optional(&mut *tx)
            .await?;
            if !to_ask(known, now, resend)? {
                return Ok(());
            }
            let (pending,): (i64,) = ::sqlx::query_as(
                "SELECT COUNT(*) FROM email_addresses WHERE user_id = $1 AND confirmed_at IS NULL \
                 AND requested_at > $2 AND address <> $3",
            )
            .bind(user)
            .bind(waiting_since(now))
            .bind(address)
            .fetch_one(&mut *tx)
            .await?;
            room_to_wait(pending)?;
            ::sqlx::query(
                "INSERT INTO email_addresses (user_id, address, requested_at, mail_due_at) \
                 VALUES ($1, $2, $3, $4) ON CONFLICT (user_id, address) DO UPDATE SET \
                 requested_at = excluded.requested_at, mail_due_at = excluded.mail_due_at, \
                 mail_attempts = 0, last_error = NULL, token_hash = NULL",
            )
            .bind(user)
            .bind(address)
            .bind(now)
            .bind(now)
            .execute(&mut *tx)
            .await?;
            Ok(())
        }

        #[::async_trait::async_trait]
        impl UserStore for $store {
            async fn paging_secret(&self) -> Result<Vec<u8>, StoreError> {
                // First writer wins; every process then reads the same secret.
                ::sqlx::query(
                    "INSERT INTO settings (name, value) VALUES ('paging_secret', $1) \
                     ON CONFLICT (name) DO NOTHING",
                )
                .bind($crate::secrets::random_hex(32))
                .execute(self.writes())
                .await?;
                let (value,): (String,) =
                    ::sqlx::query_as("SELECT value FROM settings WHERE name = 'paging_secret'")
                        .fetch_one(self.writes())
                        .await?;
                Ok(value.into_bytes())
            }

            async fn rotate_secret(
                &self,
                old_secret: &[u8],
                new_secret: &str,
                reseal: &dyn $crate::store::Reseal,
            ) -> Result<$crate::store::Rotation, StoreError> {
                use $crate::store::feeds::{FEED_SELECT, FeedRow, record};
                use $crate::store::users::{SEALED_TEXTS, secret_changed};
                use $crate::store::{ROTATION_PAGE, Rotation, SealedIn};
                let mut tx = self.write().await?;
                let current: Option<(String,)> = ::sqlx::query_as(AssertSqlSafe(format!(
                    "SELECT value FROM settings WHERE name = 'paging_secret'{}",
                    $lock_row
                )))
                .fetch_optional(&mut *tx)
                .await?;
                if current.map(|(v,)| v.into_bytes()).as_deref() != Some(old_secret) {
                    return Err(secret_changed());
                }
                let mut done = Rotation::default();
                for (table, key, owner, column) in SEALED_TEXTS {
                    let select = format!(
                        "SELECT {key}, {owner}, {column} FROM {table} WHERE {key} > $1 \
                         AND {owner} IS NOT NULL AND {column} LIKE '%sealed~%' \
                         ORDER BY {key} LIMIT $2"
                    );
                    let update = format!("UPDATE {table} SET {column} = $1 WHERE {key} = $2");
                    let mut after = String::new();
                    loop {
                        let rows: Vec<(String, String, String)> =
                            ::sqlx::query_as(AssertSqlSafe(select.clone()))
                                .bind(&after)
                                .bind(ROTATION_PAGE)
                                .fetch_all(&mut *tx)
                                .await?;
                        for (id, user, text) in &rows {
                            let again = reseal.reseal(SealedIn::Text { user }, text);
                            done.add(&again);
                            if again.resealed > 0 {
                                ::sqlx::query(AssertSqlSafe(update.clone()))
                                    .bind(&again.text)
                                    .bind(id)
                                    .execute(&mut *tx)
                                    .await?;
                            }
                        }
                        match rows.last() {
                            Some((id, _, _)) if rows.len() as i64 == ROTATION_PAGE => {
                                after = id.clone()
                            }
                            _ => break,
                        }
                    }
                }
                let mut after = String::new();
                loop {
                    let rows: Vec<FeedRow> = ::sqlx::query_as(AssertSqlSafe(format!(
                        "{FEED_SELECT} WHERE f.id > $1 AND f.secret_sealed IS NOT NULL \
                         ORDER BY f.id LIMIT $2"
                    )))
                    .bind(&after)
                    .bind(ROTATION_PAGE)
                    .fetch_all(&mut *tx)
                    .await?;
                    let full = rows.len() as i64 == ROTATION_PAGE;
                    for row in rows {
                        let feed = record(row)?;
                        after = feed.id.clone();
                        let Some(sealed) = &feed.sealed_secret else {
                            continue;
                        };
                        let place = SealedIn::Feed {
                            user: &feed.user_id,
                            scope: &feed.scope,
                        };
                        let again = reseal.reseal(place, sealed);
                        done.add(&again);
                        if again.resealed > 0 {
                            ::sqlx::query("UPDATE feeds SET secret_sealed = $1 WHERE id = $2")
                                .bind(&again.text)
                                .bind(&feed.id)
                                .execute(&mut *tx)
                                .await?;
                        }
                    }
                    if !full {
                        break;
                    }
                }
                let mut after = String::new();
                loop {
                    let rows: Vec<(String, String)> = ::sqlx::query_as(
                        "SELECT task_id, sealed FROM task_sessions WHERE task_id > $1 \
                         ORDER BY task_id LIMIT $2",
                    )
                    .bind(&after)
                    .bind(ROTATION_PAGE)
                    .fetch_all(&mut *tx)
                    .await?;
                    for (task, sealed) in &rows {
                        let again = reseal.reseal(SealedIn::Session { task }, sealed);
                        done.add(&again);
                        if again.resealed > 0 {
                            ::sqlx::query(
                                "UPDATE task_sessions SET sealed = $1 WHERE task_id = $2",
                            )
                            .bind(&again.text)
                            .bind(task)
                            .execute(&mut *tx)
                            .await?;
                        }
                    }
                    match rows.last() {
                        Some((task, _)) if rows.len() as i64 == ROTATION_PAGE => {
                            after = task.clone()
                        }
                        _ => break,
                    }
                }
                ::sqlx::query("UPDATE settings SET value = $1 WHERE name = 'paging_secret'")
                    .bind(new_secret)
                    .execute(&mut *tx)
                    .await?;
                tx.commit().await?;
                invalidate::secret_rotated(&self.cache);
                Ok(done)
            }

            async fn user_count(&self) -> Result<u64, StoreError> {
                let (n,): (i64,) = ::sqlx::query_as("SELECT COUNT(*) FROM users")
                    .fetch_one(self.reads())
                    .await?;
                Ok(u64::try_from(n).unwrap_or(0))
            }

            async fn create_user(&self, user: &UserRecord) -> Result<(), StoreError> {
                let endpoints = new_user_endpoints(user)?;
                let inserted = ::sqlx::query(AssertSqlSafe(format!(
                    "INSERT INTO users ({USER_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
                     ON CONFLICT (email) DO NOTHING"
                )))
                .bind(&user.id)
                .bind(&user.email)
                .bind(&user.password_hash)
                .bind(&user.api_key_hash)
                .bind(&user.webhook_secret)
                .bind(endpoints)
                .bind(user.created_at)
                .bind(&user.time_zone)
                .execute(self.writes())
                .await?;
                if inserted.rows_affected() == 0 {
                    return Err(email_taken());
                }
                Ok(())
            }

            async fn user_by_email(&self, email: &str) -> Result<Option<UserRecord>, StoreError> {
                if $crate::store::shape::any_nul([email]) {
                    return Ok(None);
                }
                let row: Option<UserRow> = ::sqlx::query_as(AssertSqlSafe(format!(
                    "SELECT {USER_COLUMNS} FROM users WHERE email = $1"
                )))
                .bind(email)
                .fetch_optional(self.reads())
                .await?;
                row.map(user).transpose()
            }

            async fn user_by_id(&self, id: &str) -> Result<Option<UserRecord>, StoreError> {
                let row: Option<UserRow> = ::sqlx::query_as(AssertSqlSafe(format!(
                    "SELECT {USER_COLUMNS} FROM users WHERE id = $1"
                )))
                .bind(id)
                .fetch_optional(self.reads())
                .await?;
                row.map(user).transpose()
            }

            async fn insert_token(&self, token: &TokenRecord) -> Result<(), StoreError> {
                let mut tx = self.write().await?;
                ::sqlx::query("DELETE FROM tokens WHERE expires_at < $1")
                    .bind(token.issued_at)
                    .execute(&mut *tx)
                    .await?;
                ::sqlx::query(
                    "INSERT INTO tokens (hash, user_id, issued_at, expires_at) \
                     VALUES ($1, $2, $3, $4)",
                )
                .bind(&token.hash)
                .bind(&token.user_id)
                .bind(token.issued_at)
                .bind(token.expires_at)
                .execute(&mut *tx)
                .await?;
                tx.commit().await?;
                Ok(())
            }

            async fn token_owner(
                &self,
                hash: &str,
                now: Millis,
            ) -> Result<Option<(String, Millis)>, StoreError> {
                if let Some(known) = cached_owner(&self.cache, hash, now) {
                    return Ok(known);
                }
                let found: Option<(String, Millis)> = ::sqlx::query_as(
                    "SELECT user_id, expires_at FROM tokens WHERE hash = $1 AND expires_at > $2",
                )
                .bind(hash)
                .bind(now)
                .fetch_optional(self.reads())
                .await?;
                cache_owner(&self.cache, hash, &found);
                Ok(found)
            }

            async fn session_seen(
                &self,
                hash: &str,
                now: Millis,
            ) -> Result<Option<Option<Millis>>, StoreError> {
                let row: Option<(Option<Millis>,)> = ::sqlx::query_as(
                    "SELECT last_seen_at FROM tokens WHERE hash = $1 AND expires_at > $2",
                )
                .bind(hash)
                .bind(now)
                .fetch_optional(self.reads())
                .await?;
                Ok(row.map(|(seen,)| seen))
            }

            async fn touch_session(&self, hash: &str, at: Millis) -> Result<(), StoreError> {
                ::sqlx::query("UPDATE tokens SET last_seen_at = $1 WHERE hash = $2")
                    .bind(at)
                    .bind(hash)
                    .execute(self.writes())
                    .await?;
                Ok(())
            }

            async fn invalidate_tokens(&self, user: &str) -> Result<(), StoreError> {
                ::sqlx::query("DELETE FROM tokens WHERE user_id = $1")
                    .bind(user)
                    .execute(self.writes())
                    .await?;
                invalidate::tokens_of(&self.cache, user);
                Ok(())
            }

            async fn delete_token(&self, hash: &str) -> Result<(), StoreError> {
                ::sqlx::query("DELETE FROM tokens WHERE hash = $1")
                    .bind(hash)
                    .execute(self.writes())
                    .await?;
                invalidate::token(&self.cache, hash);
                Ok(())
            }

            async fn set_notification_endpoints(
                &self,
                user: &str,
                endpoints: &[NotificationEndpoint],
            ) -> Result<(), StoreError> {
                let json = endpoints_json(endpoints)?;
                set_column(self, "notification_endpoints", user, &json).await
            }

            async fn set_time_zone(&self, user: &str, time_zone: &str) -> Result<(), StoreError> {
                set_column(self, "time_zone", user, time_zone).await
            }

            async fn set_api_key(&self, user: &str, api_key_hash: &str) -> Result<(), StoreError> {
                set_column(self, "api_key_hash", user, api_key_hash).await
            }

            async fn set_webhook_secret(&self, user: &str, secret: &str) -> Result<(), StoreError> {
                set_column(self, "webhook_secret", user, secret).await
            }

            async fn set_login_base(&self, user: &str, base: &str) -> Result<(), StoreError> {
                set_column(self, "login_base", user, base).await
            }

            async fn set_password(
                &self,
                user: &str,
                password_hash: &str,
                keep_token: &str,
            ) -> Result<(), StoreError> {
                let mut tx = self.write().await?;
                let updated = ::sqlx::query("UPDATE users SET password_hash = $1 WHERE id = $2")
                    .bind(password_hash)
                    .bind(user)
                    .execute(&mut *tx)
                    .await?;
                if updated.rows_affected() == 0 {
                    return Err(StoreError::NotFound);
                }
                ::sqlx::query("DELETE FROM tokens WHERE user_id = $1 AND hash <> $2")
                    .bind(user)
                    .bind(keep_token)
                    .execute(&mut *tx)
                    .await?;
                tx.commit().await?;
                invalidate::tokens_but(&self.cache, user, keep_token);
                Ok(())
            }

            async fn email_addresses(&self, user: &str) -> Result<Vec<EmailAddress>, StoreError> {
                let rows: Vec<(String, Option<Millis>, Option<String>)> = ::sqlx::query_as(
                    "SELECT address, confirmed_at, last_error FROM email_addresses \
                     WHERE user_id = $1 ORDER BY address",
                )
                .bind(user)
                .fetch_all(self.reads())
                .await?;
                Ok(rows.into_iter().map(email_address).collect())
            }

            async fn request_email_confirmation(
                &self,
                user: &str,
                address: &str,
                resend: bool,
            ) -> Result<(), StoreError> {
                $crate::store::shape::refuse_nul("address", Some(address))?;
                let mut tx = self.write().await?;
                request_in(&mut tx, user, address, now_millis(), resend).await?;
                tx.commit().await?;
                Ok(())
            }

            async fn confirm_email(
                &self,
                user: &str,
                token_hash: &str,
            ) -> Result<Option<String>, StoreError> {
                let confirmed: Option<(String,)> = ::sqlx::query_as(
                    "UPDATE email_addresses SET confirmed_at = $1, token_hash = NULL, \
                     mail_due_at = NULL WHERE user_id = $2 AND token_hash = $3 \
                     AND confirmed_at IS NULL RETURNING address",
                )
                .bind(now_millis())
                .bind(user)
                .bind(token_hash)
                .fetch_optional(self.writes())
                .await?;
                Ok(confirmed.map(|(address,)| address))
            }
        }
    };
}

pub(crate) use user_store;
