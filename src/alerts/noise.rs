//! Learned noise: the spans of a monitor's value that change without meaning.
//!
//! Two sources teach a monitor its noise:
//!
//! - quick samples when the monitor is created or its selection changes: the caller fetches
//!   the value [`QUICK_SAMPLES`] more times, [`QUICK_SPACING`] apart (up to
//!   [`QUICK_SAMPLES_NOISY`] when they already differ: [`wants_more_samples`]), before it
//!   records the first check, and [`learn`] returns the masks that cover their differences (values
//!   seconds apart differ only by noise), each generalised to the text around it;
//! - later checks ([`LearnState::observe`], called by [`super::confirm::decide`]): a span that
//!   keeps changing from check to check is noise once it changed on most of the recent checks
//!   (the rule is in [`state`]).
//!
//! A mask covers one span, not its line: the span's kind (a date or a time in a common format
//! and locale, a relative time, a number or counter in any grouping, a UUID, a hex hash, a
//! token or id, a currency sign; [`classes`]) between a few words of the stable text on each
//! side, written `LEFT(KIND)|(KIND)RIGHT` so it keeps working when one side later changes. So
//! the next day's date or the next count is masked too, and a real change beside the span
//! (another word, another number in other words) still differs. Text no kind explains (a
//! rotating ad) is masked as the varying words between its anchors; lines that differ whole
//! (a shuffled list, a feed with new items) as one block between the nearest stable lines.
//! How differences are found and written, and the bounds on that work, are in [`spans`].
//!
//! Some noise is known by its words and masked whether or not it was seen to move: a
//! copyright line's year, a paywall meter, a cookie-consent banner ([`known`]).
//!
//! Masks hide noise, never news: whatever they cover, a line the monitor never saw before and
//! a move of lines whose order never changed still count ([`lines`]).
//!
//! Learning never returns a mask that would leave nothing to compare: when no part of the
//! value stays the same, [`study`] (and [`LearnState::notice`] for later checks) says so in
//! words for a person instead, and the monitor keeps recording its history.
//!
//! ```
//! use wachet::alerts::compare::Comparator;
//! use wachet::alerts::noise::learn;
//!
//! let samples = [
//!     "Aurora Espresso Machine\n$129.99\nIn stock · 12 bought in the last hour\n\
//!      Updated 3 minutes ago · Wednesday, December 31, 2026",
//!     "Aurora Espresso Machine\n$129.99\nIn stock · 15 bought in the last hour\n\
//!      Updated just now · Thursday, January 1, 2027",
//! ];
//! let comparator = Comparator::default();
//! let masks = learn(&comparator, &samples);
//! let learned = comparator.with(&masks);
//! assert!(learned.same(samples[0], samples[1]));
//! // A later count and time are noise too; a new price or stock word is a change.
//! let later = "Aurora Espresso Machine\n$129.99\nIn stock · 31 bought in the last hour\n\
//!              Updated 1 hour ago · Friday, January 2, 2027";
//! assert!(learned.same(samples[0], later));
//! assert!(!learned.same(later, &later.replace("$129.99", "$128.99")));
//! assert!(!learned.same(later, &later.replace("In stock", "Only 2 left")));
//! ```

pub(crate) mod classes;
mod dates;
mod known;
pub mod lines;
pub(crate) mod spans;
pub mod state;

pub use state::{LearnState, SpanCandidate, UNSTABLE};

use super::compare::{Comparator, MAX_MASKS, PLACEHOLDER};
use crate::model::{LineOrder, NoiseMask};
use known::{COPYRIGHT_YEAR, without_audience};
use regex::Regex;
use std::collections::HashSet;
use std::sync::LazyLock;

/// How many more times a new monitor's value is fetched, after its first check, to learn its
/// noise ([`learn`]); a page that already varied among them gets more ([`wants_more_samples`]).
pub const QUICK_SAMPLES: usize = 2;

