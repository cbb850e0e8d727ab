//! The web interface served at `/` beside the API, by the same process and port: pages rendered
//! on the server with maud (escaping everything it shows), its embedded assets, the sign-in
//! session and the layer of security headers every page passes. It reaches data only through
//! the operations the API calls too ([`crate::ops`]: the same logins, limits, validation and
//! store calls), so a browser can do nothing the API would refuse.

mod account;
mod assets;
mod folders;
mod monitors;
mod shared;

use crate::ops::Ctx;
use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::Response;
use axum::routing::{get, post};
use tower_http::catch_panic::CatchPanicLayer;

pub use monitors::live::LiveStreams;
pub use shared::session::{DEFAULT_IDLE_SECONDS, DEFAULT_LIFETIME_SECONDS, SESSION_COOKIE};

/// Largest form body read (a URL and a few short fields).
const MAX_FORM_BYTES: usize = 16 * 1024;

/// Largest monitor form read: a request body of 64 KiB, 32 KiB of headers, a 4 KiB note and
/// regex, URL filters and alerts, percent-encoded.
const MAX_MONITOR_FORM_BYTES: usize = 512 * 1024;

pub use crate::ops::WebSettings;

/// The interface's routes, with its own layers (security headers, panic guard, form limit).
pub fn routes(state: Ctx) -> Router {
    let settings = std::sync::Arc::new(state.settings().web.clone());
    Router::new()
        .route("/", get(folders::list::root))
        .route("/folders/{id}", get(folders::list::folder))
        .route(
            "/folders/new",
            get(folders::edit::new_folder).post(folders::edit::create),
        )
        .route(
            "/folders/{id}/notifications",
            get(folders::notify::page_of).post(folders::notify::save),
        )
        .route(
            "/folders/{id}/rename",
            get(folders::edit::rename_page).post(folders::edit::rename),
        )
        .route(
            "/folders/{id}/move",
            get(folders::edit::move_page).post(folders::edit::move_folder),
        )
        .route(
            "/folders/{id}/delete",
            get(folders::edit::delete_page).post(folders::edit::delete),
        )
        .route(
            "/monitors/bulk",
            post(folders::bulk::act).layer(bulk_limit()),
        )
        .route(
            "/monitors/bulk/move",
            post(folders::bulk::move_to).layer(bulk_limit()),
        )
        .route(
            "/monitors/bulk/delete",
            post(folders::bulk::delete).layer(bulk_limit()),
        )
        .route("/monitors/{id}/row", get(monitors::live::row))
        .route("/monitors/{id}/status", get(monitors::live::status))
        .route("/live", get(monitors::live::stream))
        .route("/monitors/quick-add", post(folders::list::quick_add))
        .route(
            "/monitors/new",
            get(monitors::edit::new_monitor)
                .post(monitors::edit::create)
                .layer(shared::form::larger_limit(MAX_MONITOR_FORM_BYTES)),
        )
        .route(
            "/monitors/{id}/edit",
            get(monitors::edit::edit)
                .post(monitors::edit::update)
                .layer(shared::form::larger_limit(MAX_MONITOR_FORM_BYTES)),
        )
        .route(
            "/monitors/preview",
            post(monitors::preview::preview)
                .layer(shared::form::larger_limit(MAX_MONITOR_FORM_BYTES)),
        )
        .route("/monitors/pick", get(monitors::picker::pick))
        .route("/monitors/pick/value", get(monitors::picker::value))
        .route("/monitors/pick/frame/{token}", get(monitors::picker::frame))
        .route("/monitors/{id}/pick", get(monitors::picker::pick_monitor))
        .route(
            "/monitors/record/{token}",
            get(monitors::record::show).post(monitors::record::act),
        )
        .route("/monitors/record/{token}/shot", get(monitors::record::shot))
        .route("/monitors/{id}/pages/{page}", get(monitors::portal::page))
        .route(
            "/monitors/{id}/pages/{page}/history",
            get(monitors::portal::page_history),
        )
        .route(
            "/monitors/{id}/pages/{page}/diff",
            get(monitors::portal::page_diff),
        )
        .route(
            "/monitors/{id}/pages/{page}/history/latest",
            get(monitors::portal::page_history_latest),
        )
        .route("/monitors/{id}", get(monitors::show::show))
        .route("/monitors/{id}/pause", post(monitors::show::pause))
        .route("/monitors/{id}/resume", post(monitors::show::resume))
        .route(
            "/monitors/{id}/delete",
            get(monitors::delete::confirm).post(monitors::delete::delete),
        )
        .route("/monitors/{id}/history", get(monitors::history::history))
        .route(
            "/monitors/{id}/history/latest",
            get(monitors::history::latest),
        )
        .route("/monitors/{id}/diff", get(monitors::diff::show))
        .route("/notifications", get(account::notifications::list))
        .route("/notifications/{id}", get(account::notifications::show))
        .route(
            "/notifications/{id}/deliveries/{delivery}/retry",
            post(account::notifications::retry),
        )
        .route("/settings", get(account::settings::show))
        .route(
            "/settings/import",
            post(account::transfer::upload).layer(shared::form::larger_limit(
                account::transfer::MAX_WEB_FORM_BYTES,
            )),
        )
        .route(
            "/settings/import/confirm",
            post(account::transfer::confirm).layer(shared::form::larger_limit(
                account::transfer::MAX_WEB_FORM_BYTES,
            )),
        )
        .route("/settings/export", get(account::transfer::download))
        .route("/settings/endpoints", post(account::settings::add_endpoint))
        .route(
            "/settings/endpoints/schedule",
            post(account::settings::schedule_endpoint),
        )
        .route(
            "/settings/endpoints/remove",
            post(account::settings::remove_endpoint),
        )
        .route(
            "/settings/endpoints/preview",
            post(account::settings::preview_endpoint),
        )
        .route(
            "/settings/endpoints/test",
            post(account::settings::test_endpoint),
        )
        .route(
            "/settings/webhook-secret",
            post(account::settings::webhook_secret),
        )
        .route("/settings/api-key", post(account::settings::api_key))
        .route("/settings/time-zone", post(account::settings::time_zone))
        .route("/settings/password", post(account::settings::password))
        .route(
            "/settings/sign-out-everywhere",
            post(account::settings::sign_out_everywhere),
        )
        .route("/settings/feeds", post(account::settings::create_feed))
        .route(
            "/settings/feeds/{id}/delete",
            post(account::settings::delete_feed),
        )
        .route("/feeds/renew", post(account::feeds::renew))
        .route("/feeds/all.atom", get(account::feeds::all))
        .route("/feeds/folders/{file}", get(account::feeds::folder))
        .route("/feeds/monitors/{file}", get(account::feeds::monitor))
        .route(
            "/signin",
            get(account::signin::form).post(account::signin::submit),
        )
        .route("/signout", post(account::signin::sign_out))
        .route("/assets/{name}", get(assets::serve))
        .route("/favicon.ico", get(assets::favicon))
        .with_state(state)
        .layer(axum::Extension(std::sync::Arc::new(
            monitors::pick_store::PickStore::default(),
        )))
        .layer(axum::Extension(std::sync::Arc::new(
            monitors::diff::Diffs::default(),
        )))
        .layer(axum::Extension(std::sync::Arc::new(
            monitors::record_store::RecordStore::default(),
        )))
        .layer(axum::Extension(std::sync::Arc::new(LiveStreams::default())))
        .layer(axum::Extension(std::sync::Arc::new(
            account::feeds::FeedWork::default(),
        )))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_FORM_BYTES))
        .layer(axum::middleware::from_fn_with_state(
            settings,
            sign_in_returns,
        ))
        .layer(axum::middleware::from_fn(security_headers))
        .layer(CatchPanicLayer::custom(|_| shared::pages::internal_error()))
}

