//! The outbox as stored: the texts of test notifications and of unconfirmed addresses, a due
//! delivery's row read back as what delivery sends, and a delivery as its owner sees it.

use super::time;
use crate::store::{Delivery, DeliveryRecord, Millis, StoreError};
use std::borrow::Cow;
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
}

/// The columns of [`DueRow`] this module adds to the claims' own: the delivery's templates,
/// the user's time zone and the monitor's folder's name.
pub(crate) const DUE_EXTRA_COLUMNS: &str = "d.template, u.time_zone, \
     (SELECT f.name FROM tasks t JOIN folders f ON f.id = t.folder_id WHERE t.id = n.task_id) \
     AS folder";

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
