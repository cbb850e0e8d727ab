//! Confirmation: which notifications a check raises once changes and failures must last.
//!
//! [`evaluate`](super::evaluate) judges one check against the previous one; noise (a value
//! shown for one request, a stale replica, one timeout) then raises like a real change. This
//! module owns the decision on top of it: [`decide`] takes what is known from before (a
//! [`ConfirmState`]), the check that just ran and when, the monitor's alerts and its
//! [`Confirmation`] policy, and returns what to raise, whether to check again soon and the
//! state to keep. It does no I/O, reads no clock and never blocks; the caller schedules the
//! early check ([`Decision::recheck`]) and keeps the state (a service stores it beside the
//! check, so a restart between a changed check and its confirmation still confirms).
//!
//! # Changes
//!
//! The value the alerts compare with is the last *confirmed* value. A check whose value has
//! the same comparison key ([`crate::normalize`]) as it raises no value alert. A check whose
//! key differs is a candidate: nothing raises yet and [`Decision::recheck`] asks for a check a
//! few seconds later. When that check shows the candidate again (same key), the change is
//! confirmed: NotEq and the content alerts are judged between the confirmed value and the new
//! one (as [`evaluate`](super::evaluate) judges them), each notification carries the time the
//! candidate was first seen ([`Raised::first_seen`]), and the new value becomes the confirmed
//! one. When it shows the confirmed value again (a revert, A → B → A), nothing raises. When it
//! shows a third value, that one becomes the candidate and a third check decides: a value seen
//! twice in a row wins; a value that is neither the candidate nor the confirmed one means the
//! page never came back in three checks, and the change raises with that last value (a page
//! that changes on every check must not keep a real change from its owner for ever: until its
//! noise is masked, it raises at most once every third check instead of on every check, and once
//! learning finds that no part of it stays the same ([`LearnState::is_unstable`]), its changes
//! are recorded without raising). So at
//! most two early checks follow a regular one, and a flip-flop between two values (or a value
//! shown for one request) raises nothing. A failed check in between is skipped: it neither
//! confirms nor drops a candidate. A check while a candidate waits is the early check asked
//! for, seconds after the one before: a span showing a third text on it is noise
//! ([`LearnState::observe_early`]).
//!
//! # Flapping
//!
//! Some pages alternate between values that all show the same content: an A/B test's
//! templates, a stale replica answering some requests with a version from a few requests ago.
//! The values that *lasted* lately (the baseline, every confirmed change, values a new
//! monitor's quick samples showed: [`ConfirmState::remember`]) are its variants, kept as
//! hashes for [`variants::WINDOW`] (16) successful checks after each was last seen
//! ([`variants`]). A check showing a variant seen within the window is a flip: the confirmed
//! value switches to it silently, without an early check. A check showing a new value that
//! differs from a variant of the content before the last raised change by exactly that change
//! (the same words removed and added) is that change seen through another template: silent
//! too. Any other new value is a candidate as above. A flip still teaches: the spans it moves
//! count for learning ([`LearnState::observe_flip`]), so an ad whose wordings each lasted once
//! is learned as it keeps flipping among them. So
//!
//! - an A/B page raises nothing on its flips, and a real change raises once (its other
//!   template following silently), its revert once more;
//! - a stale replica serving the old value for a few checks after a change raises nothing:
//!   a value the masks and lines take for a flip switches silently, and one whose numbers,
//!   dates or order differ from the confirmed value ("last edited 1 January" back to "31
//!   December") must last [`STALE_CONFIRMATIONS`] checks more than a change before it raises,
//!   saying that the page shows its older content again (a lagging replica answers a run of a
//!   few requests; a real revert lasts);
//! - a revert to a value that was last seen more than 16 checks ago (the page was stable
//!   since) is a change and raises as any other;
//! - a value seen once and gone again is no variant: a real change whose confirming check met
//!   a stale replica is a candidate again when it comes back, and raises once it lasts.
//!
//! A page whose other template never showed before its first lasting appearance raises once
//! for it (nothing tells that first appearance from a real change); the quick samples of a new
//! monitor make that unlikely.
//!
//! The first value of a monitor is its baseline: confirmed at once, raising nothing (after
//! failed first checks, the content conditions true of it raise, as
//! [`evaluate`](super::evaluate) decides).
//!
//! # Learned noise
//!
//! A check teaches noise masks ([`Decision::learned`], rules in [`super::noise`]); when they
//! explain the whole difference, it raises nothing. So does a difference, through the masks, only
//! in lines proven to come and go (a promoted listing seen to go and come back) and in counts of
//! the page's audience (readers, applicants): no mask is learned for those, so the masks the rest
//! of the page teaches stay as they would be. Neither holds when some lines are news
//! ([`LineMemory`]): a line no accepted value ever showed, or lines whose order never changed that
//! moved. Masks never hide news: such a value is a candidate like any change, confirmed when a
//! later check shows the same news again, and its notification says the rules were in doubt
//! ([`Raised::doubt`]). A new line that does not last (a rotating wording) is not taken for seen,
//! so a real change whose confirming check met a stale replica is news again when it comes back; a
//! move that does not last teaches that those lines are shuffled. The caller keeps them where the
//! next [`Confirmation`] will find them: on the monitor, or, for a subject whose masks have no home
//! of their own (each page of a crawl), in its state ([`Confirmation::keep_learned`]).
//!
//! # Failures
//!
//! Error raises only when [`Confirmation::error_after_failures`] checks in a row failed
//! (default 2; the kind of failure makes no difference, so a 404 is confirmed by one more
//! check as a timeout is), over at least [`Confirmation::failing_for`]. Until then [`Decision::recheck`] asks for an early check. A monitor
//! that keeps failing raises Error once; the first successful check after an Error raised one
//! notification with `error` null (`recovered`); a failure that never raised Error recovers
//! silently. With `error_after_failures` 1 every failed check that follows a success raises at
//! once, as [`evaluate`](super::evaluate) does.
//!
//! # Example
//!
//! ```
//! use chrono::{TimeZone, Utc};
//! use wachet::alerts::confirm::{Confirmation, ConfirmState, decide};
//! use wachet::alerts::{Check, Subject};
//! use wachet::model::{Alert, AlertType};
//!
//! let alerts = [Alert { kind: AlertType::NotEq, value: None, parameters: None, remind_every_seconds: None }];
//! let policy = Confirmation::default();
//! let mut state = ConfirmState::default();
//! let mut run = |second: i64, value: &str| {
//!     let at = Utc.timestamp_opt(second, 0).unwrap();
//!     let decision = decide(&state, Check::Value(value), at, &alerts, Subject::SinglePage, &policy);
//!     state = decision.state;
//!     (decision.raised, decision.recheck)
//! };
//!
//! assert_eq!(run(0, "3.50 EUR"), (vec![], false)); // the baseline
//! assert_eq!(run(60, "3.90 EUR"), (vec![], true)); // changed: check again soon
//! let (raised, recheck) = run(65, "3.90 EUR"); // confirmed
//! assert_eq!(raised[0].synthetic_expression, "content changed");
//! assert_eq!(raised[0].first_seen, Some(Utc.timestamp_opt(60, 0).unwrap()));
//! assert!(!recheck);
//! ```

