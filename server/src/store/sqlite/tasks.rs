//! [`TaskStore`] on SQLite: monitors, their definitions, search and the pages of Portal
//! monitors. A monitor read by id is cached; the writes here, and those of other resources that
//! change a monitor (a check, a move, a folder's deletion), invalidate it.

use super::SqliteStore;
use crate::store::cache::SharedMonitor;
use crate::store::shape::history::{PageRow, page};
use crate::store::shape::tasks::{
    cache_task, cached_task, columns, contains_pattern, forget_learning, monitor, samples_noise,
    stored_definition, within_quota,
};
use crate::store::shape::{any_nul, invalidate};
use crate::store::{StoreError, TaskStore, is_id, new_id, noise, now_millis};

/// A monitor's row in this schema's integer width.
pub(super) type TaskRow = crate::store::shape::tasks::TaskRow<i64>;
use async_trait::async_trait;
use sqlx::AssertSqlSafe;
use sqlx::{Sqlite, Transaction};
use wachet::model::{ClientPage, Monitor};

/// A monitor row with its latest data.
const SELECT: &str = "SELECT t.id, t.folder_id, t.definition, t.noise_notice, e.checked_at, \
                      e.changed_at, c.codec, c.body, e.error \
                      FROM tasks t \
                      LEFT JOIN entries e ON e.id = t.latest_entry_id \
                      LEFT JOIN contents c ON c.hash = e.content_hash";

