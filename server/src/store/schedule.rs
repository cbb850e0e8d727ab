//! The scheduler's state: monitors claimed for a check under a lease, what a check leaves
//! (recorded in one transaction), and what the next check needs to know beforehand (alert
//! states, the owner's storage).

use super::{Millis, NewNotification, StoreError};
use async_trait::async_trait;
use wachet::model::{ClientData, LocationCode, Monitor};

/// What [`ScheduleStore::claim_due`] may take.
#[derive(Debug, Clone)]
pub struct Claim {
    /// Monitors to claim at most (the caller's free slots).
    pub limit: u32,
    /// The slots shared out among the users: each user may hold `max(1, share / active
    /// users)` checks in flight.
    pub share: u32,
    /// Monitors with dynamicContent (rendered in Chromium), else the others.
    pub browser: bool,
    /// The locations whose monitors this worker checks (its own, and those it has a proxy for).
    pub locations: Locations,
    /// The host buckets this worker holds ([`super::WorkerStore::beat`]): only monitors whose
    /// host is in one of them are claimed.
    pub buckets: super::HostBuckets,
    /// The hosts this worker's checks are busy with: a host's monitors are claimed only up to
    /// its room.
    pub hosts: BusyHosts,
}

/// The hosts ([`super::host_hash`]) a worker has checks in flight to, and how many each host
/// may have ([`Claim::hosts`]). The engine's host slots let only so many requests to a host
/// through at once; a check claimed past them would wait for a slot while holding a check slot,
/// so a slow host with many monitors would end up holding every check slot and delay every
/// other host's monitors. A claim takes at most `per_host - in flight` of a host's monitors.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BusyHosts {
    /// Checks a host may have in flight at once; 0 sets no limit.
    pub per_host: u32,
    /// Each host with checks in flight, and how many.
    pub in_flight: Vec<(i64, u32)>,
}

impl BusyHosts {
    /// The limit as the claims' SQL takes it: no limit is the largest count.
    pub fn limit(&self) -> i64 {
        if self.per_host == 0 {
            i64::from(u32::MAX)
        } else {
            i64::from(self.per_host)
        }
    }

    /// The hosts with checks in flight and how many, as a JSON array of `[host, n]` (SQLite's
    /// `json_each`).
    pub fn counts_json(&self) -> String {
        let pairs: Vec<String> = self
            .in_flight
            .iter()
            .map(|(host, n)| format!("[{host},{n}]"))
            .collect();
        format!("[{}]", pairs.join(","))
    }
}

/// A set of monitor locations ([`LocationCode`]), as a claim takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Locations(u32);

impl Locations {
    /// The monitors with no location of their own: a worker running wherever it runs.
    pub const DEFAULT: Locations = Locations(1);

    /// The set of `locations`.
    pub fn of(locations: impl IntoIterator<Item = LocationCode>) -> Self {
        Locations(
            locations
                .into_iter()
                .fold(0, |bits, location| bits | 1 << location.code().clamp(0, 31)),
        )
    }

    /// The set as bits (`1 << code` for each location), as the claims' SQL tests it.
    pub fn bits(self) -> i64 {
        i64::from(self.0)
    }
}

/// A monitor claimed for a check by [`ScheduleStore::claim_due`].
#[derive(Debug, Clone)]
pub struct DueCheck {
    /// The monitor as it is now (id, folder and definition; no latest data).
    pub monitor: Monitor,
    /// Its owner.
    pub user: String,
    /// When it was due.
    pub due_at: Millis,
    /// The version of its definition (the time it was last written); a check of an older
    /// version does not move the schedule of the newer one.
    pub version: Millis,
    /// Whether this check also takes quick samples of the value to learn its noise (a new
    /// SinglePage monitor, or one whose selection changed: [`super::noise`]), until one succeeds.
    pub sample_noise: bool,
    /// The claim's fencing token: each claim of the monitor raises it, so a check whose lease
    /// ran out and was claimed again holds an older one and stores nothing
    /// ([`Recorded::Fenced`]).
    pub token: i64,
    /// Its host as claims count it ([`super::host_hash`] of its URL, stored with it).
    pub host: i64,
    /// What the check would otherwise ask the store for first, when the claim read it with the
    /// monitor (one statement for the whole claim instead of two a check).
    pub known: Option<Known>,
}

