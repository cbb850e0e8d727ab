//! The outbox as stored: the texts of test notifications and of unconfirmed addresses, a due
//! delivery's row read back as what delivery sends, a delivery as its owner sees it, and the
//! policy of a claim: the lanes the deliverer's slots are shared by ([`lane`], [`Lanes`]), the
//! hourly bound, and when a digest or quiet hours hold a delivery.

use super::time;
use crate::store::{Delivery, DeliveryRecord, Millis, StoreError};
use std::borrow::Cow;
use std::collections::HashMap;
use wachet::model::{
    Alert, AlertType, ClientNotification, MessagingServiceType, NotificationEndpoint,
};

/// What a test notification says (its e-mail subject and the webhook's `taskName`).
pub(crate) const TEST_NAME: &str = "wachet test notification";
/// The body of a test notification.
const TEST_TEXT: &str = "This is a test notification from wachet: this endpoint receives \
                         the notifications of your monitors.";

/// Why a delivery to an address nobody confirmed is not sent.
pub(crate) const UNCONFIRMED: &str = "the address has not confirmed that it wants notifications: a \
                               confirmation code was mailed to it, to enter with POST \
                               /thirdparty/v1/user/notificationEndpoints/confirm";

/// A due delivery with its notification, as both backends' claims read it.
#[derive(sqlx::FromRow)]
pub(crate) struct DueRow {
    pub(crate) id: String,
    pub(crate) kind: i64,
    target: String,
    attempts: i64,
    pub(crate) notification_id: Option<String>,
    alert_type: Option<i64>,
    alert: Option<String>,
    current_value: Option<String>,
    comparand: Option<String>,
    error: Option<String>,
    created_at: Option<i64>,
    task_id: Option<String>,
    task_name: Option<String>,
    url: Option<String>,
    webhook_secret: String,
    html: Option<String>,
    synthetic_expression: Option<String>,
    pub(crate) user_id: Option<String>,
    pub(crate) released_at: Option<i64>,
    explanation: Option<String>,
    /// The token of the claim before this one: this claim's is the next.
    lease_token: i64,
    /// The user the delivery is for (the webhook's `userId`).
    owner: String,
    /// Where the user last logged in to the API from.
    login_base: Option<String>,
    /// The endpoint's templates (JSON).
    template: Option<String>,
    /// The user's time zone.
    time_zone: String,
    /// The name of the monitor's folder.
    folder: Option<String>,
    /// The digest the delivery is held for.
    pub(crate) digest_key: Option<String>,
    /// The lane it counts against ([`lane`]).
    pub(crate) lane: String,
}

/// The columns of [`DueRow`] this module adds to the claims' own: the delivery's templates,
/// the user's time zone and the monitor's folder's name.
pub(crate) const DUE_EXTRA_COLUMNS: &str = "d.template, u.time_zone, d.digest_key, d.lane, \
     (SELECT f.name FROM tasks t JOIN folders f ON f.id = t.folder_id WHERE t.id = n.task_id) \
     AS folder";

/// The lane of a delivery to `target` (of `kind`): what the deliverer's cap on deliveries in
/// flight counts them by, so that a receiver that hangs, redirects in a loop or waits for the
/// engine's per-host limit holds only a few of the deliverer's slots. The receiving host and
/// port of an http(s) target (a webhook; Slack's, Discord's and Teams' incoming webhooks; an
/// ntfy topic), as the engine's per-host limits count them; a notification URL's scheme and
/// host part, its user and password left out (a service that names no host, such as Telegram,
/// counts by its first part, the bot or the webhook); else the endpoint itself (an e-mail
/// address: the SMTP server is the operator's own).
pub(crate) fn lane(kind: MessagingServiceType, target: &str) -> String {
    let target = target.trim();
    if let Ok(url) = url::Url::parse(target)
        && matches!(url.scheme(), "http" | "https")
        && let Some(host) = url.host_str()
    {
        let port = url.port_or_known_default().unwrap_or(0);
        return format!("{}:{port}", host.to_ascii_lowercase());
    }
    if let Some((scheme, rest)) = target.split_once("://") {
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        let host = authority
            .rsplit_once('@')
            .map_or(authority, |(_, host)| host);
        if !host.is_empty() {
            return format!(
                "{}://{}",
                scheme.to_ascii_lowercase(),
                host.to_ascii_lowercase()
            );
        }
    }
    format!("{}:{target}", kind.code())
}

