//! The extension `GET`/`PUT /user/notificationEndpoints` (DECISIONS.md): the user's own
//! notification endpoints, used by monitors with none of their own, and the webhook secret
//! that signs webhook deliveries.

use super::auth::CurrentUser;
use super::body::ApiJson;
use super::problem::{ApiError, Problem};
use super::{AppState, rules};
use axum::extract::State;
use serde::{Deserialize, Serialize};
use wachet::model::NotificationEndpoint;

/// The user's notification settings.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NotificationSettings {
    /// Where notifications of monitors without endpoints of their own go.
    notification_endpoints: Vec<NotificationEndpoint>,
    /// The key of the `X-Wachet-Signature` HMAC of webhook deliveries (its UTF-8 bytes).
    webhook_secret: String,
}

/// The body of `PUT /user/notificationEndpoints`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EndpointsUpdate {
    /// The new list; it replaces the old one.
    #[serde(default)]
    notification_endpoints: Vec<NotificationEndpoint>,
}

async fn settings(state: &AppState, user: &str) -> Result<ApiJson<NotificationSettings>, ApiError> {
    let record = state
        .store()
        .user_by_id(user)
        .await?
        .ok_or(ApiError::NotFound)?;
    Ok(ApiJson(NotificationSettings {
        notification_endpoints: record.notification_endpoints,
        webhook_secret: record.webhook_secret,
    }))
}

/// The user's notification endpoints and webhook secret (extension).
#[utoipa::path(get, path = "/thirdparty/v1/user/notificationEndpoints", tag = "user",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The settings", body = NotificationSettings),
        (status = 401, description = "No valid token", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn get_endpoints(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
) -> Result<ApiJson<NotificationSettings>, ApiError> {
    settings(&state, &user).await
}

/// Replaces the user's notification endpoints (extension).
#[utoipa::path(put, path = "/thirdparty/v1/user/notificationEndpoints", tag = "user",
    security(("bearer" = [])),
    request_body(content = EndpointsUpdate, content_type = "application/json"),
    responses(
        (status = 200, description = "The settings", body = NotificationSettings),
        (status = 400, description = "An endpoint fails validation", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "No valid token", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn put_endpoints(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    ApiJson(update): ApiJson<EndpointsUpdate>,
) -> Result<ApiJson<NotificationSettings>, ApiError> {
    rules::endpoint_list(&update.notification_endpoints)?;
    state
        .store()
        .set_notification_endpoints(&user, &update.notification_endpoints)
        .await?;
    settings(&state, &user).await
}
