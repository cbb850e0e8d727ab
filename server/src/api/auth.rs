//! Authentication: the two logins, token invalidation, the bearer-token check every other
//! endpoint starts with, the rotation of the API key and the change of the password
//! (extensions), and the creation of accounts (used by the command line). How often and in
//! which order logins are judged is [`super::limits`]'s.

use super::AppState;
use super::body::ApiJson;
use super::limits::client_network;
use super::problem::{ApiError, Problem};
use crate::secrets;
use crate::store::{Store, StoreError, TokenRecord, UserRecord, new_id, now_millis};
use axum::extract::{ConnectInfo, FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use serde::{Deserialize, Serialize};
use std::net::{IpAddr, SocketAddr};
use wachet::model::{ApiLoginRequest, ClientLoginRequest, ClientLoginResponse};

/// Token lifetime when the login asks for none.
pub const DEFAULT_TOKEN_SECONDS: i64 = 86_400;
/// Shortest lifetime a login may ask for.
pub const MIN_TOKEN_SECONDS: i64 = 60;
/// Longest lifetime a login may ask for: 30 days.
pub const MAX_TOKEN_SECONDS: i64 = 30 * 86_400;
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

impl FromRequestParts<AppState> for CurrentSession {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
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
        let token_hash = secrets::sha256_hex(token);
        let (user, _expires) = state
            .store()
            .token_owner(&token_hash, now_millis())
            .await?
            .ok_or(ApiError::Unauthorized(
                "the token is invalid, expired or invalidated",
            ))?;
        crate::trace::record_user(&user);
        state
            .inner
            .limits
            .request(&user)
            .map_err(ApiError::TooManyRequests)?;
        Ok(CurrentSession { user, token_hash })
    }
}

impl FromRequestParts<AppState> for CurrentUser {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        CurrentSession::from_request_parts(parts, state)
            .await
            .map(|session| CurrentUser(session.user))
    }
}

/// The lifetime asked for, checked against the allowed range.
fn lifetime(requested: Option<i64>) -> Result<i64, ApiError> {
    match requested {
        None => Ok(DEFAULT_TOKEN_SECONDS),
        Some(s) if (MIN_TOKEN_SECONDS..=MAX_TOKEN_SECONDS).contains(&s) => Ok(s),
        Some(s) => Err(ApiError::field(
            "expiresInSec",
            format!("must be between {MIN_TOKEN_SECONDS} and {MAX_TOKEN_SECONDS} seconds, not {s}"),
        )),
    }
}

async fn issue_token(
    store: &dyn Store,
    user: &str,
    seconds: i64,
) -> Result<ApiJson<ClientLoginResponse>, ApiError> {
    let token = secrets::new_token();
    let now = now_millis();
    store
        .insert_token(&TokenRecord {
            hash: secrets::sha256_hex(&token),
            user_id: user.to_string(),
            issued_at: now,
            expires_at: now + seconds * 1000,
        })
        .await?;
    Ok(ApiJson(ClientLoginResponse {
        token: Some(token),
        expires_in_sec: seconds,
    }))
}

fn required<'a>(field: &str, value: &'a Option<String>) -> Result<&'a str, ApiError> {
    value
        .as_deref()
        .filter(|v| !v.is_empty())
        .ok_or_else(|| ApiError::field(field, "is required"))
}

const LOGIN_FAILED: &str = "wrong e-mail address or password";
const APILOGIN_FAILED: &str = "wrong user id or API key";

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
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: axum::http::HeaderMap,
    ApiJson(request): ApiJson<ClientLoginRequest>,
) -> Result<ApiJson<ClientLoginResponse>, ApiError> {
    let email = required("email", &request.email)?.trim().to_lowercase();
    let password = required("password", &request.password)?.to_string();
    let seconds = lifetime(request.expires_in_sec)?;
    // Only a well-formed address names an account (and a bounded limiter key).
    let account = super::rules::is_email(&email).then_some(email.as_str());
    let limits = &state.inner.limits;
    limits
        .login_allowed(account, peer.ip())
        .map_err(ApiError::TooManyRequests)?;
    // The account's guesses are judged one after another, so parallel ones cannot all slip in
    // before the first failure is counted; other accounts' logins do not wait for them.
    // A malformed address names no account: its guesses wait in the turn of their network.
    let turn = account.map_or_else(|| client_network(peer.ip()).to_string(), str::to_string);
    let _turn = limits
        .account_turn(&turn)
        .await
        .map_err(ApiError::TooManyRequests)?;
    limits
        .login_allowed(account, peer.ip())
        .map_err(ApiError::TooManyRequests)?;
    let user = match account {
        Some(email) => state.store().user_by_email(email).await?,
        None => None,
    };
    let stored = user
        .as_ref()
        .map(|u| u.password_hash.clone())
        .unwrap_or_else(|| secrets::decoy_password_hash().to_string());
    let verified = check_password(&state, password, stored).await?;
    let user = user.filter(|_| verified).map(|u| u.id);
    let issued = finish(
        &state,
        account,
        peer.ip(),
        user.clone(),
        seconds,
        LOGIN_FAILED,
    )
    .await?;
    remember_base(&state, user.as_deref(), &headers).await?;
    Ok(issued)
}

