//! Alerts about how long something lasted: a failure that goes on (an Error alert's
//! reminders, `remindEverySeconds`) and a value that stays the same (the Unchanged alert, a
//! dead-man alert for a page that should change). Neither is a property of one check against
//! the one before, so [`evaluate`](super::evaluate) never raises them: [`super::confirm::decide`]
//! does, from the times it keeps in its [`ConfirmState`], so a service that stores that state
//! beside the check (as it stores the notifications) sends each reminder and each staleness
//! alert once, across restarts.
//!
//! # Reminders
//!
//! An Error alert with `remindEverySeconds` N raises again, with the check's error and the
//! expression `still failing after 3 h 12 min`, at the first failed check N seconds or more
//! after its Error notification (or its last reminder), for as long as the failure lasts. When
//! the monitor returns a value again, its recovery says how long the failure lasted: `was
//! failing for 3 h 12 min, now returns a value again` (plain `recovered` for an Error alert
//! without reminders). Reminders come with checks, so they are as punctual as the monitor's
//! schedule: at most one a check.
//!
//! # Unchanged
//!
//! An Unchanged alert's operand is a number of seconds N. It raises, with the current value
//! and the expression `not changed for 30 d`, at the first successful check N seconds or more
//! after the confirmed value last changed (a change as the confirmation decides it: noise,
//! flips and reverts are no change), and then not again until the value changes and stays
//! the same for N seconds once more. A failed check neither raises it nor counts as a change;
//! nor does a change still waiting for confirmation. A state kept from before this alert
//! existed starts counting at its first check.

use super::confirm::ConfirmState;
use super::{Raised, Subject, operand};
use crate::model::{Alert, AlertType};
use chrono::{DateTime, Utc};

/// The shortest reminder interval and staleness a monitor may ask for, in seconds.
pub const MIN_SECONDS: i64 = 60;
/// The longest, in seconds: ten years.
pub const MAX_SECONDS: i64 = 10 * 366 * 86_400;

/// The seconds of an Unchanged alert's operand, when it is a whole number in bounds.
pub fn unchanged_seconds(alert: &Alert) -> Option<i64> {
    operand(alert)
        .trim()
        .parse::<i64>()
        .ok()
        .filter(|n| (MIN_SECONDS..=MAX_SECONDS).contains(n))
}

/// What is wrong with `alert`'s lasting parts, as (field under the alert, message): a reminder
/// on another alert than Error, or out of bounds; an Unchanged alert whose operand is no
/// number of seconds in bounds.
pub fn problems(alert: &Alert) -> Vec<(&'static str, String)> {
    let bounds = format!("from {MIN_SECONDS} to {MAX_SECONDS} seconds");
    let mut found = Vec::new();
    match alert.remind_every_seconds {
        Some(_) if alert.kind != AlertType::Error => found.push((
            "remindEverySeconds",
            "only an Error alert reminds (leave it out of the other types)".to_string(),
        )),
        Some(n) if !(MIN_SECONDS..=MAX_SECONDS).contains(&n) => {
            found.push(("remindEverySeconds", format!("must be {bounds}, not {n}")))
        }
        _ => {}
    }
    if alert.kind == AlertType::Unchanged && unchanged_seconds(alert).is_none() {
        found.push((
            "value",
            format!(
                "must be how long the value stays the same, in seconds ({bounds}), not {:?}",
                operand(alert)
            ),
        ));
    }
    found
}

/// A length of time as a person reads it: `45 s`, `12 min`, `3 h 12 min`, `30 d`, `2 d 4 h`.
pub fn duration_words(duration: chrono::TimeDelta) -> String {
    let seconds = duration.num_seconds().max(0);
    let (days, hours, minutes) = (
        seconds / 86_400,
        seconds % 86_400 / 3600,
        seconds % 3600 / 60,
    );
    match (days, hours, minutes) {
        (0, 0, 0) => format!("{seconds} s"),
        (0, 0, m) => format!("{m} min"),
        (0, h, 0) => format!("{h} h"),
        (0, h, m) => format!("{h} h {m} min"),
        (d, 0, _) => format!("{d} d"),
        (d, h, _) => format!("{d} d {h} h"),
    }
}

