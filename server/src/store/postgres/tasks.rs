//! [`TaskStore`] on PostgreSQL: monitors, their definitions, search and the pages of Portal
//! monitors. A monitor read by id is cached; the writes here, and those of other resources that
//! change a monitor (a check, a move, a folder's deletion), invalidate it. Only the definition
//! is this module's: when it changes, the schedule is told ([`schedule::schedule_in`]), and a
//! monitor's latest data and pages are read through the history ([`history::DATA_COLUMNS`],
//! [`history::pages_of`]).

use super::history;
use super::{PgStore, schedule};
pub(super) use crate::store::shape::tasks::monitor;
use crate::store::shape::tasks::{
    cache_task, cached_task, columns, contains_pattern, samples_noise, stored_definition,
    within_quota,
};
use crate::store::shape::{any_nul, invalidate};
use crate::store::{StoreError, TaskStore, is_id, new_id, noise, now_millis};

/// A monitor's row in this schema's integer width.
pub(super) type TaskRow = crate::store::shape::tasks::TaskRow<i32>;
use async_trait::async_trait;
use sqlx::AssertSqlSafe;
use sqlx::{Postgres, Transaction};
use wachet::model::{ClientPage, Monitor};

/// A monitor row with its latest data, `{SELECT} WHERE ...`.
pub(super) fn select() -> String {
    format!(
        "SELECT t.id, t.folder_id, t.definition, t.noise_notice, {} FROM tasks t {}",
        history::DATA_COLUMNS,
        history::DATA_JOIN
    )
}

