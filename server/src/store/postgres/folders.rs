//! [`FolderStore`] on PostgreSQL: the writes are written once for both backends in
//! [`crate::store::both::folders`]; here are a folder page read with its counts, a saved folder
//! read back with its counts, and the endpoints of folders. "No parent" is matched with `IS
//! NOT DISTINCT FROM`, the null-safe equality.

use super::tasks::{TaskRow, check_folder, select};
use super::{PgStore, sort_key};
use crate::store::cache::SharedMonitor;
use crate::store::shape::tasks::monitor;
use crate::store::shape::{folder_count, invalidate};
use crate::store::{FolderKey, FolderListing, FolderStore, StoreError, is_id};
use sqlx::{AssertSqlSafe, Postgres, Transaction};
use std::collections::HashMap;
use wachet::model::{Folder, NotificationEndpoint};

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
            folder.count = folder_count(count);
            folder.failed_count = folder_count(failed);
            folder.paused_count = folder_count(paused);
        }
    }
    Ok(())
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

/// The folder `id` as written in `tx`, with its subtree's counts.
async fn saved_folder(tx: &mut Transaction<'_, Postgres>, id: &str) -> Result<Folder, StoreError> {
    let row: FolderRow =
        sqlx::query_as("SELECT id, name, parent_id, sort_key FROM folders WHERE id = $1")
            .bind(id)
            .fetch_one(&mut **tx)
            .await?;
    let mut saved = vec![row.folder()];
    fill_counts(&mut **tx, &mut saved).await?;
    Ok(saved.remove(0))
}

crate::store::both::folders::folder_store!(PgStore, Postgres, {
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
});
