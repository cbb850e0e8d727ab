//! Alerts: which notifications a check raises.
//!
//! [`evaluate`] is a pure function: given what is known from before (an [`AlertState`]), the
//! check that just ran (a [`Check`]) and the monitor's alerts, it returns the notifications to
//! raise ([`Raised`]). It does no I/O, reads no clock and never blocks; a scheduler calls it after
//! every check, stores what it returns and then records the check in the state
//! ([`AlertState::record`], or both at once with [`AlertState::observe`]).
//!
//! A SinglePage monitor has one state. A Portal monitor has one for its own value (the sorted,
//! newline-separated URLs of the pages crawled, [`Subject::Portal`]) and one per crawled page
//! ([`Subject::PortalPage`]).
//!
//! # When each alert type raises
//!
//! These are the rules of the project's DECISIONS.md, with the gaps it leaves filled as noted.
//!
//! - **The first check** of a monitor (or of a newly crawled page) sets the baseline and raises
//!   nothing but Error.
//! - **A failed check** raises nothing but Error. Value conditions wait for the next successful
//!   value, and "the previous value" always means the value of the last *successful* check: a
//!   failure in between is skipped, as the history's `returnDiff` skips it. So a condition that
//!   held before an outage and still holds after it is not raised again.
//! - **Error**: the check failed and the previous check did not (or there was none). The first
//!   success after a failure raises one notification with `error` null (`recovered`). A
//!   monitor that fails every check raises once.
//! - **NotEq**: the value differs from the previous successful value.
//! - **Eq, Contains, NotContains, Gt, Lt** are edge-triggered: they raise when the condition is
//!   true now and was false on the previous successful value, or there was no such value (every
//!   earlier check failed). Never again while it stays true.
//! - **Increased, Decreased**: the number moved in that direction by more than the operand
//!   (`10` absolute, `5%` relative to the previous number); an empty operand means any move in
//!   that direction.
//! - **Added, Removed**: the change added (removed) text containing the operand; an empty operand
//!   means any text. For a Portal monitor: pages that appeared (disappeared).
//! - **Unchanged** (an extension) and an Error alert's reminders are about how long a value or
//!   a failure lasted: [`confirm::decide`] raises them ([`lasting`]); this function never does.
//!
//! The operand is `alert.value`, or `parameters.value` when `alert.value` is empty. `parameters.
//! compare` ([`CompareType`]) chooses what the condition looks at: All the whole current value,
//! CaseInsensitive the same with case folded (operand too), Added only the text the change
//! added and Removed only the text it removed, both as [`crate::diff::diff`] shows the change
//! (for a Portal monitor's own value: the URLs of the pages that appeared or disappeared).
//!
//! Gaps DECISIONS.md leaves, decided here:
//!
//! - With compare Added or Removed a condition is about one change, so each change is judged on
//!   its own: a check that added (removed) nothing has no value to look at and raises nothing,
//!   and every change that adds matching text raises, even right after another one did.
//! - For Increased and Decreased, compare All and CaseInsensitive take the first number of the
//!   previous and the current value; Added and Removed take the first number of the removed
//!   text as the old number and of the added text as the new one (the number the change
//!   replaced, wherever it stands in the value).
//! - Added and Removed always look at added (removed) text; CaseInsensitive folds case when
//!   matching the operand, the other compare types change nothing for them.
//! - A Portal monitor's own value (a list of URLs) takes Error, NotEq, Added, Removed and
//!   Unchanged. Its
//!   pages take NotEq and the content conditions (Eq, Contains, NotContains, Gt, Lt, Increased,
//!   Decreased), each page judged on its own; a page's failure raises nothing (the crawl's
//!   failure is the monitor's Error). See [`Subject::applies`].
//! - An alert whose operand is unusable never raises: Gt and Lt with an operand that holds no
//!   number, Increased and Decreased with a non-empty operand that holds none.
//!
//! # Normalised comparison
//!
//! Values are compared by their comparison key ([`crate::normalize`]): white space runs,
//! Unicode forms (NFC), invisible characters, quote and dash variants and character reference
//! spellings make no difference, while any edit of a visible character does. Every condition
//! looks at keys: NotEq raises only when the keys differ; Eq, Contains and NotContains compare
//! the key of the value (its lines kept, [`crate::normalize::line_key`]) with the key of the
//! operand; Added and Removed look at the word diff of the two keys (so their `matches` are in
//! key form: `"` for `“`, one space for a run without a line break); the
//! numbers of Gt, Lt, Increased and Decreased are read from the keys. A notification's
//! `current` and `comparand` are the values as checked, never keys. A Portal monitor's own
//! value (URLs, which have none of these variants) keeps its line-by-line comparison.
//!
//! # Numbers
//!
//! A number is the first decimal number in the text ([`first_number`]): `1,234.50`,
//! `1.234,50`, `1 234,50` (also with a non-breaking, narrow or thin space, or an apostrophe)
//! all read as 1234.5. A `,` or `.` followed by exactly three digits and more groups of three is
//! a thousands separator (`1,234` and `1.234` are 1234) unless the number starts with 0
//! (`0.125`); otherwise it is the decimal separator (`3,50` and `3.50` are 3.5). A `-`, `−` or
//! `+` right before the digits is the sign unless it follows a letter or digit (`A-4` is 4).
//! Comparisons use the decimal digits exactly, so "more than 5%" is not raised by a move of
//! exactly 5%.
//!
//! # Example
//!
//! ```
//! use wachet::alerts::{AlertState, Check, Subject};
//! use wachet::model::{Alert, AlertType};
//!
//! let alerts = [
//!     Alert { kind: AlertType::Error, value: None, parameters: None, remind_every_seconds: None },
//!     Alert { kind: AlertType::Contains, value: Some("in stock".into()), parameters: None, remind_every_seconds: None },
//! ];
//! let mut state = AlertState::default();
//! let mut run = |check| state.observe(check, &alerts, Subject::SinglePage);
//!
//! assert!(run(Check::Value("Tea: sold out")).is_empty()); // the baseline
//! let raised = run(Check::Value("Tea: in stock"));
//! assert_eq!(raised[0].synthetic_expression, r#"contains "in stock""#);
//! assert!(run(Check::Value("Tea: in stock")).is_empty()); // still true: not again
//! assert_eq!(run(Check::Failed("HTTP 503"))[0].synthetic_expression, "check failed");
//! assert_eq!(run(Check::Failed("HTTP 503")).len(), 0); // still failing: not again
//! assert_eq!(run(Check::Value("Tea: in stock"))[0].synthetic_expression, "recovered");
//! ```