/// How many deliveries a claim may still put in flight in each lane: at most `cap` in flight
/// per lane, those of earlier claims (of any process) counted when a lane is first met. A
/// backend's claim reads due rows from lanes below their cap ([`Lanes::cap`]), counts each new
/// lane's deliveries in flight ([`Lanes::count`]), or passes over a lane another claim is
/// taking from at this moment ([`Lanes::pass`]), and takes a row only while its lane has room
/// ([`Lanes::has_room`], [`Lanes::take`]).
pub(crate) struct Lanes {
    cap: u32,
    room: HashMap<String, u32>,
    passed: Vec<String>,
}

impl Lanes {
    /// Lanes of at most `cap` deliveries in flight (at least one).
    pub(crate) fn new(cap: u32) -> Lanes {
        Lanes {
            cap: cap.max(1),
            room: HashMap::new(),
            passed: Vec::new(),
        }
    }

    /// The cap, as a bind.
    pub(crate) fn cap(&self) -> i64 {
        i64::from(self.cap)
    }

    /// Whether `lane`'s deliveries in flight were counted in this claim.
    pub(crate) fn counted(&self, lane: &str) -> bool {
        self.room.contains_key(lane)
    }

    /// `lane` has `in_flight` deliveries in flight besides this claim's.
    pub(crate) fn count(&mut self, lane: &str, in_flight: i64) {
        let in_flight = u32::try_from(in_flight.max(0)).unwrap_or(u32::MAX);
        self.room
            .insert(lane.to_string(), self.cap.saturating_sub(in_flight));
    }

    /// Another claim is taking from `lane` at this moment: this one leaves it alone.
    pub(crate) fn pass(&mut self, lane: &str) {
        self.room.insert(lane.to_string(), 0);
        self.passed.push(lane.to_string());
    }

    /// The lanes passed over, which this claim reads no more rows of.
    pub(crate) fn passed(&self) -> &[String] {
        &self.passed
    }

    /// Whether one more delivery of `lane` may go in flight.
    pub(crate) fn has_room(&self, lane: &str) -> bool {
        self.room.get(lane).is_some_and(|room| *room > 0)
    }

    /// One more delivery of `lane` goes in flight.
    pub(crate) fn take(&mut self, lane: &str) {
        if let Some(room) = self.room.get_mut(lane) {
            *room = room.saturating_sub(1);
        }
    }
}

/// Pages of due rows one claim reads at most. Each page's rows leave the due set or the lanes
/// below their cap (claimed, held for the hourly bound, grouped into a digest, or of a lane
/// that is full), so a page is never read twice; the bound only caps a claim's work.
pub(crate) const CLAIM_PAGES: usize = 8;

/// The templates of `endpoint` as a delivery row keeps them (JSON), none when it has none.
pub(crate) fn template_column(endpoint: &NotificationEndpoint) -> Option<String> {
    crate::store::Template::of(endpoint).and_then(|t| serde_json::to_string(&t).ok())
}

/// The delivery of a raised notification.
pub(crate) fn notified(
    row: DueRow,
    kind: MessagingServiceType,
    now: Millis,
) -> Result<Delivery, StoreError> {
    let broken = |what: &str| StoreError::Backend(format!("delivery {}: {what}", row.id));
    let alert_type = row
        .alert_type
        .and_then(AlertType::from_code)
        .ok_or_else(|| broken("type"))?;
    let alert = row
        .alert
        .as_deref()
        .and_then(|alert| serde_json::from_str(alert).ok())
        .ok_or_else(|| broken("alert"))?;
    // Only what deliveries add to the notification: one unreadable is left out, never a
    // reason to hold the delivery.
    let explanation = row
        .explanation
        .as_deref()
        .and_then(|json| serde_json::from_str(json).ok());
    Ok(Delivery {
        id: row.id,
        kind,
        target: row.target,
        attempts: u32::try_from(row.attempts).unwrap_or(0),
        token: row.lease_token + 1,
        notification: ClientNotification {
            id: row.notification_id,
            kind: alert_type,
            current: row.current_value,
            comparand: row.comparand,
            html: None,
            error: row.error,
            timestamp: time(row.created_at.unwrap_or(now)),
            server_time: time(now),
            task_id: row.task_id,
            task_name: row.task_name,
            url: row.url,
        },
        alert,
        secret: row.webhook_secret,
        user: row.owner,
        login_base: row.login_base,
        html: row.html.unwrap_or_default(),
        synthetic_expression: row.synthetic_expression.unwrap_or_default(),
        explanation,
        // An unreadable template is left out: the channel's own message goes instead.
        template: row
            .template
            .as_deref()
            .and_then(|json| serde_json::from_str(json).ok()),
        time_zone: row.time_zone,
        folder: row.folder,
        rendered: None,
        digest: Vec::new(),
        digest_total: 0,
    })
}

