//! Check results: ClientData (2.7), DiffElement (2.8), the history range (2.9) and crawled
//! pages (2.17).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// One check result or history entry (ClientData, 2.7).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ClientData {
    /// When the check ran.
    pub last_check_timestamp: DateTime<Utc>,
    /// When the value last changed.
    #[serde(default)]
    pub value_changed_timestamp: Option<DateTime<Utc>>,
    /// The content value.
    #[serde(default)]
    pub raw: Option<String>,
    /// Why the check failed, if it did.
    #[serde(default)]
    pub error: Option<String>,
    /// Change against the previous value (history endpoint with `returnDiff`).
    #[serde(default)]
    pub diff: Option<Vec<DiffElement>>,
    /// Extension: true when the check had to sign in again (its `login` steps ran).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub logged_in: bool,
}

/// Seconds from the Unix epoch back to `0001-01-01T00:00:00Z`.
const YEAR_ONE: i64 = -62_135_596_800;

/// The `lastCheckTimestamp` of a monitor not checked yet: `0001-01-01T00:00:00Z`, the least
/// date-time of .NET (`DateTime.MinValue`), which typed clients of the specification read as
/// no time.
pub fn not_checked_at() -> DateTime<Utc> {
    DateTime::from_timestamp(YEAR_ONE, 0).unwrap_or(DateTime::<Utc>::MIN_UTC)
}

impl ClientData {
    /// The data of a monitor or page not checked yet. The specification types `data` and its
    /// `lastCheckTimestamp` as never null, so it is written with [`not_checked_at`] and every
    /// other field null, and read back as no data.
    pub fn not_checked_yet() -> Self {
        ClientData {
            last_check_timestamp: not_checked_at(),
            value_changed_timestamp: None,
            raw: None,
            error: None,
            diff: None,
            logged_in: false,
        }
    }

    /// A successful check result.
    pub fn value(at: DateTime<Utc>, raw: String) -> Self {
        ClientData {
            last_check_timestamp: at,
            value_changed_timestamp: None,
            raw: Some(raw),
            error: None,
            diff: None,
            logged_in: false,
        }
    }

    /// A failed check result.
    pub fn failure(at: DateTime<Utc>, error: String) -> Self {
        ClientData {
            last_check_timestamp: at,
            value_changed_timestamp: None,
            raw: None,
            error: Some(error),
            diff: None,
            logged_in: false,
        }
    }
}

/// Writes a monitor's or a page's data, never null: [`ClientData::not_checked_yet`] when
/// there is none.
pub(crate) fn write_data<S: serde::Serializer>(
    data: &Option<ClientData>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match data {
        Some(data) => data.serialize(serializer),
        None => ClientData::not_checked_yet().serialize(serializer),
    }
}

/// Reads what [`write_data`] writes: null or [`ClientData::not_checked_yet`] is no data.
pub(crate) fn read_data<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<ClientData>, D::Error> {
    let data = Option::<ClientData>::deserialize(deserializer)?;
    Ok(data.filter(|data| *data != ClientData::not_checked_yet()))
}

/// What a diff element does, in diff-match-patch order. Written as a plain integer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "i32", try_from = "i32")]
pub enum DiffOperation {
    /// Text only in the old value (0).
    Delete,
    /// Text only in the new value (1).
    Insert,
    /// Text in both (2).
    Equal,
}

#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for DiffOperation {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
        ObjectBuilder::new()
            .schema_type(SchemaType::Type(Type::Integer))
            .format(Some(utoipa::openapi::SchemaFormat::KnownFormat(
                utoipa::openapi::KnownFormat::Int32,
            )))
            .enum_values(Some([0, 1, 2]))
            .description(Some("0 Delete, 1 Insert, 2 Equal (diff-match-patch order)"))
            .into()
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for DiffOperation {}

impl From<DiffOperation> for i32 {
    fn from(op: DiffOperation) -> i32 {
        match op {
            DiffOperation::Delete => 0,
            DiffOperation::Insert => 1,
            DiffOperation::Equal => 2,
        }
    }
}

impl TryFrom<i32> for DiffOperation {
    type Error = String;
    fn try_from(code: i32) -> Result<Self, String> {
        match code {
            0 => Ok(DiffOperation::Delete),
            1 => Ok(DiffOperation::Insert),
            2 => Ok(DiffOperation::Equal),
            other => Err(format!(
                "unknown diff operation {other}: expected 0 (Delete), 1 (Insert) or 2 (Equal)"
            )),
        }
    }
}

/// One run of a diff (2.8).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DiffElement {
    /// Delete, Insert or Equal.
    pub operation: DiffOperation,
    /// The text of the run.
    pub text: Option<String>,
}

/// A page of history entries (ClientDataRange, 2.9).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ClientDataRange {
    /// The entries, newest first.
    pub data: Option<Vec<ClientData>>,
    /// Present when more entries exist.
    pub continuation_token: Option<String>,
}

/// A page crawled by a Portal monitor (ClientPage, 2.17).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ClientPage {
    /// Page id.
    pub id: Option<String>,
    /// Page name (its title or URL).
    pub name: Option<String>,
    /// Page URL.
    pub url: Option<String>,
    /// Latest check result of the page (never null: see [`ClientData::not_checked_yet`]).
    #[serde(default, serialize_with = "write_data", deserialize_with = "read_data")]
    #[cfg_attr(feature = "openapi", schema(value_type = ClientData))]
    pub data: Option<ClientData>,
    /// Noise masks this page learned from its checks (extension, read-only; absent when it
    /// learned none): kept with the page and never applied to another page
    /// ([`crate::alerts::confirm::Confirmation::keep_learned`]). To switch one off, list its
    /// pattern in the monitor's `noise` with `active` false: every page then drops it and
    /// never keeps it again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise: Option<Vec<super::NoiseMask>>,
}
