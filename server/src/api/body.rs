//! What goes in and out of the API as bytes: request bodies (the four JSON media types of the
//! specification, 1 MiB at most, parsed with the field named on failure), query strings, and the
//! response media type chosen from the Accept header.

use super::problem::ApiError;
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderValue, header};
use axum::response::Response;
use serde::de::DeserializeOwned;

/// Largest request body accepted.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

use crate::connections::{BodyReadTimeout, DEFAULT_BODY_READ_TIMEOUT};

/// The largest buffer a thread keeps for the next response ([`ApiJson`]); a larger body's goes.
const MAX_SCRATCH_BYTES: usize = 1024 * 1024;

thread_local! {
    static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A JSON request body of type `T`, or a JSON response.
#[derive(Debug)]
pub struct ApiJson<T>(pub T);

impl<T: serde::Serialize> axum::response::IntoResponse for ApiJson<T> {
    fn into_response(self) -> Response {
        // Straight into one buffer: serde_json's many small writes cost more through a
        // BytesMut writer (axum's Json). The buffer is the thread's own, kept between
        // responses, and the body a copy of exactly its size: a page of 50 monitors (38 KB)
        // grown from a small buffer took seven reallocations, and freeing the 64 KB it ended in
        // made glibc's malloc consolidate its free lists on every request.
        let written = SCRATCH.with_borrow_mut(|scratch| {
            scratch.clear();
            let written = serde_json::to_writer(&mut *scratch, &self.0).map(|()| scratch.to_vec());
            if scratch.capacity() > MAX_SCRATCH_BYTES {
                *scratch = Vec::new();
            }
            written
        });
        match written {
            Ok(body) => (
                [(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                )],
                body,
            )
                .into_response(),
            Err(err) => {
                ApiError::Internal(format!("serializing the response: {err}")).into_response()
            }
        }
    }
}

/// Whether `content_type` is one the specification accepts: application/json,
/// application/json-patch+json, text/json or any application/*+json.
fn is_json(content_type: &str) -> bool {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || essence == "text/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        // Every body of this API is an object (but the bulk forms' lists, [`ApiJsonList`]);
        // serde would also read a struct from an array.
        read_json(request, state, b'{', "a JSON object")
            .await
            .map(ApiJson)
    }
}

/// A JSON array body, read as [`ApiJson`] reads an object: for the bulk forms (`PUT /tasks`).
#[derive(Debug)]
pub struct ApiJsonList<T>(pub Vec<T>);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJsonList<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        read_json(request, state, b'[', "a JSON array")
            .await
            .map(ApiJsonList)
    }
}

/// Reads a JSON body that opens with `opens` (`{` or `[`; `what` names it for the client) into
/// a `T`: JSON media type, read within the body timeout, the model's field paths in errors, no
/// NUL anywhere.
async fn read_json<S: Send + Sync, T: DeserializeOwned>(
    request: Request,
    state: &S,
    opens: u8,
    what: &str,
) -> Result<T, ApiError> {
    let json = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(is_json);
    if !json {
        return Err(ApiError::UnsupportedMediaType);
    }
    let timeout = request
        .extensions()
        .get::<BodyReadTimeout>()
        .map_or(DEFAULT_BODY_READ_TIMEOUT, |t| t.0);
    // A body trickled a byte at a time would hold the connection and its buffer for ever.
    let bytes = tokio::time::timeout(timeout, Bytes::from_request(request, state))
        .await
        .map_err(|_| ApiError::RequestTimeout(timeout.as_secs()))?
        .map_err(|rejection| {
            if rejection.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::PayloadTooLarge
            } else {
                ApiError::field(".", format!("cannot read the body: {rejection}"))
            }
        })?;
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&opens) {
        let found = if bytes.is_empty() {
            "empty".to_string()
        } else {
            format!("not {what}")
        };
        return Err(ApiError::field(
            ".",
            format!("the body is {found}; send {what}"),
        ));
    }
    let value =
        wachet::model::from_json(&bytes).map_err(|err| ApiError::field(err.path, err.message))?;
    refuse_nul(&bytes)?;
    Ok(value)
}

