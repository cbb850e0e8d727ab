//! [`ScheduleStore`] on PostgreSQL: when each monitor is next due, claims with `FOR UPDATE SKIP
//! LOCKED` under leases, and a check's writes in one transaction (owned by G2; a skeleton until
//! then). The monitors' own module tells it of a new or changed definition through
//! [`schedule_in`] and [`forget_learning_in`].

use super::{PgStore, not_yet};
use crate::store::{
    AlertStates, CheckRecord, Claim, DueCheck, Millis, ScheduleStore, StorageUse, StoreError,
};
use async_trait::async_trait;

use sqlx::{Postgres, Transaction};
/// (Re)schedules the monitor `task` of `user` after its definition was written in `tx`:
/// checked first at `next_check_at` (`None`: paused, never due), by a browser when `dynamic`.
pub(super) async fn schedule_in(
    _tx: &mut Transaction<'_, Postgres>,
    _task: &str,
    _user: &str,
    _next_check_at: Option<Millis>,
    _dynamic: bool,
) -> Result<(), StoreError> {
    Ok(())
}

/// Drops what noise learning remembered in the confirmation state of `task` (what it watches
/// changed, so what it learned belongs to the old value).
pub(super) async fn forget_learning_in(
    _tx: &mut Transaction<'_, Postgres>,
    _task: &str,
) -> Result<(), StoreError> {
    Ok(())
}

#[async_trait]
impl ScheduleStore for PgStore {
    async fn claim_due(
        &self,
        _now: Millis,
        _lease_until: Millis,
        _claim: &Claim,
    ) -> Result<Vec<DueCheck>, StoreError> {
        Err(not_yet("claim_due"))
    }

    async fn renew_lease(&self, _task: &str, _lease_until: Millis) -> Result<(), StoreError> {
        Err(not_yet("renew_lease"))
    }

    async fn finish_check(
        &self,
        _task: &str,
        _version: Millis,
        _next_check_at: Millis,
    ) -> Result<(), StoreError> {
        Err(not_yet("finish_check"))
    }

    async fn record_check(&self, _record: &CheckRecord) -> Result<bool, StoreError> {
        Err(not_yet("record_check"))
    }

    async fn alert_states(&self, _task: &str) -> Result<AlertStates, StoreError> {
        Err(not_yet("alert_states"))
    }

    async fn stored_bytes(&self, _task: &str) -> Result<StorageUse, StoreError> {
        Err(not_yet("stored_bytes"))
    }
}
