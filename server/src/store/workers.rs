//! The processes that check and deliver, and what each holds: a worker beats
//! ([`WorkerStore::beat`]) every few seconds, which writes its row in `workers` and renews the
//! leases of every check and delivery it holds, in one transaction; what a process that stopped
//! beating held is claimed by another once those leases run out, and a process that stops
//! cleanly hands everything back at once ([`WorkerStore::leave`]). The live workers, with their
//! roles and locations, tell which monitors some process will check.

use super::{Millis, StoreError};
use async_trait::async_trait;
use std::time::Duration;

/// One process of the service, as the others see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerInfo {
    /// Made when the process starts ([`super::new_id`]); a restart is a new worker.
    pub id: String,
    /// Its roles, such as `api,worker,deliver`.
    pub roles: String,
    /// The location whose monitors it checks (a LocationCode name such as `us`); `None`: the
    /// default location.
    pub location: Option<String>,
    /// The kinds of checks it runs, such as `plain,browser`.
    pub kinds: String,
    /// The machine's name, for people reading the list.
    pub host: String,
    /// The process id on that machine.
    pub pid: u32,
    /// When it started.
    pub started_at: Millis,
}

/// A check or a delivery a worker holds: its id (a monitor's, or a delivery's) and the fencing
/// token of the claim ([`super::DueCheck::token`], [`super::Delivery::token`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Held {
    /// The monitor's or the delivery's id.
    pub id: String,
    /// The claim's fencing token.
    pub token: i64,
}

/// Everything a worker holds at one beat.
#[derive(Debug, Clone, Default)]
pub struct Holdings {
    /// Checks in flight.
    pub checks: Vec<Held>,
    /// Deliveries in flight.
    pub deliveries: Vec<Held>,
}

/// What a beat found no longer held: claims whose lease had run out and that another worker
/// took since (or whose monitor or delivery is gone). Their work stores nothing; the worker may
/// stop it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Lost {
    /// Checks no longer held.
    pub checks: Vec<Held>,
    /// Deliveries no longer held.
    pub deliveries: Vec<Held>,
}

/// A worker as the store last heard of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveWorker {
    /// What it said of itself.
    pub info: WorkerInfo,
    /// Its last beat, on the store's clock (the database's on PostgreSQL).
    pub heartbeat_at: Millis,
}

/// Workers, their heartbeats and the leases they hold.
#[async_trait]
pub trait WorkerStore: Send + Sync + 'static {
    /// Records a beat of `worker` (its row written, or made on its first beat) and renews, for
    /// `lease` from now, the lease of every claim in `held` that is still the current one (its
    /// token unchanged and still leased); the claims that are not come back in [`Lost`]. On
    /// PostgreSQL "now" is the database's clock, as for every lease. Workers not heard of for
    /// an hour are forgotten.
    async fn beat(
        &self,
        worker: &WorkerInfo,
        held: &Holdings,
        lease: Duration,
    ) -> Result<Lost, StoreError>;
    /// Hands back what `worker` holds (each claim in `held` that is still the current one is
    /// freed, due as it was, so another worker takes it at once, and its token raised, so what
    /// the leaving process still runs of it stores nothing) and removes its row.
    async fn leave(&self, worker: &str, held: &Holdings) -> Result<(), StoreError>;
    /// The workers heard of within `within`, oldest first.
    async fn live_workers(&self, within: Duration) -> Result<Vec<LiveWorker>, StoreError>;
}
