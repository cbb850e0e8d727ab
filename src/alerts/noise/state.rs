//! Learning from later checks: [`LearnState`], the bounded table of spans seen changing, and
//! the rule that makes one of them noise.
//!
//! Every check whose value differs from the confirmed one is compared with it
//! ([`LearnState::observe`]); each changed place is a candidate, named by the mask that would
//! cover it (so the same counter between the same words is one candidate from check to
//! check). A candidate is *fresh* on a check when it shows a text it has not shown before
//! (the texts are remembered as short hashes, never whole values). Checks equal to the
//! confirmed value count too ([`LearnState::quiet`]), so the window is the last
//! [`WINDOW`] checks. A candidate becomes a learned mask when, within that window,
//!
//! - it was fresh on three checks, two of them in a row (a real change is seen twice in a
//!   row with the *same* text, once when it appears and once when it is confirmed, so a real
//!   change, its confirmation and its revert count once), or
//! - it was fresh on four checks (a span that changes on every other check), or
//! - it is a block of lines that was fresh on three checks (a feed bringing new items), or
//! - it moved (showed another text than on the check before) on four checks and has shown
//!   three texts or more: an ad or a promotion rotating through a few wordings shows no fresh
//!   text once each was seen, while a real change and its confirmation move once, and a real
//!   change and its revert show two texts.
//!
//! - it showed a third text on the early check that confirms a change
//!   ([`LearnState::observe_early`]): the confirmed value showed one text, the changed check
//!   another, and the check seconds later a third, never shown before. Values seconds apart
//!   differ only by noise, as a new monitor's quick samples do; a real change shows two texts
//!   (its confirmation shows the new one again, a stale replica the old one), so a rotation
//!   the quick samples missed is learned on its first round instead of after several alerts.
//!
//! - since the monitor last confirmed a change in it, it showed three texts or more and came
//!   back to one of them, on a regular check or on a flip to a variant that lasted lately
//!   ([`LearnState::observe_flip`]): an ad rotating through a few wordings, each of which may
//!   have lasted once and so flips silently since, keeps coming back, while a real change is
//!   confirmed ([`LearnState::confirmed`]) and starts a new round, so a real change seen
//!   through an A/B page's other template shows two texts in its round, and a countdown whose
//!   every step is confirmed one.
//!
//! Noise slower than the window is learned over the last [`HORIZON`] checks, where each of its
//! steps lasts past confirmation as a real change does:
//!
//! - it was fresh on five of them (a ticker that never repeats, every few checks), or
//! - it came back to a text it showed before, other than the one just before, on two of them,
//!   having shown three texts or more (a box rotating through a few products, a wind
//!   direction): a real change and its revert show two texts, and a third real change that
//!   brings back the first text comes back once.
//!
//! Lines are never hidden by it: a new line, a line gone and a number changed in a line are
//! news whatever the masks ([`super::lines`]).
//!
//! A counter that moves more slowly than that (three tickets left, then two) is not learned:
//! nothing tells it from a real change people want to hear of. Noise known by its words (a
//! paywall meter's count, a consent banner that came or went: [`super::known`]) is learned on
//! the check it first moves.
//!
//! A date that rolls forward once a day changes less often than that; it is learned by its
//! meaning instead ([`LearnState::observe_at`]):
//!
//! - a date span that moves by one day when the page's clock turned to the next day since the
//!   check before (a year by one year when the clock's year turned) moves with the clock and
//!   is learned at once. The clock is the server's `Date` header where the caller knows it (a
//!   cached page shows the day it was made, and a server's clock may not be the checker's),
//!   else the check's time;
//! - a date span whose new text is the check's own date (give or take a day for time zones),
//!   twice on two different days, is the page showing today's date.
//!
//! A real date change to any other day, or on a check where the clock did not turn, never
//! counts.
//!
//! A relative time that only grew older ("12 min ago" then "13 min ago", "59 min ago" then "1
//! h ago") moves with the clock too, and is learned at once wherever it stands ([`dates::aged`]):
//! a new headline's age ticks on from its first check, before any mask learned beside older
//! headlines can cover it. One that grew younger (an item posted again) counts as any change.

