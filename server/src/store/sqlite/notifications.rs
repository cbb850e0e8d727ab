//! [`NotificationStore`] on SQLite: raised notifications, written in a check's transaction
//! ([`insert_in`], from `schedule.rs`) with their deliveries, and read back by their owner.

use super::{SqliteStore, before_key, time};
use crate::store::shape::notifications::{content, json_columns, listed, row_columns};
use crate::store::{
    Millis, NewNotification, NotificationStore, StoreError, TimeKey, TimePage, is_id, new_id,
    now_millis,
};
use async_trait::async_trait;
use sqlx::AssertSqlSafe;
use wachet::model::{ClientAlertContentResponse, ClientNotification};

/// Stores a raised notification and its deliveries within the caller's transaction; returns
/// its id.
pub(super) async fn insert_in(
    tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>,
    n: &NewNotification,
) -> Result<String, StoreError> {
    let (alert, explanation) = json_columns(n)?;
    let id = new_id();
    let inserted = sqlx::query(
        "INSERT INTO notifications (id, user_id, task_id, page_id, job_type, alert_type, alert, \
         created_at, current_value, comparand, error, task_name, url, synthetic_expression, html, \
         explanation) \
         SELECT ?, t.user_id, t.id, \
                (SELECT p.id FROM pages p WHERE p.task_id = t.id AND p.url = ?), \
                ?, ?, ?, ?, ?, ?, ?, t.name, ?, ?, ?, ? \
         FROM tasks t WHERE t.id = ?",
    )
    .bind(&id)
    .bind(&n.page_url)
    .bind(n.job_type.code())
    .bind(n.alert.kind.code())
    .bind(alert)
    .bind(n.created_at)
    .bind(&n.current)
    .bind(&n.comparand)
    .bind(&n.error)
    .bind(&n.url)
    .bind(&n.synthetic_expression)
    .bind(&n.html)
    .bind(explanation)
    .bind(&n.task_id)
    .execute(&mut **tx)
    .await?;
    if inserted.rows_affected() == 0 {
        return Err(StoreError::NotFound);
    }
    super::outbox::create_in(tx, &id, &n.task_id, &n.endpoints, n.created_at).await?;
    Ok(id)
}

/// A notification's rows in this schema's integer width.
type Row = crate::store::shape::notifications::Row<i64>;
type ContentRow = crate::store::shape::notifications::ContentRow<i64>;

#[async_trait]
impl NotificationStore for SqliteStore {
    async fn notifications(
        &self,
        user: &str,
        task: Option<&str>,
        page: &TimePage,
        with_html: bool,
    ) -> Result<Vec<(TimeKey, ClientNotification)>, StoreError> {
        if let Some(task) = task
            && !super::tasks::owns(self, user, task).await?
        {
            return Err(StoreError::NotFound);
        }
        let columns = row_columns(if with_html { "html" } else { "NULL AS html" });
        let scope = if task.is_some() {
            "task_id = ?"
        } else {
            "user_id = ?"
        };
        let (before_at, before_id) = before_key(page);
        let rows: Vec<Row> = sqlx::query_as(AssertSqlSafe(format!(
            "SELECT {columns} FROM notifications \
             WHERE {scope} AND created_at >= ? AND (created_at, id) < (?, ?) \
             ORDER BY created_at DESC, id DESC LIMIT ?"
        )))
        .bind(task.unwrap_or(user))
        .bind(page.from.unwrap_or(Millis::MIN))
        .bind(before_at)
        .bind(before_id)
        .bind(i64::from(page.limit) + 1)
        .fetch_all(&self.reader)
        .await?;
        let server_time = time(now_millis());
        rows.into_iter()
            .map(|row| listed(row, server_time))
            .collect()
    }

    async fn notification(
        &self,
        user: &str,
        id: &str,
    ) -> Result<ClientAlertContentResponse, StoreError> {
        if !is_id(id) {
            return Err(StoreError::NotFound);
        }
        let row: Option<ContentRow> = sqlx::query_as(
            "SELECT job_type, synthetic_expression, url, task_name, html, created_at \
                 FROM notifications WHERE id = ? AND user_id = ?",
        )
        .bind(id)
        .bind(user)
        .fetch_optional(&self.reader)
        .await?;
        content(row.ok_or(StoreError::NotFound)?)
    }
}