/// The body limit of the bulk forms, which carry up to [`folders::bulk::MAX_SELECTED`] ids.
fn bulk_limit() -> axum::extract::DefaultBodyLimit {
    axum::extract::DefaultBodyLimit::max(folders::bulk::MAX_BULK_BYTES)
}

/// The Content-Security-Policy of every page: scripts and styles only from the binary's own
/// assets (no inline code, so injected markup could not run even if escaping failed), scripts
/// reaching only this origin (the live updates' stream and fragments), forms only to this
/// origin, and no framing.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                   connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// A page read without a live session sends the browser to the sign-in page; this keeps where
/// it was going (for after the sign-in) and, when it carried a session cookie, says that its
/// session ended (or that it carried two session cookies, which sign out). Only reads are sent
/// back to: a form's answer is no page to return to.
async fn sign_in_returns(
    axum::extract::State(settings): axum::extract::State<std::sync::Arc<WebSettings>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let is_read = request.method() == axum::http::Method::GET;
    let ended = shared::session::has_cookie(request.headers());
    let twice = shared::session::several_cookies(request.headers(), &settings);
    let going = request
        .uri()
        .path_and_query()
        .map(|path| path.as_str().to_string())
        .unwrap_or_default();
    let mut response = next.run(request).await;
    let to_sign_in = response.status().is_redirection()
        && response
            .headers()
            .get(header::LOCATION)
            .is_some_and(|location| location == "/signin");
    if !to_sign_in || !is_read {
        return response;
    }
    let mut location = String::from("/signin");
    let mut separator = '?';
    if let Some(path) = shared::session::local_path(&going).filter(|path| *path != "/") {
        location.push_str("?next=");
        location.extend(form_urlencoded::byte_serialize(path.as_bytes()));
        separator = '&';
    }
    if twice {
        location.push(separator);
        location.push_str("cookies=2");
    } else if ended {
        location.push(separator);
        location.push_str("ended=1");
    }
    if let Ok(value) = HeaderValue::from_str(&location) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    response
}

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