pub mod variants;

use super::compare::{Comparator, is_document};
use super::lasting;
use super::noise::lines::{Evidence, LineMemory, MAX_FORM_BYTES};
use super::noise::{LearnState, audience_blind};
use super::{AlertState, Check, LastCheck, Raised, Subject, error_alerts, evaluate};
use crate::model::{Alert, AlertType, Monitor, NoiseMask};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use variants::{Print, Variants};

/// How long changes and failures must last before they raise, and what counts as a change:
/// a monitor's settings.
#[derive(Debug, Clone)]
pub struct Confirmation {
    /// Consecutive failed checks before Error raises, 1 to
    /// [`Confirmation::MAX_ERROR_AFTER_FAILURES`]; values outside are taken as the nearest
    /// bound.
    pub error_after_failures: u32,
    /// How long the failures must have lasted, from the first failed check, before Error
    /// raises, beside their count (not when [`Confirmation::error_after_failures`] is 1). A
    /// service sets it to the delay of its early check, so a failure confirmed by that check
    /// raises as before, while a monitor checked more often than that does not raise on two
    /// quick failures of a flaky server. Zero by default.
    pub failing_for: std::time::Duration,
    /// When two values are the same ([`Comparator`]).
    pub comparator: Comparator,
    /// The time the server said it made the checked page (its `Date` header,
    /// [`crate::CheckOutcome::server_date`]): the clock the page's own dates are read against
    /// when learning noise ([`LearnState::observe_at`]). `None`: the check's time.
    pub page_clock: Option<DateTime<Utc>>,
    /// Whether the noise masks a check teaches are kept in its state ([`ConfirmState::masks`])
    /// and applied from the next check on, beside the comparator's: for a subject whose masks
    /// have no home of their own, such as each page of a crawl (a mask learned on one page must
    /// not mask the others). `false` by default: a monitor's own masks belong on the monitor,
    /// where a person sees and edits them, so the caller keeps [`Decision::learned`] there.
    pub keep_learned: bool,
}

impl Confirmation {
    /// The default of [`Confirmation::error_after_failures`]: a failure confirmed by one more
    /// check.
    pub const DEFAULT_ERROR_AFTER_FAILURES: u32 = 2;
    /// The most [`Confirmation::error_after_failures`] may be: each failure before it brings an
    /// early check.
    pub const MAX_ERROR_AFTER_FAILURES: u32 = 10;

    /// The policy of `monitor`: its `errorAfterFailures` (or the default when it has none), and
    /// its comparator ([`Comparator::lenient`]: masks that cannot be used are left out).
    pub fn of(monitor: &Monitor) -> Confirmation {
        let error_after_failures = monitor
            .error_after_failures
            .map(|n| u32::try_from(n).unwrap_or(1))
            .unwrap_or(Self::DEFAULT_ERROR_AFTER_FAILURES);
        Confirmation {
            error_after_failures,
            failing_for: std::time::Duration::ZERO,
            comparator: Comparator::lenient(monitor),
            page_clock: None,
            keep_learned: false,
        }
    }

