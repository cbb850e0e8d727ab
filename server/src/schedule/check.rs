//! Running one claimed check: what every check shares ([`Parts`]), what one check is
//! ([`Job`]) and holds ([`Held`]), and its life under its claim ([`run_check`]): the check runs
//! in a task of its own while the worker's beats renew its lease, gives its claim and slot back
//! early when it parks its monitor for its quick samples, and ends one of the ways an [`Ended`]
//! names; a check that stored nothing frees its monitor for its next slot. The fetch itself
//! (a page, or a Portal's crawl) is [`fetch`]; what follows it is [`super::record`]'s.

use super::claim::{Freed, Slot};
use super::naming;
use super::portal::{self, PageResult};
use super::prepared::PreparedCache;
use super::record::{check_and_store, next_check};
use super::samples::{SampleSlots, Sampling};
use super::sessions;
use super::{ScheduleSettings, group};
use crate::metrics::METRICS;
use crate::schedule::events::{CheckEvents, CheckFinished};
use crate::store::{
    AlertStates, DueCheck, Known, Millis, Recorded, ScheduleStore, StoreError, now_millis,
};
use crate::tabs::{BrowserTabs, Use};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::sync::{Semaphore, oneshot};
use wachet::model::ClientData;
use wachet::{Checker, Monitor, PreparedMonitor, TabGate};

/// Longest a check may run (a crawl of 500 slow pages included) before it is stopped.
const MAX_CHECK: Duration = Duration::from_secs(30 * 60);

/// How soon a check the database could not store (a full disk) is run again, when its next
/// slot is later: what it found is not lost for a whole period.
const RETRY_UNSTORED: Duration = Duration::from_secs(15);

/// What every check runs with: the store, the writer of groups of checks into it, the engine,
/// the prepared monitors, the users' browser tabs, the settings, and where stored checks are
/// announced.
pub(super) struct Parts {
    pub(super) store: Arc<dyn ScheduleStore>,
    pub(super) groups: group::Groups,
    pub(super) checker: Arc<dyn Checker>,
    pub(super) cache: Arc<PreparedCache>,
    /// The browser tabs each user's renders take ([`crate::tabs`]).
    pub(super) tabs: Arc<BrowserTabs>,
    pub(super) settings: ScheduleSettings,
    pub(super) events: CheckEvents,
}

/// What a running check holds: its claim (renewed by the worker's beats), its slot, and how it
/// gives both back early to take its quick samples.
pub(super) struct Held {
    pub(super) holding: crate::worker::Holding,
    pub(super) slot: Slot,
    pub(super) tails: Arc<Semaphore>,
    /// Told when the slot is given back, so the claim loop fills it.
    pub(super) finished: Freed,
    /// The worker's lease, which a check's parked monitor waits past its samples' budget.
    pub(super) lease: Duration,
    /// What its quick samples' fetches wait for.
    pub(super) samplers: SampleSlots,
}

/// One claimed check, as [`check_and_store`] runs it.
pub(super) struct Job {
    pub(super) task: String,
    /// The monitor's owner, whom its step secrets are sealed for.
    pub(super) user: String,
    pub(super) monitor: Monitor,
    /// What the claim read besides the definition.
    pub(super) known: Option<Known>,
    /// The version of the definition claimed, and the claim's token.
    pub(super) version: Millis,
    pub(super) token: i64,
    /// The monitor's recurrence, at least the server's minimum ([`effective_recurrence`]).
    pub(super) recurrence: i32,
    /// Its quick samples, when it is a new monitor's first check.
    pub(super) sampling: Option<Sampling>,
    pub(super) samplers: SampleSlots,
    /// What each page it renders enters first: its owner's tabs.
    pub(super) tabs: Option<Arc<dyn TabGate>>,
}

