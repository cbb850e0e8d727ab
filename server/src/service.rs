//! The running service, assembled in one place: [`start`] builds every part of `wachet serve`
//! from one [`Settings`] value (the API and web interface on a listener, the scheduler,
//! delivery and the collection of unused values, each over the same store and engine), and
//! [`Running::shutdown`] stops them in order. The binary and every server test start the
//! service through it, so the tests run the service users run, and a new background part is
//! added here once.

use crate::api::ApiSettings;
use crate::notify::deliver::{self, DeliverySettings};
use crate::schedule::events::CheckEvents;
use crate::schedule::{self, ScheduleSettings};
use crate::store::Store;
use crate::tabs::BrowserTabs;
use crate::worker::Worker;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use wachet::model::LocationCode;
use wachet::{Checker, Engine};

/// How long requests, checks and deliveries in flight may take to finish once shutdown starts.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// How often unused history values are looked for.
pub const COLLECT_EVERY: Duration = Duration::from_secs(30);

/// Everything the running service is made of, but its store and engine.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Where the API listens (port 0: any free port, see [`Running::addr`]).
    pub listen: SocketAddr,
    /// Where the probes (`/healthz`, `/readyz`: [`crate::probes`]) are answered besides the
    /// API's listener: how a process without the API is probed (port 0: any free port, see
    /// [`Running::health_addr`]).
    pub health_listen: Option<SocketAddr>,
    /// The API's and web interface's settings.
    pub api: ApiSettings,
    /// Which parts run beside the API.
    pub parts: Parts,
    /// The scheduler's settings (used when [`Parts::checks`]).
    pub schedule: ScheduleSettings,
    /// Delivery's settings (used when [`Parts::delivery`]).
    pub delivery: DeliverySettings,
    /// How often unused history values are looked for (when [`Parts::collection`]).
    pub collect_every: Duration,
    /// The location this process checks from (`--location`); `None`: wherever it runs.
    pub location: Option<LocationCode>,
    /// How often this process, when it checks or delivers, beats ([`crate::worker`]): each beat
    /// renews the leases of what it holds, which last [`ScheduleSettings::lease`].
    pub heartbeat: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            health_listen: None,
            api: ApiSettings::default(),
            parts: Parts::ALL,
            schedule: ScheduleSettings::default(),
            delivery: DeliverySettings::default(),
            collect_every: COLLECT_EVERY,
            heartbeat: crate::worker::DEFAULT_HEARTBEAT,
            location: None,
        }
    }
}

/// Which parts of the service run (`wachet serve --roles`). A process running only some of them
/// shares the database with others that run the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parts {
    /// The API and the web interface on [`Settings::listen`] (the `api` role).
    pub api: bool,
    /// The scheduler: claims due monitors, checks them, stores what they found and raised (the
    /// `worker` role).
    pub checks: bool,
    /// Delivery: sends the outbox's notifications and the e-mail confirmation codes (the
    /// `deliver` role).
    pub delivery: bool,
    /// Garbage collection of the history values no entry names any more (with the `worker`
    /// role).
    pub collection: bool,
}

impl Parts {
    /// Every part, as `wachet serve` runs them.
    pub const ALL: Parts = Parts {
        api: true,
        checks: true,
        delivery: true,
        collection: true,
    };
    /// The API alone: nothing is checked, delivered or collected.
    pub const API_ONLY: Parts = Parts {
        api: true,
        checks: false,
        delivery: false,
        collection: false,
    };

    /// The roles these parts make, as a worker tells the others (`api,worker,deliver`).
    pub fn roles(&self) -> String {
        let mut roles = Vec::new();
        if self.api {
            roles.push("api");
        }
        if self.checks {
            roles.push("worker");
        }
        if self.delivery {
            roles.push("deliver");
        }
        roles.join(",")
    }
}

