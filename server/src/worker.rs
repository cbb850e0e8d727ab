//! This process as a worker of the service: who it is ([`WorkerInfo`]: its roles, location and
//! kinds of checks), what it holds (each check and delivery it claimed, by fencing token) and
//! its heartbeat. Every [`Worker::every`] one beat ([`WorkerStore::beat`]) tells the database it
//! is alive and renews the leases of everything it holds, in one transaction, so a claim's
//! lease can be short: when the process dies, its checks and deliveries are claimed by another
//! worker as soon as their leases run out (within [`Worker::lease`]), not after a check's whole
//! time limit. A claim the beat finds taken over (this process was paused or cut off past its
//! lease) is reported lost to the part running it, which stops it; its fencing token keeps it
//! from storing anything anyway. When the process stops, [`Worker::leave`] hands back what is
//! still held, so another worker takes it at once.

use crate::store::{
    Held, Holdings, HostBuckets, StoreError, WorkerInfo, WorkerStore, new_id, now_millis,
};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Notify, watch};

/// How often a worker beats by default.
pub const DEFAULT_HEARTBEAT: Duration = Duration::from_secs(5);
/// How long a claim is held by default without a beat renewing it: a dead worker's checks and
/// deliveries are taken over this long after its last beat at most.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(20);

/// How recently a worker beat to count as live (for the locations the API accepts): beyond the
/// longest a default lease keeps a dead worker's claims.
pub const LIVE: Duration = Duration::from_secs(30);

/// The kind of a held claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Check,
    Delivery,
    Mail,
}

/// What this process holds: each claim with the signal that tells its part it was lost.
type Claims = HashMap<(Kind, String), (i64, Arc<Notify>)>;

/// This process as a worker: see the module's documentation.
pub struct Worker {
    info: WorkerInfo,
    store: Arc<dyn WorkerStore>,
    lease: Duration,
    every: Duration,
    held: Mutex<Claims>,
    /// The host buckets the last beat left this worker ([`HostBuckets::bits`]).
    buckets: AtomicI64,
    /// Whether the last beat failed because the database could not be written
    /// ([`StoreError::Unavailable`]): the readiness probe's answer for this process's writes.
    writes_failing: AtomicBool,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("info", &self.info)
            .field("lease", &self.lease)
            .field("every", &self.every)
            .finish_non_exhaustive()
    }
}

