//! Comparison: when two values of a monitor are the same change-wise.
//!
//! A [`Comparator`] is built once from a monitor's settings ([`Comparator::of`]) and decides
//! for every pair of values whether they differ in a way a person would call a change. Two
//! values are the same when their comparison forms ([`Comparator::key`]) are equal. That form
//! starts from the value's lines ([`Comparator::line_form`]):
//!
//! - a JSON document (the whole value, trimmed, is a JSON object or array) in canonical form,
//!   one key or element a line: object keys sorted, numbers by value and exactly (`1.0`, `1`
//!   and `1e0` are one; big integers are not rounded), strings normalised as text is,
//!   insignificant white space gone (the rules are in [`json`]'s documentation); a scalar, an
//!   invalid document or one nested deeper than [`json::MAX_DEPTH`] is text;
//! - any other value as its line key ([`crate::normalize::line_key`]: white space, Unicode
//!   forms, quote and dash variants and character references make no difference) with
//!   amounts of money in one spelling (`€1 249,90`, `1 249,90 €` and `1 249,90 EUR` are all
//!   `1 249,90 EUR`: the currency's place and symbol are template noise, the digits are not);
//!
//! then
//!
//! - every span matched by an active noise mask ([`NoiseMask`], learned or written by a
//!   person; [`super::noise`]) replaced by one placeholder, so a counter or a clock inside a
//!   line makes no change while a real edit beside it in the same line does. On a JSON
//!   document the masks run over the canonical lines, so a mask written or learned for
//!   `"requestId": "…"` matches whatever order the keys came in; a mask never takes a line
//!   break of a document away (a span over one leaves a placeholder on each line);
//! - with [`LineOrder::Set`], order made irrelevant: a text's lines are sorted, a document's
//!   arrays have their elements sorted (each element one unit, objects' keys being sorted
//!   already). Both are multisets, not sets: a shuffled list is no change; an added or removed
//!   line, or a line repeated once more or once less, is.
//!
//! The lines of the comparison form with the masks applied and the order kept
//! ([`Comparator::masked_line_key`]) are what learning and diffs read.
//!
//! The default comparator (no masks, lines ordered) is [`crate::normalize::same`] on values
//! that are not JSON documents, but for the spelling of amounts.
//!
//! ```
//! use wachet::alerts::compare::Comparator;
//! use wachet::model::{LineOrder, Monitor};
//!
//! let plain = Comparator::default();
//! assert!(plain.same(r#"{"id": 7, "price": 12.50}"#, r#"{ "price": 12.5, "id": 7 }"#));
//! assert!(!plain.same(r#"{"id": 7, "price": 12.50}"#, r#"{"id": 7, "price": 12.51}"#));
//!
//! let mut monitor = Monitor::new("https://shop.example/stores");
//! monitor.compare_lines = Some(LineOrder::Set);
//! let set = Comparator::of(&monitor).unwrap();
//! assert!(set.same("Berlin\nParis\nRome", "Rome\nBerlin\nParis"));
//! assert!(!set.same("Berlin\nParis\nRome", "Rome\nBerlin"));
//! ```
//!
//! ```
//! use wachet::alerts::compare::Comparator;
//! use wachet::model::{Monitor, NoiseMask};
//!
//! let mut monitor = Monitor::new("https://shop.example/item");
//! monitor.noise = Some(vec![NoiseMask {
//!     pattern: r"(\d+) people are looking".into(),
//!     learned: true,
//!     active: true,
//!     example: None,
//! }]);
//! let comparator = Comparator::of(&monitor).unwrap();
//! assert!(comparator.same("$129.99 · 12 people are looking", "$129.99 · 31 people are looking"));
//! assert!(!comparator.same("$129.99 · 12 people are looking", "$128.99 · 31 people are looking"));
//! ```

mod amounts;
pub mod json;

use crate::model::{LineOrder, Monitor, NoiseMask};
use crate::normalize::{line_key, same};
use json::Document;
use regex::Regex;
use std::ops::Range;