/// Whether `password` matches the `stored` argon2 hash, computed off the async threads in one
/// of the bounded hash slots.
pub(super) async fn check_password(
    state: &AppState,
    password: String,
    stored: String,
) -> Result<bool, ApiError> {
    let slot = state
        .inner
        .limits
        .hash_slot()
        .await
        .map_err(ApiError::TooManyRequests)?;
    tokio::task::spawn_blocking(move || {
        let verified = secrets::verify_password(&password, &stored);
        drop(slot);
        verified
    })
    .await
    .map_err(|err| ApiError::Internal(format!("password check: {err}")))
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
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: axum::http::HeaderMap,
    ApiJson(request): ApiJson<ApiLoginRequest>,
) -> Result<ApiJson<ClientLoginResponse>, ApiError> {
    let user_id = required("userId", &request.user_id)?;
    let key = required("apiKey", &request.api_key)?;
    let seconds = lifetime(request.expires_in_sec)?;
    // Only a well-formed id names an account (and a bounded limiter key).
    let account = crate::store::is_id(user_id).then_some(user_id);
    state
        .inner
        .limits
        .login_allowed(account, peer.ip())
        .map_err(ApiError::TooManyRequests)?;
    // An API key is 256 random bits kept as its SHA-256: comparing costs microseconds, so this
    // login takes no turn and waits for no password hash (parallel guesses at 2^256 keys gain
    // nothing from slipping past the failure count).
    let user = match account {
        Some(id) => state.store().user_by_id(id).await?,
        None => None,
    };
    let user = user
        .filter(|u| secrets::matches_hash(key, &u.api_key_hash))
        .map(|u| u.id);
    let issued = finish(
        &state,
        account,
        peer.ip(),
        user.clone(),
        seconds,
        APILOGIN_FAILED,
    )
    .await?;
    remember_base(&state, user.as_deref(), &headers).await?;
    Ok(issued)
}

/// Keeps where `user` logged in from: the base of the links in the user's webhook payloads
/// when the service has no public address.
async fn remember_base(
    state: &AppState,
    user: Option<&str>,
    headers: &axum::http::HeaderMap,
) -> Result<(), ApiError> {
    if let (Some(user), Some(base)) = (user, request_base(headers)) {
        state.store().set_login_base(user, &base).await?;
    }
    Ok(())
}

/// The scheme and host a request was sent to (`https://wachet.example:8443`): its `Host`
/// header, https when `X-Forwarded-Proto` says so (behind a proxy). `None` without a `Host`
/// that is a plain host name or address with an optional port.
pub(crate) fn request_base(headers: &axum::http::HeaderMap) -> Option<String> {
    let host = headers.get(axum::http::header::HOST)?.to_str().ok()?.trim();
    let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']');
    if host.is_empty() || host.len() > 255 || !host.chars().all(plain) {
        return None;
    }
    let https = headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|proto| proto.trim().eq_ignore_ascii_case("https"));
    let scheme = if https { "https" } else { "http" };
    Some(format!("{scheme}://{}", host.to_ascii_lowercase()))
}

/// The end of a login: a token for `user` when the credentials held (and the failures of this
/// account from this network forgotten); otherwise the failure is counted and the answer is a
/// 401 with `failure`.
async fn finish(
    state: &AppState,
    account: Option<&str>,
    address: IpAddr,
    user: Option<String>,
    seconds: i64,
    failure: &'static str,
) -> Result<ApiJson<ClientLoginResponse>, ApiError> {
    let limits = &state.inner.limits;
    match (user, account) {
        (Some(user), Some(account)) => {
            limits.login_succeeded(account, address);
            issue_token(state.store(), &user, seconds).await
        }
        _ => {
            limits.login_failed(account, address);
            Err(ApiError::Unauthorized(failure))
        }
    }
}

