//! The extension `GET`/`PUT /user/notificationEndpoints` (DECISIONS.md): the user's own
//! notification endpoints, used by monitors with none of their own, and the webhook secret
//! that signs webhook deliveries; the confirmation of e-mail addresses other than the
//! account's own (`POST /user/notificationEndpoints/confirm`), the rotation of the webhook
//! secret (`POST /user/webhookSecret`), test notifications to an endpoint
//! (`/user/notificationEndpoints/test`), the Atom feeds with their secrets (`/user/feeds`), and
//! the user's own settings (`/user/settings`: the time zone). All extensions, over
//! [`crate::ops::endpoints`], [`crate::ops::feeds`] and [`crate::ops::user_settings`].

use super::auth::CurrentUser;
use super::body::ApiJson;
use super::problem::{ApiError, Problem};
use crate::ops::endpoints::{self, Confirm, Endpoints};
use crate::ops::{Ctx, feeds, user_settings};
use crate::store::{FeedRecord, FeedScope};
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use serde::{Deserialize, Serialize};
use wachet::model::NotificationEndpoint;

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

impl From<Endpoints> for NotificationSettings {
    fn from(settings: Endpoints) -> Self {
        NotificationSettings {
            notification_endpoints: settings.notification_endpoints,
            webhook_secret: settings.webhook_secret,
        }
    }
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
    State(state): State<Ctx>,
    CurrentUser(user): CurrentUser,
) -> Result<ApiJson<NotificationSettings>, ApiError> {
    Ok(ApiJson(endpoints::get(&state, &user).await?.into()))
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
    State(state): State<Ctx>,
    CurrentUser(user): CurrentUser,
    ApiJson(update): ApiJson<EndpointsUpdate>,
) -> Result<ApiJson<NotificationSettings>, ApiError> {
    let settings = endpoints::replace(&state, &user, &update.notification_endpoints).await?;
    Ok(ApiJson(settings.into()))
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
    State(state): State<Ctx>,
    CurrentUser(user): CurrentUser,
    ApiJson(request): ApiJson<Confirmation>,
) -> Result<ApiJson<NotificationSettings>, ApiError> {
    let what = match (request.code.as_deref(), request.address.as_deref()) {
        (Some(code), _) if !code.trim().is_empty() => Confirm::Code(code),
        (_, Some(address)) => Confirm::Address(address),
        _ => return Err(ApiError::field("code", "is required (or address)")),
    };
    Ok(ApiJson(
        endpoints::confirm(&state, &user, what).await?.into(),
    ))
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
    State(state): State<Ctx>,
    CurrentUser(user): CurrentUser,
) -> Result<ApiJson<WebhookSecret>, ApiError> {
    Ok(ApiJson(WebhookSecret {
        webhook_secret: endpoints::rotate_webhook_secret(&state, &user).await?,
    }))
}

/// The body of `POST /user/notificationEndpoints/test`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TestRequest {
    /// The `value` (URL or e-mail address) of one of the user's own notification endpoints.
    #[serde(default)]
    value: Option<String>,
}

/// The body of `POST /user/notificationEndpoints/preview`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreviewRequest {
    /// The endpoint with its templates (`title`, `body`, `format`); it need not be saved.
    endpoint: NotificationEndpoint,
    /// The monitor whose last change the templates are rendered against.
    monitor_id: String,
}

/// The answer of `POST /user/notificationEndpoints/preview`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreviewAnswer {
    /// The rendered title (the channel's own when the endpoint has no title template).
    title: String,
    /// The rendered body (the change as text when the endpoint has no body template).
    body: String,
    /// The format the body is written in: `text`, `markdown` or `html`.
    format: wachet::model::MessageFormat,
}

