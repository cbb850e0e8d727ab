//! [`HistoryStore`] on SQLite: check results of monitors and of crawled pages, with values
//! stored once by content (SHA-256 of the text) in the codecs of [`codec`]: whole while a
//! series' latest, a delta against the series' keyframe once replaced when that pays; the
//! retention that keeps the newest entries of each series; and the collection of values no
//! entry (and no delta) names any more. A check's entries are written by `schedule.rs` with
//! [`append_in`]. Reading a stored value and a page of a series is written once for both
//! backends in [`crate::store::both::history`].

use super::{SqliteStore, before_key};
use crate::store::shape::history::{PRUNE_BATCH, changed_at, keyframe_run};
pub(super) use crate::store::shape::history::{decode_layers, encode};
use crate::store::shape::storable;
use crate::store::{
    HistoryStore, Millis, Series, StoreError, TimeKey, TimePage, codec, is_id, new_id,
};
use sha2::{Digest, Sha256};
use sqlx::AssertSqlSafe;
use sqlx::{Sqlite, Transaction};
use std::collections::HashMap;
use wachet::model::ClientData;

/// Which rows make up a series, and the row that holds its latest entry.
enum Owner {
    Task(String),
    Page { task: String, page: String },
}

/// Appends one check result to a series within the caller's transaction and, when it is the
/// newest, makes it the monitor's (or page's) latest data ([`append_entry_in`]). Returns the
/// entry's id; `NotFound` when the monitor does not exist.
pub(super) async fn append_in(
    tx: &mut Transaction<'_, Sqlite>,
    series: &Series,
    data: &ClientData,
    max_stored_bytes: u64,
) -> Result<String, StoreError> {
    let (owner, _, appended) = append_entry_in(tx, series, data, max_stored_bytes, None)
        .await?
        .map_err(|_| StoreError::Backend("an append without a claim was stopped".into()))?;
    let id = appended.id.to_string();
    match &owner {
        Owner::Task(task) => {
            sqlx::query(AssertSqlSafe(format!(
                "UPDATE tasks SET latest_entry_id = ?, failed = ? WHERE id = ? AND ({NEWEST})"
            )))
            .bind(&id)
            .bind(super::flag(appended.failed))
            .bind(task)
            .bind(appended.checked_at)
            .execute(&mut **tx)
            .await?;
        }
        Owner::Page { page, .. } => {
            sqlx::query(AssertSqlSafe(format!(
                "UPDATE pages SET latest_entry_id = ? WHERE id = ? AND ({NEWEST})"
            )))
            .bind(&id)
            .bind(page)
            .bind(appended.checked_at)
            .execute(&mut **tx)
            .await?;
        }
    }
    Ok(id)
}

/// Appends one check result to monitor `task`'s own series ([`append_entry_in`]) when the
/// monitor is still as the check claimed it (`expect`: its definition's version and its lease
/// token); the caller makes the entry the monitor's latest data. The claim is tested by the
/// same statement that reads what the append depends on: one round trip to the writer's
/// thread for both, which is what a SinglePage check's record costs most.
pub(super) async fn append_own_in(
    tx: &mut Transaction<'_, Sqlite>,
    task: &str,
    data: &ClientData,
    max_stored_bytes: u64,
    (expect, keep): ((Millis, i64), i64),
) -> Result<OwnAppend, StoreError> {
    let series = Series::Task(task.to_string());
    let claim = Claimed { expect, keep };
    match append_entry_in(tx, &series, data, max_stored_bytes, Some(claim)).await {
        Ok(Ok((_, monitor, appended))) => Ok(OwnAppend::Appended { appended, monitor }),
        Ok(Err(Stopped::Fenced)) => Ok(OwnAppend::Fenced),
        Ok(Err(Stopped::Edited)) => Ok(OwnAppend::Edited),
        Err(StoreError::NotFound) => Ok(OwnAppend::Gone),
        Err(err) => Err(err),
    }
}

