//! Notifications (2.15), their listing range (2.9) and alert content (2.16).

use super::enums::{AlertType, JobType};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// A raised alert (ClientNotification, 2.15).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ClientNotification {
    /// Alert id.
    pub id: Option<String>,
    /// The alert type that fired.
    #[serde(rename = "type")]
    pub kind: AlertType,
    /// Current value.
    pub current: Option<String>,
    /// Previous value or comparison value.
    pub comparand: Option<String>,
    /// HTML content, only when asked for.
    pub html: Option<String>,
    /// Error text of the check.
    pub error: Option<String>,
    /// When the alert was raised.
    pub timestamp: DateTime<Utc>,
    /// The server's clock when answering.
    pub server_time: DateTime<Utc>,
    /// Monitor id.
    pub task_id: Option<String>,
    /// Monitor name.
    pub task_name: Option<String>,
    /// Monitored URL.
    pub url: Option<String>,
}

/// A page of notifications, newest first (ClientNotificationRange, 2.9).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ClientNotificationRange {
    /// The notifications.
    pub data: Option<Vec<ClientNotification>>,
    /// Present when more exist.
    pub continuation_token: Option<String>,
}

/// The content of a notification (ClientAlertContentResponse, 2.16).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ClientAlertContentResponse {
    /// What the alert speaks of.
    pub job_type: JobType,
    /// One-line description such as `content changed` or `2 pages added`.
    pub synthetic_expression: Option<String>,
    /// URL of the page.
    pub url: Option<String>,
    /// Monitor name.
    pub name: Option<String>,
    /// The notification content as HTML.
    pub html: Option<String>,
    /// When the alert was raised.
    pub timestamp_utc: DateTime<Utc>,
}
