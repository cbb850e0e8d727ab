//! Notifications: what a check's alerts raise ([`wachet::alerts`]) becomes a stored
//! notification with its HTML content and its deliveries in the outbox, which [`deliver`]
//! sends to the endpoints. [`notification`] is the one place a raised alert becomes a
//! notification, so it is where an alert about a change nobody could see is dropped.

pub mod change;
pub mod content;
pub mod deliver;
pub mod email;

use crate::store::NewNotification;
use change::{ChangeData, VisibleChange};
use serde::{Deserialize, Serialize};
use wachet::Monitor;
use wachet::alerts::Raised;
use wachet::alerts::compare::Comparator;
use wachet::model::{AlertType, CompareType};

/// What a notification carries beside the API's ClientNotification, for its deliveries: the
/// webhook payload's `firstSeen` and `change`, and the e-mail's plain-text part.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Explanation {
    /// When what it reports was first seen, when earlier than the notification (a change or a
    /// failure confirmed by later checks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_seen: Option<chrono::DateTime<chrono::Utc>>,
    /// The change, in key form with noise masked, when the check had a value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<ChangeData>,
    /// The content as plain text (the e-mail's alternative to the HTML).
    #[serde(default)]
    pub text: String,
}

/// Whether `change` holds what `raised` reports, when it reports a change.
fn tells(raised: &Raised, change: &VisibleChange) -> bool {
    let compare = raised
        .alert
        .parameters
        .as_ref()
        .map(|p| p.compare)
        .unwrap_or_default();
    match (raised.alert.kind, compare) {
        (AlertType::Added, _) | (AlertType::NotEq, CompareType::Added) => change.added_visible(),
        (AlertType::Removed, _) | (AlertType::NotEq, CompareType::Removed) => {
            change.removed_visible()
        }
        (AlertType::NotEq, _) => change.is_visible(),
        _ => true,
    }
}

/// The stored form of `raised`, a notification of `monitor` at `at`; `previous` is the value
/// the change is shown against. The change is shown through the monitor's noise masks
/// ([`Comparator::lenient`]) and normalisation ([`VisibleChange`]).
///
/// `None` when `raised` reports a change (NotEq, Added, Removed, with a previous value) of
/// which nothing visible is left once noise and normalisation are taken out (for Added, or
/// compare Added, nothing visible added; for Removed, or compare Removed, nothing visible
/// removed): such an alert is never stored nor delivered (logged at debug with the monitor's
/// id).
pub fn notification(
    monitor: &Monitor,
    raised: &Raised,
    at: chrono::DateTime<chrono::Utc>,
    previous: Option<&str>,
) -> Option<NewNotification> {
    let url = raised
        .page_url
        .clone()
        .or_else(|| monitor.url.clone())
        .unwrap_or_default();
    let change = raised
        .current
        .as_deref()
        .map(|current| VisibleChange::between(&Comparator::lenient(monitor), previous, current));
    if previous.is_some()
        && let Some(change) = &change
        && !tells(raised, change)
    {
        tracing::debug!(
            task = monitor.id.as_deref().unwrap_or(""),
            alert = %raised.alert.kind,
            "not sent: nothing visible changed once noise and normalisation are taken out"
        );
        return None;
    }
    let name = monitor.name.as_deref().unwrap_or(&url);
    let content = content::Content {
        name,
        url: &url,
        at,
        first_seen: raised.first_seen,
        expression: &raised.synthetic_expression,
        error: raised.error.as_deref(),
        change: change.as_ref(),
    };
    let html = content::html(&content);
    let explanation = Explanation {
        first_seen: raised.first_seen,
        change: change.as_ref().map(|c| c.data().clone()),
        text: content::plain(&content),
    };
    Some(NewNotification {
        task_id: monitor.id.clone().unwrap_or_default(),
        page_url: raised.page_url.clone(),
        job_type: raised.job_type,
        alert: raised.alert.clone(),
        created_at: at.timestamp_millis(),
        current: raised.current.clone(),
        comparand: raised.comparand.clone(),
        error: raised.error.clone(),
        url: Some(url),
        synthetic_expression: raised.synthetic_expression.clone(),
        html,
        endpoints: monitor.notification_endpoints.clone().unwrap_or_default(),
        explanation: Some(explanation),
    })
}
