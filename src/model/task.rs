//! The monitor (ClientTask, 2.4) and the small types it is made of: alerts, headers, proxies,
//! URL filters and notification endpoints.

use super::data::ClientData;
use super::enums::{
    AlertType, ClientJobType, CompareType, LocationCode, MessagingServiceType, UrlFilterType,
};
use serde::{Deserialize, Serialize};

/// A monitor: a page (or, for Portal, a site) watched on a schedule. ClientTask in the
/// specification.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", default)]
pub struct Monitor {
    /// Omitted when creating; present when updating.
    pub id: Option<String>,
    /// Display name.
    pub name: Option<String>,
    /// HTTP method used to fetch the page (GET when absent).
    pub method: Option<String>,
    /// The page to watch, or the start URL of a Portal monitor.
    pub url: Option<String>,
    /// Request headers sent when fetching.
    pub headers: Option<Vec<HeaderPair>>,
    /// Request body sent when fetching.
    pub body: Option<String>,
    /// XPath 1.0 expression selecting the watched content.
    #[serde(rename = "xPath")]
    pub x_path: Option<String>,
    /// XPath 1.0 expression selecting content removed before `xPath` applies.
    #[serde(rename = "excludeXPath")]
    pub exclude_x_path: Option<String>,
    /// Regular expression applied to the content.
    pub regex: Option<String>,
    /// Alert conditions.
    pub alerts: Option<Vec<Alert>>,
    /// Check interval in seconds; 0 or null means paused.
    pub recurrence_in_seconds: Option<i32>,
    /// Containing folder (root when null).
    pub folder_id: Option<String>,
    /// Latest check result (read-only; never null: a monitor not checked yet has
    /// [`ClientData::not_checked_yet`]).
    #[serde(
        serialize_with = "super::data::write_data",
        deserialize_with = "super::data::read_data"
    )]
    #[cfg_attr(feature = "openapi", schema(value_type = ClientData))]
    pub data: Option<ClientData>,
    /// Where notifications go; empty means every endpoint of the user.
    pub notification_endpoints: Option<Vec<NotificationEndpoint>>,
    /// Locations to check from through a proxy.
    pub proxies: Option<Vec<Proxy>>,
    /// Hosting location of the checker.
    pub location: LocationCode,
    /// Render the page with a headless browser before extraction.
    pub dynamic_content: bool,
    /// Scroll rendered pages to the bottom so lazy content loads.
    pub scroll_page: bool,
    /// Treat HTTP status >= 400 as content rather than as an error (Portal: leave such pages out).
    pub ignore_invalid_pages: bool,
    /// Keep the raw HTML of the page in the check outcome.
    pub collect_raw_html: bool,
    /// SinglePage (default) or Portal.
    pub job_type: ClientJobType,
    /// Portal only: how many hops of links to follow (1..=3, default 2). Written with its
    /// default when not set, on every monitor: the specification types it as never null.
    #[serde(serialize_with = "write_crawling_depth")]
    #[cfg_attr(
        feature = "openapi",
        schema(value_type = i32, default = 2, minimum = 1, maximum = 3)
    )]
    pub crawling_depth: Option<i32>,
    /// Portal only: keep non-HTML responses.
    pub crawl_binary_content: bool,
    /// Portal only: which links to follow. Written as a filter with no lists when not set: the
    /// specification types it as never null.
    #[serde(serialize_with = "write_url_filter")]
    #[cfg_attr(feature = "openapi", schema(value_type = UrlFilter))]
    pub url_filter: Option<UrlFilter>,
    /// Portal only: follow links to other hosts.
    pub crawl_pages_from_all_domains: bool,
    /// Free text.
    pub note: Option<String>,
    /// Extension: how many checks in a row must fail before the Error alert raises (1 to 10;
    /// null: 2, a failure confirmed by an early second check). 1 raises on the first failed
    /// check. See `wachet::alerts::confirm`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_after_failures: Option<i32>,
    /// Extension: `true` keeps the monitor's notifications on its notifications list and
    /// sends them nowhere (its alerts stay as they are). Left out when not muted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub muted: Option<bool>,
    /// Extension: the spans of the value that change without meaning, masked when values are
    /// compared. wachet learns them (`learned` true) from quick checks when the monitor is
    /// created or its selection changes and from later checks; a person may add patterns of
    /// their own, or switch a learned one off (`active` false: it is kept, so it is never
    /// learned again). Null: none yet. See `wachet::alerts::noise`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub noise: Option<Vec<NoiseMask>>,
    /// Extension: whether the order of the value's lines matters (`ordered`, the default) or
    /// lines are compared as a set (`set`: a shuffled list is no change, an added or removed
    /// line is). See `wachet::alerts::compare`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compare_lines: Option<LineOrder>,
    /// Extension: whether the value shows each link's target after its text, so a link whose
    /// text stays while its target changes (a download button pointing at a new release) is a
    /// change. Null: the targets of links the `xPath` selects itself (`//a[...]`), none on a
    /// whole page; true: every link in the value; false: none. See `wachet::extract::Links`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub watch_links: Option<bool>,
    /// Extension, read-only: what wachet found about the value's noise when it is worth a
    /// person's attention, for example that no part of the page stays the same from one check
    /// to the next (so changes are shown but not alerted on); null otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub noise_notice: Option<String>,
    /// Extension, read-only: set when no running checker serves the monitor's `location` (no
    /// worker of the service runs there, no proxy reaches it), so it is not checked until one
    /// does; null otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location_notice: Option<String>,
    /// Extension: browser steps run on the page after it loads and before the value is taken
    /// (accept a cookie wall, choose a region, open a tab). Steps make the check a rendered
    /// one. See `wachet::steps`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steps: Option<Vec<super::steps::Step>>,
    /// Extension: how to sign in when the page needs it; the browser's session is kept
    /// between checks when the checker has a session store. See `wachet::steps`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub login: Option<super::steps::Login>,
}

