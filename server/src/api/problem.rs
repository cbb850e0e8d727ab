//! Errors as the API answers them: every non-2xx response is `application/problem+json`
//! (RFC 9457) with `type`, `title`, `status`, `detail` and, for validation failures, `errors`
//! naming each bad field. [`ApiError`] is what handlers return; [`ensure_problem`] turns the
//! responses axum makes itself (unknown path, wrong method) into the same shape.

use crate::ops::OpError;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use std::collections::BTreeMap;
use wachet::validate::FieldError;

/// The media type of error bodies.
pub const PROBLEM_JSON: &str = "application/problem+json";

/// An error body (RFC 9457).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Problem {
    /// Always `about:blank`: the status says what kind of error it is.
    #[serde(rename = "type")]
    pub kind: String,
    /// The status's reason phrase.
    pub title: String,
    /// The HTTP status.
    pub status: u16,
    /// What went wrong, for a person.
    pub detail: String,
    /// For 400: each bad field's JSON path with what is wrong with it.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub errors: BTreeMap<String, Vec<String>>,
}

/// An error a handler answers with.
#[derive(Debug)]
pub enum ApiError {
    /// 400: the request is malformed or a field fails validation.
    BadRequest {
        /// Summary.
        detail: String,
        /// Field path -> messages.
        errors: BTreeMap<String, Vec<String>>,
    },
    /// 401: no valid token, or a failed login.
    Unauthorized(&'static str),
    /// 404: no such id for this user.
    NotFound,
    /// 413: the body is over the limit.
    PayloadTooLarge,
    /// 415: the request's media type is not JSON.
    UnsupportedMediaType,
    /// 408: the request's body did not arrive within this many seconds; the connection is
    /// closed, since the rest of the body may still be on its way.
    RequestTimeout(u64),
    /// 503: the server could not do the work in time; retry after this many seconds.
    Unavailable(String, u64),
    /// 429: over a rate limit; retry after this many seconds.
    TooManyRequests(u64),
    /// 500: something failed on the server; the detail goes to the log, not to the client.
    Internal(String),
}

impl ApiError {
    /// A 400 for one field: the operations' invalid input, as the API answers it.
    pub fn field(field: impl Into<String>, message: impl Into<String>) -> Self {
        OpError::field(field, message).into()
    }

    /// A 400 for several fields.
    pub fn fields(list: Vec<FieldError>) -> Self {
        OpError::fields(list).into()
    }
}

impl From<OpError> for ApiError {
    fn from(err: OpError) -> Self {
        match err {
            OpError::Invalid { detail, errors } => ApiError::BadRequest { detail, errors },
            OpError::NotFound => ApiError::NotFound,
            OpError::Quota { limit, message } => ApiError::BadRequest {
                detail: message.clone(),
                errors: BTreeMap::from([(limit, vec![message])]),
            },
            OpError::TooMany(seconds) => ApiError::TooManyRequests(seconds),
            OpError::Unauthorized(detail) => ApiError::Unauthorized(detail),
            OpError::Unavailable {
                detail,
                retry_after,
            } => ApiError::Unavailable(detail, retry_after),
            OpError::Internal(detail) => ApiError::Internal(detail),
        }
    }
}

/// A problem+json response.
pub fn problem(status: StatusCode, detail: impl Into<String>) -> Response {
    problem_with(status, detail.into(), BTreeMap::new())
}

fn problem_with(
    status: StatusCode,
    detail: String,
    errors: BTreeMap<String, Vec<String>>,
) -> Response {
    let body = Problem {
        kind: "about:blank".into(),
        title: status.canonical_reason().unwrap_or("Error").into(),
        status: status.as_u16(),
        detail,
        errors,
    };
    let json = serde_json::to_vec(&body).unwrap_or_default();
    let mut response = (status, json).into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
    response
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        match self {
            ApiError::BadRequest { detail, errors } => {
                problem_with(StatusCode::BAD_REQUEST, detail, errors)
            }
            ApiError::Unauthorized(detail) => problem(StatusCode::UNAUTHORIZED, detail),
            ApiError::NotFound => problem(StatusCode::NOT_FOUND, "no such resource"),
            ApiError::PayloadTooLarge => problem(
                StatusCode::PAYLOAD_TOO_LARGE,
                "the request body is larger than 1 MiB",
            ),
            ApiError::UnsupportedMediaType => problem(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "send the body as application/json (or text/json, application/*+json)",
            ),
            ApiError::TooManyRequests(seconds) => {
                let mut response = problem(
                    StatusCode::TOO_MANY_REQUESTS,
                    format!("rate limit exceeded; retry in {seconds} s"),
                );
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(seconds.max(1)));
                response
            }
            ApiError::RequestTimeout(seconds) => {
                let mut response = problem(
                    StatusCode::REQUEST_TIMEOUT,
                    format!("the request body did not arrive within {seconds} s"),
                );
                response
                    .headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
                response
            }
            ApiError::Unavailable(detail, seconds) => {
                let mut response = problem(StatusCode::SERVICE_UNAVAILABLE, detail);
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(seconds.max(1)));
                response
            }
            ApiError::Internal(detail) => {
                tracing::error!(%detail, "internal error");
                problem(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "the server failed to answer; the error is logged",
                )
            }
        }
    }
}

/// Gives the error responses that axum and tower make themselves (404 for an unknown path, 405
/// for a wrong method, 413 from a body limit) the problem+json body every other error has.
pub fn ensure_problem(response: Response) -> Response {
    let status = response.status();
    let is_problem = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes() == PROBLEM_JSON.as_bytes());
    if !(status.is_client_error() || status.is_server_error()) || is_problem {
        return response;
    }
    let detail = match status {
        StatusCode::NOT_FOUND => "no such path".to_string(),
        StatusCode::METHOD_NOT_ALLOWED => "this path does not take that method".to_string(),
        other => other.canonical_reason().unwrap_or("error").to_string(),
    };
    let allow = response.headers().get(header::ALLOW).cloned();
    let mut replaced = problem(status, detail);
    if let Some(allow) = allow {
        replaced.headers_mut().insert(header::ALLOW, allow);
    }
    replaced
}

/// The 500 answer to a handler that panicked: the panic message stays in the log.
pub fn panic_response(panic: Box<dyn std::any::Any + Send + 'static>) -> Response {
    let message = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("(no message)");
    ApiError::Internal(format!("handler panicked: {message}")).into_response()
}
