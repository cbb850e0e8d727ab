//! [`HistoryStore`] on SQLite: check results of monitors and of crawled pages, with values
//! stored once by content (SHA-256 of the text) and compressed with zstd when that pays; the
//! retention that keeps the newest entries of each series; and the collection of values no
//! entry names any more. A check's entries are written by `schedule.rs` with [`append_in`].

use super::{SqliteStore, before_key, time};
use crate::store::{HistoryStore, Millis, Series, StoreError, TimeKey, TimePage, is_id, new_id};
use async_trait::async_trait;
use sha2::{Digest, Sha256};
use sqlx::AssertSqlSafe;
use sqlx::{Sqlite, Transaction};
use wachet::model::ClientData;

/// Content stored as the value's UTF-8 bytes.
const CODEC_PLAIN: i64 = 0;
/// Content stored as a zstd frame of the value's UTF-8 bytes.
const CODEC_ZSTD: i64 = 1;
/// Values shorter than this are stored plain: a zstd frame would save next to nothing.
const COMPRESS_FROM: usize = 512;
/// zstd's level: its default, fast to write, and most of what higher levels save on HTML.
const ZSTD_LEVEL: i32 = 3;
/// Most entries one prune deletes from one series, so a lowered retention is reached over a few
/// checks instead of in one large transaction.
const PRUNE_BATCH: i64 = 500;

/// A value as stored: its codec and body. Compressed only when that saves at least an eighth.
fn encode(raw: &str) -> (i64, std::borrow::Cow<'_, [u8]>) {
    let bytes = raw.as_bytes();
    if bytes.len() >= COMPRESS_FROM
        && let Ok(packed) = zstd::bulk::compress(bytes, ZSTD_LEVEL)
        && packed.len() < bytes.len() - bytes.len() / 8
    {
        return (CODEC_ZSTD, packed.into());
    }
    (CODEC_PLAIN, bytes.into())
}

/// The columns of one entry joined with its content; all null when there is no entry.
#[derive(sqlx::FromRow)]
pub(super) struct DataColumns {
    checked_at: Option<i64>,
    changed_at: Option<i64>,
    codec: Option<i64>,
    body: Option<Vec<u8>>,
    error: Option<String>,
}

/// The check result in `row`, if there is one.
pub(super) fn data_of(row: DataColumns) -> Result<Option<ClientData>, StoreError> {
    let Some(checked_at) = row.checked_at else {
        return Ok(None);
    };
    let raw = decode(row.codec, row.body)?;
    Ok(Some(ClientData {
        last_check_timestamp: time(checked_at),
        value_changed_timestamp: row.changed_at.map(time),
        raw,
        error: row.error,
        diff: None,
    }))
}

/// The text of a stored value.
pub(super) fn decode(
    codec: Option<i64>,
    body: Option<Vec<u8>>,
) -> Result<Option<String>, StoreError> {
    let bytes = match (codec, body) {
        (Some(CODEC_PLAIN), Some(body)) => body,
        (Some(CODEC_ZSTD), Some(body)) => {
            zstd::stream::decode_all(body.as_slice()).map_err(|err| {
                StoreError::Backend(format!("stored value cannot be unpacked: {err}"))
            })?
        }
        (Some(codec), Some(_)) => {
            return Err(StoreError::Backend(format!(
                "unknown content codec {codec}"
            )));
        }
        _ => return Ok(None),
    };
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| StoreError::Backend("stored value is not UTF-8".into()))
}

/// Which rows make up a series, and the row that holds its latest entry.
enum Owner {
    Task(String),
    Page { task: String, page: String },
}