/// The delivery of a test notification: no notification id, no monitor, a fixed text.
pub(crate) fn test(row: DueRow, kind: MessagingServiceType, now: Millis) -> Delivery {
    Delivery {
        id: row.id,
        kind,
        target: row.target,
        attempts: u32::try_from(row.attempts).unwrap_or(0),
        token: row.lease_token + 1,
        notification: ClientNotification {
            id: None,
            kind: AlertType::NotEq,
            current: Some(TEST_TEXT.to_string()),
            comparand: None,
            html: None,
            error: None,
            timestamp: time(now),
            server_time: time(now),
            task_id: None,
            task_name: Some(TEST_NAME.to_string()),
            url: None,
        },
        alert: Alert {
            kind: AlertType::NotEq,
            value: None,
            parameters: None,
            remind_every_seconds: None,
        },
        secret: row.webhook_secret,
        user: row.owner,
        login_base: row.login_base,
        html: format!("<p>{TEST_TEXT}</p>"),
        synthetic_expression: TEST_NAME.to_string(),
        explanation: None,
        template: None,
        time_zone: row.time_zone,
        folder: None,
        rendered: None,
        digest: Vec::new(),
        digest_total: 0,
    }
}

/// A delivery as its owner sees it, as both backends read it.
#[derive(sqlx::FromRow)]
pub(crate) struct RecordRow {
    id: String,
    notification_id: Option<String>,
    kind: i64,
    target: String,
    state: String,
    attempts: i64,
    last_error: Option<String>,
    updated_at: i64,
}

pub(crate) const RECORD_COLUMNS: &str =
    "id, notification_id, kind, target, state, attempts, last_error, updated_at";

pub(crate) fn record(row: RecordRow) -> Result<DeliveryRecord, StoreError> {
    Ok(DeliveryRecord {
        kind: MessagingServiceType::from_code(row.kind)
            .ok_or_else(|| StoreError::Backend(format!("delivery {}: kind", row.id)))?,
        id: row.id,
        notification: row.notification_id,
        target: row.target,
        state: row.state,
        attempts: u32::try_from(row.attempts).unwrap_or(0),
        last_error: row.last_error,
        updated_at: row.updated_at,
    })
}

/// What delivery sends for the claimed `row`: a raised notification, or a test.
pub(crate) fn delivery(row: DueRow, now: Millis) -> Result<Delivery, StoreError> {
    let kind = MessagingServiceType::from_code(row.kind)
        .ok_or_else(|| StoreError::Backend(format!("delivery {}: kind", row.id)))?;
    match row.notification_id {
        Some(_) => notified(row, kind, now),
        None => Ok(test(row, kind, now)),
    }
}

/// The user whose deliveries of the last hour decide whether `row` is released, with the
/// bound `per_hour` (none: no bound): only a first try counts against it; a retry was counted.
pub(crate) fn counted(
    row: &DueRow,
    per_hour: Option<std::num::NonZeroU32>,
) -> Option<(&str, std::num::NonZeroU32)> {
    match (row.released_at, row.user_id.as_deref(), per_hour) {
        (None, Some(user), Some(per_hour)) => Some((user, per_hour)),
        _ => None,
    }
}

/// How many of a user's newest released deliveries to skip to find the `per_hour`-th.
pub(crate) fn nth_offset(per_hour: std::num::NonZeroU32) -> i64 {
    i64::from(per_hour.get()) - 1
}

/// When a user whose `per_hour`-th newest delivery was released at `nth` may have another
/// released, if not yet at `now`: an hour after it.
pub(crate) fn free_at(nth: Option<Millis>, now: Millis) -> Option<Millis> {
    const HOUR: Millis = 3_600_000;
    nth.map(|at| at + HOUR).filter(|free_at| *free_at > now)
}

