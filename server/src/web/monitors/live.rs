//! Live updates: `GET /live`, a stream of server-sent events telling the signed-in browser
//! which of its user's monitors were just checked (from the scheduler's announcements,
//! [`crate::schedule::events`]), and the fragments the script then fetches to redraw them
//! without a reload: a list row (`/monitors/{id}/row`) and a monitor page's state and value
//! (`/monitors/{id}/status`), rendered by the same code as the pages. Streams are bounded per
//! user and in all; each ends when its session ends (checked before every event and every few
//! seconds), when the service stops, or when the browser stops reading (every send has a
//! timeout). Without scripts none of this is used: every page is complete on reload.

use crate::ops::Ctx;
use crate::schedule::events::CheckFinished;
use crate::web::folders::list::{monitor_row, strip_of};
use crate::web::monitors::show::live_part;
use crate::web::shared::clock::Now;
use crate::web::shared::extract::own_monitor;
use crate::web::shared::session;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, Sse};
use axum::response::{Html, IntoResponse, Response};
use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{broadcast, mpsc};

/// Streams one user may hold open (tabs of the list and of monitors).
pub const MAX_STREAMS_PER_USER: usize = 4;
/// Streams the service holds open in all.
pub const MAX_STREAMS: usize = 512;
/// How often a quiet stream sends a comment, so proxies and the connection's idle timeout do
/// not close it, and a browser gone away is noticed (a write to its closed connection fails)
/// and its place freed.
const KEEP_ALIVE: Duration = Duration::from_secs(5);
/// How often a stream checks its session is still alive, between events.
const SESSION_CHECK: Duration = Duration::from_secs(2);
/// Longest one event may wait for the browser to take it; a browser that stops reading loses
/// its stream.
const SEND_TIMEOUT: Duration = Duration::from_secs(10);
/// Events waiting to be written to one stream.
const STREAM_BUFFER: usize = 16;

/// The live streams open, per user and in all.
#[derive(Debug, Default)]
pub struct LiveStreams {
    open: Mutex<HashMap<String, usize>>,
}

/// One open stream, counted until dropped.
struct Opened {
    streams: Arc<LiveStreams>,
    user: String,
}

impl LiveStreams {
    /// Counts a new stream of `user`, unless the user or the service holds too many (then
    /// false).
    fn open(&self, user: &str) -> bool {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let total: usize = open.values().sum();
        let mine = open.get(user).copied().unwrap_or(0);
        if total >= MAX_STREAMS || mine >= MAX_STREAMS_PER_USER {
            return false;
        }
        open.insert(user.to_string(), mine + 1);
        true
    }

    fn close(&self, user: &str) {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = open.get_mut(user) {
            *n -= 1;
            if *n == 0 {
                open.remove(user);
            }
        }
    }
}

impl Drop for Opened {
    fn drop(&mut self) {
        self.streams.close(&self.user);
    }
}

/// `GET /live`: the stream. Without a session it is 204, which tells `EventSource` not to
/// come back; over the bounds, 429.
pub async fn stream(
    State(state): State<Ctx>,
    axum::Extension(streams): axum::Extension<Arc<LiveStreams>>,
    headers: HeaderMap,
) -> Response {
    let session = match session::current(&state, &headers).await {
        Ok(Some(session)) => session,
        Ok(None) => return StatusCode::NO_CONTENT.into_response(),
        Err(err) => return crate::web::shared::pages::from_error(err, None),
    };
    if !streams.open(&session.user) {
        return (
            StatusCode::TOO_MANY_REQUESTS,
            "too many live streams open; close other tabs",
        )
            .into_response();
    }
    let (tx, rx) = mpsc::channel::<Event>(STREAM_BUFFER);
    let events = state.checks().subscribe();
    tokio::spawn(async move {
        let _opened = Opened {
            streams,
            user: session.user.clone(),
        };
        feed(&state, &session.user, &session.token_hash, events, tx).await;
    });
    let body = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|event| (Ok::<_, Infallible>(event), rx))
    });
    Sse::new(body).into_response()
}

/// Writes the user's events into `tx` until the session, the service or the browser ends.
async fn feed(
    state: &Ctx,
    user: &str,
    token_hash: &str,
    mut events: broadcast::Receiver<CheckFinished>,
    tx: mpsc::Sender<Event>,
) {
    let send = |event: Event| {
        let tx = tx.clone();
        async move {
            matches!(
                tokio::time::timeout(SEND_TIMEOUT, tx.send(event)).await,
                Ok(Ok(()))
            )
        }
    };
    // Says the stream is listening: events from now on reach this browser. (An event without
    // data is not dispatched by browsers.)
    if !send(Event::default().event("ready").data("listening")).await {
        return;
    }
    let mut stopping = state.stopping();
    let mut session_check = tokio::time::interval(SESSION_CHECK);
    let mut keep_alive = tokio::time::interval(KEEP_ALIVE);
    session_check.reset();
    keep_alive.reset();
    loop {
        let event = tokio::select! {
            () = stopped(&mut stopping) => return,
            // The response was dropped (the connection ended).
            () = tx.closed() => return,
            _ = session_check.tick() => {
                if !alive(state, user, token_hash).await {
                    return;
                }
                continue;
            }
            _ = keep_alive.tick() => Event::default().comment("keep-alive"),
            received = events.recv() => match received {
                Ok(finished) if finished.user == user => {
                    if !alive(state, user, token_hash).await {
                        return;
                    }
                    Event::default().event("checked").data(finished.task)
                }
                Ok(_) => continue,
                // Announcements were lost: the browser redraws everything it shows.
                Err(broadcast::error::RecvError::Lagged(_)) => Event::default().event("resync").data("all"),
                Err(broadcast::error::RecvError::Closed) => return,
            },
        };
        if !send(event).await {
            return;
        }
    }
}

/// Resolves when the service stops (at once if it has).
async fn stopped(stopping: &mut tokio::sync::watch::Receiver<bool>) {
    // The guard `wait_for` gives is not `Send`: dropped here, before anything else waits.
    let _ = stopping.wait_for(|stop| *stop).await.map(|_| ());
}

/// Whether the session of `token_hash` still exists (sign-out and `invalidateTokens` end it).
/// A failing database keeps the stream: it only carries what the session could already see.
async fn alive(state: &Ctx, user: &str, token_hash: &str) -> bool {
    match crate::ops::account::token_alive(state, user, token_hash).await {
        Ok(alive) => alive,
        Err(err) => {
            tracing::warn!(%err, "cannot check a live stream's session");
            true
        }
    }
}

/// `GET /monitors/{id}/row`: the monitor's row of the list, as the list renders it.
pub async fn row(State(state): State<Ctx>, headers: HeaderMap, Path(id): Path<String>) -> Response {
    let (session, monitor) = match own_monitor(&state, &headers, &id).await {
        Ok(found) => found,
        Err(response) => return response,
    };
    let checks = strip_of(&state, &session.user, &id).await;
    Html(monitor_row(&monitor, &checks, Now::of(&session), None).into_string()).into_response()
}

/// `GET /monitors/{id}/status`: the state and value part of the monitor's page.
pub async fn status(
    State(state): State<Ctx>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let (session, monitor) = match own_monitor(&state, &headers, &id).await {
        Ok(found) => found,
        Err(response) => return response,
    };
    Html(live_part(&id, &monitor, Now::of(&session)).into_string()).into_response()
}
