//! [`FolderStore`] on SQLite: the writes are written once for both backends in
//! [`crate::store::both::folders`]; here are a folder page read in one statement (and cached),
//! a saved folder read back with its counts, and the endpoints of folders.

use super::SqliteStore;
use super::tasks::check_folder;
use crate::store::cache::ListedPage;
use crate::store::shape::{folder_count, invalidate};
use crate::store::{FolderKey, FolderListing, FolderStore, StoreError, is_id};
use sqlx::{Sqlite, Transaction};
use std::sync::Arc;
use wachet::model::{Folder, NotificationEndpoint};

/// The common table expressions `sub` and `counts` of a statement that has `roots (id)`: for
/// each root folder, the folders' own counts (kept by the writes: SQLite migration 0013,
/// PostgreSQL 0004) added up over its subtree as `counts (id, n, failed, paused)`, as many rows
/// as folders, whatever the monitors. In a `WITH RECURSIVE`, after `roots`.
macro_rules! subtree_counts {
    () => {
        "sub (root, id) AS ( \
            SELECT id, id FROM roots \
            UNION ALL SELECT sub.root, f.id FROM folders f JOIN sub ON f.parent_id = sub.id), \
        counts AS ( \
            SELECT sub.root AS id, SUM(f.own_count) AS n, SUM(f.own_failed) AS failed, \
                SUM(f.own_paused) AS paused \
            FROM sub JOIN folders f ON f.id = sub.id GROUP BY sub.root)"
    };
}

/// The folder `?1` with its subtree's counts, as [`ListedFolder`]'s fields.
const SAVED: &str = concat!(
    "WITH RECURSIVE roots (id) AS (SELECT ?1), ",
    subtree_counts!(),
    " SELECT f.id, f.name, f.parent_id, f.sort_key, c.n, c.failed, c.paused \
    FROM folders f LEFT JOIN counts c ON c.id = f.id WHERE f.id = ?1"
);

/// A page of a folder in one statement, one row of three JSON arrays: the path from the root's
/// child down to the folder (`?1`; NULL for the root) and the page's subfolders (when `?3`:
/// `?6` of them at most after the key `(?4, ?5)`), each with its subtree's counts
/// (`subtree_counts!`), and the keys of the monitors that fill the rest of the page (after
/// `(?7, ?8)`, one more than fit, to tell whether more follow). sqlx hands each row and each
/// statement over from its SQLite thread with a wake-up of its own, and the four statements
/// this took before were most of a listing's time.
const LISTING: &str = concat!(
    "WITH RECURSIVE \
    up (id, name, parent_id, sort_key, depth) AS ( \
        SELECT id, name, parent_id, sort_key, 0 FROM folders WHERE id = ?1 AND user_id = ?2 \
        UNION ALL \
        SELECT f.id, f.name, f.parent_id, f.sort_key, up.depth + 1 \
        FROM folders f JOIN up ON f.id = up.parent_id), \
    subs AS MATERIALIZED ( \
        SELECT id, name, parent_id, sort_key FROM folders \
        WHERE ?3 AND user_id = ?2 AND parent_id IS ?1 AND (sort_key, id) > (?4, ?5) \
        ORDER BY sort_key, id LIMIT ?6), \
    roots (id) AS (SELECT id FROM up UNION SELECT id FROM subs), ",
    subtree_counts!(),
    " SELECT \
        (SELECT json_group_array(json_array(u.id, u.name, u.parent_id, u.sort_key, \
                c.n, c.failed, c.paused) ORDER BY u.depth DESC) \
         FROM up u LEFT JOIN counts c ON c.id = u.id), \
        (SELECT json_group_array(json_array(s.id, s.name, s.parent_id, s.sort_key, \
                c.n, c.failed, c.paused) ORDER BY s.sort_key, s.id) \
         FROM subs s LEFT JOIN counts c ON c.id = s.id), \
        (SELECT json_group_array(json_array(id, sort_key) ORDER BY sort_key, id) FROM ( \
            SELECT id, sort_key FROM tasks \
            WHERE (SELECT count(*) FROM subs) < ?6 \
              AND user_id = ?2 AND folder_id IS ?1 AND (sort_key, id) > (?7, ?8) \
            ORDER BY sort_key, id LIMIT ?6 - (SELECT count(*) FROM subs)))"
);

/// A folder of [`LISTING`] or [`SAVED`]: id, name, parent, sort key and its subtree's counts
/// (all, failed, paused).
#[derive(serde::Deserialize)]
struct ListedFolder(
    String,
    Option<String>,
    Option<String>,
    String,
    Option<i64>,
    Option<i64>,
    Option<i64>,
);

impl ListedFolder {
    fn folder(self) -> Folder {
        let ListedFolder(id, name, parent_id, _, count, failed, paused) = self;
        Folder {
            id: Some(id),
            name,
            parent_id,
            count: folder_count(count.unwrap_or(0)),
            failed_count: folder_count(failed.unwrap_or(0)),
            paused_count: folder_count(paused.unwrap_or(0)),
            notification_endpoints: None,
        }
    }
}

/// The key of a folder page in [`Caches::listings`](crate::store::cache::Caches): the owner,
/// the folder, the page's size and where it starts, each part unambiguous (names are counted,
/// ids never hold the separator).
fn page_key(user: &str, folder: Option<&str>, after: Option<&FolderKey>, limit: u32) -> String {
    let folder = folder.unwrap_or("");
    match after {
        None => format!("{user}/{folder}/{limit}"),
        Some(after) => format!(
            "{user}/{folder}/{limit}/{}/{}:{}/{}",
            after.in_tasks,
            after.sort_key.len(),
            after.sort_key,
            after.id
        ),
    }
}

