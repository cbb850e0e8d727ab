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

impl WorkerInfo {
    /// Whether it has the `worker` role: it checks monitors, and so holds host buckets.
    pub fn checks(&self) -> bool {
        self.roles.split(',').any(|role| role == "worker")
    }
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
    /// Confirmation messages in flight, each named by its claim
    /// ([`super::ConfirmationMail::claim`], with token 0).
    pub mails: Vec<Held>,
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
    /// Confirmation messages no longer held.
    pub mails: Vec<Held>,
}

/// How many buckets the hosts of monitors are hashed into ([`host_bucket`]): each is checked by
/// one worker of a location at a time, so the engine's per-host limits, enforced in each
/// process, hold across all of them.
pub const HOST_BUCKETS: u32 = 64;

/// The bucket of the host of `url` (`0..HOST_BUCKETS`), the same in every process and version:
/// the first two bytes of the SHA-256 of the lower-case host. A URL without a host is bucket 0.
pub fn host_bucket(url: &str) -> i16 {
    use sha2::Digest;
    let host = url::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_ascii_lowercase))
        .unwrap_or_default();
    let digest = sha2::Sha256::digest(host.as_bytes());
    let n = u32::from(u16::from_be_bytes([digest[0], digest[1]])) % HOST_BUCKETS;
    i16::try_from(n).unwrap_or(0)
}

/// The host of `url` as the engine's downloader keys its host slots (host and port:
/// [`wachet::fetch::hosts::host_key`]), hashed to the first eight bytes of its SHA-256, the same
/// in every process: a claim leaves out the hosts that already have as many checks in flight as
/// their slots let through ([`super::Claim::busy_hosts`]). A URL that cannot be parsed is 0.
pub fn host_hash(url: &str) -> i64 {
    use sha2::Digest;
    let Ok(url) = url::Url::parse(url) else {
        return 0;
    };
    let digest = sha2::Sha256::digest(wachet::fetch::hosts::host_key(&url).as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    i64::from_be_bytes(first)
}

/// The most host buckets one of `live` workers of a pool holds: `ceil(HOST_BUCKETS / live)`.
pub(crate) fn bucket_share(live: i64) -> i64 {
    let live = live.max(1);
    (i64::from(HOST_BUCKETS) + live - 1) / live
}

/// A set of host buckets, as a worker holds and a claim takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostBuckets(u64);

impl HostBuckets {
    /// Every bucket: a claim made without workers to share with (tests, tools).
    pub const ALL: HostBuckets = HostBuckets(u64::MAX);
    /// No bucket: a worker before its first beat.
    pub const NONE: HostBuckets = HostBuckets(0);

    /// The set of `buckets`.
    pub fn of(buckets: impl IntoIterator<Item = i16>) -> Self {
        HostBuckets(buckets.into_iter().fold(0, |bits, b| {
            bits | 1u64 << u32::try_from(b).unwrap_or(0).min(HOST_BUCKETS - 1)
        }))
    }

    /// The set as bits (`1 << bucket` for each), as the claims' SQL tests it.
    pub fn bits(self) -> i64 {
        i64::from_ne_bytes(self.0.to_ne_bytes())
    }

    /// The set of [`HostBuckets::bits`].
    pub fn from_bits(bits: i64) -> Self {
        HostBuckets(u64::from_ne_bytes(bits.to_ne_bytes()))
    }

    /// How many buckets are in the set.
    pub fn len(self) -> u32 {
        self.0.count_ones()
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

/// What a beat found: the claims lost, and the host buckets the worker holds now (see
/// [`WorkerStore::beat`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Beat {
    /// Claims no longer held.
    pub lost: Lost,
    /// The host buckets whose monitors this worker may claim until its next beat.
    pub buckets: HostBuckets,
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
    /// token unchanged and still leased); the claims that are not come back in [`Lost`].
    ///
    /// A worker with the `worker` role also holds host buckets of its location (its pool):
    /// each bucket is held by one worker of the pool at a time under the same lease, and the
    /// beat balances them: with `n` workers of the pool live (beating within `lease`), a worker
    /// keeps at most `ceil(HOST_BUCKETS / n)`, hands back what it holds beyond (a worker
    /// joined) and takes free or lapsed buckets up to it (a worker left or died), so the
    /// buckets follow the workers within a beat or two. A worker of another role holds none.
    ///
    /// On PostgreSQL "now" is the database's clock, as for every lease. Workers not heard of
    /// for an hour are forgotten.
    async fn beat(
        &self,
        worker: &WorkerInfo,
        held: &Holdings,
        lease: Duration,
    ) -> Result<Beat, StoreError>;
    /// Hands back what `worker` holds (each claim in `held` that is still the current one is
    /// freed, due as it was, so another worker takes it at once, and its token raised, so what
    /// the leaving process still runs of it stores nothing; its host buckets are freed too) and
    /// removes its row.
    async fn leave(&self, worker: &str, held: &Holdings) -> Result<(), StoreError>;
    /// The workers heard of within `within`, oldest first.
    async fn live_workers(&self, within: Duration) -> Result<Vec<LiveWorker>, StoreError>;
}
