//! [`FolderStore`] on PostgreSQL: the tree, its listings with recursive counts, and moves (which
//! invalidate the cached monitors they touch). "No parent" is matched with `IS NOT DISTINCT
//! FROM`, PostgreSQL's null-safe equality.

use super::tasks::{TaskRow, check_folder, monitor, select};
use super::{PgStore, sort_key};
use crate::store::cache::SharedMonitor;
use crate::store::shape::invalidate;
use crate::store::{FolderKey, FolderListing, FolderStore, StoreError, is_id, new_id, now_millis};
use async_trait::async_trait;
use sqlx::{AssertSqlSafe, Postgres, Transaction};
use std::collections::HashMap;
use wachet::model::{Folder, MoveRequest, NotificationEndpoint};

#[derive(sqlx::FromRow)]
struct FolderRow {
    id: String,
    name: Option<String>,
    parent_id: Option<String>,
    sort_key: String,
}

impl FolderRow {
    fn folder(self) -> Folder {
        Folder {
            id: Some(self.id),
            name: self.name,
            parent_id: self.parent_id,
            ..Folder::default()
        }
    }
}

/// Whether `folder` is `ancestor` or lies below it.
async fn is_within(
    tx: &mut Transaction<'_, Postgres>,
    folder: &str,
    ancestor: &str,
) -> Result<bool, StoreError> {
    let found: Option<(i32,)> = sqlx::query_as(
        "WITH RECURSIVE up (id, parent_id) AS ( \
             SELECT id, parent_id FROM folders WHERE id = $1 \
             UNION ALL \
             SELECT f.id, f.parent_id FROM folders f JOIN up ON f.id = up.parent_id) \
         SELECT 1 FROM up WHERE id = $2 LIMIT 1",
    )
    .bind(folder)
    .bind(ancestor)
    .fetch_optional(&mut **tx)
    .await?;
    Ok(found.is_some())
}

/// Fills count, failedCount and pausedCount of each folder, over its whole subtree.
async fn fill_counts<'c, E>(executor: E, folders: &mut [Folder]) -> Result<(), StoreError>
where
    E: sqlx::Executor<'c, Database = Postgres>,
{
    if folders.is_empty() {
        return Ok(());
    }
    let mut query = sqlx::QueryBuilder::<Postgres>::new(
        "WITH RECURSIVE sub (root, id) AS (SELECT id, id FROM folders WHERE id IN (",
    );
    let mut ids = query.separated(", ");
    for folder in folders.iter() {
        ids.push_bind(folder.id.clone().unwrap_or_default());
    }
    // The folders' own counts, kept by the writes (SQLite migration 0013, PostgreSQL 0004), added up over each
    // subtree: as many rows as folders, whatever the monitors.
    query.push(
        ") UNION ALL SELECT sub.root, f.id FROM folders f JOIN sub ON f.parent_id = sub.id) \
         SELECT sub.root, SUM(f.own_count)::BIGINT, SUM(f.own_failed)::BIGINT, SUM(f.own_paused)::BIGINT \
         FROM sub JOIN folders f ON f.id = sub.id GROUP BY sub.root",
    );
    let rows: Vec<(String, i64, i64, i64)> = query.build_query_as().fetch_all(executor).await?;
    let counts: HashMap<String, (i64, i64, i64)> = rows
        .into_iter()
        .map(|(id, count, failed, paused)| (id, (count, failed, paused)))
        .collect();
    for folder in folders {
        if let Some(&(count, failed, paused)) = folder.id.as_ref().and_then(|id| counts.get(id)) {
            folder.count = clamp(count);
            folder.failed_count = clamp(failed);
            folder.paused_count = clamp(paused);
        }
    }
    Ok(())
}

fn clamp(n: i64) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// The folders from the root's child down to `folder`. `NotFound` when it is not the user's.
async fn path(
    conn: &mut sqlx::PgConnection,
    user: &str,
    folder: &str,
) -> Result<Vec<Folder>, StoreError> {
    if !is_id(folder) {
        return Err(StoreError::NotFound);
    }
    let rows: Vec<FolderRow> = sqlx::query_as(
        "WITH RECURSIVE up (id, name, parent_id, sort_key, depth) AS ( \
             SELECT id, name, parent_id, sort_key, 0 FROM folders WHERE id = $1 AND user_id = $2 \
             UNION ALL \
             SELECT f.id, f.name, f.parent_id, f.sort_key, up.depth + 1 \
             FROM folders f JOIN up ON f.id = up.parent_id) \
         SELECT id, name, parent_id, sort_key FROM up ORDER BY depth DESC",
    )
    .bind(folder)
    .bind(user)
    .fetch_all(&mut *conn)
    .await?;
    if rows.is_empty() {
        return Err(StoreError::NotFound);
    }
    Ok(rows.into_iter().map(FolderRow::folder).collect())
}

