//! [`ScheduleStore`](crate::store::ScheduleStore)'s parts both backends share: what a check
//! learned written into the monitor's definition, the hourly limit on notifications (counted in
//! the check's transaction, [`within_hourly_limit`](crate::store::shape::notifications::within_hourly_limit)),
//! the alert states a check starts from, renaming after a page, and a monitor's kept session.
//! Claiming and recording checks, the hot path, are each backend's own: SQLite runs them on its
//! single writer, PostgreSQL under row locks and leases on the database's clock.

/// Defines `learn_in` and `hourly_limited` in the calling module and implements
/// `ScheduleStore` for `$store` on `$db` with the methods given in braces (`claim_due`,
/// `finish_check`, `stored_bytes`, `task_session`); it records a group of checks with the
/// calling module's `record_group` (each record's outcome as a `Written` or a `Recorded`).
/// By name:
///
/// - `lock_row`: what a read adds to lock the row it reads until the commit;
/// - `own_state`: for a monitor's alert state, where its own series is (`FROM ...`, with its
///   latest entry as `le`), the filter of the monitor `$1` there, the filter of its entries
///   (`v`) and the column of its confirmation state;
/// - `small_int`: the width of the schema's small integer columns.
macro_rules! schedule_store {
    (
        $store:ty,
        $db:ty,
        lock_row: $lock_row:literal,
        own_state: ($own_from:literal, $own_where:literal, $own_series:literal, $own_state:literal),
        small_int: $int:ty,
        { $($own:tt)* }
    ) => {
        /// Appends masks a check learned (and a line order its samples taught, where the
        /// monitor has none) to the monitor's definition as it is now, its row locked in the
        /// check's transaction (a person's edit since the check was claimed is kept:
        /// [`crate::store::noise::with_learned`]). The definition's version is left alone: the
        /// masks change how values compare, not what is fetched, and an edit's version means
        /// "check at once".
        async fn learn_in(
            tx: &mut ::sqlx::Transaction<'_, $db>,
            task: &str,
            learned: &[::wachet::model::NoiseMask],
            order: Option<::wachet::model::LineOrder>,
        ) -> Result<(), StoreError> {
            let (definition,): (String,) = ::sqlx::query_as(::sqlx::AssertSqlSafe(format!(
                "SELECT definition FROM tasks WHERE id = $1{}",
                $lock_row
            )))
            .bind(task)
            .fetch_one(&mut **tx)
            .await?;
            let mut monitor = $crate::store::shape::tasks::stored_definition(task, &definition)?;
            let noise = $crate::store::noise::with_learned(monitor.noise.as_deref(), learned);
            let order = order.filter(|_| monitor.compare_lines.is_none());
            if noise.is_none() && order.is_none() {
                return Ok(());
            }
            if let Some(noise) = noise {
                monitor.noise = Some(noise);
            }
            if let Some(order) = order {
                monitor.compare_lines = Some(order);
            }
            let definition = serde_json::to_string(&monitor)
                .map_err(|err| StoreError::Backend(err.to_string()))?;
            ::sqlx::query("UPDATE tasks SET definition = $2 WHERE id = $1")
                .bind(task)
                .bind(definition)
                .execute(&mut **tx)
                .await?;
            Ok(())
        }

        /// The notifications of a check to store within the user's hourly limit
        /// ([`within_hourly_limit`]), counted over the user's notifications of the last hour
        /// (an index range of at most `limit` rows) in the check's transaction.
        async fn hourly_limited<'a>(
            tx: &mut ::sqlx::Transaction<'_, $db>,
            task: &str,
            user: &str,
            limit: u32,
            raised: &'a [NewNotification],
        ) -> Result<Vec<::std::borrow::Cow<'a, NewNotification>>, StoreError> {
            use $crate::store::shape::notifications::{
                counted_up_to, hour_before, within_hourly_limit,
            };
            let (recent,): (i64,) = ::sqlx::query_as(
                "SELECT count(*) FROM (SELECT 1 FROM notifications \
                 WHERE user_id = $1 AND created_at > $2 LIMIT $3) AS recent",
            )
            .bind(user)
            .bind(hour_before($crate::store::now_millis()))
            .bind(counted_up_to(limit))
            .fetch_one(&mut **tx)
            .await?;
            Ok(within_hourly_limit(task, recent, limit, raised))
        }

        #[::async_trait::async_trait]
        impl ScheduleStore for $store {
            async fn name_after_page(&self, task: &str, name: &str) -> Result<bool, StoreError> {
                self.rename_automatic(task, name).await
            }

            async fn alert_states(&self, task: &str) -> Result<AlertStates, StoreError> {
                // A monitor's or page's state in this schema's types.
                type StateRow = $crate::store::shape::schedule::StateRow<bool, $int>;
                // The latest successful value of a series, as columns `codec` and `body`, when
                // no alert state was stored: only then is it needed.
                let last_value = |series: &str, state: &str| {
                    format!(
                        "LEFT JOIN contents c ON {state} IS NULL AND c.hash = (SELECT \
                         v.content_hash FROM entries v WHERE {series} \
                         AND v.content_hash IS NOT NULL \
                         ORDER BY v.checked_at DESC, v.id DESC LIMIT 1)"
                    )
                };
                let own: Option<StateRow> = ::sqlx::query_as(::sqlx::AssertSqlSafe(format!(
                    "SELECT CAST(NULL AS TEXT) AS url, le.id IS NOT NULL AS checked, le.error, \
                     c.codec, c.body, {state} AS alert_state FROM {from} {last_value} \
                     WHERE {filter}",
                    state = $own_state,
                    from = $own_from,
                    filter = $own_where,
                    last_value = last_value($own_series, $own_state),
                )))
                .bind(task)
                .fetch_optional(self.reads())
                .await?;
                let Some(own) = own else {
                    return Err(StoreError::NotFound);
                };
                let pages: Vec<StateRow> = ::sqlx::query_as(::sqlx::AssertSqlSafe(format!(
                    "SELECT p.url, p.latest_entry_id IS NOT NULL AS checked, le.error, c.codec, \
                     c.body, p.alert_state \
                     FROM pages p LEFT JOIN entries le ON le.id = p.latest_entry_id {} \
                     WHERE p.task_id = $1",
                    last_value("v.page_id = p.id", "p.alert_state")
                )))
                .bind(task)
                .fetch_all(self.reads())
                .await?;
                let mut states = AlertStates {
                    own: own.state()?.1,
                    ..AlertStates::default()
                };
                for row in pages {
                    if let (Some(url), state) = row.state()? {
                        states.pages.insert(url, state);
                    }
                }
                Ok(states)
            }

            async fn record_checks(
                &self,
                records: &[$crate::store::CheckRecord],
            ) -> Vec<Result<$crate::store::Recorded, StoreError>> {
                use $crate::store::shape::schedule::{Written, written};
                let outcomes = match self.record_group(records).await {
                    Ok(outcomes) => outcomes,
                    // One record the group could not write (an error aborts a PostgreSQL
                    // transaction), a deadlock with another process's group, or a commit that
                    // failed must not cost the others: each is written alone, as it would have
                    // been without the group.
                    Err(err) if records.len() > 1 => {
                        tracing::warn!(
                            %err,
                            checks = records.len(),
                            "a group of checks failed; each is stored alone"
                        );
                        let mut alone = Vec::with_capacity(records.len());
                        for record in records {
                            alone.push(
                                match self.record_group(std::slice::from_ref(record)).await {
                                    Ok(mut one) => {
                                        one.pop().unwrap_or(Err(StoreError::NotFound))
                                    }
                                    Err(err) => Err(err),
                                },
                            );
                        }
                        alone
                    }
                    Err(err) => vec![Err(err)],
                };
                let mut replies = Vec::with_capacity(outcomes.len());
                for (record, outcome) in records.iter().zip(outcomes) {
                    replies.push(match outcome.map(written) {
                        Ok(Written { recorded, prune }) => {
                            if recorded == $crate::store::Recorded::Stored {
                                // The monitor's latest data, noise notice and masks are the
                                // check's now.
                                $crate::store::shape::invalidate::checked(&self.cache, &record.task);
                            }
                            if prune {
                                self.prune(&record.task).await;
                            }
                            Ok(recorded)
                        }
                        Err(err) => Err(err),
                    });
                }
                // A check that failed after a success, or succeeded after a failure, changed
                // its folders' counts of failing monitors.
                self.listings_changed_if_folders_were();
                replies
            }

            async fn keep_task_session(&self, task: &str, sealed: &str) -> Result<(), StoreError> {
                ::sqlx::query(
                    "INSERT INTO task_sessions (task_id, sealed, updated_at) \
                     SELECT id, $1, $2 FROM tasks WHERE id = $3 \
                     ON CONFLICT (task_id) DO UPDATE SET sealed = excluded.sealed, \
                     updated_at = excluded.updated_at",
                )
                .bind(sealed)
                .bind($crate::store::now_millis())
                .bind(task)
                .execute(self.writes())
                .await?;
                Ok(())
            }

            async fn forget_task_session(&self, task: &str) -> Result<(), StoreError> {
                ::sqlx::query("DELETE FROM task_sessions WHERE task_id = $1")
                    .bind(task)
                    .execute(self.writes())
                    .await?;
                Ok(())
            }

            $($own)*
        }
    };
}

pub(crate) use schedule_store;