/// What a claim read of a monitor besides its definition ([`DueCheck::known`]).
#[derive(Debug, Clone)]
pub struct Known {
    /// The alert state of the monitor's own value, when the last check stored one (else the
    /// history decides it: [`ScheduleStore::alert_states`]). A Portal's pages have states of
    /// their own, which the claim does not read.
    pub own_state: Option<wachet::alerts::confirm::ConfirmState>,
    /// What its owner's history takes ([`ScheduleStore::stored_bytes`]).
    pub storage: StorageUse,
}

/// How [`ScheduleStore::record_check`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recorded {
    /// Everything the check left was stored.
    Stored,
    /// The definition changed during the check: the result belongs to one that no longer
    /// exists, so nothing was stored but the lease freed (the edit scheduled its own check).
    Edited,
    /// The check's lease ran out and another claim took the monitor (its token moved on): that
    /// claim's check stores its own result, so this one stored nothing and freed nothing.
    Fenced,
}

/// Everything one check of a claimed monitor leaves, stored by [`ScheduleStore::record_check`].
#[derive(Debug, Clone)]
pub struct CheckRecord {
    /// The monitor.
    pub task: String,
    /// The version of the definition that was checked ([`DueCheck::version`]).
    pub version: Millis,
    /// The fencing token of the claim ([`DueCheck::token`]).
    pub token: i64,
    /// The monitor's own result.
    pub own: ClientData,
    /// For a Portal check: each crawled page's URL, name (its title, when it has one) and
    /// result.
    pub pages: Vec<(String, Option<String>, ClientData)>,
    /// The notifications its alerts raised.
    pub notifications: Vec<NewNotification>,
    /// The alert states that changed with this check: the monitor's own (`None`) or a crawled
    /// page's (its URL), each the state to keep or `None` to forget it (a monitor without
    /// alerts keeps none: should it get alerts later, they start from its history).
    pub alert_states: Vec<(
        Option<String>,
        Option<wachet::alerts::confirm::ConfirmState>,
    )>,
    /// When it is next due.
    pub next_check_at: Millis,
    /// Noise masks learned with this check (from its quick samples or from the checks before
    /// it), appended to the monitor's `noise` by [`super::noise::with_learned`].
    pub learned: Vec<wachet::model::NoiseMask>,
    /// A line order learned from the quick samples (their lines were the same, shuffled),
    /// stored as the monitor's `compareLines` when it has none.
    pub learned_order: Option<wachet::model::LineOrder>,
    /// Whether the quick samples [`DueCheck::sample_noise`] asked for were taken: no more are.
    pub sampled: bool,
    /// What the monitor's noise has to tell a person after this check (its `noiseNotice`):
    /// masks that cover the whole value, or a value with no stable part.
    pub noise_notice: Option<String>,
}

/// What a user's history takes, against the quota ([`ScheduleStore::stored_bytes`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StorageUse {
    /// Bytes it takes now.
    pub used: u64,
    /// Bytes it may take.
    pub max: u64,
}

impl StorageUse {
    /// Why a new value of `size` bytes is not kept, when it would pass the quota.
    pub fn refuses(&self, size: u64) -> Option<String> {
        (self.used.saturating_add(size) > self.max).then(|| {
            format!(
                "the value ({size} bytes) was not stored: your history holds {} bytes of the \
                 {} bytes this server keeps per user; delete monitors to make room",
                self.used, self.max
            )
        })
    }
}

/// The alert states of a monitor and of its crawled pages (see [`ScheduleStore::alert_states`]).
#[derive(Debug, Clone, Default)]
pub struct AlertStates {
    /// The monitor's own value.
    pub own: wachet::alerts::confirm::ConfirmState,
    /// Each crawled page, by URL.
    pub pages: std::collections::HashMap<String, wachet::alerts::confirm::ConfirmState>,
}