/// Checks that `folder` is one of the user's folders.
pub(super) async fn check_folder(
    tx: &mut Transaction<'_, Sqlite>,
    user: &str,
    folder: &str,
    field: &str,
) -> Result<(), StoreError> {
    let found: Option<(i64,)> = if is_id(folder) {
        sqlx::query_as("SELECT 1 FROM folders WHERE id = ? AND user_id = ?")
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
    tx: &mut Transaction<'_, Sqlite>,
    user: &str,
    id: &str,
) -> Result<Monitor, StoreError> {
    let row: TaskRow = sqlx::query_as(AssertSqlSafe(format!(
        "{SELECT} WHERE t.id = ? AND t.user_id = ?"
    )))
    .bind(id)
    .bind(user)
    .fetch_one(&mut **tx)
    .await?;
    monitor(row)
}

/// Whether `id` is one of the user's monitors.
pub(super) async fn owns(store: &SqliteStore, user: &str, id: &str) -> Result<bool, StoreError> {
    if !is_id(id) {
        return Ok(false);
    }
    let owned: Option<(i64,)> = sqlx::query_as("SELECT 1 FROM tasks WHERE id = ? AND user_id = ?")
        .bind(id)
        .bind(user)
        .fetch_optional(&store.reader)
        .await?;
    Ok(owned.is_some())
}

impl SqliteStore {
    /// `user`'s monitors `ids` in that order: each from the cache of monitors when it is there,
    /// the others read in one statement and cached. A monitor deleted meanwhile is left out.
    pub(super) async fn tasks_in_order(
        &self,
        user: &str,
        ids: &[&str],
    ) -> Result<Vec<SharedMonitor>, StoreError> {
        let mut found: Vec<Option<SharedMonitor>> = ids
            .iter()
            .map(|id| {
                self.cache
                    .tasks
                    .get(id)
                    .filter(|shared| shared.owner() == user)
            })
            .collect();
        if found.iter().any(Option::is_none) {
            let mut query = sqlx::QueryBuilder::<Sqlite>::new(SELECT);
            query.push(" WHERE t.user_id = ").push_bind(user);
            query.push(" AND t.id IN (");
            let mut missing = query.separated(", ");
            for (id, _) in ids.iter().zip(&found).filter(|(_, f)| f.is_none()) {
                missing.push_bind(*id);
            }
            query.push(")");
            let mut lent = self.lent_readers.get().await?;
            let rows: Vec<TaskRow> = query.build_query_as().fetch_all(lent.conn()?).await?;
            drop(lent);
            let mut read = std::collections::HashMap::with_capacity(rows.len());
            for row in rows {
                let monitor = monitor(row)?;
                let id = monitor.id.clone().unwrap_or_default();
                let shared = SharedMonitor::new(user, monitor);
                self.cache.tasks.put(&id, shared.clone());
                read.insert(id, shared);
            }
            for (id, slot) in ids.iter().zip(found.iter_mut()) {
                if slot.is_none() {
                    *slot = read.remove(*id);
                }
            }
        }
        Ok(found.into_iter().flatten().collect())
    }
}

#[async_trait]
impl TaskStore for SqliteStore {
    async fn create_tasks(
        &self,
        user: &str,
        monitors: &[Monitor],
    ) -> Result<Vec<Monitor>, StoreError> {
        let now = now_millis();
        let mut tx = self.write().await?;
        for (i, monitor) in monitors.iter().enumerate() {
            if let Some(folder) = monitor.folder_id.as_deref() {
                check_folder(&mut tx, user, folder, &format!("[{i}].folderId")).await?;
            }
        }
        // Counted in the writer's transaction, so two creations at once cannot both pass the cap.
        let max = self.quotas.monitors;
        // The count the writes keep (migration 0016), not a count of the user's monitors.
        let have: i64 = sqlx::query_scalar("SELECT task_count FROM users WHERE id = ?")
            .bind(user)
            .fetch_optional(&mut *tx)
            .await?
            .unwrap_or(0);
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
                 definition, paused, created_at, updated_at, next_check_at, dynamic, sample_noise, \
                 location, host_bucket, host) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
            .bind(c.first_check(now))
            .bind(c.dynamic)
            .bind(samples_noise(monitor))
            .bind(c.location)
            .bind(c.host_bucket)
            .bind(c.host)
            .execute(&mut *tx)
            .await?;
            created.push(fetch(&mut tx, user, &id).await?);
        }
        tx.commit().await?;
        invalidate::tasks_created(&self.cache);
        Ok(created)
    }

    async fn update_task(&self, user: &str, monitor: &Monitor) -> Result<Monitor, StoreError> {
        let id = monitor
            .id
            .as_deref()
            .filter(|id| is_id(id))
            .ok_or(StoreError::NotFound)?;
        let now = now_millis();
        let mut tx = self.write().await?;
        if let Some(folder) = monitor.folder_id.as_deref() {
            check_folder(&mut tx, user, folder, "folderId").await?;
        }
        // Read in the writer's transaction: a check's learning cannot land between this read and
        // the write below.
        let stored: Option<(String, Option<String>)> = sqlx::query_as(
            "SELECT definition, alert_state FROM tasks WHERE id = ? AND user_id = ?",
        )
        .bind(id)
        .bind(user)
        .fetch_optional(&mut *tx)
        .await?;
        let Some((definition, alert_state)) = stored else {
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
            let alert_state = alert_state.map(forget_learning).transpose()?;
            sqlx::query(
                "UPDATE tasks SET sample_noise = ?, noise_notice = NULL, alert_state = ? WHERE id = ?",
            )
            .bind(samples_noise(monitor))
            .bind(alert_state)
            .bind(id)
            .execute(&mut *tx)
            .await?;
            // And what each crawled page learned (its confirmed value stays).
            sqlx::query(
                "UPDATE pages SET alert_state = json_remove(alert_state, '$.noise', '$.masks') \
                 WHERE task_id = ? AND alert_state IS NOT NULL",
            )
            .bind(id)
            .execute(&mut *tx)
            .await?;
        }
        let updated = sqlx::query(
            "UPDATE tasks SET name_auto = name_auto AND name IS ?, \
             folder_id = COALESCE(?, folder_id), name = ?, sort_key = ?, url = ?, \
             note = ?, search_text = ?, definition = ?, paused = ?, updated_at = ?, \
             next_check_at = ?, dynamic = ?, location = ?, host_bucket = ?, host = ? \
             WHERE id = ? AND user_id = ?",
        )
        // A name the person changed is theirs from now on; the same name kept is not a choice.
        .bind(&c.name)
        .bind(&monitor.folder_id)
        .bind(&c.name)
        .bind(&c.sort_key)
        .bind(&c.url)
        .bind(&c.note)
        .bind(&c.search_text)
        .bind(&c.definition)
        .bind(c.paused)
        .bind(now)
        .bind(c.first_check(now))
        .bind(c.dynamic)
        .bind(c.location)
        .bind(c.host_bucket)
        .bind(c.host)
        .bind(id)
        .bind(user)
        .execute(&mut *tx)
        .await?;
        if updated.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        let saved = fetch(&mut tx, user, id).await?;
        tx.commit().await?;
        invalidate::task_changed(&self.cache, id);
        Ok(saved)
    }

    async fn name_automatically(&self, user: &str, id: &str) -> Result<(), StoreError> {
        let mut tx = self.write().await?;
        let marked = sqlx::query("UPDATE tasks SET name_auto = 1 WHERE id = ? AND user_id = ?")
            .bind(id)
            .bind(user)
            .execute(&mut *tx)
            .await?;
        if marked.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        tx.commit().await?;
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
            "{SELECT} WHERE t.id = ? AND t.user_id = ?"
        )))
        .bind(id)
        .bind(user)
        .fetch_optional(&self.reader)
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
        let mut query = sqlx::QueryBuilder::<Sqlite>::new(SELECT);
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
        let rows: Vec<TaskRow> = query.build_query_as().fetch_all(&self.reader).await?;
        rows.into_iter().map(monitor).collect()
    }

    async fn task_pages(&self, user: &str, id: &str) -> Result<Vec<ClientPage>, StoreError> {
        if !owns(self, user, id).await? {
            return Err(StoreError::NotFound);
        }
        let rows: Vec<PageRow<i64>> = sqlx::query_as(
            "SELECT p.id, p.url, p.name, p.alert_state, e.checked_at, e.changed_at, c.codec, c.body, e.error \
             FROM pages p \
             LEFT JOIN entries e ON e.id = p.latest_entry_id \
             LEFT JOIN contents c ON c.hash = e.content_hash \
             WHERE p.task_id = ? ORDER BY p.url",
        )
        .bind(id)
        .fetch_all(&self.reader)
        .await?;
        rows.into_iter().map(page).collect()
    }
}

impl SqliteStore {
    /// [`crate::store::ScheduleStore::name_after_page`]: the definition read and written in the
    /// writer's transaction, so a person's edit is either before (and the name theirs) or after.
    pub(super) async fn rename_automatic(
        &self,
        task: &str,
        name: &str,
    ) -> Result<bool, StoreError> {
        let mut tx = self.write().await?;
        let stored: Option<(String,)> = sqlx::query_as(
            "SELECT definition FROM tasks WHERE id = ? AND name_auto = 1 AND name IS NOT ?",
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
            "UPDATE tasks SET name = ?, sort_key = ?, search_text = ?, definition = ? WHERE id = ?",
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