/// How many quick samples a page gets in all once one of the first [`QUICK_SAMPLES`] differed
/// from its check. Noise that shows on one fetch in three (a sponsored line rotating among three
/// wordings) looks stable to 2 samples one time in 9 and to 4 one time in 81, and a page that
/// varies at all is likely to vary in more places; a quiet page is not fetched more.
pub const QUICK_SAMPLES_NOISY: usize = 4;

/// Whether quick sampling goes on after `samples`, the values fetched so far after the check's
/// value `first`: always up to `base` samples (normally [`QUICK_SAMPLES`]), and up to
/// `base.max(`[`QUICK_SAMPLES_NOISY`]`)` when one of them differed from `first`. Never with a
/// `base` of 0 (no sampling).
pub fn wants_more_samples(base: usize, first: &str, samples: &[&str]) -> bool {
    if samples.len() < base {
        return true;
    }
    base > 0
        && samples.len() < base.max(QUICK_SAMPLES_NOISY)
        && samples.iter().any(|sample| *sample != first)
}

/// The pause between those fetches: long enough for a clock shown to the second to tick.
pub const QUICK_SPACING: std::time::Duration = std::time::Duration::from_millis(1500);

/// How many times [`study`] looks again at what its masks leave different.
const ROUNDS: usize = 3;

/// The notice of masks that leave nothing of the value to compare ([`coverage_notice`]).
pub const COVERED: &str = "The noise masks cover the whole value, so nothing is left to \
compare and no change can alert. Remove a mask, or choose a part of the page (xPath) that holds \
what you watch.";

static COPYRIGHT: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(COPYRIGHT_YEAR).ok());

/// What [`study`] learned from quick samples.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Study {
    /// The masks to add to the monitor's `noise` (see [`learn`]).
    pub masks: Vec<NoiseMask>,
    /// What to tell a person, when there is something to tell: no part of the value stayed
    /// the same ([`UNSTABLE`]).
    pub notice: Option<String>,
    /// [`LineOrder::Set`] when the samples hold the same lines, most of them in different
    /// orders (a list a server sorts anew on every request, the matches of a regex over a
    /// document whose keys come in any order): the order of the lines is the noise, so the monitor compares them
    /// as a set and an added, removed or edited line still differs. `None` otherwise, and
    /// always when `comparator` compares lines as a set already.
    pub order: Option<LineOrder>,
}

/// The masks that cover the differences among `samples`, values of one monitor taken seconds
/// apart (so nothing really changed) and compared as `comparator` compares them, each
/// generalised to the text around it (a counter between the same words, a date in the same
/// place), and the year of a copyright line (it rolls over at the new year, which samples
/// seconds apart never see). Masks `comparator` already has are not returned again, and
/// `comparator`'s masks
/// and the ones returned are at most [`MAX_MASKS`]. See [`study`] for the outcomes.
pub fn learn(comparator: &Comparator, samples: &[&str]) -> Vec<NoiseMask> {
    study(comparator, samples).masks
}

