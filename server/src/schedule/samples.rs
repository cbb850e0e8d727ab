//! A new monitor's quick samples: its first check fetches the value a few more times, seconds
//! apart ([`Sampling`]), each fetch holding room on its host and a sampler permit while it runs
//! ([`SampleSlots`]), and learns from what differs between them where the page's noise lies
//! ([`study`]), so the check is judged with it and the next checks start from it. Before the
//! samples the monitor is parked ([`take`]), so their pauses hold neither its claim nor its
//! slot.

use super::check::{Job, Parts};
use super::hosts;
use crate::store::{StoreError, now_millis};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::{Semaphore, oneshot};
use wachet::alerts::compare::Comparator;
use wachet::alerts::noise;
use wachet::model::{LineOrder, NoiseMask};
use wachet::{Checker, Monitor, PreparedMonitor};

/// Quick samples a check takes to learn the monitor's noise ([`ScheduleSettings::noise_samples`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct Sampling {
    pub(super) samples: usize,
    pub(super) spacing: Duration,
    pub(super) budget: Duration,
    /// How long the monitor is parked (not due, not leased) while they are taken: past their
    /// budget by a lease, so only a check lost with its process lets it be due again.
    pub(super) park: Duration,
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
pub(super) struct SampleSlots {
    pub(super) samplers: Arc<Semaphore>,
    pub(super) hosts: Arc<hosts::Hosts>,
    pub(super) host: i64,
    pub(super) per_host: usize,
    /// Set once the check has given its slot back.
    pub(super) slot_given_back: Arc<AtomicBool>,
}

/// Parks the job's monitor for its samples (its lease freed, due again only past their budget
/// and a lease) and tells the check so, then takes the samples of `first`. The check is
/// recorded after its samples, in one record as ever (a crash loses nothing stored: the parked
/// monitor is due again once its park ends, and samples anew), but it waits without its lease:
/// a new monitor's seconds of pauses would otherwise hold its slot and its owner's share, and
/// 100,000 monitors created at once would take hours to get their first checks.
pub(super) async fn take(
    parts: &Parts,
    job: &Job,
    parked: oneshot::Sender<()>,
    of: Of<'_>,
) -> Vec<String> {
    let until = now_millis()
        .saturating_add(i64::try_from(of.sampling.park.as_millis()).unwrap_or(i64::MAX));
    match parts
        .store
        .finish_check(&job.task, job.version, job.token, until)
        .await
    {
        Ok(()) => {
            let _ = parked.send(());
        }
        Err(err) => {
            tracing::warn!(%err, task = %job.task, "cannot park the monitor for its samples; they hold its slot");
        }
    }
    let max_value_bytes = parts.settings.max_value_bytes;
    quick_samples(parts.checker.as_ref(), &job.samplers, of, max_value_bytes).await
}

/// What samples are taken of: the monitor as compiled, the check's value, and how.
pub(super) struct Of<'a> {
    pub(super) prepared: &'a PreparedMonitor,
    pub(super) first: &'a str,
    pub(super) sampling: Sampling,
}

/// What the samples taught ([`study`]).
pub(super) struct Studied {
    /// The noise masks learned.
    pub(super) masks: Vec<NoiseMask>,
    /// What the monitor says of its noise from now on.
    pub(super) notice: Option<String>,
    /// The order of lines learned.
    pub(super) order: Option<LineOrder>,
}

/// What the check's value `first` and its `samples` teach of the monitor's noise
/// ([`noise::study`], off the async threads); nothing without samples.
pub(super) async fn study(
    monitor: &Monitor,
    first: Option<String>,
    samples: &[String],
) -> Result<Studied, StoreError> {
    let nothing = Studied {
        masks: Vec::new(),
        notice: None,
        order: None,
    };
    let Some(first) = first.filter(|_| !samples.is_empty()) else {
        return Ok(nothing);
    };
    let comparator = Comparator::lenient(monitor);
    let samples = samples.to_vec();
    let study = tokio::task::spawn_blocking(move || {
        let values: Vec<&str> = std::iter::once(first.as_str())
            .chain(samples.iter().map(String::as_str))
            .collect();
        noise::study(&comparator, &values)
    })
    .await
    .map_err(|err| StoreError::Backend(format!("learning noise: {err}")))?;
    Ok(Studied {
        masks: study.masks,
        notice: study.notice,
        order: study.order,
    })
}

/// The monitor as the samples taught it (its masks and its line order: one learned is kept
/// only where the monitor has none of its own), or `None` when they taught nothing.
pub(super) fn taught(
    monitor: &Monitor,
    masks: &[NoiseMask],
    order: Option<LineOrder>,
) -> Option<Monitor> {
    let noise = crate::store::noise::with_learned(monitor.noise.as_deref(), masks);
    match (noise, order) {
        (None, None) => None,
        (noise, order) => Some(Monitor {
            noise: noise.or_else(|| monitor.noise.clone()),
            compare_lines: order.or(monitor.compare_lines),
            ..monitor.clone()
        }),
    }
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
    slots: &SampleSlots,
    of: Of<'_>,
    max_value_bytes: usize,
) -> Vec<String> {
    let Of {
        prepared,
        first,
        sampling,
    } = of;
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
