//! Accounts: sign-in (by e-mail address and password, or by user id and API key) with its
//! limits and turns, the tokens and browser sessions it issues, the API key, the password, and
//! the creation of accounts. How often and in which order logins are judged is
//! [`super::limits`]'s. The command line has no running service, only a store: creating an
//! account and resetting a password take the store itself.

use super::{Ctx, OpError, UserId};
use crate::secrets;
use crate::store::{Store, StoreError, TokenRecord, UserRecord, new_id, now_millis};
use std::net::IpAddr;
use wachet::model::{ApiLoginRequest, ClientLoginRequest, ClientLoginResponse};

/// Token lifetime when the login asks for none.
pub const DEFAULT_TOKEN_SECONDS: i64 = 86_400;
/// Shortest lifetime a login may ask for.
pub const MIN_TOKEN_SECONDS: i64 = 60;
/// Longest lifetime a login may ask for: 30 days.
pub const MAX_TOKEN_SECONDS: i64 = 30 * 86_400;
/// Shortest new password, in characters.
pub const MIN_PASSWORD_CHARS: usize = 8;
/// Longest new password, in characters.
pub const MAX_PASSWORD_CHARS: usize = 1024;
/// A browser session's last use is written again only when older than this, so that reading
/// pages is not a write each time.
const SEEN_RESOLUTION_MILLIS: i64 = 60_000;

const LOGIN_FAILED: &str = "wrong e-mail address or password";
const APILOGIN_FAILED: &str = "wrong user id or API key";

/// Who asks to sign in: the client's address (failures are counted per client network) and
/// the scheme and host the request was sent to, if it names one (the base of the links in
/// the user's webhook payloads when the service has no public address).
#[derive(Debug, Clone)]
pub struct Client {
    /// The client's address.
    pub address: IpAddr,
    /// `https://wachet.example:8443`, as the request reached the service.
    pub base: Option<String>,
}

/// The user a bearer token or session cookie belongs to, with the token's hash.
#[derive(Debug, Clone)]
pub struct Authenticated {
    /// The user.
    pub user: String,
    /// SHA-256 of the token, hex.
    pub token_hash: String,
}

/// The user of `token` (a bearer token), counted against the user's request rate:
/// [`OpError::Unauthorized`] for an unknown, expired or ended one.
pub async fn authenticate(ctx: &Ctx, token: &str) -> Result<Authenticated, OpError> {
    let token_hash = secrets::sha256_hex(token);
    let (user, _expires) = ctx
        .store()
        .token_owner(&token_hash, now_millis())
        .await?
        .ok_or(OpError::Unauthorized(
            "the token is invalid, expired or invalidated",
        ))?;
    crate::trace::record_user(&user);
    ctx.limits().request(&user).map_err(OpError::TooMany)?;
    Ok(Authenticated { user, token_hash })
}

/// A signed-in browser's session.
#[derive(Debug, Clone)]
pub struct BrowserSession {
    /// The user.
    pub user: String,
    /// The user's e-mail address.
    pub email: String,
    /// The time zone the user's times are shown in.
    pub time_zone: chrono_tz::Tz,
}

/// The live browser session of the token hashing to `token_hash`, if any: ended once it went
/// unused longer than the web settings' idle time, its last use written at most once a
/// minute, and counted against the user's request rate like the API's requests.
pub async fn session(ctx: &Ctx, token_hash: &str) -> Result<Option<BrowserSession>, OpError> {
    let now = now_millis();
    let Some((user, _expires)) = ctx.store().token_owner(token_hash, now).await? else {
        return Ok(None);
    };
    crate::trace::record_user(&user);
    let Some(seen) = ctx.store().session_seen(token_hash, now).await? else {
        return Ok(None);
    };
    let idle_millis = ctx.settings().web.session_idle.saturating_mul(1000);
    if seen.is_some_and(|seen| now.saturating_sub(seen) > idle_millis) {
        ctx.store().delete_token(token_hash).await?;
        return Ok(None);
    }
    if seen.is_none_or(|seen| now.saturating_sub(seen) >= SEEN_RESOLUTION_MILLIS) {
        ctx.store().touch_session(token_hash, now).await?;
    }
    ctx.limits().request(&user).map_err(OpError::TooMany)?;
    let Some(record) = ctx.store().user_by_id(&user).await? else {
        return Ok(None);
    };
    Ok(Some(BrowserSession {
        user,
        time_zone: super::user_settings::stored_time_zone(&record.time_zone),
        email: record.email,
    }))
}