    fn failures_needed(&self) -> u32 {
        self.error_after_failures
            .clamp(1, Self::MAX_ERROR_AFTER_FAILURES)
    }
}

impl Default for Confirmation {
    fn default() -> Self {
        Confirmation {
            error_after_failures: Self::DEFAULT_ERROR_AFTER_FAILURES,
            failing_for: std::time::Duration::ZERO,
            comparator: Comparator::default(),
            page_clock: None,
            keep_learned: false,
        }
    }
}

/// What [`decide`] remembers of a monitor (or of one crawled page) between checks.
///
/// The default is the state before the first check. It serializes (camelCase) so a service
/// can store it beside the check it follows.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ConfirmState {
    /// How the last check ended, and the last *confirmed* value: what the alerts compare with.
    pub alerts: AlertState,
    /// Values seen since the confirmed one and not yet confirmed, oldest first: none, one (the
    /// candidate) or two (a candidate and the third value that disagreed with it).
    pub pending: Vec<Candidate>,
    /// Failed checks in a row, up to the latest.
    pub failures: u32,
    /// When the first of those failed checks ran.
    pub failing_since: Option<DateTime<Utc>>,
    /// Whether Error raised for the current run of failures, so the next success raises
    /// `recovered`.
    pub error_raised: bool,
    /// What learning from later checks remembers ([`LearnState`]).
    pub noise: LearnState,
    /// The values that lasted lately, for flapping ([`Variants`]).
    pub variants: Variants,
    /// Noise masks learned for this subject and kept with its state, at most
    /// [`MAX_KEPT_MASKS`], when [`Confirmation::keep_learned`]: [`decide`] applies them beside
    /// the policy's comparator.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub masks: Vec<NoiseMask>,
    /// The lines the accepted values showed, so no mask hides a new line or a move of lines
    /// whose order never changed ([`LineMemory`]).
    pub lines: LineMemory,
    /// When the Error notification of the current failure, or its last reminder, was raised
    /// ([`lasting`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reminded_at: Option<DateTime<Utc>>,
    /// When the confirmed value last changed (a change first seen then and confirmed, or the
    /// baseline), for Unchanged alerts ([`lasting`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changed_at: Option<DateTime<Utc>>,
    /// The staleness (seconds) of each Unchanged alert raised since the value last changed,
    /// so each raises once per stale period.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stale_raised: Vec<i64>,
}

/// The most noise masks a [`ConfirmState`] keeps ([`Confirmation::keep_learned`]): the state is
/// stored beside every check of a subject, and a learned date mask is kilobytes of pattern.
pub const MAX_KEPT_MASKS: usize = 16;

impl ConfirmState {
    /// Records that the confirmed value changed, first seen at `at`: a new stale period
    /// begins ([`lasting`]).
    fn changed(&mut self, at: DateTime<Utc>) {
        self.changed_at = Some(at);
        self.stale_raised.clear();
    }

    /// Records `value`, fetched seconds apart from a check outside the checks (a new
    /// monitor's quick samples, [`super::noise::QUICK_SAMPLES`]), as a variant of the current
    /// content: values that close together show the same content, so when the page serves
    /// another template among them, that template showing up later is a flip and raises
    /// nothing. `comparator` is the one later checks use (learned masks included). Call it
    /// after the first check's [`decide`].
    pub fn remember(&mut self, comparator: &Comparator, value: &str) {
        self.variants.saw(Print::of(&comparator.key(value)));
    }

    /// Learns from a new monitor's quick samples, fetched seconds after its first check
    /// showed `first` (call it after that check's [`decide`]): a sample the page went on from
    /// (a later sample differs from it) is a variant ([`ConfirmState::remember`]), and the
    /// lines that came and went among them, or moved, are churn ([`LineMemory::warm_up`]).
    /// A sample the page stayed at to the last is neither: it may show a real change that came
    /// while the monitor was being made, which its next checks confirm and notify.
    ///
    /// When the last two samples show the same change from `first` (the same value as the
    /// comparator keys it, or the same new lines), the change already lasted: it waits as a
    /// candidate seen at `at` that the next check confirms, so it is notified as soon as a
    /// change after the samples would be.
    pub fn warm_up(
        &mut self,
        comparator: &Comparator,
        first: &str,
        samples: &[&str],
        at: DateTime<Utc>,
    ) {
        let keys: Vec<String> = samples.iter().map(|s| comparator.key(s)).collect();
        for (i, sample) in samples.iter().enumerate() {
            if keys[i + 1..].iter().any(|later| *later != keys[i]) {
                self.remember(comparator, sample);
            }
        }
        let forms: Vec<String> = samples.iter().map(|s| comparator.line_form(s)).collect();
        let first_form = comparator.line_form(first);
        let refs: Vec<&str> = forms.iter().map(String::as_str).collect();
        self.lines.warm_up(&first_form, &refs);
        let [.., (_, before_last_form), (last, last_form)] =
            &samples.iter().zip(&forms).collect::<Vec<_>>()[..]
        else {
            return;
        };
        let first_key = comparator.key(first);
        let (a, b) = (&keys[keys.len() - 2], &keys[keys.len() - 1]);
        let evidence = self.lines.evidence(&first_form, last_form);
        let lasted_key = a == b && *b != first_key;
        let lasted_news = !evidence.is_empty()
            && evidence.lasts_in(&self.lines.evidence(&first_form, before_last_form));
        if self.pending.is_empty() && (lasted_key || lasted_news) {
            let doubt = match *b == first_key {
                true => evidence.describe().map(|news| {
                    format!(
                        "This part of the page changed while the monitor was being made: {news}."
                    )
                }),
                false => None,
            };
            self.pending.push(Candidate {
                value: last.to_string(),
                first_seen: at,
                evidence,
                doubt,
                confirmations: 1,
                stale: false,
            });
        }
    }
}