/// What stands in a comparison form for a masked span.
pub const PLACEHOLDER: &str = "\u{2026}";

/// The most noise masks a monitor may have; more are refused (a person) or not learned.
pub const MAX_MASKS: usize = 64;

/// A monitor's noise masks or settings cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompareError {
    /// A mask's pattern is not a usable regular expression.
    #[error("noise[{index}].pattern: {message}")]
    Pattern {
        /// The mask's position in the monitor's `noise` list.
        index: usize,
        /// Why the pattern cannot be used, with the position of a syntax error.
        message: String,
    },
    /// More masks than [`MAX_MASKS`].
    #[error("noise: at most {MAX_MASKS} masks")]
    TooMany,
}

/// Decides whether two values of one monitor are the same (see the
/// [module documentation](self)). Cheap to clone; build it once per monitor version.
#[derive(Debug, Clone, Default)]
pub struct Comparator {
    masks: Vec<Regex>,
    lines: LineOrder,
}

impl Comparator {
    /// The comparator of `monitor`'s settings: its active noise masks and `compareLines`.
    /// Fails on a pattern that does not compile or on more than [`MAX_MASKS`] masks (a
    /// service refuses such a monitor when it is saved).
    pub fn of(monitor: &Monitor) -> Result<Comparator, CompareError> {
        let masks = monitor.noise.as_deref().unwrap_or_default();
        if masks.len() > MAX_MASKS {
            return Err(CompareError::TooMany);
        }
        Ok(Comparator {
            masks: compile(masks)?,
            lines: monitor.compare_lines.unwrap_or_default(),
        })
    }

    /// The comparator of `monitor`, leaving out masks that cannot be used: for checks of a
    /// monitor stored before its masks were validated, so one bad mask does not stop the rest.
    pub fn lenient(monitor: &Monitor) -> Comparator {
        let masks = monitor.noise.as_deref().unwrap_or_default();
        Comparator {
            masks: masks
                .iter()
                .take(MAX_MASKS)
                .filter_map(|m| compile(std::slice::from_ref(m)).ok())
                .flatten()
                .collect(),
            lines: monitor.compare_lines.unwrap_or_default(),
        }
    }

    /// This comparator with `more` masks added (those that compile).
    pub fn with(&self, more: &[NoiseMask]) -> Comparator {
        let mut next = self.clone();
        next.masks.extend(
            more.iter()
                .filter_map(|m| compile(std::slice::from_ref(m)).ok())
                .flatten(),
        );
        next
    }

    /// Whether `a` and `b` are the same change-wise.
    pub fn same(&self, a: &str, b: &str) -> bool {
        // Equal line keys are equal forms; only values that differ need their forms built.
        if self.is_plain() && !maybe_json(a) && !maybe_json(b) && same(a, b) {
            return true;
        }
        self.key(a) == self.key(b)
    }

    /// The comparison form of `value`: what [`Comparator::same`] compares.
    pub fn key(&self, value: &str) -> String {
        if let Some(doc) = Document::parse(value) {
            let lines = doc.masked(&self.mask_spans(doc.text()), PLACEHOLDER);
            return match self.lines {
                LineOrder::Ordered => lines.join("\n"),
                LineOrder::Set => doc.set_lines(&lines),
            };
        }
        let masked = self.masked_line_key(value);
        match self.lines {
            LineOrder::Ordered => masked.replace('\n', " "),
            LineOrder::Set => {
                let mut lines: Vec<&str> = masked.lines().collect();
                lines.sort_unstable();
                lines.join("\n")
            }
        }
    }

    /// How this comparator orders lines: as the page shows them, or as a set.
    pub(crate) fn line_order(&self) -> LineOrder {
        self.lines
    }