impl PgStore {
    /// [`FolderStore::save_folder`] once; run again on a conflict.
    async fn try_save_folder(&self, user: &str, folder: &Folder) -> Result<Folder, StoreError> {
        super::refuse_nul("name", folder.name.as_deref())?;
        let mut tx = self.pool.begin().await?;
        super::lock_owner(&mut tx, user).await?;
        if let Some(parent) = folder.parent_id.as_deref() {
            check_folder(&mut tx, user, parent, "parentId").await?;
        }
        let key = sort_key(folder.name.as_deref());
        let id = match folder.id.as_deref() {
            None => {
                let id = new_id();
                sqlx::query(
                    "INSERT INTO folders (id, user_id, parent_id, name, sort_key, created_at) \
                     VALUES ($1, $2, $3, $4, $5, $6)",
                )
                .bind(&id)
                .bind(user)
                .bind(&folder.parent_id)
                .bind(&folder.name)
                .bind(&key)
                .bind(now_millis())
                .execute(&mut *tx)
                .await?;
                id
            }
            Some(id) => {
                if !is_id(id) {
                    return Err(StoreError::NotFound);
                }
                if let Some(parent) = folder.parent_id.as_deref()
                    && is_within(&mut tx, parent, id).await?
                {
                    return Err(StoreError::invalid(
                        "parentId",
                        "a folder cannot move into itself or its own subfolders",
                    ));
                }
                // As for monitors, a null parent keeps the folder where it is; moves are explicit.
                let updated = sqlx::query(
                    "UPDATE folders SET parent_id = COALESCE($1, parent_id), name = $2, sort_key = $3 \
                     WHERE id = $4 AND user_id = $5",
                )
                .bind(&folder.parent_id)
                .bind(&folder.name)
                .bind(&key)
                .bind(id)
                .bind(user)
                .execute(&mut *tx)
                .await?;
                if updated.rows_affected() == 0 {
                    return Err(StoreError::NotFound);
                }
                id.to_string()
            }
        };
        let row: FolderRow =
            sqlx::query_as("SELECT id, name, parent_id, sort_key FROM folders WHERE id = $1")
                .bind(&id)
                .fetch_one(&mut *tx)
                .await?;
        let mut saved = vec![row.folder()];
        fill_counts(&mut *tx, &mut saved).await?;
        tx.commit().await?;
        Ok(saved.remove(0))
    }

    /// [`FolderStore::move_items`] once; run again on a conflict.
    async fn try_move_items(&self, user: &str, request: &MoveRequest) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await?;
        super::lock_owner(&mut tx, user).await?;
        let target = request.folder_id.as_deref();
        if let Some(target) = target {
            check_folder(&mut tx, user, target, "folderId")
                .await
                .map_err(|err| match err {
                    StoreError::Invalid { .. } => StoreError::NotFound,
                    other => other,
                })?;
        }
        for id in request.task_ids.iter().flatten() {
            if !is_id(id) {
                return Err(StoreError::NotFound);
            }
            let moved =
                sqlx::query("UPDATE tasks SET folder_id = $1 WHERE id = $2 AND user_id = $3")
                    .bind(target)
                    .bind(id)
                    .bind(user)
                    .execute(&mut *tx)
                    .await?;
            if moved.rows_affected() == 0 {
                return Err(StoreError::NotFound);
            }
        }
        for id in request.folder_ids.iter().flatten() {
            if !is_id(id) {
                return Err(StoreError::NotFound);
            }
            let owned: Option<(i32,)> =
                sqlx::query_as("SELECT 1 FROM folders WHERE id = $1 AND user_id = $2")
                    .bind(id)
                    .bind(user)
                    .fetch_optional(&mut *tx)
                    .await?;
            if owned.is_none() {
                return Err(StoreError::NotFound);
            }
            if let Some(target) = target
                && is_within(&mut tx, target, id).await?
            {
                return Err(StoreError::invalid(
                    "folderIds",
                    format!("folder {id} cannot move into itself or its own subfolders"),
                ));
            }
            sqlx::query("UPDATE folders SET parent_id = $1 WHERE id = $2")
                .bind(target)
                .bind(id)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        // Moved monitors have another folderId.
        invalidate::tasks_moved(
            &self.cache,
            request.task_ids.iter().flatten().map(String::as_str),
        );
        Ok(())
    }
}

#[async_trait]
impl FolderStore for PgStore {
    async fn save_folder(&self, user: &str, folder: &Folder) -> Result<Folder, StoreError> {
        let saved = super::retrying(|| self.try_save_folder(user, folder)).await?;
        invalidate::folders_changed(&self.cache);
        Ok(saved)
    }

    async fn delete_folder(&self, user: &str, id: &str) -> Result<(), StoreError> {
        // Subfolders, their monitors, pages, history and notifications cascade from this row.
        super::delete_owned(self, "folders", user, id).await?;
        // Any cached monitor may have gone with it; folder deletes are rare.
        invalidate::folder_deleted(&self.cache);
        Ok(())
    }

