//! [`HistoryStore`] on PostgreSQL: entries of a monitor's series and of its crawled pages,
//! values stored once by content (SHA-256 of the text) in the codecs of [`codec`] (whole while
//! a series' latest, a delta against the series' keyframe once replaced when that pays, as on
//! SQLite), the retention that keeps the newest entries of each series, and the collection of
//! values no entry and no delta names any more. No row here is shared by the checks of several
//! monitors: a series' count and latest entry live in its own row (`task_series`, `pages`), and
//! a value that lost entries becomes a candidate (`contents_unnamed`, filled by a statement
//! trigger and by collected deltas) that [`HistoryStore::collect_garbage`] checks with an
//! anti-join. Other modules read a monitor's latest data only through [`DATA_COLUMNS`],
//! [`DATA_JOIN`] and [`data_of`]; a check's entries are written by `schedule.rs` with
//! [`append_in`]. Reading a stored value and a page of a series is written once for both
//! backends in [`crate::store::both::history`].

use super::PgStore;
use crate::store::shape::history::{ENTRY_BYTES, PRUNE_BATCH, changed_at, keyframe_run};
pub(super) use crate::store::shape::history::{decode_layers, encode};
use crate::store::{
    HistoryStore, Millis, Series, StorageUse, StoreError, TimeKey, TimePage, codec, is_id, new_id,
};
use sha2::{Digest, Sha256};
use sqlx::{AssertSqlSafe, Postgres, Transaction};
use std::collections::HashMap;
use wachet::model::ClientData;

/// Shards of a user's stored-bytes count (`user_storage`).
const SHARDS: i32 = 16;
/// The codec of a delta, as the column holds it.
const DELTA: i32 = codec::DELTA as i32;

/// The columns of a monitor's latest data, for a query on `tasks t` that adds [`DATA_JOIN`]:
/// `checked_at`, `changed_at`, `codec`, `body`, `error` (all NULL when it was never checked),
/// read by [`DataColumns`].
pub(super) const DATA_COLUMNS: &str = "le.checked_at, le.changed_at, lc.codec, lc.body, le.error";
/// The joins from `tasks t` that [`DATA_COLUMNS`] reads.
pub(super) const DATA_JOIN: &str = "LEFT JOIN task_series ts ON ts.task_id = t.id \
     LEFT JOIN entries le ON le.id = ts.latest_entry_id \
     LEFT JOIN contents lc ON lc.hash = le.content_hash";

/// Adds `bytes` (negative: takes them off) to the count of each monitor whose history names
/// the value `hash`, whose body was just rewritten.
async fn resized_in(
    tx: &mut Transaction<'_, Postgres>,
    hash: &[u8],
    bytes: i64,
) -> Result<(), StoreError> {
    if bytes == 0 {
        return Ok(());
    }
    let tasks: Vec<(String,)> =
        sqlx::query_as("SELECT DISTINCT task_id FROM entries WHERE content_hash = $1")
            .bind(hash)
            .fetch_all(&mut **tx)
            .await?;
    for (task,) in tasks {
        sqlx::query("UPDATE task_series SET stored_bytes = stored_bytes + $2 WHERE task_id = $1")
            .bind(&task)
            .bind(bytes)
            .execute(&mut **tx)
            .await?;
        charge_in(tx, &task, bytes).await?;
    }
    Ok(())
}

/// Creates the series row of the new monitor `task` of `user` (its shard of the owner's
/// stored-bytes count chosen by its id), in the transaction that creates it.
pub(super) async fn series_in(
    tx: &mut Transaction<'_, Postgres>,
    task: &str,
    user: &str,
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO task_series (task_id, user_id, shard) \
         VALUES ($1, $2, (abs(hashtext($1)) % $3)::SMALLINT) ON CONFLICT (task_id) DO NOTHING",
    )
    .bind(task)
    .bind(user)
    .bind(SHARDS)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Which rows make up a series.
