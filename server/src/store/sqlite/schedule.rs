//! The scheduler's state: claiming due monitors under a lease, and setting the next check.

use super::SqliteStore;
use super::tasks::{TaskRow, monitor};
use crate::store::{DueCheck, Millis, StoreError};

#[derive(sqlx::FromRow)]
struct DueRow {
    #[sqlx(flatten)]
    task: TaskRow,
    next_check_at: i64,
    updated_at: i64,
}

pub(super) async fn claim_due(
    store: &SqliteStore,
    now: Millis,
    lease_until: Millis,
    limit: u32,
) -> Result<Vec<DueCheck>, StoreError> {
    let mut tx = store.write().await?;
    let rows: Vec<DueRow> = sqlx::query_as(
        "SELECT t.id, t.folder_id, t.definition, e.checked_at, e.changed_at, c.codec, c.body, \
         e.error, t.next_check_at, t.updated_at \
         FROM tasks t \
         LEFT JOIN entries e ON e.id = t.latest_entry_id \
         LEFT JOIN contents c ON c.hash = e.content_hash \
         WHERE t.next_check_at <= ? AND (t.lease_until IS NULL OR t.lease_until < ?) \
         ORDER BY t.next_check_at LIMIT ?",
    )
    .bind(now)
    .bind(now)
    .bind(i64::from(limit))
    .fetch_all(&mut *tx)
    .await?;
    let mut claimed = Vec::with_capacity(rows.len());
    for row in rows {
        let (due_at, version) = (row.next_check_at, row.updated_at);
        let monitor = monitor(row.task)?;
        sqlx::query("UPDATE tasks SET lease_until = ? WHERE id = ?")
            .bind(lease_until)
            .bind(&monitor.id)
            .execute(&mut *tx)
            .await?;
        claimed.push(DueCheck {
            monitor,
            due_at,
            version,
        });
    }
    tx.commit().await?;
    Ok(claimed)
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
