//! [`NotificationStore`](crate::store::NotificationStore) for both backends: raised
//! notifications, written in a check's transaction (`insert_in`, defined beside the store for
//! its `schedule.rs`) with their deliveries, and read back by their owner. A notification of a
//! crawled page names the page's row in the history's `pages` table.

/// Implements `NotificationStore` for `$store` on `$db` and defines `insert_in` in the calling
/// module; `small_int` is the width of the schema's small integer columns (a notification's
/// kinds).
macro_rules! notification_store {
    ($store:ty, $db:ty, small_int: $int:ty $(,)?) => {
        use $crate::store::shape::notifications::{content, json_columns, listed, row_columns};
        use $crate::store::shape::{before_key, storable, time};
        use $crate::store::{
            Millis, NewNotification, NotificationStore, StoreError, TimeKey, TimePage, is_id,
            new_id, now_millis,
        };
        use ::sqlx::AssertSqlSafe;
        use ::wachet::model::{ClientAlertContentResponse, ClientNotification};

        /// Stores a raised notification and its deliveries within the caller's transaction;
        /// returns its id. What came from a page is stored with its NUL characters replaced
        /// ([`storable`]), as PostgreSQL's text requires, on both backends alike.
        pub(super) async fn insert_in(
            tx: &mut ::sqlx::Transaction<'_, $db>,
            n: &NewNotification,
        ) -> Result<String, StoreError> {
            let (alert, explanation) = json_columns(n)?;
            let id = new_id();
            // Only a page's notification reads the pages (a monitor's own has none).
            let page = if n.page_url.is_some() {
                "(SELECT p.id FROM pages p WHERE p.task_id = t.id AND p.url = $2)"
            } else {
                "CAST($2 AS TEXT)"
            };
            let inserted = ::sqlx::query(AssertSqlSafe(format!(
                "INSERT INTO notifications (id, user_id, task_id, page_id, job_type, alert_type, \
                 alert, created_at, current_value, comparand, error, task_name, url, \
                 synthetic_expression, html, explanation) \
                 SELECT $1, t.user_id, t.id, {page}, \
                        $3, $4, $5, $6, $7, $8, $9, t.name, $10, $11, $12, $13 \
                 FROM tasks t WHERE t.id = $14"
            )))
            .bind(&id)
            .bind(storable(n.page_url.as_deref()))
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

        #[::async_trait::async_trait]
        impl NotificationStore for $store {
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
                    "task_id = $1"
                } else {
                    "user_id = $1"
                };
                let (before_at, before_id) = before_key(page);
                let rows: Vec<$crate::store::shape::notifications::Row<$int>> =
                    ::sqlx::query_as(AssertSqlSafe(format!(
                        "SELECT {columns} FROM notifications \
                         WHERE {scope} AND created_at >= $2 AND (created_at, id) < ($3, $4) \
                         ORDER BY created_at DESC, id DESC LIMIT $5"
                    )))
                    .bind(task.unwrap_or(user))
                    .bind(page.from.unwrap_or(Millis::MIN))
                    .bind(before_at)
                    .bind(before_id)
                    .bind(i64::from(page.limit) + 1)
                    .fetch_all(self.reads())
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
                let row: Option<$crate::store::shape::notifications::ContentRow<$int>> =
                    ::sqlx::query_as(
                        "SELECT job_type, synthetic_expression, url, task_name, html, created_at \
                         FROM notifications WHERE id = $1 AND user_id = $2",
                    )
                    .bind(id)
                    .bind(user)
                    .fetch_optional(self.reads())
                    .await?;
                content(row.ok_or(StoreError::NotFound)?)
            }
        }
    };
}

pub(crate) use notification_store;