/// [`learn`], with what to tell a person. Outcomes:
///
/// - fewer than two samples, or samples that are the same: no mask, no notice;
/// - samples that differ in places a mask can describe: masks (`learned`, `active`, with the
///   text each masked as its example) under which the samples are the same, as far as masks
///   can make them so (text inserted with nothing volatile beside it stays a difference);
/// - samples with no line in common, or masks that would leave no letter or digit of the value
///   to compare: no mask, and the notice [`UNSTABLE`].
///
/// The work is bounded for any input (see [`spans`]): a 10 MB value, one huge line or 100,000
/// lines are compared line by line under a deadline.
pub fn study(comparator: &Comparator, samples: &[&str]) -> Study {
    let room = MAX_MASKS.saturating_sub(comparator.mask_count());
    let mut masks: Vec<NoiseMask> = Vec::new();
    let Some(first) = samples.first() else {
        return Study::default();
    };
    if samples.len() < 2 {
        return Study::default();
    }
    if shuffled_only(comparator, samples) {
        return Study {
            order: Some(LineOrder::Set),
            ..Study::default()
        };
    }
    if room == 0 {
        return Study::default();
    }
    // Noise known by its words (a paywall meter, a consent banner) is masked whether or not
    // the samples saw it move: it moves too rarely, or comes and goes whole.
    {
        let keys: Vec<String> = samples
            .iter()
            .map(|s| comparator.masked_line_key(s))
            .collect();
        let mut stable: HashSet<&str> = keys[0].split('\n').collect();
        for key in &keys[1..] {
            let lines: HashSet<&str> = key.split('\n').collect();
            stable.retain(|l| lines.contains(l));
        }
        masks.extend(known::masks(&keys[0], Some(&stable)));
    }
    // The first sample's masked key under the masks so far, when it is up to date.
    let mut base = None;
    for _ in 0..ROUNDS {
        let current = comparator.with(&masks);
        let first_key = current.masked_line_key(first);
        let keys: Vec<String> = samples[1..]
            .iter()
            .map(|s| current.masked_line_key(s))
            .collect();
        // Lines every sample has: the only anchors for blocks.
        let mut stable: HashSet<&str> = first_key.split('\n').collect();
        for key in &keys {
            let lines: HashSet<&str> = key.split('\n').collect();
            stable.retain(|l| lines.contains(l));
        }
        let mut more = Vec::new();
        let set = comparator.lines() == LineOrder::Set;
        for key in &keys {
            // Under a set comparison a sample that only moved lines differs in nothing.
            if *key == first_key || (set && sorted_lines(key) == sorted_lines(&first_key)) {
                continue;
            }
            let found = spans::differences_within(&first_key, key, Some(&stable));
            if found.nothing_stable {
                return unstable();
            }
            for f in found.found {
                let known = masks.iter().chain(&more).any(|m| m.pattern == f.pattern);
                if !known && usable(&f.pattern) && !settled(&f, &first_key, &keys) {
                    more.push(NoiseMask {
                        pattern: f.pattern,
                        learned: true,
                        active: true,
                        example: Some(f.new),
                    });
                }
            }
        }
        if more.is_empty() {
            base = Some(first_key);
            break;
        }
        masks.extend(more);
    }
    // The year of a copyright line rolls over at the new year and means nothing to a watcher;
    // samples seconds apart never see it move.
    if let Some(year) = COPYRIGHT
        .as_ref()
        .and_then(|re| re.captures(base.as_deref().unwrap_or(first)))
        .and_then(|c| c.get(1))
    {
        let known = comparator
            .with(&masks)
            .mask_spans(&crate::normalize::line_key(first));
        if !known
            .iter()
            .any(|r| r.start <= year.start() && year.end() <= r.end)
        {
            masks.push(NoiseMask {
                pattern: COPYRIGHT_YEAR.to_string(),
                learned: true,
                active: true,
                example: Some(year.as_str().to_string()),
            });
            base = None;
        }
    }
    if masks.len() > room {
        masks.truncate(room);
        base = None;
    }
    if masks.is_empty() {
        return Study::default();
    }
    let base = base.unwrap_or_else(|| comparator.with(&masks).masked_line_key(first));
    if !has_stable_part(&base) {
        return unstable();
    }
    Study {
        masks,
        notice: None,
        order: None,
    }
}

/// [`COVERED`] when `comparator`'s masks leave no letter or digit of `value` to compare (and
/// the value had some), else `None`.
pub fn coverage_notice(comparator: &Comparator, value: &str) -> Option<String> {
    let masked = comparator.masked_line_key(value);
    (has_stable_part(value) && !has_stable_part(&masked)).then(|| COVERED.to_string())
}

fn unstable() -> Study {
    Study {
        masks: Vec::new(),
        notice: Some(UNSTABLE.to_string()),
        order: None,
    }
}

/// Whether a masked key keeps a letter or a digit outside its placeholders.
fn has_stable_part(masked: &str) -> bool {
    masked
        .chars()
        .any(|c| c.is_alphanumeric() && c.to_string() != PLACEHOLDER)
}

/// Whether a learned pattern compiles under the limits a person's pattern has.
fn usable(pattern: &str) -> bool {
    crate::pattern::compile_pattern(&format!("(?m){pattern}")).is_ok()
}

