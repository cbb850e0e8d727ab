//! The REST API under `/thirdparty/v1`: routing, shared state and the layers every request
//! passes (panic guard, body limit, problem+json errors, response media type). Each group of
//! endpoints has its module; [`openapi`] documents them all from the same code.
//!
//! The API reaches data only through the [`Store`] and the engine only through its public
//! [`Checker`] trait (validation of monitors).

pub(crate) mod auth;
pub(crate) mod body;
mod data;
pub(crate) mod folders;
pub mod limits;
pub(crate) mod locations;
pub(crate) mod notifications;
pub mod openapi;
mod paging;
pub mod problem;
mod query;
pub(crate) mod rules;
pub(crate) mod tasks;
pub(crate) mod transfer;
pub(crate) mod user;

use crate::store::Store;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::response::Response;
use std::sync::Arc;
use tower_http::catch_panic::CatchPanicLayer;
use wachet::Checker;

pub use auth::{Account, create_account, reset_password};
pub use limits::LimitSettings;

/// What the API needs from the service's settings.
#[derive(Debug, Clone)]
pub struct ApiSettings {
    /// Shortest recurrence of an active monitor, in seconds.
    pub min_recurrence: i32,
    /// Rate limits.
    pub limits: LimitSettings,
    /// Bounds on connections and how long a request may take to arrive.
    pub connections: crate::connections::ConnectionSettings,
    /// The web interface's settings.
    pub web: crate::web::WebSettings,
    /// Host names answered besides the public URL's, the listening address and (listening on
    /// loopback) the loopback names ([`crate::hosts`]).
    pub allowed_hosts: Vec<String>,
}

impl Default for ApiSettings {
    fn default() -> Self {
        ApiSettings {
            min_recurrence: 60,
            limits: LimitSettings::default(),
            connections: crate::connections::ConnectionSettings::default(),
            web: crate::web::WebSettings::default(),
            allowed_hosts: Vec::new(),
        }
    }
}

/// The state every handler shares.
#[derive(Clone)]
pub struct AppState {
    inner: Arc<Inner>,
}

struct Inner {
    store: Arc<dyn Store>,
    checker: Arc<dyn Checker>,
    settings: ApiSettings,
    cursors: paging::Cursors,
    /// Seals the secrets shown again (feed keys) with a key derived from the same secret.
    sealer: crate::secrets::Sealer,
    limits: limits::Limits,
    /// Turns to compile monitors on the blocking pool: half the cores, so validations never
    /// take every core from the requests of others.
    validations: Arc<tokio::sync::Semaphore>,
    /// The scheduler's announcements of stored checks (the web interface's live updates).
    checks: crate::schedule::events::CheckEvents,
    /// Turns true when the service stops: long-lived responses end then.
    stopping: tokio::sync::watch::Receiver<bool>,
    /// The web interface's live streams open, per user and in all.
    live: crate::web::LiveStreams,
    /// The browser tabs rendering for each user (the scheduler's checks and the interface's
    /// previews and picks).
    tabs: Arc<crate::tabs::BrowserTabs>,
}

impl AppState {
    pub(crate) fn store(&self) -> &dyn Store {
        self.inner.store.as_ref()
    }

    pub(crate) fn limits(&self) -> &limits::Limits {
        &self.inner.limits
    }

    pub(crate) fn settings(&self) -> &ApiSettings {
        &self.inner.settings
    }

    /// The engine, for the web interface's own uses of it (the preview of a monitor, a check run
    /// now and not stored; the picker's fetch and evaluation).
    pub(crate) fn checker(&self) -> &Arc<dyn Checker> {
        &self.inner.checker
    }

    /// The continuation tokens of lists, for the web interface's pages of the same lists.
    pub(crate) fn cursors(&self) -> &paging::Cursors {
        &self.inner.cursors
    }

    /// Seals and opens the secrets the service shows again (feed keys).
    pub(crate) fn sealer(&self) -> &crate::secrets::Sealer {
        &self.inner.sealer
    }

