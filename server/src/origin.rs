//! The address a request reached the service at, which both frontends put in the links they
//! hand out (a feed's address, the base of the links in a user's webhook payloads): the public
//! URL when one is set, else the `Host` the client used, https when the public URL is or a
//! proxy in front says so.

use crate::ops::WebSettings;
use axum::http::{HeaderMap, header};

/// The address of this service as the request reached it: the public URL when one is set,
/// else the `Host` the browser used (https when a proxy in front says so).
pub fn base_url(headers: &HeaderMap, settings: &WebSettings) -> String {
    if let Some(public) = settings.public_url.as_deref() {
        return public.trim_end_matches('/').to_string();
    }
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .filter(|host| {
            host.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b))
        })
        .unwrap_or("localhost");
    let scheme = if secure(headers, settings) {
        "https"
    } else {
        "http"
    };
    format!("{scheme}://{host}")
}

/// The scheme and host a request was sent to (`https://wachet.example:8443`): its `Host`
/// header, https when `X-Forwarded-Proto` says so (behind a proxy). `None` without a `Host`
/// that is a plain host name or address with an optional port.
pub fn request_base(headers: &HeaderMap) -> Option<String> {
    let host = headers.get(header::HOST)?.to_str().ok()?.trim();
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

/// Whether the browser reached the service over https: the public URL is https, or a proxy in
/// front says so (`X-Forwarded-Proto`).
pub fn secure(headers: &HeaderMap, settings: &WebSettings) -> bool {
    let public_https = settings
        .public_url
        .as_deref()
        .is_some_and(|url| url.to_ascii_lowercase().starts_with("https://"));
    let forwarded_https = headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|proto| proto.eq_ignore_ascii_case("https"));
    public_https || forwarded_https
}
