//! Variants: the values a monitor showed lately that lasted, so a page that flips between
//! them (an A/B test's templates, a stale replica answering with an older version) raises
//! nothing on the flips.
//!
//! [`Variants`] remembers, for the last [`WINDOW`] successful checks, a fingerprint
//! ([`Print`]) of every value that *lasted*: the baseline, every confirmed change, and values
//! known from quick samples ([`super::ConfirmState::remember`]). A value seen once and gone
//! again is not a variant: otherwise a real change whose confirming check met a stale replica
//! would come back later as a "known" value and never raise. [`super::decide`] asks it:
//!
//! - [`Variants::is_recent`]: the value is a variant seen within the window, so showing it
//!   again is a flip, and the confirmed value switches to it silently. A value that lasted
//!   longer ago (a revert after the page was stable for more than [`WINDOW`] checks) is a
//!   change again and raises.
//! - [`Variants::same_change`]: the value is new, but it differs from one variant of the
//!   content before the last raised change by exactly that change (the same words removed and
//!   added): the change already raised, seen through another template.
//!
//! Only hashes are kept: a value's comparison key hashed (SHA-256, first 8 bytes, stable
//! across versions as stored states need), and an order-free hash of its words (the sum of
//! each word's hash) so a change's words can be taken away from one variant and compared with
//! another. So the state stays a few hundred bytes whatever the value's size.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// How many successful checks a variant stays known after it was last seen.
pub const WINDOW: u64 = 16;

/// What identifies a value for flapping: its comparison key's hash and its words' hash.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Print {
    /// The comparison key, hashed.
    pub key: u64,
    /// The sum (wrapping) of the hashes of its words: runs of letters and digits.
    pub words: u64,
}

impl Print {
    /// The fingerprint of a value whose comparison key is `key`
    /// ([`crate::alerts::compare::Comparator::key`]).
    pub fn of(key: &str) -> Print {
        let digest = Sha256::digest(key.as_bytes());
        let mut first = [0u8; 8];
        first.copy_from_slice(&digest[..8]);
        let words = key
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .fold(0u64, |sum, w| sum.wrapping_add(word_hash(w)));
        Print {
            key: u64::from_le_bytes(first),
            words,
        }
    }
}

/// A word's hash: FNV-1a, then a mixer so that sums of hashes do not cancel by accident.
fn word_hash(word: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in word.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h ^= h >> 30;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// A value that lasted, and when it was last seen.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Variant {
    /// Its fingerprint.
    pub print: Print,
    /// The check ([`Variants::checks`]) it was last seen at.
    pub seen: u64,
    /// The number of changes raised before it first lasted: variants of one generation are
    /// the templates of one content.
    pub generation: u32,
}

/// The last change raised: to what, and from which variants of the content before it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Change {
    /// The words' hash of the value it raised with.
    pub to: u64,
    /// The variants of the content before it (its generation), at most [`WINDOW`] + 1.
    pub from: Vec<Print>,
}

/// The recent variants of a monitor's value (see the [module documentation](self)).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Variants {
    /// Successful checks so far: the clock of [`Variant::seen`].
    pub checks: u64,
    /// Changes raised so far.
    pub generation: u32,
    /// The variants seen within the last [`WINDOW`] checks.
    pub recent: Vec<Variant>,
    /// The last change raised, while one was.
    pub last_change: Option<Change>,
}

impl Variants {
    /// Counts a successful check and forgets variants not seen within the window.
    pub fn tick(&mut self) {
        self.checks = self.checks.saturating_add(1);
        let now = self.checks;
        self.recent.retain(|v| now.saturating_sub(v.seen) <= WINDOW);
        // A stored state is trusted no further than its bound.
        if self.recent.len() > WINDOW as usize + 1 {
            self.recent.sort_by_key(|v| std::cmp::Reverse(v.seen));
            self.recent.truncate(WINDOW as usize + 1);
        }
    }

    /// Whether a value with `print` lasted and was seen within the window.
    pub fn is_recent(&self, print: Print) -> bool {
        self.recent.iter().any(|v| v.print.key == print.key)
    }

    /// Whether `print` is the last raised change seen through another template: some variant
    /// `w` of the content before that change, still recent, and another one `v` such that
    /// `print` differs from `w` by the words the change brought to `v` (and that is a
    /// difference in words, not a reordering).
    pub fn same_change(&self, print: Print) -> bool {
        let Some(change) = &self.last_change else {
            return false;
        };
        change.from.iter().filter(|w| self.is_recent(**w)).any(|w| {
            let delta = print.words.wrapping_sub(w.words);
            change
                .from
                .iter()
                .any(|v| v.key != w.key && delta != 0 && change.to.wrapping_sub(v.words) == delta)
        })
    }

    /// Records that a value with `print` was seen now and lasted.
    pub fn saw(&mut self, print: Print) {
        let now = self.checks;
        match self.recent.iter_mut().find(|v| v.print.key == print.key) {
            Some(v) => v.seen = now,
            None => self.recent.push(Variant {
                print,
                seen: now,
                generation: self.generation,
            }),
        }
    }

    /// Records that the value flipped to the recent variant `print`: a value the page keeps
    /// coming back to is part of the content it shows now, so it joins the current
    /// generation. An A/B test's other template that the quick samples never saw raised as a
    /// change on its first lasting appearance and started a generation of its own; once the
    /// page flips back, both templates are the content before the next real change, and that
    /// change seen through either template is [`Variants::same_change`].
    pub fn flipped_to(&mut self, print: Print) {
        let generation = self.generation;
        if let Some(v) = self.recent.iter_mut().find(|v| v.print.key == print.key) {
            v.generation = generation;
        }
        self.saw(print);
    }

    /// Records that a change to a value with `print` raised: the variants of the content
    /// before it are remembered for [`Variants::same_change`], and `print` starts the next
    /// generation.
    pub fn raised(&mut self, print: Print) {
        let from = self
            .recent
            .iter()
            .filter(|v| v.generation == self.generation && v.print.key != print.key)
            .map(|v| v.print)
            .collect();
        self.last_change = Some(Change {
            to: print.words,
            from,
        });
        self.generation = self.generation.saturating_add(1);
        self.recent.retain(|v| v.print.key != print.key);
        self.saw(print);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_hash_ignores_order_and_punctuation_not_words() {
        let a = Print::of("Team $29 per user / month");
        assert_eq!(a.words, Print::of("month per user $29 Team").words);
        assert_ne!(a.key, Print::of("month per user $29 Team").key);
        assert_ne!(a.words, Print::of("Team $39 per user / month").words);
    }

    #[test]
    fn variants_age_out_of_the_window() {
        let mut v = Variants::default();
        let a = Print::of("A");
        v.tick();
        v.saw(a);
        for _ in 0..WINDOW {
            v.tick();
        }
        assert!(v.is_recent(a));
        v.tick();
        assert!(!v.is_recent(a));
    }
}
