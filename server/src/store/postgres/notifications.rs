//! [`NotificationStore`] on PostgreSQL: raised notifications, written in a check's transaction
//! ([`insert_in`], from `schedule.rs`) with their deliveries, and read back by their owner.
//! A notification of a crawled page names the page's row in the history's `pages` table.

use super::{PgStore, before_key, storable, time};
use crate::store::{
    Millis, NewNotification, NotificationStore, StoreError, TimeKey, TimePage, is_id, new_id,
    now_millis,
};
use async_trait::async_trait;
use sqlx::AssertSqlSafe;
use wachet::model::{AlertType, ClientAlertContentResponse, ClientNotification, JobType};

/// Stores a raised notification and its deliveries within the caller's transaction; returns
/// its id.
// A check stores its notifications through it too, once schedule.rs records checks.
#[cfg_attr(not(any(test, feature = "testing")), allow(dead_code))]
pub(super) async fn insert_in(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    n: &NewNotification,
) -> Result<String, StoreError> {
    let alert =
        serde_json::to_string(&n.alert).map_err(|err| StoreError::Backend(err.to_string()))?;
    let explanation = n
        .explanation
        .as_ref()
        .map(serde_json::to_string)
        .transpose()
        .map_err(|err| StoreError::Backend(err.to_string()))?;
    let id = new_id();
    // Only a page's notification reads the pages (a monitor's own has none).
    let page = if n.page_url.is_some() {
        "(SELECT p.id FROM pages p WHERE p.task_id = t.id AND p.url = $2)"
    } else {
        "CAST($2 AS TEXT)"
    };
    let inserted = sqlx::query(AssertSqlSafe(format!(
        "INSERT INTO notifications (id, user_id, task_id, page_id, job_type, alert_type, alert, \
         created_at, current_value, comparand, error, task_name, url, synthetic_expression, html, \
         explanation) \
         SELECT $1, t.user_id, t.id, {page}, \
                $3, $4, $5, $6, $7, $8, $9, t.name, $10, $11, $12, $13 \
         FROM tasks t WHERE t.id = $14"
    )))
    .bind(&id)
    .bind(super::storable(n.page_url.as_deref()))
    .bind(n.job_type.code())
    .bind(n.alert.kind.code())
    .bind(alert)
    .bind(n.created_at)
    .bind(storable(n.current.as_deref()))
    .bind(storable(n.comparand.as_deref()))
    .bind(storable(n.error.as_deref()))
    .bind(storable(n.url.as_deref()))
    .bind(storable(Some(&n.synthetic_expression)))
    .bind(storable(Some(&n.html)))
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

#[derive(sqlx::FromRow)]
struct Row {
    id: String,
    alert_type: i32,
    current_value: Option<String>,
    comparand: Option<String>,
    html: Option<String>,
    error: Option<String>,
    created_at: i64,
    task_id: String,
    task_name: Option<String>,
    url: Option<String>,
}

fn alert_type(code: i64) -> Result<AlertType, StoreError> {
    AlertType::from_code(code)
        .ok_or_else(|| StoreError::Backend(format!("stored alert type {code}")))
}

#[derive(sqlx::FromRow)]
struct ContentRow {
    job_type: i32,
    synthetic_expression: Option<String>,
    url: Option<String>,
    task_name: Option<String>,
    html: Option<String>,
    created_at: i64,
}

#[async_trait]
impl NotificationStore for PgStore {
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
        let html = if with_html { "html" } else { "NULL AS html" };
        let scope = if task.is_some() {
            "task_id = $1"
        } else {
            "user_id = $1"
        };
        let (before_at, before_id) = before_key(page);
        let rows: Vec<Row> = sqlx::query_as(AssertSqlSafe(format!(
            "SELECT id, alert_type, current_value, comparand, {html}, error, created_at, task_id, \
             task_name, url FROM notifications \
             WHERE {scope} AND created_at >= $2 AND (created_at, id) < ($3, $4) \
             ORDER BY created_at DESC, id DESC LIMIT $5"
        )))
        .bind(task.unwrap_or(user))
        .bind(page.from.unwrap_or(Millis::MIN))
        .bind(before_at)
        .bind(before_id)
        .bind(i64::from(page.limit) + 1)
        .fetch_all(&self.pool)
        .await?;
        let server_time = time(now_millis());
        rows.into_iter()
            .map(|row| {
                let key = TimeKey {
                    at: row.created_at,
                    id: row.id.clone(),
                };
                let notification = ClientNotification {
                    id: Some(row.id),
                    kind: alert_type(i64::from(row.alert_type))?,
                    current: row.current_value,
                    comparand: row.comparand,
                    html: row.html,
                    error: row.error,
                    timestamp: time(row.created_at),
                    server_time,
                    task_id: Some(row.task_id),
                    task_name: row.task_name,
                    url: row.url,
                };
                Ok((key, notification))
            })
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
                 FROM notifications WHERE id = $1 AND user_id = $2",
        )
        .bind(id)
        .bind(user)
        .fetch_optional(&self.pool)
        .await?;
        let row = row.ok_or(StoreError::NotFound)?;
        Ok(ClientAlertContentResponse {
            job_type: JobType::from_code(i64::from(row.job_type))
                .ok_or_else(|| StoreError::Backend(format!("stored job type {}", row.job_type)))?,
            synthetic_expression: row.synthetic_expression,
            url: row.url,
            name: row.task_name,
            html: row.html,
            timestamp_utc: time(row.created_at),
        })
    }
}
