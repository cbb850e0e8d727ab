//! A download: a streamed body sent as an attachment, with its media type and the file name a
//! browser saves it under. The REST API and the web interface both send the export this way;
//! the module knows nothing of either.

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use futures::TryStream;

/// `body` as an attachment named `file_name` (a name of plain characters; one a header cannot
/// carry leaves the browser to choose).
pub fn attachment<S>(media_type: &'static str, file_name: &str, body: S) -> Response
where
    S: TryStream + Send + 'static,
    S::Ok: Into<Bytes>,
    S::Error: Into<axum::BoxError>,
{
    let disposition = HeaderValue::from_str(&format!("attachment; filename=\"{file_name}\""))
        .unwrap_or(HeaderValue::from_static("attachment"));
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(media_type)),
            (header::CONTENT_DISPOSITION, disposition),
        ],
        Body::from_stream(body),
    )
        .into_response()
}
