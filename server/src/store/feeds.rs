//! Feeds: a user's changes as Atom, read with a secret in the URL instead of a token.

use super::{Millis, StoreError, TimeKey};
use async_trait::async_trait;

/// What a feed follows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FeedScope {
    /// Every monitor of the user.
    All,
    /// The monitors of a folder and of its subfolders.
    Folder(String),
    /// One monitor.
    Monitor(String),
}

/// A feed as stored: its secret as a hash (what a request is looked up by) and, for a feed
/// made since secrets are shown again, sealed with the service's key.
#[derive(Clone)]
pub struct FeedRecord {
    /// The feed's id.
    pub id: String,
    /// Whose changes it shows.
    pub user_id: String,
    /// What it follows.
    pub scope: FeedScope,
    /// The folder's or monitor's name (`None` for [`FeedScope::All`] or an unnamed one).
    pub name: Option<String>,
    /// When its secret was made.
    pub created_at: Millis,
    /// Its secret sealed with the service's key ([`crate::secrets::Sealer`]); `None` for a
    /// feed whose secret was kept only as its hash, which cannot be shown again.
    pub sealed_secret: Option<String>,
}

impl std::fmt::Debug for FeedRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FeedRecord")
            .field("id", &self.id)
            .field("user_id", &self.user_id)
            .field("scope", &self.scope)
            .field("name", &self.name)
            .field("created_at", &self.created_at)
            .finish_non_exhaustive()
    }
}

/// One change of a monitor's value, for a feed: the entry that changed it and the value before.
#[derive(Debug, Clone)]
pub struct FeedChange {
    /// The monitor.
    pub task_id: String,
    /// Its name, if it has one.
    pub task_name: Option<String>,
    /// Its URL.
    pub url: String,
    /// The entry's key (check time and id), as the history names it.
    pub key: TimeKey,
    /// The value before the change.
    pub previous: String,
    /// The value after it.
    pub current: String,
}

/// A feed's new secret as stored: its SHA-256 and its sealed copy, never the secret itself.
#[derive(Clone)]
pub struct FeedSecret {
    /// The secret's SHA-256, hex.
    pub hash: String,
    /// The secret sealed with the service's key.
    pub sealed: String,
}

/// The feeds of a user.
///
/// Every method keeps to [the store's rules](super): only the user's own data, each write one
/// transaction.
#[async_trait]
pub trait FeedStore: Send + Sync + 'static {
    /// The user's feeds, the one of all monitors first, then by name.
    async fn feeds(&self, user: &str) -> Result<Vec<FeedRecord>, StoreError>;
    /// Gives the user's feed of `scope` the secret hashing to `secret.hash` (and sealed as
    /// `secret.sealed`), creating the feed or replacing its old secret (which stops working).
    /// `NotFound` when the folder or monitor is not the user's.
    async fn renew_feed(
        &self,
        user: &str,
        scope: &FeedScope,
        secret: &FeedSecret,
        now: Millis,
    ) -> Result<FeedRecord, StoreError>;
    /// Deletes the user's feed `id`. `NotFound` when it is not the user's.
    async fn delete_feed(&self, user: &str, id: &str) -> Result<(), StoreError>;
    /// The feed whose secret hashes to `secret_hash`, if any.
    async fn feed_by_secret(&self, secret_hash: &str) -> Result<Option<FeedRecord>, StoreError>;
    /// The latest changes of the monitors `scope` covers, newest first, `limit` at most: the
    /// monitors' own entries whose value differs from the value before (a monitor's first
    /// value is no change).
    async fn feed_changes(
        &self,
        user: &str,
        scope: &FeedScope,
        limit: u32,
    ) -> Result<Vec<FeedChange>, StoreError>;
}

/// Bytes of each value a change keeps: a feed entry shows the difference in short, and a
/// feed of 10 MB values must not take 10 MB per entry.
pub const MAX_VALUE_BYTES: usize = 64 * 1024;

/// `text` cut to [`MAX_VALUE_BYTES`] at a character boundary.
pub(crate) fn cut(mut text: String) -> String {
    if text.len() > MAX_VALUE_BYTES {
        let mut end = MAX_VALUE_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}

/// A feed as both backends read it (the same columns, the same record).
#[derive(sqlx::FromRow)]
pub(in crate::store) struct FeedRow {
    pub id: String,
    pub user_id: String,
    pub scope: String,
    pub folder_id: Option<String>,
    pub task_id: Option<String>,
    pub name: Option<String>,
    pub created_at: i64,
    pub secret_sealed: Option<String>,
}

/// The columns of [`FeedRow`], with the name of the folder or monitor, over `feeds f`.
pub(in crate::store) const FEED_SELECT: &str = "SELECT f.id, f.user_id, f.scope, f.folder_id, f.task_id, \
     COALESCE(t.name, t.url, fo.name) AS name, f.created_at, f.secret_sealed FROM feeds f \
     LEFT JOIN tasks t ON t.id = f.task_id LEFT JOIN folders fo ON fo.id = f.folder_id";

pub(in crate::store) fn record(row: FeedRow) -> Result<FeedRecord, StoreError> {
    let scope = match (row.scope.as_str(), row.folder_id, row.task_id) {
        ("all", _, _) => FeedScope::All,
        ("folder", Some(folder), _) => FeedScope::Folder(folder),
        ("monitor", _, Some(task)) => FeedScope::Monitor(task),
        (other, _, _) => {
            return Err(StoreError::Backend(format!(
                "feed {}: scope {other}",
                row.id
            )));
        }
    };
    Ok(FeedRecord {
        id: row.id,
        user_id: row.user_id,
        scope,
        name: row.name,
        created_at: row.created_at,
        sealed_secret: row.secret_sealed,
    })
}

/// The scope's column values: (scope, folder, monitor).
pub(in crate::store) fn columns(scope: &FeedScope) -> (&'static str, Option<&str>, Option<&str>) {
    match scope {
        FeedScope::All => ("all", None, None),
        FeedScope::Folder(id) => ("folder", Some(id.as_str()), None),
        FeedScope::Monitor(id) => ("monitor", None, Some(id.as_str())),
    }
}