enum Owner {
    Task(String),
    Page { task: String, page: String },
}

/// Appends one check result to `series` in `tx` and, when it is the newest, makes it the
/// monitor's (or page's) latest data. The value-changed time is worked out here: the check
/// time when the value differs from the previous value (other than in spelling), else the
/// previous entry's. Returns the entry's id; `NotFound` when the monitor does not exist. A value
/// new to the monitor that would take the owner's history past `max_bytes` is not kept: the
/// entry records an error instead.
pub(super) async fn append_in(
    tx: &mut Transaction<'_, Postgres>,
    series: &Series,
    data: &ClientData,
    max_bytes: u64,
) -> Result<String, StoreError> {
    let owner = resolve_for_write(tx, series).await?;
    let (task, page) = match &owner {
        Owner::Task(task) => (task.as_str(), None),
        Owner::Page { task, page } => (task.as_str(), Some(page.as_str())),
    };
    let checked_at = data.last_check_timestamp.timestamp_millis();
    let mut error = data.error.clone();
    let mut charged = 0_i64;
    let hash = match &data.raw {
        Some(raw) => {
            let hash = Sha256::digest(raw.as_bytes()).to_vec();
            // Held until commit: garbage collection takes its candidates `FOR UPDATE SKIP
            // LOCKED`, so it passes over a value a check is about to name, and a value it
            // already holds is gone (and written anew below) by the time this lock is granted.
            let known: Option<(i32, i32)> = sqlx::query_as(
                "SELECT codec, length(body) FROM contents WHERE hash = $1 FOR KEY SHARE",
            )
            .bind(&hash)
            .fetch_optional(&mut **tx)
            .await?;
            let known = match known {
                // A value named again (a page that went back to an older text) is latest
                // again, and the latest is read whole. Of two checks doing it at once, the
                // second finds it whole already and rewrites nothing.
                Some((DELTA, old)) => {
                    let (codec, body) = encode::<i32>(raw);
                    let base: Option<(Option<Vec<u8>>,)> = sqlx::query_as(
                        "UPDATE contents SET codec = $2, body = $3, base_hash = NULL \
                         WHERE hash = $1 AND codec = $4 \
                         RETURNING (SELECT base_hash FROM contents WHERE hash = $1)",
                    )
                    .bind(&hash)
                    .bind(codec)
                    .bind(body.as_ref())
                    .bind(DELTA)
                    .fetch_optional(&mut **tx)
                    .await?;
                    let size = i64::try_from(body.len()).unwrap_or(i64::MAX);
                    if let Some((base,)) = base {
                        resized_in(tx, &hash, size - i64::from(old)).await?;
                        // Its base may be named by nothing now.
                        sqlx::query(
                            "INSERT INTO contents_unnamed (hash) SELECT $1 \
                             WHERE $1 IS NOT NULL ON CONFLICT DO NOTHING",
                        )
                        .bind(base)
                        .execute(&mut **tx)
                        .await?;
                    }
                    Some(size)
                }
                Some((_, size)) => Some(i64::from(size)),
                None => None,
            };
            let encoded = match known {
                Some(_) => None,
                None => Some(encode::<i32>(raw)),
            };
            let size = match (&known, &encoded) {
                (Some(size), _) => *size,
                (None, Some((_, body))) => i64::try_from(body.len()).unwrap_or(i64::MAX),
                (None, None) => 0,
            };
            let named: Option<(i32,)> = sqlx::query_as(
                "SELECT 1 FROM entries WHERE content_hash = $1 AND task_id = $2 LIMIT 1",
            )
            .bind(&hash)
            .bind(task)
            .fetch_optional(&mut **tx)
            .await?;
            let refused = match named {
                // A value the monitor's history already names costs nothing more.
                Some(_) => None,
                None => usage_in(tx, task, max_bytes)
                    .await?
                    .refuses(size.unsigned_abs()),
            };
            match refused {
                Some(refused) => {
                    error = Some(refused);
                    None
                }
                None => {
                    if let Some((codec, body)) = encoded {
                        sqlx::query(
                            "INSERT INTO contents (hash, codec, body) VALUES ($1, $2, $3) \
                             ON CONFLICT (hash) DO NOTHING",
                        )
                        .bind(&hash)
                        .bind(codec)
                        .bind(body.as_ref())
                        .execute(&mut **tx)
                        .await?;
                    }
                    if named.is_none() {
                        charged += size;
                    }
                    Some(hash)
                }
            }
        }
        None => None,
    };
    // The value changed when it differs from the latest value before this check.
    let series_filter = match page {
        None => "task_id = $1 AND page_id IS NULL",
        Some(_) => "page_id = $1",
    };
    let series_id = page.unwrap_or(task);
    let previous: Option<(Option<Vec<u8>>, Option<i64>)> = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT content_hash, changed_at FROM entries WHERE {series_filter} \
         AND content_hash IS NOT NULL AND checked_at <= $2 \
         ORDER BY checked_at DESC, id DESC LIMIT 1"
    )))
    .bind(series_id)
    .bind(checked_at)
    .fetch_optional(&mut **tx)
    .await?;
    // The value this one replaces, when it is another.
    let replaced = match (&hash, &previous) {
        (Some(hash), Some((Some(prev), _))) if hash != prev => text_in(tx, prev)
            .await?
            .map(|(text, size)| (prev.clone(), text, size)),
        _ => None,
    };
    let changed_at = changed_at(
        hash.as_deref(),
        previous
            .as_ref()
            .map(|(prev, changed)| (prev.as_deref(), *changed)),
        replaced.as_ref().map(|(_, old, _)| old.as_str()),
        data.raw.as_deref(),
        checked_at,
    );
    let (id,): (i64,) = sqlx::query_as(
        "INSERT INTO entries (task_id, page_id, checked_at, changed_at, content_hash, error, \
         logged_in) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
    )
    .bind(task)
    .bind(page)
    .bind(checked_at)
    .bind(changed_at)
    .bind(&hash)
    .bind(super::storable(error.as_deref()))
    .bind(data.logged_in)
    .fetch_one(&mut **tx)
    .await?;
    charged += ENTRY_BYTES + error.as_ref().map_or(0, |e| e.len() as i64);
    if let Some((prev, text, size)) = replaced.filter(|(_, _, size)| *size >= codec::DELTA_FROM) {
        // Only the series' latest value is read whole by the listings and the scheduler: a
        // check recorded late (an older check time) replaces nothing.
        let (newer,): (bool,) = sqlx::query_as(AssertSqlSafe(format!(
            "SELECT EXISTS (SELECT 1 FROM entries WHERE {series_filter} \
             AND content_hash IS NOT NULL AND (checked_at, id) > ($2, $3))"
        )))
        .bind(series_id)
        .bind(checked_at)
        .bind(id)
        .fetch_one(&mut **tx)
        .await?;
        if !newer {
            charged -= retire_in(tx, task, page, &prev, &text, size).await?;
        }
    }
    // The entry becomes the latest unless a newer one is already stored; the count grows
    // either way (it is what the retention compares).
    let newest = "CASE WHEN latest_entry_id IS NULL OR (SELECT checked_at FROM entries \
                  WHERE id = latest_entry_id) <= $3 THEN $2 ELSE latest_entry_id END";
    match page {
        None => {
            sqlx::query(AssertSqlSafe(format!(
                "UPDATE task_series SET latest_entry_id = {newest}, \
                 entry_count = entry_count + 1, stored_bytes = stored_bytes + $4 \
                 WHERE task_id = $1"
            )))
            .bind(task)
            .bind(id)
            .bind(checked_at)
            .bind(charged)
            .execute(&mut **tx)
            .await?;
            // Written only when it changes (the definition's row is not a check's to rewrite),
            // and only by the entry that became the latest: a check recorded late must not
            // mark a monitor failed (and count it in its folder) under a newer success.
            sqlx::query(
                "UPDATE tasks SET failed = $2 WHERE id = $1 AND failed <> $2 \
                 AND (SELECT latest_entry_id FROM task_series WHERE task_id = $1) = $3",
            )
            .bind(task)
            .bind(error.is_some())
            .bind(id)
            .execute(&mut **tx)
            .await?;
        }
        Some(page) => {
            sqlx::query(AssertSqlSafe(format!(
                "UPDATE pages SET latest_entry_id = {newest}, entry_count = entry_count + 1 \
                 WHERE id = $1"
            )))
            .bind(page)
            .bind(id)
            .bind(checked_at)
            .execute(&mut **tx)
            .await?;
            sqlx::query(
                "UPDATE task_series SET stored_bytes = stored_bytes + $2 WHERE task_id = $1",
            )
            .bind(task)
            .bind(charged)
            .execute(&mut **tx)
            .await?;
        }
    }
    charge_in(tx, task, charged).await?;
    Ok(id.to_string())
}