/// One span of noise: a regular expression whose matches are masked when values are compared
/// (extension). When the pattern has capture groups, only what the groups matched is masked,
/// so a pattern can name the text around a span without masking it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct NoiseMask {
    /// A regular expression (Rust `regex` syntax) matched against the value's comparison key
    /// (`wachet::normalize::line_key`: one line a line, white space runs one space).
    pub pattern: String,
    /// Whether wachet learned it (false: a person added it).
    #[serde(default)]
    pub learned: bool,
    /// Whether it masks. A learned span switched off stays in the list so it is not learned
    /// again.
    #[serde(default = "yes")]
    pub active: bool,
    /// Read-only: a text it masked when it was learned, for people to recognise it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub example: Option<String>,
}

fn yes() -> bool {
    true
}

/// Whether the order of a value's lines matters when values are compared (extension).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum LineOrder {
    /// Lines compared in order: a reordering is a change.
    #[default]
    Ordered,
    /// Lines compared as a set: a reordering is no change, an added or removed line is.
    Set,
}

/// The crawling depth of a monitor that sets none.
pub const DEFAULT_CRAWLING_DEPTH: i32 = 2;

fn write_crawling_depth<S: serde::Serializer>(
    depth: &Option<i32>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.serialize_i32(depth.unwrap_or(DEFAULT_CRAWLING_DEPTH))
}

fn write_url_filter<S: serde::Serializer>(
    filter: &Option<UrlFilter>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    const NONE: UrlFilter = UrlFilter {
        include: None,
        exclude: None,
    };
    filter.as_ref().unwrap_or(&NONE).serialize(serializer)
}

fn write_parameters<S: serde::Serializer>(
    parameters: &Option<AlertParameters>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    const DEFAULT: AlertParameters = AlertParameters {
        compare: CompareType::All,
        value: None,
    };
    parameters
        .as_ref()
        .unwrap_or(&DEFAULT)
        .serialize(serializer)
}

impl Monitor {
    /// A single-page monitor of `url` with everything else at its default.
    pub fn new(url: impl Into<String>) -> Self {
        Monitor {
            url: Some(url.into()),
            ..Monitor::default()
        }
    }

    /// The Portal crawling depth with its default applied.
    pub fn effective_crawling_depth(&self) -> i32 {
        self.crawling_depth.unwrap_or(DEFAULT_CRAWLING_DEPTH)
    }
}

