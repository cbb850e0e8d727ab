//! The scheduler's state: claiming due monitors under a lease, and setting the next check.

use super::{SqliteStore, history, notifications};
use crate::store::{CheckRecord, DueCheck, Millis, Series, StoreError};
use wachet::Monitor;

#[derive(sqlx::FromRow)]
struct DueRow {
    id: String,
    folder_id: Option<String>,
    definition: String,
    next_check_at: i64,
    updated_at: i64,
}

/// How long a monitor whose stored definition cannot be read waits before it is tried again.
const UNREADABLE_RETRY: Millis = 3_600_000;

pub(super) async fn claim_due(
    store: &SqliteStore,
    now: Millis,
    lease_until: Millis,
    limit: u32,
    browser: bool,
) -> Result<Vec<DueCheck>, StoreError> {
    let mut tx = store.write().await?;
    // The definition only: a check needs no latest data, and this runs in the writer's lock.
    let rows: Vec<DueRow> = sqlx::query_as(
        "SELECT id, folder_id, definition, next_check_at, updated_at FROM tasks \
         WHERE dynamic = ? AND next_check_at <= ? AND (lease_until IS NULL OR lease_until < ?) \
         ORDER BY next_check_at LIMIT ?",
    )
    .bind(super::flag(browser))
    .bind(now)
    .bind(now)
    .bind(i64::from(limit))
    .fetch_all(&mut *tx)
    .await?;
    let mut claimed = Vec::with_capacity(rows.len());
    for row in rows {
        let mut monitor: Monitor = match serde_json::from_str(&row.definition) {
            Ok(monitor) => monitor,
            Err(err) => {
                // One unreadable row must not stop every other monitor's checks.
                tracing::error!(task = %row.id, %err, "stored monitor cannot be read; skipped");
                sqlx::query("UPDATE tasks SET next_check_at = ? WHERE id = ?")
                    .bind(now + UNREADABLE_RETRY)
                    .bind(&row.id)
                    .execute(&mut *tx)
                    .await?;
                continue;
            }
        };
        sqlx::query("UPDATE tasks SET lease_until = ? WHERE id = ?")
            .bind(lease_until)
            .bind(&row.id)
            .execute(&mut *tx)
            .await?;
        monitor.id = Some(row.id);
        monitor.folder_id = row.folder_id;
        claimed.push(DueCheck {
            monitor,
            due_at: row.next_check_at,
            version: row.updated_at,
        });
    }
    tx.commit().await?;
    Ok(claimed)
}

pub(super) async fn renew_lease(
    store: &SqliteStore,
    task: &str,
    lease_until: Millis,
) -> Result<(), StoreError> {
    sqlx::query("UPDATE tasks SET lease_until = ? WHERE id = ? AND lease_until IS NOT NULL")
        .bind(lease_until)
        .bind(task)
        .execute(&store.writer)
        .await?;
    Ok(())
}

pub(super) async fn finish_check(
    store: &SqliteStore,
    task: &str,
    version: Millis,
    next_check_at: Millis,
) -> Result<(), StoreError> {
    // An update during the check set its own next check (at once) and version; keep it.
    sqlx::query(
        "UPDATE tasks SET lease_until = NULL, \
         next_check_at = CASE WHEN updated_at = ? THEN ? ELSE next_check_at END \
         WHERE id = ?",
    )
    .bind(version)
    .bind(next_check_at)
    .bind(task)
    .execute(&store.writer)
    .await?;
    Ok(())
}

pub(super) async fn record_check(
    store: &SqliteStore,
    record: &CheckRecord,
) -> Result<bool, StoreError> {
    let mut tx = store.write().await?;
    let version: Option<(i64,)> = sqlx::query_as("SELECT updated_at FROM tasks WHERE id = ?")
        .bind(&record.task)
        .fetch_optional(&mut *tx)
        .await?;
    let Some((version,)) = version else {
        return Err(StoreError::NotFound);
    };
    if version != record.version {
        // Edited during the check: the edit scheduled its own first check.
        sqlx::query("UPDATE tasks SET lease_until = NULL WHERE id = ?")
            .bind(&record.task)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        return Ok(false);
    }
    // Pages first: a page's notification names the page, which must exist by then.
    for (url, name, data) in &record.pages {
        let series = Series::Page {
            task_id: record.task.clone(),
            url: url.clone(),
            name: name.clone(),
        };
        history::append_in(&mut tx, &series, data).await?;
    }
    history::append_in(&mut tx, &Series::Task(record.task.clone()), &record.own).await?;
    for notification in &record.notifications {
        notifications::insert_in(&mut tx, notification).await?;
    }
    sqlx::query("UPDATE tasks SET lease_until = NULL, next_check_at = ? WHERE id = ?")
        .bind(record.next_check_at)
        .bind(&record.task)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(true)
}