    /// The scheduler's announcements of stored checks.
    pub(crate) fn checks(&self) -> &crate::schedule::events::CheckEvents {
        &self.inner.checks
    }

    /// Turns true when the service stops.
    pub(crate) fn stopping(&self) -> tokio::sync::watch::Receiver<bool> {
        self.inner.stopping.clone()
    }

    /// The web interface's live streams open.
    pub(crate) fn live(&self) -> &crate::web::LiveStreams {
        &self.inner.live
    }

    /// The browser tabs rendering for each user.
    pub(crate) fn browser_tabs(&self) -> &Arc<crate::tabs::BrowserTabs> {
        &self.inner.tabs
    }
}

/// What the API shares with the rest of the running service.
pub struct Shared {
    /// Where the scheduler announces the checks it stores.
    pub checks: crate::schedule::events::CheckEvents,
    /// Turns true when the service stops.
    pub stopping: tokio::sync::watch::Receiver<bool>,
    /// The address the listener is bound to (whose names the service answers to).
    pub listen: std::net::SocketAddr,
    /// The browser tabs rendering for each user, which the interface's renders take too.
    pub tabs: Arc<crate::tabs::BrowserTabs>,
}

/// Building the API failed (the store could not give the paging secret).
#[derive(Debug, thiserror::Error)]
#[error("cannot set up the API: {0}")]
pub struct ApiSetupError(String);

impl ApiSetupError {
    /// A setup error from an I/O failure.
    pub fn io(detail: String) -> Self {
        ApiSetupError(detail)
    }
}

/// The API's router, ready to serve (with `into_make_service_with_connect_info::<SocketAddr>`,
/// which the per-address login limit needs).
pub async fn router(
    store: Arc<dyn Store>,
    checker: Arc<dyn Checker>,
    settings: ApiSettings,
    shared: Shared,
) -> Result<Router, ApiSetupError> {
    let secret = store
        .paging_secret()
        .await
        .map_err(|err| ApiSetupError(err.to_string()))?;
    let cursors = paging::Cursors::new(&secret).map_err(ApiSetupError)?;
    let sealer = crate::secrets::Sealer::new(&secret).map_err(ApiSetupError)?;
    let (routes, document) = openapi::routes().split_for_parts();
    let body_timeout = body::BodyReadTimeout(settings.connections.body_read_timeout);
    let hosts = Arc::new(crate::hosts::AllowedHosts::new(
        shared.listen,
        settings.web.public_url.as_deref(),
        &settings.allowed_hosts,
    ));
    let state = AppState {
        inner: Arc::new(Inner {
            store,
            checker,
            limits: limits::Limits::new(settings.limits),
            settings,
            cursors,
            sealer,
            validations: Arc::new(tokio::sync::Semaphore::new(
                std::thread::available_parallelism().map_or(1, |n| (n.get() / 2).max(1)),
            )),
            checks: shared.checks,
            stopping: shared.stopping,
            live: crate::web::LiveStreams::default(),
            tabs: shared.tabs,
        }),
    };
    let web = crate::web::routes(state.clone());
    Ok(with_layers(
        routes
            .merge(openapi::docs_routes(document))
            .route("/metrics", axum::routing::get(metrics))
            .with_state(state),
    )
    .merge(web)
    .layer(axum::Extension(body_timeout))
    // Outermost: a request for another name is answered before any route or limit sees it.
    .layer(axum::middleware::from_fn_with_state(
        hosts,
        crate::hosts::check,
    )))
}

/// `GET /metrics`: the Prometheus text format ([`crate::metrics`]); counts only, no secrets.
async fn metrics(
    axum::extract::State(state): axum::extract::State<AppState>,
) -> Result<Response, problem::ApiError> {
    use axum::response::IntoResponse;
    let deliveries = state.store().delivery_counts().await?;
    let text = crate::metrics::METRICS.render(&deliveries);
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