/// Retires `prev` (whose text is `text`, `size` bytes stored), the value a new latest value
/// of the series of `task` (its own, or its `page`'s) just replaced: stored as a delta against
/// the series' keyframe when that pays, else kept whole as the series' new keyframe, by the
/// same rules as on SQLite (a base, or a value another series names, stays whole; a delta is
/// kept when smaller than the whole body and than the run's average cost). Returns the bytes
/// the monitor's count saves, for the caller to take off. A value another transaction holds
/// (a check naming it, a collector) is left whole, and so is a keyframe a collector holds:
/// neither waits for the other.
async fn retire_in(
    tx: &mut Transaction<'_, Postgres>,
    task: &str,
    page: Option<&str>,
    prev: &[u8],
    text: &str,
    size: usize,
) -> Result<i64, StoreError> {
    // Entries of other series than this one (a page's test must not be NULL for a monitor's
    // own entries, whose page is NULL).
    let (elsewhere_filter, series_id) = match page {
        None => ("NOT (task_id = $2 AND page_id IS NULL)", task),
        Some(page) => ("page_id IS DISTINCT FROM $2", page),
    };
    let (keyframe_of, set_keyframe) = match page {
        None => (
            "SELECT keyframe_hash FROM task_series WHERE task_id = $1",
            "UPDATE task_series SET keyframe_hash = $2 WHERE task_id = $1",
        ),
        Some(_) => (
            "SELECT keyframe_hash FROM pages WHERE id = $1",
            "UPDATE pages SET keyframe_hash = $2 WHERE id = $1",
        ),
    };
    let held: Option<(bool, bool)> = sqlx::query_as(
        "SELECT codec <> $2, EXISTS (SELECT 1 FROM contents d WHERE d.base_hash = $1) \
         FROM contents WHERE hash = $1 FOR UPDATE SKIP LOCKED",
    )
    .bind(prev)
    .bind(DELTA)
    .fetch_optional(&mut **tx)
    .await?;
    let Some((true, is_base)) = held else {
        return Ok(0);
    };
    let (elsewhere,): (bool,) = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT EXISTS (SELECT 1 FROM entries WHERE content_hash = $1 AND {elsewhere_filter})"
    )))
    .bind(prev)
    .bind(series_id)
    .fetch_one(&mut **tx)
    .await?;
    let keyframe: Option<(Option<Vec<u8>>,)> = sqlx::query_as(keyframe_of)
        .bind(series_id)
        .fetch_optional(&mut **tx)
        .await?;
    let keyframe = keyframe.and_then(|(hash,)| hash).filter(|k| k != prev);
    if let (false, false, Some(keyframe)) = (is_base, elsewhere, keyframe) {
        // The keyframe as it is now: whole, or a delta against a whole root (else it is no
        // keyframe any more, and `prev` starts anew). Its root cannot go while it names it.
        let run: Option<KeyframeRow> = sqlx::query_as(
            "SELECT k.codec, k.body, k.base_hash, r.codec, r.body FROM contents k \
                 LEFT JOIN contents r ON r.hash = k.base_hash \
                 WHERE k.hash = $1 AND (k.base_hash IS NULL OR r.codec <> $2) \
                 FOR KEY SHARE OF k SKIP LOCKED",
        )
        .bind(&keyframe)
        .bind(DELTA)
        .fetch_optional(&mut **tx)
        .await?;
        if let Some(run) = run {
            let (keyframe_size, keyframe_text, root) = keyframe_run(run)?;
            let (deltas, delta_bytes) = deltas_of(tx, &keyframe).await?;
            if deltas < codec::MAX_DELTAS
                && let Some(delta) = codec::delta(&keyframe_text, text)
                && codec::pays_in_run(delta.len(), size, keyframe_size, deltas, delta_bytes)
            {
                stored_as_delta(tx, prev, &delta, &keyframe).await?;
                // Only this monitor names it (no other series does): the caller takes the
                // saving off its count with the entry's.
                return Ok((size - delta.len()) as i64);
            }
            // The run ended: `prev` is the next keyframe, against the run's root.
            let (root, root_text) = match &root {
                Some((root, root_text)) => (root, root_text),
                None => (&keyframe, &keyframe_text),
            };
            let (deltas, _) = deltas_of(tx, root).await?;
            if deltas < codec::MAX_ROOT_DELTAS
                && let Some(delta) = codec::delta(root_text, text)
                && codec::pays_as_keyframe(delta.len(), size, deltas)
            {
                stored_as_delta(tx, prev, &delta, root).await?;
                sqlx::query(set_keyframe)
                    .bind(series_id)
                    .bind(prev)
                    .execute(&mut **tx)
                    .await?;
                return Ok((size - delta.len()) as i64);
            }
        }
    }
    sqlx::query(set_keyframe)
        .bind(series_id)
        .bind(prev)
        .execute(&mut **tx)
        .await?;
    Ok(0)
}