/// What [`append_own_in`] did.
pub(super) enum OwnAppend {
    /// The monitor was deleted; nothing written.
    Gone,
    /// Its lease is another check's now; nothing written.
    Fenced,
    /// Its definition was edited during the check; nothing written.
    Edited,
    /// The entry was written.
    Appended {
        appended: Appended,
        monitor: ClaimedMonitor,
    },
}

/// What the read before an append found of its monitor besides (for a page's series, which
/// reads no claim: no owner, not full).
pub(super) struct ClaimedMonitor {
    /// Its owner.
    pub(super) user: String,
    /// Whether one of its series may now hold more entries than the retention keeps.
    pub(super) full: bool,
}

/// A claim to test before an append ([`append_own_in`]), and the retention.
struct Claimed {
    expect: (Millis, i64),
    keep: i64,
}

/// Why an append with a claim to test wrote nothing.
enum Stopped {
    /// The lease is another check's.
    Fenced,
    /// The definition was edited since the claim.
    Edited,
}

/// Whether an entry checked at `?` is the newest of the row (monitor or page) being updated: it
/// becomes its latest data then, and not when a newer one is stored already.
pub(super) const NEWEST: &str = "latest_entry_id IS NULL OR (SELECT checked_at FROM entries \
                                 WHERE id = latest_entry_id) <= ?";

/// An entry [`append_entry_in`] wrote, which its caller makes its series' latest data when it is
/// the newest ([`NEWEST`]).
pub(super) struct Appended {
    /// The entry's id.
    pub(super) id: i64,
    /// When it was checked.
    pub(super) checked_at: Millis,
    /// Whether it records a failure (the check's own, or a value over the quota).
    pub(super) failed: bool,
}