pub mod compare;
pub mod confirm;
pub mod lasting;
pub mod noise;

use crate::model::{Alert, AlertType, ClientData, CompareType, DiffOperation, JobType};
use crate::normalize::{key_chars, line_key, same};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::HashSet;
use std::fmt;

/// What alert evaluation remembers of a monitor (or of one crawled page) between checks.
///
/// The default is the state before the first check. Keep it in memory and update it with
/// [`AlertState::record`], or rebuild it from the stored history with
/// [`AlertState::from_history`]: both give the same state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AlertState {
    /// How the previous check ended; `None` when there was none, so the next check is the
    /// baseline.
    pub last_check: Option<LastCheck>,
    /// The value of the last successful check, however many failures ago; `None` until a check
    /// succeeded. Every value condition compares with this.
    pub last_value: Option<String>,
}

/// How a check ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum LastCheck {
    /// It produced a value.
    Succeeded,
    /// It failed (network error, HTTP status, nothing matched, ...).
    Failed,
}

/// The check being judged: its value or its error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check<'a> {
    /// The check succeeded with this value (the API's `raw`).
    Value(&'a str),
    /// The check failed with this error text (the API's `error`).
    Failed(&'a str),
}

impl<'a> From<&'a ClientData> for Check<'a> {
    /// A result with an `error` is a failure; any other is a success with `raw` as its value
    /// (an empty value when `raw` is null).
    fn from(data: &'a ClientData) -> Self {
        match (&data.error, &data.raw) {
            (Some(error), _) => Check::Failed(error),
            (None, raw) => Check::Value(raw.as_deref().unwrap_or("")),
        }
    }
}

/// What the value being judged belongs to. It decides the notifications' [`JobType`] and which
/// alert types apply ([`Subject::applies`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject<'a> {
    /// A SinglePage monitor's value.
    SinglePage,
    /// A Portal monitor's own value: the sorted, newline-separated URLs of its crawled pages.
    /// Its lines are compared as a set, so Added and Removed speak of pages.
    Portal,
    /// One page crawled by a Portal monitor.
    PortalPage {
        /// The page's URL, carried into [`Raised::page_url`].
        url: &'a str,
    },
}

