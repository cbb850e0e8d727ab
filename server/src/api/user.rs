//! The extension `GET`/`PUT /user/notificationEndpoints` (DECISIONS.md): the user's own
//! notification endpoints, used by monitors with none of their own, and the webhook secret
//! that signs webhook deliveries; the confirmation of e-mail addresses other than the
//! account's own (`POST /user/notificationEndpoints/confirm`), and the rotation of the webhook
//! secret (`POST /user/webhookSecret`). All extensions.

use super::auth::CurrentUser;
use super::body::ApiJson;
use super::problem::{ApiError, Problem};
use super::{AppState, rules};
use crate::secrets;
use crate::store::UserRecord;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use wachet::model::{MessagingServiceType, NotificationEndpoint};

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
    let record = account(state, user).await?;
    let mut endpoints = record.notification_endpoints;
    mark_confirmed(state, user, endpoints.iter_mut()).await?;
    Ok(ApiJson(NotificationSettings {
        notification_endpoints: endpoints,
        webhook_secret: record.webhook_secret,
    }))
}

/// Sets `confirmed` on each e-mail endpoint of `user` (their own address always is); reads
/// nothing when there is no e-mail endpoint, so monitors without one cost nothing more.
pub(crate) async fn mark_confirmed<'a>(
    state: &AppState,
    user: &str,
    endpoints: impl Iterator<Item = &'a mut NotificationEndpoint>,
) -> Result<(), ApiError> {
    let mut emails: Vec<&mut NotificationEndpoint> = endpoints
        .filter(|endpoint| endpoint.kind == MessagingServiceType::Email)
        .collect();
    if emails.is_empty() {
        return Ok(());
    }
    let own = account(state, user).await?.email;
    let addresses = state.store().email_addresses(user).await?;
    for endpoint in &mut emails {
        let address = normalized(endpoint);
        endpoint.confirmed = Some(
            address == own
                || addresses
                    .iter()
                    .any(|a| a.confirmed && a.address == address),
        );
    }
    Ok(())
}

async fn account(state: &AppState, user: &str) -> Result<UserRecord, ApiError> {
    state
        .store()
        .user_by_id(user)
        .await?
        .ok_or(ApiError::NotFound)
}

/// An e-mail endpoint's address as addresses are kept: trimmed, lower-cased.
fn normalized(endpoint: &NotificationEndpoint) -> String {
    endpoint
        .value
        .as_deref()
        .unwrap_or("")
        .trim()
        .to_lowercase()
}

/// The user's notification endpoints and webhook secret (extension).
#[utoipa::path(get, path = "/thirdparty/v1/user/notificationEndpoints", tag = "user",
    description = "Extension: the user's own notification endpoints (each e-mail endpoint with \
                   `confirmed`) and the webhook secret.",
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

/// Replaces the user's notification endpoints (extension). An e-mail address other than the
/// account's own gets a message with a confirmation code first, and no notification until
/// the code is entered with `POST /user/notificationEndpoints/confirm`.
#[utoipa::path(put, path = "/thirdparty/v1/user/notificationEndpoints", tag = "user",
    description = "Extension: replaces the user's own notification endpoints. An e-mail address \
                   other than the account's own is mailed a confirmation code first and gets no \
                   notification until the code is entered with \
                   POST /user/notificationEndpoints/confirm.",
    security(("bearer" = [])),
    request_body(content = EndpointsUpdate, content_type = "application/json"),
    responses(
        (status = 200, description = "The settings", body = NotificationSettings),
        (status = 400, description = "An endpoint fails validation, or too many e-mail addresses wait for confirmation", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "No valid token", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn put_endpoints(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    ApiJson(update): ApiJson<EndpointsUpdate>,
) -> Result<ApiJson<NotificationSettings>, ApiError> {
    rules::endpoint_list(&update.notification_endpoints)?;
    let own = account(&state, &user).await?.email;
    for endpoint in &update.notification_endpoints {
        if endpoint.kind == MessagingServiceType::Email && normalized(endpoint) != own {
            state
                .store()
                .request_email_confirmation(&user, &normalized(endpoint), false)
                .await?;
        }
    }
    state
        .store()
        .set_notification_endpoints(&user, &update.notification_endpoints)
        .await?;
    settings(&state, &user).await
}

/// The body of `POST /user/notificationEndpoints/confirm`: a code, or an address to mail one to.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Confirmation {
    /// The code a confirmation message brought: confirms its address.
    #[serde(default)]
    code: Option<String>,
    /// An e-mail address to send a (new) confirmation message to, such as one a monitor's
    /// endpoints name (at most one message an hour to an address).
    #[serde(default)]
    address: Option<String>,
}

/// Confirms an e-mail address with the code mailed to it, or asks for a confirmation message
/// (extension).
#[utoipa::path(post, path = "/thirdparty/v1/user/notificationEndpoints/confirm", tag = "user",
    description = "Extension: notifications go by e-mail to an address other than the account's \
                   own only once it is confirmed. Adding it (to the user's endpoints, or a \
                   monitor's endpoints when a notification first goes there) mails it a code; \
                   `{\"code\"}` confirms the address, `{\"address\"}` mails a new code (at \
                   most one an hour to an address; at most 20 addresses wait at once).",
    security(("bearer" = [])),
    request_body(content = Confirmation, content_type = "application/json"),
    responses(
        (status = 200, description = "The settings, with each e-mail endpoint's `confirmed`", body = NotificationSettings),
        (status = 400, description = "No address waits for the code, the address is no e-mail address, a message went to it within the hour, or too many addresses wait", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "No valid token", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn confirm_address(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    ApiJson(request): ApiJson<Confirmation>,
) -> Result<ApiJson<NotificationSettings>, ApiError> {
    match (request.code.as_deref(), request.address.as_deref()) {
        (Some(code), _) if !code.trim().is_empty() => {
            state
                .store()
                .confirm_email(&user, &secrets::sha256_hex(code.trim()))
                .await?
                .ok_or_else(|| ApiError::field("code", "no address waits for this code"))?;
        }
        (_, Some(address)) => {
            let address = address.trim().to_lowercase();
            if !rules::is_email(&address) {
                return Err(ApiError::field("address", "not an e-mail address"));
            }
            if address != account(&state, &user).await?.email {
                state
                    .store()
                    .request_email_confirmation(&user, &address, true)
                    .await?;
            }
        }
        _ => return Err(ApiError::field("code", "is required (or address)")),
    }
    settings(&state, &user).await
}

/// The answer of `POST /user/webhookSecret`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookSecret {
    /// The new key of the `X-Wachet-Signature` HMAC (its UTF-8 bytes).
    webhook_secret: String,
}

/// Replaces the webhook secret with a new random one (extension).
#[utoipa::path(post, path = "/thirdparty/v1/user/webhookSecret", tag = "user",
    description = "Extension: replaces the key of the `X-Wachet-Signature` HMAC with a new \
                   random one and returns it. Every delivery from now on, retries of earlier \
                   notifications included, is signed with the new secret.",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The new secret", body = WebhookSecret),
        (status = 401, description = "No valid token", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn rotate_webhook_secret(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
) -> Result<ApiJson<WebhookSecret>, ApiError> {
    let secret = secrets::new_webhook_secret();
    state.store().set_webhook_secret(&user, &secret).await?;
    Ok(ApiJson(WebhookSecret {
        webhook_secret: secret,
    }))
}