/// A value seen and not yet confirmed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Candidate {
    /// The value as checked.
    pub value: String,
    /// When it was first seen.
    pub first_seen: DateTime<Utc>,
    /// Its new and moved lines ([`LineMemory::evidence`]): when the masks call it the same as
    /// the confirmed value, these are the change, and a later check must show them again.
    #[serde(default, skip_serializing_if = "Evidence::is_empty")]
    pub evidence: Evidence,
    /// What to tell a person when it is notified: why the rules were in doubt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub doubt: Option<String>,
    /// How many checks showed its news again so far. News the masks hide waits for two: a box
    /// of recommendations drawn anew on every request shows an unseen item twice in a row
    /// far more often than three times.
    #[serde(default, skip_serializing_if = "super::noise::state::is_zero")]
    pub confirmations: u8,
    /// Whether it shows again a value that lasted lately (the content before the last change,
    /// as a replica lagging behind serves it): it must last longer than a change to be
    /// believed ([`STALE_CONFIRMATIONS`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stale: bool,
}

impl Candidate {
    /// How many checks must show it again, after the one that confirms a plain change, before
    /// it raises.
    fn confirmations_needed(&self) -> u8 {
        match (self.stale, self.doubt.is_some()) {
            (true, _) => STALE_CONFIRMATIONS,
            (false, true) => 1,
            (false, false) => 0,
        }
    }
}

/// The checks beyond the confirming one that a value the page showed lately before its last
/// change must last: a replica lagging behind answers a run of a few requests, and the page
/// comes back to the new content after it; a real revert lasts and raises three checks later.
const STALE_CONFIRMATIONS: u8 = 2;

impl From<AlertState> for ConfirmState {
    /// The state of a monitor known only by its history ([`AlertState::from_history`]): its
    /// last successful value taken as confirmed, and a last failed check taken as a failure
    /// already raised (as [`evaluate`] raised it).
    fn from(alerts: AlertState) -> Self {
        let failed = alerts.last_check == Some(LastCheck::Failed);
        ConfirmState {
            alerts,
            pending: Vec::new(),
            failures: u32::from(failed),
            failing_since: None,
            error_raised: failed,
            ..ConfirmState::default()
        }
    }
}

/// What one check decided ([`decide`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// The notifications to raise, at most one per alert, in the order of the alerts (a
    /// `recovered` first).
    pub raised: Vec<Raised>,
    /// Whether the monitor should be checked again soon (a change or a failure waits for
    /// confirmation) rather than at its next regular time.
    pub recheck: bool,
    /// The state to judge the next check with.
    pub state: ConfirmState,
    /// Noise masks learned with this check, to add to the monitor's `noise` (the next
    /// [`Confirmation::of`] must include them).
    pub learned: Vec<NoiseMask>,
}

/// Why the rules were in doubt about a change whose lines carry `news`, for its notification.
fn in_doubt(news: &Evidence) -> Option<String> {
    news.describe()
        .map(|news| format!("This part of the page changed often before: {news}."))
}

/// What a notification of a value the page showed lately says.
const STALE_DOUBT: &str = "The page shows again what it showed before its last change, and kept \
     showing it: the change was undone, or an older copy of the page is served.";

/// The most values kept waiting: the candidate and one value that disagreed with it.
const MAX_PENDING: usize = 2;

