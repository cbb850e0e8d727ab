//! Scoring: which request of its page each alert came after, and whether it was a real change
//! (true), noise (false), or a real change nobody alerted on (missed).
//!
//! An alert is placed at the last request its monitor made at or before the alert's time. It is
//! true when a real change of the page became visible at most `window` requests before (the
//! change's own request counts as 0), and each change takes at most one true alert; every
//! other alert is false. A change with no true alert is missed. Changes too close to the end of
//! the run to be seen `window` times are not scored.

use super::corpus::{Change, Hit};

/// One alert as a tool reported it: when, and whether it was an error alert.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Alert {
    /// Unix milliseconds.
    pub at_ms: i64,
    /// An Error alert (or a recovery) rather than a change alert.
    pub error: bool,
}

/// The score of one monitor.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Score {
    /// Alerts that matched a real change.
    pub true_alerts: usize,
    /// Change alerts on noise.
    pub false_changes: usize,
    /// Error alerts (raised and recovered) on noise.
    pub false_errors: usize,
    /// Real changes without a true alert.
    pub missed: usize,
    /// Real changes scored.
    pub changes: usize,
    /// Alerts that came after the last scored request (not scored).
    pub late: usize,
}

impl Score {
    /// All false alerts.
    pub fn false_alerts(&self) -> usize {
        self.false_changes + self.false_errors
    }

    /// Adds another monitor's score.
    pub fn add(&mut self, other: &Score) {
        self.true_alerts += other.true_alerts;
        self.false_changes += other.false_changes;
        self.false_errors += other.false_errors;
        self.missed += other.missed;
        self.changes += other.changes;
        self.late += other.late;
    }
}

/// Scores the `alerts` of one monitor whose requests were `hits`, for a page with `changes`,
/// over its first `checks` requests.
pub fn score(
    changes: &[Change],
    hits: &[Hit],
    alerts: &[Alert],
    checks: u32,
    window: u32,
) -> Score {
    let scored: Vec<u32> = changes
        .iter()
        .filter(|c| c.at + window <= checks)
        .map(|c| c.at)
        .collect();
    let mut matched = vec![false; scored.len()];
    let mut result = Score {
        changes: scored.len(),
        ..Score::default()
    };
    let mut alerts = alerts.to_vec();
    alerts.sort_by_key(|a| a.at_ms);
    for alert in &alerts {
        let request = hits
            .iter()
            .rev()
            .find(|h| h.at_ms <= alert.at_ms)
            .map_or(0, |h| h.n);
        if request > checks {
            result.late += 1;
            continue;
        }
        let found = scored
            .iter()
            .enumerate()
            .find(|(i, at)| !matched[*i] && **at <= request && request <= **at + window);
        match found {
            Some((i, _)) if !alert.error => {
                matched[i] = true;
                result.true_alerts += 1;
            }
            _ if alert.error => result.false_errors += 1,
            _ => result.false_changes += 1,
        }
    }
    result.missed = matched.iter().filter(|m| !**m).count();
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::noise::corpus::ChangeKind;

    fn hits(n: u32) -> Vec<Hit> {
        (1..=n)
            .map(|n| Hit {
                n,
                at_ms: i64::from(n) * 1000,
            })
            .collect()
    }

    fn change(at: u32) -> Change {
        Change {
            at,
            kind: ChangeKind::OneChar,
            what: "",
        }
    }

    fn alert(at_ms: i64) -> Alert {
        Alert {
            at_ms,
            error: false,
        }
    }

    #[test]
    fn an_alert_within_the_window_is_true_once_and_the_rest_are_false() {
        let changes = [change(10), change(30)];
        // After request 10 (true), again after 11 (false: the change is taken), after 20
        // (noise), after 34 (one too late for the change at 30, which is missed), and an error.
        let alerts = [
            alert(10_200),
            alert(11_300),
            alert(20_100),
            alert(34_500),
            Alert {
                at_ms: 15_000,
                error: true,
            },
        ];
        let s = score(&changes, &hits(40), &alerts, 40, 3);
        assert_eq!(
            s,
            Score {
                true_alerts: 1,
                false_changes: 3,
                false_errors: 1,
                missed: 1,
                changes: 2,
                late: 0
            }
        );
    }

    #[test]
    fn changes_past_the_run_are_not_scored_and_late_alerts_not_counted() {
        let s = score(&[change(39)], &hits(45), &[alert(44_000)], 40, 3);
        assert_eq!((s.changes, s.missed, s.late), (0, 0, 1));
    }
}