/// The service could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The listener could not be bound.
    #[error("cannot listen on {addr}")]
    Listen {
        /// The address asked for.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The probes' listener could not be bound.
    #[error("cannot listen for health probes on {addr}")]
    HealthListen {
        /// The address asked for.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The API could not be built.
    #[error(transparent)]
    Api(#[from] crate::http::SetupError),
    /// The key that opens notification URLs' secrets could not be read.
    #[error("the sealing key: {0}")]
    Sealing(String),
}

/// A service that is serving. Dropping it stops every part at once, as a crash would (only
/// what was in flight goes on); [`Running::shutdown`] stops them gracefully.
pub struct Running {
    addr: Option<SocketAddr>,
    health_addr: Option<SocketAddr>,
    tabs: Arc<BrowserTabs>,
    stop: watch::Sender<bool>,
    api: Option<JoinHandle<std::io::Result<()>>>,
    /// The background parts, named for the log.
    parts: Vec<(&'static str, JoinHandle<()>)>,
    /// This process as a worker, when it checks or delivers: it leaves once the parts stopped.
    worker: Option<(Arc<Worker>, JoinHandle<()>)>,
    /// The probes' own listener (`--health-listen`) and what stops it, once all else ended.
    health: Option<(watch::Sender<bool>, JoinHandle<()>)>,
}

impl Running {
    /// The address it listens on; `None` without the API ([`Parts::api`]).
    pub fn addr(&self) -> Option<SocketAddr> {
        self.addr
    }

    /// The address the probes listen on besides the API's (`--health-listen`), if any.
    pub fn health_addr(&self) -> Option<SocketAddr> {
        self.health_addr
    }

    /// The count of the browser tabs rendering for each user.
    pub fn browser_tabs(&self) -> &Arc<BrowserTabs> {
        &self.tabs
    }

    /// Stops the service in order: every part stops taking work (the API new connections, the
    /// scheduler and delivery new claims, collection its next batch); the requests, checks and
    /// deliveries in flight then have [`SHUTDOWN_GRACE`] to finish and store what they did.
    /// What is still running past it is stopped and handed back ([`Worker::leave`]), so another
    /// process takes it up at once. Returns when every part has ended, so the store can be
    /// closed; an error is the API's.
    pub async fn shutdown(self) -> std::io::Result<()> {
        let deadline = tokio::time::Instant::now() + SHUTDOWN_GRACE;
        let Running {
            stop,
            api,
            parts,
            worker,
            health,
            ..
        } = self;
        stop_parts(&stop, parts, worker, deadline).await;
        let ended = match api {
            Some(mut api) => finish("api", &mut api, deadline).await.unwrap_or(Ok(())),
            None => Ok(()),
        };
        stop_health(health).await;
        ended
    }

    /// Serves until `signal` resolves, then shuts down ([`Running::shutdown`]); should the API
    /// fail first, the other parts are shut down and its error returned.
    pub async fn until(mut self, signal: impl Future<Output = ()>) -> std::io::Result<()> {
        let Some(mut api) = self.api.take() else {
            signal.await;
            return self.shutdown().await;
        };
        tokio::select! {
            () = signal => {
                self.api = Some(api);
                self.shutdown().await
            }
            ended = &mut api => {
                let deadline = tokio::time::Instant::now() + SHUTDOWN_GRACE;
                stop_parts(&self.stop, self.parts, self.worker, deadline).await;
                stop_health(self.health).await;
                ended.map_err(std::io::Error::other)?
            }
        }
    }
}

/// Tells every part to stop taking work and waits for the background ones until `deadline`;
/// then the worker hands back what is still held.
async fn stop_parts(
    stop: &watch::Sender<bool>,
    parts: Vec<(&'static str, JoinHandle<()>)>,
    worker: Option<(Arc<Worker>, JoinHandle<()>)>,
    deadline: tokio::time::Instant,
) {
    let _ = stop.send(true);
    for (part, mut handle) in parts {
        finish(part, &mut handle, deadline).await;
    }
    if let Some((worker, mut beats)) = worker {
        finish("heartbeat", &mut beats, deadline).await;
        // Bounded: a database that does not answer leaves the leases to run out instead.
        match tokio::time::timeout(SHUTDOWN_GRACE, worker.leave()).await {
            Ok(Ok(())) => {}
            Ok(Err(err)) => tracing::error!(%err, "cannot hand back the claims still held"),
            Err(_) => tracing::error!("handing back the claims still held took too long"),
        }
    }
}

/// Stops the probes' own listener, the last part to end, and waits for it a bounded time.
async fn stop_health(health: Option<(watch::Sender<bool>, JoinHandle<()>)>) {
    if let Some((stop, mut served)) = health {
        let _ = stop.send(true);
        let deadline = tokio::time::Instant::now() + SHUTDOWN_GRACE;
        finish("health probes", &mut served, deadline).await;
    }
}

/// Waits for `part` to end until `deadline`, then stops it; its result when it ended by itself.
async fn finish<T>(
    part: &'static str,
    handle: &mut JoinHandle<T>,
    deadline: tokio::time::Instant,
) -> Option<T> {
    match tokio::time::timeout_at(deadline, &mut *handle).await {
        Ok(Ok(ended)) => Some(ended),
        Ok(Err(err)) => {
            tracing::error!(%err, part, "a part of the service failed");
            None
        }
        Err(_) => {
            tracing::warn!(part, "still working after the grace period; stopping");
            handle.abort();
            None
        }
    }
}

/// Starts the service on `store` and `engine`: the API on `settings.listen`, and the parts of
/// `settings.parts`, until [`Running::shutdown`].
pub async fn start(
    settings: Settings,
    store: Arc<dyn Store>,
    engine: &Engine,
) -> Result<Running, StartError> {
    let checker: Arc<dyn Checker> = Arc::new(engine.clone());
    // One count of the browser's tabs for the checks and the interface's renders alike.
    let tabs = BrowserTabs::new(checker.browser_tabs());
    let (stop, stopped) = watch::channel(false);
    let checks = CheckEvents::new();
    let public_url = settings.api.web.public_url.clone();
    let worker = (settings.parts.checks || settings.parts.delivery).then(|| {
        Worker::new(
            store.clone(),
            settings.parts.roles(),
            settings
                .location
                .filter(|l| *l != LocationCode::Default)
                .map(|l| l.name().to_ascii_lowercase()),
            settings.schedule.kinds(),
            settings.schedule.lease,
            settings.heartbeat,
        )
    });
    let probes = crate::probes::Probes {
        store: store.clone(),
        stopping: stop.subscribe(),
        worker: worker.clone(),
    };
    let mut parts = Vec::new();
    let mut health = None;
    let health_addr = match settings.health_listen {
        Some(listen) => {
            let listener =
                TcpListener::bind(listen)
                    .await
                    .map_err(|source| StartError::HealthListen {
                        addr: listen,
                        source,
                    })?;
            let addr = listener
                .local_addr()
                .map_err(|err| crate::http::SetupError::io(err.to_string()))?;
            // The probes' own listener stops last, after everything else: while the process
            // drains its checks and deliveries it still answers, `/readyz` with 503.
            let (health_stop, health_stopped) = watch::channel(false);
            let served = crate::connections::serve(
                listener,
                crate::http::probes(probes.clone()),
                settings.api.connections.clone(),
                health_stopped,
            );
            let serving = async move {
                if let Err(err) = served.await {
                    tracing::error!(%err, "the health probes' listener failed");
                }
            };
            health = Some((health_stop, tokio::spawn(serving)));
            Some(addr)
        }
        None => None,
    };
    let (addr, api) = match settings.parts.api {
        true => {
            let listener =
                TcpListener::bind(settings.listen)
                    .await
                    .map_err(|source| StartError::Listen {
                        addr: settings.listen,
                        source,
                    })?;
            let addr = listener
                .local_addr()
                .map_err(|err| crate::http::SetupError::io(err.to_string()))?;
            let shared = crate::http::Shared {
                checks: checks.clone(),
                stopping: stop.subscribe(),
                listen: addr,
                tabs: tabs.clone(),
                probes,
            };
            let connections = settings.api.connections.clone();
            let router =
                crate::http::router(store.clone(), checker.clone(), settings.api.clone(), shared)
                    .await?;
            let api = tokio::spawn(crate::connections::serve(
                listener,
                router,
                connections,
                stopped,
            ));
            (Some(addr), Some(api))
        }
        false => (None, None),
    };
    if let Some(worker) = &worker {
        worker.start().await;
    }
    let beats = worker
        .clone()
        .map(|worker| (worker.clone(), tokio::spawn(worker.run(stop.subscribe()))));
    if let Some(worker) = worker.clone().filter(|_| settings.parts.checks) {
        let scheduler = schedule::run(
            store.clone(),
            checker,
            settings.schedule,
            worker,
            stop.subscribe(),
            checks,
            tabs.clone(),
        );
        parts.push(("scheduler", tokio::spawn(scheduler)));
    }
    if let Some(worker) = worker.filter(|_| settings.parts.delivery) {
        let mut delivery_settings = settings.delivery;
        delivery_settings.links = deliver::Links {
            public_url,
            listen: Some(format!("http://{}", addr.unwrap_or(settings.listen))),
        };
        // The key the API seals notification URLs' secrets with.
        let secret = store
            .paging_secret()
            .await
            .map_err(|err| StartError::Sealing(err.to_string()))?;
        let sealer = crate::secrets::Sealer::new(&secret).map_err(StartError::Sealing)?;
        delivery_settings.sealer = Some(Arc::new(sealer));
        delivery_settings.network = engine.network_policy();
        let delivery = deliver::run(
            store.clone(),
            engine.fetcher(),
            delivery_settings,
            worker,
            stop.subscribe(),
        );
        parts.push(("delivery", tokio::spawn(delivery)));
    }
    if settings.parts.collection {
        let collection = crate::store::gc::run(store, settings.collect_every, stop.subscribe());
        parts.push(("collection", tokio::spawn(collection)));
    }
    Ok(Running {
        addr,
        health_addr,
        tabs,
        stop,
        api,
        parts,
        worker: beats,
        health,
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