/// Checks that `folder` is one of the user's folders.
pub(super) async fn check_folder(
    tx: &mut Transaction<'_, Postgres>,
    user: &str,
    folder: &str,
    field: &str,
) -> Result<(), StoreError> {
    let found: Option<(i32,)> = if is_id(folder) {
        sqlx::query_as("SELECT 1 FROM folders WHERE id = $1 AND user_id = $2")
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

async fn fetch(
    tx: &mut Transaction<'_, Postgres>,
    user: &str,
    id: &str,
) -> Result<Monitor, StoreError> {
    let row: TaskRow = sqlx::query_as(AssertSqlSafe(format!(
        "{} WHERE t.id = $1 AND t.user_id = $2",
        select()
    )))
    .bind(id)
    .bind(user)
    .fetch_one(&mut **tx)
    .await?;
    monitor(row)
}

/// Whether `id` is one of the user's monitors.
pub(super) async fn owns(store: &PgStore, user: &str, id: &str) -> Result<bool, StoreError> {
    if !is_id(id) {
        return Ok(false);
    }
    let owned: Option<(i32,)> =
        sqlx::query_as("SELECT 1 FROM tasks WHERE id = $1 AND user_id = $2")
            .bind(id)
            .bind(user)
            .fetch_optional(&store.pool)
            .await?;
    Ok(owned.is_some())
}

impl PgStore {
    /// [`TaskStore::update_task`] once; run again on a conflict.
    async fn try_update_task(&self, user: &str, monitor: &Monitor) -> Result<Monitor, StoreError> {
        let id = monitor
            .id
            .as_deref()
            .filter(|id| is_id(id))
            .ok_or(StoreError::NotFound)?;
        let now = now_millis();
        let mut tx = self.pool.begin().await?;
        super::lock_owner(&mut tx, user).await?;
        if let Some(folder) = monitor.folder_id.as_deref() {
            check_folder(&mut tx, user, folder, "folderId").await?;
        }
        // Read in the writer's transaction: a check's learning cannot land between this read and
        // the write below.
        let stored: Option<(String,)> = sqlx::query_as(
            "SELECT definition FROM tasks WHERE id = $1 AND user_id = $2 FOR UPDATE",
        )
        .bind(id)
        .bind(user)
        .fetch_optional(&mut *tx)
        .await?;
        let Some((definition,)) = stored else {
            return Err(StoreError::NotFound);
        };
        let before = stored_definition(id, &definition)?;
        let masks =
            noise::after_edit(&before, monitor).map_err(|m| StoreError::invalid("noise", m))?;
        let monitor = &Monitor {
            noise: masks,
            ..monitor.clone()
        };
        let c = columns(monitor)?;
        if noise::watches_differently(&before, monitor) {
            // What learning knew belonged to the old value; the next check samples the new one.
            sqlx::query("UPDATE tasks SET sample_noise = $1, noise_notice = NULL WHERE id = $2")
                .bind(samples_noise(monitor))
                .bind(id)
                .execute(&mut *tx)
                .await?;
            schedule::forget_learning_in(&mut tx, id).await?;
            // And what each crawled page learned (its confirmed value stays).
            sqlx::query(
                "UPDATE pages SET alert_state = ((alert_state::jsonb - 'noise') - 'masks')::text \
                 WHERE task_id = $1 AND alert_state IS NOT NULL",
            )
            .bind(id)
            .execute(&mut *tx)
            .await?;
        }
        let updated = sqlx::query(
            "UPDATE tasks SET folder_id = COALESCE($1, folder_id), name = $2, sort_key = $3, url = $4, \
             note = $5, search_text = $6, definition = $7, paused = $8, updated_at = $9, \
             dynamic = $10, name_auto = name_auto AND name IS NOT DISTINCT FROM $2 \
             WHERE id = $11 AND user_id = $12",
        )
        .bind(&monitor.folder_id)
        .bind(&c.name)
        .bind(&c.sort_key)
        .bind(&c.url)
        .bind(&c.note)
        .bind(&c.search_text)
        .bind(&c.definition)
        .bind(c.paused)
        .bind(now)
        .bind(c.dynamic)
        .bind(id)
        .bind(user)
        .execute(&mut *tx)
        .await?;
        if updated.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        schedule::schedule_in(
            &mut tx,
            id,
            user,
            c.first_check(now),
            (c.dynamic, c.location, c.host_bucket, c.host),
        )
        .await?;
        let saved = fetch(&mut tx, user, id).await?;
        tx.commit().await?;
        invalidate::task_changed(&self.cache, id);
        Ok(saved)
    }

    /// [`TaskStore::create_tasks`] once; run again on a conflict.
    async fn try_create_tasks(
        &self,
        user: &str,
        monitors: &[Monitor],
    ) -> Result<Vec<Monitor>, StoreError> {
        let now = now_millis();
        let mut tx = self.pool.begin().await?;
        super::lock_owner(&mut tx, user).await?;
        for (i, monitor) in monitors.iter().enumerate() {
            if let Some(folder) = monitor.folder_id.as_deref() {
                check_folder(&mut tx, user, folder, &format!("[{i}].folderId")).await?;
            }
        }
        // The owner's row, locked above, makes two creations at once count one after the other
        // so they cannot both pass the cap; the count is the one the writes keep on it
        // (migration 0007), not a count of the user's monitors.
        let have: i64 = sqlx::query_scalar("SELECT task_count::bigint FROM users WHERE id = $1")
            .bind(user)
            .fetch_optional(&mut *tx)
            .await?
            .unwrap_or(0);
        let max = self.quotas.monitors;
        within_quota(have, monitors.len(), max)?;
        let mut created = Vec::with_capacity(monitors.len());
        for monitor in monitors {
            let monitor = &Monitor {
                noise: noise::on_create(monitor.noise.as_deref()),
                ..monitor.clone()
            };
            let c = columns(monitor)?;
            let id = new_id();
            sqlx::query(
                "INSERT INTO tasks (id, user_id, folder_id, name, sort_key, url, note, search_text, \
                 definition, paused, created_at, updated_at, dynamic, sample_noise) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
            )
            .bind(&id)
            .bind(user)
            .bind(&monitor.folder_id)
            .bind(&c.name)
            .bind(&c.sort_key)
            .bind(&c.url)
            .bind(&c.note)
            .bind(&c.search_text)
            .bind(&c.definition)
            .bind(c.paused)
            .bind(now)
            .bind(now)
            .bind(c.dynamic)
            .bind(samples_noise(monitor))
            .execute(&mut *tx)
            .await?;
            schedule::schedule_in(
                &mut tx,
                &id,
                user,
                c.first_check(now),
                (c.dynamic, c.location, c.host_bucket, c.host),
            )
            .await?;
            created.push(fetch(&mut tx, user, &id).await?);
        }
        tx.commit().await?;
        Ok(created)
    }
}

#[async_trait]
impl TaskStore for PgStore {
    async fn create_tasks(
        &self,
        user: &str,
        monitors: &[Monitor],
    ) -> Result<Vec<Monitor>, StoreError> {
        let created = super::retrying(|| self.try_create_tasks(user, monitors)).await?;
        invalidate::tasks_created(&self.cache);
        Ok(created)
    }

    async fn update_task(&self, user: &str, monitor: &Monitor) -> Result<Monitor, StoreError> {
        super::retrying(|| self.try_update_task(user, monitor)).await
    }

    async fn name_automatically(&self, user: &str, id: &str) -> Result<(), StoreError> {
        let marked =
            sqlx::query("UPDATE tasks SET name_auto = TRUE WHERE id = $1 AND user_id = $2")
                .bind(id)
                .bind(user)
                .execute(&self.pool)
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
        let row: Option<TaskRow> = sqlx::query_as(AssertSqlSafe(format!(
            "{} WHERE t.id = $1 AND t.user_id = $2",
            select()
        )))
        .bind(id)
        .bind(user)
        .fetch_optional(&self.pool)
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
        let mut query = sqlx::QueryBuilder::<Postgres>::new(select());
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
        let rows: Vec<TaskRow> = query.build_query_as().fetch_all(&self.pool).await?;
        rows.into_iter().map(monitor).collect()
    }

    async fn task_pages(&self, user: &str, id: &str) -> Result<Vec<ClientPage>, StoreError> {
        if !owns(self, user, id).await? {
            return Err(StoreError::NotFound);
        }
        history::pages_of(self, id).await
    }
}

impl PgStore {
    /// [`crate::store::ScheduleStore::name_after_page`]: the row locked while its definition is
    /// read and written, so a person's edit is either before (and the name theirs) or after.
    pub(super) async fn rename_automatic(
        &self,
        task: &str,
        name: &str,
    ) -> Result<bool, StoreError> {
        let mut tx = self.pool.begin().await?;
        let stored: Option<(String,)> = sqlx::query_as(
            "SELECT definition FROM tasks WHERE id = $1 AND name_auto \
             AND name IS DISTINCT FROM $2 FOR UPDATE",
        )
        .bind(task)
        .bind(name)
        .fetch_optional(&mut *tx)
        .await?;
        let Some((definition,)) = stored else {
            return Ok(false);
        };
        let mut monitor: Monitor = serde_json::from_str(&definition)
            .map_err(|err| StoreError::Backend(format!("stored monitor {task}: {err}")))?;
        monitor.name = Some(name.to_string());
        let c = columns(&monitor)?;
        sqlx::query(
            "UPDATE tasks SET name = $1, sort_key = $2, search_text = $3, definition = $4 \
             WHERE id = $5",
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
