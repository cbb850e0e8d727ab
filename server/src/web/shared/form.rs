//! Reading a posted form: the body within the service's body-read timeout and the form size
//! limit, decoded as `application/x-www-form-urlencoded`. What fails is a page saying so
//! (408, 413, 400), never a bare text answer.

use crate::connections::BodyReadTimeout;
use crate::web::shared::pages;
use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use axum::response::Response;
use serde::de::DeserializeOwned;

/// Used when the service set no body-read timeout (tests building the router themselves).
const DEFAULT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// The form limit of a route that takes more than [`crate::web::MAX_FORM_BYTES`], for the message.
#[derive(Clone, Copy)]
pub struct Limit(usize);

/// Layers for a route whose forms may be up to `bytes` long: the body limit, and the same
/// number in the message of a form refused for its size.
pub fn larger_limit(
    bytes: usize,
) -> tower::layer::util::Stack<axum::extract::DefaultBodyLimit, axum::Extension<Limit>> {
    tower::layer::util::Stack::new(
        axum::extract::DefaultBodyLimit::max(bytes),
        axum::Extension(Limit(bytes)),
    )
}

/// A decoded form.
pub struct Form<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Form<T> {
    type Rejection = Response;

    async fn from_request(request: Request, state: &S) -> Result<Self, Response> {
        let bytes = body(request, state).await?;
        decode(&bytes).map(Form).ok_or_else(unreadable)
    }
}

/// The body of a posted form, within the body-read timeout and the route's form limit.
pub async fn body<S: Send + Sync>(request: Request, state: &S) -> Result<Bytes, Response> {
    let timeout = request
        .extensions()
        .get::<BodyReadTimeout>()
        .map_or(DEFAULT_TIMEOUT, |t| t.0);
    let limit = request
        .extensions()
        .get::<Limit>()
        .map_or(crate::web::MAX_FORM_BYTES, |l| l.0);
    // A body trickled a byte at a time would hold the connection for ever.
    tokio::time::timeout(timeout, Bytes::from_request(request, state))
        .await
        .map_err(|_| {
            pages::bad_input(
                StatusCode::REQUEST_TIMEOUT,
                &format!("The form did not arrive within {} s.", timeout.as_secs()),
            )
        })?
        .map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                pages::bad_input(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    &format!("The form is larger than {} KiB.", limit / 1024),
                )
            } else {
                pages::bad_input(StatusCode::BAD_REQUEST, "The form could not be read.")
            }
        })
}

/// A form's body decoded as `T`; `None` when it does not decode ([`unreadable`] says so).
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Option<T> {
    serde_urlencoded::from_bytes(bytes).ok()
}

/// The page for a form that does not decode.
pub fn unreadable() -> Response {
    pages::bad_input(StatusCode::BAD_REQUEST, "The form could not be read.")
}
