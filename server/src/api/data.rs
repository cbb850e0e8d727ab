//! History: endpoint 6, the check results of a monitor or of one crawled page, newest first,
//! with the diff against the previous value on request, over [`crate::ops::history`].

use super::auth::CurrentUser;
use super::body::{ApiJson, ApiQuery};
use super::problem::{ApiError, Problem};
use crate::ops::paging::PageQuery;
use crate::ops::{Ctx, history};
use axum::extract::{Path, State};
use chrono::{DateTime, Datelike, Timelike, Utc};
use serde::ser::{SerializeSeq, SerializeStruct};
use serde::{Deserialize, Serialize, Serializer};
use wachet::model::{ClientData, ClientDataRange};

/// Query of the history listing.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
pub struct DataQuery {
    /// Oldest check time included (ISO 8601 date-time; no offset is UTC, a bare date its
    /// midnight).
    from: Option<String>,
    /// Newest check time included (ISO 8601 date-time, read as `from` is).
    to: Option<String>,
    /// Entries per page, 1 to 500, default 50.
    count: Option<i64>,
    /// Fill `diff` of each entry with the change against the previous value.
    #[serde(default, deserialize_with = "crate::ops::query::deserialize_boolean")]
    return_diff: bool,
    /// Where the next page starts, from the previous page.
    continuation_token: Option<String>,
}

/// Endpoint 6: one page of history, newest first.
#[utoipa::path(get, path = "/thirdparty/v1/data/list/{id}", tag = "data",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "Monitor id, or the id of a page of a Portal monitor"), DataQuery),
    responses(
        (status = 200, description = "History entries, newest first", body = ClientDataRange),
        (status = 400, description = "Bad count, date or continuation token", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "No valid token", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such monitor or page", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_data(
    State(state): State<Ctx>,
    CurrentUser(user): CurrentUser,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<DataQuery>,
) -> Result<ApiJson<Page>, ApiError> {
    let page = PageQuery {
        from: query.from.as_deref(),
        to: query.to.as_deref(),
        count: query.count,
        token: query.continuation_token.as_deref(),
    };
    Ok(ApiJson(Page(
        history::page(&state, &user, &id, page, query.return_diff).await?,
    )))
}

/// A page of history as the API writes it: exactly [`ClientDataRange`]'s JSON, with its
/// times written by [`Stamp`]. chrono writes a time through `core::fmt`, a character at a
/// time through serde_json's escaping; a profile of `GET /data/list` found the page's hundred
/// times a tenth of its CPU.
pub struct Page(ClientDataRange);

impl Serialize for Page {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut range = serializer.serialize_struct("ClientDataRange", 2)?;
        range.serialize_field("data", &self.0.data.as_deref().map(Entries))?;
        range.serialize_field("continuationToken", &self.0.continuation_token)?;
        range.end()
    }
}

/// The entries of a [`Page`].
struct Entries<'a>(&'a [ClientData]);

impl Serialize for Entries<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut entries = serializer.serialize_seq(Some(self.0.len()))?;
        for data in self.0 {
            entries.serialize_element(&Entry(data))?;
        }
        entries.end()
    }
}

/// One [`ClientData`], its fields as its own `Serialize` writes them.
struct Entry<'a>(&'a ClientData);

impl Serialize for Entry<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let data = self.0;
        let mut entry = serializer.serialize_struct("ClientData", 5)?;
        entry.serialize_field("lastCheckTimestamp", &Stamp(&data.last_check_timestamp))?;
        entry.serialize_field(
            "valueChangedTimestamp",
            &data.value_changed_timestamp.as_ref().map(Stamp),
        )?;
        entry.serialize_field("raw", &data.raw)?;
        entry.serialize_field("error", &data.error)?;
        entry.serialize_field("diff", &data.diff)?;
        if data.logged_in {
            entry.serialize_field("loggedIn", &true)?;
        } else {
            entry.skip_field("loggedIn")?;
        }
        entry.end()
    }
}

/// A time as chrono's `Serialize` writes it (RFC 3339, `Z`, the fraction in whole
/// milliseconds when there is one), written straight into a buffer. Times stored to the
/// millisecond in years 0 to 9999 (every stored time) take this way; any other is left to
/// chrono.
struct Stamp<'a>(&'a DateTime<Utc>);

impl Serialize for Stamp<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let time = self.0;
        let nanos = time.nanosecond();
        let year = time.year();
        if !(0..=9_999).contains(&year)
            || !nanos.is_multiple_of(1_000_000)
            || nanos >= 1_000_000_000
        {
            return time.serialize(serializer);
        }
        let mut out = [0u8; 24];
        let mut put = |at: usize, value: u32, digits: usize| {
            let mut value = value;
            for i in (at..at + digits).rev() {
                out[i] = b'0' + (value % 10) as u8;
                value /= 10;
            }
        };
        put(0, year.unsigned_abs(), 4);
        put(5, time.month(), 2);
        put(8, time.day(), 2);
        put(11, time.hour(), 2);
        put(14, time.minute(), 2);
        put(17, time.second(), 2);
        let millis = nanos / 1_000_000;
        let end = if millis == 0 {
            19
        } else {
            put(20, millis, 3);
            out[19] = b'.';
            23
        };
        for (at, mark) in [(4, b'-'), (7, b'-'), (10, b'T'), (13, b':'), (16, b':')] {
            out[at] = mark;
        }
        out[end] = b'Z';
        // Only ASCII digits and marks were written.
        let text = std::str::from_utf8(&out[..=end]).map_err(serde::ser::Error::custom)?;
        serializer.serialize_str(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wachet::model::{DiffElement, DiffOperation};

    /// A page's JSON is exactly what `ClientDataRange`'s own `Serialize` writes.
    #[test]
    fn a_page_is_written_as_the_model_writes_it() {
        let at = |millis: i64| DateTime::from_timestamp_millis(millis).unwrap();
        let mut times: Vec<DateTime<Utc>> = [
            0,
            1,
            999,
            1_000,
            1_735_674_726_520,
            1_735_674_726_000,
            253_402_300_799_999,
            -62_167_219_200_000,
            -1,
        ]
        .into_iter()
        .map(at)
        .collect();
        // Outside the quick way: micro- and nanosecond fractions, years past 9999 or before 0.
        times.push(DateTime::from_timestamp(1_735_674_726, 123_456_000).unwrap());
        times.push(DateTime::from_timestamp(1_735_674_726, 123_456_789).unwrap());
        times.push(at(253_402_300_800_000));
        times.push(at(-62_167_219_200_001));
        let mut x: u64 = 7;
        for _ in 0..2_000 {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            times.push(at((x >> 20) as i64 % 253_402_300_799_999));
        }
        let data: Vec<ClientData> = times
            .iter()
            .enumerate()
            .map(|(i, time)| ClientData {
                last_check_timestamp: *time,
                value_changed_timestamp: (i % 3 != 0).then(|| times[i / 2]),
                raw: (i % 5 != 0).then(|| format!("value \"{i}\"\n\u{7f}é")),
                error: (i % 5 == 0).then(|| "HTTP 503".to_string()),
                diff: (i % 7 == 0).then(|| {
                    vec![DiffElement {
                        operation: DiffOperation::Insert,
                        text: Some("x".into()),
                    }]
                }),
                logged_in: i % 11 == 0,
            })
            .collect();
        for range in [
            ClientDataRange {
                data: Some(data),
                continuation_token: Some("next".into()),
            },
            ClientDataRange::default(),
        ] {
            let ours = serde_json::to_string(&Page(range.clone())).unwrap();
            assert_eq!(ours, serde_json::to_string(&range).unwrap());
        }
    }
}