/// Appends one check result to a series within the caller's transaction and, when it is the
/// newest, makes it the monitor's (or page's) latest data. The value-changed time is worked out
/// here: the check time when the value differs from the previous value, else the previous
/// entry's. Returns the entry's id; `NotFound` when the monitor does not exist. A value new to
/// the monitor that would take the owner's history past `max_stored_bytes` is not kept: the
/// entry records an error instead.
pub(super) async fn append_in(
    tx: &mut Transaction<'_, Sqlite>,
    series: &Series,
    data: &ClientData,
    max_stored_bytes: u64,
) -> Result<String, StoreError> {
    let owner = resolve_for_write(tx, series).await?;
    let task = match &owner {
        Owner::Task(task) | Owner::Page { task, .. } => task.as_str(),
    };
    let checked_at = data.last_check_timestamp.timestamp_millis();
    let mut error = data.error.clone();
    let hash = match &data.raw {
        Some(raw) => {
            let hash = Sha256::digest(raw.as_bytes()).to_vec();
            // Most checks find the value they found last time: compress only a new one.
            let known: Option<(i64,)> =
                sqlx::query_as("SELECT length(body) FROM contents WHERE hash = ?")
                    .bind(&hash)
                    .fetch_optional(&mut **tx)
                    .await?;
            let encoded = match known {
                Some(_) => None,
                None => Some(encode(raw)),
            };
            let size = match (&known, &encoded) {
                (Some((size,)), _) => size.unsigned_abs(),
                (None, Some((_, body))) => body.len() as u64,
                (None, None) => 0,
            };
            match over_quota(tx, task, &hash, size, max_stored_bytes).await? {
                Some(refused) => {
                    error = Some(refused);
                    None
                }
                None => {
                    if let Some((codec, body)) = encoded {
                        sqlx::query("INSERT INTO contents (hash, codec, body) VALUES (?, ?, ?)")
                            .bind(&hash)
                            .bind(codec)
                            .bind(body.as_ref())
                            .execute(&mut **tx)
                            .await?;
                    }
                    Some(hash)
                }
            }
        }
        None => None,
    };
    // The value changed when it differs from the latest value before this check.
    let (series_filter, series_id) = match &owner {
        Owner::Task(task) => ("task_id = ? AND page_id IS NULL", task),
        Owner::Page { page, .. } => ("page_id = ?", page),
    };
    let previous: Option<(Option<Vec<u8>>, Option<i64>)> = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT content_hash, changed_at FROM entries WHERE {series_filter} \
         AND content_hash IS NOT NULL AND (checked_at, id) < (?, '~') \
         ORDER BY checked_at DESC, id DESC LIMIT 1"
    )))
    .bind(series_id)
    .bind(checked_at)
    .fetch_optional(&mut **tx)
    .await?;
    // A value spelled otherwise (white space, quotes, entities, ...) is no change: it is
    // stored as seen, and keeps the time of the last real change.
    let respelled = match (&hash, &previous, &data.raw) {
        (Some(hash), Some((Some(prev), _)), Some(raw)) if hash != prev => {
            let body: Option<(i64, Vec<u8>)> =
                sqlx::query_as("SELECT codec, body FROM contents WHERE hash = ?")
                    .bind(prev)
                    .fetch_optional(&mut **tx)
                    .await?;
            let old = match body {
                Some((codec, body)) => decode(Some(codec), Some(body))?,
                None => None,
            };
            old.is_some_and(|old| wachet::normalize::same(&old, raw))
        }
        _ => false,
    };
    let changed_at = match (&hash, previous) {
        (Some(hash), Some((Some(prev), prev_changed))) if *hash == prev || respelled => {
            prev_changed
        }
        (Some(_), _) => Some(checked_at),
        (None, Some((_, prev_changed))) => prev_changed,
        (None, None) => None,
    };
    let (task_id, page_id) = match &owner {
        Owner::Task(task) => (task.as_str(), None),
        Owner::Page { task, page } => (task.as_str(), Some(page.as_str())),
    };
    // Entries are numbered by the database (see migration 0004): a later entry, a higher id.
    let (id,): (i64,) = sqlx::query_as(
        "INSERT INTO entries (task_id, page_id, checked_at, changed_at, content_hash, error) \
         VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
    )
    .bind(task_id)
    .bind(page_id)
    .bind(checked_at)
    .bind(changed_at)
    .bind(&hash)
    .bind(&error)
    .fetch_one(&mut **tx)
    .await?;
    let id = id.to_string();
    // The entry becomes the latest unless a newer one is already stored.
    let newest = "latest_entry_id IS NULL OR (SELECT checked_at FROM entries \
                  WHERE id = latest_entry_id) <= ?";
    match &owner {
        Owner::Task(task) => {
            sqlx::query(AssertSqlSafe(format!(
                "UPDATE tasks SET latest_entry_id = ?, failed = ? WHERE id = ? AND ({newest})"
            )))
            .bind(&id)
            .bind(super::flag(error.is_some()))
            .bind(task)
            .bind(checked_at)
            .execute(&mut **tx)
            .await?;
        }
        Owner::Page { page, .. } => {
            sqlx::query(AssertSqlSafe(format!(
                "UPDATE pages SET latest_entry_id = ? WHERE id = ? AND ({newest})"
            )))
            .bind(&id)
            .bind(page)
            .bind(checked_at)
            .execute(&mut **tx)
            .await?;
        }
    }
    Ok(id)
}