    async fn list_folder(
        &self,
        user: &str,
        folder: Option<&str>,
        after: Option<&FolderKey>,
        limit: u32,
    ) -> Result<FolderListing, StoreError> {
        let limit = limit.max(1);
        let mut conn = self.pool.acquire().await?;
        let mut listing = FolderListing::default();
        if let Some(folder) = folder {
            listing.path = path(&mut conn, user, folder).await?;
        }
        let want = i64::from(limit) + 1;
        let (mut key, mut id) = match after {
            Some(after) => (after.sort_key.clone(), after.id.clone()),
            None => (String::new(), String::new()),
        };
        if !after.is_some_and(|a| a.in_tasks) {
            let rows: Vec<FolderRow> = sqlx::query_as(
                "SELECT id, name, parent_id, sort_key FROM folders \
                 WHERE user_id = $1 AND parent_id IS NOT DISTINCT FROM $2 AND (sort_key, id) > ($3, $4) \
                 ORDER BY sort_key, id LIMIT $5",
            )
            .bind(user)
            .bind(folder)
            .bind(&key)
            .bind(&id)
            .bind(want)
            .fetch_all(&mut *conn)
            .await?;
            if rows.len() as i64 == want {
                let last = &rows[limit as usize - 1];
                listing.next = Some(FolderKey {
                    in_tasks: false,
                    sort_key: last.sort_key.clone(),
                    id: last.id.clone(),
                });
            }
            listing.subfolders = rows
                .into_iter()
                .take(limit as usize)
                .map(FolderRow::folder)
                .collect();
            key.clear();
            id.clear();
        }
        let room = i64::from(limit) - listing.subfolders.len() as i64;
        if listing.next.is_none() && room == 0 {
            // The subfolders filled the page exactly: the monitors start the next one, if any.
            let any: Option<(i32,)> =
                sqlx::query_as("SELECT 1 FROM tasks WHERE user_id = $1 AND folder_id IS NOT DISTINCT FROM $2 LIMIT 1")
                    .bind(user)
                    .bind(folder)
                    .fetch_optional(&mut *conn)
                    .await?;
            if any.is_some() {
                listing.next = Some(FolderKey {
                    in_tasks: true,
                    sort_key: String::new(),
                    id: String::new(),
                });
            }
        }
        if listing.next.is_none() && room > 0 {
            let tasks: Vec<TaskRow> = sqlx::query_as(AssertSqlSafe(format!(
                "{} WHERE t.user_id = $1 AND t.folder_id IS NOT DISTINCT FROM $2 \
                 AND (t.sort_key, t.id) > ($3, $4) ORDER BY t.sort_key, t.id LIMIT $5",
                select()
            )))
            .bind(user)
            .bind(folder)
            .bind(&key)
            .bind(&id)
            .bind(room + 1)
            .fetch_all(&mut *conn)
            .await?;
            let more = tasks.len() as i64 > room;
            for row in tasks.into_iter().take(room as usize) {
                listing.tasks.push(SharedMonitor::new(user, monitor(row)?));
            }
            if more {
                listing.next = listing.tasks.last().map(|t| FolderKey {
                    in_tasks: true,
                    sort_key: sort_key(t.monitor().name.as_deref()),
                    id: t.monitor().id.clone().unwrap_or_default(),
                });
            }
        }
        fill_counts(&mut *conn, &mut listing.subfolders).await?;
        fill_counts(&mut *conn, &mut listing.path).await?;
        Ok(listing)
    }

    async fn move_items(&self, user: &str, request: &MoveRequest) -> Result<(), StoreError> {
        super::retrying(|| self.try_move_items(user, request)).await
    }

    async fn set_folder_endpoints(
        &self,
        user: &str,
        id: &str,
        endpoints: &[NotificationEndpoint],
    ) -> Result<(), StoreError> {
        let stored = match endpoints.is_empty() {
            true => None,
            false => Some(crate::store::shape::users::endpoints_json(endpoints)?),
        };
        let updated = sqlx::query(
            "UPDATE folders SET notification_endpoints = $1 WHERE id = $2 AND user_id = $3",
        )
        .bind(stored)
        .bind(id)
        .bind(user)
        .execute(&self.pool)
        .await?;
        if updated.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }

    async fn folder_endpoints(
        &self,
        user: &str,
        ids: &[String],
    ) -> Result<Vec<(String, Vec<NotificationEndpoint>)>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let rows: Vec<(String, String)> = sqlx::query_as(
            "SELECT id, notification_endpoints FROM folders \
             WHERE id = ANY($1) AND user_id = $2 AND notification_endpoints IS NOT NULL",
        )
        .bind(ids)
        .bind(user)
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter()
            .map(|(id, json)| Ok((id, crate::store::shape::outbox::parse_endpoints(&json)?)))
            .collect()
    }
}
