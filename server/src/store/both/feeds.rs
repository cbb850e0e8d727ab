//! [`FeedStore`](crate::store::FeedStore) for both backends: Atom feeds, one secret per feed
//! (kept as its SHA-256) for all of a user's monitors, a folder's subtree or one monitor, and
//! the changes a feed shows, read from the history.

/// Implements `FeedStore` for `$store`. `feeds_order` is the order of a user's feeds after
/// their scope (by name, byte-wise, then by id); `small_int` the width of the schema's small
/// integer columns (a value's codec).
macro_rules! feed_store {
    ($store:ty, $db:ty, feeds_order: $feeds_order:literal, small_int: $int:ty $(,)?) => {
        use $crate::store::feeds::{FEED_SELECT, FeedRow, columns, record};
        use $crate::store::shape::feeds::{ChangeRow, change};
        use $crate::store::{
            FeedChange, FeedRecord, FeedScope, FeedSecret, FeedStore, Millis, StoreError, is_id,
            new_id,
        };
        use ::sqlx::AssertSqlSafe;

        /// Whether the row `id` of `table` is the user's.
        async fn owns(
            tx: &mut <$db as ::sqlx::Database>::Connection,
            table: &'static str,
            id: &str,
            user: &str,
        ) -> Result<bool, StoreError>
        {
            let found: Option<(String,)> = ::sqlx::query_as(AssertSqlSafe(format!(
                "SELECT id FROM {table} WHERE id = $1 AND user_id = $2"
            )))
            .bind(id)
            .bind(user)
            .fetch_optional(&mut *tx)
            .await?;
            Ok(found.is_some())
        }

        #[::async_trait::async_trait]
        impl FeedStore for $store {
            async fn feeds(&self, user: &str) -> Result<Vec<FeedRecord>, StoreError> {
                let rows: Vec<FeedRow> = ::sqlx::query_as(AssertSqlSafe(format!(
                    "{FEED_SELECT} WHERE f.user_id = $1 ORDER BY f.scope <> 'all', {}",
                    $feeds_order
                )))
                .bind(user)
                .fetch_all(self.reads())
                .await?;
                rows.into_iter().map(record).collect()
            }

            async fn renew_feed(
                &self,
                user: &str,
                scope: &FeedScope,
                secret: &FeedSecret,
                now: Millis,
            ) -> Result<FeedRecord, StoreError> {
                let (kind, folder, task) = columns(scope);
                let mut tx = self.write().await?;
                let owned = match (folder, task) {
                    (Some(folder), _) => {
                        is_id(folder) && owns(&mut tx, "folders", folder, user).await?
                    }
                    (_, Some(task)) => is_id(task) && owns(&mut tx, "tasks", task, user).await?,
                    _ => true,
                };
                if !owned {
                    return Err(StoreError::NotFound);
                }
                let existing: Option<(String,)> = ::sqlx::query_as(
                    "SELECT id FROM feeds WHERE user_id = $1 AND scope = $2 \
                     AND folder_id IS NOT DISTINCT FROM $3 AND task_id IS NOT DISTINCT FROM $4",
                )
                .bind(user)
                .bind(kind)
                .bind(folder)
                .bind(task)
                .fetch_optional(&mut *tx)
                .await?;
                let id = match existing {
                    Some((id,)) => {
                        ::sqlx::query(
                            "UPDATE feeds SET secret_hash = $1, secret_sealed = $2, \
                             created_at = $3 WHERE id = $4",
                        )
                        .bind(&secret.hash)
                        .bind(&secret.sealed)
                        .bind(now)
                        .bind(&id)
                        .execute(&mut *tx)
                        .await?;
                        id
                    }
                    None => {
                        let id = new_id();
                        ::sqlx::query(
                            "INSERT INTO feeds (id, user_id, scope, folder_id, task_id, \
                             secret_hash, secret_sealed, created_at) \
                             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                        )
                        .bind(&id)
                        .bind(user)
                        .bind(kind)
                        .bind(folder)
                        .bind(task)
                        .bind(&secret.hash)
                        .bind(&secret.sealed)
                        .bind(now)
                        .execute(&mut *tx)
                        .await?;
                        id
                    }
                };
                let row: FeedRow =
                    ::sqlx::query_as(AssertSqlSafe(format!("{FEED_SELECT} WHERE f.id = $1")))
                        .bind(&id)
                        .fetch_one(&mut *tx)
                        .await?;
                tx.commit().await?;
                record(row)
            }

            async fn delete_feed(&self, user: &str, id: &str) -> Result<(), StoreError> {
                if !is_id(id) {
                    return Err(StoreError::NotFound);
                }
                let deleted = ::sqlx::query("DELETE FROM feeds WHERE id = $1 AND user_id = $2")
                    .bind(id)
                    .bind(user)
                    .execute(self.writes())
                    .await?;
                if deleted.rows_affected() == 0 {
                    return Err(StoreError::NotFound);
                }
                Ok(())
            }

            async fn feed_by_secret(
                &self,
                secret_hash: &str,
            ) -> Result<Option<FeedRecord>, StoreError> {
                let row: Option<FeedRow> = ::sqlx::query_as(AssertSqlSafe(format!(
                    "{FEED_SELECT} WHERE f.secret_hash = $1"
                )))
                .bind(secret_hash)
                .fetch_optional(self.reads())
                .await?;
                row.map(record).transpose()
            }

            async fn feed_changes(
                &self,
                user: &str,
                scope: &FeedScope,
                limit: u32,
            ) -> Result<Vec<FeedChange>, StoreError> {
                let (kind, folder, task) = columns(scope);
                let within = match kind {
                    "folder" => "t.folder_id IN (SELECT id FROM subtree)",
                    "monitor" => "t.id = $3",
                    _ => "TRUE",
                };
                // The value before a change is the latest value stored before it (failed checks
                // between carry none); a monitor's first value has none and is no change.
                let rows: Vec<ChangeRow<String, $int>> = ::sqlx::query_as(AssertSqlSafe(format!(
                    "WITH RECURSIVE subtree (id) AS ( \
                     SELECT id FROM folders WHERE id = $2 AND user_id = $1 \
                     UNION ALL SELECT f.id FROM folders f JOIN subtree s ON f.parent_id = s.id) \
                     SELECT CAST(e.id AS TEXT) AS id, e.checked_at, t.id AS task_id, t.name, \
                            t.url, c.codec, c.body, \
                            cb.codec AS base_codec, cb.body AS base_body, \
                            cr.codec AS root_codec, cr.body AS root_body, \
                            pc.codec AS prev_codec, pc.body AS prev_body, \
                            pb.codec AS prev_base_codec, pb.body AS prev_base_body, \
                            pr.codec AS prev_root_codec, pr.body AS prev_root_body \
                     FROM entries e \
                     JOIN tasks t ON t.id = e.task_id \
                     JOIN contents c ON c.hash = e.content_hash \
                     JOIN contents pc ON pc.hash = ( \
                         SELECT p.content_hash FROM entries p \
                         WHERE p.task_id = e.task_id AND p.page_id IS NULL \
                         AND p.content_hash IS NOT NULL \
                         AND (p.checked_at, p.id) < (e.checked_at, e.id) \
                         ORDER BY p.checked_at DESC, p.id DESC LIMIT 1) \
                     LEFT JOIN contents cb ON cb.hash = c.base_hash \
                     LEFT JOIN contents cr ON cr.hash = cb.base_hash \
                     LEFT JOIN contents pb ON pb.hash = pc.base_hash \
                     LEFT JOIN contents pr ON pr.hash = pb.base_hash \
                     WHERE t.user_id = $1 AND e.page_id IS NULL AND e.changed_at = e.checked_at \
                     AND pc.hash <> c.hash AND {within} \
                     ORDER BY e.checked_at DESC, e.id DESC LIMIT $4"
                )))
                .bind(user)
                .bind(folder.unwrap_or(""))
                .bind(task.unwrap_or(""))
                .bind(i64::from(limit))
                .fetch_all(self.reads())
                .await?;
                rows.into_iter().map(change).collect()
            }
        }
    };
}

pub(crate) use feed_store;