/// Appends one check result to a series within the caller's transaction, leaving the series'
/// latest data to the caller (a check's own series sets it in the statement that ends the
/// check: one round trip to the writer fewer). The value-changed time is worked out here: the
/// check time when the value differs from the previous value, else the previous entry's.
/// `NotFound` when the monitor does not exist. A value new to the monitor that would take the
/// owner's history past `max_stored_bytes` is not kept: the entry records an error instead. A
/// new value that becomes the series' latest retires the one it replaces ([`retire_in`]): that
/// one may become a delta.
async fn append_entry_in(
    tx: &mut Transaction<'_, Sqlite>,
    series: &Series,
    data: &ClientData,
    max_stored_bytes: u64,
    claim: Option<Claimed>,
) -> Result<Result<(Owner, ClaimedMonitor, Appended), Stopped>, StoreError> {
    // A monitor's own series needs no look of its own: the one statement below finds the
    // monitor or nothing.
    let owner = match series {
        Series::Task(task) => Owner::Task(task.clone()),
        Series::Page { .. } => resolve_for_write(tx, series).await?,
    };
    let task = match &owner {
        Owner::Task(task) | Owner::Page { task, .. } => task.as_str(),
    };
    let checked_at = data.last_check_timestamp.timestamp_millis();
    let mut error = data.error.clone();
    let hash = data
        .raw
        .as_ref()
        .map(|raw| Sha256::digest(raw.as_bytes()).to_vec());
    // The value changed when it differs from the latest value before this check.
    let (series_filter, series_id) = match &owner {
        Owner::Task(task) => ("task_id = ? AND page_id IS NULL", task),
        Owner::Page { page, .. } => ("page_id = ?", page),
    };
    // What the write depends on, in one round trip to the writer's thread (each costs more
    // than its statement): the value as stored, whether the monitor's history names it
    // already, what its owner's history takes, and the series' previous value; with a claim
    // to test, the monitor's version, lease and owner too.
    let statement = match &owner {
        Owner::Task(_) => PRIOR_OWN.as_str(),
        Owner::Page { .. } => PRIOR_PAGE.as_str(),
    };
    let prior: Option<Prior> = sqlx::query_as(AssertSqlSafe(statement))
        .bind(task)
        .bind(&hash)
        .bind(series_id)
        .bind(checked_at)
        .bind(claim.as_ref().map_or(0, |c| c.keep))
        .fetch_optional(&mut **tx)
        .await?;
    let Some(prior) = prior else {
        return Err(StoreError::NotFound);
    };
    if let Some(claim) = claim {
        if prior.token != Some(claim.expect.1) {
            return Ok(Err(Stopped::Fenced));
        }
        if prior.version != Some(claim.expect.0) {
            return Ok(Err(Stopped::Edited));
        }
    }
    let claimed = ClaimedMonitor {
        user: prior.owner.clone().unwrap_or_default(),
        full: prior.full.unwrap_or(false),
    };
    let hash = match (&data.raw, hash) {
        (Some(raw), Some(hash)) => {
            // Most checks find the value they found last time: compress only a new one.
            let known = prior.codec.zip(prior.size);
            let mut used = prior.used;
            let known = match known {
                // A value named again (a page that went back to an older text) is latest
                // again, and the latest is read whole.
                Some((codec, _)) if codec == i64::from(codec::DELTA) => {
                    let (codec, body) = encode::<i64>(raw);
                    sqlx::query(
                        "UPDATE contents SET codec = ?, body = ?, base_hash = NULL WHERE hash = ?",
                    )
                    .bind(codec)
                    .bind(body.as_ref())
                    .bind(&hash)
                    .execute(&mut **tx)
                    .await?;
                    // Its owners' histories grew with it (by trigger): the quota is tested
                    // against what they take now.
                    (used,) = sqlx::query_as(
                        "SELECT u.stored_bytes FROM users u JOIN tasks t ON t.user_id = u.id \
                         WHERE t.id = ?",
                    )
                    .bind(task)
                    .fetch_one(&mut **tx)
                    .await?;
                    Some(body.len() as u64)
                }
                Some((_, size)) => Some(size.unsigned_abs()),
                None => None,
            };
            let encoded = match known {
                Some(_) => None,
                None => Some(encode::<i64>(raw)),
            };
            let size = match (&known, &encoded) {
                (Some(size), _) => *size,
                (None, Some((_, body))) => body.len() as u64,
                (None, None) => 0,
            };
            // A value the monitor's history already names costs nothing more.
            let usage = crate::store::StorageUse {
                used: used.unwrap_or(0).max(0).unsigned_abs(),
                max: max_stored_bytes,
            };
            match (!prior.named).then(|| usage.refuses(size)).flatten() {
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
        _ => None,
    };
    let previous = prior
        .previous
        .map(|hash| (Some(hash), prior.previous_changed));
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
    let (task_id, page_id) = match &owner {
        Owner::Task(task) => (task.as_str(), None),
        Owner::Page { task, page } => (task.as_str(), Some(page.as_str())),
    };
    // Entries are numbered by the database (see migration 0004): a later entry, a higher id.
    let (id,): (i64,) = sqlx::query_as(
        "INSERT INTO entries (task_id, page_id, checked_at, changed_at, content_hash, error, \
         logged_in) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
    )
    .bind(task_id)
    .bind(page_id)
    .bind(checked_at)
    .bind(changed_at)
    .bind(&hash)
    .bind(storable(error.as_deref()))
    .bind(data.logged_in)
    .fetch_one(&mut **tx)
    .await?;
    if let Some((prev, text, size)) = replaced.filter(|(_, _, size)| *size >= codec::DELTA_FROM) {
        // Only the series' latest value is read whole by the listings and the scheduler: a
        // check recorded late (an older check time) replaces nothing.
        let newer: Option<(i64,)> = sqlx::query_as(AssertSqlSafe(format!(
            "SELECT 1 FROM entries WHERE {series_filter} AND content_hash IS NOT NULL \
             AND (checked_at, id) > (?, ?) LIMIT 1"
        )))
        .bind(series_id)
        .bind(checked_at)
        .bind(id)
        .fetch_optional(&mut **tx)
        .await?;
        if newer.is_none() {
            retire_in(tx, &owner, &prev, &text, size).await?;
        }
    }
    let appended = Appended {
        id,
        checked_at,
        failed: error.is_some(),
    };
    Ok(Ok((owner, claimed, appended)))
}

/// Retires `prev` (whose text is `text`, `size` bytes stored), the value a new latest value
/// of `owner`'s series just replaced: stored as a delta against the series' keyframe when
/// that pays; else, the keyframe's run having ended, it becomes the series' next keyframe,
/// itself a delta against the run's root when that is at most an eighth of its whole body, or
/// whole (a new root). A value stays whole while it is a base (its deltas are read against
/// it) or while another series names it (it may be that series' latest, which is read whole).
///
/// When each pays is [`codec::pays_in_run`] and [`codec::pays_as_keyframe`].
async fn retire_in(
    tx: &mut Transaction<'_, Sqlite>,
    owner: &Owner,
    prev: &[u8],
    text: &str,
    size: usize,
) -> Result<(), StoreError> {
    let (series_filter, table, series_id) = match owner {
        Owner::Task(task) => ("task_id = ? AND page_id IS NULL", "tasks", task),
        Owner::Page { page, .. } => ("page_id = ?", "pages", page),
    };
    let (whole, refs, is_base): (bool, i64, bool) = sqlx::query_as(
        "SELECT codec <> ?, refs, EXISTS (SELECT 1 FROM contents d WHERE d.base_hash = ?) \
         FROM contents WHERE hash = ?",
    )
    .bind(i64::from(codec::DELTA))
    .bind(prev)
    .bind(prev)
    .fetch_one(&mut **tx)
    .await?;
    if !whole {
        return Ok(());
    }
    let (here,): (i64,) = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT count(*) FROM entries WHERE {series_filter} AND content_hash = ?"
    )))
    .bind(series_id)
    .bind(prev)
    .fetch_one(&mut **tx)
    .await?;
    let keyframe: Option<(Option<Vec<u8>>,)> = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT keyframe_hash FROM {table} WHERE id = ?"
    )))
    .bind(series_id)
    .fetch_optional(&mut **tx)
    .await?;
    let keyframe = keyframe.and_then(|(hash,)| hash).filter(|k| k != prev);
    if let (false, true, Some(keyframe)) = (is_base, refs == here, keyframe) {
        // The keyframe as it is now: whole, or a delta against a whole root (else it is no
        // keyframe any more, and `prev` starts anew).
        let run: Option<KeyframeRow> = sqlx::query_as(
            "SELECT k.codec, k.body, k.base_hash, r.codec, r.body FROM contents k \
                 LEFT JOIN contents r ON r.hash = k.base_hash \
                 WHERE k.hash = ? AND (k.base_hash IS NULL OR r.codec <> ?)",
        )
        .bind(&keyframe)
        .bind(i64::from(codec::DELTA))
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
                return Ok(());
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
            }
        }
    }
    sqlx::query(AssertSqlSafe(format!(
        "UPDATE {table} SET keyframe_hash = ? WHERE id = ?"
    )))
    .bind(prev)
    .bind(series_id)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// What [`append_in`] reads before it writes, in one statement: the new value as stored (its
