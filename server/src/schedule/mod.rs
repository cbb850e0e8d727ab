//! The scheduler: checks every active monitor on its schedule through the engine's
//! [`wachet::Checker`], raises its alerts ([`wachet::alerts`]) and stores what each check found
//! and raised. Its state lives in the database ([`crate::store::ScheduleStore::claim_due`]): a
//! monitor is claimed under a lease when due, checked, its results appended to its history (and
//! each crawled page's), and its next check set to its next slot ([`slots`]). A process that
//! dies mid-check loses nothing: the lease runs out and the check runs again.
//!
//! Concurrency is bounded and shared out fairly: `checks_in_flight` plain checks and
//! `browser_checks_in_flight` checks rendering in Chromium (`dynamicContent`) are each divided
//! among the users with checks due or running ([`claim`]), and each page a check renders takes
//! one of its owner's browser tabs ([`crate::tabs`]), so one user's hanging hosts delay only
//! that user's monitors; and a host gets no more checks at once than the engine's host
//! slots let through ([`hosts`]), so one slow host's thousands of monitors hold only those
//! slots and delay no other host's.
//!
//! The parts: [`claim`] (the loop that claims due monitors into slots and starts them),
//! [`check`] (one check's life under its claim, and its fetch), [`record`] (a check from its
//! fetch to its stored record, through [`limits`] on values and histories, a new monitor's
//! quick [`samples`] of its noise, and [`judge`], its alerts), [`portal`] (a Portal's pages
//! folded into its list), [`prepared`] (each monitor compiled once per version of its
//! definition) and [`group`] (checks stored together).

mod check;
mod claim;
pub mod events;
pub mod group;
pub mod hosts;
mod judge;
mod limits;
pub mod naming;
mod portal;
pub mod prepared;
mod record;
mod samples;
mod sessions;
pub mod slots;

pub use claim::run;

use std::time::Duration;

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
    /// The service's key, which opens the secret values of browser steps and seals the
    /// sessions their logins leave ([`sessions`]); without it secret steps fail and sessions
    /// are not kept.
    pub sealer: Option<std::sync::Arc<crate::secrets::Sealer>>,
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
            sealer: None,
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