/// Makes the token hashing to `token_hash` a browser session, whose idle time counts from now.
pub async fn start_session(ctx: &Ctx, token_hash: &str) -> Result<(), OpError> {
    Ok(ctx.store().touch_session(token_hash, now_millis()).await?)
}

/// Ends the session or token hashing to `token_hash`.
pub async fn end_session(ctx: &Ctx, token_hash: &str) -> Result<(), OpError> {
    Ok(ctx.store().delete_token(token_hash).await?)
}

/// Whether the token hashing to `token_hash` still belongs to `user` (sign-out and the
/// invalidation of tokens end it).
pub async fn token_alive(ctx: &Ctx, user: &UserId, token_hash: &str) -> Result<bool, OpError> {
    Ok(ctx
        .store()
        .token_owner(token_hash, now_millis())
        .await?
        .is_some_and(|(owner, _)| owner == user))
}

/// The lifetime asked for, checked against the allowed range.
fn lifetime(requested: Option<i64>) -> Result<i64, OpError> {
    match requested {
        None => Ok(DEFAULT_TOKEN_SECONDS),
        Some(s) if (MIN_TOKEN_SECONDS..=MAX_TOKEN_SECONDS).contains(&s) => Ok(s),
        Some(s) => Err(OpError::field(
            "expiresInSec",
            format!("must be between {MIN_TOKEN_SECONDS} and {MAX_TOKEN_SECONDS} seconds, not {s}"),
        )),
    }
}

async fn issue_token(
    store: &dyn Store,
    user: &str,
    seconds: i64,
) -> Result<ClientLoginResponse, OpError> {
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
    Ok(ClientLoginResponse {
        token: Some(token),
        expires_in_sec: seconds,
    })
}

fn required<'a>(field: &str, value: &'a Option<String>) -> Result<&'a str, OpError> {
    value
        .as_deref()
        .filter(|v| !v.is_empty())
        .ok_or_else(|| OpError::field(field, "is required"))
}

/// A token for an e-mail address and password. Failures are counted per (account, client
/// network) and per network; the account's guesses are judged one after another.
pub async fn login(
    ctx: &Ctx,
    client: &Client,
    request: ClientLoginRequest,
) -> Result<ClientLoginResponse, OpError> {
    let email = required("email", &request.email)?.trim().to_lowercase();
    let password = required("password", &request.password)?.to_string();
    let seconds = lifetime(request.expires_in_sec)?;
    let peer = client.address;
    // Only a well-formed address names an account (and a bounded limiter key).
    let account = super::rules::is_email(&email).then_some(email.as_str());
    let limits = ctx.limits();
    limits
        .login_allowed(account, peer)
        .map_err(OpError::TooMany)?;
    // The account's guesses are judged one after another, so parallel ones cannot all slip in
    // before the first failure is counted; other accounts' logins do not wait for them.
    // A malformed address names no account: its guesses wait in the turn of their network.
    let turn = account.map_or_else(
        || super::limits::client_network(peer).to_string(),
        str::to_string,
    );
    let _turn = limits.account_turn(&turn).await.map_err(OpError::TooMany)?;
    limits
        .login_allowed(account, peer)
        .map_err(OpError::TooMany)?;
    let user = match account {
        Some(email) => ctx.store().user_by_email(email).await?,
        None => None,
    };
    let stored = user
        .as_ref()
        .map(|u| u.password_hash.clone())
        .unwrap_or_else(|| secrets::decoy_password_hash().to_string());
    let verified = check_password(ctx, password, stored).await?;
    let user = user.filter(|_| verified).map(|u| u.id);
    let issued = finish(ctx, account, peer, user.clone(), seconds, LOGIN_FAILED).await?;
    remember_base(ctx, user.as_deref(), client.base.as_deref()).await?;
    Ok(issued)
}

