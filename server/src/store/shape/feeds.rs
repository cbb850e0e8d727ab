//! Feeds as stored: a change a feed shows, read from the history with the value before it.
//! (A feed's own row and scope columns are [`crate::store::feeds`]'s.)

use super::history::decode_layers;
use crate::store::feeds::cut;
use crate::store::{FeedChange, StoreError, TimeKey};

/// A change with the three layers of its value and of the value before it (`Id`: how the
/// schema's entry id reads, `C`: the width of its codec column).
#[derive(sqlx::FromRow)]
pub(crate) struct ChangeRow<Id, C> {
    id: Id,
    checked_at: i64,
    task_id: String,
    name: Option<String>,
    url: String,
    codec: Option<C>,
    body: Option<Vec<u8>>,
    base_codec: Option<C>,
    base_body: Option<Vec<u8>>,
    root_codec: Option<C>,
    root_body: Option<Vec<u8>>,
    prev_codec: Option<C>,
    prev_body: Option<Vec<u8>>,
    prev_base_codec: Option<C>,
    prev_base_body: Option<Vec<u8>>,
    prev_root_codec: Option<C>,
    prev_root_body: Option<Vec<u8>>,
}

/// The change of `row`, its texts cut to what a feed shows.
pub(crate) fn change<Id: ToString, C: Into<i64>>(
    row: ChangeRow<Id, C>,
) -> Result<FeedChange, StoreError> {
    Ok(FeedChange {
        key: TimeKey {
            at: row.checked_at,
            id: row.id.to_string(),
        },
        task_id: row.task_id,
        task_name: row.name,
        url: row.url,
        current: cut(decode_layers([
            (row.codec, row.body),
            (row.base_codec, row.base_body),
            (row.root_codec, row.root_body),
        ])?
        .unwrap_or_default()),
        previous: cut(decode_layers([
            (row.prev_codec, row.prev_body),
            (row.prev_base_codec, row.prev_base_body),
            (row.prev_root_codec, row.prev_root_body),
        ])?
        .unwrap_or_default()),
    })
}
