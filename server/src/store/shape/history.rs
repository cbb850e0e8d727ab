//! Values and check results as stored: a value's codec and body (the codec column is an
//! `INTEGER` of either width, `C` here) and the latest data of a monitor or page as the API
//! shows it.

use crate::store::{StoreError, codec};
use std::borrow::Cow;
use wachet::model::{ClientData, ClientPage};

/// Most entries one prune deletes from one series, so a lowered retention is reached over a
/// few checks instead of in one large transaction.
pub(crate) const PRUNE_BATCH: i64 = 500;

/// What an entry costs against the quota beside its value and error (its row and indexes).
/// SQLite's triggers (its migration 0005) count the same figure.
pub(crate) const ENTRY_BYTES: i64 = 160;

/// A value as stored whole: its codec (in the codec column's width) and body.
pub(crate) fn encode<C: From<i16>>(raw: &str) -> (C, Cow<'_, [u8]>) {
    let (codec, body) = codec::encode(raw);
    (C::from(codec), body)
}

/// The latest data of a monitor or page: one entry joined with its content, all NULL when
/// there is none.
#[derive(sqlx::FromRow)]
pub(crate) struct DataColumns<C> {
    checked_at: Option<i64>,
    changed_at: Option<i64>,
    codec: Option<C>,
    body: Option<Vec<u8>>,
    error: Option<String>,
}

/// The API's data from `row`; `None` when there was no check.
pub(crate) fn data_of<C: Into<i64>>(row: DataColumns<C>) -> Result<Option<ClientData>, StoreError> {
    let Some(checked_at) = row.checked_at else {
        return Ok(None);
    };
    let raw = decode(row.codec, row.body)?;
    Ok(Some(ClientData {
        last_check_timestamp: super::time(checked_at),
        value_changed_timestamp: row.changed_at.map(super::time),
        raw,
        error: row.error,
        diff: None,
        logged_in: false,
    }))
}

/// The text of a value stored whole (each series' latest value is).
pub(crate) fn decode<C: Into<i64>>(
    codec: Option<C>,
    body: Option<Vec<u8>>,
) -> Result<Option<String>, StoreError> {
    match (codec, body) {
        (Some(codec), Some(body)) => {
            codec::unpack(codec::codec_of(codec.into())?, body, None).map(Some)
        }
        _ => Ok(None),
    }
}

/// The text of a stored value from its columns and those of its base and its base's base
/// (NULL past its last layer), as [`codec::LAYERS`] joins them.
pub(crate) fn decode_layers<C: Into<i64>>(
    layers: [(Option<C>, Option<Vec<u8>>); 3],
) -> Result<Option<String>, StoreError> {
    let mut found = Vec::with_capacity(3);
    for layer in layers {
        match layer {
            (Some(codec), Some(body)) => found.push((codec::codec_of(codec.into())?, body)),
            _ => break,
        }
    }
    if found.is_empty() {
        return Ok(None);
    }
    codec::unpack_layers(found).map(Some)
}

/// A page a Portal monitor crawled, with its latest data: `p.id, p.url, p.name,
/// p.alert_state` and [`DataColumns`].
#[derive(sqlx::FromRow)]
pub(crate) struct PageRow<C> {
    id: String,
    url: String,
    name: Option<String>,
    alert_state: Option<String>,
    #[sqlx(flatten)]
    data: DataColumns<C>,
}

/// The API's page from `row`: unnamed, it is named by its URL.
pub(crate) fn page<C: Into<i64>>(row: PageRow<C>) -> Result<ClientPage, StoreError> {
    Ok(ClientPage {
        id: Some(row.id),
        name: Some(row.name.unwrap_or_else(|| row.url.clone())),
        url: Some(row.url),
        data: data_of(row.data)?,
        noise: crate::store::noise::learned_by_page(row.alert_state.as_deref()),
    })
}

/// When the value of a new entry last changed (its `changed_at`), from its value's `hash`
/// (none for a failed check), the series' `previous` entry (its value's hash and change time),
/// the text of the value it replaces (`replaced`, when another) and the new text `raw`, at
/// `checked_at`. A value spelled otherwise (white space, quotes, entities, ...) is no change:
/// it is stored as seen, and keeps the time of the last real change; a failed check keeps the
/// previous time.
pub(crate) fn changed_at(
    hash: Option<&[u8]>,
    previous: Option<(Option<&[u8]>, Option<i64>)>,
    replaced: Option<&str>,
    raw: Option<&str>,
    checked_at: i64,
) -> Option<i64> {
    let respelled = match (replaced, raw) {
        (Some(old), Some(raw)) => wachet::normalize::same(old, raw),
        _ => false,
    };
    match (hash, previous) {
        (Some(hash), Some((Some(prev), prev_changed))) if hash == prev || respelled => prev_changed,
        (Some(_), _) => Some(checked_at),
        (None, Some((_, prev_changed))) => prev_changed,
        (None, None) => None,
    }
}

/// The codec of a stored value as its column holds it, in either schema's width.
pub(crate) fn codec_of<C: Into<i64>>(column: C) -> Result<i16, StoreError> {
    codec::codec_of(column.into())
}

/// A keyframe's size and text, and its root's hash and text when it is a delta against one.
pub(crate) type KeyframeRun = (usize, String, Option<(Vec<u8>, String)>);

/// A keyframe's row: its codec, body and base, with its base's codec and body (a root's).
pub(crate) type KeyframeRow<C> = (C, Vec<u8>, Option<Vec<u8>>, Option<C>, Option<Vec<u8>>);

/// The keyframe of `row` unpacked, for the next value of its run to be compared with.
pub(crate) fn keyframe_run<C: Into<i64>>(
    (codec, body, root, root_codec, root_body): KeyframeRow<C>,
) -> Result<KeyframeRun, StoreError> {
    let size = body.len();
    Ok(match (root, root_codec, root_body) {
        (Some(root), Some(root_codec), Some(root_body)) => {
            let root_text = codec::unpack(codec_of(root_codec)?, root_body, None)?;
            let text = codec::unpack(codec_of(codec)?, body, Some(&root_text))?;
            (size, text, Some((root, root_text)))
        }
        _ => (size, codec::unpack(codec_of(codec)?, body, None)?, None),
    })
}