/// Why a value of `size` stored bytes may not join the history of `task`, if it may not: it
/// is new to the monitor (a value its history already names costs nothing more) and the
/// owner's history would pass `max` bytes with it.
async fn over_quota(
    tx: &mut Transaction<'_, Sqlite>,
    task: &str,
    hash: &[u8],
    size: u64,
    max: u64,
) -> Result<Option<String>, StoreError> {
    let named: Option<(i64,)> =
        sqlx::query_as("SELECT 1 FROM task_contents WHERE task_id = ? AND hash = ? AND refs > 0")
            .bind(task)
            .bind(hash)
            .fetch_optional(&mut **tx)
            .await?;
    if named.is_some() {
        return Ok(None);
    }
    let (used,): (i64,) = sqlx::query_as(
        "SELECT u.stored_bytes FROM users u JOIN tasks t ON t.user_id = u.id WHERE t.id = ?",
    )
    .bind(task)
    .fetch_one(&mut **tx)
    .await?;
    let usage = crate::store::StorageUse {
        used: used.max(0).unsigned_abs(),
        max,
    };
    Ok(usage.refuses(size))
}

async fn resolve_for_write(
    tx: &mut Transaction<'_, Sqlite>,
    series: &Series,
) -> Result<Owner, StoreError> {
    let task = match series {
        Series::Task(task) | Series::Page { task_id: task, .. } => task,
    };
    let exists: Option<(i64,)> = sqlx::query_as("SELECT 1 FROM tasks WHERE id = ?")
        .bind(task)
        .fetch_optional(&mut **tx)
        .await?;
    if exists.is_none() {
        return Err(StoreError::NotFound);
    }
    let Series::Page { url, name, .. } = series else {
        return Ok(Owner::Task(task.clone()));
    };
    let found: Option<(String,)> =
        sqlx::query_as("SELECT id FROM pages WHERE task_id = ? AND url = ?")
            .bind(task)
            .bind(url)
            .fetch_optional(&mut **tx)
            .await?;
    let page = match found {
        Some((page,)) => {
            if name.is_some() {
                sqlx::query("UPDATE pages SET name = ? WHERE id = ?")
                    .bind(name)
                    .bind(&page)
                    .execute(&mut **tx)
                    .await?;
            }
            page
        }
        None => {
            let page = new_id();
            sqlx::query("INSERT INTO pages (id, task_id, url, name) VALUES (?, ?, ?, ?)")
                .bind(&page)
                .bind(task)
                .bind(url)
                .bind(name)
                .execute(&mut **tx)
                .await?;
            page
        }
    };
    Ok(Owner::Page {
        task: task.clone(),
        page,
    })
}

#[derive(sqlx::FromRow)]
struct EntryRow {
    id: i64,
    #[sqlx(flatten)]
    data: DataColumns,
}

