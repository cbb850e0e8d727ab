//! The extension `GET`/`PUT /user/notificationEndpoints` (DECISIONS.md): the user's own
//! notification endpoints, used by monitors with none of their own, and the webhook secret
//! that signs webhook deliveries; the confirmation of e-mail addresses other than the
//! account's own (`POST /user/notificationEndpoints/confirm`), the rotation of the webhook
//! secret (`POST /user/webhookSecret`), test notifications to an endpoint
//! (`/user/notificationEndpoints/test`), and the Atom feeds with their secrets (`/user/feeds`).
//! All extensions.

use super::auth::CurrentUser;
use super::body::ApiJson;
use super::problem::{ApiError, Problem};
use super::{AppState, rules};
use crate::secrets;
use crate::store::{FeedRecord, FeedScope, UserRecord, now_millis};
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use serde::{Deserialize, Serialize};
use wachet::model::{MessagingServiceType, NotificationEndpoint};

/// The user's notification settings.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NotificationSettings {
    /// Where notifications of monitors without endpoints of their own go.
    pub(crate) notification_endpoints: Vec<NotificationEndpoint>,
    /// The key of the `X-Wachet-Signature` HMAC of webhook deliveries (its UTF-8 bytes).
    pub(crate) webhook_secret: String,
}

/// The body of `PUT /user/notificationEndpoints`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EndpointsUpdate {
    /// The new list; it replaces the old one.
    #[serde(default)]
    pub(crate) notification_endpoints: Vec<NotificationEndpoint>,
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
    let mut update = update;
    rules::endpoint_list(&update.notification_endpoints)?;
    seal(
        &state,
        &user,
        "notificationEndpoints",
        update.notification_endpoints.iter_mut(),
    )?;
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

/// Seals the secret parts of the notification URLs among `endpoints` (the list `field`) for
/// `user`, as they are stored and shown from then on.
pub(crate) fn seal<'a>(
    state: &AppState,
    user: &str,
    field: &str,
    endpoints: impl IntoIterator<Item = &'a mut NotificationEndpoint>,
) -> Result<(), ApiError> {
    let policy = state.checker().network_policy();
    crate::notify::channel::url::seal_endpoints(state.sealer(), &policy, user, endpoints)
        .map_err(|(i, message)| ApiError::field(format!("{field}[{i}].value"), message))
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
    pub(crate) webhook_secret: String,
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

/// Test notifications of a user that may wait in the outbox at once.
pub const MAX_WAITING_TESTS: u32 = 5;
/// Test deliveries listed.
const TESTS_LISTED: u32 = 20;

/// The body of `POST /user/notificationEndpoints/test`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TestRequest {
    /// The `value` (URL or e-mail address) of one of the user's own notification endpoints.
    #[serde(default)]
    value: Option<String>,
}

/// The answer of `POST /user/notificationEndpoints/test`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TestQueued {
    /// The test delivery's id (its `X-Wachet-Delivery` header).
    delivery_id: String,
}

