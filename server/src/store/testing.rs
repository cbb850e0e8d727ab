//! Writes only tests make: history entries and notifications put straight into the store, where
//! in production only a check writes them ([`super::ScheduleStore::record_check`]). Built for
//! the crate's own tests and, with the `testing` feature, for its integration tests; a backend
//! implements [`Seed`] so the same tests run against it.

use super::{NewNotification, Series, StoreError};
use async_trait::async_trait;
use wachet::model::ClientData;

/// Seeding a store for tests, through the write paths a check takes.
#[async_trait]
pub trait Seed: Send + Sync {
    /// Appends one check result to a series and, when it is the newest, makes it the monitor's
    /// (or page's) latest data; the oldest entries beyond the store's retention go. The
    /// value-changed time is worked out here: the check time when the value differs from the
    /// previous value, else the previous entry's. Returns the entry's id. `NotFound` when the
    /// monitor does not exist.
    async fn append_entry(&self, series: &Series, data: &ClientData) -> Result<String, StoreError>;
    /// Stores a raised notification (outside the hourly limit a check keeps to) and returns its
    /// id; its deliveries wait in the outbox.
    async fn insert_notification(&self, n: &NewNotification) -> Result<String, StoreError>;
}
