//! Notifications: endpoints 4 (the list, newest first) and 5 (one notification's content),
//! and the extension that tells how each of its deliveries went.

use super::AppState;
use super::auth::CurrentUser;
use super::body::{ApiJson, ApiQuery};
use super::problem::{ApiError, Problem};
use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};
use wachet::model::{ClientAlertContentResponse, ClientNotificationRange};

/// Query of the notification listing.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
pub struct NotificationQuery {
    /// Only this monitor's notifications; all when omitted.
    task_id: Option<String>,
    /// Oldest time included (ISO 8601).
    from: Option<String>,
    /// Newest time included (ISO 8601).
    to: Option<String>,
    /// Notifications per page, 1 to 500, default 50.
    count: Option<i64>,
    /// Where the next page starts, from the previous page.
    continuation_token: Option<String>,
    /// Include the HTML content.
    #[serde(default)]
    html: bool,
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
        .notifications(&user, task, &page, query.html)
        .await?;
    let (_, next) = cursors.page_end(&scope, &mut rows, page.limit);
    Ok(ApiJson(ClientNotificationRange {
        data: Some(rows.into_iter().map(|(_, n)| n).collect()),
        continuation_token: next,
    }))
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
    /// Where it goes: the endpoint's address or URL.
    target: String,
    /// `pending` (not yet tried, or to be tried again), `delivered` or `failed` (for good).
    state: String,
    /// Tries so far.
    attempts: u32,
    /// The error of the last try, if it failed.
    last_error: Option<String>,
}

/// How each delivery of a notification went.
#[utoipa::path(get, path = "/thirdparty/v1/notification/{alertId}/deliveries", tag = "notification",
    description = "Extension: the deliveries of a notification, one per endpoint it went to, by \
                   target: its state (`pending`, `delivered`, `failed`), the tries so far and the \
                   last error. Another user's notification is a 404, as an unknown one.",
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
    // The owner is checked by reading the notification as endpoint 5 does: the deliveries
    // themselves are stored by notification only.
    state.store().notification(&user, &id).await?;
    let deliveries = state.store().deliveries_of(&id).await?;
    Ok(ApiJson(
        deliveries
            .into_iter()
            .map(|(target, state, attempts, last_error)| DeliveryState {
                target,
                state,
                attempts,
                last_error,
            })
            .collect(),
    ))
}
