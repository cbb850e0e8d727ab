//! [`FolderStore`] on PostgreSQL: the folder tree, its listings with counts over each subtree,
//! and moves of folders and monitors.

use super::{PgStore, not_yet};
use crate::store::{FolderKey, FolderListing, FolderStore, StoreError};
use async_trait::async_trait;
use wachet::model::{Folder, MoveRequest};
#[async_trait]
impl FolderStore for PgStore {
    async fn save_folder(&self, _user: &str, _folder: &Folder) -> Result<Folder, StoreError> {
        Err(not_yet("save_folder"))
    }

    async fn delete_folder(&self, _user: &str, _id: &str) -> Result<(), StoreError> {
        Err(not_yet("delete_folder"))
    }

    async fn list_folder(
        &self,
        _user: &str,
        _folder: Option<&str>,
        _after: Option<&FolderKey>,
        _limit: u32,
    ) -> Result<FolderListing, StoreError> {
        Err(not_yet("list_folder"))
    }

    async fn move_items(&self, _user: &str, _request: &MoveRequest) -> Result<(), StoreError> {
        Err(not_yet("move_items"))
    }
}