use super::classes::Class;
use super::dates;
use super::spans::{Found, differences, example};
use crate::model::NoiseMask;
use chrono::{DateTime, Datelike, NaiveDate, Utc};
use serde::{Deserialize, Serialize};

/// How many recent checks the learning looks at.
pub const WINDOW: u32 = 8;

/// How many recent checks the learning of slow noise looks at.
pub const HORIZON: u32 = 24;

/// The bits of [`HORIZON`] checks.
const HORIZON_BITS: u32 = (1 << HORIZON) - 1;

/// The bits of [`WINDOW`] checks.
const WINDOW_BITS: u32 = (1 << WINDOW) - 1;

/// The most candidate spans a monitor's learning keeps.
pub const MAX_CANDIDATES: usize = 32;

/// Texts remembered per candidate.
const MAX_TEXTS: usize = 8;

/// What a monitor's learning remembers between checks (kept in
/// [`crate::alerts::confirm::ConfirmState`], serialized beside every check's state). Bounded:
/// at most [`MAX_CANDIDATES`] candidates of a pattern, a short example and a few hashes each.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LearnState {
    /// Spans seen changing, not (yet) noise.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub candidates: Vec<SpanCandidate>,
    /// Of the last [`WINDOW`] checks, those that differed everywhere (no stable line) with a
    /// value not seen before: bit 0 is the latest.
    #[serde(skip_serializing_if = "is_zero")]
    pub unstable: u8,
    /// Hashes of the values seen on those checks (at most eight), so a real change of a
    /// one-line value, its confirmation and its revert count once.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unstable_values: Vec<u32>,
    /// The day of the page's clock at the check before ([`LearnState::observe_at`]), so a
    /// date that turns with the clock can be told from one a person changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clock: Option<NaiveDate>,
}

pub(crate) fn is_zero(bits: &u8) -> bool {
    *bits == 0
}

fn is_zero_u32(bits: &u32) -> bool {
    *bits == 0
}

/// A span seen changing ([`LearnState`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SpanCandidate {
    /// The mask that covers it.
    pub pattern: String,
    /// Its latest text, shortened.
    pub example: String,
    /// Of the last [`HORIZON`] checks, those on which it showed a text not seen before: bit 0
    /// is the latest.
    pub fresh: u32,
    /// Hashes of the texts it showed (at most eight).
    pub texts: Vec<u32>,
    /// For a date span: the days on which it showed that day's date.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub today: Vec<NaiveDate>,
    /// Of the last [`WINDOW`] checks, those on which it differed from the confirmed value
    /// (with a fresh text or one seen before): bit 0 is the latest.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub changed: u8,
    /// Of those, the checks on which it moved: it showed another text than on the check
    /// before (a check showing the same text again confirms a move, it makes none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub moved: u8,
    /// Of the last [`HORIZON`] checks, those on which it came back to a text shown before,
    /// other than the one just before, having shown three or more: bit 0 is the latest.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub returned: u32,
    /// Hash of the text it showed last.
    #[serde(default)]
    pub last: u32,
    /// Whether it spans lines (a list, a feed, a section).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub block: bool,
    /// Hashes of the texts it showed since the monitor last confirmed a change in it (at most
    /// eight), flips to a recent variant included ([`LearnState::observe_flip`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub since: Vec<u32>,
}

impl LearnState {
    /// Records a check whose masked line key ([`crate::alerts::compare::Comparator::masked_line_key`])
    /// is `after`, the confirmed value's being `before`; returns the masks that became noise
    /// with it, none most of the time. Same as [`LearnState::observe_at`] without a date.
    pub fn observe(&mut self, before: &str, after: &str) -> Vec<NoiseMask> {
        self.observe_at(before, after, None)
    }

