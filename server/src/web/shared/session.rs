//! The sign-in session of a browser and the checks every form passes. A session is an API
//! token (256 random bits, stored only as its SHA-256, [`crate::store::UserStore::insert_token`])
//! issued by the same login as the API's ([`crate::ops::account::login`]) and carried in an HttpOnly cookie instead of a header, so
//! `invalidateTokens` and a password change end sessions like any token. Forms carry a CSRF
//! token derived from the session token (HMAC, nothing more to store) and must come from this
//! origin (`Sec-Fetch-Site`, else `Origin`). A session ends at its absolute lifetime (the
//! token's expiry) or after an idle time without use (its last use is written at most once a
//! minute, so a page view is rarely a write).
//!
//! Cookies set by another site cannot stand in for ours: whenever the cookie is `Secure` it is
//! named with the `__Host-` prefix (which browsers let only this host set, over https, for the
//! whole site), and only that name is read then; a request carrying two session cookies (one
//! tossed in beside ours for a narrower path or a parent domain) is signed out and told so,
//! never taken as either one's user.

use crate::ops::Ctx;
use crate::ops::account;
use crate::web::WebSettings;
use crate::web::shared::error::PageError;
use axum::http::{HeaderMap, header};
use hmac::{Hmac, Mac};
use subtle::ConstantTimeEq;

/// The session cookie's name over plain http.
pub const SESSION_COOKIE: &str = "wachet_session";
/// The session cookie's name whenever it is `Secure`.
pub const SECURE_SESSION_COOKIE: &str = "__Host-wachet_session";
pub use crate::ops::settings::{DEFAULT_IDLE_SECONDS, DEFAULT_LIFETIME_SECONDS};
/// Longest cookie value looked at; ours are 43 characters.
const MAX_TOKEN_LEN: usize = 256;

/// A signed-in browser.
#[derive(Debug, Clone)]
pub struct Session {
    /// The user.
    pub user: String,
    /// The user's e-mail address, shown in the header.
    pub email: String,
    /// SHA-256 of the session token, hex (what sign-out deletes).
    pub token_hash: String,
    /// The token every form of this session carries.
    pub csrf: String,
    /// The time zone the user's times are shown in.
    pub zone: chrono_tz::Tz,
}

/// The session cookie's name: `__Host-` prefixed whenever the cookie is `Secure`.
fn cookie_name(secure: bool) -> &'static str {
    if secure {
        SECURE_SESSION_COOKIE
    } else {
        SESSION_COOKIE
    }
}

/// Every value of the cookie `name` the request carries (browsers send one per path and
/// domain it was set for).
fn cookie_values<'a>(headers: &'a HeaderMap, name: &'a str) -> impl Iterator<Item = &'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(move |(cookie, _)| *cookie == name)
        .map(|(_, value)| value.trim())
        .filter(|value| !value.is_empty())
}

/// The session token of the request: its one session cookie of the name this request's
/// security gives it. Two of them (another site tossed one in) are no session at all.
fn cookie_token<'a>(headers: &'a HeaderMap, settings: &WebSettings) -> Option<&'a str> {
    let mut values = cookie_values(headers, cookie_name(secure(headers, settings)));
    let token = values.next()?;
    if values.next().is_some() {
        return None;
    }
    Some(token).filter(|token| token.len() <= MAX_TOKEN_LEN)
}

/// Whether the request carries more than one session cookie (and is signed out for it).
pub fn several_cookies(headers: &HeaderMap, settings: &WebSettings) -> bool {
    cookie_values(headers, cookie_name(secure(headers, settings))).count() > 1
}

/// The session of the request, if it carries a live one. A signed-in browser counts against
/// the user's request rate like the API does.
pub async fn current(state: &Ctx, headers: &HeaderMap) -> Result<Option<Session>, PageError> {
    let Some(token) = cookie_token(headers, &state.settings().web) else {
        return Ok(None);
    };
    let token_hash = crate::secrets::sha256_hex(token);
    let Some(found) = account::session(state, &token_hash).await? else {
        return Ok(None);
    };
    Ok(Some(Session {
        user: found.user,
        email: found.email,
        token_hash,
        csrf: csrf_token(token),
        zone: found.time_zone,
    }))
}

