//! Folders: the tree a user's monitors live in, listed a page at a time, and moves within it.

use super::StoreError;
use super::cache::SharedMonitor;
use async_trait::async_trait;
use wachet::model::{Folder, MoveRequest, NotificationEndpoint};

/// The position in a folder listing: subfolders by name, then monitors by name.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FolderKey {
    /// Whether the position is among the monitors (all subfolders were listed).
    pub in_tasks: bool,
    /// The lower-cased name of the last item listed.
    pub sort_key: String,
    /// Its id.
    pub id: String,
}

/// One page of a folder listing.
#[derive(Debug, Clone, Default)]
pub struct FolderListing {
    /// Subfolders with their recursive counts.
    pub subfolders: Vec<Folder>,
    /// Monitors with their latest data, as the store's cache shares them.
    pub tasks: Vec<SharedMonitor>,
    /// From the root's child down to the listed folder (empty for the root).
    pub path: Vec<Folder>,
    /// Where the next page starts, when more items exist.
    pub next: Option<FolderKey>,
}

/// The folders of a user.
///
/// Every method keeps to [the store's rules](super): only the user's own data, each write one
/// transaction.
#[async_trait]
pub trait FolderStore: Send + Sync + 'static {
    /// Creates (no id) or renames and re-parents (id) a folder; counts are ignored on input and
    /// filled on output. `NotFound` for an unknown id; `Invalid { field: "parentId" }` for a
    /// parent that is not the user's or lies inside the folder itself.
    async fn save_folder(&self, user: &str, folder: &Folder) -> Result<Folder, StoreError>;
    /// Deletes the folder, its subfolders and their monitors with all their history and
    /// notifications, in one transaction. `NotFound` when it is not the user's.
    async fn delete_folder(&self, user: &str, id: &str) -> Result<(), StoreError>;
    /// One page of a folder (`None`: the root): subfolders with recursive counts, then
    /// monitors, each by name, `limit` items at most. `NotFound` when the folder is not the
    /// user's.
    async fn list_folder(
        &self,
        user: &str,
        folder: Option<&str>,
        after: Option<&FolderKey>,
        limit: u32,
    ) -> Result<FolderListing, StoreError>;
    /// Moves monitors and folders into `request.folder_id` (root when null), all or nothing.
    /// `NotFound` when the target or a moved id is not the user's; `Invalid { field:
    /// "folderIds" }` when a folder would move into itself or its own subtree.
    async fn move_items(&self, user: &str, request: &MoveRequest) -> Result<(), StoreError>;
    /// Replaces the notification endpoints the folder names for its monitors (`[]`: none, so
    /// the folder above it decides). `NotFound` when it is not the user's.
    async fn set_folder_endpoints(
        &self,
        user: &str,
        id: &str,
        endpoints: &[NotificationEndpoint],
    ) -> Result<(), StoreError>;
    /// The endpoints each of the user's folders among `ids` names, for those naming some.
    async fn folder_endpoints(
        &self,
        user: &str,
        ids: &[String],
    ) -> Result<Vec<(String, Vec<NotificationEndpoint>)>, StoreError>;
}