/// codec and body's length; none when it is new), whether the monitor's history names it, what
/// the owner's history takes, and the series' previous value (its hash and when it last
/// changed).
#[derive(sqlx::FromRow)]
struct Prior {
    codec: Option<i64>,
    size: Option<i64>,
    named: bool,
    used: Option<i64>,
    previous: Option<Vec<u8>>,
    previous_changed: Option<i64>,
    version: Option<i64>,
    token: Option<i64>,
    owner: Option<String>,
    full: Option<bool>,
}

/// [`Prior`] of a series whose rows `{series}` selects (`?3`: its id), of monitor `?1`, for a
/// value hashed `?2` checked at `?4`; `{claim}`: the claim columns.
const PRIOR: &str = "SELECT c.codec, length(c.body) AS size, \
     EXISTS (SELECT 1 FROM task_contents n WHERE n.task_id = t.id AND n.hash = ?2 \
             AND n.refs > 0) AS named, \
     (SELECT u.stored_bytes FROM users u WHERE u.id = t.user_id) AS used, \
     p.content_hash AS previous, p.changed_at AS previous_changed, {claim} \
     FROM tasks t LEFT JOIN contents c ON c.hash = ?2 \
     LEFT JOIN entries p ON p.id = (SELECT id FROM entries WHERE {series} \
         AND content_hash IS NOT NULL AND (checked_at, id) < (?4, '~') \
         ORDER BY checked_at DESC, id DESC LIMIT 1) \
     WHERE t.id = ?1";

