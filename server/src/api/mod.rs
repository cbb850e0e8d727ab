//! The REST API under `/thirdparty/v1`: routing and the layers every request passes (panic
//! guard, body limit, problem+json errors, response media type). Each group of endpoints has
//! its module, which turns JSON into calls of the operations ([`crate::ops`]) and their results
//! and errors into JSON and problem+json; [`openapi`] documents them all from the same code.
//!
//! The API reaches data only through the operations, never the store itself.

pub(crate) mod auth;
pub(crate) mod body;
mod data;
pub(crate) mod folders;
pub(crate) mod notifications;
pub mod openapi;
pub mod problem;
pub(crate) mod tasks;
pub(crate) mod transfer;
pub(crate) mod user;

use crate::ops::Ctx;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::response::Response;
use tower_http::catch_panic::CatchPanicLayer;

pub use crate::ops::Settings as ApiSettings;
pub use crate::ops::limits::{self, LimitSettings};
pub use auth::{Account, create_account, reset_password};

/// The API's routes with its layers (the composition with the web interface is
/// [`crate::http`]'s).
pub fn routes(ctx: Ctx) -> Router {
    let (routes, document) = openapi::routes().split_for_parts();
    with_layers(
        routes
            .merge(openapi::docs_routes(document))
            .route("/metrics", axum::routing::get(metrics))
            .with_state(ctx),
    )
}

/// `GET /metrics`: the Prometheus text format ([`crate::metrics`]); counts only, no secrets.
async fn metrics(
    axum::extract::State(state): axum::extract::State<Ctx>,
) -> Result<Response, problem::ApiError> {
    use axum::response::IntoResponse;
    let text = crate::ops::notifications::metrics(&state).await?;
    Ok((
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4",
        )],
        text,
    )
        .into_response())
}

/// Wraps routes in what every request of the API passes: the panic guard (a panicking handler
/// answers 500 problem+json, the connection stays up), problem+json for axum's own errors, the
/// response media type, the body limit, and the 404 for unknown paths.
pub fn with_layers(routes: Router) -> Router {
    routes
        .fallback(|| async { problem::problem(axum::http::StatusCode::NOT_FOUND, "no such path") })
        .layer(DefaultBodyLimit::max(body::MAX_BODY_BYTES))
        .layer(axum::middleware::from_fn(conventions))
        .layer(CatchPanicLayer::custom(problem::panic_response))
}

/// Every response in the API's conventions: errors as problem+json, JSON in the media type
/// the client prefers.
async fn conventions(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let wanted = body::wanted_type(request.headers());
    let response = problem::ensure_problem(next.run(request).await);
    body::retype(response, wanted)
}