/// Due checks, their leases and their results.
///
/// Every method keeps to [the store's rules](super): only the user's own data, each write one
/// transaction.
#[async_trait]
pub trait ScheduleStore: Send + Sync + 'static {
    /// Claims up to `claim.limit` active monitors due at `now` (their next check time has come
    /// and no check holds them) of one kind (`claim.browser`: those with dynamicContent, else
    /// the others), and holds each with a lease until `lease_until`: a check that never
    /// finishes (the process died) frees its monitor when the lease ends. Fair share: no user
    /// is given more than `max(1, claim.share / users with checks due or in flight)` checks in
    /// flight, and users take turns, earliest due first within each user. On PostgreSQL the
    /// lease is `lease_until - now` long on the database's clock (`clock_timestamp()`), as is
    /// the test whether another claim's lease ran out, so processes whose clocks differ agree;
    /// `now` still decides which monitors are due, and concurrent claims (of any process) skip
    /// each other's rows (`FOR UPDATE SKIP LOCKED`).
    async fn claim_due(
        &self,
        now: Millis,
        lease_until: Millis,
        claim: &Claim,
    ) -> Result<Vec<DueCheck>, StoreError>;
    /// Ends the check of a claimed monitor without a record: frees it and, unless its
    /// definition changed since `version` (an update schedules its own first check), sets its
    /// next check time. Only the claim holding `token` may: a monitor claimed again since is
    /// left to that claim. A monitor deleted meanwhile is no error.
    async fn finish_check(
        &self,
        task: &str,
        version: Millis,
        token: i64,
        next_check_at: Millis,
    ) -> Result<(), StoreError>;
    /// Stores a check in one transaction: the pages' entries, the monitor's entry, the
    /// notifications, the next check time, and the lease freed; so a crash leaves all of it or
    /// none, and a notification is never stored twice nor lost. When another claim took the
    /// monitor since (`record.token` is not its token any more: this check outlived its lease,
    /// in a pause or a partition), nothing is stored ([`Recorded::Fenced`]); when the
    /// definition changed since `record.version` (an edit during the check), the result
    /// belongs to a definition that no longer exists: nothing is stored but the lease freed
    /// ([`Recorded::Edited`]). The oldest entries beyond the store's retention go afterwards,
    /// in a transaction of their own.
    /// `NotFound` when the monitor was deleted.
    async fn record_check(&self, record: &CheckRecord) -> Result<Recorded, StoreError> {
        self.record_checks(std::slice::from_ref(record))
            .await
            .pop()
            .unwrap_or(Err(StoreError::NotFound))
    }
    /// Stores several checks (of different monitors) together, each as [`Self::record_check`]
    /// would alone, and returns each one's outcome in their order: one transaction for the
    /// group, so 1,000 checks a second are not 1,000 commits. A check is stored only once its
    /// group committed, and a record the group cannot write (or a commit that fails) never
    /// costs the others: then each is written in a transaction of its own. Fenced, edited and
    /// deleted monitors are outcomes of their own record only.
    async fn record_checks(&self, records: &[CheckRecord]) -> Vec<Result<Recorded, StoreError>>;
    /// What the alerts of a monitor know from before its next check, for the monitor itself and
    /// for each page it crawled (by URL): the state the last check stored
    /// ([`CheckRecord::alert_states`]), or where none was stored, the state its history gives
    /// (how its last check ended and its last successful value, taken as confirmed).
    /// `NotFound` when the monitor was deleted.
    async fn alert_states(&self, task: &str) -> Result<AlertStates, StoreError>;
    /// What the history of the owner of `task` takes and may take
    /// ([`super::Quotas::stored_bytes`]), read from the counter the writes keep. `NotFound` when
    /// the monitor was deleted.
    async fn stored_bytes(&self, task: &str) -> Result<StorageUse, StoreError>;
    /// Names monitor `task` `name` (a title its check read) when its name is still the one the
    /// service gave it ([`super::TaskStore::name_automatically`]); a name a person chose is
    /// never touched. Its definition's version is left alone: a name changes nothing a check
    /// does. Whether it was renamed; a monitor deleted meanwhile is no error.
    async fn name_after_page(&self, task: &str, name: &str) -> Result<bool, StoreError>;
    /// The browser session kept for monitor `task` (sealed text), if any
    /// ([`wachet::steps::SessionStore`]).
    async fn task_session(&self, task: &str) -> Result<Option<String>, StoreError>;
    /// Keeps `sealed` as the browser session of monitor `task`, replacing the one kept; a
    /// monitor deleted meanwhile is no error.
    async fn keep_task_session(&self, task: &str, sealed: &str) -> Result<(), StoreError>;
    /// Forgets the browser session kept for monitor `task`.
    async fn forget_task_session(&self, task: &str) -> Result<(), StoreError>;
}