impl Subject<'_> {
    /// The JobType of the notifications raised for this subject.
    pub fn job_type(&self) -> JobType {
        match self {
            Subject::SinglePage => JobType::SinglePage,
            Subject::Portal => JobType::Portal,
            Subject::PortalPage { .. } => JobType::PortalPage,
        }
    }

    /// Whether alerts of type `kind` are judged on this subject.
    ///
    /// A SinglePage monitor takes every type. A Portal monitor's own value takes Error, NotEq,
    /// Added, Removed (pages that appeared or disappeared) and Unchanged; its pages take NotEq and the
    /// content conditions Eq, Contains, NotContains, Gt, Lt, Increased and Decreased.
    pub fn applies(&self, kind: AlertType) -> bool {
        use AlertType::*;
        match self {
            Subject::SinglePage => true,
            Subject::Portal => matches!(kind, Error | NotEq | Added | Removed | Unchanged),
            Subject::PortalPage { .. } => matches!(
                kind,
                NotEq | Eq | Contains | NotContains | Gt | Lt | Increased | Decreased
            ),
        }
    }
}

/// A notification to raise: what the service stores (ClientNotification) and shows (the alert
/// content of endpoint 5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Raised {
    /// The alert that fired, as the monitor declares it.
    pub alert: Alert,
    /// SinglePage, Portal (the monitor's own value) or PortalPage (one crawled page).
    pub job_type: JobType,
    /// The page's URL when `job_type` is PortalPage; otherwise `None` (the monitor's own URL
    /// is the caller's to add).
    pub page_url: Option<String>,
    /// The current value; `None` when the check failed.
    pub current: Option<String>,
    /// What the current value was compared with: the operand for Eq, Contains, NotContains, Gt
    /// and Lt; the previous successful value for the others (`None` when there was none).
    pub comparand: Option<String>,
    /// The check's error for an Error alert that fired on a failure; `None` for a recovery and
    /// for every other type.
    pub error: Option<String>,
    /// A one-line human description: `check failed`, `recovered`, `content changed`,
    /// `2 pages added, 1 page removed`, `contains "in stock"`, `number > 100`,
    /// `number increased from 100 to 120`, `added "sale"`, `2 pages added`, ...
    pub synthetic_expression: String,
    /// For Added and Removed: the added (removed) pieces of text, or for a Portal monitor the
    /// URLs of the pages, that matched the operand. Empty for the other types.
    pub matches: Vec<String>,
    /// When what this notification reports was first seen, where that is earlier than the
    /// check that raised it: the first check that showed a change confirmed later, the first
    /// failed check of a failure that lasted ([`confirm`]). `None` from [`evaluate`], which
    /// judges one check alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_seen: Option<chrono::DateTime<chrono::Utc>>,
    /// Why the rules were in doubt, when they were: the change sits where the monitor's noise
    /// masks would have hidden it, and is notified because some of its lines are news
    /// ([`noise::lines`]). A notification says it, so a person knows the part changed often
    /// before. `None` from [`evaluate`] and for plain changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub doubt: Option<String>,
}

impl Raised {
    /// Whether this is the one notification an Error alert raises when a monitor recovers.
    pub fn is_recovery(&self) -> bool {
        self.alert.kind == AlertType::Error && self.error.is_none()
    }
}

impl AlertState {
    /// The state after the checks of `history`, given newest first (the order of the API's
    /// history): the newest entry tells how the last check ended, the newest successful one
    /// gives the last value. Entries are read as [`Check::from`] reads them.
    pub fn from_history<'a>(history: impl IntoIterator<Item = &'a ClientData>) -> Self {
        let mut state = AlertState::default();
        for data in history {
            let check = Check::from(data);
            if state.last_check.is_none() {
                state.last_check = Some(match check {
                    Check::Value(_) => LastCheck::Succeeded,
                    Check::Failed(_) => LastCheck::Failed,
                });
            }
            if let Check::Value(value) = check {
                state.last_value = Some(value.to_string());
                break;
            }
        }
        state
    }

    /// Records `check` as the latest: it becomes the previous check of the next evaluation and,
    /// when it succeeded, its value the last value.
    pub fn record(&mut self, check: Check<'_>) {
        match check {
            Check::Value(value) => {
                self.last_check = Some(LastCheck::Succeeded);
                self.last_value = Some(value.to_string());
            }
            Check::Failed(_) => self.last_check = Some(LastCheck::Failed),
        }
    }

    /// [`evaluate`]s `check` against this state, then [`record`](AlertState::record)s it.
    pub fn observe(
        &mut self,
        check: Check<'_>,
        alerts: &[Alert],
        subject: Subject<'_>,
    ) -> Vec<Raised> {
        let raised = evaluate(self, check, alerts, subject);
        self.record(check);
        raised
    }
}