impl SqliteStore {
    /// A page of `folder` as the database holds it now, its monitors by id.
    async fn read_page(
        &self,
        user: &str,
        folder: Option<&str>,
        after: Option<&FolderKey>,
        limit: u32,
    ) -> Result<ListedPage, StoreError> {
        let want = i64::from(limit) + 1;
        // Whether the page lists subfolders, and the keys the subfolders and the monitors
        // start after.
        let start = ("", "");
        let (with_folders, folders_after, tasks_after) = match after {
            Some(after) if after.in_tasks => (false, start, (&*after.sort_key, &*after.id)),
            Some(after) => (true, (&*after.sort_key, &*after.id), start),
            None => (true, start, start),
        };
        let mut lent = self.lent_readers.get().await?;
        let (path, subfolders, keys): (String, String, String) = sqlx::query_as(LISTING)
            .bind(folder)
            .bind(user)
            .bind(with_folders)
            .bind(folders_after.0)
            .bind(folders_after.1)
            .bind(want)
            .bind(tasks_after.0)
            .bind(tasks_after.1)
            .fetch_one(lent.conn()?)
            .await?;
        drop(lent);
        let read = |what: &str, json: &str| {
            serde_json::from_str::<Vec<ListedFolder>>(json)
                .map_err(|err| StoreError::Backend(format!("listing {what}: {err}")))
        };
        let mut page = ListedPage {
            path: read("path", &path)?
                .into_iter()
                .map(ListedFolder::folder)
                .collect(),
            ..ListedPage::default()
        };
        if folder.is_some() && page.path.is_empty() {
            return Err(StoreError::NotFound);
        }
        let mut subfolders = read("subfolders", &subfolders)?;
        if subfolders.len() as i64 == want {
            subfolders.truncate(limit as usize);
            page.next = subfolders.last().map(|last| FolderKey {
                in_tasks: false,
                sort_key: last.3.clone(),
                id: last.0.clone(),
            });
        }
        let room = limit as usize - subfolders.len();
        page.subfolders = subfolders.into_iter().map(ListedFolder::folder).collect();
        // The page's monitors by their keys alone (the listing index covers them); the
        // monitors themselves come from the cache that `GET /task/{id}` reads, so a page costs
        // what 50 cached monitors cost, not 50 definitions parsed and 50 values decompressed.
        let mut keys: Vec<(String, String)> = serde_json::from_str(&keys)
            .map_err(|err| StoreError::Backend(format!("listing keys: {err}")))?;
        if page.next.is_none() && room == 0 {
            // The subfolders filled the page exactly: the monitors start the next one, if any.
            if !keys.is_empty() {
                page.next = Some(FolderKey {
                    in_tasks: true,
                    sort_key: String::new(),
                    id: String::new(),
                });
            }
        } else if page.next.is_none() {
            let more = keys.len() > room;
            keys.truncate(room);
            page.tasks = keys.iter().map(|(id, _)| id.clone()).collect();
            if more && let Some((id, sort_key)) = keys.pop() {
                page.next = Some(FolderKey {
                    in_tasks: true,
                    sort_key,
                    id,
                });
            }
        }
        Ok(page)
    }
}

/// The folder `id` as written in `tx`, with its subtree's counts.
async fn saved_folder(tx: &mut Transaction<'_, Sqlite>, id: &str) -> Result<Folder, StoreError> {
    let (id, name, parent_id, sort_key, count, failed, paused) =
        sqlx::query_as(SAVED).bind(id).fetch_one(&mut **tx).await?;
    Ok(ListedFolder(id, name, parent_id, sort_key, count, failed, paused).folder())
}

crate::store::both::folders::folder_store!(SqliteStore, Sqlite, {
    async fn list_folder(
        &self,
        user: &str,
        folder: Option<&str>,
        after: Option<&FolderKey>,
        limit: u32,
    ) -> Result<FolderListing, StoreError> {
        let limit = limit.max(1);
        if folder.is_some_and(|folder| !is_id(folder)) {
            return Err(StoreError::NotFound);
        }
        let key = page_key(user, folder, after, limit);
        let generation = self.cache.listings.generation();
        let page = match self.cache.listings.get(&key, generation) {
            Some(page) => page,
            None => {
                let page = Arc::new(self.read_page(user, folder, after, limit).await?);
                self.cache.listings.put(&key, generation, page.clone());
                page
            }
        };
        let ids: Vec<&str> = page.tasks.iter().map(String::as_str).collect();
        Ok(FolderListing {
            subfolders: page.subfolders.clone(),
            tasks: self.tasks_in_order(user, &ids).await?,
            path: page.path.clone(),
            next: page.next.clone(),
        })
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
            "SELECT f.id, f.notification_endpoints FROM folders f, json_each(?) j \
             WHERE f.id = j.value AND f.user_id = ? AND f.notification_endpoints IS NOT NULL",
        )
        .bind(serde_json::to_string(ids).map_err(|err| StoreError::Backend(err.to_string()))?)
        .bind(user)
        .fetch_all(&self.reader)
        .await?;
        rows.into_iter()
            .map(|(id, json)| Ok((id, crate::store::shape::outbox::parse_endpoints(&json)?)))
            .collect()
    }
});