/// The endpoints a notification goes to: none when its monitor is `muted` (the notification
/// is kept, only not sent); else those the monitor names; else those of the nearest folder up
/// its tree that names some (`inherited`, JSON); else every endpoint of the monitor's owner
/// (`stored`, JSON), as the specification says of a monitor without endpoints.
pub(crate) fn endpoints_to_notify<'a>(
    named: &'a [NotificationEndpoint],
    inherited: Option<&str>,
    stored: &str,
    muted: bool,
) -> Result<Cow<'a, [NotificationEndpoint]>, StoreError> {
    if muted {
        return Ok(Cow::Owned(Vec::new()));
    }
    if !named.is_empty() {
        return Ok(Cow::Borrowed(named));
    }
    if let Some(list) = inherited.map(parse_endpoints).transpose()?
        && !list.is_empty()
    {
        return Ok(Cow::Owned(list));
    }
    parse_endpoints(stored).map(Cow::Owned)
}

/// Endpoints stored as JSON.
pub(crate) fn parse_endpoints(stored: &str) -> Result<Vec<NotificationEndpoint>, StoreError> {
    serde_json::from_str(stored)
        .map_err(|err| StoreError::Backend(format!("stored endpoints: {err}")))
}

/// An e-mail endpoint's address as addresses are confirmed: trimmed, lower-cased.
pub(crate) fn mail_address(target: &str) -> String {
    target.trim().to_lowercase()
}

/// A new delivery's state and error: failed at once, saying why, when it goes to an address
/// nobody confirmed; pending otherwise.
pub(crate) fn first_state(unconfirmed: bool) -> (&'static str, Option<&'static str>) {
    if unconfirmed {
        ("failed", Some(UNCONFIRMED))
    } else {
        ("pending", None)
    }
}

/// The outcome of asking for a confirmation message on a notification's way out: the owner
/// having too many addresses waiting only means none is sent this time.
pub(crate) fn asked(result: Result<(), StoreError>) -> Result<(), StoreError> {
    match result {
        Ok(()) | Err(StoreError::Invalid { .. }) => Ok(()),
        Err(err) => Err(err),
    }
}

/// When a new delivery to `endpoint` goes, if not at once, and the key of the digest it joins:
/// the end of the current window of `digest.everyMinutes` (windows counted from the epoch, so
/// every delivery of a window shares its end), the next `digest.dailyAt` in the user's time
/// zone `zone`, or the end of the quiet hours it falls in, whichever is latest; a digest due
/// inside quiet hours waits for their end. The key names the endpoint and that time, so the
/// deliveries held for the same message find each other after a restart.
pub(crate) fn held_until(
    endpoint: &NotificationEndpoint,
    zone: &str,
    user: &str,
    now: Millis,
) -> Option<(Millis, String)> {
    let zone = zone.parse::<chrono_tz::Tz>().unwrap_or(chrono_tz::Tz::UTC);
    let digest = endpoint.digest.as_ref();
    let mut until = match (
        digest.and_then(|d| d.every_minutes),
        digest.and_then(|d| d.daily_at.as_deref()).and_then(clock),
    ) {
        (Some(minutes), _) if minutes > 0 => {
            let window = i64::from(minutes) * 60_000;
            Some((now / window + 1) * window)
        }
        (_, Some(at)) => Some(next_local(zone, at, now)),
        _ => None,
    };
    if let Some(quiet) = &endpoint.quiet_hours
        && let (Some(from), Some(to)) = (clock(&quiet.from), clock(&quiet.to))
    {
        let at = until.unwrap_or(now);
        if quiet_at(zone, from, to, at) {
            until = Some(next_local(zone, to, at));
        }
    }
    let until = until?;
    let key = format!(
        "{user}|{}|{}|{until}",
        endpoint.kind.code(),
        endpoint.value.as_deref().unwrap_or("")
    );
    Some((until, key))
}

/// `HH:MM` as a time of day.
pub(crate) fn clock(text: &str) -> Option<chrono::NaiveTime> {
    let (h, m) = text.trim().split_once(':')?;
    if h.len() != 2 || m.len() != 2 {
        return None;
    }
    chrono::NaiveTime::from_hms_opt(h.parse().ok()?, m.parse().ok()?, 0)
}