/// The notifications `check` raises, given the `state` before it, the monitor's `alerts` and
/// what was checked.
///
/// One notification at most per alert, in the order of `alerts`; alerts that do not apply to
/// `subject` ([`Subject::applies`]) are skipped. An empty result means nothing to notify.
/// The rules are in the [module documentation](self).
pub fn evaluate(
    state: &AlertState,
    check: Check<'_>,
    alerts: &[Alert],
    subject: Subject<'_>,
) -> Vec<Raised> {
    let Some(last_check) = state.last_check else {
        // The baseline: only a failure can raise anything, and only Error.
        return match check {
            Check::Failed(error) => error_alerts(alerts, subject, state, Some(error), None),
            Check::Value(_) => Vec::new(),
        };
    };
    let current = match check {
        Check::Failed(error) => {
            return if last_check == LastCheck::Failed {
                Vec::new()
            } else {
                error_alerts(alerts, subject, state, Some(error), None)
            };
        }
        Check::Value(current) => current,
    };
    let mut raised = if last_check == LastCheck::Failed {
        error_alerts(alerts, subject, state, None, Some(current))
    } else {
        Vec::new()
    };
    let mut judge = Judge {
        subject,
        previous: state.last_value.as_deref(),
        current,
        keys: None,
        change: None,
    };
    for alert in alerts {
        if alert.kind == AlertType::Error || !subject.applies(alert.kind) {
            continue;
        }
        if let Some(found) = judge.alert(alert) {
            raised.push(Raised {
                alert: alert.clone(),
                job_type: subject.job_type(),
                page_url: page_url(subject),
                current: Some(current.to_string()),
                comparand: found.comparand,
                error: None,
                synthetic_expression: found.expression,
                matches: found.matches,
                first_seen: None,
                doubt: None,
            });
        }
    }
    raised
}

/// The Error notifications: on a failure (`error` set) or on the recovery (`current` set).
fn error_alerts(
    alerts: &[Alert],
    subject: Subject<'_>,
    state: &AlertState,
    error: Option<&str>,
    current: Option<&str>,
) -> Vec<Raised> {
    if !subject.applies(AlertType::Error) {
        return Vec::new();
    }
    let expression = if error.is_some() {
        "check failed"
    } else {
        "recovered"
    };
    alerts
        .iter()
        .filter(|alert| alert.kind == AlertType::Error)
        .map(|alert| Raised {
            alert: alert.clone(),
            job_type: subject.job_type(),
            page_url: page_url(subject),
            current: current.map(str::to_string),
            comparand: state.last_value.clone(),
            error: error.map(str::to_string),
            synthetic_expression: expression.to_string(),
            matches: Vec::new(),
            first_seen: None,
            doubt: None,
        })
        .collect()
}

fn page_url(subject: Subject<'_>) -> Option<String> {
    match subject {
        Subject::PortalPage { url } => Some(url.to_string()),
        _ => None,
    }
}

/// The operand of `alert`: its `value`, or `parameters.value` when that is empty.
pub fn operand(alert: &Alert) -> &str {
    match alert.value.as_deref() {
        Some(value) if !value.is_empty() => value,
        _ => alert
            .parameters
            .as_ref()
            .and_then(|p| p.value.as_deref())
            .unwrap_or(""),
    }
}

/// What the previous successful value lost and the current value gained.
struct Change {
    added: Vec<String>,
    removed: Vec<String>,
}

impl Change {
    /// For a Portal's own value `old` and `new` are the values (URL lists, line by line);
    /// otherwise their comparison keys.
    fn between(subject: Subject<'_>, old: &str, new: &str) -> Change {
        if subject == Subject::Portal {
            // A list of URLs: a page appears or disappears as a whole line, whatever a word
            // diff would make of the neighbouring URLs.
            let old_lines: HashSet<&str> = old.lines().collect();
            let new_lines: HashSet<&str> = new.lines().collect();
            let only_in = |lines: &str, other: &HashSet<&str>| {
                lines
                    .lines()
                    .filter(|line| !line.is_empty() && !other.contains(line))
                    .map(str::to_string)
                    .collect()
            };
            return Change {
                added: only_in(new, &old_lines),
                removed: only_in(old, &new_lines),
            };
        }
        let mut change = Change {
            added: Vec::new(),
            removed: Vec::new(),
        };
        for element in crate::diff::diff(old, new) {
            let text = element.text.as_deref().unwrap_or("").trim();
            if text.is_empty() {
                continue;
            }
            match element.operation {
                DiffOperation::Insert => change.added.push(text.to_string()),
                DiffOperation::Delete => change.removed.push(text.to_string()),
                DiffOperation::Equal => {}
            }
        }
        change
    }
}

