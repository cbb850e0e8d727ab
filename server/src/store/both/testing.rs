//! [`Seed`](crate::store::testing::Seed) for both backends: a check's own writes
//! (`history::append_in`, `notifications::insert_in`), each in a transaction of its own.

/// Implements `Seed` for `$store`.
macro_rules! seed {
    ($store:ty) => {
        #[::async_trait::async_trait]
        impl $crate::store::testing::Seed for $store {
            async fn append_entry(
                &self,
                series: &$crate::store::Series,
                data: &::wachet::model::ClientData,
            ) -> Result<String, $crate::store::StoreError> {
                let ($crate::store::Series::Task(task)
                | $crate::store::Series::Page { task_id: task, .. }) = series;
                let mut tx = self.write().await?;
                let id = super::history::append_in(&mut tx, series, data, self.quotas.stored_bytes)
                    .await?;
                tx.commit().await?;
                // The monitor's latest data may be the new entry, and its failing state another.
                $crate::store::shape::invalidate::checked(&self.cache, task);
                self.listings_changed_if_folders_were();
                self.prune(task).await;
                Ok(id)
            }

            async fn insert_notification(
                &self,
                n: &$crate::store::NewNotification,
            ) -> Result<String, $crate::store::StoreError> {
                let mut tx = self.write().await?;
                let id = super::notifications::insert_in(&mut tx, n).await?;
                tx.commit().await?;
                Ok(id)
            }
        }
    };
}

pub(crate) use seed;