/// Decides what `check`, run at `at`, raises given the `state` before it, the monitor's
/// `alerts` and `policy`, and what the subject is. Alerts that do not apply to `subject` are
/// skipped ([`Subject::applies`]). The rules are in the [module documentation](self).
pub fn decide(
    state: &ConfirmState,
    check: Check<'_>,
    at: DateTime<Utc>,
    alerts: &[Alert],
    subject: Subject<'_>,
    policy: &Confirmation,
) -> Decision {
    let with_kept;
    let policy = if state.masks.is_empty() {
        policy
    } else {
        with_kept = Confirmation {
            comparator: policy.comparator.with(&state.masks),
            ..policy.clone()
        };
        &with_kept
    };
    let mut next = state.clone();
    let mut raised = Vec::new();
    let mut recheck = false;
    let mut learned = Vec::new();
    match check {
        Check::Failed(error) => {
            next.alerts.last_check = Some(LastCheck::Failed);
            next.failures = state.failures.saturating_add(1);
            let since = *next.failing_since.get_or_insert(at);
            let needed = policy.failures_needed();
            let lasted =
                needed == 1 || (at - since).to_std().unwrap_or_default() >= policy.failing_for;
            if next.failures < needed || !lasted {
                recheck = true;
            } else if !state.error_raised {
                next.error_raised = true;
                next.reminded_at = Some(at);
                raised = error_alerts(alerts, subject, &state.alerts, Some(error), None);
                if since < at {
                    stamp(&mut raised, since);
                }
            } else {
                raised = lasting::reminders(state, &mut next, alerts, subject, error, at);
            }
        }
        Check::Value(value) => {
            if state.error_raised {
                raised = error_alerts(alerts, subject, &state.alerts, None, Some(value));
                lasting::say_how_long(&mut raised, state.failing_since, at);
            }
            next.failures = 0;
            next.failing_since = None;
            next.error_raised = false;
            next.reminded_at = None;
            next.alerts.last_check = Some(LastCheck::Succeeded);
            let judged = judge_value(state, value, at, alerts, subject, policy, &mut next);
            raised.extend(judged.raised);
            raised.extend(lasting::stale(&mut next, alerts, subject, at));
            recheck = judged.recheck;
            learned = judged.learned;
        }
    }
    if policy.keep_learned {
        for mask in &learned {
            if next.masks.len() < MAX_KEPT_MASKS
                && !next.masks.iter().any(|m| m.pattern == mask.pattern)
            {
                next.masks.push(mask.clone());
            }
        }
    }
    Decision {
        raised,
        recheck,
        state: next,
        learned,
    }
}

/// What [`judge_value`] decided.
#[derive(Default)]
struct Judged {
    raised: Vec<Raised>,
    recheck: bool,
    learned: Vec<NoiseMask>,
}