/// A token for a user id and API key.
pub async fn api_login(
    ctx: &Ctx,
    client: &Client,
    request: ApiLoginRequest,
) -> Result<ClientLoginResponse, OpError> {
    let user_id = required("userId", &request.user_id)?;
    let key = required("apiKey", &request.api_key)?;
    let seconds = lifetime(request.expires_in_sec)?;
    let peer = client.address;
    // Only a well-formed id names an account (and a bounded limiter key).
    let account = crate::store::is_id(user_id).then_some(user_id);
    ctx.limits()
        .login_allowed(account, peer)
        .map_err(OpError::TooMany)?;
    // An API key is 256 random bits kept as its SHA-256: comparing costs microseconds, so this
    // login takes no turn and waits for no password hash (parallel guesses at 2^256 keys gain
    // nothing from slipping past the failure count).
    let user = match account {
        Some(id) => ctx.store().user_by_id(id).await?,
        None => None,
    };
    let user = user
        .filter(|u| secrets::matches_hash(key, &u.api_key_hash))
        .map(|u| u.id);
    let issued = finish(ctx, account, peer, user.clone(), seconds, APILOGIN_FAILED).await?;
    remember_base(ctx, user.as_deref(), client.base.as_deref()).await?;
    Ok(issued)
}

/// Whether `password` matches the `stored` argon2 hash, computed off the async threads in one
/// of the bounded hash slots.
async fn check_password(ctx: &Ctx, password: String, stored: String) -> Result<bool, OpError> {
    let slot = ctx.limits().hash_slot().await.map_err(OpError::TooMany)?;
    tokio::task::spawn_blocking(move || {
        let verified = secrets::verify_password(&password, &stored);
        drop(slot);
        verified
    })
    .await
    .map_err(|err| OpError::Internal(format!("password check: {err}")))
}

/// Keeps where `user` logged in from: the base of the links in the user's webhook payloads
/// when the service has no public address.
async fn remember_base(ctx: &Ctx, user: Option<&str>, base: Option<&str>) -> Result<(), OpError> {
    if let (Some(user), Some(base)) = (user, base) {
        ctx.store().set_login_base(user, base).await?;
    }
    Ok(())
}

/// The end of a login: a token for `user` when the credentials held (and the failures of this
/// account from this network forgotten); otherwise the failure is counted and the answer is
/// [`OpError::Unauthorized`] with `failure`.
async fn finish(
    ctx: &Ctx,
    account: Option<&str>,
    address: IpAddr,
    user: Option<String>,
    seconds: i64,
    failure: &'static str,
) -> Result<ClientLoginResponse, OpError> {
    let limits = ctx.limits();
    match (user, account) {
        (Some(user), Some(account)) => {
            limits.login_succeeded(account, address);
            issue_token(ctx.store(), &user, seconds).await
        }
        _ => {
            limits.login_failed(account, address);
            Err(OpError::Unauthorized(failure))
        }
    }
}

/// Ends every token and browser session of the user issued so far.
pub async fn invalidate_tokens(ctx: &Ctx, user: &UserId) -> Result<(), OpError> {
    Ok(ctx.store().invalidate_tokens(user).await?)
}

/// Replaces the user's API key with a new random one, returned this once (only its hash is
/// kept); the old key stops working at once.
pub async fn rotate_api_key(ctx: &Ctx, user: &UserId) -> Result<String, OpError> {
    let api_key = secrets::new_api_key();
    ctx.store()
        .set_api_key(user, &secrets::sha256_hex(&api_key))
        .await?;
    Ok(api_key)
}