/// Why an alert fired.
struct Found {
    comparand: Option<String>,
    expression: String,
    matches: Vec<String>,
}

/// Judges the alerts of one successful check that has a previous check. The comparison keys
/// are made once and the change diffed once, each only when an alert needs it.
struct Judge<'a> {
    subject: Subject<'a>,
    previous: Option<&'a str>,
    current: &'a str,
    /// The line keys ([`line_key`]) of the previous value (when there is one) and the current
    /// one.
    keys: Option<(Option<String>, String)>,
    change: Option<Change>,
}

impl Judge<'_> {
    fn keys(&mut self) -> (Option<&str>, &str) {
        let (previous, current) = (self.previous, self.current);
        let (old, new) = self
            .keys
            .get_or_insert_with(|| (previous.map(line_key), line_key(current)));
        (old.as_deref(), new.as_str())
    }

    fn change(&mut self) -> Option<&Change> {
        let previous = self.previous?;
        if self.change.is_none() {
            let change = if self.subject == Subject::Portal {
                Change::between(self.subject, previous, self.current)
            } else {
                let subject = self.subject;
                let (old, new) = self.keys();
                Change::between(subject, old?, new)
            };
            self.change = Some(change);
        }
        self.change.as_ref()
    }

    fn alert(&mut self, alert: &Alert) -> Option<Found> {
        let compare = alert
            .parameters
            .as_ref()
            .map(|p| p.compare)
            .unwrap_or_default();
        let operand = operand(alert);
        match alert.kind {
            // Judged on how long something lasted, never on one check ([`lasting`]).
            AlertType::Error | AlertType::Unchanged => None,
            AlertType::NotEq => self.not_eq(compare),
            AlertType::Eq
            | AlertType::Contains
            | AlertType::NotContains
            | AlertType::Gt
            | AlertType::Lt => self.edge(alert.kind, compare, operand),
            AlertType::Increased | AlertType::Decreased => self.moved(alert.kind, compare, operand),
            AlertType::Added | AlertType::Removed => {
                self.added_removed(alert.kind, compare, operand)
            }
        }
    }

    fn previous_found(&self, expression: String, matches: Vec<String>) -> Option<Found> {
        Some(Found {
            comparand: self.previous.map(str::to_string),
            expression,
            matches,
        })
    }

    fn not_eq(&mut self, compare: CompareType) -> Option<Found> {
        let previous = self.previous?;
        let changed = match compare {
            CompareType::All => !same(previous, self.current),
            CompareType::CaseInsensitive => !key_chars(previous)
                .flat_map(char::to_lowercase)
                .eq(key_chars(self.current).flat_map(char::to_lowercase)),
            CompareType::Added => !self.change()?.added.is_empty(),
            CompareType::Removed => !self.change()?.removed.is_empty(),
        };
        if !changed {
            return None;
        }
        let expression = if self.subject == Subject::Portal {
            let change = self.change()?;
            let mut parts = Vec::new();
            if !change.added.is_empty() {
                parts.push(format!("{} added", pages(change.added.len())));
            }
            if !change.removed.is_empty() {
                parts.push(format!("{} removed", pages(change.removed.len())));
            }
            if parts.is_empty() {
                "pages changed".to_string()
            } else {
                parts.join(", ")
            }
        } else {
            "content changed".to_string()
        };
        self.previous_found(expression, Vec::new())
    }

    /// Eq, Contains, NotContains, Gt and Lt: true now and not on the previous value.
    fn edge(&mut self, kind: AlertType, compare: CompareType, operand: &str) -> Option<Found> {
        let condition = Condition::new(kind, compare, operand)?;
        let now = match compare {
            CompareType::All => Some(Cow::Borrowed(self.keys().1)),
            CompareType::CaseInsensitive => Some(Cow::Owned(self.keys().1.to_lowercase())),
            CompareType::Added => self.change().and_then(|c| joined(&c.added)).map(Cow::Owned),
            CompareType::Removed => self
                .change()
                .and_then(|c| joined(&c.removed))
                .map(Cow::Owned),
        };
        if !condition.holds(now.as_deref()) {
            return None;
        }
        let before = match compare {
            CompareType::All => self.keys().0.map(Cow::Borrowed),
            CompareType::CaseInsensitive => self.keys().0.map(|p| Cow::Owned(p.to_lowercase())),
            // Each change is its own event (see the module docs): nothing to carry over.
            CompareType::Added | CompareType::Removed => None,
        };
        if condition.holds(before.as_deref()) {
            return None;
        }
        Some(Found {
            comparand: Some(operand.to_string()),
            expression: condition.describe(compare, operand),
            matches: Vec::new(),
        })
    }

    fn moved(&mut self, kind: AlertType, compare: CompareType, operand: &str) -> Option<Found> {
        let threshold = Threshold::parse(operand)?;
        let (old, new) = match compare {
            CompareType::All | CompareType::CaseInsensitive => {
                let (previous, current) = self.keys();
                (Decimal::first_in(previous?)?, Decimal::first_in(current)?)
            }
            CompareType::Added | CompareType::Removed => {
                let change = self.change()?;
                (
                    Decimal::first_in(&joined(&change.removed)?)?,
                    Decimal::first_in(&joined(&change.added)?)?,
                )
            }
        };
        let increased = kind == AlertType::Increased;
        if !moved_more_than(old, new, increased, threshold) {
            return None;
        }
        let direction = if increased { "increased" } else { "decreased" };
        self.previous_found(
            format!("number {direction} from {old} to {new}"),
            Vec::new(),
        )
    }

    fn added_removed(
        &mut self,
        kind: AlertType,
        compare: CompareType,
        operand: &str,
    ) -> Option<Found> {
        let added = kind == AlertType::Added;
        let subject = self.subject;
        let change = self.change()?;
        let pieces = if added {
            &change.added
        } else {
            &change.removed
        };
        // The pieces are in key form (see the module documentation), so the operand too.
        let keyed_operand = line_key(operand);
        let folded_operand = keyed_operand.to_lowercase();
        let matches: Vec<String> = pieces
            .iter()
            .filter(|piece| match compare {
                CompareType::CaseInsensitive => piece.to_lowercase().contains(&folded_operand),
                _ => piece.contains(keyed_operand.as_str()),
            })
            .cloned()
            .collect();
        if matches.is_empty() {
            return None;
        }
        let verb = if added { "added" } else { "removed" };
        let expression = if subject == Subject::Portal {
            format!("{} {verb}", pages(matches.len()))
        } else if operand.is_empty() {
            format!("text {verb}")
        } else {
            format!("{verb} {operand:?}")
        };
        self.previous_found(expression, matches)
    }
}

