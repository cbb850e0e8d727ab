//! [`Seed`] on PostgreSQL: the transactions of a check's own writes ([`history::append_in`],
//! [`notifications::insert_in`]).

use super::{PgStore, history, notifications};
use crate::store::testing::Seed;
use crate::store::{NewNotification, Series, StoreError};
use async_trait::async_trait;
use wachet::model::ClientData;

#[async_trait]
impl Seed for PgStore {
    async fn append_entry(&self, series: &Series, data: &ClientData) -> Result<String, StoreError> {
        let (Series::Task(task) | Series::Page { task_id: task, .. }) = series;
        let mut tx = self.pool.begin().await?;
        let id = history::append_in(&mut tx, series, data, self.quotas.stored_bytes).await?;
        tx.commit().await?;
        // The monitor's latest data may be the new entry.
        crate::store::shape::invalidate::checked(&self.cache, task);
        self.prune(task).await;
        Ok(id)
    }

    async fn insert_notification(&self, n: &NewNotification) -> Result<String, StoreError> {
        let mut tx = self.pool.begin().await?;
        let id = notifications::insert_in(&mut tx, n).await?;
        tx.commit().await?;
        Ok(id)
    }
}