    /// [`LearnState::observe`] for a check run at `at`, so a date span showing the check's own
    /// date can be recognised (see the [module documentation](self)). Outcomes:
    ///
    /// - no candidate reached the rule: an empty list, the candidates updated;
    /// - some did: their masks (`learned`, `active`, with an example), removed from the table;
    /// - the two keys share no line: nothing is learned, and the check counts towards
    ///   [`LearnState::notice`].
    pub fn observe_at(
        &mut self,
        before: &str,
        after: &str,
        at: Option<DateTime<Utc>>,
    ) -> Vec<NoiseMask> {
        self.observe_check(before, after, at, How::Regular)
    }

    /// Records a check that flipped to a variant of the value that lasted lately
    /// ([`crate::alerts::confirm::variants`]): the confirmed value switches silently, and the
    /// spans seen changing before move with it without showing new text. Returns the masks
    /// that became noise: a span that, since the monitor last confirmed a change in it, showed
    /// three texts or more and came back to one of them (see the [module documentation](self)).
    pub fn observe_flip(&mut self, before: &str, after: &str) -> Vec<NoiseMask> {
        self.observe_check(before, after, None, How::Flip)
    }

    /// The check just judged became the confirmed value (a change was confirmed): the texts
    /// its changed spans show from now on start a new round ([`SpanCandidate::since`]), so a
    /// real change seen through the other template of an A/B page never adds up to a rotation.
    pub fn confirmed(&mut self) {
        for c in &mut self.candidates {
            if c.changed & 1 != 0 {
                c.since = vec![c.last];
            }
        }
    }

    /// [`LearnState::observe_at`] for the early check that confirms a change: seconds after
    /// the check before, which differed from `before` and is not confirmed yet (the caller
    /// asked for this check to confirm it). A span that shows a third text on it, never shown
    /// before, is noise at once (see the [module documentation](self)).
    pub fn observe_early(
        &mut self,
        before: &str,
        after: &str,
        at: Option<DateTime<Utc>>,
    ) -> Vec<NoiseMask> {
        self.observe_check(before, after, at, How::Early)
    }

    fn observe_check(
        &mut self,
        before: &str,
        after: &str,
        at: Option<DateTime<Utc>>,
        how: How,
    ) -> Vec<NoiseMask> {
        self.tick();
        let day = at.map(|t| t.date_naive());
        let turned = self.turn(day);
        if before == after {
            return Vec::new();
        }
        let found = differences(before, after);
        if found.nothing_stable {
            for value in [before, after] {
                let h = hash(value);
                if !self.unstable_values.contains(&h) {
                    // A value not seen before: the check that shows it counts.
                    self.unstable |= u8::from(value == after);
                    remember(&mut self.unstable_values, h);
                }
            }
            return Vec::new();
        }
        // Noise known by its words (a consent banner that came or went, a paywall meter's
        // step) is noise on its first sighting: its course is a real change's.
        let mut learned = super::known::explaining(before, after);
        for f in found.found {
            if let Some(mask) = self.saw(f, day, turned, how) {
                learned.push(mask);
            }
        }
        learned
    }

    /// Records a check whose value is the confirmed one (no difference): it moves the window.
    pub fn quiet(&mut self) {
        self.tick();
    }

    /// [`LearnState::quiet`] for a check whose page's clock read `at`: the clock's day is kept
    /// for the next check.
    pub fn quiet_at(&mut self, at: Option<DateTime<Utc>>) {
        self.tick();
        self.turn(at.map(|t| t.date_naive()));
    }

    /// Keeps `day` as the clock's and returns how it turned since the check before, when it
    /// turned to the next day (both known); `None` otherwise. Only a turn of one day counts: a
    /// date that moves by a week between two checks a week apart may as well be a person's.
    fn turn(&mut self, day: Option<NaiveDate>) -> Option<Turn> {
        let before = self.clock;
        if day.is_some() {
            self.clock = day;
        }
        match (before, day) {
            (Some(from), Some(to)) if (to - from).num_days() == 1 => Some(Turn { from, to }),
            _ => None,
        }
    }