/// [`PRIOR`] of a monitor's own series, with its claim (`?5`: the entries the retention keeps).
static PRIOR_OWN: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    PRIOR
        .replace("{series}", "task_id = ?3 AND page_id IS NULL")
        .replace(
            "{claim}",
            "t.updated_at AS version, t.lease_token AS token, t.user_id AS owner, \
             t.entry_count + 1 > ?5 OR EXISTS (SELECT 1 FROM pages \
             WHERE task_id = t.id AND entry_count + 1 > ?5) AS full",
        )
});

/// [`PRIOR`] of a page's series, without a claim.
static PRIOR_PAGE: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    PRIOR.replace("{series}", "page_id = ?3").replace(
        "{claim}",
        "NULL AS version, NULL AS token, NULL AS owner, NULL AS full",
    )
});

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
    // A page's NUL characters are stored as PostgreSQL stores them: the same page has the same
    // URL and name on both backends, and a notification of it finds it by that URL.
    let (url, name) = (storable(Some(url)), storable(name.as_deref()));
    let found: Option<(String,)> =
        sqlx::query_as("SELECT id FROM pages WHERE task_id = ? AND url = ?")
            .bind(task)
            .bind(&url)
            .fetch_optional(&mut **tx)
            .await?;
    let page = match found {
        Some((page,)) => {
            if name.is_some() {
                sqlx::query("UPDATE pages SET name = ? WHERE id = ?")
                    .bind(&name)
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
                .bind(&url)
                .bind(&name)
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

crate::store::both::history::history_store!(SqliteStore, Sqlite, small_int: i64, {
    /// Deletes up to `limit` values that no entry names any more (their entries were pruned, or
    /// their monitor deleted) in one transaction; returns how many went.
    async fn collect_garbage(&self, limit: u32) -> Result<u64, StoreError> {
        let mut tx = self.write().await?;
        let mut deleted = 0;
        // A base is kept while a delta names it; the deltas collected in one round may leave
        // their bases unnamed for the next, so the batch fills while garbage is left.
        while deleted < u64::from(limit) {
            let round = sqlx::query(
                "DELETE FROM contents WHERE hash IN (SELECT c.hash FROM contents c \
                 WHERE c.refs = 0 AND NOT EXISTS \
                 (SELECT 1 FROM contents d WHERE d.base_hash = c.hash) LIMIT ?)",
            )
            .bind(i64::try_from(u64::from(limit) - deleted).unwrap_or(i64::MAX))
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if round == 0 {
                break;
            }
            deleted += round;
        }
        tx.commit().await?;
        Ok(deleted)
    }
});

/// One entry of a page as the page's JSON holds it: id, check time, change time, codec, the
/// body as text (plain) or in hex (packed), the base's hash in hex, the error, whether the
/// check signed in again.
type PageRow = (
    i64,
    i64,
    Option<i64>,
    Option<i64>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    i64,
);

/// The bytes `hex` spells (SQLite's `hex()`: upper case, two digits a byte).
fn unhex(hex: &str) -> Option<Vec<u8>> {
    let digit = |d: u8| (d as char).to_digit(16).map(|d| d as u8);
    hex.as_bytes()
        .chunks(2)
        .map(|pair| match pair {
            [high, low] => Some(digit(*high)? << 4 | digit(*low)?),
            _ => None,
        })
        .collect()
}

/// The entries of a monitor's own series (`?1`) when the monitor is the user's (`?6`).
const OWN_SERIES: &str = "e.task_id = ?1 AND e.page_id IS NULL \
     AND EXISTS (SELECT 1 FROM tasks WHERE id = ?1 AND user_id = ?6)";
/// The entries of a page's series (`?1`), whose owner the caller checked (`?6` unused).
const PAGE_SERIES: &str = "e.page_id = ?1 AND ?6 IS NOT NULL";

impl SqliteStore {
    /// One page of the series `filter` names ([`OWN_SERIES`], [`PAGE_SERIES`]) with their
    /// values as stored, newest first. The page comes as one row of JSON: sqlx hands each row
    /// over from its SQLite thread on its own (a wake-up and a context switch a row), which
    /// was most of a page's cost.
    async fn page_rows(
        &self,
        filter: &str,
        user: &str,
        id: &str,
        page: &TimePage,
    ) -> Result<Vec<EntryRow>, StoreError> {
        let (before_at, before_id) = before_key(page);
        let mut reader = self.lent_readers.get().await?;
        let (json,): (Option<String>,) = sqlx::query_as(AssertSqlSafe(format!(
            "SELECT json_group_array(json_array(id, checked_at, changed_at, codec, \
             CASE WHEN codec = {plain} THEN CAST(body AS TEXT) END, \
             CASE WHEN codec <> {plain} THEN hex(body) END, \
             CASE WHEN base_hash IS NOT NULL THEN hex(base_hash) END, error, logged_in)) \
             FROM (SELECT e.id, e.checked_at, e.changed_at, c.codec, c.body, c.base_hash, \
             e.error, e.logged_in FROM entries e LEFT JOIN contents c ON c.hash = e.content_hash \
             WHERE {filter} AND e.checked_at >= ?2 AND (e.checked_at, e.id) < (?3, ?4) \
             ORDER BY e.checked_at DESC, e.id DESC LIMIT ?5)",
            plain = codec::PLAIN
        )))
        .bind(id)
        .bind(page.from.unwrap_or(Millis::MIN))
        .bind(before_at)
        .bind(before_id)
        .bind(i64::from(page.limit) + 1)
        .bind(user)
        .fetch_one(reader.conn()?)
        .await?;
        drop(reader);
        let Some(json) = json else {
            return Ok(Vec::new());
        };
        let unreadable = |err: String| StoreError::Backend(format!("history page: {err}"));
        let found: Vec<PageRow> =
            serde_json::from_str(&json).map_err(|e| unreadable(e.to_string()))?;
        let mut rows = found
            .into_iter()
            .map(
                |(id, checked_at, changed_at, codec, text, packed, base, error, logged_in)| {
                    let body = match (text, packed) {
                        (Some(text), _) => Some(text.into_bytes()),
                        (None, Some(packed)) => Some(
                            unhex(&packed).ok_or_else(|| unreadable("a body is not hex".into()))?,
                        ),
                        (None, None) => None,
                    };
                    let base_hash = match base {
                        Some(base) => Some(
                            unhex(&base).ok_or_else(|| unreadable("a base is not hex".into()))?,
                        ),
                        None => None,
                    };
                    Ok(EntryRow {
                        id,
                        checked_at,
                        changed_at,
                        codec,
                        body,
                        base_hash,
                        error,
                        logged_in: logged_in != 0,
                    })
                },
            )
            .collect::<Result<Vec<EntryRow>, StoreError>>()?;
        // An aggregate's order is the engine's choice: the page's is set here.
        rows.sort_unstable_by_key(|row| std::cmp::Reverse((row.checked_at, row.id)));
        Ok(rows)
    }

    /// The stored values `hashes`, each with its codec, body and base.
    async fn contents_in(&self, hashes: &[Vec<u8>]) -> Result<Vec<StoredRow>, StoreError> {
        let marks = vec!["?"; hashes.len()].join(", ");
        let sql =
            format!("SELECT hash, codec, body, base_hash FROM contents WHERE hash IN ({marks})");
        let mut query = sqlx::query_as::<_, StoredRow>(AssertSqlSafe(sql));
        for hash in hashes {
            query = query.bind(hash);
        }
        Ok(query.fetch_all(&self.reader).await?)
    }
}
