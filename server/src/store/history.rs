//! History: the check results of monitors and of the pages they crawled, read a page at a time,
//! and the collection of stored values no entry names any more.

use super::{StoreError, TimeKey, TimePage};
use async_trait::async_trait;
use wachet::model::ClientData;

/// Where a history entry belongs.
#[derive(Debug, Clone)]
pub enum Series {
    /// A monitor's own history.
    Task(String),
    /// A page crawled by a Portal monitor, named by its URL (created on first use).
    Page {
        /// The Portal monitor.
        task_id: String,
        /// The page's URL.
        url: String,
        /// The page's title, when it has one.
        name: Option<String>,
    },
}

/// The history of monitors and of their crawled pages.
///
/// Every method keeps to [the store's rules](super): only the user's own data, each write one
/// transaction.
#[async_trait]
pub trait HistoryStore: Send + Sync + 'static {
    /// One page of the history of a monitor or of a crawled page (`id` may be either), newest
    /// first. `NotFound` when `id` is neither a monitor nor a page of the user's.
    async fn entries(
        &self,
        user: &str,
        id: &str,
        page: &TimePage,
    ) -> Result<Vec<(TimeKey, ClientData)>, StoreError>;
    /// Appends history brought in by an import to monitors of the user's own (each with its
    /// entries oldest first), all in one transaction, as a check appends its result: the
    /// value-changed time worked out against the entry before, values over the history quota
    /// kept as an error saying so, the newest entry becoming the monitor's latest data, the
    /// oldest beyond the retention pruned after. `NotFound` (and nothing written) when a
    /// monitor is not the user's.
    async fn import_entries(
        &self,
        user: &str,
        series: &[(String, Vec<ClientData>)],
    ) -> Result<(), StoreError>;
    /// Deletes up to `limit` stored values that no history entry names any more (pruned by the
    /// retention, or left by a deleted monitor or folder), in one transaction, and returns how
    /// many went: fewer than `limit` means none is left for now. Called in a loop by
    /// [`super::gc::run`], so no transaction grows with the amount of garbage.
    async fn collect_garbage(&self, limit: u32) -> Result<u64, StoreError>;
}