    /// Whether the latest check and at least three more of the last [`WINDOW`] differed
    /// everywhere, each with a value not seen before: the value has no stable part. (Four,
    /// not three: the confirmation raises a page that never repeats once, on its fourth
    /// value, before this holds.)
    pub fn is_unstable(&self) -> bool {
        self.unstable & 1 == 1 && self.unstable.count_ones() >= 4
    }

    /// What to tell a person about this monitor's noise, when there is something to tell:
    /// that no part of the value stays the same from check to check ([`UNSTABLE`]).
    pub fn notice(&self) -> Option<String> {
        self.is_unstable().then(|| UNSTABLE.to_string())
    }

    fn tick(&mut self) {
        self.unstable <<= 1;
        for c in &mut self.candidates {
            c.fresh = (c.fresh << 1) & HORIZON_BITS;
            c.returned = (c.returned << 1) & HORIZON_BITS;
            c.changed <<= 1;
            c.moved <<= 1;
        }
        // A candidate with nothing fresh or back in the horizon is forgotten, unless it
        // remembers the days of a date or the course of a counter: those move too slowly.
        self.candidates
            .retain(|c| c.fresh != 0 || c.returned != 0 || c.changed != 0 || !c.today.is_empty());
    }

    /// Counts `found` for its candidate; the mask when the candidate is now noise.
    fn saw(
        &mut self,
        found: Found,
        day: Option<NaiveDate>,
        turned: Option<Turn>,
        how: How,
    ) -> Option<NoiseMask> {
        let index = match self
            .candidates
            .iter()
            .position(|c| c.pattern == found.pattern)
        {
            Some(i) => i,
            // A flip shows text of a variant that lasted: it starts no candidate.
            None if how == How::Flip => return None,
            None => {
                if self.candidates.len() >= MAX_CANDIDATES {
                    // Make room: forget the candidate with the fewest fresh checks.
                    let weakest = self
                        .candidates
                        .iter()
                        .enumerate()
                        .min_by_key(|(_, c)| {
                            (c.fresh.count_ones() + c.changed.count_ones(), c.fresh)
                        })
                        .map(|(i, _)| i)?;
                    self.candidates.remove(weakest);
                }
                self.candidates.push(SpanCandidate {
                    pattern: found.pattern.clone(),
                    example: String::new(),
                    fresh: 0,
                    texts: vec![hash(&found.old)],
                    today: Vec::new(),
                    changed: 0,
                    moved: 0,
                    returned: 0,
                    last: 0,
                    block: false,
                    since: vec![hash(&found.old)],
                });
                self.candidates.len() - 1
            }
        };
        let c = &mut self.candidates[index];
        c.example = example(&found.new);
        c.block |= found.old.contains('\n') || found.new.contains('\n');
        let h = hash(&found.new);
        let confirming = c.changed & 2 != 0 && c.last == h;
        let fresh = !c.texts.contains(&h) && how != How::Flip;
        // The check before showed another text than the confirmed value's, and this one,
        // seconds later, a third never seen: three texts within one confirmation.
        let third = how == How::Early && c.changed & 2 != 0 && c.last != h && fresh;
        // Back to a text shown since the last confirmed change, after three or more, on a
        // check that is no early one (which may show the candidate of a change again).
        let cycled = how != How::Early
            && !confirming
            && c.last != h
            && c.since.len() >= 3
            && c.since.contains(&h);
        // Back to a text shown before, not the one just before, once three were shown: a slow
        // rotation's step (a flip is one already, and is handled as such).
        let back = how != How::Flip && !fresh && c.last != h && c.texts.len() >= 3;
        c.returned |= u32::from(back);
        c.changed |= 1;
        c.moved |= u8::from(!confirming);
        c.last = h;
        if fresh {
            c.fresh |= 1;
            remember(&mut c.texts, h);
        }
        if !c.since.contains(&h) {
            remember(&mut c.since, h);
        }
        if let Some(day) = day
            && found.class == Class::DateTime
            && dates::shows(&found.new, day)
            && !c.today.contains(&day)
        {
            c.today.push(day);
            if c.today.len() > 2 {
                c.today.remove(0);
            }
        }
        let rotating = c.moved.count_ones() >= 4 && c.texts.len() >= 3;
        let with_clock = turned.is_some_and(|t| t.moved(&found))
            || (found.class == Class::Relative && dates::aged(&found.old, &found.new));
        // A block of lines with new text on three of the last checks is a feed: a real edit of
        // a section, confirmed, shows new text once.
        let feed = c.block && (c.fresh & WINDOW_BITS).count_ones() >= 3;
        // Both windows are cut to the horizon as they move (`tick`).
        let slow = c.fresh.count_ones() >= 5 || c.returned.count_ones() >= 2;
        let noise = often(c.fresh)
            || slow
            || rotating
            || feed
            || third
            || cycled
            || with_clock
            || c.today.len() >= 2;
        if !noise {
            return None;
        }
        let c = self.candidates.remove(index);
        Some(NoiseMask {
            pattern: c.pattern,
            learned: true,
            active: true,
            example: Some(c.example),
        })
    }
}