/// Sends a test notification to one of the user's endpoints (extension).
#[utoipa::path(post, path = "/thirdparty/v1/user/notificationEndpoints/test", tag = "user",
    description = "Extension: puts a test notification to one of the user's own endpoints (named \
                   by its `value`) in the outbox. It is delivered like any notification (signed \
                   webhooks, retries, the hourly bound on deliveries), and its state is listed \
                   by `GET /user/notificationEndpoints/test`. An e-mail address must be \
                   confirmed first; at most 5 tests wait at once.",
    security(("bearer" = [])),
    request_body(content = TestRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "In the outbox", body = TestQueued),
        (status = 400, description = "No such endpoint of the user, an unconfirmed address, or too many tests waiting", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "No valid token", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn test_endpoint(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    ApiJson(request): ApiJson<TestRequest>,
) -> Result<ApiJson<TestQueued>, ApiError> {
    let value = request.value.as_deref().unwrap_or("").trim();
    let delivery_id = send_test(&state, &user, value).await?;
    Ok(ApiJson(TestQueued { delivery_id }))
}

/// Puts a test notification to the user's endpoint of value `value` in the outbox.
pub(crate) async fn send_test(
    state: &AppState,
    user: &str,
    value: &str,
) -> Result<String, ApiError> {
    let ApiJson(settings) = settings(state, user).await?;
    let endpoint = settings
        .notification_endpoints
        .iter()
        .find(|endpoint| endpoint.value.as_deref().map(str::trim) == Some(value))
        .ok_or_else(|| ApiError::field("value", "is none of your notification endpoints"))?;
    if endpoint.confirmed == Some(false) {
        return Err(ApiError::field(
            "value",
            "has not confirmed it wants notifications: enter the code mailed to it first",
        ));
    }
    Ok(state
        .store()
        .queue_test_delivery(user, endpoint.kind, value, now_millis(), MAX_WAITING_TESTS)
        .await?)
}

/// The user's latest test notifications and how each went (extension).
#[utoipa::path(get, path = "/thirdparty/v1/user/notificationEndpoints/test", tag = "user",
    description = "Extension: the user's latest 20 test notifications, newest first, each with \
                   its id, target, state, tries and last error.",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Test deliveries, newest first", body = [super::notifications::DeliveryState]),
        (status = 401, description = "No valid token", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn test_deliveries(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
) -> Result<ApiJson<Vec<super::notifications::DeliveryState>>, ApiError> {
    Ok(ApiJson(tests(&state, &user).await?))
}

/// The user's latest test deliveries.
pub(crate) async fn tests(
    state: &AppState,
    user: &str,
) -> Result<Vec<super::notifications::DeliveryState>, ApiError> {
    Ok(state
        .store()
        .test_deliveries(user, TESTS_LISTED)
        .await?
        .into_iter()
        .map(Into::into)
        .collect())
}

/// A feed as the API shows it (its secret never: only the answer that made it has the URL).
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Feed {
    /// The feed's id.
    pub id: String,
    /// `all` (every monitor), `folder` (a folder and its subfolders) or `monitor`.
    pub scope: String,
    /// The folder's or monitor's id.
    pub target_id: Option<String>,
    /// The folder's or monitor's name.
    pub name: Option<String>,
    /// The feed's path without its secret.
    pub path: String,
    /// When its secret was made.
    pub created_at: chrono::DateTime<chrono::Utc>,
}

impl From<&FeedRecord> for Feed {
    fn from(record: &FeedRecord) -> Self {
        let (scope, target) = match &record.scope {
            FeedScope::All => ("all", None),
            FeedScope::Folder(id) => ("folder", Some(id.clone())),
            FeedScope::Monitor(id) => ("monitor", Some(id.clone())),
        };
        Feed {
            id: record.id.clone(),
            scope: scope.to_string(),
            target_id: target,
            name: record.name.clone(),
            path: crate::web::feed_path(&record.scope),
            created_at: chrono::DateTime::from_timestamp_millis(record.created_at)
                .unwrap_or_default(),
        }
    }
}

/// The body of `POST /user/feeds`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FeedRequest {
    /// `all`, `folder` or `monitor`.
    #[serde(default)]
    scope: Option<String>,
    /// The folder's or monitor's id.
    #[serde(default)]
    target_id: Option<String>,
}

/// A feed with its URL (shown again on the folder's or monitor's page in the web interface).
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewFeed {
    /// The feed.
    feed: Feed,
    /// Its URL with the secret, for a feed reader.
    url: String,
}

/// The user's Atom feeds (extension).
#[utoipa::path(get, path = "/thirdparty/v1/user/feeds", tag = "user",
    description = "Extension: the user's Atom feeds of changes (of all monitors, a folder with \
                   its subfolders, or one monitor), without their secrets.",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The feeds", body = [Feed]),
        (status = 401, description = "No valid token", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_feeds(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
) -> Result<ApiJson<Vec<Feed>>, ApiError> {
    let feeds = state.store().feeds(&user).await?;
    Ok(ApiJson(feeds.iter().map(Feed::from).collect()))
}

/// Creates a feed, or gives an existing one a new secret (extension).
#[utoipa::path(post, path = "/thirdparty/v1/user/feeds", tag = "user",
    description = "Extension: creates the Atom feed of a scope (`all`; `folder` or `monitor` with \
                   `targetId`), or renews its secret when it exists: the old URL is a 404 from \
                   now on. The answer has the URL with the new secret (kept as its hash and \
                   sealed with the service's key: the web interface shows it again on the \
                   folder's or monitor's page). Another user's folder or monitor is a 404.",
    security(("bearer" = [])),
    request_body(content = FeedRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "The feed and its URL", body = NewFeed),
        (status = 400, description = "Unknown scope, or a target missing", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "No valid token", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such folder or monitor", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn create_feed(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    headers: HeaderMap,
    ApiJson(request): ApiJson<FeedRequest>,
) -> Result<ApiJson<NewFeed>, ApiError> {
    let scope = feed_scope(request.scope.as_deref(), request.target_id)?;
    let (feed, url) = renew_feed(&state, &headers, &user, &scope).await?;
    Ok(ApiJson(NewFeed {
        feed: Feed::from(&feed),
        url,
    }))
}

/// The scope a request names.
pub(crate) fn feed_scope(
    scope: Option<&str>,
    target: Option<String>,
) -> Result<FeedScope, ApiError> {
    let target = target.filter(|t| !t.trim().is_empty());
    match (scope.unwrap_or("").trim(), target) {
        ("all", _) => Ok(FeedScope::All),
        ("folder", Some(id)) => Ok(FeedScope::Folder(id)),
        ("monitor", Some(id)) => Ok(FeedScope::Monitor(id)),
        ("folder" | "monitor", None) => Err(ApiError::field("targetId", "is required")),
        _ => Err(ApiError::field("scope", "must be all, folder or monitor")),
    }
}

/// Gives the user's feed of `scope` a new secret (creating the feed); the feed and its URL.
pub(crate) async fn renew_feed(
    state: &AppState,
    headers: &HeaderMap,
    user: &str,
    scope: &FeedScope,
) -> Result<(FeedRecord, String), ApiError> {
    let (secret, stored) = crate::web::new_feed_secret(state, user, scope)?;
    let feed = state
        .store()
        .renew_feed(user, scope, &stored, now_millis())
        .await?;
    let url = crate::web::feed_url(headers, &state.settings().web, &feed.scope, &secret);
    Ok((feed, url))
}

/// Deletes a feed (extension).
#[utoipa::path(delete, path = "/thirdparty/v1/user/feeds/{feedId}", tag = "user",
    description = "Extension: deletes a feed; its URL is a 404 from now on.",
    security(("bearer" = [])),
    params(("feedId" = String, Path, description = "Feed id")),
    responses(
        (status = 200, description = "Deleted"),
        (status = 401, description = "No valid token", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such feed", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn delete_feed(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path(id): Path<String>,
) -> Result<axum::http::StatusCode, ApiError> {
    state.store().delete_feed(&user, &id).await?;
    Ok(axum::http::StatusCode::OK)
}