/// The value alerts a successful check raises, whether it waits for confirmation and the noise
/// it taught; updates the confirmed value, the candidates and the learning in `next`.
fn judge_value(
    state: &ConfirmState,
    value: &str,
    at: DateTime<Utc>,
    alerts: &[Alert],
    subject: Subject<'_>,
    policy: &Confirmation,
    next: &mut ConfirmState,
) -> Judged {
    let value_alerts = |confirmed: Option<&str>| {
        let before = AlertState {
            last_check: Some(LastCheck::Succeeded),
            last_value: confirmed.map(str::to_string),
        };
        let mut raised = evaluate(&before, Check::Value(value), alerts, subject);
        raised.retain(|r| r.alert.kind != AlertType::Error);
        raised
    };
    next.variants.tick();
    let comparator = &policy.comparator;
    let Some(confirmed) = state.alerts.last_value.as_deref() else {
        // The baseline. After failed first checks, conditions true of it raise (as evaluate
        // decides); the very first check raises nothing.
        let raised = match state.alerts.last_check {
            Some(_) => value_alerts(None),
            None => Vec::new(),
        };
        next.variants.saw(Print::of(&comparator.key(value)));
        next.lines.accept(&comparator.line_form(value));
        next.alerts.last_value = Some(value.to_string());
        next.pending.clear();
        next.changed(at);
        return Judged {
            raised,
            ..Judged::default()
        };
    };
    // The same bytes have the same key and the same lines: most checks find the page as it
    // was, and building the confirmed value's key again would double their cost.
    let key = comparator.key(value);
    let print = Print::of(&key);
    if value == confirmed {
        return unchanged(next, value, print, policy, at, None);
    }
    let (confirmed_form, form) = (comparator.line_form(confirmed), comparator.line_form(value));
    if next.lines.is_empty() {
        // A state kept before lines were remembered: the confirmed value is what is known.
        next.lines.accept(&confirmed_form);
    }
    // What no mask may hide: lines never seen, lines whose order never changed that moved.
    let mut evidence = next.lines.evidence(&confirmed_form, &form);
    let masked_same = comparator.key(confirmed) == key;
    if let Some(candidate) = state.pending.last()
        && !candidate.evidence.moving.is_empty()
        && !evidence.moving.is_empty()
        && !candidate.evidence.lasts_in(&evidence)
    {
        // Lines moved, then moved again seconds later: they are a list the page shuffles.
        next.lines.learn_movers(&candidate.evidence.moving);
        next.lines.learn_movers(&evidence.moving);
        evidence = next.lines.evidence(&confirmed_form, &form);
    }
    if let Some(candidate) = state.pending.last() {
        // Lines a waiting change no longer showed are back: they come and go. Numbers or dates
        // it changed that changed again (or back) change on their own.
        next.lines
            .learn_comers(&candidate.evidence.returned_in(&evidence), &form);
        let churn = candidate.evidence.unlasting_slots(&evidence);
        if !churn.is_empty() {
            next.lines.learn_churn(&churn);
            evidence = next.lines.evidence(&confirmed_form, &form);
        }
    }
    // No change, or a revert while a change waited; or only lines proven to come and go (a
    // promoted listing) and audience counts (readers, applicants, "bought today") differ: no
    // news at any pace, and no mask is learned for them, so the masks the page's other noise
    // teaches stay what they would be. Nothing to raise; the spelling seen last is kept, as
    // the history shows it.
    if evidence.is_empty()
        && (masked_same
            || only_noise_moved(comparator, &next.lines, confirmed, &confirmed_form, &form))
    {
        return unchanged(
            next,
            value,
            print,
            policy,
            at,
            Some((&confirmed_form, &form)),
        );
    }
    // A value the masks call the same as the confirmed one matches every variant's print, so
    // only a value with no news may be taken for a flip by its print.
    // A value the masks tell apart that is a variant seen lately lacks nothing news: lines
    // gone from the confirmed value were missing from that variant too (a page flipping back
    // to its other template).
    let only_gone =
        evidence.marks.is_empty() && evidence.placements.is_empty() && evidence.shifts.is_empty();
    let flip = match evidence.is_empty() {
        true => next.variants.is_recent(print) || next.variants.same_change(print),
        false if only_gone && !masked_same => {
            next.variants.is_recent(print) || next.variants.same_change(print)
        }
        false => !masked_same && next.variants.same_change(print),
    };
    if flip {
        // A flip to a variant that lasted lately, or the change already raised seen through
        // another template (whose wording of the changed line is new, and no news): the
        // confirmed value switches silently. Its spans still move for learning: an ad rotating
        // through wordings that each lasted once flips for ever.
        let learned = next.noise.observe_flip(
            &comparator.masked_line_key(confirmed),
            &comparator.masked_line_key(value),
        );
        next.variants.flipped_to(print);
        next.lines.accept_after(&confirmed_form, &form);
        next.alerts.last_value = Some(value.to_string());
        next.pending.clear();
        return Judged {
            learned,
            ..Judged::default()
        };
    }
    // A span that keeps changing from check to check becomes noise; when that explains the
    // whole difference and no line is news, there is no change. A check while a change waits
    // is the early check asked for to confirm it, seconds after the one before.
    let (before, after) = (
        comparator.masked_line_key(confirmed),
        comparator.masked_line_key(value),
    );
    let clock = Some(policy.page_clock.unwrap_or(at));
    let learned = if state.pending.is_empty() {
        next.noise.observe_at(&before, &after, clock)
    } else {
        next.noise.observe_early(&before, &after, clock)
    };
    // A value with no stable part: its changes are recorded, never alerted on (the monitor's
    // noise notice says so), or it would raise on every third check for ever.
    if next.noise.is_unstable() {
        next.variants.saw(print);
        next.lines.accept_after(&confirmed_form, &form);
        next.alerts.last_value = Some(value.to_string());
        next.pending.clear();
        next.changed(at);
        return Judged {
            learned,
            ..Judged::default()
        };
    }
    let explained = !learned.is_empty() && comparator.with(&learned).same(confirmed, value);
    if explained && evidence.is_empty() {
        next.lines.accept_after(&confirmed_form, &form);
        next.alerts.last_value = Some(value.to_string());
        next.pending.clear();
        return Judged {
            learned,
            ..Judged::default()
        };
    }
    // The masks (or what this check taught) call the value the same, but some of its lines
    // are news: in doubt, the change is notified once it lasts, and says why.
    let hidden = masked_same || explained;
    let doubt = match hidden {
        true => in_doubt(&evidence),
        false => None,
    };
    if let Some(candidate) = state.pending.last() {
        let same_key = comparator.key(&candidate.value) == key;
        let lasted = (same_key && !masked_same)
            || (!candidate.evidence.is_empty() && candidate.evidence.lasts_in(&evidence));
        if lasted && candidate.confirmations < candidate.confirmations_needed() {
            next.pending = vec![Candidate {
                confirmations: candidate.confirmations.saturating_add(1),
                ..candidate.clone()
            }];
            return Judged {
                raised: Vec::new(),
                recheck: true,
                learned,
            };
        }
        if lasted {
            let mut raised = value_alerts(Some(confirmed));
            stamp(&mut raised, candidate.first_seen);
            // A mask this very check learned may cover the news it confirms (a block of
            // lines above the list's oldest stable line, learned as a new headline's age
            // ticked): the doubt is said, so the notification shows the change through the
            // masks a person wrote and never finds nothing visible to send.
            let taught = match learned.is_empty() {
                true => None,
                false => in_doubt(&evidence),
            };
            let doubt = candidate.doubt.clone().or(doubt).or(taught);
            for r in &mut raised {
                r.doubt.clone_from(&doubt);
            }
            next.variants.raised(print);
            next.noise.confirmed();
            next.lines.notified(&evidence);
            next.lines.accept_notified(&confirmed_form, &form);
            next.alerts.last_value = Some(value.to_string());
            next.pending.clear();
            next.changed(candidate.first_seen);
            return Judged {
                raised,
                recheck: false,
                learned,
            };
        }
    }
    // A value that lasted lately and is no flip (it differs from the confirmed one in more
    // than lines gone): the content before the last change, as a lagging replica serves it,
    // or a real revert. Only a revert that lasts is told, with the doubt said.
    let stale = !masked_same && next.variants.is_recent(print);
    let doubt = match stale {
        true => Some(STALE_DOUBT.to_string()),
        false => doubt,
    };
    let waiting = Candidate {
        value: value.to_string(),
        first_seen: at,
        evidence,
        doubt,
        confirmations: 0,
        stale,
    };
    if state.pending.len() < MAX_PENDING {
        next.pending.push(waiting);
        return Judged {
            raised: Vec::new(),
            recheck: true,
            learned,
        };
    }
    if hidden {
        // News the masks hide that did not last either (a rotating wording never shown
        // before): it waits for the next regular check, where it raises if it is still there.
        next.pending = vec![waiting];
        return Judged {
            raised: Vec::new(),
            recheck: false,
            learned,
        };
    }
    // A third value after two that disagreed, and not the confirmed one: no value lasted, but
    // the page has not come back either. Staying silent would miss every real change of a
    // page that differs on every check, so the change raises with the value seen last.
    let first_seen = state.pending.first().map_or(at, |c| c.first_seen);
    let mut raised = value_alerts(Some(confirmed));
    stamp(&mut raised, first_seen);
    next.variants.raised(print);
    next.noise.confirmed();
    next.lines.notified(&waiting.evidence);
    next.lines.accept_notified(&confirmed_form, &form);
    next.alerts.last_value = Some(value.to_string());
    next.pending.clear();
    next.changed(first_seen);
    Judged {
        raised,
        recheck: false,
        learned,
    }
}

