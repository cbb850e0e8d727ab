//! Authentication: the two logins, token invalidation, the bearer-token check every other
//! endpoint starts with, and the creation of accounts (used by the command line).

use super::AppState;
use super::body::ApiJson;
use super::problem::{ApiError, Problem};
use crate::secrets;
use crate::store::{Store, StoreError, TokenRecord, UserRecord, new_id, now_millis};
use axum::extract::{ConnectInfo, FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
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

impl FromRequestParts<AppState> for CurrentUser {
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
        let (user, _expires) = state
            .store()
            .token_owner(&secrets::sha256_hex(token), now_millis())
            .await?
            .ok_or(ApiError::Unauthorized(
                "the token is invalid, expired or invalidated",
            ))?;
        state
            .inner
            .limits
            .request(&user)
            .map_err(ApiError::TooManyRequests)?;
        Ok(CurrentUser(user))
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
        (status = 429, description = "Too many failed logins", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn login(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    ApiJson(request): ApiJson<ClientLoginRequest>,
) -> Result<ApiJson<ClientLoginResponse>, ApiError> {
    let email = required("email", &request.email)?.trim().to_lowercase();
    let password = required("password", &request.password)?.to_string();
    let seconds = lifetime(request.expires_in_sec)?;
    // Only a well-formed address names an account (and a bounded limiter key).
    let account = super::rules::is_email(&email).then_some(email.as_str());
    attempt(&state, account, peer.ip(), seconds, LOGIN_FAILED, async {
        let user = match account {
            Some(email) => state.store().user_by_email(email).await?,
            None => None,
        };
        let stored = user
            .as_ref()
            .map(|u| u.password_hash.clone())
            .unwrap_or_else(|| secrets::decoy_password_hash().to_string());
        let verified =
            tokio::task::spawn_blocking(move || secrets::verify_password(&password, &stored))
                .await
                .map_err(|err| ApiError::Internal(format!("password check: {err}")))?;
        Ok(user.filter(|_| verified).map(|u| u.id))
    })
    .await
}

/// Endpoint 2: a token for a user id and API key.
#[utoipa::path(post, path = "/thirdparty/v1/user/apilogin", tag = "user",
    request_body(content = ApiLoginRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "A token", body = ClientLoginResponse),
        (status = 400, description = "Missing field or lifetime out of range", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "Wrong user id or API key", body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "Too many failed logins", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn api_login(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    ApiJson(request): ApiJson<ApiLoginRequest>,
) -> Result<ApiJson<ClientLoginResponse>, ApiError> {
    let user_id = required("userId", &request.user_id)?;
    let key = required("apiKey", &request.api_key)?;
    let seconds = lifetime(request.expires_in_sec)?;
    // Only a well-formed id names an account (and a bounded limiter key).
    let account = crate::store::is_id(user_id).then_some(user_id);
    attempt(
        &state,
        account,
        peer.ip(),
        seconds,
        APILOGIN_FAILED,
        async {
            let user = match account {
                Some(id) => state.store().user_by_id(id).await?,
                None => None,
            };
            Ok(user
                .filter(|u| secrets::matches_hash(key, &u.api_key_hash))
                .map(|u| u.id))
        },
    )
    .await
}

/// One login attempt, in its turn: refused while `account` or `address` is over its failure
/// limit; `verify` gives the user id when the credentials hold, and a token is issued for it;
/// otherwise the failure is counted and the answer is a 401 with `failure`.
async fn attempt(
    state: &AppState,
    account: Option<&str>,
    address: IpAddr,
    seconds: i64,
    failure: &'static str,
    verify: impl Future<Output = Result<Option<String>, ApiError>>,
) -> Result<ApiJson<ClientLoginResponse>, ApiError> {
    let limits = &state.inner.limits;
    let _turn = limits
        .login_turn()
        .await
        .map_err(ApiError::TooManyRequests)?;
    limits
        .login_allowed(account, address)
        .map_err(ApiError::TooManyRequests)?;
    match verify.await? {
        Some(user) => issue_token(state.store(), &user, seconds).await,
        None => {
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
    let hashed = password.clone();
    let password_hash = tokio::task::spawn_blocking(move || secrets::hash_password(&hashed))
        .await
        .map_err(|err| StoreError::Backend(err.to_string()))?
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
