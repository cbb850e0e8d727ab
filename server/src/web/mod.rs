//! The web interface served at `/` beside the API, by the same process and port: pages rendered
//! on the server with maud (escaping everything it shows), its embedded assets, the sign-in
//! session and the layer of security headers every page passes. It reaches data only through
//! the API's own code (the same logins, limits, validation and store calls), so a browser can
//! do nothing the API would refuse.

mod assets;
mod delete;
mod diff;
mod folders;
mod form;
mod history;
mod layout;
mod monitor;
mod pages;
mod pick_store;
mod picker;
mod picker_page;
mod portal;
mod session;
mod signin;

use crate::api::AppState;
use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::Response;
use axum::routing::{get, post};
use tower_http::catch_panic::CatchPanicLayer;

pub use session::SESSION_COOKIE;

/// Largest form body read (a URL and a few short fields).
const MAX_FORM_BYTES: usize = 16 * 1024;

/// What the web interface needs from the service's settings.
#[derive(Debug, Clone, Default)]
pub struct WebSettings {
    /// The address people reach the service at (`https://watch.example.com`), when it differs
    /// from the listening address (behind a proxy). An https address marks the session cookie
    /// `Secure` and is an accepted `Origin` of forms.
    pub public_url: Option<String>,
}

/// The interface's routes, with its own layers (security headers, panic guard, form limit).
pub fn routes(state: AppState) -> Router {
    Router::new()
        .route("/", get(folders::root))
        .route("/folders/{id}", get(folders::folder))
        .route("/monitors/quick-add", post(folders::quick_add))
        .route("/monitors/new", get(folders::new_monitor))
        .route("/monitors/pick", get(picker::pick))
        .route("/monitors/pick/value", get(picker::value))
        .route("/monitors/pick/frame/{token}", get(picker::frame))
        .route("/monitors/{id}/pick", get(picker::pick_monitor))
        .route("/monitors/{id}/pages/{page}", get(portal::page))
        .route(
            "/monitors/{id}/pages/{page}/history",
            get(portal::page_history),
        )
        .route("/monitors/{id}/pages/{page}/diff", get(portal::page_diff))
        .route("/monitors/{id}", get(monitor::show))
        .route("/monitors/{id}/pause", post(monitor::pause))
        .route("/monitors/{id}/resume", post(monitor::resume))
        .route(
            "/monitors/{id}/delete",
            get(delete::confirm).post(delete::delete),
        )
        .route("/monitors/{id}/history", get(history::history))
        .route("/monitors/{id}/diff", get(diff::show))
        .route("/signin", get(signin::form).post(signin::submit))
        .route("/signout", post(signin::sign_out))
        .route("/assets/{name}", get(assets::serve))
        .route("/favicon.ico", get(assets::favicon))
        .with_state(state)
        .layer(axum::Extension(std::sync::Arc::new(
            pick_store::PickStore::default(),
        )))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_FORM_BYTES))
        .layer(axum::middleware::from_fn(security_headers))
        .layer(CatchPanicLayer::custom(|_| pages::internal_error()))
}

/// The Content-Security-Policy of every page: scripts and styles only from the binary's own
/// assets (no inline code, so injected markup could not run even if escaping failed), forms
/// only to this origin, and no framing.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                   form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

async fn security_headers(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    // A page with needs of its own (the picker and its frame) sets a stricter or wider policy
    // itself; every other page gets these.
    headers
        .entry(header::CONTENT_SECURITY_POLICY)
        .or_insert(HeaderValue::from_static(CSP));
    headers
        .entry(header::X_FRAME_OPTIONS)
        .or_insert(HeaderValue::from_static("DENY"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    // Pages show a user's data: never kept by shared caches, nor served from history after
    // sign-out. Assets set their own long caching.
    headers
        .entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    response
}