/// Whether `at` is within the quiet hours `from` to `to` in `zone` (spanning midnight when
/// `from` is later than `to`).
fn quiet_at(
    zone: chrono_tz::Tz,
    from: chrono::NaiveTime,
    to: chrono::NaiveTime,
    at: Millis,
) -> bool {
    let Some(local) = chrono::DateTime::from_timestamp_millis(at) else {
        return false;
    };
    let time = local.with_timezone(&zone).time();
    if from <= to {
        from <= time && time < to
    } else {
        time >= from || time < to
    }
}

/// The first moment after `now` when the clock in `zone` reads `at` (a time a daylight-saving
/// change skips is taken an hour later; one it repeats, the first time).
fn next_local(zone: chrono_tz::Tz, at: chrono::NaiveTime, now: Millis) -> Millis {
    use chrono::TimeZone;
    let Some(now_utc) = chrono::DateTime::from_timestamp_millis(now) else {
        return now;
    };
    let today = now_utc.with_timezone(&zone).date_naive();
    for day in 0..3 {
        let date = today + chrono::Days::new(day);
        let wall = date.and_time(at);
        let found = zone.from_local_datetime(&wall).earliest().or_else(|| {
            zone.from_local_datetime(&(wall + chrono::Duration::hours(1)))
                .earliest()
        });
        if let Some(moment) = found
            && moment.timestamp_millis() > now
        {
            return moment.timestamp_millis();
        }
    }
    now + 86_400_000
}

/// One notification of a digest, as both backends read it ([`digest_columns`]).
#[derive(sqlx::FromRow)]
pub(crate) struct DigestRow {
    notification_id: String,
    task_id: Option<String>,
    task_name: Option<String>,
    url: Option<String>,
    synthetic_expression: Option<String>,
    created_at: i64,
    explanation: Option<String>,
    alert_type: i64,
    current_value: Option<String>,
    error: Option<String>,
    folder: Option<String>,
}

/// The columns of [`DigestRow`], of notifications `n`: the value and the error cut to
/// [`DIGEST_VALUE_CHARS`](crate::store::DIGEST_VALUE_CHARS), so a digest reads a bounded amount
/// of each.
pub(crate) fn digest_columns() -> String {
    let chars = crate::store::DIGEST_VALUE_CHARS;
    format!(
        "n.id AS notification_id, n.task_id, n.task_name, n.url, n.synthetic_expression, \
         n.created_at, n.explanation, CAST(n.alert_type AS BIGINT) AS alert_type, \
         substr(n.current_value, 1, {chars}) AS current_value, \
         substr(n.error, 1, {chars}) AS error, \
         (SELECT f.name FROM tasks t JOIN folders f ON f.id = t.folder_id \
          WHERE t.id = n.task_id) AS folder"
    )
}

/// How many notifications of a digest its message reads (the rest are counted).
pub(crate) fn digest_items() -> i64 {
    i64::try_from(crate::store::DIGEST_ITEMS).unwrap_or(i64::MAX)
}