    /// The lines of `value` that comparison starts from: a JSON document's canonical lines, or
    /// any other value's [`line_key`]. [`Comparator::mask_spans`] of it are the spans a
    /// notification shows dimmed.
    pub fn line_form(&self, value: &str) -> String {
        match Document::parse(value) {
            Some(doc) => doc.text().to_string(),
            None => text_form(value),
        }
    }

    /// The lines of `value` ([`Comparator::line_form`]) with every masked span replaced by
    /// [`PLACEHOLDER`], in their order: for diffs and for learning.
    pub fn masked_line_key(&self, value: &str) -> String {
        if let Some(doc) = Document::parse(value) {
            return doc
                .masked(&self.mask_spans(doc.text()), PLACEHOLDER)
                .join("\n");
        }
        let key = text_form(value);
        let spans = self.mask_spans(&key);
        if spans.is_empty() {
            return key;
        }
        let mut out = String::with_capacity(key.len());
        let mut at = 0;
        for span in spans {
            out.push_str(&key[at..span.start]);
            out.push_str(PLACEHOLDER);
            at = span.end;
        }
        out.push_str(&key[at..]);
        out
    }

    /// The byte ranges of `line_key` (a [`Comparator::line_form`]) that the masks cover, sorted
    /// and not overlapping: what a notification shows dimmed.
    pub fn mask_spans(&self, line_key: &str) -> Vec<Range<usize>> {
        let mut spans: Vec<Range<usize>> = Vec::new();
        for mask in &self.masks {
            for caps in mask.captures_iter(line_key) {
                let groups: Vec<Range<usize>> = caps
                    .iter()
                    .skip(1)
                    .flatten()
                    .map(|m| m.range())
                    .filter(|r| !r.is_empty())
                    .collect();
                if caps.len() > 1 {
                    spans.extend(groups);
                } else if let Some(whole) = caps.get(0).filter(|m| !m.is_empty()) {
                    spans.push(whole.range());
                }
            }
        }
        spans.sort_unstable_by_key(|r| (r.start, r.end));
        let mut merged: Vec<Range<usize>> = Vec::with_capacity(spans.len());
        for span in spans {
            match merged.last_mut() {
                Some(last) if span.start <= last.end => last.end = last.end.max(span.end),
                _ => merged.push(span),
            }
        }
        merged
    }

    /// Whether lines are compared in order or as a set.
    pub fn lines(&self) -> LineOrder {
        self.lines
    }

    /// How many masks this comparator applies.
    pub fn mask_count(&self) -> usize {
        self.masks.len()
    }

    /// Whether this comparator is [`crate::normalize::same`] on values that are not JSON
    /// documents (no masks, lines in order).
    pub fn is_plain(&self) -> bool {
        self.masks.is_empty() && self.lines == LineOrder::Ordered
    }
}

/// The lines of a value that is not a JSON document: its line key with amounts of money in one
/// spelling ([`amounts`]).
fn text_form(value: &str) -> String {
    let key = line_key(value);
    match amounts::canonical(&key) {
        std::borrow::Cow::Borrowed(_) => key,
        std::borrow::Cow::Owned(canonical) => canonical,
    }
}

/// Whether `value` is a JSON document, compared by its canonical lines.
pub(crate) fn is_document(value: &str) -> bool {
    maybe_json(value) && Document::parse(value).is_some()
}

/// Whether `value` may be a JSON document: a cheap test before parsing it.
fn maybe_json(value: &str) -> bool {
    json::looks_like(value.trim_start_matches('\u{feff}').trim())
}

fn compile(masks: &[NoiseMask]) -> Result<Vec<Regex>, CompareError> {
    masks
        .iter()
        .enumerate()
        .filter(|(_, m)| m.active)
        .map(|(index, m)| {
            // Syntax first, so an error's position is in the pattern as written.
            crate::pattern::check_syntax(&m.pattern)
                .and_then(|()| crate::pattern::compile_pattern(&format!("(?m){}", m.pattern)))
                .map_err(|message| CompareError::Pattern { index, message })
        })
        .collect()
}
