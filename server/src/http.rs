//! The service's one HTTP router: the REST API ([`crate::api`]) and the web interface
//! ([`crate::web`]) side by side over one operations context ([`crate::ops::Ctx`]), behind the
//! layers both share (the accepted `Host` names, the body read timeout), with the health
//! probes ([`crate::probes`]) beside them, answered for any `Host` (a load balancer probes by
//! address), and every request's id and span ([`crate::trace`]) around it all. The only module
//! that knows both frontends: they never import each other.

use crate::ops::{self, Ctx};
use crate::store::Store;
use axum::Router;
use std::sync::Arc;
use wachet::Checker;

/// What the router shares with the rest of the running service.
pub struct Shared {
    /// Where the scheduler announces the checks it stores.
    pub checks: crate::schedule::events::CheckEvents,
    /// Turns true when the service stops.
    pub stopping: tokio::sync::watch::Receiver<bool>,
    /// The address the listener is bound to (whose names the service answers to).
    pub listen: std::net::SocketAddr,
    /// The browser tabs rendering for each user, which the interface's renders take too.
    pub tabs: Arc<crate::tabs::BrowserTabs>,
    /// What the health probes look at.
    pub probes: crate::probes::Probes,
}

/// Building the router failed (the store could not give the paging secret).
#[derive(Debug, thiserror::Error)]
#[error("cannot set up the API: {0}")]
pub struct SetupError(String);

impl SetupError {
    /// A setup error from an I/O failure.
    pub fn io(detail: String) -> Self {
        SetupError(detail)
    }
}

/// The service's router, ready to serve (with `into_make_service_with_connect_info::<SocketAddr>`,
/// which the per-address login limit needs).
pub async fn router(
    store: Arc<dyn Store>,
    checker: Arc<dyn Checker>,
    settings: ops::Settings,
    shared: Shared,
) -> Result<Router, SetupError> {
    let body_timeout = crate::connections::BodyReadTimeout(settings.connections.body_read_timeout);
    let hosts = Arc::new(crate::hosts::AllowedHosts::new(
        shared.listen,
        settings.web.public_url.as_deref(),
        &settings.allowed_hosts,
    ));
    let ctx = Ctx::new(
        store,
        checker,
        settings,
        ops::Shared {
            checks: shared.checks,
            stopping: shared.stopping,
            tabs: shared.tabs,
        },
    )
    .await
    .map_err(SetupError)?;
    let web = crate::web::routes(ctx.clone());
    let frontends = crate::api::routes(ctx)
        .merge(web)
        .layer(axum::Extension(body_timeout))
        // A request for another name is answered before any route or limit sees it.
        .layer(axum::middleware::from_fn_with_state(
            hosts,
            crate::hosts::check,
        ));
    Ok(traced(
        frontends.merge(crate::probes::routes(shared.probes)),
    ))
}

/// The health probes and the process's metrics, for a listener of their own
/// (`--health-listen`).
pub fn probes(probes: crate::probes::Probes) -> Router {
    traced(crate::probes::routes_with_metrics(probes))
}

/// `router` with every request's id and span ([`crate::trace`]): the route that matched is
/// recorded by a route layer, inside the span the outer layer opened.
fn traced(router: Router) -> Router {
    router
        .route_layer(axum::middleware::from_fn(crate::trace::route))
        .layer(axum::middleware::from_fn(crate::trace::request))
}
