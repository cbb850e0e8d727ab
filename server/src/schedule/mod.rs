//! The scheduler: checks every active monitor on its schedule through the engine's [`Checker`],
//! raises its alerts ([`wachet::alerts`]) and stores what each check found and raised. Its state lives in the database ([`ScheduleStore::claim_due`]):
//! a monitor is claimed under a lease when due, checked, its results appended to its history
//! (and each crawled page's), and its next check set to its next slot ([`slots`]). A process
//! that dies mid-check loses nothing: the lease runs out and the check runs again.
//!
//! Concurrency is bounded and shared out fairly: `checks_in_flight` plain checks and
//! `browser_checks_in_flight` checks rendering in Chromium (`dynamicContent`) are each divided
//! among the users with checks due or running ([`Pool`]), and each page a check renders takes
//! one of its owner's browser tabs ([`crate::tabs`]), so one user's hanging hosts delay only
//! that user's monitors; and a host gets no more checks at once than the engine's host
//! slots let through ([`hosts`]), so one slow host's thousands of monitors hold only those
//! slots and delay no other host's.
//!
//! Each monitor is compiled once per version of its definition ([`prepared`]); a Portal
//! monitor's pages are taken one by one from the crawl's stream, each stored under its title
//! as the page's name. A page that was listed before and is now only left out by the crawl
//! (`ignoreInvalidPages`, `crawlBinaryContent`, a redirect to a page already listed) stays in
//! the monitor's list of pages, so it never reads as removed.

pub mod events;
pub mod group;
pub mod hosts;
pub mod prepared;
pub mod slots;

use crate::metrics::METRICS;
use crate::notify;
use crate::store::{
    AlertStates, CheckRecord, Claim, DueCheck, Known, Recorded, ScheduleStore, StorageUse,
    StoreError, now_millis,
};
use crate::tabs::BrowserTabs;
use crate::worker::Worker;
use events::{CheckEvents, CheckFinished};
use futures::StreamExt;
use prepared::PreparedCache;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::{Notify, Semaphore, oneshot, watch};
use wachet::alerts::compare::Comparator;
use wachet::alerts::confirm::{ConfirmState, Confirmation, decide};
use wachet::alerts::{Check, Raised, Subject, noise};
use wachet::model::{Alert, ClientData, ClientJobType, NoiseMask};
use wachet::{Checker, CrawlEvent, Monitor, PortalFold, PreparedMonitor};

/// A crawled page as stored: its URL, its name (title) and its result.
type PageResult = (String, Option<String>, ClientData);

/// How often due monitors are looked for when no check of a pool ends (one that ends has its
/// pool look again: [`GAP`]).
const POLL: Duration = Duration::from_millis(250);
/// The least time between two claims of a pool whose last claim left slots free: nothing was
/// waiting then, so the monitors falling due since are taken together. Without it every check
/// that ended claimed again, and at 1,667 checks a second each claim found one or two monitors
/// for a full statement in the writer's lock. A claim that filled every slot is followed as
/// soon as a slot is free, so a backlog never waits for it.
const GAP: Duration = Duration::from_millis(10);
/// Longest a check may run (a crawl of 500 slow pages included) before it is stopped.
const MAX_CHECK: Duration = Duration::from_secs(30 * 60);

/// Settings of the scheduler.
#[derive(Debug, Clone)]
pub struct ScheduleSettings {
    /// Checks running at once, shared out among the users with checks due or running; when
    /// one user holds them all, others borrow up to as many again ([`Pool`]).
    pub checks_in_flight: usize,
    /// Checks rendering in Chromium at once (besides `checks_in_flight`), shared out alike.
    pub browser_checks_in_flight: usize,
    /// The shortest recurrence the server allows, in seconds.
    pub min_recurrence: i32,
    /// How long a claimed check holds its monitor past the worker's last beat before another
    /// process may take it over ([`crate::worker`]): a check lost in a crash runs again at most
    /// about this long after.
    pub lease: Duration,
    /// Bytes of one value (a check's, or a crawled page's): a larger one is stored as a failed
    /// check saying so. Cut short, it would read as a change and be compared as if whole.
    pub max_value_bytes: usize,
    /// How soon a check that waits for confirmation (a changed value, a failure not yet
    /// raised: [`wachet::alerts::confirm`]) is followed by the next one; never later than the
    /// monitor's next regular check.
    pub confirm_after: Duration,
    /// How many more times the first check of a new SinglePage monitor (or of one whose
    /// selection changed) fetches the value to learn its noise ([`wachet::alerts::noise`]);
    /// 0 takes no samples.
    pub noise_samples: usize,
    /// The pause before each of those fetches.
    pub noise_spacing: Duration,
    /// The locations whose monitors this process checks: its own (`--location`) and those its
    /// engine has a proxy for.
    pub locations: crate::store::Locations,
    /// Whether this process runs plain checks (`--kinds plain`).
    pub plain: bool,
    /// Whether this process runs checks rendered in Chromium (`--kinds browser`).
    pub browser: bool,
    /// The longest the samples of one check may take, pauses included; the samples not taken
    /// by then are skipped, so a slow page holds its check's slot no longer than one more
    /// check's timeout.
    pub noise_sample_budget: Duration,
}

impl Default for ScheduleSettings {
    fn default() -> Self {
        ScheduleSettings {
            checks_in_flight: 32,
            browser_checks_in_flight: 4,
            min_recurrence: 60,
            lease: crate::worker::DEFAULT_LEASE,
            // The engine reads bodies of up to 10 MiB, so by default only a page its scripts grew
            // reaches this.
            max_value_bytes: 10 << 20,
            // Long enough for a stale replica or a flapping CDN edge to have moved on, short
            // enough that a real change is told within seconds of being seen.
            confirm_after: Duration::from_secs(5),
            noise_samples: wachet::alerts::noise::QUICK_SAMPLES,
            noise_spacing: wachet::alerts::noise::QUICK_SPACING,
            locations: crate::store::Locations::DEFAULT,
            plain: true,
            browser: true,
            // The engine's default timeout of a whole fetch.
            noise_sample_budget: Duration::from_secs(30),
        }
    }
}

