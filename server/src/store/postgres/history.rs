//! [`HistoryStore`] on PostgreSQL: entries of a monitor's series and of its crawled pages,
//! values stored once by content, retention and garbage collection (owned by G2; a skeleton
//! until then). Other modules read a monitor's latest data and its pages only through
//! [`DATA_COLUMNS`], [`DATA_JOIN`], [`data_of`] and [`pages_of`], so the tables behind them are
//! this module's to shape.

use super::{PgStore, not_yet};
use crate::store::{HistoryStore, StoreError, TimeKey, TimePage};
use async_trait::async_trait;
use wachet::model::{ClientData, ClientPage};

/// The columns of a monitor's latest data, for a query on `tasks t` that adds [`DATA_JOIN`]:
/// `checked_at`, `changed_at`, `codec`, `body`, `error` (all NULL when it was never checked),
/// read by [`DataColumns`].
pub(super) const DATA_COLUMNS: &str = "NULL::BIGINT AS checked_at, NULL::BIGINT AS changed_at, \
     NULL::INTEGER AS codec, NULL::BYTEA AS body, NULL::TEXT AS error";
/// The joins from `tasks t` that [`DATA_COLUMNS`] reads.
pub(super) const DATA_JOIN: &str = "";

/// A monitor's latest data as [`DATA_COLUMNS`] gives it.
#[derive(sqlx::FromRow)]
#[allow(dead_code)] // read once the history is written
pub(super) struct DataColumns {
    checked_at: Option<i64>,
    changed_at: Option<i64>,
    codec: Option<i32>,
    body: Option<Vec<u8>>,
    error: Option<String>,
}

/// The API's data of a monitor from its row; `None` when it was never checked.
pub(super) fn data_of(row: DataColumns) -> Result<Option<ClientData>, StoreError> {
    let Some(checked_at) = row.checked_at else {
        return Ok(None);
    };
    Ok(Some(ClientData {
        last_check_timestamp: super::time(checked_at),
        value_changed_timestamp: row.changed_at.map(super::time),
        raw: None,
        error: row.error,
        diff: None,
    }))
}

/// Appends one check result to `series` in `tx` (what [`Seed`](crate::store::testing::Seed)
/// does through a check's own write path) and returns the entry's id; a new value that would
/// pass `max_bytes` of the owner's history is not kept. `NotFound` when the monitor does not exist.
#[allow(dead_code)] // the test seeding calls it
pub(super) async fn append_in(
    _tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    _series: &crate::store::Series,
    _data: &ClientData,
    _max_bytes: u64,
) -> Result<String, StoreError> {
    Err(not_yet("append_entry"))
}

/// The pages a Portal monitor crawled, by URL, with their latest data. The caller has checked
/// that `task` is the user's.
pub(super) async fn pages_of(_store: &PgStore, _task: &str) -> Result<Vec<ClientPage>, StoreError> {
    Ok(Vec::new())
}

#[async_trait]
impl HistoryStore for PgStore {
    async fn entries(
        &self,
        _user: &str,
        _id: &str,
        _page: &TimePage,
    ) -> Result<Vec<(TimeKey, ClientData)>, StoreError> {
        Err(not_yet("entries"))
    }

    async fn collect_garbage(&self, _limit: u32) -> Result<u64, StoreError> {
        Err(not_yet("collect_garbage"))
    }
}
