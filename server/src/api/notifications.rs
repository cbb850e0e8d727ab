//! Notifications: endpoints 4 (the list, newest first) and 5 (one notification's content),
//! and the extensions that tell how each of its deliveries went and try one again now.

use super::AppState;
use super::auth::CurrentUser;
use super::body::{ApiJson, ApiQuery};
use super::problem::{ApiError, Problem};
use crate::store::{DeliveryRecord, now_millis};
use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};
use wachet::model::{ClientAlertContentResponse, ClientNotificationRange};

/// Query of the notification listing.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
pub struct NotificationQuery {
    /// Only this monitor's notifications; all when omitted.
    pub(crate) task_id: Option<String>,
    /// Oldest time included (ISO 8601 date-time; no offset is UTC, a bare date its midnight).
    pub(crate) from: Option<String>,
    /// Newest time included (ISO 8601 date-time, read as `from` is).
    pub(crate) to: Option<String>,
    /// Notifications per page, 1 to 500, default 50.
    pub(crate) count: Option<i64>,
    /// Where the next page starts, from the previous page.
    pub(crate) continuation_token: Option<String>,
    /// Include the HTML content.
    #[serde(default, deserialize_with = "super::query::deserialize_boolean")]
    pub(crate) html: bool,
}

/// Endpoint 4: one page of notifications, newest first.
#[utoipa::path(get, path = "/thirdparty/v1/notification/list", tag = "notification",
    security(("bearer" = [])),
    params(NotificationQuery),
    responses(
        (status = 200, description = "Notifications, newest first", body = ClientNotificationRange),
        (status = 400, description = "Bad count, date or continuation token", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "No valid token", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such monitor", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_notifications(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    ApiQuery(query): ApiQuery<NotificationQuery>,
) -> Result<ApiJson<ClientNotificationRange>, ApiError> {
    Ok(ApiJson(page(&state, &user, &query).await?))
}

/// One page of the user's notifications as endpoint 4 gives it (the web interface's list, with
/// the same continuation tokens).
pub(crate) async fn page(
    state: &AppState,
    user: &str,
    query: &NotificationQuery,
) -> Result<ClientNotificationRange, ApiError> {
    let cursors = &state.inner.cursors;
    let task = query.task_id.as_deref().filter(|t| !t.is_empty());
    let scope = format!("notification:{user}:{}", task.unwrap_or(""));
    let page = cursors.time_page(
        &scope,
        query.from.as_deref(),
        query.to.as_deref(),
        query.count,
        query.continuation_token.as_deref(),
    )?;
    let mut rows = state
        .store()
        .notifications(user, task, &page, query.html)
        .await?;
    let (_, next) = cursors.page_end(&scope, &mut rows, page.limit);
    Ok(ClientNotificationRange {
        data: Some(rows.into_iter().map(|(_, n)| n).collect()),
        continuation_token: next,
    })
}

/// Endpoint 5: a notification's content as HTML, the same as its e-mail.
#[utoipa::path(get, path = "/thirdparty/v1/notification/{alertId}", tag = "notification",
    security(("bearer" = [])),
    params(("alertId" = String, Path, description = "Notification id")),
    responses(
        (status = 200, description = "The notification content", body = ClientAlertContentResponse),
        (status = 401, description = "No valid token", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such notification", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn get_notification(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path(id): Path<String>,
) -> Result<ApiJson<ClientAlertContentResponse>, ApiError> {
    Ok(ApiJson(state.store().notification(&user, &id).await?))
}

/// How one delivery of a notification went (extension).
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryState {
    /// The delivery's id (the `X-Wachet-Delivery` header of webhooks; names it for a retry).
    pub id: String,
    /// Where it goes: the endpoint's address or URL.
    pub target: String,
    /// `pending` (not yet tried, or to be tried again), `delivered` or `failed` (for good).
    pub state: String,
    /// Tries so far.
    pub attempts: u32,
    /// The error of the last try, if it failed.
    pub last_error: Option<String>,
}

impl From<DeliveryRecord> for DeliveryState {
    fn from(record: DeliveryRecord) -> Self {
        DeliveryState {
            id: record.id,
            target: record.target,
            state: record.state,
            attempts: record.attempts,
            last_error: record.last_error,
        }
    }
}

/// How each delivery of a notification went.
#[utoipa::path(get, path = "/thirdparty/v1/notification/{alertId}/deliveries", tag = "notification",
    description = "Extension: the deliveries of a notification, one per endpoint it went to, by \
                   target: its id, state (`pending`, `delivered`, `failed`), the tries so far \
                   and the last error. Another user's notification is a 404, as an unknown one.",
    security(("bearer" = [])),
    params(("alertId" = String, Path, description = "Notification id")),
    responses(
        (status = 200, description = "The deliveries, by target", body = [DeliveryState]),
        (status = 401, description = "No valid token", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such notification", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn notification_deliveries(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path(id): Path<String>,
) -> Result<ApiJson<Vec<DeliveryState>>, ApiError> {
    Ok(ApiJson(deliveries(&state, &user, &id).await?))
}

/// The deliveries of the user's notification `id` (the same 404 for another user's as for an
/// unknown one).
pub(crate) async fn deliveries(
    state: &AppState,
    user: &str,
    id: &str,
) -> Result<Vec<DeliveryState>, ApiError> {
    // The owner is checked by reading the notification as endpoint 5 does: the deliveries
    // themselves are stored by notification only.
    state.store().notification(user, id).await?;
    let deliveries = state.store().delivery_records(id).await?;
    Ok(deliveries.into_iter().map(DeliveryState::from).collect())
}

/// Tries a delivery of a notification again now (extension).
#[utoipa::path(post, path = "/thirdparty/v1/notification/{alertId}/deliveries/{deliveryId}/retry", tag = "notification",
    description = "Extension: makes a failed (or waiting) delivery due now. The delivery loop \
                   sends it like any other, through the outbox: one more try, counted with the \
                   earlier ones; a first try still waits for the hourly bound on deliveries. \
                   A delivered one, one being tried right now, or one to an e-mail address \
                   nobody confirmed is refused. Another user's notification or delivery is a \
                   404, as an unknown one.",
    security(("bearer" = [])),
    params(
        ("alertId" = String, Path, description = "Notification id"),
        ("deliveryId" = String, Path, description = "Delivery id, from the deliveries list"),
    ),
    responses(
        (status = 200, description = "Due now; the notification's deliveries", body = [DeliveryState]),
        (status = 400, description = "Delivered already, being tried, or to an unconfirmed address", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "No valid token", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such notification or delivery", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn retry_delivery(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path((id, delivery)): Path<(String, String)>,
) -> Result<ApiJson<Vec<DeliveryState>>, ApiError> {
    retry(&state, &user, &id, &delivery).await?;
    Ok(ApiJson(deliveries(&state, &user, &id).await?))
}

/// Makes the user's delivery `delivery` of notification `id` due now.
pub(crate) async fn retry(
    state: &AppState,
    user: &str,
    id: &str,
    delivery: &str,
) -> Result<(), ApiError> {
    state.store().notification(user, id).await?;
    state
        .store()
        .retry_delivery(user, Some(id), delivery, now_millis())
        .await?;
    Ok(())
}
