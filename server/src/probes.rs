//! The probes a load balancer, a container runtime or Kubernetes asks every process of the
//! service, at the root of its listener: `GET /healthz` answers 200 while the process runs (it
//! asks nothing of the database, so a slow database never gets a live process restarted), and
//! `GET /readyz` answers 200 only when the process can do its work: the database answers, its
//! migrations are this binary's, this process's last heartbeat could write it (when it checks
//! or delivers), and it is not shutting down; 503 with the reason otherwise. A process without
//! the `api` role answers them on its `--health-listen` address, with the process's
//! `/metrics` beside them (the API's listener has its own). They answer any `Host`, take no
//! login and show no data: a probe reaches a container by its address, not by the service's
//! name.

use crate::store::Store;
use crate::worker::Worker;
use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// Longest the readiness probe waits for the database: a probe's own timeout is often a second
/// or a few, and an answer past it is no answer.
const READY_TIMEOUT: Duration = Duration::from_secs(2);

/// What the probes ask.
#[derive(Clone)]
pub struct Probes {
    /// The database.
    pub store: Arc<dyn Store>,
    /// Turns true when the process starts shutting down.
    pub stopping: watch::Receiver<bool>,
    /// This process as a worker, when it checks or delivers: its heartbeats tell whether it can
    /// write.
    pub worker: Option<Arc<Worker>>,
}

/// The routes `/healthz` and `/readyz`.
pub fn routes(probes: Probes) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(probes)
}

/// The probes and `GET /metrics`, for the probes' own listener (`--health-listen`): a process
/// without the API counts its checks, their lateness and its claims in its own memory, and this
/// is where Prometheus reads them. The API's listener has its own `/metrics`, the same text.
pub fn routes_with_metrics(probes: Probes) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .with_state(probes)
}

/// `GET /metrics` on the probes' listener: counts only, as on the API's.
async fn metrics(State(probes): State<Probes>) -> axum::response::Response {
    use axum::response::IntoResponse;
    match crate::ops::notifications::metrics_of(probes.store.as_ref()).await {
        Ok(text) => (
            [(
                axum::http::header::CONTENT_TYPE,
                "text/plain; version=0.0.4",
            )],
            text,
        )
            .into_response(),
        Err(err) => {
            tracing::warn!(%err, "metrics: the database does not answer");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "the database does not answer",
            )
                .into_response()
        }
    }
}

/// `GET /healthz`: the process runs and answers.
async fn healthz() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

/// `GET /readyz`: see the module's documentation.
async fn readyz(State(probes): State<Probes>) -> (StatusCode, Json<Value>) {
    let not_ready = |reason: String| {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"status": "not ready", "reason": reason})),
        )
    };
    if *probes.stopping.borrow() {
        return not_ready("the process is shutting down".into());
    }
    match tokio::time::timeout(READY_TIMEOUT, probes.store.readiness()).await {
        Ok(Ok(())) => {}
        // The database's own message stays in the log: the probe answers anyone.
        Ok(Err(crate::store::NotReady::Unreachable(detail))) => {
            tracing::warn!(%detail, "readiness: the database does not answer");
            return not_ready("the database does not answer".into());
        }
        Ok(Err(migrations)) => return not_ready(migrations.to_string()),
        Err(_) => return not_ready("the database did not answer in time".into()),
    }
    if probes.worker.as_ref().is_some_and(|w| w.writes_failing()) {
        return not_ready(
            "the database cannot be written (a full disk, an I/O error or a lock held too long)"
                .into(),
        );
    }
    (StatusCode::OK, Json(json!({"status": "ready"})))
}
