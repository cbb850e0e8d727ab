//! [`FolderStore`](crate::store::FolderStore)'s writes for both backends: folders saved,
//! deleted and moved (each in a write of the user's tree, so a move into a folder's own
//! subtree is refused against the tree as it is), and the endpoints set on a folder. What the
//! cache forgets after each is [`invalidate`](crate::store::shape::invalidate)'s. Listing a
//! folder, the hottest read, is each backend's own (SQLite reads a page in one statement of
//! JSON and caches it; PostgreSQL reads it in a few), and so is reading folders' endpoints.

/// Defines `is_within` and implements `FolderStore` for `$store` on `$db` with the methods
/// given in braces (`list_folder`, `folder_endpoints`). The calling module brings
/// `saved_folder(tx, id)`: the folder `id` as written in `tx`, with its subtree's counts.
macro_rules! folder_store {
    ($store:ty, $db:ty, { $($own:tt)* }) => {
        /// Whether `folder` is `ancestor` or lies below it.
        async fn is_within(
            tx: &mut ::sqlx::Transaction<'_, $db>,
            folder: &str,
            ancestor: &str,
        ) -> Result<bool, StoreError> {
            let found: Option<(String,)> = ::sqlx::query_as(
                "WITH RECURSIVE up (id, parent_id) AS ( \
                     SELECT id, parent_id FROM folders WHERE id = $1 \
                     UNION ALL \
                     SELECT f.id, f.parent_id FROM folders f JOIN up ON f.id = up.parent_id) \
                 SELECT id FROM up WHERE id = $2 LIMIT 1",
            )
            .bind(folder)
            .bind(ancestor)
            .fetch_optional(&mut **tx)
            .await?;
            Ok(found.is_some())
        }

        impl $store {
            /// [`FolderStore::save_folder`] once; run again on a conflict.
            async fn try_save_folder(
                &self,
                user: &str,
                folder: &::wachet::model::Folder,
            ) -> Result<::wachet::model::Folder, StoreError> {
                $crate::store::shape::refuse_nul("name", folder.name.as_deref())?;
                let mut tx = self.write_for(user).await?;
                if let Some(parent) = folder.parent_id.as_deref() {
                    check_folder(&mut tx, user, parent, "parentId").await?;
                }
                let key = $crate::store::shape::sort_key(folder.name.as_deref());
                let id = match folder.id.as_deref() {
                    None => {
                        let id = $crate::store::new_id();
                        ::sqlx::query(
                            "INSERT INTO folders (id, user_id, parent_id, name, sort_key, \
                             created_at) VALUES ($1, $2, $3, $4, $5, $6)",
                        )
                        .bind(&id)
                        .bind(user)
                        .bind(&folder.parent_id)
                        .bind(&folder.name)
                        .bind(&key)
                        .bind($crate::store::now_millis())
                        .execute(&mut *tx)
                        .await?;
                        id
                    }
                    Some(id) => {
                        if !is_id(id) {
                            return Err(StoreError::NotFound);
                        }
                        if let Some(parent) = folder.parent_id.as_deref()
                            && is_within(&mut tx, parent, id).await?
                        {
                            return Err(StoreError::invalid(
                                "parentId",
                                "a folder cannot move into itself or its own subfolders",
                            ));
                        }
                        // As for monitors, a null parent keeps the folder where it is; moves are
                        // explicit.
                        let updated = ::sqlx::query(
                            "UPDATE folders SET parent_id = COALESCE($1, parent_id), name = $2, \
                             sort_key = $3 WHERE id = $4 AND user_id = $5",
                        )
                        .bind(&folder.parent_id)
                        .bind(&folder.name)
                        .bind(&key)
                        .bind(id)
                        .bind(user)
                        .execute(&mut *tx)
                        .await?;
                        if updated.rows_affected() == 0 {
                            return Err(StoreError::NotFound);
                        }
                        id.to_string()
                    }
                };
                let saved = saved_folder(&mut tx, &id).await?;
                tx.commit().await?;
                Ok(saved)
            }

            /// [`FolderStore::move_items`] once; run again on a conflict.
            async fn try_move_items(
                &self,
                user: &str,
                request: &::wachet::model::MoveRequest,
            ) -> Result<(), StoreError> {
                let mut tx = self.write_for(user).await?;
                let target = request.folder_id.as_deref();
                if let Some(target) = target {
                    check_folder(&mut tx, user, target, "folderId")
                        .await
                        .map_err(|err| match err {
                            StoreError::Invalid { .. } => StoreError::NotFound,
                            other => other,
                        })?;
                }
                for id in request.task_ids.iter().flatten() {
                    if !is_id(id) {
                        return Err(StoreError::NotFound);
                    }
                    let moved = ::sqlx::query(
                        "UPDATE tasks SET folder_id = $1 WHERE id = $2 AND user_id = $3",
                    )
                    .bind(target)
                    .bind(id)
                    .bind(user)
                    .execute(&mut *tx)
                    .await?;
                    if moved.rows_affected() == 0 {
                        return Err(StoreError::NotFound);
                    }
                }
                for id in request.folder_ids.iter().flatten() {
                    if !is_id(id) {
                        return Err(StoreError::NotFound);
                    }
                    let owned: Option<(String,)> =
                        ::sqlx::query_as("SELECT id FROM folders WHERE id = $1 AND user_id = $2")
                            .bind(id)
                            .bind(user)
                            .fetch_optional(&mut *tx)
                            .await?;
                    if owned.is_none() {
                        return Err(StoreError::NotFound);
                    }
                    if let Some(target) = target
                        && is_within(&mut tx, target, id).await?
                    {
                        return Err(StoreError::invalid(
                            "folderIds",
                            format!("folder {id} cannot move into itself or its own subfolders"),
                        ));
                    }
                    ::sqlx::query("UPDATE folders SET parent_id = $1 WHERE id = $2")
                        .bind(target)
                        .bind(id)
                        .execute(&mut *tx)
                        .await?;
                }
                tx.commit().await?;
                // Moved monitors have another folderId.
                invalidate::tasks_moved(
                    &self.cache,
                    request.task_ids.iter().flatten().map(String::as_str),
                );
                Ok(())
            }
        }

        #[::async_trait::async_trait]
        impl FolderStore for $store {
            async fn save_folder(
                &self,
                user: &str,
                folder: &::wachet::model::Folder,
            ) -> Result<::wachet::model::Folder, StoreError> {
                let saved =
                    $crate::store::both::retrying(|| self.try_save_folder(user, folder)).await?;
                invalidate::folders_changed(&self.cache);
                Ok(saved)
            }

            async fn delete_folder(&self, user: &str, id: &str) -> Result<(), StoreError> {
                // Subfolders, their monitors, pages, history and notifications cascade from
                // this row.
                super::delete_owned(self, "folders", user, id).await?;
                // Any cached monitor may have gone with it; folder deletes are rare.
                invalidate::folder_deleted(&self.cache);
                Ok(())
            }

            async fn move_items(
                &self,
                user: &str,
                request: &::wachet::model::MoveRequest,
            ) -> Result<(), StoreError> {
                $crate::store::both::retrying(|| self.try_move_items(user, request)).await
            }

            async fn set_folder_endpoints(
                &self,
                user: &str,
                id: &str,
                endpoints: &[::wachet::model::NotificationEndpoint],
            ) -> Result<(), StoreError> {
                let stored = match endpoints.is_empty() {
                    true => None,
                    false => Some($crate::store::shape::users::endpoints_json(endpoints)?),
                };
                let updated = ::sqlx::query(
                    "UPDATE folders SET notification_endpoints = $1 WHERE id = $2 AND user_id = $3",
                )
                .bind(stored)
                .bind(id)
                .bind(user)
                .execute(self.writes())
                .await?;
                if updated.rows_affected() == 0 {
                    return Err(StoreError::NotFound);
                }
                Ok(())
            }

            $($own)*
        }
    };
}

pub(crate) use folder_store;