/// Which check a difference was seen on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum How {
    /// A regular check.
    Regular,
    /// The early check that confirms a change, seconds after the check before.
    Early,
    /// A check that flipped to a variant that lasted lately.
    Flip,
}

/// How the page's clock turned between two checks: from one day to the next.
#[derive(Debug, Clone, Copy)]
struct Turn {
    from: NaiveDate,
    to: NaiveDate,
}

impl Turn {
    /// Whether `found` moved with the clock: a date span that moved by as many days as the
    /// clock did (today's date, a delivery date four days ahead), or a year that moved by as
    /// many years (a footer's, a copyright line's) when the clock's year turned. A person's
    /// edit of a date at the very check where the clock turns, by the same amount, is the one
    /// thing this takes for the clock.
    fn moved(self, found: &Found) -> bool {
        match found.class {
            Class::DateTime => {
                let days = (self.to - self.from).num_days();
                // A date without a year is read in either year of the clock.
                let read = |t: &str| {
                    let mut days = dates::read(t, self.from.year());
                    if self.to.year() != self.from.year() {
                        days.extend(dates::read(t, self.to.year()));
                    }
                    days
                };
                let (old, new) = (read(&found.old), read(&found.new));
                old.iter()
                    .any(|o| new.iter().any(|n| (*n - *o).num_days() == days))
            }
            Class::Number => {
                let year = |t: &str| {
                    let t = t.trim();
                    (t.len() == 4 && t.bytes().all(|b| b.is_ascii_digit()))
                        .then(|| t.parse::<i32>().ok())
                        .flatten()
                        .filter(|y| (1900..=2200).contains(y))
                };
                let years = self.to.year() - self.from.year();
                match (year(&found.old), year(&found.new)) {
                    (Some(o), Some(n)) => years != 0 && n - o == years,
                    _ => false,
                }
            }
            _ => false,
        }
    }
}

/// Whether a window of fresh checks (bit 0 the latest) makes a span noise: three fresh
/// checks, two of them in a row, or four.
fn often(fresh: u32) -> bool {
    let fresh = fresh & WINDOW_BITS;
    let n = fresh.count_ones();
    (n >= 3 && fresh & (fresh >> 1) != 0) || n >= 4
}

/// Adds `h` to a bounded list of hashes, forgetting the oldest.
fn remember(hashes: &mut Vec<u32>, h: u32) {
    if hashes.len() >= MAX_TEXTS {
        hashes.remove(0);
    }
    hashes.push(h);
}

/// The notice of a value with no stable part.
pub const UNSTABLE: &str = "Every part of this page changes on every check, so wachet shows its \
changes but does not alert on them. Choose a part of the page (xPath) that stays the same.";