impl Worker {
    /// A worker with a new id, beating every `every` (at most a third of `lease`, so a beat that
    /// fails once loses nothing) and holding claims for `lease` past each beat. `roles`,
    /// `location` and `kinds` are what it says of itself to the others.
    pub fn new(
        store: Arc<dyn WorkerStore>,
        roles: String,
        location: Option<String>,
        kinds: String,
        lease: Duration,
        every: Duration,
    ) -> Arc<Worker> {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|name| name.trim().to_string())
            .unwrap_or_else(|_| "unknown".to_string());
        Arc::new(Worker {
            info: WorkerInfo {
                id: new_id(),
                roles,
                location,
                kinds,
                host,
                pid: std::process::id(),
                started_at: now_millis(),
            },
            store,
            lease,
            every: every.min(lease / 3).max(Duration::from_millis(10)),
            held: Mutex::new(HashMap::new()),
            buckets: AtomicI64::new(HostBuckets::NONE.bits()),
            writes_failing: AtomicBool::new(false),
        })
    }

    /// Who it is.
    pub fn info(&self) -> &WorkerInfo {
        &self.info
    }

    /// How long a claim is held past the last beat: the lease each claim is made with.
    pub fn lease(&self) -> Duration {
        self.lease
    }

    /// How often it beats.
    pub fn every(&self) -> Duration {
        self.every
    }

    /// The host buckets whose monitors this worker may claim now (none before its first beat):
    /// the hosts it alone of its location's workers checks, so the engine's per-host limits in
    /// this process hold at each host ([`crate::store::WorkerStore::beat`]).
    pub fn buckets(&self) -> HostBuckets {
        HostBuckets::from_bits(self.buckets.load(Ordering::Acquire))
    }

    /// Whether the last beat could not write the database (a full disk, an I/O error, a lock
    /// held past the busy timeout).
    pub fn writes_failing(&self) -> bool {
        self.writes_failing.load(Ordering::Acquire)
    }

    /// Holds the claim of a check of monitor `id` under `token` until the returned guard is
    /// dropped; the guard tells when a beat found it lost.
    pub fn hold_check(self: &Arc<Self>, id: &str, token: i64) -> Holding {
        self.hold(Kind::Check, id, token)
    }

    /// Holds the claim of delivery `id` under `token`, as [`Worker::hold_check`].
    pub fn hold_delivery(self: &Arc<Self>, id: &str, token: i64) -> Holding {
        self.hold(Kind::Delivery, id, token)
    }

    /// Holds the claim of a confirmation message ([`crate::store::ConfirmationMail::claim`]), as
    /// [`Worker::hold_check`].
    pub fn hold_mail(self: &Arc<Self>, claim: &str) -> Holding {
        self.hold(Kind::Mail, claim, 0)
    }

    fn hold(self: &Arc<Self>, kind: Kind, id: &str, token: i64) -> Holding {
        let lost = Arc::new(Notify::new());
        self.claims()
            .insert((kind, id.to_string()), (token, lost.clone()));
        Holding {
            worker: self.clone(),
            key: (kind, id.to_string()),
            token,
            lost,
        }
    }

    fn claims(&self) -> std::sync::MutexGuard<'_, Claims> {
        // A panic while the map was held leaves it whole (each operation is one call).
        self.held
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn holdings(&self) -> Holdings {
        let mut holdings = Holdings::default();
        for ((kind, id), (token, _)) in self.claims().iter() {
            let held = Held {
                id: id.clone(),
                token: *token,
            };
            match kind {
                Kind::Check => holdings.checks.push(held),
                Kind::Delivery => holdings.deliveries.push(held),
                Kind::Mail => holdings.mails.push(held),
            }
        }
        holdings
    }

    /// The first beat, before the worker takes work: it is live (and holds its host buckets)
    /// once this returns. A failure is logged; the beats that follow try again.
    pub async fn start(&self) {
        if let Err(err) = self.beat().await
            && !crate::store::health::outage(&err, "the first heartbeat")
        {
            tracing::error!(%err, "first heartbeat failed");
        }
    }

    /// One beat: renews what is held, takes the host buckets it balances to, and tells the parts
    /// of what was lost.
    pub async fn beat(&self) -> Result<(), StoreError> {
        let beat = self
            .store
            .beat(&self.info, &self.holdings(), self.lease)
            .await;
        self.writes_failing.store(
            matches!(beat, Err(StoreError::Unavailable(_))),
            Ordering::Release,
        );
        let beat = beat?;
        crate::store::health::writes_resumed();
        self.buckets.store(beat.buckets.bits(), Ordering::Release);
        let lost = beat.lost;
        let claims = self.claims();
        let kinds = [
            (Kind::Check, lost.checks),
            (Kind::Delivery, lost.deliveries),
        ];
        for (kind, lost) in kinds {
            for held in lost {
                if let Some((token, signal)) = claims.get(&(kind, held.id.clone()))
                    && *token == held.token
                {
                    tracing::warn!(id = %held.id, ?kind, "a claim was taken over by another worker");
                    signal.notify_one();
                }
            }
        }
        Ok(())
    }

    /// Beats every [`Worker::every`] (the first beat is [`Worker::start`]'s) until `stop` turns
    /// true; a beat that fails is logged and
    /// tried again at the next (the leases last several beats). Buckets whose lease a failed
    /// beat could not renew may be taken by another worker meanwhile: this one claims none
    /// until a beat succeeds again.
    pub async fn run(self: Arc<Self>, mut stop: watch::Receiver<bool>) {
        loop {
            tokio::select! {
                _ = tokio::time::sleep(self.every) => {}
                _ = stop.wait_for(|stop| *stop) => return,
            }
            if let Err(err) = self.beat().await {
                if !crate::store::health::outage(&err, "a heartbeat") {
                    tracing::error!(%err, "heartbeat failed");
                }
                self.buckets
                    .store(HostBuckets::NONE.bits(), Ordering::Release);
            }
        }
    }

    /// Hands back everything still held (due as it was, so another worker takes it at once)
    /// and removes this worker from the live ones. Called once the parts have stopped.
    pub async fn leave(&self) -> Result<(), StoreError> {
        let holdings = self.holdings();
        self.store.leave(&self.info.id, &holdings).await
    }
}

/// A claim held by this worker until dropped.
#[derive(Debug)]
pub struct Holding {
    worker: Arc<Worker>,
    key: (Kind, String),
    token: i64,
    lost: Arc<Notify>,
}

impl Holding {
    /// Resolves when a beat found the claim taken over by another worker.
    pub async fn lost(&self) {
        self.lost.notified().await
    }
}

impl Drop for Holding {
    fn drop(&mut self) {
        let mut claims = self.worker.claims();
        // A claim of the same id made since (a confirmation check claimed right after this one
        // was recorded) is that claim's.
        if claims
            .get(&self.key)
            .is_some_and(|(token, _)| *token == self.token)
        {
            claims.remove(&self.key);
        }
    }
}