fn pages(n: usize) -> String {
    if n == 1 {
        "1 page".to_string()
    } else {
        format!("{n} pages")
    }
}

/// Pieces of a change as one text, a line each, so no match spans two of them; `None` when the
/// change has none: there is no value to look at.
fn joined(pieces: &[String]) -> Option<String> {
    (!pieces.is_empty()).then(|| pieces.join("\n"))
}

/// An edge-triggered condition with its operand read once.
enum Condition {
    Eq(String),
    Contains(String),
    NotContains(String),
    Gt(Decimal),
    Lt(Decimal),
}

impl Condition {
    /// `None` when the operand cannot serve (Gt and Lt without a number): the alert never
    /// raises.
    /// Text operands are taken by their comparison key, as the values are.
    fn new(kind: AlertType, compare: CompareType, operand: &str) -> Option<Condition> {
        let key = line_key(operand);
        let text = if compare == CompareType::CaseInsensitive {
            key.to_lowercase()
        } else {
            key
        };
        Some(match kind {
            AlertType::Eq => Condition::Eq(text.trim().to_string()),
            AlertType::Contains => Condition::Contains(text),
            AlertType::NotContains => Condition::NotContains(text),
            AlertType::Gt => Condition::Gt(Decimal::first_in(operand)?),
            AlertType::Lt => Condition::Lt(Decimal::first_in(operand)?),
            _ => return None,
        })
    }

    /// Whether it holds for `text`; with no text (no value) it does not.
    fn holds(&self, text: Option<&str>) -> bool {
        let Some(text) = text else {
            return false;
        };
        match self {
            Condition::Eq(operand) => text.trim() == operand,
            Condition::Contains(operand) => text.contains(operand.as_str()),
            Condition::NotContains(operand) => !text.contains(operand.as_str()),
            Condition::Gt(operand) => {
                Decimal::first_in(text).is_some_and(|n| n.compare(*operand) == Ordering::Greater)
            }
            Condition::Lt(operand) => {
                Decimal::first_in(text).is_some_and(|n| n.compare(*operand) == Ordering::Less)
            }
        }
    }