/// Whether `samples` differ, but only in the order of their lines (as `comparator` masks
/// them), and in most of them, when `comparator` keeps lines in order.
fn shuffled_only(comparator: &Comparator, samples: &[&str]) -> bool {
    if comparator.lines() == LineOrder::Set {
        return false;
    }
    let keys: Vec<String> = samples
        .iter()
        .map(|s| comparator.masked_line_key(s))
        .collect();
    if keys.iter().all(|k| *k == keys[0]) {
        return false;
    }
    let first = sorted_lines(&keys[0]);
    // One line is no list: a value of one line that changed is not a shuffle.
    if !keys[0].contains('\n') || !keys[1..].iter().all(|k| sorted_lines(k) == first) {
        return false;
    }
    // Most of the value moves: a shuffled part between lines that stay (a list of
    // recommendations beside a ranked one) is a block mask's to hide, or the ranked list's
    // order would stop counting too.
    // A sample in the first one's order (a server's order can come round again) says
    // nothing of how much moves.
    let lines: Vec<&str> = keys[0].split('\n').collect();
    keys[1..].iter().filter(|key| **key != keys[0]).all(|key| {
        let other: Vec<&str> = key.split('\n').collect();
        let head = lines.iter().zip(&other).take_while(|(a, b)| a == b).count();
        let tail = lines
            .iter()
            .rev()
            .zip(other.iter().rev())
            .take_while(|(a, b)| a == b)
            .count();
        2 * (lines.len().saturating_sub(head + tail)) >= lines.len()
    })
}

/// Whether the number `found` covers changed once during the samples and stayed changed to
/// the last of them (its texts in `first`, then `later`, the samples' masked keys, three at
/// least): that is no proof of noise but maybe a real change that came while the monitor was
/// being made (a price), so it is not masked; noise comes and goes or keeps moving. Only
/// numbers and amounts: a line's other words are guarded by the memory of lines whatever the
/// masks ([`lines`]), a number is left out of a line's identity. Two values alone cannot tell
/// a move that stayed from one that keeps moving.
fn settled(found: &spans::Found, first: &str, later: &[String]) -> bool {
    use classes::Class;
    if !matches!(found.class, Class::Number | Class::Currency) || later.len() < 2 {
        return false;
    }
    let Ok(re) = crate::pattern::compile_pattern(&format!("(?m){}", found.pattern)) else {
        return false;
    };
    let text = |key: &str| -> Option<String> {
        re.captures(key).map(|caps| {
            caps.iter()
                .skip(1)
                .flatten()
                .map(|m| m.as_str())
                .collect::<Vec<_>>()
                .join("\u{1f}")
        })
    };
    let texts: Vec<Option<String>> = std::iter::once(first)
        .chain(later.iter().map(String::as_str))
        .map(text)
        .collect();
    let moves = texts.windows(2).filter(|w| w[0] != w[1]).count();
    moves == 1 && texts.first() != texts.last()
}

/// The lines of `key` sorted: its lines as a multiset.
fn sorted_lines(key: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = key.split('\n').collect();
    lines.sort_unstable();
    lines
}

/// `value` as `comparator`'s masks leave it with every audience count blanked too (readers,
/// applicants, "12 bought today": [`known`]), in the comparator's line order: two values equal
/// this way differ only in counts of the page's audience. `None` for a JSON document, and for a
/// value with no line beside its counts: a monitor that watches a count alone wants to hear of
/// it.
pub(crate) fn audience_blind(comparator: &Comparator, value: &str) -> Option<String> {
    if super::compare::is_document(value) {
        return None;
    }
    let masked = comparator.masked_line_key(value);
    let mut counts = false;
    let mut other = false;
    let mut lines: Vec<String> = masked
        .lines()
        .map(|line| match without_audience(line, PLACEHOLDER) {
            Some(blind) => {
                counts = true;
                blind
            }
            None => {
                other |= !line.trim().is_empty();
                line.to_string()
            }
        })
        .collect();
    if !counts || !other {
        return None;
    }
    if comparator.line_order() == LineOrder::Set {
        lines.sort_unstable();
    }
    Some(lines.join("\n"))
}
