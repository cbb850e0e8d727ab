//! Learned noise: the spans of a monitor's value that change without meaning.
//!
//! STUB (issue 19 item 5): the types and hooks the confirmation and the service use are in
//! place; learning itself returns nothing yet.
//!
//! Two sources teach a monitor its noise:
//!
//! - quick samples when the monitor is created or its selection changes: the caller fetches
//!   the value [`QUICK_SAMPLES`] more times, [`QUICK_SPACING`] apart, before it records the
//!   first check, and [`learn`] returns the masks that cover their differences (values
//!   seconds apart differ only by noise), each generalised to the text around it;
//! - later checks ([`LearnState::observe`], called by [`super::confirm::decide`]): a span that
//!   keeps changing from check to check is noise once it changed on most of the recent checks.

use super::compare::Comparator;
use crate::model::NoiseMask;
use serde::{Deserialize, Serialize};

/// What a monitor's learning remembers between checks (kept in
/// [`super::confirm::ConfirmState`]). Bounded: a fixed number of candidate spans.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LearnState {}

impl LearnState {
    /// Records a check whose masked line key ([`super::compare::Comparator::masked_line_key`])
    /// is `after`, the previous check's being `before`; returns the masks that became noise
    /// with it (spans that changed on most recent checks), none most of the time.
    pub fn observe(&mut self, before: &str, after: &str) -> Vec<NoiseMask> {
        let _ = (before, after);
        Vec::new()
    }

    /// What to tell a person about this monitor's noise, when there is something to tell (for
    /// example that no part of the value stays the same from check to check).
    pub fn notice(&self) -> Option<String> {
        None
    }
}

/// How many more times a new monitor's value is fetched, after its first check, to learn its
/// noise ([`learn`]).
pub const QUICK_SAMPLES: usize = 2;

/// The pause between those fetches: long enough for a clock shown to the second to tick.
pub const QUICK_SPACING: std::time::Duration = std::time::Duration::from_millis(1500);

/// The masks that cover the differences among `samples`, values of one monitor taken seconds
/// apart (so nothing really changed) and compared as `comparator` compares them, each
/// generalised to the text around it (a counter between the same words, a date in the same
/// place). Masks `comparator` already has are not returned again.
pub fn learn(comparator: &Comparator, samples: &[&str]) -> Vec<NoiseMask> {
    let _ = (comparator, samples);
    Vec::new()
}