    fn describe(&self, compare: CompareType, operand: &str) -> String {
        let what = match compare {
            CompareType::All | CompareType::CaseInsensitive => "",
            CompareType::Added => "added text ",
            CompareType::Removed => "removed text ",
        };
        let any_case = if compare == CompareType::CaseInsensitive {
            " (any case)"
        } else {
            ""
        };
        match self {
            Condition::Eq(_) => format!("{what}equals {operand:?}{any_case}"),
            Condition::Contains(_) => format!("{what}contains {operand:?}{any_case}"),
            Condition::NotContains(_) => format!("{what}does not contain {operand:?}{any_case}"),
            Condition::Gt(_) => format!("{what}number > {}", operand.trim()),
            Condition::Lt(_) => format!("{what}number < {}", operand.trim()),
        }
    }
}

/// How far a number must move for Increased and Decreased.
#[derive(Clone, Copy)]
enum Threshold {
    /// Any move in the direction (empty operand).
    Any,
    /// More than this much.
    Absolute(Decimal),
    /// More than this percentage of the previous number.
    Percent(Decimal),
}

impl Threshold {
    /// `None` when a non-empty operand holds no number: the alert never raises.
    fn parse(operand: &str) -> Option<Threshold> {
        let operand = operand.trim();
        if operand.is_empty() {
            return Some(Threshold::Any);
        }
        match operand.strip_suffix('%') {
            Some(percent) => Decimal::first_in(percent).map(|n| Threshold::Percent(n.abs())),
            None => Decimal::first_in(operand).map(|n| Threshold::Absolute(n.abs())),
        }
    }
}

fn moved_more_than(old: Decimal, new: Decimal, increased: bool, threshold: Threshold) -> bool {
    exact_move(old, new, increased, threshold)
        .unwrap_or_else(|| approximate_move(old, new, increased, threshold))
}

/// The move judged on the decimal digits; `None` when they overflow i128.
fn exact_move(old: Decimal, new: Decimal, increased: bool, threshold: Threshold) -> Option<bool> {
    let scale = old.scale.max(new.scale);
    let delta = new.rescale(scale)?.checked_sub(old.rescale(scale)?)?;
    let delta = if increased {
        delta
    } else {
        delta.checked_neg()?
    };
    if delta <= 0 {
        return Some(false);
    }
    let delta = Decimal {
        mantissa: delta,
        scale,
    };
    let ordering = match threshold {
        Threshold::Any => return Some(true),
        Threshold::Absolute(limit) => delta.exact_compare(limit)?,
        Threshold::Percent(percent) => {
            // delta * 100 > percent * |old|, kept in integers.
            let lhs = Decimal {
                mantissa: delta.mantissa.checked_mul(100)?,
                scale: delta.scale,
            };
            let rhs = Decimal {
                mantissa: percent.mantissa.checked_mul(old.mantissa.checked_abs()?)?,
                scale: percent.scale.checked_add(old.scale)?,
            };
            lhs.exact_compare(rhs)?
        }
    };
    Some(ordering == Ordering::Greater)
}

fn approximate_move(old: Decimal, new: Decimal, increased: bool, threshold: Threshold) -> bool {
    let (old, new) = (old.to_f64(), new.to_f64());
    let delta = if increased { new - old } else { old - new };
    match threshold {
        Threshold::Any => delta > 0.0,
        Threshold::Absolute(limit) => delta > limit.to_f64(),
        Threshold::Percent(percent) => delta * 100.0 > percent.to_f64() * old.abs(),
    }
}

/// The first decimal number in `text`, read as the alerts read it (see the module
/// documentation): `1,234.50`, `1.234,50` and `1 234,50` are all 1234.5.
///
/// ```
/// use wachet::alerts::first_number;
/// assert_eq!(first_number("Price: 1 234,50 EUR"), Some(1234.5));
/// assert_eq!(first_number("Temperature -3.5 °C"), Some(-3.5));
/// assert_eq!(first_number("sold out"), None);
/// ```
pub fn first_number(text: &str) -> Option<f64> {
    Decimal::first_in(text).map(Decimal::to_f64)
}

/// A number as written: `mantissa / 10^scale`, so comparisons are exact.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Decimal {
    mantissa: i128,
    scale: u32,
}

/// Most digits kept: i128 holds 38, and two numbers must still align.
const MAX_DIGITS: usize = 36;

