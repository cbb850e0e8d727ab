//! [`Seed`] on PostgreSQL: the transactions of a check's own writes ([`history::append_in`],
//! [`notifications::insert_in`]).

use super::{PgStore, not_yet};
use crate::store::testing::Seed;
use crate::store::{NewNotification, Series, StoreError};
use async_trait::async_trait;
use wachet::model::ClientData;
#[async_trait]
impl Seed for PgStore {
    async fn append_entry(
        &self,
        _series: &Series,
        _data: &ClientData,
    ) -> Result<String, StoreError> {
        Err(not_yet("append_entry"))
    }

    async fn insert_notification(&self, _n: &NewNotification) -> Result<String, StoreError> {
        Err(not_yet("insert_notification"))
    }
}