/// Endpoint 3: invalidates every token issued to the user so far.
#[utoipa::path(post, path = "/thirdparty/v1/user/invalidateTokens", tag = "user",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Every token of the user is invalid now"),
        (status = 401, description = "No valid token", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn invalidate_tokens(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
) -> Result<StatusCode, ApiError> {
    state.store().invalidate_tokens(&user).await?;
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
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
) -> Result<ApiJson<NewApiKey>, ApiError> {
    let api_key = secrets::new_api_key();
    state
        .store()
        .set_api_key(&user, &secrets::sha256_hex(&api_key))
        .await?;
    Ok(ApiJson(NewApiKey { api_key }))
}

/// Shortest new password, in characters.
pub const MIN_PASSWORD_CHARS: usize = 8;
/// Longest new password, in characters.
pub const MAX_PASSWORD_CHARS: usize = 1024;

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
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    session: CurrentSession,
    ApiJson(request): ApiJson<PasswordChange>,
) -> Result<StatusCode, ApiError> {
    let current = required("currentPassword", &request.current_password)?.to_string();
    let new = required("newPassword", &request.new_password)?.to_string();
    password_length(&new).map_err(|message| ApiError::field("newPassword", message))?;
    let user = state
        .store()
        .user_by_id(&session.user)
        .await?
        .ok_or(ApiError::NotFound)?;
    // A stolen token must not become a fast way to guess the password: the check is a login.
    let limits = &state.inner.limits;
    let account = Some(user.email.as_str());
    limits
        .login_allowed(account, peer.ip())
        .map_err(ApiError::TooManyRequests)?;
    let _turn = limits
        .account_turn(&user.email)
        .await
        .map_err(ApiError::TooManyRequests)?;
    limits
        .login_allowed(account, peer.ip())
        .map_err(ApiError::TooManyRequests)?;
    if !check_password(&state, current, user.password_hash.clone()).await? {
        limits.login_failed(account, peer.ip());
        return Err(ApiError::field(
            "currentPassword",
            "is not the account's password",
        ));
    }
    let password_hash = {
        let _slot = limits
            .hash_slot()
            .await
            .map_err(ApiError::TooManyRequests)?;
        hash_off_thread(new).await.map_err(ApiError::Internal)?
    };
    state
        .store()
        .set_password(&user.id, &password_hash, &session.token_hash)
        .await?;
    Ok(StatusCode::OK)
}

/// Whether `password` may be set as a new one; the message says why not.
fn password_length(password: &str) -> Result<(), String> {
    let length = password.chars().count();
    if (MIN_PASSWORD_CHARS..=MAX_PASSWORD_CHARS).contains(&length) {
        Ok(())
    } else {
        Err(format!(
            "must have {MIN_PASSWORD_CHARS} to {MAX_PASSWORD_CHARS} characters, not {length}"
        ))
    }
}

/// The argon2 hash of `password`, computed on the blocking pool (it takes tens of
/// milliseconds of CPU by design).
async fn hash_off_thread(password: String) -> Result<String, String> {
    tokio::task::spawn_blocking(move || secrets::hash_password(&password))
        .await
        .map_err(|err| format!("password hash: {err}"))?
}

/// Gives the account of `email` a new password (`password`, or a random one), which it
/// returns, and ends every token and web session of the account: `wachet user password`, for
/// a user who has lost theirs or has used only the API key.
pub async fn reset_password(
    store: &dyn Store,
    email: &str,
    password: Option<String>,
) -> Result<String, StoreError> {
    let email = email.trim().to_lowercase();
    let user = store
        .user_by_email(&email)
        .await?
        .ok_or_else(|| StoreError::invalid("email", "no user has this e-mail address"))?;
    let password = password.unwrap_or_else(secrets::new_password);
    password_length(&password).map_err(|message| StoreError::invalid("password", message))?;
    let password_hash = hash_off_thread(password.clone())
        .await
        .map_err(StoreError::Backend)?;
    // No token is kept: whoever held one signs in again with the new password.
    store.set_password(&user.id, &password_hash, "").await?;
    Ok(password)
}

/// A new account with its secrets in the clear, shown once. Its `Debug` shows none of them.
#[derive(Clone)]
pub struct Account {
    /// User id.
    pub id: String,
    /// E-mail address.
    pub email: String,
    /// Password.
    pub password: String,
    /// API key.
    pub api_key: String,
}

impl std::fmt::Debug for Account {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Account")
            .field("id", &self.id)
            .field("email", &self.email)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Display for Account {
    /// The four lines scripts parse: `user id:`, `email:`, `password:`, `api key:`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "user id: {}", self.id)?;
        writeln!(f, "email: {}", self.email)?;
        writeln!(f, "password: {}", self.password)?;
        write!(f, "api key: {}", self.api_key)
    }
}

/// Creates a user with `password` (or a random one) and a new API key.
pub async fn create_account(
    store: &dyn Store,
    email: &str,
    password: Option<String>,
) -> Result<Account, StoreError> {
    let email = email.trim().to_lowercase();
    if !super::rules::is_email(&email) {
        return Err(StoreError::invalid("email", "not an e-mail address"));
    }
    let password = password.unwrap_or_else(secrets::new_password);
    if password.is_empty() {
        return Err(StoreError::invalid("password", "must not be empty"));
    }
    let api_key = secrets::new_api_key();
    let password_hash = hash_off_thread(password.clone())
        .await
        .map_err(StoreError::Backend)?;
    let user = UserRecord {
        id: new_id(),
        email: email.clone(),
        password_hash,
        api_key_hash: secrets::sha256_hex(&api_key),
        webhook_secret: secrets::new_webhook_secret(),
        notification_endpoints: Vec::new(),
        created_at: now_millis(),
    };
    store.create_user(&user).await?;
    Ok(Account {
        id: user.id,
        email,
        password,
        api_key,
    })
}
