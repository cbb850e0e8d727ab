//! The claim loop: the slots of each kind of check ([`Pool`]), when each pool claims due
//! monitors from the store ([`Turn`]), and the start of each claimed check in a slot of its
//! pool, counted on its host ([`super::hosts`]) and held by the worker ([`crate::worker`]).
//! What a check then does is [`super::check`]'s. When the scheduler stops, the loop waits for
//! every check it started.

use super::check::{Held, Parts, run_check};
use super::prepared::{self, PreparedCache};
use super::samples::SampleSlots;
use super::{ScheduleSettings, group, hosts};
use crate::metrics::METRICS;
use crate::schedule::events::CheckEvents;
use crate::store::{Claim, DueCheck, ScheduleStore, now_millis};
use crate::tabs::BrowserTabs;
use crate::worker::Worker;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::{Notify, Semaphore, watch};
use wachet::Checker;

/// How often due monitors are looked for when no check of a pool ends (one that ends has its
/// pool look again: [`GAP`]).
const POLL: Duration = Duration::from_millis(250);
/// The least time between two claims of a pool whose last claim left slots free: nothing was
/// waiting then, so the monitors falling due since are taken together. Without it every check
/// that ended claimed again, and at 1,667 checks a second each claim found one or two monitors
/// for a full statement in the writer's lock. A claim that filled every slot is followed as
/// soon as a slot is free, so a backlog never waits for it.
const GAP: Duration = Duration::from_millis(10);

/// Runs the scheduler until `stop` turns true (or its sender is gone), then returns once the
/// checks in flight have ended and stored what they found; a caller that cannot wait that long
/// drops the future, and the checks still running are left to their lease. With
/// `checks_in_flight` 0 this process runs no checks (an API-only process beside others that
/// do). Each stored check is announced on `events`. Each claim is held by `worker`, whose beats
/// renew its lease while the check runs. Each page a check renders takes one of its owner's
/// `tabs`.
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
    let mut turns: Vec<Turn> = pools.iter().map(|_| Turn::new()).collect();
    let claims = Claims {
        wake: Arc::new(Notify::new()),
        hosts: Arc::new(hosts::Hosts::default()),
        per_host: checker.host_concurrency(),
        worker,
        parts: Arc::new(Parts {
            groups: group::Groups::start(store.clone()),
            store,
            checker,
            cache: Arc::new(PreparedCache::new(prepared::DEFAULT_CAPACITY)),
            tabs,
            settings,
            events,
        }),
    };
    loop {
        let mut more = false;
        let mut next = tokio::time::Instant::now() + POLL;
        for (pool, turn) in pools.iter().zip(&mut turns) {
            match claims.look(pool, turn).await {
                Look::Skipped => {}
                Look::Later(at) => next = next.min(at),
                Look::Claimed { full } => {
                    turn.full = full;
                    more |= full;
                }
            }
        }
        if more {
            continue;
        }
        tokio::select! {
            _ = tokio::time::sleep_until(next) => {}
            _ = claims.wake.notified() => {}
            _ = stop.wait_for(|stop| *stop) => break,
        }
    }
    for pool in &pools {
        pool.drained().await;
    }
}

/// What the claim loop claims with: what the checks share, the count of checks per host, and
/// the worker that holds the claims.
struct Claims {
    /// Told when a check gives its slot back.
    wake: Arc<Notify>,
    hosts: Arc<hosts::Hosts>,
    /// The engine's host slots ([`Checker::host_concurrency`]).
    per_host: usize,
    worker: Arc<Worker>,
    parts: Arc<Parts>,
}

/// What one look at a pool did.
enum Look {
    /// Nothing: no slot free, no beat yet, or the claim failed.
    Skipped,
    /// Not its turn: it is looked at again then.
    Later(tokio::time::Instant),
    /// Claimed; `full` when it filled every free slot (or stopped at a host's limit), so more
    /// may be due.
    Claimed { full: bool },
}

