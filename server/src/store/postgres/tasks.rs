//! [`TaskStore`] on PostgreSQL: monitors' definitions, search and the pages of Portal monitors.
//! A monitor read by id is cached; the writes here, and those of other resources that change a
//! monitor, invalidate it. Its schedule and latest data are the schedule's and history's
//! tables, reached through their modules.

use super::{PgStore, not_yet};
use crate::store::{StoreError, TaskStore};
use async_trait::async_trait;
use wachet::model::{ClientPage, Monitor};
#[async_trait]
impl TaskStore for PgStore {
    async fn create_task(&self, _user: &str, _monitor: &Monitor) -> Result<Monitor, StoreError> {
        Err(not_yet("create_task"))
    }

    async fn update_task(&self, _user: &str, _monitor: &Monitor) -> Result<Monitor, StoreError> {
        Err(not_yet("update_task"))
    }

    async fn task(&self, _user: &str, _id: &str) -> Result<Monitor, StoreError> {
        Err(not_yet("task"))
    }

    async fn delete_task(&self, _user: &str, _id: &str) -> Result<(), StoreError> {
        Err(not_yet("delete_task"))
    }

    async fn search_tasks(
        &self,
        _user: &str,
        _terms: &[String],
        _limit: u32,
    ) -> Result<Vec<Monitor>, StoreError> {
        Err(not_yet("search_tasks"))
    }

    async fn task_pages(&self, _user: &str, _id: &str) -> Result<Vec<ClientPage>, StoreError> {
        Err(not_yet("task_pages"))
    }
}