/// A row of a digest as delivery shows it.
pub(crate) fn digest_item(row: DigestRow) -> crate::store::DigestItem {
    let explanation = row
        .explanation
        .as_deref()
        .and_then(|json| serde_json::from_str::<crate::store::Explanation>(json).ok());
    let text = explanation
        .as_ref()
        .map(|e| {
            e.facts
                .as_ref()
                .map(|f| f.diff_text.clone())
                .unwrap_or_else(|| e.text.clone())
        })
        .unwrap_or_default();
    crate::store::DigestItem {
        notification: row.notification_id,
        name: row.task_name.or(row.url.clone()).unwrap_or_default(),
        expression: row.synthetic_expression.unwrap_or_default(),
        at: row.created_at,
        text,
        monitor: row.task_id,
        url: row.url,
        alert: AlertType::from_code(row.alert_type).unwrap_or(AlertType::NotEq),
        current: row.current_value,
        error: row.error,
        explanation,
        folder: row.folder,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wachet::model::{Digest, MessagingServiceType, QuietHours};

    fn at(text: &str) -> Millis {
        chrono::DateTime::parse_from_rfc3339(text)
            .unwrap()
            .timestamp_millis()
    }

    #[test]
    fn a_delivery_counts_against_its_receiving_host_or_else_its_endpoint() {
        use MessagingServiceType::{Email, Url, Webhook};
        assert_eq!(
            lane(Webhook, "https://Hooks.Example/a?b"),
            "hooks.example:443"
        );
        assert_eq!(
            lane(Webhook, "http://u:p@127.0.0.1:8080/x"),
            "127.0.0.1:8080"
        );
        assert_eq!(
            lane(Url, "jsons://user:secret@ntfy.example:8443/topic"),
            "jsons://ntfy.example:8443",
            "no password in a lane"
        );
        assert_eq!(lane(Url, "tgram://sealed~abc/42"), "tgram://sealed~abc");
        assert_eq!(lane(Email, "ada@example.com"), "0:ada@example.com");
        let mut lanes = Lanes::new(2);
        lanes.count("a", 1);
        assert!(lanes.has_room("a"));
        lanes.take("a");
        assert!(!lanes.has_room("a"), "one in flight before, one taken now");
        lanes.pass("b");
        assert!(!lanes.has_room("b") && lanes.passed() == ["b".to_string()]);
        assert!(!lanes.has_room("c"), "a lane not yet counted has no room");
    }

    #[test]
    fn held_deliveries_wait_for_their_window_the_daily_time_or_the_end_of_quiet_hours() {
        let mut endpoint = NotificationEndpoint::new(MessagingServiceType::Webhook, None);
        assert!(held_until(&endpoint, "UTC", "u", at("2026-12-06T22:00:00Z")).is_none());
        endpoint.digest = Some(Digest {
            every_minutes: Some(15),
            daily_at: None,
        });
        let (until, key) = held_until(&endpoint, "UTC", "u", at("2026-12-06T22:07:00Z")).unwrap();
        assert_eq!(until, at("2026-12-06T22:15:00Z"));
        let (same, same_key) =
            held_until(&endpoint, "UTC", "u", at("2026-12-06T22:14:59Z")).unwrap();
        assert_eq!((same, same_key), (until, key));
        // Daily at 08:00 in Berlin; quiet hours over midnight push a digest due inside them.
        endpoint.digest = Some(Digest {
            every_minutes: None,
            daily_at: Some("08:00".into()),
        });
        let daily = held_until(&endpoint, "Europe/Berlin", "u", at("2026-12-06T22:00:00Z"));
        assert_eq!(daily.unwrap().0, at("2026-12-07T07:00:00Z"));
        endpoint.digest = None;
        endpoint.quiet_hours = Some(QuietHours {
            from: "22:00".into(),
            to: "07:00".into(),
        });
        let quiet = |endpoint: &NotificationEndpoint, now| {
            held_until(endpoint, "Europe/Berlin", "u", at(now)).map(|h| h.0)
        };
        assert_eq!(
            quiet(&endpoint, "2026-12-06T22:30:00Z"),
            Some(at("2026-12-07T06:00:00Z"))
        );
        assert_eq!(
            quiet(&endpoint, "2026-12-07T05:59:00Z"),
            Some(at("2026-12-07T06:00:00Z"))
        );
        assert_eq!(
            quiet(&endpoint, "2026-12-07T06:00:00Z"),
            None,
            "the quiet hours are over"
        );
        assert_eq!(quiet(&endpoint, "2026-12-06T12:00:00Z"), None);
        // Over the spring change (Berlin, 29 March 2026: 02:00 becomes 03:00).
        endpoint.quiet_hours = Some(QuietHours {
            from: "01:00".into(),
            to: "02:30".into(),
        });
        assert_eq!(
            quiet(&endpoint, "2026-03-29T00:30:00Z"),
            Some(at("2026-03-29T01:30:00Z"))
        );
        // Over the autumn change (Berlin, 25 October 2026: 03:00 becomes 02:00 again): the
        // quiet hours end at the first 02:30.
        assert_eq!(
            quiet(&endpoint, "2026-10-24T23:30:00Z"),
            Some(at("2026-10-25T00:30:00Z"))
        );
        // A daily digest at 08:00 in Berlin goes at 07:00 UTC after the change, 06:00 before.
        endpoint.quiet_hours = None;
        endpoint.digest = Some(Digest {
            every_minutes: None,
            daily_at: Some("08:00".into()),
        });
        let daily = |now| held_until(&endpoint, "Europe/Berlin", "u", at(now)).map(|h| h.0);
        assert_eq!(
            daily("2026-10-24T12:00:00Z"),
            Some(at("2026-10-25T07:00:00Z"))
        );
        assert_eq!(
            daily("2026-10-24T05:00:00Z"),
            Some(at("2026-10-24T06:00:00Z"))
        );
    }
}
