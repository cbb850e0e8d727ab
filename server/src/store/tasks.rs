//! Monitors ("tasks" in the API's paths and the database): their definitions, search, and the
//! pages a Portal monitor crawled.

use super::StoreError;
use async_trait::async_trait;
use wachet::model::{ClientPage, Monitor};

/// Monitors of a user.
///
/// Every method keeps to [the store's rules](super): only the user's own data, each write one
/// transaction.
#[async_trait]
pub trait TaskStore: Send + Sync + 'static {
    /// Stores a new monitor (`monitor.id`, `data` and `noiseNotice` are ignored; its noise
    /// masks are the person's: [`super::noise::on_create`]) in `monitor.folder_id` and returns it with
    /// its new id. `Invalid { field: "folderId" }` when that folder is not the user's.
    async fn create_task(&self, user: &str, monitor: &Monitor) -> Result<Monitor, StoreError> {
        let mut created = self
            .create_tasks(user, std::slice::from_ref(monitor))
            .await
            .map_err(|err| match err {
                StoreError::Invalid { field, message } => StoreError::Invalid {
                    field: field.strip_prefix("[0].").unwrap_or(&field).to_string(),
                    message,
                },
                other => other,
            })?;
        created
            .pop()
            .ok_or_else(|| StoreError::Backend("the new monitor was not returned".into()))
    }
    /// Stores new monitors as [`TaskStore::create_task`] does, all of them or none, in one
    /// transaction, and returns them in order with their new ids. The quota counts them all
    /// (`QuotaExceeded` when they would pass it together); `Invalid { field: "[i].folderId" }`
    /// when the folder of the `i`-th is not the user's.
    async fn create_tasks(
        &self,
        user: &str,
        monitors: &[Monitor],
    ) -> Result<Vec<Monitor>, StoreError>;
    /// Replaces the definition of the monitor `monitor.id`, keeping its history; a null
    /// `folder_id` keeps the folder, and its noise masks follow [`super::noise::after_edit`] (read and
    /// written in one transaction, so masks learned meanwhile are not lost); when what it
    /// watches changed, its learned masks and what learning remembered go and its next check
    /// takes quick samples again. `NotFound` when the id is not the user's; `Invalid { field:
    /// "noise" }` when the masks kept and given are too many.
    async fn update_task(&self, user: &str, monitor: &Monitor) -> Result<Monitor, StoreError>;
    /// Marks the user's monitor `id` as named by the service (after its URL): a check that
    /// reads its page's title names it after the title
    /// ([`super::ScheduleStore::name_after_page`]), until an update gives it another name,
    /// which is a person's from then on. `NotFound` when it is not the user's.
    async fn name_automatically(&self, user: &str, id: &str) -> Result<(), StoreError>;
    /// The monitor with its latest data. `NotFound` when it is not the user's.
    async fn task(&self, user: &str, id: &str) -> Result<Monitor, StoreError>;
    /// Deletes the monitor with its pages, history and notifications. `NotFound` when it is not
    /// the user's.
    async fn delete_task(&self, user: &str, id: &str) -> Result<(), StoreError>;
    /// Monitors where every term is a case-insensitive substring of the name, URL or note; by
    /// name, at most `limit`.
    async fn search_tasks(
        &self,
        user: &str,
        terms: &[String],
        limit: u32,
    ) -> Result<Vec<Monitor>, StoreError>;
    /// The pages of a monitor with their latest data, by URL. `NotFound` when it is not the
    /// user's.
    async fn task_pages(&self, user: &str, id: &str) -> Result<Vec<ClientPage>, StoreError>;
}