/// NUL characters can only arrive escaped (`\u0000`); no field may hold one, since a NUL in
/// text is never meant and PostgreSQL cannot store it. A 400 names the field.
fn refuse_nul(bytes: &[u8]) -> Result<(), ApiError> {
    let escaped = bytes.windows(6).any(|w| w.eq_ignore_ascii_case(b"\\u0000"));
    if !escaped {
        return Ok(());
    }
    let value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|err| ApiError::field(".", err.to_string()))?;
    match find_nul(&value, String::new()) {
        Some(path) => Err(ApiError::field(path, "must not contain NUL characters")),
        None => Ok(()),
    }
}

fn find_nul(value: &serde_json::Value, path: String) -> Option<String> {
    use serde_json::Value;
    let join = |path: &str, key: &str| {
        if path.is_empty() {
            key.to_string()
        } else {
            format!("{path}.{key}")
        }
    };
    match value {
        Value::String(s) if s.contains('\0') => {
            Some(if path.is_empty() { ".".into() } else { path })
        }
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, v)| find_nul(v, format!("{path}[{i}]"))),
        Value::Object(map) => map.iter().find_map(|(k, v)| {
            if k.contains('\0') {
                Some(join(&path, "(key)"))
            } else {
                find_nul(v, join(&path, k))
            }
        }),
        _ => None,
    }
}

/// Query parameters of type `T`; a malformed one is a 400 naming it.
#[derive(Debug)]
pub struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        let query = parts.uri.query().unwrap_or("");
        let pairs = form_urlencoded::parse(query.as_bytes());
        if let Some((name, _)) = pairs
            .clone()
            .find(|(k, v)| k.contains('\0') || v.contains('\0'))
        {
            return Err(ApiError::field(name, "must not contain NUL characters"));
        }
        let deserializer = serde_urlencoded::Deserializer::new(pairs);
        serde_path_to_error::deserialize(deserializer)
            .map(ApiQuery)
            .map_err(|err| {
                let path = err.path().to_string();
                ApiError::field(path, err.into_inner().to_string())
            })
    }
}

/// The media type to answer JSON with for a request: `text/json` or `text/plain` when its
/// Accept header prefers one of those over `application/json` (the three response media types
/// of the specification); `None` keeps `application/json`.
pub fn wanted_type(headers: &axum::http::HeaderMap) -> Option<&'static str> {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .and_then(preferred_json_type)
}

/// Gives a JSON response the media type the request asked for (problem+json stays as it is).
pub fn retype(mut response: Response, wanted: Option<&'static str>) -> Response {
    let Some(wanted) = wanted else {
        return response;
    };
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if is_json {
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(wanted));
    }
    response
}

/// `text/json` or `text/plain` when the Accept header ranks one of them above
/// `application/json`; `None` to keep `application/json`.
fn preferred_json_type(accept: &str) -> Option<&'static str> {
    let mut best: Option<(&'static str, f32)> = None;
    for item in accept.split(',') {
        let mut parts = item.split(';');
        let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
        let quality = parts
            .filter_map(|p| p.trim().strip_prefix("q="))
            .find_map(|q| q.trim().parse::<f32>().ok())
            .unwrap_or(1.0);
        let kind = match media.as_str() {
            "application/json" | "application/*" | "*/*" => "application/json",
            "text/json" => "text/json",
            "text/plain" | "text/*" => "text/plain",
            _ => continue,
        };
        if quality > 0.0 && best.is_none_or(|(_, q)| quality > q) {
            best = Some((kind, quality));
        }
    }
    best.map(|(kind, _)| kind)
        .filter(|kind| *kind != "application/json")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_media_types() {
        for ok in [
            "application/json",
            "application/json; charset=utf-8",
            "application/json-patch+json",
            "text/json",
            "application/vnd.api+json",
            "Application/JSON",
        ] {
            assert!(is_json(ok), "{ok}");
        }
        for bad in [
            "text/plain",
            "application/xml",
            "multipart/form-data",
            "",
            "json",
        ] {
            assert!(!is_json(bad), "{bad}");
        }
    }

    #[test]
    fn accept_picks_the_text_types_only_when_preferred() {
        assert_eq!(preferred_json_type("text/json"), Some("text/json"));
        assert_eq!(preferred_json_type("text/plain"), Some("text/plain"));
        assert_eq!(preferred_json_type("application/json, text/plain"), None);
        assert_eq!(preferred_json_type("*/*"), None);
        assert_eq!(
            preferred_json_type("text/plain;q=0.5, text/json"),
            Some("text/json")
        );
        assert_eq!(preferred_json_type("image/png"), None);
    }
}