/// Characters that separate groups of three digits in the `1 234,50` style.
fn is_group_space(c: char) -> bool {
    matches!(
        c,
        ' ' | '\u{a0}' | '\u{202f}' | '\u{2009}' | '\'' | '\u{2019}'
    )
}

impl Decimal {
    fn first_in(text: &str) -> Option<Decimal> {
        let start = text.find(|c: char| c.is_ascii_digit())?;
        let mut before = text[..start].chars().rev();
        let negative = match before.next() {
            Some(sign @ ('-' | '\u{2212}' | '+')) => {
                !before.next().is_some_and(char::is_alphanumeric) && sign != '+'
            }
            _ => false,
        };
        // Enough for MAX_DIGITS with separators between every group.
        let chars: Vec<char> = text[start..].chars().take(3 * MAX_DIGITS).collect();
        let digit = |i: usize| chars.get(i).is_some_and(char::is_ascii_digit);
        let run = |from: usize| (from..).take_while(|&i| digit(i)).count();
        let group_of_three = |i: usize| run(i) == 3;

        let first = run(0);
        let mut integer: String = chars[..first].iter().collect();
        let mut at = first;
        let mut decimal_marks: &[char] = &['.', ','];
        // Thousands groups: only after 1 to 3 digits that do not start with 0 (`0.125` is a
        // fraction), and only groups of exactly three digits.
        if (1..=3).contains(&first)
            && chars[0] != '0'
            && let Some(&separator) = chars.get(first)
        {
            let grouping = matches!(separator, ',' | '.') || is_group_space(separator);
            if grouping && group_of_three(first + 1) {
                while chars.get(at).is_some_and(|&c| {
                    c == separator || (is_group_space(separator) && is_group_space(c))
                }) && group_of_three(at + 1)
                {
                    integer.extend(&chars[at + 1..at + 4]);
                    at += 4;
                }
                decimal_marks = match separator {
                    ',' => &['.'],
                    '.' => &[','],
                    _ => &['.', ','],
                };
            }
        }
        let mut fraction = String::new();
        if chars.get(at).is_some_and(|c| decimal_marks.contains(c)) && digit(at + 1) {
            fraction.extend(&chars[at + 1..at + 1 + run(at + 1)]);
        }
        let integer = integer.trim_start_matches('0');
        if integer.len() > MAX_DIGITS {
            return None;
        }
        fraction.truncate(MAX_DIGITS - integer.len());
        let digits = format!("{integer}{fraction}");
        let magnitude: i128 = if digits.is_empty() {
            0
        } else {
            digits.parse().ok()?
        };
        Some(Decimal {
            mantissa: if negative { -magnitude } else { magnitude },
            scale: u32::try_from(fraction.len()).ok()?,
        })
    }

    fn abs(self) -> Decimal {
        Decimal {
            mantissa: self.mantissa.saturating_abs(),
            scale: self.scale,
        }
    }

    fn to_f64(self) -> f64 {
        self.mantissa as f64 / 10f64.powi(i32::try_from(self.scale).unwrap_or(i32::MAX))
    }

    /// The mantissa at a larger `scale`, if it fits.
    fn rescale(self, scale: u32) -> Option<i128> {
        10i128
            .checked_pow(scale.checked_sub(self.scale)?)?
            .checked_mul(self.mantissa)
    }

    fn exact_compare(self, other: Decimal) -> Option<Ordering> {
        let scale = self.scale.max(other.scale);
        Some(self.rescale(scale)?.cmp(&other.rescale(scale)?))
    }

    fn compare(self, other: Decimal) -> Ordering {
        self.exact_compare(other)
            .unwrap_or_else(|| self.to_f64().total_cmp(&other.to_f64()))
    }
}

impl fmt::Display for Decimal {
    /// Plain digits with a `.` and no trailing zeros: `1234.5`, `-3`, `0.125`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let digits = self.mantissa.unsigned_abs().to_string();
        let scale = usize::try_from(self.scale).unwrap_or(usize::MAX);
        let padded = if digits.len() <= scale {
            format!("{}{digits}", "0".repeat(scale - digits.len() + 1))
        } else {
            digits
        };
        let (integer, fraction) = padded.split_at(padded.len() - scale);
        let fraction = fraction.trim_end_matches('0');
        if self.mantissa < 0 {
            f.write_str("-")?;
        }
        f.write_str(integer)?;
        if !fraction.is_empty() {
            write!(f, ".{fraction}")?;
        }
        Ok(())
    }
}
