//! Authentication: the two logins, token invalidation, the bearer-token check every other
//! endpoint starts with, the rotation of the API key and the change of the password
//! (extensions), over [`crate::ops::account`].

use super::body::ApiJson;
use super::problem::{ApiError, Problem};
use crate::ops::{Ctx, account};
use axum::extract::{ConnectInfo, FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use wachet::model::{ApiLoginRequest, ClientLoginRequest, ClientLoginResponse};

pub use crate::ops::account::{Account, create_account, reset_password};

/// Longest bearer token looked at; ours are 43 characters.
const MAX_TOKEN_LEN: usize = 256;

/// The user a request is authenticated as.
#[derive(Debug, Clone)]
pub struct CurrentUser(pub String);

/// The user a request is authenticated as, and the hash of the token it came with (for the
/// calls that end every token but the caller's).
#[derive(Debug, Clone)]
pub struct CurrentSession {
    /// The user.
    pub user: String,
    /// SHA-256 of the bearer token, hex.
    pub token_hash: String,
}

impl FromRequestParts<Ctx> for CurrentSession {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &Ctx) -> Result<Self, ApiError> {
        let token = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim())
            .filter(|token| !token.is_empty() && token.len() <= MAX_TOKEN_LEN)
            .ok_or(ApiError::Unauthorized(
                "send the header Authorization: bearer <token> (from /user/login or /user/apilogin)",
            ))?;
        let account::Authenticated { user, token_hash } =
            account::authenticate(state, token).await?;
        Ok(CurrentSession { user, token_hash })
    }
}

impl FromRequestParts<Ctx> for CurrentUser {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &Ctx) -> Result<Self, ApiError> {
        CurrentSession::from_request_parts(parts, state)
            .await
            .map(|session| CurrentUser(session.user))
    }
}

/// Endpoint 1: a token for an e-mail address and password.
#[utoipa::path(post, path = "/thirdparty/v1/user/login", tag = "user",
    request_body(content = ClientLoginRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "A token", body = ClientLoginResponse),
        (status = 400, description = "Missing field or lifetime out of range", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "Wrong e-mail address or password", body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "Too many failed logins for this account from this client network, or from this network", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn login(
    State(state): State<Ctx>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: axum::http::HeaderMap,
    ApiJson(request): ApiJson<ClientLoginRequest>,
) -> Result<ApiJson<ClientLoginResponse>, ApiError> {
    let client = account::Client {
        address: peer.ip(),
        base: crate::origin::request_base(&headers),
    };
    Ok(ApiJson(account::login(&state, &client, request).await?))
}

/// Endpoint 2: a token for a user id and API key.
#[utoipa::path(post, path = "/thirdparty/v1/user/apilogin", tag = "user",
    request_body(content = ApiLoginRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "A token", body = ClientLoginResponse),
        (status = 400, description = "Missing field or lifetime out of range", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "Wrong user id or API key", body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "Too many failed logins for this account from this client network, or from this network", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn api_login(
    State(state): State<Ctx>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: axum::http::HeaderMap,
    ApiJson(request): ApiJson<ApiLoginRequest>,
) -> Result<ApiJson<ClientLoginResponse>, ApiError> {
    let client = account::Client {
        address: peer.ip(),
        base: crate::origin::request_base(&headers),
    };
    Ok(ApiJson(account::api_login(&state, &client, request).await?))
}

/// Endpoint 3: invalidates every token issued to the user so far.
#[utoipa::path(post, path = "/thirdparty/v1/user/invalidateTokens", tag = "user",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Every token of the user is invalid now"),
        (status = 401, description = "No valid token", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn invalidate_tokens(
    State(state): State<Ctx>,
    CurrentUser(user): CurrentUser,
) -> Result<StatusCode, ApiError> {
    account::invalidate_tokens(&state, &user).await?;
    Ok(StatusCode::OK)
}

/// The answer of `POST /user/apiKey`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewApiKey {
    /// The new API key, shown this once (only its hash is kept).
    pub(crate) api_key: String,
}

/// Replaces the API key with a new one (extension).
#[utoipa::path(post, path = "/thirdparty/v1/user/apiKey", tag = "user",
    description = "Extension: replaces the user's API key with a new random one, shown this \
                   once in the answer; the old key stops working at once. Tokens already issued \
                   keep working (end them with /user/invalidateTokens if the old key leaked).",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The new key", body = NewApiKey),
        (status = 401, description = "No valid token", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn rotate_api_key(
    State(state): State<Ctx>,
    CurrentUser(user): CurrentUser,
) -> Result<ApiJson<NewApiKey>, ApiError> {
    Ok(ApiJson(NewApiKey {
        api_key: account::rotate_api_key(&state, &user).await?,
    }))
}

/// The body of `PUT /user/password`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PasswordChange {
    /// The password now.
    #[serde(default)]
    pub(crate) current_password: Option<String>,
    /// The new password, 8 to 1,024 characters.
    #[serde(default)]
    pub(crate) new_password: Option<String>,
}

/// Changes the password (extension).
#[utoipa::path(put, path = "/thirdparty/v1/user/password", tag = "user",
    description = "Extension: changes the user's password, given the current one. Every other \
                   token of the user ends; the token of this request keeps working. A wrong \
                   current password counts as a failed login of the account from the client's \
                   network.",
    security(("bearer" = [])),
    request_body(content = PasswordChange, content_type = "application/json"),
    responses(
        (status = 200, description = "Changed; other tokens ended"),
        (status = 400, description = "Missing field, wrong current password, or a new password of the wrong length", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "No valid token", body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "Too many wrong passwords for this account from this client network", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn change_password(
    State(state): State<Ctx>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    session: CurrentSession,
    ApiJson(request): ApiJson<PasswordChange>,
) -> Result<StatusCode, ApiError> {
    let session = account::Authenticated {
        user: session.user,
        token_hash: session.token_hash,
    };
    account::change_password(
        &state,
        &session,
        peer.ip(),
        &request.current_password,
        &request.new_password,
    )
    .await?;
    Ok(StatusCode::OK)
}