impl ScheduleSettings {
    /// The kinds of checks these settings run, as a worker tells the others (`plain,browser`).
    pub fn kinds(&self) -> String {
        let kinds = [(self.plain, "plain"), (self.browser, "browser")];
        kinds
            .iter()
            .filter(|(on, _)| *on)
            .map(|(_, kind)| *kind)
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// Runs the scheduler until `stop` turns true (or its sender is gone), then returns once the
/// checks in flight have ended and stored what they found; a caller that cannot wait that long
/// drops the future, and the checks still running are left to their lease. With
/// `checks_in_flight` 0 this process runs no checks (an API-only process beside others that
/// do). Each stored check is announced on `events`. Each claim is held by `worker`, whose beats
/// renew its lease while the check runs.
pub async fn run(
    store: Arc<dyn ScheduleStore>,
    checker: Arc<dyn Checker>,
    settings: ScheduleSettings,
    worker: Arc<Worker>,
    mut stop: watch::Receiver<bool>,
    events: CheckEvents,
    tabs: Arc<BrowserTabs>,
) {
    if settings.checks_in_flight == 0 {
        return;
    }
    // Plain and browser checks have slots of their own, so monitors waiting for the browser
    // never hold up the others.
    let pools: Vec<Pool> = [
        settings
            .plain
            .then(|| Pool::new(settings.checks_in_flight, false)),
        settings
            .browser
            .then(|| Pool::new(settings.browser_checks_in_flight.max(1), true)),
    ]
    .into_iter()
    .flatten()
    .collect();
    let wake = Arc::new(Notify::new());
    let mut turns: Vec<Turn> = pools.iter().map(|_| Turn::new()).collect();
    let cache = Arc::new(PreparedCache::new(prepared::DEFAULT_CAPACITY));
    let hosts = Arc::new(hosts::Hosts::default());
    let per_host = checker.host_concurrency();
    let groups = group::Groups::start(store.clone());
    loop {
        let mut more = false;
        let mut next = tokio::time::Instant::now() + POLL;
        for (pool, turn) in pools.iter().zip(&mut turns) {
            let free = pool.permits.available_permits();
            if free == 0 {
                continue;
            }
            let now = tokio::time::Instant::now();
            match turn.ready(&pool.freed, now) {
                Ok(()) => {}
                Err(at) => {
                    next = next.min(at);
                    continue;
                }
            }
            let buckets = worker.buckets();
            if buckets.is_empty() {
                // Before the first beat, or when beats fail: every host may be another's.
                continue;
            }
            let now = now_millis();
            let until = now + worker.lease().as_millis() as i64;
            let claim = Claim {
                limit: free as u32,
                share: pool.share as u32,
                browser: pool.browser,
                locations: settings.locations,
                buckets,
                hosts: hosts.busy(per_host),
            };
            let claiming = std::time::Instant::now();
            let due = store.claim_due(now, until, &claim).await;
            METRICS.claim_duration.observe(claiming.elapsed());
            let due = match due {
                Ok(due) => due,
                Err(err) => {
                    tracing::error!(%err, "cannot claim due monitors");
                    continue;
                }
            };
            // More may be due: look again at once instead of after the poll. So also when a
            // host reached its limit: the claim took no more of it, and other hosts' monitors
            // due after its backlog may have been left for the next claim.
            let mut full = due.len() == free;
            let claimed = due.len();
            for check in due {
                let Ok(permit) = pool.permits.clone().try_acquire_owned() else {
                    // Claimed beyond the free slots (cannot happen while this loop alone
                    // takes them): give the monitor back, due as it was.
                    if let Some(task) = &check.monitor.id {
                        let _ = store
                            .finish_check(task, check.version, check.token, check.due_at)
                            .await;
                    }
                    continue;
                };
                let host = check.host;
                let slot = Slot {
                    _permit: permit,
                    _on_host: hosts.enter(host),
                };
                full |= claimed < free && hosts.full(host, per_host);
                let (store, checker) = (store.clone(), checker.clone());
                let finished = Freed {
                    pool: pool.freed.clone(),
                    wake: wake.clone(),
                };
                let (settings, cache, events) = (settings.clone(), cache.clone(), events.clone());
                let groups = groups.clone();
                let holding = check
                    .monitor
                    .id
                    .as_deref()
                    .map(|task| worker.hold_check(task, check.token));
                let samplers = SampleSlots {
                    samplers: pool.samplers.clone(),
                    hosts: hosts.clone(),
                    host,
                    per_host,
                    slot_given_back: Arc::new(AtomicBool::new(false)),
                };
                let tails = pool.tails.clone();
                let lease = worker.lease();
                let tabs = tabs.clone();
                tokio::spawn(async move {
                    let Some(holding) = holding else { return };
                    let parts = Parts {
                        store,
                        groups,
                        checker,
                        cache,
                        samplers,
                        tabs,
                    };
                    let held = Held {
                        holding,
                        slot,
                        tails,
                        finished: finished.clone(),
                        lease,
                    };
                    run_check(parts, check, held, &settings, &events).await;
                    finished.tell();
                });
            }
            turn.full = full;
            more |= full;
        }
        if more {
            continue;
        }
        tokio::select! {
            _ = tokio::time::sleep_until(next) => {}
            _ = wake.notified() => {}
            _ = stop.wait_for(|stop| *stop) => break,
        }
    }
    for pool in &pools {
        pool.drained().await;
    }
}

/// The slots of one kind of check. `share` slots are shared out among the users
/// ([`ScheduleStore::claim_due`]: each user may hold `max(1, share / active users)`), and a lone user
/// takes them all; the pool has as many again to lend, so when one user holds every slot
/// (hosts that never answer hold them for the whole timeout) another user's due check starts
/// at once instead of waiting for those to end. The user holding more than their share gets
/// nothing more until they are back within it, so the loan is repaid as their checks end, and
/// never more than twice `share` checks run.
///
/// A first check taking its quick samples gives its slot back for them ([`run_check`]):
/// their fetches take one of `share` sampler permits each, held for the fetch alone, so the
/// pauses between them hold nothing; `tails` counts those checks, so a stopping scheduler still
/// waits for them to store what they found.
struct Pool {
    permits: Arc<Semaphore>,
    share: usize,
    browser: bool,
    /// Set when one of the pool's checks gives its slot back; a pool is looked at again for
    /// its own freed slots, not for another pool's.
    freed: Arc<AtomicBool>,
    samplers: Arc<Semaphore>,
    tails: Arc<Semaphore>,
}

/// How many checks may be taking their samples at once past their slots, per slot: each holds
/// its value and its compiled monitor (a few KB), so they are bounded; a check that finds none
/// free keeps its slot through its samples, as before. With 32 slots, 1,024 monitors sample at
/// once, and at 3 to 6 s of samples each that would start 170 to 340 new monitors a second,
/// more than 2 cores check with their samples: the CPU, not this bound, sets the pace of
/// 100,000 monitors created at once. (At 8 a slot, 80 a second left the machine idle.)
const TAILS_PER_SLOT: usize = 32;

impl Pool {
    fn new(share: usize, browser: bool) -> Self {
        Pool {
            permits: Arc::new(Semaphore::new(share * 2)),
            share,
            browser,
            freed: Arc::new(AtomicBool::new(false)),
            samplers: Arc::new(Semaphore::new(share)),
            tails: Arc::new(Semaphore::new(share * TAILS_PER_SLOT)),
        }
    }

    /// Resolves once every check of the pool has given its slot back and every check taking
    /// its samples has ended.
    async fn drained(&self) {
        let all = u32::try_from(self.share * 2).unwrap_or(u32::MAX);
        let _ = self.permits.acquire_many(all).await;
        let tails = u32::try_from(self.share * TAILS_PER_SLOT).unwrap_or(u32::MAX);
        let _ = self.tails.acquire_many(tails).await;
    }
}

/// When a pool claims next ([`GAP`], [`POLL`]).
struct Turn {
    /// When it last claimed; `None` before its first claim.
    last: Option<tokio::time::Instant>,
    /// Whether its last claim filled every free slot (or stopped at a host's limit), so more
    /// may be due.
    full: bool,
}

impl Turn {
    fn new() -> Self {
        Turn {
            last: None,
            full: false,
        }
    }

    /// `Ok` when the pool claims now (its last claim was full, a poll is due, or a slot of its
    /// own was freed at least [`GAP`] after its last claim), and takes the turn; otherwise
    /// when it is to be looked at again.
    fn ready(
        &mut self,
        freed: &AtomicBool,
        now: tokio::time::Instant,
    ) -> Result<(), tokio::time::Instant> {
        if let Some(last) = self.last
            && !self.full
        {
            let woken = freed.load(Ordering::Acquire);
            let at = last + if woken { GAP } else { POLL };
            if now < at {
                return Err(at);
            }
        }
        freed.store(false, Ordering::Release);
        self.last = Some(now);
        Ok(())
    }
}

/// Tells the claim loop that a pool's slot was given back.
#[derive(Clone)]
struct Freed {
    pool: Arc<AtomicBool>,
    wake: Arc<Notify>,
}

impl Freed {
    fn tell(&self) {
        self.pool.store(true, Ordering::Release);
        self.wake.notify_one();
    }
}

/// A check slot of a [`Pool`], counted on the check's host ([`hosts`]) while it is held.
struct Slot {
    _permit: tokio::sync::OwnedSemaphorePermit,
    _on_host: hosts::OnHost,
}

/// What a running check holds: its claim (renewed by the worker's beats), its slot, and how it
/// gives both back early to take its quick samples.
struct Held {
    holding: crate::worker::Holding,
    slot: Slot,
    tails: Arc<Semaphore>,
    /// Told when the slot is given back, so the claim loop fills it.
    finished: Freed,
    /// The worker's lease, which a check's parked monitor waits past its samples' budget.
    lease: Duration,
}

/// What every check runs with: the store, the writer of groups of checks into it, the engine,
/// the prepared monitors and what quick samples' fetches wait for ([`SampleSlots`]).
struct Parts {
    store: Arc<dyn ScheduleStore>,
    groups: group::Groups,
    checker: Arc<dyn Checker>,
    cache: Arc<PreparedCache>,
    samplers: SampleSlots,
    /// The browser tabs each user's renders take ([`crate::tabs`]).
    tabs: Arc<BrowserTabs>,
}

/// What each fetch of a first check's quick samples holds while it runs: room on the monitor's
/// host among the checks in flight ([`hosts::Hosts::enter_with_room`]), then one of the pool's
/// sampler permits. In that order, so a slow host's samples wait for their host holding
/// nothing the other hosts' samples need: 10,000 new monitors on a host that answers in
/// seconds would otherwise take every sampler permit and stall every other new monitor's
/// first check.
///
/// A check that could not give its slot back (no tail free, or its monitor could not be parked)
/// samples within it: it is counted on its host already, and waiting for room there could wait
/// for itself.
struct SampleSlots {
    samplers: Arc<Semaphore>,
    hosts: Arc<hosts::Hosts>,
    host: i64,
    per_host: usize,
    /// Set once the check has given its slot back.
    slot_given_back: Arc<AtomicBool>,
}

/// One check of a claimed monitor: check, raise its alerts, store, schedule the next. The check
/// runs in a task of its own while `held` keeps its claim (the worker's beats renew its
/// lease, so no other process takes the monitor over), and whatever happens to it (a timeout,
/// a panic) the monitor is freed and rescheduled; a claim another worker took over meanwhile
/// (this process was paused or cut off past its lease) stops the check, which stores nothing.
///
/// A first check that takes quick samples parks its monitor first (its lease freed, due again
/// only past the samples' budget and a lease: [`check_and_store`]) and then gives back its claim
/// and its slot, so the pauses between samples hold neither a slot nor a share of its owner's
/// checks in flight; its record is still fenced by its token, so a monitor claimed again
/// meanwhile (an edit checks at once) keeps only that claim's check.
async fn run_check(
    Parts {
        store,
        groups,
        checker,
        cache,
        samplers,
        tabs,
    }: Parts,
    check: DueCheck,
    held: Held,
    settings: &ScheduleSettings,
    events: &CheckEvents,
) {
    let Held {
        holding,
        slot,
        tails,
        finished,
        lease,
    } = held;
    let Some(task) = check.monitor.id.clone() else {
        return;
    };
    let recurrence = effective_recurrence(&check.monitor, settings);
    let (version, token, monitor, user) = (check.version, check.token, check.monitor, check.user);
    let known = check.known;
    // Each page the check renders (a Portal's, a quick sample's) takes one of its owner's tabs.
    let gate = monitor
        .dynamic_content
        .then(|| tabs.for_user(&user, None) as Arc<dyn wachet::TabGate>);
    let sampling = (check.sample_noise && settings.noise_samples > 0).then_some(Sampling {
        samples: settings.noise_samples,
        spacing: settings.noise_spacing,
        budget: settings.noise_sample_budget,
        park: settings.noise_sample_budget + lease,
    });
    let max_value_bytes = settings.max_value_bytes;
    let confirm_after = settings.confirm_after;
    let late = now_millis().saturating_sub(check.due_at).max(0);
    METRICS
        .check_lateness
        .observe(Duration::from_millis(late as u64));
    let (parked_tx, mut parked) = oneshot::channel();
    let slot_given_back = samplers.slot_given_back.clone();
    let mut inner = {
        let store = store.clone();
        tokio::spawn(async move {
            check_and_store(
                store.as_ref(),
                (&groups, &checker, &cache, &samplers),
                (&monitor, known, gate),
                (version, token),
                recurrence,
                max_value_bytes,
                confirm_after,
                (sampling, parked_tx),
            )
            .await
        })
    };
    let ended = tokio::time::timeout(MAX_CHECK, async {
        tokio::select! {
            done = &mut inner => return Some(done),
            () = holding.lost() => return None,
            Ok(()) = &mut parked => {}
        }
        // Parked: no lease left to renew or lose. The slot goes back once the check is counted
        // among those the scheduler waits for when it stops.
        drop(holding);
        let _kept = match tails.try_acquire_owned() {
            Ok(tail) => {
                slot_given_back.store(true, Ordering::Release);
                drop(slot);
                finished.tell();
                (Some(tail), None)
            }
            Err(_) => (None, Some(slot)),
        };
        Some((&mut inner).await)
    })
    .await;
    let stored = match ended {
        Ok(Some(Ok(Ok(recorded)))) => {
            if recorded == Recorded::Stored {
                events.announce(CheckFinished {
                    user,
                    task: task.clone(),
                });
            }
            if recorded == Recorded::Fenced {
                tracing::warn!(task = %task, "the check outlived its lease and another worker took it; nothing stored");
            }
            true
        }
        Ok(Some(Ok(Err(StoreError::NotFound)))) => true,
        Ok(Some(Ok(Err(err)))) => {
            tracing::error!(%err, task = %task, "cannot store a check");
            false
        }
        Ok(Some(Err(err))) => {
            tracing::error!(%err, task = %task, "the check failed");
            false
        }
        Ok(None) => {
            // Another worker holds the monitor now and checks it; this check would store
            // nothing (its token is old), so it stops.
            inner.abort();
            tracing::warn!(task = %task, "the check's claim was taken over; stopped");
            true
        }
        Err(_) => {
            inner.abort();
            tracing::error!(task = %task, "the check outlasted its time limit and was stopped");
            false
        }
    };
    if !stored {
        // Nothing of the check was stored: free the monitor for its next slot.
        let next = next_check(&task, recurrence, now_millis());
        if let Err(err) = store.finish_check(&task, version, token, next).await {
            tracing::error!(%err, task = %task, "cannot schedule the next check");
        }
    }
}

/// The monitor's recurrence, at least the server's minimum: a monitor stored under a lower
/// minimum is checked no more often than the server now allows.
fn effective_recurrence(monitor: &Monitor, settings: &ScheduleSettings) -> i32 {
    monitor
        .recurrence_in_seconds
        .unwrap_or(0)
        .max(settings.min_recurrence)
}

/// The next check after one that ended at `now`: the monitor's next slot, but at least half a
/// period away, so a first check (made at once after an edit) is not followed by another a
/// moment later.
fn next_check(task: &str, recurrence: i32, now: crate::store::Millis) -> crate::store::Millis {
    let period = crate::store::Millis::from(recurrence.max(1)) * 1000;
    let next = slots::next_slot(task, recurrence, now);
    if next - now < period / 2 {
        next + period
    } else {
        next
    }
}

/// When a check that ended at `now` is followed by the next: at the monitor's next slot, or
/// `confirm_after` from now when it waits for confirmation, whichever comes first.
fn next_after(
    task: &str,
    recurrence: i32,
    now: crate::store::Millis,
    recheck: bool,
    confirm_after: Duration,
) -> crate::store::Millis {
    let regular = next_check(task, recurrence, now);
    if recheck {
        let soon = now.saturating_add(i64::try_from(confirm_after.as_millis()).unwrap_or(i64::MAX));
        soon.min(regular)
    } else {
        regular
    }
}

/// Quick samples a check takes to learn the monitor's noise ([`ScheduleSettings::noise_samples`]).
#[derive(Debug, Clone, Copy)]
struct Sampling {
    samples: usize,
    spacing: Duration,
    budget: Duration,
    /// How long the monitor is parked (not due, not leased) while they are taken: past their
    /// budget by a lease, so only a check lost with its process lets it be due again.
    park: Duration,
}

/// Checks `monitor` and stores the check with what its alerts raised, the alert states after
/// it and the noise masks it learned, in one transaction with the checks that end with it ([`group`]). With
/// `sampling` (a SinglePage monitor's first check after it was created or its selection
/// changed) a successful check also fetches the value a few more times, learns the noise from
/// what differs ([`wachet::alerts::noise::learn`]) and judges the check with it; the samples
/// are not history entries. Before the samples the monitor is parked ([`Sampling::park`]) and
/// `parked` told, so the caller gives back the claim and the slot for their pauses.
#[allow(clippy::too_many_arguments)]
async fn check_and_store(
    store: &dyn ScheduleStore,
    (groups, checker, cache, samplers): (
        &group::Groups,
        &Arc<dyn Checker>,
        &Arc<PreparedCache>,
        &SampleSlots,
    ),
    (monitor, known, gate): (&Monitor, Option<Known>, Option<Arc<dyn wachet::TabGate>>),
    (version, token): (crate::store::Millis, i64),
    recurrence: i32,
    max_value_bytes: usize,
    confirm_after: Duration,
    (sampling, parked): (Option<Sampling>, oneshot::Sender<()>),
) -> Result<Recorded, StoreError> {
    let task = monitor.id.clone().unwrap_or_default();
    let alerts = monitor.alerts.clone().unwrap_or_default();
    let portal = monitor.job_type == ClientJobType::Portal;
    // What the alerts know from before: the history as it is before this check is stored. A
    // Portal's previous list of pages is needed to keep pages now only left out in it.
    // The claim read the state a SinglePage monitor's last check stored, the usual case.
    let claimed_state = known.as_ref().and_then(|k| k.own_state.clone());
    let states = match (alerts.is_empty() && !portal, claimed_state) {
        (true, _) => AlertStates::default(),
        (false, Some(own)) if !portal => AlertStates {
            own,
            ..AlertStates::default()
        },
        _ => store.alert_states(&task).await?,
    };
    let storage = known.map(|k| k.storage);
    let started = std::time::Instant::now();
    let rendering = monitor.dynamic_content.then(Rendering::start);
    let prepared = cache
        .get_off_thread(checker, &task, version, monitor)
        .await
        .map(|prepared| match gate {
            Some(gate) => prepared.with_tabs(gate),
            None => prepared,
        });
    let checker = checker.as_ref();
    // The server's clock, which the page's own dates follow (a Portal's pages have none).
    let mut page_clock = None;
    let (own, pages) = match &prepared {
        Ok(prepared) if portal => {
            crawl(checker, prepared, states.own.alerts.last_value.as_deref()).await
        }
        Ok(prepared) => {
            let outcome = checker.check_prepared(prepared).await;
            page_clock = outcome.server_date;
            (outcome.data, Vec::new())
        }
        // The definition was valid when stored; what changed since (a proxy location removed
        // from the settings) is reported like any failed check.
        Err(invalid) => (
            ClientData::failure(chrono::Utc::now(), format!("invalid monitor: {invalid}")),
            Vec::new(),
        ),
    };
    let (mut own, mut pages) = (own, pages);
    within_value_limit(&mut own, max_value_bytes);
    // Sampled only once a check succeeds: a failed first check leaves it to the next one.
    let sampling = sampling.filter(|_| !portal && own.error.is_none() && own.raw.is_some());
    let samples = match (&prepared, sampling, own.raw.as_deref()) {
        (Ok(prepared), Some(sampling), Some(first)) => {
            // The check is recorded after its samples, in one record as ever (a crash loses
            // nothing stored: the parked monitor is due again once its park ends, and samples
            // anew), but it waits without its lease: a new monitor's seconds of pauses would
            // otherwise hold its slot and its owner's share, and 100,000 monitors created at
            // once would take hours to get their first checks.
            let until = now_millis()
                .saturating_add(i64::try_from(sampling.park.as_millis()).unwrap_or(i64::MAX));
            match store.finish_check(&task, version, token, until).await {
                Ok(()) => {
                    let _ = parked.send(());
                }
                Err(err) => {
                    tracing::warn!(%err, task = %task, "cannot park the monitor for its samples; they hold its slot");
                }
            }
            quick_samples(
                checker,
                (prepared, samplers),
                first,
                sampling,
                max_value_bytes,
            )
            .await
        }
        _ => Vec::new(),
    };
    drop(rendering);
    for (_, _, data) in &mut pages {
        within_value_limit(data, max_value_bytes);
    }
    within_stored_bytes(store, (&task, storage), &states, &mut own, &mut pages).await?;
    METRICS.check_duration.observe(started.elapsed());
    let outcome = match own.error {
        None => &METRICS.checks_ok,
        Some(_) => &METRICS.checks_failed,
    };
    outcome.fetch_add(1, Ordering::Relaxed);
    tracing::debug!(task = %task, failed = own.error.is_some(), "checked");
    let (quick, sampled_notice, order) = match own.raw.clone() {
        Some(first) if !samples.is_empty() => {
            let comparator = Comparator::lenient(monitor);
            let samples = samples.clone();
            let study = tokio::task::spawn_blocking(move || {
                let values: Vec<&str> = std::iter::once(first.as_str())
                    .chain(samples.iter().map(String::as_str))
                    .collect();
                noise::study(&comparator, &values)
            })
            .await
            .map_err(|err| StoreError::Backend(format!("learning noise: {err}")))?;
            (study.masks, study.notice, study.order)
        }
        _ => (Vec::new(), None, None),
    };
    let mut states = states;
    if sampled_notice.as_deref() == Some(noise::UNSTABLE) {
        // Samples seconds apart with no part in common count as that many checks that differed
        // everywhere, so the monitor says so from now on instead of once its checks have.
        states.own.noise.unstable |= 0b111;
    }
    // This check is judged with what its samples taught, as the next ones will be. A line
    // order learned is kept only where the monitor has none of its own.
    let order = order.filter(|_| monitor.compare_lines.is_none());
    let learned_now;
    let noise = crate::store::noise::with_learned(monitor.noise.as_deref(), &quick);
    let monitor = match (noise, order) {
        (None, None) => monitor,
        (noise, order) => {
            learned_now = Monitor {
                noise: noise.or_else(|| monitor.noise.clone()),
                compare_lines: order.or(monitor.compare_lines),
                ..monitor.clone()
            };
            &learned_now
        }
    };
    let mut learned = quick;
    let (notifications, alert_states, recheck, state_notice) = if alerts.is_empty() {
        // No alerts, nothing to confirm: keep no state, so alerts added later start from the
        // history rather than from a state this check did not keep up to date.
        let forget = std::iter::once(None)
            .chain(pages.iter().map(|(url, ..)| Some(url.clone())))
            .map(|series| (series, None))
            .collect();
        (Vec::new(), forget, false, None)
    } else {
        // The value the alerts confirmed last, found again with nothing waiting: deciding that
        // compares two strings, cheaper than handing it to another thread and back. Anything
        // else may build diffs for the contents, CPU work kept off the async threads.
        let unchanged = samples.is_empty()
            && pages.is_empty()
            && states.own.pending.is_empty()
            && own.raw.is_some()
            && own.raw == states.own.alerts.last_value;
        let (monitor, own, pages) = (monitor.clone(), own.clone(), pages.clone());
        let decide = move || {
            let at = chrono::Utc::now();
            let mut decided = raise(
                &states,
                &monitor,
                &alerts,
                (&own, page_clock),
                &pages,
                confirm_after,
            );
            if !samples.is_empty() {
                // The samples show the content as it is now: a template among them that the
                // page went on from is a flip when it shows up later, not a change; one it
                // stayed at may be a change that came while the monitor was made.
                let comparator = Comparator::lenient(&monitor).with(&decided.learned);
                let own_state = decided.states.iter_mut().find(|(page, _)| page.is_none());
                if let (Some((_, Some(state))), Some(first)) = (own_state, own.raw.as_deref()) {
                    let samples: Vec<&str> = samples.iter().map(String::as_str).collect();
                    state.warm_up(&comparator, first, &samples, at);
                }
            }
            // A mask learned by this very check dims its span in the notification too.
            let taught =
                crate::store::noise::with_learned(monitor.noise.as_deref(), &decided.learned).map(
                    |noise| Monitor {
                        noise: Some(noise),
                        ..monitor.clone()
                    },
                );
            let shown = taught.as_ref().unwrap_or(&monitor);
            let notifications = decided
                .raised
                .iter()
                .filter_map(|(r, previous)| notify::notification(shown, r, at, previous.as_deref()))
                .collect();
            // The monitor's own state after the check: the one stored, or the one before when
            // the check changed nothing.
            let notice = match decided.states.iter().find(|(page, _)| page.is_none()) {
                Some((_, after)) => after.as_ref().and_then(|s| s.noise.notice()),
                None => states.own.noise.notice(),
            };
            (
                notifications,
                decided.states,
                decided.recheck,
                decided.learned,
                notice,
            )
        };
        let decided = match unchanged {
            true => decide(),
            false => tokio::task::spawn_blocking(decide)
                .await
                .map_err(|err| StoreError::Backend(format!("raising alerts: {err}")))?,
        };
        let (notifications, states, recheck, taught, notice) = decided;
        learned.extend(taught);
        (notifications, states, recheck, notice)
    };
    let covered = match (&own.raw, portal) {
        (Some(value), false) if monitor.noise.is_some() || !learned.is_empty() => {
            let comparator = Comparator::lenient(monitor).with(&learned);
            let value = value.clone();
            tokio::task::spawn_blocking(move || noise::coverage_notice(&comparator, &value))
                .await
                .map_err(|err| StoreError::Backend(format!("judging the masks: {err}")))?
        }
        _ => None,
    };
    let record = CheckRecord {
        task: task.clone(),
        version,
        token,
        own,
        pages,
        notifications,
        alert_states,
        next_check_at: next_after(&task, recurrence, now_millis(), recheck, confirm_after),
        learned,
        learned_order: order,
        sampled: sampling.is_some(),
        noise_notice: covered.or(state_notice).or(sampled_notice),
    };
    groups.record(record).await
}

/// The value of `prepared` fetched `sampling.samples` more times (more when they differ from
/// the check's value `first`: [`noise::wants_more_samples`]), `sampling.spacing` apart, within
/// `sampling.budget` (pauses included): the successful ones of at most `max_value_bytes` bytes.
/// A fetch that fails is skipped, and counts toward [`noise::QUICK_SAMPLES_NOISY`] fetches at
/// most; one still running when the budget ends is dropped, and no pause starts that would end
/// past it. Each fetch holds room on its host and a sampler permit while it runs
/// ([`SampleSlots`]).
async fn quick_samples(
    checker: &dyn Checker,
    (prepared, slots): (&PreparedMonitor, &SampleSlots),
    first: &str,
    sampling: Sampling,
    max_value_bytes: usize,
) -> Vec<String> {
    let deadline = tokio::time::Instant::now() + sampling.budget;
    let mut values: Vec<String> = Vec::with_capacity(noise::QUICK_SAMPLES_NOISY);
    // A failed fetch counts as taken, so a page that keeps failing is not fetched forever.
    let mut taken = 0;
    loop {
        let seen: Vec<&str> = values.iter().map(String::as_str).collect();
        let more = noise::wants_more_samples(sampling.samples, first, &seen);
        if !more || taken >= sampling.samples.max(noise::QUICK_SAMPLES_NOISY) {
            break;
        }
        taken += 1;
        if tokio::time::Instant::now() + sampling.spacing >= deadline {
            break;
        }
        tokio::time::sleep(sampling.spacing).await;
        // Room and a permit for the fetch alone: the pauses hold nothing.
        let fetch = async {
            let _on_host = match slots.slot_given_back.load(Ordering::Acquire) {
                true => Some(
                    slots
                        .hosts
                        .enter_with_room(slots.host, slots.per_host)
                        .await,
                ),
                false => None,
            };
            let _permit = slots.samplers.acquire().await;
            checker.check_prepared(prepared).await
        };
        let Ok(outcome) = tokio::time::timeout_at(deadline, fetch).await else {
            break;
        };
        if let (None, Some(raw)) = (outcome.data.error, outcome.data.raw)
            && raw.len() <= max_value_bytes
        {
            values.push(raw);
        }
    }
    values
}

/// Turns a value over `max` bytes into a failed check saying so, before the alerts see it: a
/// value cut short would read as a change, and storing it whole is what the limit prevents.
fn within_value_limit(data: &mut ClientData, max: usize) {
    if let Some(raw) = &data.raw
        && raw.len() > max
    {
        let error = format!(
            "the value is {} bytes, above the limit of {max} bytes",
            raw.len()
        );
        *data = ClientData::failure(data.last_check_timestamp, error);
    }
}

/// Turns each changed value that the owner's history has no room for into a failed check
/// saying so, before the alerts see it: the Error alert then fires once, instead of the change
/// being raised again at every check while its value is never kept. A value equal to the last
/// one kept costs nothing; a changed one is counted at its full length (stored compressed, it
/// may take less). The store checks again, exactly, as it writes.
async fn within_stored_bytes(
    store: &dyn ScheduleStore,
    (task, claimed): (&str, Option<StorageUse>),
    states: &AlertStates,
    own: &mut ClientData,
    pages: &mut [PageResult],
) -> Result<(), StoreError> {
    let size = |data: &ClientData| data.raw.as_ref().map_or(0, |raw| raw.len() as u64);
    let total = size(own) + pages.iter().map(|(_, _, data)| size(data)).sum::<u64>();
    // As the claim read it, when it did: the store checks again, exactly, as it writes.
    let mut usage = match claimed {
        Some(usage) => usage,
        None => store.stored_bytes(task).await?,
    };
    if usage.refuses(total).is_none() {
        return Ok(());
    }
    // Near the quota: which values are new needs what was kept before.
    let loaded;
    let states = if states.own.alerts.last_check.is_some() || !states.pages.is_empty() {
        states
    } else {
        loaded = store.alert_states(task).await?;
        &loaded
    };
    let fresh = ConfirmState::default();
    let series = pages
        .iter_mut()
        .map(|(url, _, data)| (states.pages.get(url.as_str()).unwrap_or(&fresh), data))
        .chain(std::iter::once((&states.own, own)));
    for (state, data) in series {
        // The confirmed value and those waiting for confirmation are kept already.
        let kept = |raw: &String| {
            state.alerts.last_value.as_ref() == Some(raw)
                || state.pending.iter().any(|c| &c.value == raw)
        };
        if data.raw.as_ref().is_none_or(kept) {
            continue;
        }
        match usage.refuses(size(data)) {
            Some(refused) => *data = ClientData::failure(data.last_check_timestamp, refused),
            None => usage.used += size(data),
        }
    }
    Ok(())
}

/// A Portal check, page by page from the crawl's stream: the monitor's own result (the
/// engine's [`PortalFold`], keeping the pages of the `previous` list that the crawl now only
/// leaves out) and each page's.
async fn crawl(
    checker: &dyn Checker,
    prepared: &PreparedMonitor,
    previous: Option<&str>,
) -> (ClientData, Vec<PageResult>) {
    let at = chrono::Utc::now();
    let mut stream = checker.crawl_prepared(prepared);
    let mut fold = PortalFold::after(previous);
    let mut pages: Vec<PageResult> = Vec::new();
    while let Some(event) = stream.next().await {
        fold.add(&event);
        if let CrawlEvent::Page { page, .. } = event {
            pages.push((page.url, page.title, page.data));
        }
    }
    let (own, _) = fold.finish(at);
    (own, pages)
}

/// A check rendering in Chromium, counted while it lives (an aborted check too).
struct Rendering;

impl Rendering {
    fn start() -> Self {
        METRICS.browser_in_flight.fetch_add(1, Ordering::Relaxed);
        Rendering
    }
}

impl Drop for Rendering {
    fn drop(&mut self) {
        METRICS.browser_in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What a check's alerts decided ([`raise`]).
struct Decided {
    /// The notifications to raise, each with the value its change is shown against.
    raised: Vec<(Raised, Option<String>)>,
    /// The alert states that changed, for [`CheckRecord::alert_states`].
    states: Vec<(Option<String>, Option<ConfirmState>)>,
    /// Whether the monitor is checked again soon to confirm a change or a failure.
    recheck: bool,
    /// Noise masks the monitor's own series learned (a Portal's pages keep theirs in their own
    /// states, [`Confirmation::keep_learned`]: a mask learned on one page would mask every page).
    learned: Vec<NoiseMask>,
}

/// The notifications a check raises once confirmed ([`wachet::alerts::confirm`]), for the
/// monitor's own result and each crawled page's, with the states to keep.
fn raise(
    states: &AlertStates,
    monitor: &Monitor,
    alerts: &[Alert],
    (data, page_clock): (&ClientData, Option<chrono::DateTime<chrono::Utc>>),
    pages: &[PageResult],
    confirm_after: Duration,
) -> Decided {
    // A failure lasts when the early check `confirm_after` later still fails, not when a
    // monitor checked every second failed twice in a row.
    // Only a one-page check knows the server's clock, and only a Portal check has pages: the
    // clock never reaches a crawled page's decision.
    let policy = Confirmation {
        failing_for: confirm_after,
        page_clock,
        ..Confirmation::of(monitor)
    };
    let subject = match monitor.job_type {
        ClientJobType::Portal => Subject::Portal,
        ClientJobType::SinglePage => Subject::SinglePage,
    };
    let mut decided = Decided {
        raised: Vec::new(),
        states: Vec::new(),
        recheck: false,
        learned: Vec::new(),
    };
    let page_policy = Confirmation {
        keep_learned: true,
        ..policy.clone()
    };
    let mut take = |state: &ConfirmState, data: &ClientData, subject, page: Option<&String>| {
        let at = data.last_check_timestamp;
        let policy = if page.is_some() {
            &page_policy
        } else {
            &policy
        };
        let decision = decide(state, Check::from(data), at, alerts, subject, policy);
        let previous = &state.alerts.last_value;
        decided
            .raised
            .extend(decision.raised.into_iter().map(|r| (r, previous.clone())));
        decided.recheck |= decision.recheck;
        if page.is_none() && subject == Subject::SinglePage {
            decided.learned.extend(decision.learned);
        }
        // A page never keeps a mask the person switched off, even learned again just now.
        let next = match page {
            Some(_) => {
                crate::store::noise::for_page(monitor, &decision.state).unwrap_or(decision.state)
            }
            None => decision.state,
        };
        if next != *state {
            decided.states.push((page.cloned(), Some(next)));
        }
    };
    take(&states.own, data, subject, None);
    let fresh = ConfirmState::default();
    for (url, _, data) in pages {
        let state = states.pages.get(url).unwrap_or(&fresh);
        // A mask the person switched off on the monitor is dropped before it can apply.
        let kept = crate::store::noise::for_page(monitor, state);
        take(
            kept.as_ref().unwrap_or(state),
            data,
            Subject::PortalPage { url },
            Some(url),
        );
    }
    decided
}

#[cfg(test)]
mod tests {
    use super::*;
    use wachet::testing::{FixtureServer, Reply};

    #[test]
    fn a_pool_claims_at_once_after_a_full_claim_and_otherwise_waits_a_gap_or_a_poll() {
        let freed = AtomicBool::new(false);
        let mut turn = Turn::new();
        let start = tokio::time::Instant::now();
        assert_eq!(turn.ready(&freed, start), Ok(()), "the first claim");
        // Slots were left free, so nothing waited: a freed slot is looked at a gap later, and
        // without one the next look is the poll.
        assert_eq!(turn.ready(&freed, start + GAP / 2), Err(start + POLL));
        freed.store(true, Ordering::Release);
        assert_eq!(turn.ready(&freed, start + GAP / 2), Err(start + GAP));
        let then = start + GAP;
        assert_eq!(turn.ready(&freed, then), Ok(()));
        assert!(!freed.load(Ordering::Acquire), "the turn takes the wake-up");
        assert_eq!(turn.ready(&freed, then + POLL), Ok(()), "the poll");
        // A claim that filled every slot: more may be due, so the next one does not wait.
        turn.full = true;
        let now = then + POLL + Duration::from_millis(1);
        assert_eq!(turn.ready(&freed, now), Ok(()));
        assert_eq!(turn.ready(&freed, now), Ok(()));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_portal_keeps_pages_now_left_out_and_names_pages_by_title() {
        let server = FixtureServer::builder()
            .page(
                "/",
                "<title>Home</title><a href=/a.html>a</a><a href=/doc.pdf>d</a>",
            )
            .page("/a.html", "<title>Page A</title><p>A</p>")
            .reply(
                "/doc.pdf",
                Reply::new(200)
                    .header("content-type", "application/pdf")
                    .body("%PDF-1.4"),
            )
            .start()
            .await
            .unwrap();
        let engine = wachet::Engine::builder()
            .allow_private_networks(true)
            .build()
            .unwrap();
        let mut monitor = Monitor::new(server.url("/"));
        monitor.job_type = ClientJobType::Portal;
        monitor.crawling_depth = Some(1);
        let prepared = engine.prepare(&monitor).unwrap();
        let (home, a, pdf) = (
            server.url("/"),
            server.url("/a.html"),
            server.url("/doc.pdf"),
        );

        // First listed with the PDF (binary content was crawled then), now left out: kept.
        let previous = format!("{home}\n{a}\n{pdf}");
        let (own, pages) = crawl(&engine, &prepared, Some(&previous)).await;
        assert_eq!(own.raw.as_deref(), Some(previous.as_str()));
        let names: Vec<(&str, Option<&str>)> = pages
            .iter()
            .map(|(url, name, _)| (url.as_str(), name.as_deref()))
            .collect();
        assert!(names.contains(&(home.as_str(), Some("Home"))), "{names:?}");
        assert!(names.contains(&(a.as_str(), Some("Page A"))), "{names:?}");
        assert_eq!(pages.len(), 2, "the PDF has no page entry of its own");

        // Never listed before: it does not appear.
        let (own, _) = crawl(&engine, &prepared, None).await;
        assert_eq!(own.raw, Some(format!("{home}\n{a}")));
    }
}
