//! The wachet side of `noise`: the release `wachet serve` on a fresh database, two monitors a
//! page (the whole page; the page's natural xPath or regex), each checked every second with a
//! NotEq and an Error alert delivered to this process's webhook receiver, which keeps what
//! every notification says (monitor id, time, kind).

use super::corpus::{Page, now_ms};
use super::score::Alert;
use super::{MODES, Mode};
use crate::api::{API, Conn, Endpoint, Service, login};
use axum::extract::State;
use axum::http::HeaderMap;
use hyper::Method;
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Notifications received, by monitor id, and the delivery ids seen (retries are dropped).
#[derive(Default)]
pub struct Received {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    by_task: HashMap<String, Vec<Alert>>,
    deliveries: HashSet<String>,
}

impl Received {
    /// The alerts of monitor `id`.
    pub fn of(&self, id: &str) -> Vec<Alert> {
        let guard = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        guard.by_task.get(id).cloned().unwrap_or_default()
    }
}

async fn hook(
    State(received): State<Arc<Received>>,
    headers: HeaderMap,
    body: String,
) -> &'static str {
    let Ok(value) = serde_json::from_str::<Value>(&body) else {
        return "ignored";
    };
    let Some(task) = value["taskId"].as_str() else {
        return "ignored";
    };
    let at_ms = value["timestamp"]
        .as_str()
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .map_or_else(now_ms, |t| t.timestamp_millis());
    let error = value["type"].as_str() == Some("Error");
    let delivery = headers
        .get("x-wachet-delivery")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let mut guard = received.inner.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(delivery) = delivery
        && !guard.deliveries.insert(delivery)
    {
        return "duplicate";
    }
    guard
        .by_task
        .entry(task.to_string())
        .or_default()
        .push(Alert { at_ms, error });
    "ok"
}

/// The webhook receiver on 127.0.0.1; its address and what it received.
pub async fn receiver() -> Result<(SocketAddr, Arc<Received>), String> {
    let received = Arc::new(Received::default());
    let app = axum::Router::new()
        .route("/hook", axum::routing::post(hook))
        .with_state(received.clone());
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .map_err(|e| format!("webhook receiver: {e}"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok((addr, received))
}

/// A running `wachet serve` with the corpus's monitors.
pub(crate) struct Wachet {
    /// The service (stopped with SIGTERM when dropped).
    pub(crate) service: Service,
    /// Monitor ids by (page, mode).
    pub(crate) ids: HashMap<(&'static str, Mode), String>,
}

/// Starts `wachet serve` on `db` (1 s minimum recurrence, no per-host limits, no notification
/// caps: the bench counts every alert) and creates two monitors a page.
pub(crate) async fn start(
    exe: &Path,
    db: &Path,
    log: &Path,
    pages: &'static [Page],
    corpus: SocketAddr,
    hook: SocketAddr,
) -> Result<Wachet, String> {
    let service = Service::start_with(
        exe,
        db,
        log,
        &[
            "--allow-private-networks",
            "--min-recurrence",
            "1",
            "--per-host-rps",
            "0",
            "--per-host-concurrency",
            "0",
            "--max-notifications-per-hour",
            "1000000",
            "--deliveries-per-hour",
            "0",
        ],
    )?;
    let anonymous = Endpoint::new(service.addr, None)?;
    let token = login(&anonymous, &service).await?;
    let endpoint = Endpoint::new(service.addr, Some(&token))?;
    let mut conn = Conn::connect(service.addr).await?;
    let mut ids = HashMap::new();
    for page in pages {
        for mode in MODES {
            let mut task = json!({
                "name": format!("{} ({})", page.name, mode.label()),
                "url": format!("http://{corpus}/{}/{}", page.name, mode.key("w")),
                "recurrenceInSeconds": 1,
                "dynamicContent": page.dynamic,
                "scrollPage": page.dynamic,
                "alerts": [{"type": "NotEq"}, {"type": "Error"}],
                "notificationEndpoints": [{"type": "Webhook", "value": format!("http://{hook}/hook")}],
            });
            if page.watch_links {
                task["watchLinks"] = json!(true);
            }
            if mode == Mode::Natural {
                if let Some(x) = page.x_path {
                    task["xPath"] = json!(x);
                }
                if let Some(r) = page.regex {
                    task["regex"] = json!(r);
                }
            }
            let created = endpoint
                .call(&mut conn, Method::PUT, &format!("{API}/task"), Some(&task))
                .await?;
            let id = created["id"]
                .as_str()
                .ok_or_else(|| format!("PUT /task answered no id: {created}"))?;
            ids.insert((page.name, mode), id.to_string());
        }
    }
    Ok(Wachet { service, ids })
}
