//! What every HTTP request of the service passes first and last: its id and its span. The id is
//! the client's `X-Request-Id` when that is sane (1 to [`MAX_ID`] characters of letters,
//! digits, `.`, `_` and `-`; a proxy's or a load balancer's id then follows the request
//! through), a new one otherwise; every response carries it back. The span names the method,
//! the route that matched (its pattern, never the path with its ids), the request id, and the
//! user once a login says who it is ([`record_user`]), so whatever is logged while the request
//! is handled (a 500's cause, logged once where it is known) says which request it came from.
//! It is an `ERROR`-level span so that its fields accompany errors under the default filter,
//! which shows warnings and errors only; each request's end is an event at `DEBUG`.

use axum::extract::{MatchedPath, Request};
use axum::http::{HeaderName, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;
use tracing::Instrument;

/// The header of the request id, both ways.
pub const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The longest request id sent by a client that is kept.
pub const MAX_ID: usize = 64;

/// Gives the request its id and span, and the response its `X-Request-Id`.
pub async fn request(request: Request, next: Next) -> Response {
    let id = request
        .headers()
        .get(&REQUEST_ID)
        .and_then(|value| value.to_str().ok())
        .filter(|id| sane(id))
        .map_or_else(crate::store::new_id, str::to_string);
    let span = tracing::error_span!(
        "request",
        method = %request.method(),
        route = tracing::field::Empty,
        request_id = %id,
        user = tracing::field::Empty,
    );
    let started = std::time::Instant::now();
    let mut response = next.run(request).instrument(span.clone()).await;
    span.in_scope(|| {
        tracing::debug!(
            status = response.status().as_u16(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "answered"
        );
    });
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(REQUEST_ID, value);
    }
    response
}

/// Records the route that matched in the request's span (a route layer: it runs once a route
/// matched, inside [`request`]'s span).
pub async fn route(request: Request, next: Next) -> Response {
    if let Some(path) = request.extensions().get::<MatchedPath>() {
        tracing::Span::current().record("route", tracing::field::display(path.as_str()));
    }
    next.run(request).await
}

/// Records who the request is from in its span, once a login or a session says it.
pub fn record_user(user: &str) {
    tracing::Span::current().record("user", tracing::field::display(user));
}

/// Whether a client's request id is kept: short, and only characters that need no escaping in
/// a header, a log line or a URL.
fn sane(id: &str) -> bool {
    (1..=MAX_ID).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

#[cfg(test)]
mod tests {
    use super::sane;

    #[test]
    fn only_short_plain_ids_are_kept() {
        assert!(sane("abc-123_x.y"));
        assert!(sane(&"a".repeat(64)));
        assert!(!sane(&"a".repeat(65)));
        assert!(!sane(""));
        assert!(!sane("a b"));
        assert!(!sane("a\u{7}b"));
        assert!(!sane("é"));
    }
}
