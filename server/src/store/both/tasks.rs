//! [`TaskStore`](crate::store::TaskStore) for both backends: monitors, their definitions,
//! search and the pages of Portal monitors. A monitor read by id is cached; the writes here,
//! and those of other resources that change a monitor (a check, a move, a folder's deletion),
//! invalidate it.
//!
//! The schemas differ in where a monitor's schedule and its own confirmation state live
//! (SQLite: the monitor's row; PostgreSQL: `schedules` and `task_series`, so that a check's
//! writes do not lock the definition), so the calling module brings what touches them:
//!
//! - `async fn scheduled_in(tx, task, user, columns, now)`: the schedule after a monitor's
//!   row was written (the last four parameters of `insert` and `update` are the same:
//!   `next_check_at`, `location`, `host_bucket`, `host`, for a schema that keeps them there);
//! - `async fn forget_learning_in(tx, task)`: drop what noise learning remembered in the
//!   monitor's confirmation state.

/// Implements `TaskStore` for `$store` on `$db`, and defines `TaskRow`, `check_folder`, `owns`
/// and `rename_automatic` (for `ScheduleStore::name_after_page`) beside it. By name:
///
/// - `select`: a monitor row with its latest data (`TaskRow`), for `{select} WHERE ...`;
/// - `insert`: a new monitor, `$1..$14` as bound here (the id, the owner, `bind_columns`'
///   nine, the creation and update times, whether it samples noise), and the schedule's four
///   after them;
/// - `update`: a changed monitor, `$1..$12` as bound here (`bind_columns`' nine, the update
///   time, the id, the owner), and the schedule's four after them;
/// - `lock_row`: what a read adds to lock the row it reads until the commit;
/// - `forget_pages_learning`: drop what each page of the monitor `$1` learned;
/// - `pages_order`: the order of a Portal monitor's pages (by URL, byte-wise);
/// - `small_int`: the width of the schema's small integer columns.
macro_rules! task_store {
    (
        $store:ty,
        $db:ty,
        select: $select:expr,
        insert: $insert:expr,
        update: $update:expr,
        lock_row: $lock_row:literal,
        forget_pages_learning: $forget_pages:literal,
        pages_order: $pages_order:literal,
        small_int: $int:ty $(,)?
    ) => {
        use ::sqlx::{AssertSqlSafe, Transaction};
        use ::wachet::model::{ClientPage, Monitor};
        use $crate::store::shape::history::{PageRow, page};
        use $crate::store::shape::tasks::{
            cache_task, cached_task, columns, contains_pattern, monitor, samples_noise,
            stored_definition, within_quota,
        };
        use $crate::store::shape::{any_nul, invalidate};
        use $crate::store::{StoreError, TaskStore, is_id, new_id, noise, now_millis};

        /// A monitor's row in this schema's integer width.
        pub(super) type TaskRow = $crate::store::shape::tasks::TaskRow<$int>;

        /// Binds what a monitor's definition fills in its row (but for the schedule), in the
        /// order `insert` and `update` both take it: the folder, name, sort key, URL, note,
        /// search text, definition, whether paused and whether dynamic.
        fn bind_columns<'q>(
            query: ::sqlx::query::Query<'q, $db, <$db as ::sqlx::Database>::Arguments>,
            monitor: &Monitor,
            c: &$crate::store::shape::tasks::Columns,
        ) -> ::sqlx::query::Query<'q, $db, <$db as ::sqlx::Database>::Arguments> {
            query
                .bind(monitor.folder_id.as_deref())
                .bind(c.name.as_deref())
                .bind(&c.sort_key)
                .bind(&c.url)
                .bind(c.note.as_deref())
                .bind(&c.search_text)
                .bind(&c.definition)
                .bind(c.paused)
                .bind(c.dynamic)
        }

        /// Binds the schedule's four, which `insert` and `update` both take last (`scheduled_in`
        /// writes them where a schema keeps the schedule elsewhere).
        fn bind_schedule<'q>(
            query: ::sqlx::query::Query<'q, $db, <$db as ::sqlx::Database>::Arguments>,
            c: &$crate::store::shape::tasks::Columns,
            now: $crate::store::Millis,
        ) -> ::sqlx::query::Query<'q, $db, <$db as ::sqlx::Database>::Arguments> {
            query
                .bind(c.first_check(now))
                .bind(c.location)
                .bind(c.host_bucket)
                .bind(c.host)
        }

        /// Checks that `folder` is one of the user's folders.
        pub(super) async fn check_folder(
            tx: &mut Transaction<'_, $db>,
            user: &str,
            folder: &str,
            field: &str,
        ) -> Result<(), StoreError> {
            let found: Option<(String,)> = if is_id(folder) {
                ::sqlx::query_as("SELECT id FROM folders WHERE id = $1 AND user_id = $2")
                    .bind(folder)
                    .bind(user)
                    .fetch_optional(&mut **tx)
                    .await?
            } else {
                None
            };
            match found {
                Some(_) => Ok(()),
                None => Err(StoreError::invalid(field, "no such folder")),
            }
        }

        /// The user's monitor `id`, as written in `tx`.
        async fn fetch(
            tx: &mut Transaction<'_, $db>,
            user: &str,
            id: &str,
        ) -> Result<Monitor, StoreError> {
            let row: TaskRow = ::sqlx::query_as(AssertSqlSafe(format!(
                "{} WHERE t.id = $1 AND t.user_id = $2",
                $select
            )))
            .bind(id)
            .bind(user)
            .fetch_one(&mut **tx)
            .await?;
            monitor(row)
        }

        /// Whether `id` is one of the user's monitors.
        pub(super) async fn owns(store: &$store, user: &str, id: &str) -> Result<bool, StoreError> {
            if !is_id(id) {
                return Ok(false);
            }
            let owned: Option<(String,)> =
                ::sqlx::query_as("SELECT id FROM tasks WHERE id = $1 AND user_id = $2")
                    .bind(id)
                    .bind(user)
                    .fetch_optional(store.reads())
                    .await?;
            Ok(owned.is_some())
        }

        impl $store {
            /// [`TaskStore::create_tasks`] once; run again on a conflict.
            async fn try_create_tasks(
                &self,
                user: &str,
                monitors: &[Monitor],
            ) -> Result<Vec<Monitor>, StoreError> {
                let now = now_millis();
                let mut tx = self.write_for(user).await?;
                for (i, monitor) in monitors.iter().enumerate() {
                    if let Some(folder) = monitor.folder_id.as_deref() {
                        check_folder(&mut tx, user, folder, &format!("[{i}].folderId")).await?;
                    }
                }
                // Counted in the user's write, which no other write of their monitors runs
                // beside, so two creations at once cannot both pass the cap; the count is the
                // one the writes keep on the user's row, not a count of their monitors.
                let have: i64 = ::sqlx::query_scalar(
                    "SELECT CAST(task_count AS BIGINT) FROM users WHERE id = $1",
                )
                .bind(user)
                .fetch_optional(&mut *tx)
                .await?
                .unwrap_or(0);
                within_quota(have, monitors.len(), self.quotas.monitors)?;
                let mut created = Vec::with_capacity(monitors.len());
                for monitor in monitors {
                    let monitor = &Monitor {
                        noise: noise::on_create(monitor.noise.as_deref()),
                        ..monitor.clone()
                    };
                    let c = columns(monitor)?;
                    let id = new_id();
                    let insert = ::sqlx::query($insert).bind(&id).bind(user);
                    let insert = bind_columns(insert, monitor, &c)
                        .bind(now)
                        .bind(now)
                        .bind(samples_noise(monitor));
                    bind_schedule(insert, &c, now).execute(&mut *tx).await?;
                    scheduled_in(&mut tx, &id, user, &c, now).await?;
                    created.push(fetch(&mut tx, user, &id).await?);
                }
                tx.commit().await?;
                Ok(created)
            }

            /// [`TaskStore::update_task`] once; run again on a conflict.
            async fn try_update_task(
                &self,
                user: &str,
                monitor: &Monitor,
            ) -> Result<Monitor, StoreError> {
                let id = monitor
                    .id
                    .as_deref()
                    .filter(|id| is_id(id))
                    .ok_or(StoreError::NotFound)?;
                let now = now_millis();
                let mut tx = self.write_for(user).await?;
                if let Some(folder) = monitor.folder_id.as_deref() {
                    check_folder(&mut tx, user, folder, "folderId").await?;
                }
                // Read in the write's transaction: a check's learning cannot land between this
                // read and the write below.
                let stored: Option<(String,)> = ::sqlx::query_as(AssertSqlSafe(format!(
                    "SELECT definition FROM tasks WHERE id = $1 AND user_id = $2{}",
                    $lock_row
                )))
                .bind(id)
                .bind(user)
                .fetch_optional(&mut *tx)
                .await?;
                let Some((definition,)) = stored else {
                    return Err(StoreError::NotFound);
                };
                let before = stored_definition(id, &definition)?;
                let masks = noise::after_edit(&before, monitor)
                    .map_err(|m| StoreError::invalid("noise", m))?;
                let monitor = &Monitor {
                    noise: masks,
                    ..monitor.clone()
                };
                let c = columns(monitor)?;
                if noise::watches_differently(&before, monitor) {
                    // What learning knew belonged to the old value; the next check samples the
                    // new one.
                    ::sqlx::query(
                        "UPDATE tasks SET sample_noise = $1, noise_notice = NULL WHERE id = $2",
                    )
                    .bind(samples_noise(monitor))
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
                    forget_learning_in(&mut tx, id).await?;
                    // And what each crawled page learned (its confirmed value stays).
                    ::sqlx::query($forget_pages)
                        .bind(id)
                        .execute(&mut *tx)
                        .await?;
                }
                // A name the person changed is theirs from now on; the same name kept is not a
                // choice.
                let update = bind_columns(::sqlx::query($update), monitor, &c)
                    .bind(now)
                    .bind(id)
                    .bind(user);
                let updated = bind_schedule(update, &c, now).execute(&mut *tx).await?;
                if updated.rows_affected() == 0 {
                    return Err(StoreError::NotFound);
                }
                scheduled_in(&mut tx, id, user, &c, now).await?;
                let saved = fetch(&mut tx, user, id).await?;
                tx.commit().await?;
                invalidate::task_changed(&self.cache, id);
                Ok(saved)
            }

            /// [`crate::store::ScheduleStore::name_after_page`]: the definition read and written
            /// in one transaction, its row locked, so a person's edit is either before (and the
            /// name theirs) or after.
            pub(super) async fn rename_automatic(
                &self,
                task: &str,
                name: &str,
            ) -> Result<bool, StoreError> {
                let mut tx = self.write().await?;
                let stored: Option<(String,)> = ::sqlx::query_as(AssertSqlSafe(format!(
                    "SELECT definition FROM tasks WHERE id = $1 AND name_auto \
                     AND name IS DISTINCT FROM $2{}",
                    $lock_row
                )))
                .bind(task)
                .bind(name)
                .fetch_optional(&mut *tx)
                .await?;
                let Some((definition,)) = stored else {
                    return Ok(false);
                };
                let mut monitor = stored_definition(task, &definition)?;
                monitor.name = Some(name.to_string());
                let c = columns(&monitor)?;
                ::sqlx::query(
                    "UPDATE tasks SET name = $1, sort_key = $2, search_text = $3, \
                     definition = $4 WHERE id = $5",
                )
                .bind(&c.name)
                .bind(&c.sort_key)
                .bind(&c.search_text)
                .bind(&c.definition)
                .bind(task)
                .execute(&mut *tx)
                .await?;
                tx.commit().await?;
                invalidate::task_changed(&self.cache, task);
                Ok(true)
            }
        }

        #[::async_trait::async_trait]
        impl TaskStore for $store {
            async fn create_tasks(
                &self,
                user: &str,
                monitors: &[Monitor],
            ) -> Result<Vec<Monitor>, StoreError> {
                let created =
                    $crate::store::both::retrying(|| self.try_create_tasks(user, monitors)).await?;
                invalidate::tasks_created(&self.cache);
                Ok(created)
            }

            async fn update_task(
                &self,
                user: &str,
                monitor: &Monitor,
            ) -> Result<Monitor, StoreError> {
                $crate::store::both::retrying(|| self.try_update_task(user, monitor)).await
            }

            async fn name_automatically(&self, user: &str, id: &str) -> Result<(), StoreError> {
                let marked = ::sqlx::query(
                    "UPDATE tasks SET name_auto = TRUE WHERE id = $1 AND user_id = $2",
                )
                .bind(id)
                .bind(user)
                .execute(self.writes())
                .await?;
                if marked.rows_affected() == 0 {
                    return Err(StoreError::NotFound);
                }
                Ok(())
            }

            async fn task(&self, user: &str, id: &str) -> Result<Monitor, StoreError> {
                if let Some(cached) = cached_task(&self.cache, user, id) {
                    return cached;
                }
                if !is_id(id) {
                    return Err(StoreError::NotFound);
                }
                let row: Option<TaskRow> = ::sqlx::query_as(AssertSqlSafe(format!(
                    "{} WHERE t.id = $1 AND t.user_id = $2",
                    $select
                )))
                .bind(id)
                .bind(user)
                .fetch_optional(self.reads())
                .await?;
                let monitor = monitor(row.ok_or(StoreError::NotFound)?)?;
                cache_task(&self.cache, user, id, &monitor);
                Ok(monitor)
            }

            async fn delete_task(&self, user: &str, id: &str) -> Result<(), StoreError> {
                // Pages, history and notifications go with the monitor (ON DELETE CASCADE).
                super::delete_owned(self, "tasks", user, id).await?;
                invalidate::task_changed(&self.cache, id);
                Ok(())
            }

            async fn search_tasks(
                &self,
                user: &str,
                terms: &[String],
                limit: u32,
            ) -> Result<Vec<Monitor>, StoreError> {
                if any_nul(terms.iter().map(String::as_str)) {
                    return Ok(Vec::new());
                }
                let mut query = ::sqlx::QueryBuilder::<$db>::new($select);
                query.push(" WHERE t.user_id = ").push_bind(user);
                for term in terms {
                    query
                        .push(" AND t.search_text LIKE ")
                        .push_bind(contains_pattern(term))
                        .push(" ESCAPE '\\'");
                }
                query
                    .push(" ORDER BY t.sort_key, t.id LIMIT ")
                    .push_bind(i64::from(limit));
                let rows: Vec<TaskRow> = query.build_query_as().fetch_all(self.reads()).await?;
                rows.into_iter().map(monitor).collect()
            }

            async fn task_pages(
                &self,
                user: &str,
                id: &str,
            ) -> Result<Vec<ClientPage>, StoreError> {
                if !owns(self, user, id).await? {
                    return Err(StoreError::NotFound);
                }
                let rows: Vec<PageRow<$int>> = ::sqlx::query_as(AssertSqlSafe(format!(
                    "SELECT p.id, p.url, p.name, p.alert_state, e.checked_at, e.changed_at, \
                     c.codec, c.body, e.error FROM pages p \
                     LEFT JOIN entries e ON e.id = p.latest_entry_id \
                     LEFT JOIN contents c ON c.hash = e.content_hash \
                     WHERE p.task_id = $1 ORDER BY {}",
                    $pages_order
                )))
                .bind(id)
                .fetch_all(self.reads())
                .await?;
                rows.into_iter().map(page).collect()
            }
        }
    };
}

pub(crate) use task_store;