/// FNV-1a: a hash that stays the same across builds and versions (it is stored).
pub(crate) fn hash(text: &str) -> u32 {
    text.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A check of a one-line span as the confirmation sees it: the confirmed text, the
    /// checked text, and whether the check is the early one confirming a change.
    type Step = (&'static str, &'static str, bool);

    fn learned(steps: &[Step]) -> usize {
        let mut state = LearnState::default();
        let page = |ad: &str| {
            format!("Aurora Espresso Machine\n129.99 USD\nSponsored: {ad}\nCustomers also bought")
        };
        steps
            .iter()
            .map(|&(before, after, early)| {
                let (before, after) = (page(before), page(after));
                if early {
                    state.observe_early(&before, &after, None).len()
                } else {
                    state.observe_at(&before, &after, None).len()
                }
            })
            .sum()
    }

    #[test]
    fn a_third_text_on_the_early_check_is_noise_and_two_texts_never_are() {
        let cases: [(&str, &[Step], usize); 6] = [
            (
                "an ad rotating within one confirmation",
                &[
                    ("Fresh beans", "SteelLine", false),
                    ("Fresh beans", "Free shipping", true),
                ],
                1,
            ),
            (
                "a real change and its confirmation",
                &[
                    ("In stock", "Only 2 left", false),
                    ("In stock", "Only 2 left", true),
                ],
                0,
            ),
            (
                "a countdown, each step confirmed",
                &[
                    ("3 left", "2 left", false),
                    ("3 left", "2 left", true),
                    ("2 left", "1 left", false),
                    ("2 left", "1 left", true),
                    ("1 left", "Sold out", false),
                    ("1 left", "Sold out", true),
                ],
                0,
            ),
            (
                "three texts on regular checks, none early",
                &[
                    ("In stock", "Only 2 left", false),
                    ("In stock", "Only 1 left", false),
                ],
                0,
            ),
            (
                "an older text back on the early check (a replica lagging two versions)",
                &[
                    ("Version 1", "Version 2", false),
                    ("Version 1", "Version 2", true),
                    ("Version 2", "Version 3", false),
                    ("Version 2", "Version 1", true),
                ],
                0,
            ),
            (
                "a stale replica showing the old text on the early check",
                &[
                    ("Version 1", "Version 2", false),
                    ("Version 1", "Version 1", true),
                ],
                0,
            ),
        ];
        for (name, steps, expected) in cases {
            assert_eq!(learned(steps), expected, "{name}");
        }
    }

    /// Runs a span through `texts`, one a check, each step lasting `lasting` checks (the
    /// changed check, then checks equal to the confirmed value): the check at which it was
    /// learned, if it was.
    fn learned_at(texts: &[&str], lasting: usize) -> Option<usize> {
        let mut state = LearnState::default();
        let page = |box_: &str| format!("Pottery shop\nRecommended: {box_}\nCustomers also bought");
        let mut check = 0;
        for pair in texts.windows(2) {
            let (before, after) = (page(pair[0]), page(pair[1]));
            check += 1;
            if !state.observe(&before, &after).is_empty() {
                return Some(check);
            }
            // The change lasted: confirmed, then quiet.
            state.confirmed();
            for _ in 1..lasting {
                check += 1;
                state.quiet();
            }
        }
        None
    }

    #[test]
    fn slow_noise_is_learned_over_the_horizon_and_real_changes_are_not() {
        // A box rotating among a few products every fourth check: learned once it came back
        // twice.
        let rotation = [
            "Oak board",
            "Enamel mug",
            "Linen apron",
            "Oak board",
            "Enamel mug",
            "Linen apron",
            "Oak board",
        ];
        assert_eq!(learned_at(&rotation, 4), Some(13));
        // A ticker that never repeats, every fourth check: learned on its fifth new text.
        let ticker = ["a", "b", "c", "d", "e", "f", "g"];
        assert_eq!(learned_at(&ticker, 4), Some(17));
        // Too slow for the horizon: a new text every eighth check.
        assert_eq!(learned_at(&ticker, 8), None);
        // Real changes: one and its revert, three with the first text back once.
        assert_eq!(learned_at(&["In stock", "Sold out", "In stock"], 4), None);
        assert_eq!(
            learned_at(&["In stock", "Only 2 left", "Sold out", "In stock"], 4),
            None
        );
    }
}
