//! [`OutboxStore`] on PostgreSQL: deliveries of notifications and tests, claimed with `FOR UPDATE
//! SKIP LOCKED` under leases, and the confirmation mails of e-mail addresses (owned by G2; a
//! skeleton until then). A notification's deliveries are written by [`create_in`] in the
//! transaction that stores it.

use super::{PgStore, not_yet};
use crate::store::{
    ConfirmationMail, Delivery, DeliveryOutcome, DeliveryRecord, Millis, OutboxStore, StoreError,
};
use async_trait::async_trait;
use wachet::model::NotificationEndpoint;

use sqlx::{Postgres, Transaction};
/// Queues the deliveries of the new notification `notification` of monitor `task` in `tx`: one
/// for each of `endpoints`, or of the owner's endpoints when it is empty.
pub(super) async fn create_in(
    _tx: &mut Transaction<'_, Postgres>,
    _notification: &str,
    _task: &str,
    _endpoints: &[NotificationEndpoint],
    _now: Millis,
) -> Result<(), StoreError> {
    Ok(())
}

#[async_trait]
impl OutboxStore for PgStore {
    async fn claim_deliveries(
        &self,
        _now: Millis,
        _lease_until: Millis,
        _limit: u32,
    ) -> Result<Vec<Delivery>, StoreError> {
        Err(not_yet("claim_deliveries"))
    }

    async fn finish_delivery(
        &self,
        _id: &str,
        _outcome: &DeliveryOutcome,
    ) -> Result<(), StoreError> {
        Err(not_yet("finish_delivery"))
    }

    async fn delivery_counts(&self) -> Result<Vec<(String, u64)>, StoreError> {
        Err(not_yet("delivery_counts"))
    }

    async fn delivery_records(
        &self,
        _notification: &str,
    ) -> Result<Vec<DeliveryRecord>, StoreError> {
        Err(not_yet("delivery_records"))
    }

    async fn retry_delivery(
        &self,
        _user: &str,
        _notification: Option<&str>,
        _delivery: &str,
        _now: Millis,
    ) -> Result<(), StoreError> {
        Err(not_yet("retry_delivery"))
    }

    async fn queue_test_delivery(
        &self,
        _user: &str,
        _kind: wachet::model::MessagingServiceType,
        _target: &str,
        _now: Millis,
        _waiting: u32,
    ) -> Result<String, StoreError> {
        Err(not_yet("queue_test_delivery"))
    }

    async fn test_deliveries(
        &self,
        _user: &str,
        _limit: u32,
    ) -> Result<Vec<DeliveryRecord>, StoreError> {
        Err(not_yet("test_deliveries"))
    }

    async fn claim_confirmation_mails(
        &self,
        _now: Millis,
        _lease_until: Millis,
        _limit: u32,
    ) -> Result<Vec<ConfirmationMail>, StoreError> {
        Err(not_yet("claim_confirmation_mails"))
    }

    async fn finish_confirmation_mail(
        &self,
        _mail: &ConfirmationMail,
        _outcome: &DeliveryOutcome,
    ) -> Result<(), StoreError> {
        Err(not_yet("finish_confirmation_mail"))
    }
}