/// The CSRF token of a session: an HMAC of a fixed label under the session token, which only
/// the cookie's holder knows and which changes with every session.
fn csrf_token(session_token: &str) -> String {
    let Ok(mut mac) = Hmac::<sha2::Sha256>::new_from_slice(session_token.as_bytes()) else {
        // HMAC takes keys of any length; this cannot happen, and an empty token matches nothing.
        return String::new();
    };
    mac.update(b"wachet web form v1");
    mac.finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Whether a form's CSRF field is the session's, compared in constant time.
pub fn csrf_matches(session: &Session, given: Option<&str>) -> bool {
    let given = given.unwrap_or("");
    !session.csrf.is_empty() && bool::from(session.csrf.as_bytes().ct_eq(given.as_bytes()))
}

/// Whether a state-changing request comes from a page of this service. Browsers send
/// `Sec-Fetch-Site` (then it must be `same-origin`, or `none` for a user's own navigation);
/// older ones send `Origin`, which must name this host (or the public URL). A request with
/// neither is not from a browser's cross-site form, which always sends one of them.
pub fn same_origin(headers: &HeaderMap, settings: &WebSettings) -> bool {
    if let Some(site) = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok()) {
        return matches!(site, "same-origin" | "none");
    }
    let Some(origin) = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) else {
        return true;
    };
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
    let origin_host = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"));
    let public = settings
        .public_url
        .as_deref()
        .map(|url| url.trim_end_matches('/'));
    (host.is_some() && origin_host == host) || (public.is_some() && public == Some(origin))
}

/// Whether the cookie must be `Secure`: the public URL is https, or a proxy in front says the
/// request came over https (trusting it only makes the cookie stricter).
pub fn secure(headers: &HeaderMap, settings: &WebSettings) -> bool {
    crate::origin::secure(headers, settings)
}

/// Whether the request carries a session cookie at all (live or not, of either name): a
/// browser sent to the sign-in page with one had its session end.
pub fn has_cookie(headers: &HeaderMap) -> bool {
    cookie_values(headers, SESSION_COOKIE)
        .chain(cookie_values(headers, SECURE_SESSION_COOKIE))
        .next()
        .is_some()
}

/// Longest "where you were going" kept through the sign-in.
const MAX_NEXT_LEN: usize = 2048;

/// `next` if it is a path of this site to come back to after signing in: it starts with one
/// `/` (never `//` or `/\`, which browsers read as another host), holds only visible ASCII
/// (anything else arrives percent-encoded) and is short.
pub fn local_path(next: &str) -> Option<&str> {
    let bytes = next.as_bytes();
    let local = bytes.first() == Some(&b'/')
        && !matches!(bytes.get(1), Some(b'/' | b'\\'))
        && next.len() <= MAX_NEXT_LEN
        && bytes.iter().all(|b| b.is_ascii_graphic() && *b != b'\\');
    local.then_some(next)
}

/// The `Set-Cookie` value of a new session lasting `seconds` at most.
pub fn cookie(token: &str, seconds: i64, secure: bool) -> String {
    format!(
        "{}={token}; Path=/; Max-Age={seconds}; HttpOnly; SameSite=Lax{}",
        cookie_name(secure),
        if secure { "; Secure" } else { "" }
    )
}

/// The `Set-Cookie` value that removes the session cookie.
pub fn clear_cookie(secure: bool) -> String {
    format!(
        "{}=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax{}",
        cookie_name(secure),
        if secure { "; Secure" } else { "" }
    )
}

#[cfg(test)]
mod tests {
    use super::local_path;

    #[test]
    fn only_paths_of_this_site_are_kept() {
        for good in [
            "/",
            "/monitors/abc",
            "/monitors/abc/diff?from=1&to=2",
            "/a%20b",
        ] {
            assert_eq!(local_path(good), Some(good));
        }
        let long = format!("/{}", "a".repeat(3000));
        for bad in [
            "",
            "//evil.example",
            "/\\evil.example",
            "/\\/evil.example",
            "https://evil.example/",
            "javascript:alert(1)",
            "monitors",
            "/a b",
            "/a\nLocation: x",
            "/caf\u{e9}",
            long.as_str(),
        ] {
            assert_eq!(local_path(bad), None, "{bad:?}");
        }
    }
}