impl Claims {
    /// Claims what is due for `pool`'s free slots, when it is the pool's turn, and starts each.
    async fn look(&self, pool: &Pool, turn: &mut Turn) -> Look {
        let free = pool.permits.available_permits();
        if free == 0 {
            return Look::Skipped;
        }
        if let Err(at) = turn.ready(&pool.freed, tokio::time::Instant::now()) {
            return Look::Later(at);
        }
        let buckets = self.worker.buckets();
        if buckets.is_empty() {
            // Before the first beat, or when beats fail: every host may be another's.
            return Look::Skipped;
        }
        let now = now_millis();
        let until = now + self.worker.lease().as_millis() as i64;
        let claim = Claim {
            limit: free as u32,
            share: pool.share as u32,
            browser: pool.browser,
            locations: self.parts.settings.locations,
            buckets,
            hosts: self.hosts.busy(self.per_host),
        };
        let claiming = std::time::Instant::now();
        let due = self.parts.store.claim_due(now, until, &claim).await;
        METRICS.claim_duration.observe(claiming.elapsed());
        let due = match due {
            Ok(due) => due,
            Err(err) => {
                if !crate::store::health::outage(&err, "claiming due monitors") {
                    tracing::error!(%err, "cannot claim due monitors");
                }
                return Look::Skipped;
            }
        };
        // More may be due: look again at once instead of after the poll. So also when a
        // host reached its limit: the claim took no more of it, and other hosts' monitors
        // due after its backlog may have been left for the next claim.
        let mut full = due.len() == free;
        let claimed = due.len();
        for check in due {
            if let Some(host) = self.start(pool, check).await {
                full |= claimed < free && self.hosts.full(host, self.per_host);
            }
        }
        Look::Claimed { full }
    }

    /// Starts `check` in a slot of `pool`, counted on its host; its host, or `None` when no
    /// slot was free and the monitor was given back.
    async fn start(&self, pool: &Pool, check: DueCheck) -> Option<i64> {
        let Ok(permit) = pool.permits.clone().try_acquire_owned() else {
            // Claimed beyond the free slots (cannot happen while this loop alone
            // takes them): give the monitor back, due as it was.
            if let Some(task) = &check.monitor.id {
                let _ = self
                    .parts
                    .store
                    .finish_check(task, check.version, check.token, check.due_at)
                    .await;
            }
            return None;
        };
        let host = check.host;
        let slot = Slot {
            _permit: permit,
            _on_host: self.hosts.enter(host),
        };
        let finished = Freed {
            pool: pool.freed.clone(),
            wake: self.wake.clone(),
        };
        let holding = check
            .monitor
            .id
            .as_deref()
            .map(|task| self.worker.hold_check(task, check.token));
        let samplers = SampleSlots {
            samplers: pool.samplers.clone(),
            hosts: self.hosts.clone(),
            host,
            per_host: self.per_host,
            slot_given_back: Arc::new(AtomicBool::new(false)),
        };
        let tails = pool.tails.clone();
        let lease = self.worker.lease();
        let parts = self.parts.clone();
        tokio::spawn(async move {
            let Some(holding) = holding else { return };
            let held = Held {
                holding,
                slot,
                tails,
                finished: finished.clone(),
                lease,
                samplers,
            };
            run_check(&parts, check, held).await;
            finished.tell();
        });
        Some(host)
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
pub(super) struct Freed {
    pool: Arc<AtomicBool>,
    wake: Arc<Notify>,
}

impl Freed {
    pub(super) fn tell(&self) {
        self.pool.store(true, Ordering::Release);
        self.wake.notify_one();
    }
}

/// A check slot of a [`Pool`], counted on the check's host ([`hosts`]) while it is held.
pub(super) struct Slot {
    _permit: tokio::sync::OwnedSemaphorePermit,
    _on_host: hosts::OnHost,
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