/// Deletes the oldest entries of each series of `task` (its own, each crawled page's) beyond the
/// newest `keep`, at most [`PRUNE_BATCH`] a series; returns how many went. The counts are read
/// first from a reader, so a check that leaves every series within bounds takes no write lock.
pub(super) async fn prune(store: &SqliteStore, task: &str, keep: u32) -> Result<u64, StoreError> {
    let keep = i64::from(keep.max(1));
    let over: Option<(i64,)> = sqlx::query_as(
        "SELECT 1 WHERE EXISTS (SELECT 1 FROM tasks WHERE id = ? AND entry_count > ?) \
         OR EXISTS (SELECT 1 FROM pages WHERE task_id = ? AND entry_count > ?)",
    )
    .bind(task)
    .bind(keep)
    .bind(task)
    .bind(keep)
    .fetch_optional(&store.reader)
    .await?;
    if over.is_none() {
        return Ok(0);
    }
    let mut tx = store.write().await?;
    let own: Option<(i64,)> =
        sqlx::query_as("SELECT entry_count FROM tasks WHERE id = ? AND entry_count > ?")
            .bind(task)
            .bind(keep)
            .fetch_optional(&mut *tx)
            .await?;
    let pages: Vec<(String, i64)> =
        sqlx::query_as("SELECT id, entry_count FROM pages WHERE task_id = ? AND entry_count > ?")
            .bind(task)
            .bind(keep)
            .fetch_all(&mut *tx)
            .await?;
    let mut deleted = 0;
    // The last value found stays whatever its age: the alerts compare the next value with it
    // (after a run of failed checks longer than the retention, too).
    let oldest = |series: &str| {
        format!(
            "DELETE FROM entries WHERE id IN (SELECT id FROM entries WHERE {series} \
             AND id IS NOT (SELECT v.id FROM entries v WHERE v.{series} \
             AND v.content_hash IS NOT NULL ORDER BY v.checked_at DESC, v.id DESC LIMIT 1) \
             ORDER BY checked_at, id LIMIT ?)"
        )
    };
    if let Some((count,)) = own {
        deleted += sqlx::query(AssertSqlSafe(oldest("task_id = ? AND page_id IS NULL")))
            .bind(task)
            .bind(task)
            .bind((count - keep).min(PRUNE_BATCH))
            .execute(&mut *tx)
            .await?
            .rows_affected();
    }
    for (page, count) in pages {
        deleted += sqlx::query(AssertSqlSafe(oldest("page_id = ?")))
            .bind(&page)
            .bind(&page)
            .bind((count - keep).min(PRUNE_BATCH))
            .execute(&mut *tx)
            .await?
            .rows_affected();
    }
    tx.commit().await?;
    Ok(deleted)
}

#[async_trait]
impl HistoryStore for SqliteStore {
    async fn entries(
        &self,
        user: &str,
        id: &str,
        page: &TimePage,
    ) -> Result<Vec<(TimeKey, ClientData)>, StoreError> {
        if !is_id(id) {
            return Err(StoreError::NotFound);
        }
        let series_filter = if super::tasks::owns(self, user, id).await? {
            "e.task_id = ? AND e.page_id IS NULL"
        } else {
            let owned_page: Option<(i64,)> = sqlx::query_as(
                "SELECT 1 FROM pages p JOIN tasks t ON t.id = p.task_id \
                 WHERE p.id = ? AND t.user_id = ?",
            )
            .bind(id)
            .bind(user)
            .fetch_optional(&self.reader)
            .await?;
            if owned_page.is_none() {
                return Err(StoreError::NotFound);
            }
            "e.page_id = ?"
        };
        let (before_at, before_id) = before_key(page);
        let rows: Vec<EntryRow> = sqlx::query_as(AssertSqlSafe(format!(
            "SELECT e.id, e.checked_at, e.changed_at, c.codec, c.body, e.error \
             FROM entries e LEFT JOIN contents c ON c.hash = e.content_hash \
             WHERE {series_filter} AND e.checked_at >= ? AND (e.checked_at, e.id) < (?, ?) \
             ORDER BY e.checked_at DESC, e.id DESC LIMIT ?"
        )))
        .bind(id)
        .bind(page.from.unwrap_or(Millis::MIN))
        .bind(before_at)
        .bind(before_id)
        .bind(i64::from(page.limit) + 1)
        .fetch_all(&self.reader)
        .await?;
        rows.into_iter()
            .map(|row| {
                let data = data_of(row.data)?
                    .ok_or_else(|| StoreError::Backend("entry without a check time".into()))?;
                let key = TimeKey {
                    at: data.last_check_timestamp.timestamp_millis(),
                    id: row.id.to_string(),
                };
                Ok((key, data))
            })
            .collect()
    }

    /// Deletes up to `limit` values that no entry names any more (their entries were pruned, or
    /// their monitor deleted) in one transaction; returns how many went.
    async fn collect_garbage(&self, limit: u32) -> Result<u64, StoreError> {
        let mut tx = self.write().await?;
        let deleted = sqlx::query(
            "DELETE FROM contents WHERE hash IN \
             (SELECT hash FROM contents WHERE refs = 0 LIMIT ?)",
        )
        .bind(i64::from(limit))
        .execute(&mut *tx)
        .await?
        .rows_affected();
        tx.commit().await?;
        Ok(deleted)
    }
}
