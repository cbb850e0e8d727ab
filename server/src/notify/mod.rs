//! Notifications: what a check's alerts raise ([`wachet::alerts`]) becomes a stored
//! notification with its HTML content and its deliveries in the outbox, which [`deliver`]
//! sends to the endpoints. [`notification`] is the one place a raised alert becomes a
//! notification, so it is where an alert about a change nobody could see is dropped.

pub mod change;
pub mod channel;
pub mod content;
pub mod deliver;
pub mod email;
pub mod template;

use crate::store::{Explanation, NewNotification};
use change::VisibleChange;
use wachet::Monitor;
use wachet::alerts::Raised;
use wachet::alerts::compare::Comparator;
use wachet::model::{AlertType, CompareType};

/// Why a try to send failed; `permanent` when no retry can change it.
#[derive(Debug)]
pub struct SendError {
    /// What went wrong.
    pub message: String,
    /// Whether no retry can change it.
    pub permanent: bool,
}

impl From<String> for SendError {
    fn from(message: String) -> Self {
        SendError {
            message,
            permanent: false,
        }
    }
}

impl From<&str> for SendError {
    fn from(message: &str) -> Self {
        message.to_string().into()
    }
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
        // Their verdict is on the value itself (or on its failing or staying the same), not on a
        // difference that masks could leave empty.
        (
            AlertType::Error
            | AlertType::Eq
            | AlertType::Contains
            | AlertType::NotContains
            | AlertType::Gt
            | AlertType::Lt
            | AlertType::Increased
            | AlertType::Decreased
            | AlertType::Unchanged,
            _,
        ) => true,
    }
}

/// The stored form of `raised`, a notification of `monitor` at `at`; `previous` is the value
/// the change is shown against. The change is shown through the monitor's noise masks
/// ([`Comparator::lenient`]), its `compareLines` and normalisation ([`VisibleChange`]).
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
    // A change the learned masks would hide, raised because some of its lines are news, is
    // shown through the masks a person wrote only: the news must be visible.
    let written;
    let shown = match raised.doubt {
        Some(_) => {
            written = Monitor {
                noise: monitor
                    .noise
                    .as_ref()
                    .map(|masks| masks.iter().filter(|m| !m.learned).cloned().collect()),
                ..monitor.clone()
            };
            &written
        }
        None => monitor,
    };
    let change = raised.current.as_deref().map(|current| {
        let order = shown.compare_lines.unwrap_or_default();
        VisibleChange::with_order(&Comparator::lenient(shown), order, previous, current)
    });
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
        doubt: raised.doubt.as_deref(),
        change: change.as_ref(),
    };
    let html = content::html(&content);
    let explanation = Explanation {
        first_seen: raised.first_seen,
        change: change.as_ref().map(|c| c.data().clone()),
        text: content::plain(&content),
        facts: Some(template::facts(
            previous,
            raised.current.as_deref(),
            change.as_ref(),
            raised.doubt.as_deref(),
        )),
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

#[cfg(test)]
mod tests {
    use super::*;
    use wachet::model::{Alert, JobType, NoiseMask};

    fn raised(kind: AlertType, previous: &str, current: &str) -> Raised {
        Raised {
            alert: Alert {
                kind,
                value: None,
                parameters: None,
                remind_every_seconds: None,
            },
            job_type: JobType::SinglePage,
            page_url: None,
            current: Some(current.to_string()),
            comparand: Some(previous.to_string()),
            error: None,
            synthetic_expression: "content changed".into(),
            matches: Vec::new(),
            first_seen: None,
            doubt: None,
        }
    }

    #[test]
    fn an_alert_is_sent_only_when_its_side_of_the_change_shows() {
        let mut monitor = Monitor::new("https://example.com/");
        monitor.noise = Some(vec![NoiseMask {
            pattern: r"\d+".into(),
            learned: false,
            active: true,
            example: None,
        }]);
        let at = chrono::Utc::now();
        // The counter crossed a thousand (two masked spans now) and a sentence went away.
        let (before, after) = ("Seen 999 times. Free shipping.", "Seen 1 000 times.");
        let sent = |kind| notification(&monitor, &raised(kind, before, after), at, Some(before));
        assert!(sent(AlertType::NotEq).is_some());
        assert!(sent(AlertType::Removed).is_some());
        assert!(sent(AlertType::Added).is_none(), "only noise was added");
        // Nothing but the counter: nothing to send, whatever the alert.
        let (before, after) = ("Seen 999 times.", "Seen 1 000 times.");
        for kind in [AlertType::NotEq, AlertType::Added, AlertType::Removed] {
            let raised = raised(kind, before, after);
            assert!(notification(&monitor, &raised, at, Some(before)).is_none());
        }
        // Other alerts say what they say, change or not.
        let contains = raised(AlertType::Contains, before, after);
        assert!(notification(&monitor, &contains, at, Some(before)).is_some());
    }
}
