//! [`FeedStore`] on PostgreSQL: a user's Atom feeds (all monitors, a folder's subtree, one
//! monitor), found by their secret, and the changes each lists.

use super::{PgStore, not_yet};
use crate::store::{FeedChange, FeedRecord, FeedScope, FeedStore, Millis, StoreError};
use async_trait::async_trait;
#[async_trait]
impl FeedStore for PgStore {
    async fn feeds(&self, _user: &str) -> Result<Vec<FeedRecord>, StoreError> {
        Err(not_yet("feeds"))
    }

    async fn renew_feed(
        &self,
        _user: &str,
        _scope: &FeedScope,
        _secret_hash: &str,
        _now: Millis,
    ) -> Result<FeedRecord, StoreError> {
        Err(not_yet("renew_feed"))
    }

    async fn delete_feed(&self, _user: &str, _id: &str) -> Result<(), StoreError> {
        Err(not_yet("delete_feed"))
    }

    async fn feed_by_secret(&self, _secret_hash: &str) -> Result<Option<FeedRecord>, StoreError> {
        Err(not_yet("feed_by_secret"))
    }

    async fn feed_changes(
        &self,
        _user: &str,
        _scope: &FeedScope,
        _limit: u32,
    ) -> Result<Vec<FeedChange>, StoreError> {
        Err(not_yet("feed_changes"))
    }
}