/// `seconds` in whole units, exactly, as a form shows it back: `30 d`, `1 d 2 h 3 min 4 s`.
pub fn exact_words(seconds: i64) -> String {
    let mut rest = seconds.max(0);
    let mut parts = Vec::new();
    for (size, unit) in [(86_400, "d"), (3600, "h"), (60, "min"), (1, "s")] {
        if rest >= size {
            parts.push(format!("{} {unit}", rest / size));
            rest %= size;
        }
    }
    if parts.is_empty() {
        return "0 s".into();
    }
    parts.join(" ")
}

/// The seconds a person wrote: a whole number of seconds (`3600`), or numbers with units
/// (`30 d`, `3 h 12 min`, `90min`, `2 weeks`); `None` for anything else.
pub fn seconds_in_words(text: &str) -> Option<i64> {
    let text = text.trim();
    if let Ok(seconds) = text.parse::<i64>() {
        return Some(seconds);
    }
    let mut total: i64 = 0;
    let mut rest = text;
    let mut any = false;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let number: i64 = rest[..digits].parse().ok()?;
        rest = rest[digits..].trim_start();
        let letters = rest
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(rest.len());
        let size = match rest[..letters].to_ascii_lowercase().as_str() {
            "s" | "sec" | "secs" | "second" | "seconds" => 1,
            "m" | "min" | "mins" | "minute" | "minutes" => 60,
            "h" | "hr" | "hrs" | "hour" | "hours" => 3600,
            "d" | "day" | "days" => 86_400,
            "w" | "week" | "weeks" => 7 * 86_400,
            _ => return None,
        };
        total = total.checked_add(number.checked_mul(size)?)?;
        rest = rest[letters..].trim_start_matches([' ', ',']);
        any = true;
    }
    any.then_some(total)
}

/// The reminders a failed check at `at` raises while an Error notification stands (`state`
/// is the state before the check, `next` the one kept after it, whose reminder time moves
/// to `at` when one is raised).
pub(super) fn reminders(
    state: &ConfirmState,
    next: &mut ConfirmState,
    alerts: &[Alert],
    subject: Subject<'_>,
    error: &str,
    at: DateTime<Utc>,
) -> Vec<Raised> {
    if !subject.applies(AlertType::Error) {
        return Vec::new();
    }
    // A failure raised before reminders were kept counts from now.
    let last = *next.reminded_at.get_or_insert(at);
    let failing = state
        .failing_since
        .map(|since| format!(" after {}", duration_words(at - since)))
        .unwrap_or_default();
    let raised: Vec<Raised> = alerts
        .iter()
        .filter(|alert| alert.kind == AlertType::Error)
        .filter(|alert| {
            alert
                .remind_every_seconds
                .is_some_and(|every| every > 0 && (at - last).num_seconds() >= every)
        })
        .map(|alert| Raised {
            alert: alert.clone(),
            job_type: subject.job_type(),
            page_url: None,
            current: None,
            comparand: state.alerts.last_value.clone(),
            error: Some(error.to_string()),
            synthetic_expression: format!("still failing{failing}"),
            matches: Vec::new(),
            first_seen: None,
            doubt: None,
        })
        .collect();
    if !raised.is_empty() {
        next.reminded_at = Some(at);
    }
    raised
}

/// Says in the recoveries of Error alerts with reminders how long the failure that began at
/// `since` lasted, now that a check at `at` returned a value.
pub(super) fn say_how_long(raised: &mut [Raised], since: Option<DateTime<Utc>>, at: DateTime<Utc>) {
    let Some(since) = since else { return };
    for r in raised
        .iter_mut()
        .filter(|r| r.is_recovery() && r.alert.remind_every_seconds.is_some())
    {
        r.synthetic_expression = format!(
            "was failing for {}, now returns a value again",
            duration_words(at - since)
        );
    }
}