/// An alert condition (ClientAlert, 2.5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Alert {
    /// What to watch for.
    #[serde(rename = "type")]
    pub kind: AlertType,
    /// The operand; `parameters.value` is used when this is empty.
    #[serde(default)]
    pub value: Option<String>,
    /// Further parameters. Written with their defaults when not set: the specification types
    /// them as never null.
    #[serde(default, serialize_with = "write_parameters")]
    #[cfg_attr(feature = "openapi", schema(value_type = AlertParameters))]
    pub parameters: Option<AlertParameters>,
    /// Extension: Error alerts only. While the monitor keeps failing, a reminder every this
    /// many seconds after the Error notification (none when absent, the default). Left out
    /// of the JSON when absent, so a monitor without it reads as the specification's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remind_every_seconds: Option<i64>,
}

/// AlertParameters (2.6).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", default)]
pub struct AlertParameters {
    /// What part of the change the condition looks at.
    pub compare: CompareType,
    /// The operand when the alert's own value is empty.
    pub value: Option<String>,
}

/// A request header (StringStringKeyValuePair, 2.13).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default)]
pub struct HeaderPair {
    /// Header name.
    pub key: Option<String>,
    /// Header value.
    pub value: Option<String>,
}

impl HeaderPair {
    /// A header pair.
    pub fn new(key: impl Into<String>, value: impl Into<String>) -> Self {
        HeaderPair {
            key: Some(key.into()),
            value: Some(value.into()),
        }
    }
}

/// A location to check from through a proxy (WebProxyInfo, 2.14).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default)]
pub struct Proxy {
    /// Location code such as `us` or `gb`.
    pub location: Option<String>,
}

/// Which links a Portal crawl follows (2.10).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default)]
pub struct UrlFilter {
    /// A link must match at least one of these, when any is given.
    pub include: Option<Vec<UrlFilterValue>>,
    /// A link must match none of these.
    pub exclude: Option<Vec<UrlFilterValue>>,
}

/// One URL filter (UrlFilterValue, 2.10).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default)]
pub struct UrlFilterValue {
    /// Substring or regular expression.
    pub filter: Option<String>,
    /// How `filter` matches.
    #[serde(rename = "type")]
    pub kind: UrlFilterType,
}

/// Where notifications go (2.12).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NotificationEndpoint {
    /// Kind of endpoint.
    #[serde(rename = "type")]
    pub kind: MessagingServiceType,
    /// A URL for Webhook, an address for Email.
    #[serde(default)]
    pub value: Option<String>,
    /// Extension, output only: for an Email endpoint of the service's own user settings,
    /// whether the address confirmed that it wants the notifications (an address other than
    /// the account's own gets none until it did). Ignored on input.
    #[serde(default, skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub confirmed: Option<bool>,
    /// Extension: the message's title as a template (minijinja), instead of the monitor's name
    /// and what fired.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Extension: the message's body as a template (minijinja), instead of the change as the
    /// channel shows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// Extension: the format the templates write (and the `change.diff` token is given in);
    /// by default the channel's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<MessageFormat>,
    /// Extension: notifications grouped in one message every so many minutes, or once a day;
    /// none sends each at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<Digest>,
    /// Extension: hours (in the user's time zone) during which messages are held, then sent
    /// as one digest.
    #[serde(
        default,
        rename = "quietHours",
        skip_serializing_if = "Option::is_none"
    )]
    pub quiet_hours: Option<QuietHours>,
}

impl NotificationEndpoint {
    /// An endpoint of `kind` to `value`, with no template, digest or quiet hours.
    pub fn new(kind: MessagingServiceType, value: Option<String>) -> Self {
        NotificationEndpoint {
            kind,
            value,
            confirmed: None,
            title: None,
            body: None,
            format: None,
            digest: None,
            quiet_hours: None,
        }
    }
}

/// The markup a message is written in (extension).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum MessageFormat {
    /// Plain text.
    Text,
    /// Markdown.
    Markdown,
    /// HTML.
    Html,
}

/// When an endpoint's notifications are grouped in one message (extension): `everyMinutes`
/// (at most one message every N minutes) or `dailyAt` (`HH:MM` in the user's time zone).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Digest {
    /// At most one message every so many minutes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub every_minutes: Option<u32>,
    /// One message a day at this time (`HH:MM`), in the user's time zone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daily_at: Option<String>,
}

/// Hours during which an endpoint's messages are held (extension), `HH:MM` to `HH:MM` in the
/// user's time zone; `from` after `to` spans midnight.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct QuietHours {
    /// When they begin.
    pub from: String,
    /// When they end.
    pub to: String,
}