/// Adds `bytes` (negative: takes them off) to the count of the owner of `task`, in the shard
/// the monitor adds to.
async fn charge_in(
    tx: &mut Transaction<'_, Postgres>,
    task: &str,
    bytes: i64,
) -> Result<(), StoreError> {
    if bytes == 0 {
        return Ok(());
    }
    sqlx::query(
        "INSERT INTO user_storage (user_id, shard, bytes) \
         SELECT user_id, shard, $2 FROM task_series WHERE task_id = $1 \
         ON CONFLICT (user_id, shard) DO UPDATE SET bytes = user_storage.bytes + EXCLUDED.bytes",
    )
    .bind(task)
    .bind(bytes)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// What the history of the owner of `task` takes, summed over the owner's shards.
const USAGE: &str = "SELECT coalesce(sum(s.bytes), 0)::BIGINT FROM user_storage s \
                     WHERE s.user_id = (SELECT user_id FROM tasks WHERE id = $1)";

async fn usage_in(
    tx: &mut Transaction<'_, Postgres>,
    task: &str,
    max: u64,
) -> Result<StorageUse, StoreError> {
    let (used,): (i64,) = sqlx::query_as(USAGE)
        .bind(task)
        .fetch_one(&mut **tx)
        .await?;
    Ok(StorageUse {
        used: used.max(0).unsigned_abs(),
        max,
    })
}

/// What the history of the owner of `task` takes; `NotFound` when the monitor is gone.
pub(super) async fn usage(store: &PgStore, task: &str) -> Result<StorageUse, StoreError> {
    let exists: Option<(i32,)> = sqlx::query_as("SELECT 1 FROM tasks WHERE id = $1")
        .bind(task)
        .fetch_optional(&store.pool)
        .await?;
    if exists.is_none() {
        return Err(StoreError::NotFound);
    }
    let (used,): (i64,) = sqlx::query_as(USAGE)
        .bind(task)
        .fetch_one(&store.pool)
        .await?;
    Ok(StorageUse {
        used: used.max(0).unsigned_abs(),
        max: store.quotas.stored_bytes,
    })
}

async fn resolve_for_write(
    tx: &mut Transaction<'_, Postgres>,
    series: &Series,
) -> Result<Owner, StoreError> {
    let task = match series {
        Series::Task(task) | Series::Page { task_id: task, .. } => task,
    };
    let exists: Option<(i32,)> = sqlx::query_as("SELECT 1 FROM task_series WHERE task_id = $1")
        .bind(task)
        .fetch_optional(&mut **tx)
        .await?;
    if exists.is_none() {
        return Err(StoreError::NotFound);
    }
    let Series::Page { url, name, .. } = series else {
        return Ok(Owner::Task(task.clone()));
    };
    // One statement whether the page is new or known: two checks of one Portal (a claim that
    // outlived its lease) must not both create it.
    let (page,): (String,) = sqlx::query_as(
        "INSERT INTO pages (id, task_id, url, name) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (task_id, url) DO UPDATE SET name = coalesce(EXCLUDED.name, pages.name) \
         RETURNING id",
    )
    .bind(new_id())
    .bind(task)
    .bind(super::storable(Some(url)))
    .bind(super::storable(name.as_deref()))
    .fetch_one(&mut **tx)
    .await?;
    Ok(Owner::Page {
        task: task.clone(),
        page,
    })
}

/// Deletes the oldest entries of each series of `task` (its own, each crawled page's) beyond
/// the newest `keep`, at most [`PRUNE_BATCH`] a series, and takes what they took off the
/// owner's count; returns how many went. The counts are read first outside a transaction, so
/// a check that leaves every series within bounds writes nothing more.
pub(super) async fn prune(store: &PgStore, task: &str, keep: u32) -> Result<u64, StoreError> {
    let keep = i64::from(keep.max(1));
    let over: Vec<(Option<String>, i64)> = sqlx::query_as(
        "SELECT NULL::TEXT, entry_count FROM task_series WHERE task_id = $1 AND entry_count > $2 \
         UNION ALL SELECT id, entry_count FROM pages WHERE task_id = $1 AND entry_count > $2",
    )
    .bind(task)
    .bind(keep)
    .fetch_all(&store.pool)
    .await?;
    if over.is_empty() {
        return Ok(0);
    }
    let mut tx = store.pool.begin().await?;
    let mut deleted = 0_u64;
    let mut freed = 0_i64;
    for (page, count) in over {
        let series = match page {
            None => "task_id = $1 AND page_id IS NULL",
            Some(_) => "page_id = $1",
        };
        let series_id = page.as_deref().unwrap_or(task);
        // The last value found stays whatever its age: the alerts compare the next value with
        // it (after a run of failed checks longer than the retention, too).
        let gone: Vec<(Option<Vec<u8>>, Option<String>)> = sqlx::query_as(AssertSqlSafe(format!(
            "DELETE FROM entries WHERE id IN (SELECT id FROM entries WHERE {series} \
             AND id IS DISTINCT FROM (SELECT v.id FROM entries v WHERE v.{series} \
             AND v.content_hash IS NOT NULL ORDER BY v.checked_at DESC, v.id DESC LIMIT 1) \
             ORDER BY checked_at, id LIMIT $2) RETURNING content_hash, error"
        )))
        .bind(series_id)
        .bind((count - keep).min(PRUNE_BATCH))
        .fetch_all(&mut *tx)
        .await?;
        let n = gone.len() as i64;
        deleted += n as u64;
        freed += n * ENTRY_BYTES
            + gone
                .iter()
                .map(|(_, e)| e.as_ref().map_or(0, |e| e.len() as i64))
                .sum::<i64>();
        let mut hashes: Vec<Vec<u8>> = gone.into_iter().filter_map(|(h, _)| h).collect();
        hashes.sort();
        hashes.dedup();
        // A value leaves the monitor's count with the last of its entries that named it.
        let (unnamed,): (i64,) = sqlx::query_as(
            "SELECT coalesce(sum(length(c.body)), 0)::BIGINT FROM contents c \
             WHERE c.hash = ANY($1) AND NOT EXISTS \
             (SELECT 1 FROM entries e WHERE e.content_hash = c.hash AND e.task_id = $2)",
        )
        .bind(&hashes)
        .bind(task)
        .fetch_one(&mut *tx)
        .await?;
        freed += unnamed;
        let count_of = match page {
            None => "UPDATE task_series SET entry_count = entry_count - $2 WHERE task_id = $1",
            Some(_) => "UPDATE pages SET entry_count = entry_count - $2 WHERE id = $1",
        };
        sqlx::query(count_of)
            .bind(series_id)
            .bind(n)
            .execute(&mut *tx)
            .await?;
    }
    sqlx::query("UPDATE task_series SET stored_bytes = stored_bytes - $2 WHERE task_id = $1")
        .bind(task)
        .bind(freed)
        .execute(&mut *tx)
        .await?;
    charge_in(&mut tx, task, -freed).await?;
    tx.commit().await?;
    Ok(deleted)
}

/// Whether `err` is PostgreSQL's `foreign_key_violation` (SQLSTATE 23503).
fn is_foreign_key_violation(err: &sqlx::Error) -> bool {
    err.as_database_error()
        .and_then(|db| db.code())
        .is_some_and(|code| code == "23503")
}

/// The upper keyset bound of a newest-first page: entries strictly before `after`, and no
/// later than `to`.
fn before_key(page: &TimePage) -> (Millis, i64) {
    let to = (page.to.unwrap_or(Millis::MAX), i64::MAX);
    match &page.after {
        Some(key) => match key.id.parse::<i64>() {
            Ok(id) if (key.at, id) < to => (key.at, id),
            _ => to,
        },
        None => to,
    }
}

/// The entries of a monitor's own series (`$1`) when the monitor is the user's (`$6`).
const OWN_SERIES: &str = "le.task_id = $1 AND le.page_id IS NULL \
     AND EXISTS (SELECT 1 FROM tasks WHERE id = $1 AND user_id = $6)";
/// The entries of a page's series (`$1`), whose owner the caller checked (`$6` unused).
const PAGE_SERIES: &str = "le.page_id = $1 AND $6::TEXT IS NOT NULL";

impl PgStore {
    /// One page of the series `filter` names ([`OWN_SERIES`], [`PAGE_SERIES`]) with their
    /// values as stored.
    async fn page_rows(
        &self,
        filter: &str,
        user: &str,
        id: &str,
        page: &TimePage,
    ) -> Result<Vec<EntryRow>, StoreError> {
        let (before_at, before_id) = before_key(page);
        Ok(sqlx::query_as(AssertSqlSafe(format!(
            "SELECT le.id, le.checked_at, le.changed_at, lc.codec, lc.body, lc.base_hash, \
             le.error, le.logged_in FROM entries le LEFT JOIN contents lc ON lc.hash = le.content_hash \
             WHERE {filter} AND le.checked_at >= $2 AND (le.checked_at, le.id) < ($3, $4) \
             ORDER BY le.checked_at DESC, le.id DESC LIMIT $5"
        )))
        .bind(id)
        .bind(page.from.unwrap_or(Millis::MIN))
        .bind(before_at)
        .bind(before_id)
        .bind(i64::from(page.limit) + 1)
        .bind(user)
        .fetch_all(&self.pool)
        .await?)
    }

    /// The stored values `hashes`, each with its codec, body and base.
    async fn contents_in(&self, hashes: &[Vec<u8>]) -> Result<Vec<StoredRow>, StoreError> {
        Ok(
            sqlx::query_as(
                "SELECT hash, codec, body, base_hash FROM contents WHERE hash = ANY($1)",
            )
            .bind(hashes)
            .fetch_all(&self.pool)
            .await?,
        )
    }

    /// PostgreSQL keeps no folder pages in its cache: a check leaves nothing there to forget.
    pub(super) fn listings_changed_if_folders_were(&self) {}
}

crate::store::both::history::history_store!(PgStore, Postgres, small_int: i32, {
    /// Takes candidates (values whose entries went) that no other collector holds, deletes
    /// those of them no entry names, and drops the candidates, in one transaction, until
    /// `limit` values went or no candidate is left: a candidate still named (a value another
    /// entry or monitor keeps, as every pruned entry of an unchanged page is) deletes nothing,
    /// and a batch that stopped at it would answer "fewer than `limit`, none left" while
    /// garbage waited. Each round drops its candidates, so the rounds end. A candidate a check
    /// holds (it is naming it right now, `FOR KEY SHARE`) is skipped and looked at next time.
    async fn collect_garbage(&self, limit: u32) -> Result<u64, StoreError> {
        let mut tx = self.pool.begin().await?;
        let mut deleted = 0;
        while deleted < u64::from(limit) {
            let candidates: Vec<(Vec<u8>,)> =
                sqlx::query_as("SELECT hash FROM contents_unnamed LIMIT $1 FOR UPDATE SKIP LOCKED")
                    .bind(i64::try_from(u64::from(limit) - deleted).unwrap_or(i64::MAX))
                    .fetch_all(&mut *tx)
                    .await?;
            if candidates.is_empty() {
                break;
            }
            let hashes: Vec<Vec<u8>> = candidates.into_iter().map(|(h,)| h).collect();
            // A base stays while a delta needs it.
            let locked: Vec<(Vec<u8>,)> = sqlx::query_as(
                "SELECT hash FROM contents c WHERE hash = ANY($1) \
                 AND NOT EXISTS (SELECT 1 FROM entries e WHERE e.content_hash = c.hash) \
                 AND NOT EXISTS (SELECT 1 FROM contents d WHERE d.base_hash = c.hash) \
                 FOR UPDATE SKIP LOCKED",
            )
            .bind(&hashes)
            .fetch_all(&mut *tx)
            .await?;
            let doomed: Vec<Vec<u8>> = locked.into_iter().map(|(h,)| h).collect();
            let gone: Vec<(Option<Vec<u8>>,)> = match sqlx::query_as(
                "DELETE FROM contents WHERE hash = ANY($1) RETURNING base_hash",
            )
            .bind(&doomed)
            .fetch_all(&mut *tx)
            .await
            {
                Ok(gone) => gone,
                // A check that named one of them committed between this statement's snapshot
                // and its lock: the foreign key kept the value, and the candidates wait for
                // next time.
                Err(err) if is_foreign_key_violation(&err) => return Ok(0),
                Err(err) => return Err(err.into()),
            };
            deleted += gone.len() as u64;
            sqlx::query("DELETE FROM contents_unnamed WHERE hash = ANY($1)")
                .bind(&hashes)
                .execute(&mut *tx)
                .await?;
            // The bases of the deltas that went may be named by nothing now.
            let bases: Vec<Vec<u8>> = gone.into_iter().filter_map(|(base,)| base).collect();
            if !bases.is_empty() {
                sqlx::query(
                    "INSERT INTO contents_unnamed (hash) SELECT DISTINCT unnest($1::BYTEA[]) \
                     ON CONFLICT DO NOTHING",
                )
                .bind(&bases)
                .execute(&mut *tx)
                .await?;
            }
        }
        tx.commit().await?;
        Ok(deleted)
    }
});