/// The Unchanged alerts a successful check at `at` raises, given the state after it (`next`,
/// whose confirmed value and change time are up to date): each once per stale period.
pub(super) fn stale(
    next: &mut ConfirmState,
    alerts: &[Alert],
    subject: Subject<'_>,
    at: DateTime<Utc>,
) -> Vec<Raised> {
    let since = *next.changed_at.get_or_insert(at);
    if !next.pending.is_empty() || !subject.applies(AlertType::Unchanged) {
        return Vec::new();
    }
    let mut raised = Vec::new();
    for alert in alerts.iter().filter(|a| a.kind == AlertType::Unchanged) {
        let Some(seconds) = unchanged_seconds(alert) else {
            continue;
        };
        if (at - since).num_seconds() < seconds || next.stale_raised.contains(&seconds) {
            continue;
        }
        next.stale_raised.push(seconds);
        raised.push(Raised {
            alert: alert.clone(),
            job_type: subject.job_type(),
            page_url: None,
            current: next.alerts.last_value.clone(),
            comparand: None,
            error: None,
            synthetic_expression: format!("not changed for {}", duration_words(at - since)),
            matches: Vec::new(),
            first_seen: None,
            doubt: None,
        });
    }
    raised
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alerts::Check;
    use crate::alerts::confirm::{Confirmation, decide};
    use chrono::TimeZone;

    /// The expressions each check raises, the checks given as (minute, value or `!` for a
    /// failure).
    fn run(alerts: &[Alert], checks: &[(i64, &str)]) -> Vec<Vec<String>> {
        let policy = Confirmation {
            error_after_failures: 1,
            ..Confirmation::default()
        };
        let mut state = ConfirmState::default();
        let mut said = Vec::new();
        for (minute, value) in checks {
            let at = Utc.timestamp_opt(minute * 60, 0).unwrap();
            let check = match *value {
                "!" => Check::Failed("HTTP 503"),
                v => Check::Value(v),
            };
            let decision = decide(&state, check, at, alerts, Subject::SinglePage, &policy);
            said.push(
                decision
                    .raised
                    .iter()
                    .map(|r| r.synthetic_expression.clone())
                    .collect(),
            );
            state = decision.state;
        }
        said
    }

    fn alert(kind: AlertType, value: Option<&str>, remind: Option<i64>) -> Alert {
        Alert {
            kind,
            value: value.map(str::to_string),
            parameters: None,
            remind_every_seconds: remind,
        }
    }

    #[test]
    fn reminders_come_every_interval_while_failing_and_the_recovery_says_how_long() {
        let alerts = [alert(AlertType::Error, None, Some(3600))];
        let said = run(
            &alerts,
            &[
                (0, "a"),
                (10, "!"),
                (40, "!"),
                (70, "!"),
                (100, "!"),
                (140, "!"),
                (202, "a"),
            ],
        );
        let expected: [&[&str]; 7] = [
            &[],
            &["check failed"],
            &[],
            &["still failing after 1 h"],
            &[],
            &["still failing after 2 h 10 min"],
            &["was failing for 3 h 12 min, now returns a value again"],
        ];
        assert_eq!(said, expected);
    }

    #[test]
    fn a_stale_value_raises_once_until_it_changes_and_stays_again() {
        let alerts = [alert(AlertType::Unchanged, Some("3600"), None)];
        // A failure in between neither raises nor restarts the count; a change (confirmed at
        // its second check) does.
        let said = run(
            &alerts,
            &[
                (0, "a"),
                (30, "a"),
                (61, "!"),
                (62, "a"),
                (90, "a"),
                (100, "b"),
                (101, "b"),
                (150, "b"),
                (170, "b"),
            ],
        );
        let raised: Vec<(usize, &str)> = said
            .iter()
            .enumerate()
            .flat_map(|(i, s)| s.iter().map(move |e| (i, e.as_str())))
            .collect();
        assert_eq!(
            raised,
            [
                (3, "not changed for 1 h 2 min"),
                (8, "not changed for 1 h 10 min")
            ]
        );
    }

    #[test]
    fn durations_read_as_a_person_says_them() {
        let words = |s| duration_words(chrono::TimeDelta::seconds(s));
        assert_eq!(words(45), "45 s");
        assert_eq!(words(12 * 60 + 5), "12 min");
        assert_eq!(words(3 * 3600 + 12 * 60), "3 h 12 min");
        assert_eq!(words(30 * 86_400 + 59), "30 d");
        assert_eq!(words(2 * 86_400 + 4 * 3600), "2 d 4 h");
        for seconds in [60, 3600, 30 * 86_400, 86_400 + 7384] {
            assert_eq!(seconds_in_words(&exact_words(seconds)), Some(seconds));
        }
        assert_eq!(seconds_in_words("3 h 12 min"), Some(11_520));
        assert_eq!(seconds_in_words("2 weeks"), Some(1_209_600));
        assert_eq!(seconds_in_words("90min"), Some(5400));
        for bad in ["", "soon", "3 fortnights", "h", "-5 h"] {
            assert_eq!(seconds_in_words(bad), None, "{bad:?}");
        }
    }
}