/// Renders an endpoint's templates against a monitor's last change (extension).
#[utoipa::path(post, path = "/thirdparty/v1/user/notificationEndpoints/preview", tag = "user",
    description = "Extension: renders the `title` and `body` templates of an endpoint (saved or \
                   not) against the last change of one of the user's monitors, in the user's \
                   time zone, as a delivery to that endpoint would. A template that saving \
                   would refuse is refused here alike (400 at `endpoint.title` or \
                   `endpoint.body`, naming the line).",
    security(("bearer" = [])),
    request_body(content = PreviewRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "The rendered title and body", body = PreviewAnswer),
        (status = 400, description = "A template error, or the monitor has no change yet (`monitorId`)", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "No valid token", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such monitor of the user", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn preview_endpoint(
    State(state): State<Ctx>,
    CurrentUser(user): CurrentUser,
    ApiJson(request): ApiJson<PreviewRequest>,
) -> Result<ApiJson<PreviewAnswer>, ApiError> {
    let preview = endpoints::preview(&state, &user, &request.endpoint, &request.monitor_id).await?;
    Ok(ApiJson(PreviewAnswer {
        title: preview.title,
        body: preview.body,
        format: preview.format,
    }))
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
    State(state): State<Ctx>,
    CurrentUser(user): CurrentUser,
    ApiJson(request): ApiJson<TestRequest>,
) -> Result<ApiJson<TestQueued>, ApiError> {
    let value = request.value.as_deref().unwrap_or("").trim();
    let delivery_id = endpoints::send_test(&state, &user, value).await?;
    Ok(ApiJson(TestQueued { delivery_id }))
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
    State(state): State<Ctx>,
    CurrentUser(user): CurrentUser,
) -> Result<ApiJson<Vec<super::notifications::DeliveryState>>, ApiError> {
    Ok(ApiJson(endpoints::tests(&state, &user).await?))
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
            path: feeds::path(&record.scope),
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
    State(state): State<Ctx>,
    CurrentUser(user): CurrentUser,
) -> Result<ApiJson<Vec<Feed>>, ApiError> {
    let feeds = feeds::list(&state, &user).await?;
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
    State(state): State<Ctx>,
    CurrentUser(user): CurrentUser,
    headers: HeaderMap,
    ApiJson(request): ApiJson<FeedRequest>,
) -> Result<ApiJson<NewFeed>, ApiError> {
    let scope = feeds::scope(request.scope.as_deref(), request.target_id)?;
    let base = crate::origin::base_url(&headers, &state.settings().web);
    let (feed, url) = feeds::renew(&state, &user, &scope, &base).await?;
    Ok(ApiJson(NewFeed {
        feed: Feed::from(&feed),
        url,
    }))
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
    State(state): State<Ctx>,
    CurrentUser(user): CurrentUser,
    Path(id): Path<String>,
) -> Result<axum::http::StatusCode, ApiError> {
    feeds::delete(&state, &user, &id).await?;
    Ok(axum::http::StatusCode::OK)
}

/// The user's own settings (extension).
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserSettingsBody {
    /// The IANA name of the time zone the user's times are shown in (`Europe/Berlin`; `UTC`
    /// until set).
    #[serde(default)]
    pub(crate) time_zone: Option<String>,
}

impl From<user_settings::UserSettings> for UserSettingsBody {
    fn from(settings: user_settings::UserSettings) -> Self {
        UserSettingsBody {
            time_zone: Some(settings.time_zone.name().to_string()),
        }
    }
}

/// The user's own settings (extension).
#[utoipa::path(get, path = "/thirdparty/v1/user/settings", tag = "user",
    description = "Extension: the user's own settings: `timeZone`, the IANA name of the time \
                   zone the web interface shows the user's times in (`UTC` until set).",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The settings", body = UserSettingsBody),
        (status = 401, description = "No valid token", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn get_settings(
    State(state): State<Ctx>,
    CurrentUser(user): CurrentUser,
) -> Result<ApiJson<UserSettingsBody>, ApiError> {
    Ok(ApiJson(user_settings::get(&state, &user).await?.into()))
}

/// Replaces the user's own settings (extension).
#[utoipa::path(put, path = "/thirdparty/v1/user/settings", tag = "user",
    description = "Extension: replaces the user's own settings. `timeZone` is an IANA time zone \
                   name as the time zone database spells it (`Europe/Berlin`, `UTC`); another \
                   is a 400 naming the field.",
    security(("bearer" = [])),
    request_body(content = UserSettingsBody, content_type = "application/json"),
    responses(
        (status = 200, description = "The settings", body = UserSettingsBody),
        (status = 400, description = "`timeZone` is missing or names no time zone", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "No valid token", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn put_settings(
    State(state): State<Ctx>,
    CurrentUser(user): CurrentUser,
    ApiJson(update): ApiJson<UserSettingsBody>,
) -> Result<ApiJson<UserSettingsBody>, ApiError> {
    let settings = user_settings::set_time_zone(&state, &user, update.time_zone.as_deref()).await?;
    Ok(ApiJson(settings.into()))
}
