//! Judging a check's alerts: what the monitor's own result and each crawled page's raise once
//! confirmed ([`raise`], [`wachet::alerts::confirm`]), the notifications that tell of it and
//! the alert states kept ([`judge`]), and what the monitor's noise masks cover of its value
//! ([`coverage`]). The CPU work (diffs for the contents) runs off the async threads.

use super::portal::PageResult;
use crate::notify;
use crate::store::{AlertStates, NewNotification, StoreError};
use std::time::Duration;
use wachet::Monitor;
use wachet::alerts::compare::Comparator;
use wachet::alerts::confirm::{ConfirmState, Confirmation, decide};
use wachet::alerts::{Check, Raised, Subject, noise};
use wachet::model::{Alert, ClientData, ClientJobType, NoiseMask};

/// What a check's alerts are judged on.
pub(super) struct Checked<'a> {
    /// The alert states before the check.
    pub(super) states: AlertStates,
    /// The monitor, with what its samples taught.
    pub(super) monitor: &'a Monitor,
    pub(super) alerts: Vec<Alert>,
    pub(super) own: &'a ClientData,
    /// The server's clock, when the check knows it.
    pub(super) page_clock: Option<chrono::DateTime<chrono::Utc>>,
    pub(super) pages: &'a [PageResult],
    /// The quick samples taken, if any.
    pub(super) samples: Vec<String>,
}

/// What judging a check decided.
pub(super) struct Judged {
    pub(super) notifications: Vec<NewNotification>,
    /// The alert states that changed ([`crate::store::CheckRecord::alert_states`]).
    pub(super) states: Vec<(Option<String>, Option<ConfirmState>)>,
    /// Whether the monitor is checked again soon to confirm a change or a failure.
    pub(super) recheck: bool,
    /// Noise masks the alerts learned.
    pub(super) learned: Vec<NoiseMask>,
    /// What the monitor's own state says of its noise after the check.
    pub(super) notice: Option<String>,
}

/// Judges `checked`'s alerts. Without alerts nothing is confirmed and no state is kept, so
/// alerts added later start from the history rather than from a state this check did not
/// keep up to date.
pub(super) async fn judge(
    checked: Checked<'_>,
    confirm_after: Duration,
) -> Result<Judged, StoreError> {
    if checked.alerts.is_empty() {
        let forget = std::iter::once(None)
            .chain(checked.pages.iter().map(|(url, ..)| Some(url.clone())))
            .map(|series| (series, None))
            .collect();
        return Ok(Judged {
            notifications: Vec::new(),
            states: forget,
            recheck: false,
            learned: Vec::new(),
            notice: None,
        });
    }
    // The value the alerts confirmed last, found again with nothing waiting: deciding that
    // compares two strings, cheaper than handing it to another thread and back. Anything
    // else may build diffs for the contents, CPU work kept off the async threads.
    let states = &checked.states;
    let unchanged = checked.samples.is_empty()
        && checked.pages.is_empty()
        && states.own.pending.is_empty()
        && checked.own.raw.is_some()
        && checked.own.raw == states.own.alerts.last_value;
    let owned = Owned {
        monitor: checked.monitor.clone(),
        own: checked.own.clone(),
        pages: checked.pages.to_vec(),
        states: checked.states,
        alerts: checked.alerts,
        page_clock: checked.page_clock,
        samples: checked.samples,
    };
    let decide = move || owned.decide(confirm_after);
    match unchanged {
        true => Ok(decide()),
        false => tokio::task::spawn_blocking(decide)
            .await
            .map_err(|err| StoreError::Backend(format!("raising alerts: {err}"))),
    }
}

/// [`Checked`] owned, to be judged on another thread.
struct Owned {
    states: AlertStates,
    monitor: Monitor,
    alerts: Vec<Alert>,
    own: ClientData,
    page_clock: Option<chrono::DateTime<chrono::Utc>>,
    pages: Vec<PageResult>,
    samples: Vec<String>,
}

impl Owned {
    fn decide(self, confirm_after: Duration) -> Judged {
        let at = chrono::Utc::now();
        let mut decided = self.raise(confirm_after);
        let Owned {
            states,
            monitor,
            own,
            samples,
            ..
        } = self;
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
        let taught = crate::store::noise::with_learned(monitor.noise.as_deref(), &decided.learned)
            .map(|noise| Monitor {
                noise: Some(noise),
                ..monitor.clone()
            });
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
        Judged {
            notifications,
            states: decided.states,
            recheck: decided.recheck,
            learned: decided.learned,
            notice,
        }
    }
}

/// What the monitor's masks (its own and those `learned` now) leave of its value `raw`, when
/// that is worth telling ([`noise::coverage_notice`]); a Portal's list has none to tell.
pub(super) async fn coverage(
    monitor: &Monitor,
    raw: Option<&String>,
    portal: bool,
    learned: &[NoiseMask],
) -> Result<Option<String>, StoreError> {
    Ok(match (raw, portal) {
        (Some(value), false) if monitor.noise.is_some() || !learned.is_empty() => {
            let comparator = Comparator::lenient(monitor).with(learned);
            let value = value.clone();
            tokio::task::spawn_blocking(move || noise::coverage_notice(&comparator, &value))
                .await
                .map_err(|err| StoreError::Backend(format!("judging the masks: {err}")))?
        }
        _ => None,
    })
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

impl Owned {
    /// The notifications a check raises once confirmed ([`wachet::alerts::confirm`]), for the
    /// monitor's own result and each crawled page's, with the states to keep.
    fn raise(&self, confirm_after: Duration) -> Decided {
        let (states, monitor, alerts) = (&self.states, &self.monitor, &self.alerts[..]);
        let (data, page_clock, pages) = (&self.own, self.page_clock, &self.pages[..]);
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
                Some(_) => crate::store::noise::for_page(monitor, &decision.state)
                    .unwrap_or(decision.state),
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
}
