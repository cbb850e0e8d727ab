//! Notifications: endpoints 4 (the list, newest first) and 5 (one notification's content),
//! and the extensions that tell how each of its deliveries went and try one again now, over
//! [`crate::ops::notifications`].

pub use crate::ops::notifications::DeliveryState;

use super::auth::CurrentUser;
use super::body::{ApiJson, ApiQuery};
use super::problem::{ApiError, Problem};
use crate::ops::Ctx;
use crate::ops::notifications;
use crate::ops::paging::PageQuery;
use axum::extract::{Path, State};
use serde::Deserialize;
use wachet::model::{ClientAlertContentResponse, ClientNotificationRange};

/// Query of the notification listing.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
pub struct NotificationQuery {
    /// Only this monitor's notifications; all when omitted.
    task_id: Option<String>,
    /// Oldest time included (ISO 8601 date-time; no offset is UTC, a bare date its midnight).
    from: Option<String>,
    /// Newest time included (ISO 8601 date-time, read as `from` is).
    to: Option<String>,
    /// Notifications per page, 1 to 500, default 50.
    count: Option<i64>,
    /// Where the next page starts, from the previous page.
    continuation_token: Option<String>,
    /// Include the HTML content.
    #[serde(default, deserialize_with = "crate::ops::query::deserialize_boolean")]
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
    State(state): State<Ctx>,
    CurrentUser(user): CurrentUser,
    ApiQuery(query): ApiQuery<NotificationQuery>,
) -> Result<ApiJson<ClientNotificationRange>, ApiError> {
    let page = PageQuery {
        from: query.from.as_deref(),
        to: query.to.as_deref(),
        count: query.count,
        token: query.continuation_token.as_deref(),
    };
    Ok(ApiJson(
        notifications::page(&state, &user, query.task_id.as_deref(), page, query.html).await?,
    ))
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
    State(state): State<Ctx>,
    CurrentUser(user): CurrentUser,
    Path(id): Path<String>,
) -> Result<ApiJson<ClientAlertContentResponse>, ApiError> {
    Ok(ApiJson(notifications::get(&state, &user, &id).await?))
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
    State(state): State<Ctx>,
    CurrentUser(user): CurrentUser,
    Path(id): Path<String>,
) -> Result<ApiJson<Vec<DeliveryState>>, ApiError> {
    Ok(ApiJson(
        notifications::deliveries(&state, &user, &id).await?,
    ))
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
    State(state): State<Ctx>,
    CurrentUser(user): CurrentUser,
    Path((id, delivery)): Path<(String, String)>,
) -> Result<ApiJson<Vec<DeliveryState>>, ApiError> {
    notifications::retry(&state, &user, &id, &delivery).await?;
    Ok(ApiJson(
        notifications::deliveries(&state, &user, &id).await?,
    ))
}