/// A check whose value is the confirmed one, as far as the masks and the lines tell: nothing
/// raises and any waiting change is dropped (a revert). `forms` are the confirmed value's
/// line form and its own when they were built (a value spelled otherwise than the confirmed
/// one), so its lines are remembered.
fn unchanged(
    next: &mut ConfirmState,
    value: &str,
    print: Print,
    policy: &Confirmation,
    at: DateTime<Utc>,
    forms: Option<(&str, &str)>,
) -> Judged {
    next.variants.saw(print);
    next.noise.quiet_at(Some(policy.page_clock.unwrap_or(at)));
    if let Some((confirmed, form)) = forms {
        next.lines.accept_after(confirmed, form);
    }
    next.alerts.last_value = Some(value.to_string());
    next.pending.clear();
    Judged::default()
}

/// Whether the confirmed value and a new one (their line forms `before` and `form`) differ,
/// through the masks, only in lines known to come and go ([`LineMemory::without_comers`])
/// and in audience counts ([`audience_blind`]). A JSON document's keys and values are
/// compared as they are.
fn only_noise_moved(
    comparator: &Comparator,
    lines: &LineMemory,
    confirmed: &str,
    before: &str,
    form: &str,
) -> bool {
    if before.len() > MAX_FORM_BYTES || form.len() > MAX_FORM_BYTES || is_document(confirmed) {
        return false;
    }
    let (before, form) = (lines.without_comers(before), lines.without_comers(form));
    if comparator.key(&before) == comparator.key(&form) {
        return true;
    }
    match (
        audience_blind(comparator, &before),
        audience_blind(comparator, &form),
    ) {
        (Some(before), Some(after)) => before == after,
        _ => false,
    }
}

