//! Notifications: what a check's alerts raise ([`wachet::alerts`]) becomes a stored
//! notification with its HTML content and its deliveries in the outbox, which [`deliver`]
//! sends to the endpoints.

pub mod content;
pub mod deliver;
pub mod email;

use crate::store::NewNotification;
use wachet::Monitor;
use wachet::alerts::Raised;

/// The stored form of `raised`, a notification of `monitor` at `at`; `previous` is the value
/// the change is shown against.
pub fn notification(
    monitor: &Monitor,
    raised: &Raised,
    at: chrono::DateTime<chrono::Utc>,
    previous: Option<&str>,
) -> NewNotification {
    let url = raised
        .page_url
        .clone()
        .or_else(|| monitor.url.clone())
        .unwrap_or_default();
    let name = monitor.name.as_deref().unwrap_or(&url);
    let html = content::html(&content::Content {
        name,
        url: &url,
        at,
        first_seen: raised.first_seen,
        expression: &raised.synthetic_expression,
        error: raised.error.as_deref(),
        previous,
        current: raised.current.as_deref(),
    });
    NewNotification {
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
    }
}