/// How a check ended.
enum Ended {
    /// Its record went to the store: stored, or found fenced by a newer claim.
    Recorded(Recorded),
    /// Its monitor was deleted meanwhile.
    Gone,
    /// The store refused its record.
    NotStored(StoreError),
    /// Its task failed (a panic).
    Failed(tokio::task::JoinError),
    /// Another worker took its claim over, and it was stopped.
    TakenOver,
    /// It outlasted [`MAX_CHECK`] and was stopped.
    TimedOut,
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
pub(super) async fn run_check(parts: &Arc<Parts>, check: DueCheck, held: Held) {
    let Held {
        holding,
        slot,
        tails,
        finished,
        lease,
        samplers,
    } = held;
    let Some(task) = check.monitor.id.clone() else {
        return;
    };
    let settings = &parts.settings;
    let recurrence = effective_recurrence(&check.monitor, settings);
    let (version, user) = (check.version, check.user);
    let late = now_millis().saturating_sub(check.due_at).max(0);
    METRICS
        .check_lateness
        .observe(Duration::from_millis(late as u64));
    let (parked_tx, mut parked) = oneshot::channel();
    let slot_given_back = samplers.slot_given_back.clone();
    let job = Job {
        task: task.clone(),
        user: user.clone(),
        sampling: (check.sample_noise && settings.noise_samples > 0).then_some(Sampling {
            samples: settings.noise_samples,
            spacing: settings.noise_spacing,
            budget: settings.noise_sample_budget,
            park: settings.noise_sample_budget + lease,
        }),
        // Each page the check renders (a Portal's, a quick sample's) takes one of its owner's tabs.
        tabs: check
            .monitor
            .dynamic_content
            .then(|| parts.tabs.open_lazily(&user, Use::Check) as Arc<dyn TabGate>),
        monitor: check.monitor,
        known: check.known,
        version,
        token: check.token,
        recurrence,
        samplers,
    };
    let mut inner = {
        let parts = parts.clone();
        tokio::spawn(async move { check_and_store(&parts, job, parked_tx).await })
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
    let ended = match ended {
        Ok(Some(Ok(Ok(recorded)))) => Ended::Recorded(recorded),
        Ok(Some(Ok(Err(StoreError::NotFound)))) => Ended::Gone,
        Ok(Some(Ok(Err(err)))) => Ended::NotStored(err),
        Ok(Some(Err(err))) => Ended::Failed(err),
        Ok(None) => Ended::TakenOver,
        Err(_) => Ended::TimedOut,
    };
    if matches!(ended, Ended::TakenOver | Ended::TimedOut) {
        inner.abort();
    }
    let unstored = matches!(ended, Ended::NotStored(StoreError::Unavailable(_)));
    if !told(ended, &task, user, &parts.events) {
        // Nothing of the check was stored: free the monitor for its next slot, or sooner when
        // the database could not store it.
        let now = now_millis();
        let mut next = next_check(&task, recurrence, now);
        if unstored {
            next = next.min(now + RETRY_UNSTORED.as_millis() as i64);
        }
        if let Err(err) = parts
            .store
            .finish_check(&task, version, check.token, next)
            .await
            && !crate::store::health::outage(&err, "scheduling a check")
        {
            tracing::error!(%err, task = %task, "cannot schedule the next check");
        }
    }
}

/// Announces or logs how the check of `task` ended; whether its monitor needs nothing more
/// (its record was stored, fenced, or is another worker's to store).
fn told(ended: Ended, task: &str, user: String, events: &CheckEvents) -> bool {
    match ended {
        Ended::Recorded(recorded) => {
            if recorded == Recorded::Stored {
                events.announce(CheckFinished {
                    user,
                    task: task.to_string(),
                });
            }
            if recorded == Recorded::Fenced {
                tracing::warn!(task = %task, "the check outlived its lease and another worker took it; nothing stored");
            }
            true
        }
        Ended::Gone => true,
        Ended::NotStored(err) => {
            if !crate::store::health::outage(&err, "storing a check") {
                tracing::error!(%err, task = %task, "cannot store a check");
            }
            false
        }
        Ended::Failed(err) => {
            tracing::error!(%err, task = %task, "the check failed");
            false
        }
        Ended::TakenOver => {
            // Another worker holds the monitor now and checks it; this check would store
            // nothing (its token is old), so it stopped.
            tracing::warn!(task = %task, "the check's claim was taken over; stopped");
            true
        }
        Ended::TimedOut => {
            tracing::error!(task = %task, "the check outlasted its time limit and was stopped");
            false
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

/// What the check itself found: the monitor's own result, a Portal's pages, and the server's
/// clock, which the page's own dates follow (a Portal's pages have none).
pub(super) struct Fetched {
    pub(super) own: ClientData,
    pub(super) pages: Vec<PageResult>,
    pub(super) page_clock: Option<chrono::DateTime<chrono::Utc>>,
}

/// Checks the job's monitor, compiled once per version ([`PreparedCache`]) with its renders
/// counted on its owner's tabs: a Portal is crawled after the `previous` list of its pages.
/// The monitor as compiled comes back too, for the quick samples.
pub(super) async fn fetch(
    parts: &Parts,
    job: &Job,
    previous: Option<&str>,
) -> (Result<PreparedMonitor, wachet::InvalidMonitor>, Fetched) {
    let sealer = parts.settings.sealer.as_ref();
    let opened = sessions::opened(sealer.map(|s| s.as_ref()), &job.user, &job.monitor);
    let prepared = parts
        .cache
        .get_off_thread(
            &parts.checker,
            &job.task,
            job.version,
            opened.as_ref().unwrap_or(&job.monitor),
        )
        .await
        .map(|prepared| match &job.tabs {
            Some(gate) => prepared.with_tabs(gate.clone()),
            None => prepared,
        })
        .map(|prepared| sessions::with_sessions(prepared, &parts.store, sealer, &job.task));
    let checker = parts.checker.as_ref();
    let portal = job.monitor.job_type == wachet::model::ClientJobType::Portal;
    let fetched = match &prepared {
        Ok(prepared) if portal => {
            let (own, pages) = portal::crawl(checker, prepared, previous).await;
            Fetched {
                own,
                pages,
                page_clock: None,
            }
        }
        Ok(prepared) => {
            let outcome = checker.check_prepared(prepared).await;
            naming::name_after_page(parts.store.as_ref(), &job.monitor, outcome.title.as_deref())
                .await;
            Fetched {
                own: outcome.data,
                pages: Vec::new(),
                page_clock: outcome.server_date,
            }
        }
        // The definition was valid when stored; what changed since (a proxy location removed
        // from the settings) is reported like any failed check.
        Err(invalid) => Fetched {
            own: ClientData::failure(chrono::Utc::now(), format!("invalid monitor: {invalid}")),
            pages: Vec::new(),
            page_clock: None,
        },
    };
    (prepared, fetched)
}

/// What the alerts know from before: the history as it is before this check is stored. A
/// Portal's previous list of pages is needed to keep pages now only left out in it. The claim
/// read the state a SinglePage monitor's last check stored, the usual case.
pub(super) async fn states_before(
    store: &dyn ScheduleStore,
    job: &Job,
    alerts_empty: bool,
) -> Result<AlertStates, StoreError> {
    let portal = job.monitor.job_type == wachet::model::ClientJobType::Portal;
    let claimed_state = job.known.as_ref().and_then(|k| k.own_state.clone());
    Ok(match (alerts_empty && !portal, claimed_state) {
        (true, _) => AlertStates::default(),
        (false, Some(own)) if !portal => AlertStates {
            own,
            ..AlertStates::default()
        },
        _ => store.alert_states(&job.task).await?,
    })
}

/// A check rendering in Chromium, counted while it lives (an aborted check too).
pub(super) struct Rendering;

impl Rendering {
    pub(super) fn start() -> Self {
        METRICS.browser_in_flight.fetch_add(1, Ordering::Relaxed);
        Rendering
    }
}

impl Drop for Rendering {
    fn drop(&mut self) {
        METRICS.browser_in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}