fn stamp(raised: &mut [Raised], first_seen: DateTime<Utc>) {
    for r in raised {
        r.first_seen = Some(first_seen);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use std::ops::Range;

    fn not_eq() -> Vec<Alert> {
        vec![
            Alert {
                kind: AlertType::Error,
                value: None,
                parameters: None,
                remind_every_seconds: None,
            },
            Alert {
                kind: AlertType::NotEq,
                value: None,
                parameters: None,
                remind_every_seconds: None,
            },
        ]
    }

    #[test]
    fn a_confirmed_value_is_what_later_checks_compare_with() {
        let policy = Confirmation::default();
        let alerts = not_eq();
        let mut state = ConfirmState::default();
        let mut said = Vec::new();
        // B lasts longer than the variants' window, so A coming back is a change again.
        let mut checks = vec!["A", "B", "B"];
        checks.extend(["B"; 17]);
        checks.extend(["A", "A"]);
        for (i, v) in checks.iter().enumerate() {
            let at = Utc.timestamp_opt(i as i64, 0).unwrap();
            let d = decide(
                &state,
                Check::Value(v),
                at,
                &alerts,
                Subject::SinglePage,
                &policy,
            );
            said.push((d.raised.len(), d.recheck));
            state = d.state;
        }
        let mut expected = vec![(0, false), (0, true), (1, false)];
        expected.extend([(0, false); 17]);
        expected.extend([(0, true), (1, false)]);
        assert_eq!(said, expected);
        assert_eq!(state.alerts.last_value.as_deref(), Some("A"));
    }

    #[test]
    fn a_state_survives_serialization() {
        let state = ConfirmState {
            pending: vec![Candidate {
                value: "B".into(),
                first_seen: Utc.timestamp_opt(5, 0).unwrap(),
                evidence: Evidence::default(),
                doubt: None,
                confirmations: 2,
                stale: true,
            }],
            failures: 1,
            ..ConfirmState::default()
        };
        let json = serde_json::to_string(&state).unwrap();
        assert_eq!(serde_json::from_str::<ConfirmState>(&json).unwrap(), state);
    }

    /// Runs `values` through [`decide`] a minute apart, learning as a service does: how many
    /// notifications raised, and the comparator with what was learned.
    fn run(values: &[String]) -> (usize, Comparator) {
        let (said, comparator) = run_saying(values);
        (said.len(), comparator)
    }

    /// As [`run`]: each notification's check and doubt, and the comparator.
    fn run_saying(values: &[String]) -> (Vec<(usize, Option<String>)>, Comparator) {
        let mut policy = Confirmation::default();
        let mut state = ConfirmState::default();
        let mut said = Vec::new();
        for (i, value) in values.iter().enumerate() {
            let at = Utc.timestamp_opt(i as i64 * 60, 0).unwrap();
            let d = decide(
                &state,
                Check::Value(value),
                at,
                &not_eq(),
                Subject::SinglePage,
                &policy,
            );
            said.extend(d.raised.iter().map(|r| (i, r.doubt.clone())));
            state = d.state;
            policy.comparator = policy.comparator.with(&d.learned);
        }
        (said, policy.comparator)
    }

    #[test]
    fn older_content_served_for_a_few_checks_raises_nothing_and_a_revert_that_lasts_says_so() {
        let docs = |edited: &str, deprecated: bool| {
            format!(
                "Payments API reference\nAPI version 3.2.2 · last edited {edited}\n\
                 POST /v3/charges\nCreates a charge.\n{}GET /v3/balances\nReturns the balances.",
                if deprecated {
                    "GET /v3/balance\nDeprecated: use GET /v3/balances.\n"
                } else {
                    ""
                }
            )
        };
        let (old, new) = (
            docs("31 December 2026", true),
            docs("1 January 2027", false),
        );
        // The change, a replica serving the older content for three checks, the new content
        // again, then the change undone for good.
        let values: Vec<String> = [(&old, 10), (&new, 6), (&old, 3), (&new, 3), (&old, 8)]
            .iter()
            .flat_map(|(value, times)| std::iter::repeat_n((*value).clone(), *times))
            .collect();
        let (said, _) = run_saying(&values);
        assert_eq!(
            said,
            vec![(11, None), (25, Some(STALE_DOUBT.to_string()))],
            "the change confirmed at once; the revert three checks after it was confirmed"
        );
    }

    #[test]
    fn wordings_that_each_lasted_once_and_flip_since_are_learned_and_templates_never_are() {
        let shop = |ad: &str, price: &str| {
            format!(
                "Aurora Espresso Machine\n{price} USD\nIn stock\nSponsored: {ad}\nCustomers also bought"
            )
        };
        let (a, u, f) = (
            "Free shipping on orders over 50 USD this week",
            "Upgrade your kitchen with SteelLine appliances",
            "Fresh beans delivered monthly, 20% off your first box",
        );
        // A pricing page served in two templates that format its prices differently.
        let table = |price: u32| {
            format!(
                "Pricing\nTeam: ${price} per user / month\nSingle sign-on included.\nCompare plans"
            )
        };
        let cards = |price: u32| {
            format!(
                "Pricing\nTeam: {price} USD/mo per seat\nSingle sign-on included.\nCompare plans"
            )
        };
        let mut templates: Vec<String> = Vec::new();
        for price in [39, 42, 39] {
            templates.extend([table(price), table(price), cards(price), cards(price)]);
            for i in 0..20 {
                templates.push(if i % 3 == 0 {
                    cards(price)
                } else {
                    table(price)
                });
            }
        }
        // (what, values, how many notifications, a change that must still differ)
        type Case = (&'static str, Vec<String>, Range<usize>, (String, String));
        let cases: [Case; 2] = [
            (
                "an ad rotating among three wordings (the order a bench run saw), then a price change",
                [a, u, u, f, a, a, f, u, f, f, u, f, u, a, u, u, a, u, f, a]
                    .iter()
                    .map(|ad| shop(ad, "129.99"))
                    .chain([u, u, f, a].iter().map(|ad| shop(ad, "128.99")))
                    .collect(),
                // Each wording the monitor never saw raises once, when it first lasts (a line
                // never shown before is news until it is known), and the price change once;
                // once seen, the wordings flip silently.
                1..4,
                (shop(a, "129.99"), shop(a, "128.99")),
            ),
            (
                "an A/B page's templates flipping, a price change and its revert",
                templates,
                // The other template's first lasting appearance (nothing told it from a change
                // yet), then the change and its revert once each: the page flipped back, so the
                // two templates are one content, and the other template's first appearance
                // after each change is that change seen through it. Nothing is learned.
                3..4,
                (table(39), table(42)),
            ),
        ];
        for (what, values, expected, (before, after)) in cases {
            let (raised, learned) = run(&values);
            assert!(expected.contains(&raised), "{what}: {raised} raised");
            assert!(
                !learned.same(&before, &after),
                "{what}: the change is masked"
            );
        }
    }
}
