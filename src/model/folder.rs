//! Folders (2.11), folder listings (2.9) and move requests (2.18).

use super::task::Monitor;
use serde::{Deserialize, Serialize};

/// A folder of monitors and subfolders (2.11).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", default)]
pub struct Folder {
    /// Omitted when creating.
    pub id: Option<String>,
    /// Display name.
    pub name: Option<String>,
    /// Parent folder (root when null).
    pub parent_id: Option<String>,
    /// Monitors in the folder and its subfolders.
    pub count: i32,
    /// Failed monitors in the folder and its subfolders.
    pub failed_count: i32,
    /// Paused monitors in the folder and its subfolders.
    pub paused_count: i32,
    /// Extension: where notifications of the monitors in this folder and its subfolders go
    /// when a monitor names none of its own (the nearest folder up the tree that names some
    /// wins; none: the user's own endpoints). Left out when creating or renaming keeps them;
    /// `[]` clears them. Left out of the JSON when the folder names none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notification_endpoints: Option<Vec<super::task::NotificationEndpoint>>,
}

/// A folder listing (ClientFolderContent, 2.9).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", default)]
pub struct ClientFolderContent {
    /// Subfolders, by name.
    pub subfolders: Option<Vec<Folder>>,
    /// Monitors, by name.
    pub tasks: Option<Vec<Monitor>>,
    /// From the root's child down to the listed folder.
    pub path: Option<Vec<Folder>>,
    /// Present when more entries exist.
    pub continuation_token: Option<String>,
}

/// Moves monitors and folders into a folder (2.18).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", default)]
pub struct MoveRequest {
    /// Monitors to move.
    pub task_ids: Option<Vec<String>>,
    /// Folders to move.
    pub folder_ids: Option<Vec<String>>,
    /// Target folder (root when null).
    pub folder_id: Option<String>,
}
