//! The scheduler: checks every active monitor on its schedule through the engine's [`Checker`]
//! and stores what each check found. Its state lives in the database ([`Store::claim_due`]):
//! a monitor is claimed under a lease when due, checked, its results appended to its history
//! (and each crawled page's), and its next check set to its next slot ([`slots`]). A process
//! that dies mid-check loses nothing: the lease runs out and the check runs again.
//!
//! Concurrency is bounded: at most `checks_in_flight` checks at once, of which at most
//! `browser_checks_in_flight` render in Chromium (`dynamicContent`).

pub mod slots;

use crate::store::{DueCheck, Series, Store, StoreError, now_millis};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Semaphore, watch};
use wachet::Checker;
use wachet::model::ClientData;

/// How often due monitors are looked for.
const POLL: Duration = Duration::from_millis(250);

/// Settings of the scheduler.
#[derive(Debug, Clone)]
pub struct ScheduleSettings {
    /// Checks running at once.
    pub checks_in_flight: usize,
    /// Checks rendering in Chromium at once.
    pub browser_checks_in_flight: usize,
    /// How long a claimed check holds its monitor before another process may take it over.
    pub lease: Duration,
}

impl Default for ScheduleSettings {
    fn default() -> Self {
        ScheduleSettings {
            checks_in_flight: 32,
            browser_checks_in_flight: 4,
            lease: Duration::from_secs(15 * 60),
        }
    }
}

/// Runs the scheduler until `stop` turns true. Checks in flight then are left to their lease.
/// With `checks_in_flight` 0 this process runs no checks (an API-only process beside others
/// that do).
pub async fn run(
    store: Arc<dyn Store>,
    checker: Arc<dyn Checker>,
    settings: ScheduleSettings,
    mut stop: watch::Receiver<bool>,
) {
    if settings.checks_in_flight == 0 {
        return;
    }
    let checks = Arc::new(Semaphore::new(settings.checks_in_flight));
    let browser = Arc::new(Semaphore::new(settings.browser_checks_in_flight.max(1)));
    let lease = settings.lease.as_millis() as i64;
    loop {
        let free = checks.available_permits();
        if free > 0 {
            let now = now_millis();
            match store.claim_due(now, now + lease, free as u32).await {
                Ok(due) => {
                    for check in due {
                        let Ok(permit) = checks.clone().try_acquire_owned() else {
                            break;
                        };
                        let (store, checker, browser) =
                            (store.clone(), checker.clone(), browser.clone());
                        tokio::spawn(async move {
                            let _browser = match check.monitor.dynamic_content {
                                true => browser.acquire_owned().await.ok(),
                                false => None,
                            };
                            run_check(store.as_ref(), checker.as_ref(), check).await;
                            drop(permit);
                        });
                    }
                }
                Err(err) => tracing::error!(%err, "cannot claim due monitors"),
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(POLL) => {}
            _ = stop.wait_for(|stop| *stop) => return,
        }
    }
}

/// One check of a claimed monitor: check, store, schedule the next.
async fn run_check(store: &dyn Store, checker: &dyn Checker, check: DueCheck) {
    let monitor = &check.monitor;
    let Some(task) = monitor.id.clone() else {
        return;
    };
    let result = match checker.check(monitor).await {
        Ok(outcome) => record(store, &task, outcome).await,
        // The definition was valid when stored; what changed since (a proxy location removed
        // from the settings) is reported like any failed check.
        Err(invalid) => {
            let data =
                ClientData::failure(chrono::Utc::now(), format!("invalid monitor: {invalid}"));
            store
                .append_entry(&Series::Task(task.clone()), &data)
                .await
                .map(drop)
        }
    };
    match result {
        Ok(()) | Err(StoreError::NotFound) => {}
        Err(err) => tracing::error!(%err, task = %task, "cannot store a check"),
    }
    let recurrence = monitor.recurrence_in_seconds.unwrap_or(0);
    let next = slots::next_slot(&task, recurrence, now_millis());
    if let Err(err) = store.finish_check(&task, check.version, next).await {
        tracing::error!(%err, task = %task, "cannot schedule the next check");
    }
}

/// Appends a check's results: the monitor's own entry and, for a Portal check, one entry per
/// crawled page.
async fn record(
    store: &dyn Store,
    task: &str,
    outcome: wachet::CheckOutcome,
) -> Result<(), StoreError> {
    if let Some(crawl) = &outcome.crawl {
        for page in &crawl.pages {
            let series = Series::Page {
                task_id: task.to_string(),
                url: page.url.clone(),
                name: None,
            };
            store.append_entry(&series, &page.data).await?;
        }
    }
    store
        .append_entry(&Series::Task(task.to_string()), &outcome.data)
        .await
        .map(drop)
}
