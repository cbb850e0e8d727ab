//! The running service: the API on a listener over a store (its connections bounded by
//! [`crate::connections`]), stopped gracefully (requests in flight finish, then the store is
//! closed) on a signal or on [`Running::shutdown`].

use crate::api::{self, ApiSettings};
use crate::schedule::events::CheckEvents;
use crate::store::Store;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::watch;
use wachet::Checker;

/// How long requests in flight may take to finish once shutdown starts.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// A service that is serving.
pub struct Running {
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    checks: CheckEvents,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Running {
    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting, lets requests in flight finish (for [`SHUTDOWN_GRACE`] at most) and
    /// waits for the server to end.
    pub async fn shutdown(self) -> std::io::Result<()> {
        let _ = self.stop.send(true);
        self.wait().await
    }

    /// Waits until the server ends (after [`Running::shutdown`] or a failure).
    pub async fn wait(self) -> std::io::Result<()> {
        match self.task.await {
            Ok(result) => result,
            Err(err) => Err(std::io::Error::other(err)),
        }
    }

    /// Turns true when the shutdown starts: other parts of the service (the scheduler) stop
    /// with the server.
    pub fn stopping(&self) -> watch::Receiver<bool> {
        self.stop.subscribe()
    }

    /// Where the scheduler announces the checks it stores, for the web interface's live
    /// updates.
    pub fn check_events(&self) -> CheckEvents {
        self.checks.clone()
    }

    /// A handle that starts the shutdown from elsewhere (a signal handler).
    pub fn stopper(&self) -> impl FnOnce() + Send + 'static {
        let stop = self.stop.clone();
        move || {
            let _ = stop.send(true);
        }
    }
}

/// Serves the API on `listener`.
pub async fn start(
    listener: TcpListener,
    store: Arc<dyn Store>,
    checker: Arc<dyn Checker>,
    settings: ApiSettings,
) -> Result<Running, api::ApiSetupError> {
    let connections = settings.connections.clone();
    let (stop, stopped) = watch::channel(false);
    let checks = CheckEvents::new();
    let shared = api::Shared {
        checks: checks.clone(),
        stopping: stop.subscribe(),
    };
    let router = api::router(store, checker, settings, shared).await?;
    let addr = listener
        .local_addr()
        .map_err(|err| api::ApiSetupError::io(err.to_string()))?;
    let mut deadline = stop.subscribe();
    let task = tokio::spawn(async move {
        let serve = crate::connections::serve(listener, router, connections, stopped);
        let grace = async move {
            let _ = deadline.wait_for(|stop| *stop).await;
            tokio::time::sleep(SHUTDOWN_GRACE).await;
        };
        tokio::select! {
            result = serve => result,
            () = grace => {
                tracing::warn!("requests still in flight after the grace period; stopping");
                Ok(())
            }
        }
    });
    Ok(Running {
        addr,
        stop,
        checks,
        task,
    })
}

/// A future that resolves on SIGTERM or Ctrl-C. The handlers are installed when this is
/// called, not when the future is first polled, so call it before announcing the service: a
/// signal sent right after the announcement then stops it gracefully instead of killing it.
pub fn shutdown_signal() -> std::io::Result<impl std::future::Future<Output = ()>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate())?;
        let mut interrupt = signal(SignalKind::interrupt())?;
        Ok(async move {
            tokio::select! {
                _ = term.recv() => {}
                _ = interrupt.recv() => {}
            }
        })
    }
    #[cfg(not(unix))]
    {
        Ok(async {
            let _ = tokio::signal::ctrl_c().await;
        })
    }
}
