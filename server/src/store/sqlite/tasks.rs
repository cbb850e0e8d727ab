//! [`TaskStore`](crate::store::TaskStore) on SQLite, written once for both backends in
//! [`crate::store::both::tasks`], with the statements SQLite spells its own way: a monitor's
//! schedule and confirmation state are columns of its row. Here too: the monitors of a folder
//! page, read through the cache.

use super::SqliteStore;
use crate::store::cache::SharedMonitor;
use crate::store::shape::tasks::Columns;
use crate::store::{Millis, shape::tasks::forget_learning};
use sqlx::Sqlite;

/// A monitor row with its latest data.
const SELECT: &str = "SELECT t.id, t.folder_id, t.definition, t.noise_notice, e.checked_at, \
                      e.changed_at, c.codec, c.body, e.error \
                      FROM tasks t \
                      LEFT JOIN entries e ON e.id = t.latest_entry_id \
                      LEFT JOIN contents c ON c.hash = e.content_hash";

crate::store::both::tasks::task_store!(
    SqliteStore,
    Sqlite,
    select: SELECT,
    insert: "INSERT INTO tasks (id, user_id, folder_id, name, sort_key, url, note, search_text, \
             definition, paused, dynamic, created_at, updated_at, sample_noise, next_check_at, \
             location, host_bucket, host) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)",
    update: "UPDATE tasks SET folder_id = COALESCE($1, folder_id), name = $2, sort_key = $3, \
             url = $4, note = $5, search_text = $6, definition = $7, paused = $8, \
             dynamic = $9, updated_at = $10, name_auto = name_auto AND name IS NOT DISTINCT FROM $2, \
             next_check_at = $13, location = $14, host_bucket = $15, host = $16 \
             WHERE id = $11 AND user_id = $12",
    lock_row: "",
    forget_pages_learning: "UPDATE pages SET alert_state = json_remove(alert_state, '$.noise', '$.masks') \
                            WHERE task_id = $1 AND alert_state IS NOT NULL",
    pages_order: "p.url",
    small_int: i64,
);

/// The schedule is in the monitor's row, written with it.
async fn scheduled_in(
    _tx: &mut Transaction<'_, Sqlite>,
    _task: &str,
    _user: &str,
    _columns: &Columns,
    _now: Millis,
) -> Result<(), StoreError> {
    Ok(())
}

/// Drops what noise learning remembered in the monitor's confirmation state, a column of its row.
async fn forget_learning_in(
    tx: &mut Transaction<'_, Sqlite>,
    task: &str,
) -> Result<(), StoreError> {
    let stored: Option<(Option<String>,)> =
        sqlx::query_as("SELECT alert_state FROM tasks WHERE id = $1")
            .bind(task)
            .fetch_optional(&mut **tx)
            .await?;
    let Some((Some(json),)) = stored else {
        return Ok(());
    };
    sqlx::query("UPDATE tasks SET alert_state = $1 WHERE id = $2")
        .bind(forget_learning(json)?)
        .bind(task)
        .execute(&mut **tx)
        .await?;
    Ok(())
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