/// Changes the signed-in user's password, given the current one: every other token and
/// session of the user ends, the one of `keep_token_hash` keeps working. A wrong current
/// password counts as a failed login of the account from the client's network.
pub async fn change_password(
    ctx: &Ctx,
    session: &Authenticated,
    address: IpAddr,
    current: &Option<String>,
    new: &Option<String>,
) -> Result<(), OpError> {
    let current = required("currentPassword", current)?.to_string();
    let new = required("newPassword", new)?.to_string();
    password_length(&new).map_err(|message| OpError::field("newPassword", message))?;
    let user = ctx
        .store()
        .user_by_id(&session.user)
        .await?
        .ok_or(OpError::NotFound)?;
    // A stolen token must not become a fast way to guess the password: the check is a login.
    let limits = ctx.limits();
    let account = Some(user.email.as_str());
    limits
        .login_allowed(account, address)
        .map_err(OpError::TooMany)?;
    let _turn = limits
        .account_turn(&user.email)
        .await
        .map_err(OpError::TooMany)?;
    limits
        .login_allowed(account, address)
        .map_err(OpError::TooMany)?;
    if !check_password(ctx, current, user.password_hash.clone()).await? {
        limits.login_failed(account, address);
        return Err(OpError::field(
            "currentPassword",
            "is not the account's password",
        ));
    }
    let password_hash = {
        let _slot = limits.hash_slot().await.map_err(OpError::TooMany)?;
        hash_off_thread(new).await.map_err(OpError::Internal)?
    };
    ctx.store()
        .set_password(&user.id, &password_hash, &session.token_hash)
        .await?;
    Ok(())
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

/// Creates a user with `password` (or a random one; either of 8 to 1,024 characters) and a new
/// API key: `wachet user add`, and `wachet serve`'s first user.
pub async fn create_account(
    store: &dyn Store,
    email: &str,
    password: Option<String>,
) -> Result<Account, StoreError> {
    let email = email.trim().to_lowercase();
    if !crate::ops::rules::is_email(&email) {
        return Err(StoreError::invalid("email", "not an e-mail address"));
    }
    let password = password.unwrap_or_else(secrets::new_password);
    // The same bounds as every other road to a password (a reset, a change): an account made
    // with a shorter one would hold a password none of them would set.
    password_length(&password).map_err(|message| StoreError::invalid("password", message))?;
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
        time_zone: "UTC".into(),
    };
    store.create_user(&user).await?;
    Ok(Account {
        id: user.id,
        email,
        password,
        api_key,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sqlite::SqliteStore;

    /// Making an account and resetting its password hold a password to the same bounds, the
    /// ones a password change in the API or the web interface holds it to.
    #[tokio::test]
    async fn every_road_to_a_password_takes_the_same_lengths() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("w.db")).await.unwrap();
        let made = create_account(&store, "a@example.com", Some("eight ch".into())).await;
        assert_eq!(made.unwrap().password, "eight ch");
        for short in ["", "seven c"] {
            let made = create_account(&store, "b@example.com", Some(short.into())).await;
            let reset = reset_password(&store, "a@example.com", Some(short.into())).await;
            for err in [
                made.map(|_| ()).unwrap_err(),
                reset.map(|_| ()).unwrap_err(),
            ] {
                let StoreError::Invalid { field, message } = err else {
                    panic!("{err:?}");
                };
                assert_eq!(field, "password");
                assert!(message.contains("8 to 1024 characters"), "{message}");
            }
        }
        let reset = reset_password(&store, "a@example.com", Some("other pw".into())).await;
        assert_eq!(reset.unwrap(), "other pw");
        assert!(create_account(&store, "b@example.com", None).await.is_ok());
    }
}
