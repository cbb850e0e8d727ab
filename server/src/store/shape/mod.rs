//! What every backend does alike that is not SQL: the columns derived from what a user sends,
//! the rows read back as the API's types, the quotas and hourly limits, the refusals (a NUL
//! in text, an id that cannot exist) and what each write invalidates in the [cache](super::cache).
//! A backend's module holds its statements, binds and transactions and calls these for the
//! rest, so both backends answer alike by construction rather than by copying. Nothing here
//! knows which database it runs on: a row type is read by sqlx from either (`FromRow` over any
//! row), with the integer width a backend's schema uses as a type parameter where they differ.

pub(crate) mod feeds;
pub(crate) mod history;
pub(crate) mod invalidate;
pub(crate) mod notifications;
pub(crate) mod outbox;
pub(crate) mod schedule;
pub(crate) mod tasks;
pub(crate) mod users;
pub(crate) mod workers;

use super::{Millis, StoreError, TimePage};
use std::borrow::Cow;

/// Refuses text with a NUL as `field`'s fault. PostgreSQL's text cannot hold one, and so that
/// both backends keep the same text, SQLite refuses it too: what a user sends with a NUL is
/// their mistake, never a database failure.
pub(crate) fn refuse_nul(field: &str, value: Option<&str>) -> Result<(), StoreError> {
    if value.is_some_and(|v| v.contains('\0')) {
        return Err(StoreError::invalid(
            field,
            "must not contain NUL characters",
        ));
    }
    Ok(())
}

/// Whether some of `terms` holds a NUL, which no stored text does: a lookup by it finds
/// nothing, without asking the database.
pub(crate) fn any_nul<'a>(terms: impl IntoIterator<Item = &'a str>) -> bool {
    terms.into_iter().any(|term| term.contains('\0'))
}

/// Text from a fetched page, storable: a NUL (which PostgreSQL's text cannot hold, and a page
/// may well contain) becomes U+FFFD, so a check of such a page still stores what it raised.
pub(crate) fn storable(value: Option<&str>) -> Option<Cow<'_, str>> {
    value.map(|v| {
        if v.contains('\0') {
            Cow::Owned(v.replace('\0', "\u{FFFD}"))
        } else {
            Cow::Borrowed(v)
        }
    })
}

/// A folder's count of monitors in the API's 32-bit field: a larger one shows as the largest.
pub(crate) fn folder_count(n: i64) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// Lower-cased name for sorting by name; unnamed items sort first, by id (creation order).
pub(crate) fn sort_key(name: Option<&str>) -> String {
    name.unwrap_or("").to_lowercase()
}

/// A stored time as the API's.
pub(crate) fn time(millis: Millis) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::from_timestamp_millis(millis).unwrap_or_default()
}

/// The upper keyset bound of a newest-first page: rows strictly before `after`, and no later
/// than `to`. One row-value bound (rather than a separate `<= to`) lets the index range start
/// at the page, so a page deep in a long history costs what the first page costs.
pub(crate) fn before_key(page: &TimePage) -> (Millis, String) {
    // Above every stored (time, id) of that time: notification ids are UUIDs and entry ids
    // decimal integers, whose characters sort below '~' byte-wise (PostgreSQL's "C"), and
    // SQLite sorts an integer id below any text.
    let to = (page.to.unwrap_or(Millis::MAX), "~".to_string());
    match &page.after {
        Some(key) if (key.at, key.id.as_str()) < (to.0, to.1.as_str()) => (key.at, key.id.clone()),
        _ => to,
    }
}

/// An integer column of either schema's width, as the service's `i64`.
pub(crate) fn wide<C: Into<i64>>(column: C) -> i64 {
    column.into()
}
