//! Recording one check: from the fetch to the record stored ([`check_and_store`]): the value
//! and storage limits, the quick samples of a new monitor and what they teach, the alerts
//! judged with it, and the record written with the checks that end with it ([`super::group`]),
//! with the monitor's next check ([`next_after`]).

use super::check::{Fetched, Job, Parts, Rendering, fetch, states_before};
use super::judge::{self, Checked};
use super::limits::{within_stored_bytes, within_value_limit};
use super::{samples, slots};
use crate::metrics::METRICS;
use crate::store::{CheckRecord, Recorded, StoreError, now_millis};
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::sync::oneshot;
use wachet::alerts::noise;
use wachet::model::{ClientData, ClientJobType};

/// Checks the job's monitor and stores the check with what its alerts raised, the alert states
/// after it and the noise masks it learned, in one transaction with the checks that end with
/// it ([`super::group`]). With sampling (a SinglePage monitor's first check after it was
/// created or its selection changed) a successful check also fetches the value a few more
/// times, learns the noise from what differs ([`wachet::alerts::noise::learn`]) and judges the
/// check with it; the samples are not history entries. Before the samples the monitor is
/// parked ([`super::samples::Sampling::park`]) and `parked` told, so the caller gives back the
/// claim and the slot for their pauses.
pub(super) async fn check_and_store(
    parts: &Parts,
    job: Job,
    parked: oneshot::Sender<()>,
) -> Result<Recorded, StoreError> {
    let settings = &parts.settings;
    let alerts = job.monitor.alerts.clone().unwrap_or_default();
    let portal = job.monitor.job_type == ClientJobType::Portal;
    let states = states_before(parts.store.as_ref(), &job, alerts.is_empty()).await?;
    let started = std::time::Instant::now();
    let rendering = job.monitor.dynamic_content.then(Rendering::start);
    let previous = states.own.alerts.last_value.as_deref();
    let (prepared, fetched) = fetch(parts, &job, previous.filter(|_| portal)).await;
    let Fetched {
        mut own,
        mut pages,
        page_clock,
    } = fetched;
    within_value_limit(&mut own, settings.max_value_bytes);
    // Sampled only once a check succeeds: a failed first check leaves it to the next one.
    let sampling = job
        .sampling
        .filter(|_| !portal && own.error.is_none() && own.raw.is_some());
    let samples = match (&prepared, sampling, own.raw.as_deref()) {
        (Ok(prepared), Some(sampling), Some(first)) => {
            let of = samples::Of {
                prepared,
                first,
                sampling,
            };
            samples::take(parts, &job, parked, of).await
        }
        _ => Vec::new(),
    };
    drop(rendering);
    for (_, _, data) in &mut pages {
        within_value_limit(data, settings.max_value_bytes);
    }
    let (task, store) = (job.task.as_str(), parts.store.as_ref());
    within_stored_bytes(store, &job, &states, &mut own, &mut pages).await?;
    count(task, &own, started.elapsed());
    let studied = samples::study(&job.monitor, own.raw.clone(), &samples).await?;
    let mut states = states;
    if studied.notice.as_deref() == Some(noise::UNSTABLE) {
        // Samples seconds apart with no part in common count as that many checks that differed
        // everywhere, so the monitor says so from now on instead of once its checks have.
        states.own.noise.unstable |= 0b111;
    }
    // This check is judged with what its samples taught, as the next ones will be.
    let order = studied
        .order
        .filter(|_| job.monitor.compare_lines.is_none());
    let taught = samples::taught(&job.monitor, &studied.masks, order);
    let monitor = taught.as_ref().unwrap_or(&job.monitor);
    let checked = Checked {
        states,
        monitor,
        alerts,
        own: &own,
        page_clock,
        pages: &pages,
        samples,
    };
    let judged = judge::judge(checked, settings.confirm_after).await?;
    let mut learned = studied.masks;
    learned.extend(judged.learned);
    let covered = judge::coverage(monitor, own.raw.as_ref(), portal, &learned).await?;
    let (recurrence, confirm_after) = (job.recurrence, settings.confirm_after);
    let record = CheckRecord {
        task: job.task.clone(),
        version: job.version,
        token: job.token,
        own,
        pages,
        notifications: judged.notifications,
        alert_states: judged.states,
        next_check_at: next_after(
            task,
            recurrence,
            now_millis(),
            judged.recheck,
            confirm_after,
        ),
        learned,
        learned_order: order,
        sampled: sampling.is_some(),
        noise_notice: covered.or(judged.notice).or(studied.notice),
    };
    parts.groups.record(record).await
}

/// Counts a check that took `took` among those that succeeded or failed.
fn count(task: &str, own: &ClientData, took: Duration) {
    METRICS.check_duration.observe(took);
    let outcome = match own.error {
        None => &METRICS.checks_ok,
        Some(_) => &METRICS.checks_failed,
    };
    outcome.fetch_add(1, Ordering::Relaxed);
    tracing::debug!(task = %task, failed = own.error.is_some(), "checked");
}

/// The next check after one that ended at `now`: the monitor's next slot, but at least half a
/// period away, so a first check (made at once after an edit) is not followed by another a
/// moment later.
pub(super) fn next_check(
    task: &str,
    recurrence: i32,
    now: crate::store::Millis,
) -> crate::store::Millis {
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
