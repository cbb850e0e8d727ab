//! Line memory: which lines of a value are news, whatever the masks say.
//!
//! Masks hide the volatile parts of a value, and learning may generalise them wider than the
//! noise they were learned on (a block of lines between two stable ones, the words between
//! two anchors). They must never hide news, so [`super::super::confirm::decide`] asks this
//! memory after the masks have had their say:
//!
//! - A line's **identity** is its text in the comparison's line form (a JSON document's
//!   canonical lines, any other value's line key) with every span of a volatile kind (a date,
//!   a time, a relative time, a number, a UUID, a hash, a token: [`super::classes`]) left out,
//!   hashed. "Fed chief resigns · 12 min ago" and "Fed chief resigns · 14 min ago" are one line;
//!   "Fed chief stays · 12 min ago" is another.
//! - A line is **new** when no value the monitor accepted (its baseline, its quick samples
//!   that came and went, every value it confirmed or found unchanged) ever showed its identity.
//!   A new line is news: a new headline at the top of a list, a product added to a grid, a
//!   JSON value never seen. The values a candidate change showed are not accepted until the
//!   change lasts, so a real change whose confirming check met a stale replica is still new
//!   when it comes back.
//! - A line **moved** when it stood in the value before and now stands elsewhere relative to
//!   the others (two ranked entries swapped). A line seen moving on its own before (a list
//!   shuffled on every request, learned from samples or from a move that did not last) is a
//!   **mover**, and its moves are no news; any other move is.
//! - A line is **gone** when it stood in the value before and no longer does (a job taken
//!   down, a section removed). A line seen to go and come back before (a rotating banner,
//!   a promoted listing, learned from samples, from a value that showed a line again, or from
//!   a removal that did not last) is a **comer**, and its absence is no news; any other is.
//! - A line **shifted** when it keeps its identity but a number in it changed (a salary in a
//!   line with an applicant count, a forecast high beside the observations): each volatile
//!   span of a line is a **slot**, and a slot seen changing on its own (changing again before a
//!   change of it lasted, more than once in the samples, or notified twice) is **churn**, whose
//!   changes are no news; a number changed in any other slot is, whatever mask was learned
//!   over the line, unless it counts the page's audience (readers, likes: [`super::known`]).
//!   A date (or a weekday) counts when it moved as no clock moves it ("until Friday" became
//!   "until Monday"; [`super::dates::jumped`]): one day forward is the page's day turning.
//!   Times, relative times, UUIDs, hashes and tokens are noise by their kind: none shifts a
//!   line.
//!
//! The memory is bounded: at most [`MAX_SEEN`] identities seen (the oldest forgotten first)
//! and [`MAX_MOVERS`] movers, kept as 32-bit hashes, and a value is read for it up to
//! [`MAX_FORM_BYTES`]; past that the masks alone decide. It is stored with every check's
//! state, so it serializes compactly (base64 of the hashes).

use super::classes::{is_date, is_plain_number, volatile_spans};
use super::dates;
use super::known::{audience_counts, known_lines};
use super::state::hash;
use crate::alerts::compare::PLACEHOLDER;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

/// The most line identities a monitor remembers as seen.
pub const MAX_SEEN: usize = 16_384;

/// The most line identities a monitor remembers as movers, and as comers.
pub const MAX_MOVERS: usize = 4_096;

/// How much of a value's line form is read for new and moved lines.
pub const MAX_FORM_BYTES: usize = 4 << 20;

/// The most lines of each kind a piece of evidence keeps (the count of the rest is known).
const MAX_SHOWN: usize = 32;

/// How long finding moved lines may take: a diff of two long shuffled lists is quadratic, and
/// past the deadline its answer is an approximation that may call more lines moved.
const MOVE_DEADLINE: Duration = Duration::from_millis(200);

/// What a monitor remembers of the lines its accepted values showed (see the
/// [module documentation](self)).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LineMemory {
    /// Identities of the lines seen, oldest first.
    #[serde(with = "packed", skip_serializing_if = "Vec::is_empty")]
    seen: Vec<u32>,
    /// Identities of the lines seen moving on their own, oldest first.
    #[serde(with = "packed", skip_serializing_if = "Vec::is_empty")]
    movers: Vec<u32>,
    /// Identities of the lines seen to go and come back, oldest first.
    #[serde(with = "packed", skip_serializing_if = "Vec::is_empty")]
    comers: Vec<u32>,
    /// Each comer's identity with its text (hashed whole, numbers and all) as a value accepted
    /// with nothing told last showed it, in pairs, for the comers seen to come or go with
    /// nothing told: a comer that comes back with another number (an A/B template's price line
    /// after the price changed, or changed back) is not the line that came and went, and one
    /// that only came and went with notified changes is news each time.
    #[serde(with = "packed", skip_serializing_if = "Vec::is_empty")]
    comer_texts: Vec<u32>,
    /// Slots (a line's identity with a span's place in it) seen changing on their own.
    #[serde(with = "packed", skip_serializing_if = "Vec::is_empty")]
    churn: Vec<u32>,
    /// Slots whose change was notified once: notified again, they are churn.
    #[serde(with = "packed", skip_serializing_if = "Vec::is_empty")]
    notified: Vec<u32>,
}

/// What makes a value news beside its masks: its new and moved lines ([`LineMemory::evidence`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Evidence {
    /// The new lines, at most [`MAX_SHOWN`], as the value shows them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub new: Vec<String>,
    /// The lines that moved and are no movers, at most [`MAX_SHOWN`].
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub moved: Vec<String>,
    /// The identities of the new lines: one of them shown again, the news lasted.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub marks: Vec<u32>,
    /// Each moved line's identity with the line now before it: all of them shown again, the
    /// move lasted (a shuffled list puts some lines back beside the same neighbour by chance).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub placements: Vec<u32>,
    /// The identities of every line that moved, movers or not: the lines to learn as movers
    /// when the move does not last.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub moving: Vec<u32>,
    /// The lines gone that are no comers, at most [`MAX_SHOWN`], as the value before showed
    /// them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gone: Vec<String>,
    /// The identities of the gone lines: one of them still gone later, the news lasted; back
    /// again, they are comers.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub losses: Vec<u32>,
    /// The shifted lines, at most [`MAX_SHOWN`], as "before → now".
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub shifted: Vec<String>,
    /// Each shifted slot with its new text: one shown again, the news lasted.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub shifts: Vec<u32>,
    /// The slot of each of [`Evidence::shifts`], in the same order: the slots to learn as
    /// churn when their change does not last.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub slots: Vec<u32>,
}

impl Evidence {
    /// Whether there is no news.
    pub fn is_empty(&self) -> bool {
        self.marks.is_empty()
            && self.placements.is_empty()
            && self.losses.is_empty()
            && self.shifts.is_empty()
    }

    /// Whether `later` shows this news again: a new line still there, or every moved line
    /// still where it moved to; for news that is only lines gone, one of them still gone.
    /// Lines gone alone do not decide when there is more: two different values that both
    /// lack a line are not one change lasting.
    pub fn lasts_in(&self, later: &Evidence) -> bool {
        let marks: HashSet<u32> = later.marks.iter().copied().collect();
        let placements: HashSet<u32> = later.placements.iter().copied().collect();
        let only_gone =
            self.marks.is_empty() && self.placements.is_empty() && self.shifts.is_empty();
        self.marks.iter().any(|m| marks.contains(m))
            || self.shifts.iter().any(|s| later.shifts.contains(s))
            || (!self.placements.is_empty()
                && self.placements.iter().all(|p| placements.contains(p)))
            || (only_gone && self.losses.iter().any(|m| later.losses.contains(m)))
    }

    /// The slots of this news whose change `later` does not show as it was: spans that
    /// change on their own (a counter that moved again, a value that went back).
    pub fn unlasting_slots(&self, later: &Evidence) -> Vec<u32> {
        self.slots
            .iter()
            .zip(&self.shifts)
            .filter(|(_, shift)| !later.shifts.contains(shift))
            .map(|(slot, _)| *slot)
            .collect()
    }

    /// The gone lines of this news that `later` shows again: lines that come and go.
    pub fn returned_in(&self, later: &Evidence) -> Vec<u32> {
        let losses: HashSet<u32> = later.losses.iter().copied().collect();
        self.losses
            .iter()
            .copied()
            .filter(|m| !losses.contains(m))
            .collect()
    }

    /// The news in words for a person, or `None` when there is none.
    pub fn describe(&self) -> Option<String> {
        let quote = |lines: &[String]| {
            lines
                .iter()
                .take(3)
                .map(|l| format!("\u{201c}{}\u{201d}", shorten(l)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut parts = Vec::new();
        if !self.new.is_empty() {
            parts.push(format!(
                "{} never shown before: {}",
                plural(self.new.len(), "line", "lines"),
                quote(&self.new)
            ));
        }
        if !self.moved.is_empty() {
            parts.push(format!(
                "{} in an order that had not changed before: {}",
                plural(self.moved.len(), "line", "lines"),
                quote(&self.moved)
            ));
        }
        if !self.shifted.is_empty() {
            parts.push(format!(
                "{} with a value that had not changed before: {}",
                plural(self.shifted.len(), "line", "lines"),
                quote(&self.shifted)
            ));
        }
        if !self.gone.is_empty() {
            parts.push(format!(
                "{} no longer shown: {}",
                plural(self.gone.len(), "line", "lines"),
                quote(&self.gone)
            ));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    match n {
        1 => format!("1 {one}"),
        n if n >= MAX_SHOWN => format!("{n} or more {many}"),
        n => format!("{n} {many}"),
    }
}

fn shorten(line: &str) -> String {
    const MAX: usize = 80;
    match line.char_indices().nth(MAX) {
        Some((at, _)) => format!("{}\u{2026}", &line[..at]),
        None => line.to_string(),
    }
}

/// The lines of a line form that count, with their identities, in order: lines left with a
/// letter once volatile spans are out (a lone timestamp or counter is never news), other than
/// noise known by its words (a consent banner, a paywall meter).
fn identities(form: &str) -> Vec<(u32, &str)> {
    let form = match form.char_indices().nth(MAX_FORM_BYTES) {
        Some(_) => {
            let mut end = MAX_FORM_BYTES;
            while !form.is_char_boundary(end) {
                end -= 1;
            }
            &form[..end]
        }
        None => form,
    };
    let lines: Vec<&str> = form.split('\n').map(str::trim).collect();
    let known = known_lines(&lines);
    lines
        .into_iter()
        .zip(known)
        .filter_map(|(line, known)| {
            if line.is_empty() || known {
                return None;
            }
            let identity = without_spans(line);
            identity
                .chars()
                .any(|c| c.is_alphabetic() && c.to_string() != PLACEHOLDER)
                .then(|| (hash(&identity), line))
        })
        .collect()
}

/// `line` with each of its volatile spans ([`volatile_spans`]) written as the placeholder.
fn without_spans(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut from = 0;
    for span in volatile_spans(line) {
        out.push_str(&line[from..span.start]);
        out.push_str(PLACEHOLDER);
        from = span.end;
    }
    out.push_str(&line[from..]);
    out
}

/// The volatile spans of `line`, in order, as text with its place.
fn spans(line: &str) -> Vec<(&str, std::ops::Range<usize>)> {
    volatile_spans(line)
        .into_iter()
        .map(|span| (&line[span.clone()], span))
        .collect()
}

/// The slot of the `place`-th volatile span of the line `identity`.
fn slot(identity: u32, place: usize) -> u32 {
    let mut bytes = identity.to_le_bytes().to_vec();
    bytes.extend((place as u32).to_le_bytes());
    bytes.push(b's');
    hash(&String::from_utf8_lossy(&bytes))
}

/// A slot with the text it now shows.
fn shift(slot: u32, text: &str) -> u32 {
    let mut key = String::from_utf8_lossy(&slot.to_le_bytes()).into_owned();
    key.push('\u{1f}');
    key.push_str(text);
    hash(&key)
}

/// The most lines of one identity [`paired`] pairs.
const MAX_TWINS: usize = 8;

/// The lines of `now` with the line of `before` each is the same line as: a line of an
/// identity both show once, and, for an identity both show as often (up to [`MAX_TWINS`]
/// times: two downloads of a release, "ingot-2.4.1.tar.gz 3.1 MB" and "ingot-2.4.0.tar.gz 3.1
/// MB", differ only in spans), the twins paired by [`twins`].
fn paired<'a>(before: &[(u32, &'a str)], now: &[(u32, &'a str)]) -> Vec<(u32, &'a str, &'a str)> {
    let group = |lines: &[(u32, &'a str)]| {
        let mut by: HashMap<u32, Vec<&'a str>> = HashMap::new();
        for (identity, line) in lines {
            by.entry(*identity).or_default().push(*line);
        }
        by
    };
    let old = group(before);
    let mut pairs = Vec::new();
    for (identity, lines) in group(now) {
        let Some(was) = old.get(&identity).filter(|was| was.len() == lines.len()) else {
            continue;
        };
        if lines.len() == 1 {
            pairs.push((identity, was[0], lines[0]));
            continue;
        }
        if lines.len() > MAX_TWINS {
            continue;
        }
        pairs.extend(
            twins(was, &lines)
                .into_iter()
                .map(|(a, b)| (identity, a, b)),
        );
    }
    pairs
}

/// Lines of one identity paired across two values: a line shown unchanged in both is itself;
/// the others pair closest first, by the spans they share (more than half of them): twins that
/// traded places pair with themselves, and a line whose size changed beside its version still
/// pairs with its version's line while every download count beside it moves.
fn twins<'a>(before: &[&'a str], now: &[&'a str]) -> Vec<(&'a str, &'a str)> {
    let mut old: Vec<&str> = before.to_vec();
    let mut new: Vec<&str> = Vec::new();
    for line in now {
        match old.iter().position(|was| was == line) {
            Some(at) => {
                old.remove(at);
            }
            None => new.push(line),
        }
    }
    let texts = |lines: &[&'a str]| -> Vec<Vec<&'a str>> {
        lines
            .iter()
            .map(|l| spans(l).into_iter().map(|s| s.0).collect())
            .collect()
    };
    let (old_spans, new_spans) = (texts(&old), texts(&new));
    let shared = |a: &[&str], b: &[&str]| match a.len() == b.len() {
        true => a.iter().zip(b).filter(|(x, y)| x == y).count(),
        false => 0,
    };
    // The closest pairs first (the most spans shared, then the nearest in order), each line
    // in one pair at most.
    let mut candidates: Vec<(usize, usize, usize)> = Vec::new();
    for (i, n) in new_spans.iter().enumerate() {
        for (j, o) in old_spans.iter().enumerate() {
            let score = shared(n, o);
            if score * 2 > n.len() {
                candidates.push((score, i, j));
            }
        }
    }
    candidates.sort_by_key(|&(score, i, j)| (std::cmp::Reverse(score), i.abs_diff(j), i));
    let (mut used_new, mut used_old) = (vec![false; new.len()], vec![false; old.len()]);
    let mut pairs = Vec::new();
    for (_, i, j) in candidates {
        if !used_new[i] && !used_old[j] {
            used_new[i] = true;
            used_old[j] = true;
            pairs.push((old[j], new[i]));
        }
    }
    pairs
}

/// Each line `lines` show once, by identity.
fn once<'a>(lines: &[(u32, &'a str)]) -> HashMap<u32, &'a str> {
    let mut count: HashMap<u32, usize> = HashMap::new();
    for (identity, _) in lines {
        *count.entry(*identity).or_default() += 1;
    }
    lines
        .iter()
        .filter(|(identity, _)| count.get(identity) == Some(&1))
        .map(|(identity, line)| (*identity, *line))
        .collect()
}

/// The slots whose span changed from `old` to `new` (one line's two texts, of one identity),
/// with what the new span now shows, for spans that are plain numbers on both sides or dates
/// that jumped. A date shows its day ([`dates::day`]), not its spelling: a weekday run into
/// the relative time after it ("until Monday 7 min ago" is read "Monday 7") names the same
/// day on the next check, when the count beside it has moved on. Lines whose spans differ in
/// number give none: their spans cannot be paired.
fn changed_slots(identity: u32, old: &str, new: &str) -> Vec<(u32, String)> {
    let (a, b) = (spans(old), spans(new));
    if a.len() != b.len() {
        return Vec::new();
    }
    let changed: Vec<(usize, (&str, std::ops::Range<usize>))> = a
        .iter()
        .zip(b)
        .enumerate()
        .filter(|(_, ((x, _), (y, _)))| {
            x != y
                && ((is_plain_number(x) && is_plain_number(y))
                    || (is_date(x) && is_date(y) && dates::jumped(x, y)))
        })
        .map(|(place, (_, y))| (place, y))
        .collect();
    if changed.is_empty() {
        return Vec::new();
    }
    // An audience count (readers, likes, visitors) is noise by its words, whatever its pace.
    let audience = audience_counts(new);
    changed
        .into_iter()
        .filter(|(_, (_, at))| {
            !audience
                .iter()
                .any(|r| r.start <= at.start && at.end <= r.end)
        })
        .map(|(place, (text, _))| {
            let shows = match is_plain_number(text) {
                true => text.to_string(),
                false => dates::day(text),
            };
            (slot(identity, place), shows)
        })
        .collect()
}

/// The identity of a moved line with the line before it.
fn placed(identity: u32, before: Option<u32>) -> u32 {
    let mut bytes = identity.to_le_bytes().to_vec();
    bytes.extend(before.unwrap_or(u32::MAX).to_le_bytes());
    bytes.push(b'm');
    hash(&String::from_utf8_lossy(&bytes))
}

impl LineMemory {
    /// Whether nothing was seen yet (a monitor whose state predates this memory).
    pub fn is_empty(&self) -> bool {
        self.seen.is_empty()
    }

    /// Remembers every line of `form` (a line form of an accepted value) as seen.
    pub fn accept(&mut self, form: &str) {
        let now = identities(form);
        let lines: Vec<u32> = now.iter().map(|l| l.0).collect();
        add_new(&mut self.seen, &lines, MAX_SEEN);
        self.keep_comer_texts(&now, &HashSet::new());
    }

    /// Remembers the text each comer shows in `lines` (the identities of values accepted with
    /// nothing told, the latest last): a comer among `came_or_went` is proven to come and go
    /// silently, and any comer proven before keeps its latest text. A comer that only ever came
    /// or went with a notified change (an item out of stock and back again) is never proven,
    /// so its coming and going is told each time.
    fn keep_comer_texts(&mut self, lines: &[(u32, &str)], came_or_went: &HashSet<u32>) {
        if self.comers.is_empty() {
            return;
        }
        let comers: HashSet<u32> = self.comers.iter().copied().collect();
        let mut at: HashMap<u32, usize> = self
            .comer_texts
            .chunks_exact(2)
            .enumerate()
            .map(|(i, pair)| (pair[0], i))
            .collect();
        for &(identity, line) in lines {
            if !comers.contains(&identity) {
                continue;
            }
            match at.get(&identity) {
                Some(&i) => self.comer_texts[2 * i + 1] = hash(line),
                None if came_or_went.contains(&identity) => {
                    at.insert(identity, self.comer_texts.len() / 2);
                    self.comer_texts.extend([identity, hash(line)]);
                }
                None => {}
            }
        }
        let extra = (self.comer_texts.len() / 2).saturating_sub(MAX_MOVERS);
        self.comer_texts.drain(..2 * extra);
    }

    /// Remembers every line of `form`, accepted after the value `before` with nothing told, as
    /// seen, and the lines it shows again (seen before, not in `before`) as comers: they went
    /// and came back. The comers that came or went here did so silently.
    pub fn accept_after(&mut self, before: &str, form: &str) {
        let (was, now) = (identities(before), identities(form));
        let moved = self.accept_lines(&was, &now);
        self.keep_comer_texts(&[was, now].concat(), &moved);
    }

    /// Remembers `form`, a change notified after the value `before`, as [`accept_after`]
    /// does, but proves no comer and keeps no comer's text: the lines that came or went with
    /// it were news.
    ///
    /// [`accept_after`]: LineMemory::accept_after
    pub fn accept_notified(&mut self, before: &str, form: &str) {
        self.accept_lines(&identities(before), &identities(form));
    }

    /// Remembers the lines of `now` as seen and those it shows again (seen before, not in
    /// `was`) as comers; returns the identities in one of the two values only.
    fn accept_lines(&mut self, was: &[(u32, &str)], now: &[(u32, &str)]) -> HashSet<u32> {
        let lines: Vec<u32> = now.iter().map(|l| l.0).collect();
        let had: HashSet<u32> = was.iter().map(|l| l.0).collect();
        let has: HashSet<u32> = lines.iter().copied().collect();
        let seen: HashSet<u32> = self.seen.iter().copied().collect();
        let back: Vec<u32> = lines
            .iter()
            .copied()
            .filter(|id| !had.contains(id) && seen.contains(id))
            .collect();
        add_new(&mut self.comers, &back, MAX_MOVERS);
        add_new(&mut self.seen, &lines, MAX_SEEN);
        had.symmetric_difference(&has).copied().collect()
    }

    /// `form` without the lines known to come and go (comers: a promoted listing, a rotating
    /// banner) shown as they were before, for a comparison of the rest: two values alike
    /// without them differ only in lines proven to come and go. Empty and known lines stay,
    /// as they are not remembered.
    pub fn without_comers(&self, form: &str) -> String {
        if self.comers.is_empty() || self.comer_texts.is_empty() {
            return form.to_string();
        }
        let texts: HashMap<u32, u32> = self
            .comer_texts
            .chunks_exact(2)
            .map(|pair| (pair[0], pair[1]))
            .collect();
        let lines: Vec<&str> = form.split('\n').collect();
        let trimmed: Vec<&str> = lines.iter().map(|line| line.trim()).collect();
        let known = known_lines(&trimmed);
        lines
            .iter()
            .zip(trimmed)
            .zip(known)
            .filter(|((_, line), known)| {
                *known
                    || line.is_empty()
                    || texts.get(&hash(&without_spans(line))) != Some(&hash(line))
            })
            .map(|((line, _), _)| *line)
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Remembers the lines `returned` as comers, proven to come and go silently: a waiting
    /// change no longer showed them and `form` (a line form) shows them again.
    pub fn learn_comers(&mut self, returned: &[u32], form: &str) {
        if returned.is_empty() {
            return;
        }
        add_new(&mut self.comers, returned, MAX_MOVERS);
        let proven: HashSet<u32> = returned.iter().copied().collect();
        self.keep_comer_texts(&identities(form), &proven);
    }

    /// Remembers the lines `moving` as movers: they moved and the move did not last.
    pub fn learn_movers(&mut self, moving: &[u32]) {
        add_new(&mut self.movers, moving, MAX_MOVERS);
    }

    /// The news of `value` against `before` (both line forms): its lines never seen, and its
    /// lines that moved relative to `before` and are no movers. Empty while the memory is
    /// empty (nothing is known to be old yet).
    pub fn evidence(&self, before: &str, value: &str) -> Evidence {
        let mut evidence = Evidence::default();
        if self.seen.is_empty() {
            return evidence;
        }
        let seen: HashSet<u32> = self.seen.iter().copied().collect();
        let now = identities(value);
        // Each new or gone line once, however often the value shows it: a set, not a scan of
        // the list so far, so a value of 100,000 new lines costs linear time.
        let mut listed: HashSet<u32> = HashSet::new();
        for (identity, line) in &now {
            if !seen.contains(identity) && listed.insert(*identity) {
                evidence.marks.push(*identity);
                if evidence.new.len() < MAX_SHOWN {
                    evidence.new.push(line.to_string());
                }
            }
        }
        let before = identities(before);
        let shown: HashSet<u32> = now.iter().map(|l| l.0).collect();
        let had: HashSet<u32> = before.iter().map(|l| l.0).collect();
        let comers: HashSet<u32> = self.comers.iter().copied().collect();
        // A line seen before, and not known to come and go, that took the place of lines
        // gone: the list exchanged its items (a feed whose oldest item fell off as an earlier
        // one came back), and what left is no news.
        let exchanged = now
            .iter()
            .any(|(id, _)| !had.contains(id) && seen.contains(id) && !comers.contains(id));
        for (identity, line) in &before {
            if !exchanged
                && !shown.contains(identity)
                && !comers.contains(identity)
                && listed.insert(*identity)
            {
                evidence.losses.push(*identity);
                if evidence.gone.len() < MAX_SHOWN {
                    evidence.gone.push(line.to_string());
                }
            }
        }
        self.moves(&before, &now, &mut evidence);
        self.shifts(&before, &now, &mut evidence);
        evidence
    }

    /// Adds the lines of `now` paired with a line of `before` ([`paired`]) whose numbers or
    /// dates changed in slots that are no churn to `evidence`.
    fn shifts(&self, before: &[(u32, &str)], now: &[(u32, &str)], evidence: &mut Evidence) {
        let churn: HashSet<u32> = self.churn.iter().copied().collect();
        for (identity, was, line) in paired(before, now) {
            if was == line {
                continue;
            }
            let mut shifted = false;
            for (slot, text) in changed_slots(identity, was, line) {
                if churn.contains(&slot) {
                    continue;
                }
                evidence.slots.push(slot);
                evidence.shifts.push(shift(slot, &text));
                shifted = true;
            }
            if shifted && evidence.shifted.len() < MAX_SHOWN {
                evidence.shifted.push(format!("{was} \u{2192} {line}"));
            }
        }
    }

    /// Remembers the slots `slots` as churn: they changed and the change did not last.
    pub fn learn_churn(&mut self, slots: &[u32]) {
        add_new(&mut self.churn, slots, MAX_MOVERS);
    }

    /// Remembers that the shifts of `evidence` were notified: a slot notified before is churn
    /// from now on (a span that changes every few checks, such as a clock read once an hour).
    pub fn notified(&mut self, evidence: &Evidence) {
        let before: HashSet<u32> = self.notified.iter().copied().collect();
        let (again, first): (Vec<u32>, Vec<u32>) = evidence
            .slots
            .iter()
            .copied()
            .partition(|s| before.contains(s));
        add_new(&mut self.churn, &again, MAX_MOVERS);
        add_new(&mut self.notified, &first, MAX_MOVERS);
    }

    /// Adds the lines that moved from `before` to `now` to `evidence`: lines both show once
    /// each, compared in their order; a line a diff of the two orders cannot keep in place
    /// moved.
    fn moves(&self, before: &[(u32, &str)], now: &[(u32, &str)], evidence: &mut Evidence) {
        let (once_before, once_now) = (once(before), once(now));
        let common = |id: &u32| once_before.contains_key(id) && once_now.contains_key(id);
        let old: Vec<u32> = before.iter().map(|l| l.0).filter(common).collect();
        let new: Vec<&(u32, &str)> = now.iter().filter(|l| common(&l.0)).collect();
        let new_ids: Vec<u32> = new.iter().map(|l| l.0).collect();
        if old == new_ids {
            return;
        }
        let ops = similar::capture_diff_slices_deadline(
            similar::Algorithm::Myers,
            &old,
            &new_ids,
            Some(Instant::now() + MOVE_DEADLINE),
        );
        let movers: HashSet<u32> = self.movers.iter().copied().collect();
        // Where each line stands now, so a moved line's old neighbours can be found.
        let at_now: HashMap<u32, usize> =
            new_ids.iter().enumerate().map(|(i, id)| (*id, i)).collect();
        let at_old: HashMap<u32, usize> = old.iter().enumerate().map(|(i, id)| (*id, i)).collect();
        let mut moving = vec![false; new.len()];
        for op in ops {
            if let similar::DiffOp::Insert {
                new_index, new_len, ..
            } = op
            {
                for at in new_index..new_index + new_len {
                    let (identity, line) = *new[at];
                    // The lines it jumped over moved with it, relative to it: between where
                    // it stands now and where its old neighbours stand.
                    let old_at = at_old.get(&identity).copied().unwrap_or(0);
                    let neighbours = [old_at.checked_sub(1), Some(old_at + 1)];
                    let (mut from, mut to) = (at, at);
                    for n in neighbours.into_iter().flatten() {
                        if let Some(there) = old.get(n).and_then(|id| at_now.get(id)) {
                            from = from.min(*there);
                            to = to.max(*there);
                        }
                    }
                    moving[from..=to].iter_mut().for_each(|m| *m = true);
                    if movers.contains(&identity) {
                        continue;
                    }
                    let before = at.checked_sub(1).map(|i| new[i].0);
                    evidence.placements.push(placed(identity, before));
                    if evidence.moved.len() < MAX_SHOWN {
                        evidence.moved.push(line.to_string());
                    }
                }
            }
        }
        evidence
            .moving
            .extend(new.iter().zip(moving).filter(|(_, m)| *m).map(|(l, _)| l.0));
    }

    /// Learns from a new monitor's first value and its quick samples, taken seconds apart:
    /// lines that moved between samples are movers, lines that a sample no longer showed and a
    /// later one showed again are comers, and the lines of the first value and of every sample that the next sample no
    /// longer showed (they came and went) are seen. A
    /// line that appeared in the samples and stayed to the last of them is not: it may be a
    /// real change that came while the monitor was being made, and stays news until it lasts
    /// through a check.
    pub fn warm_up(&mut self, first: &str, samples: &[&str]) {
        self.accept(first);
        self.warm_up_slots(first, samples);
        // Each value's lines are read once: the samples are compared with their neighbours.
        let values: Vec<Vec<(u32, &str)>> = std::iter::once(first)
            .chain(samples.iter().copied())
            .map(identities)
            .collect();
        for (i, pair) in values.windows(2).enumerate() {
            let (before, now) = (&pair[0], &pair[1]);
            let mut evidence = Evidence::default();
            self.moves(before, now, &mut evidence);
            self.learn_movers(&evidence.moving);
            // Lines that went and came back in a later sample come and go; a line that went
            // for good may be a real change made while the monitor was being made.
            let shown: HashSet<u32> = now.iter().map(|l| l.0).collect();
            let back: HashSet<u32> = values[i + 2..]
                .iter()
                .flat_map(|v| v.iter().map(|l| l.0))
                .collect();
            let returned: Vec<u32> = before
                .iter()
                .map(|l| l.0)
                .filter(|id| !shown.contains(id) && back.contains(id))
                .collect();
            add_new(&mut self.comers, &returned, MAX_MOVERS);
            if let Some(later) = values.get(i + 2) {
                let stays: HashSet<u32> = later.iter().map(|l| l.0).collect();
                // Lines that came and went are the page's churn.
                let went: Vec<u32> = now
                    .iter()
                    .map(|l| l.0)
                    .filter(|id| !stays.contains(id))
                    .collect();
                add_new(&mut self.seen, &went, MAX_SEEN);
            }
        }
        let all: HashSet<u32> = self.comers.iter().copied().collect();
        self.keep_comer_texts(&values.concat(), &all);
    }
}

impl LineMemory {
    /// Learns the slots that changed more than once among a new monitor's first value and its
    /// samples (a counter, a clock) as churn. A slot that changed once and stayed may be a real
    /// change that came while the monitor was being made.
    fn warm_up_slots(&mut self, first: &str, samples: &[&str]) {
        let values: Vec<HashMap<u32, &str>> = std::iter::once(first)
            .chain(samples.iter().copied())
            .map(|v| once(&identities(v)).into_iter().collect())
            .collect();
        let mut changes: HashMap<u32, usize> = HashMap::new();
        for pair in values.windows(2) {
            for (identity, line) in &pair[1] {
                if let Some(was) = pair[0].get(identity).filter(|was| *was != line) {
                    for (slot, _) in changed_slots(*identity, was, line) {
                        *changes.entry(slot).or_default() += 1;
                    }
                }
            }
        }
        let churn: Vec<u32> = changes
            .into_iter()
            .filter(|(_, n)| *n > 1)
            .map(|(slot, _)| slot)
            .collect();
        add_new(&mut self.churn, &churn, MAX_MOVERS);
    }
}

/// Appends the hashes of `more` that `list` lacks, then forgets the oldest beyond `max`.
fn add_new(list: &mut Vec<u32>, more: &[u32], max: usize) {
    let mut known: HashSet<u32> = list.iter().copied().collect();
    for h in more {
        if known.insert(*h) {
            list.push(*h);
        }
    }
    if list.len() > max {
        let excess = list.len() - max;
        list.drain(..excess);
    }
}

/// Hashes as base64 of their little-endian bytes: a tenth of their size as JSON numbers.
mod packed {
    use super::*;

    pub fn serialize<S: Serializer>(hashes: &[u32], s: S) -> Result<S::Ok, S::Error> {
        let bytes: Vec<u8> = hashes.iter().flat_map(|h| h.to_le_bytes()).collect();
        s.serialize_str(&STANDARD.encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u32>, D::Error> {
        let text = String::deserialize(d)?;
        let bytes = STANDARD
            .decode(text.as_bytes())
            .map_err(serde::de::Error::custom)?;
        Ok(bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memory(values: &[&str]) -> LineMemory {
        let mut m = LineMemory::default();
        for v in values {
            m.accept(v);
        }
        m
    }

    #[test]
    fn a_line_is_known_by_its_words_not_its_times_counts_or_tokens() {
        let m = memory(&["Fed chief resigns · 12 min ago\nViewed 1,204 times\nsession=a8F3kQ9z"]);
        let later = "Fed chief resigns · 1 h ago\nViewed 1,377 times\nsession=Zk29aPq1";
        assert!(m.evidence("", later).is_empty());
        let news = "Fed chief stays · 1 h ago\nViewed 1,377 times\nsession=Zk29aPq1";
        let e = m.evidence("", news);
        assert_eq!(e.new, vec!["Fed chief stays · 1 h ago"]);
    }

    #[test]
    fn a_swap_in_a_list_that_never_moved_is_news_and_a_mover_is_not() {
        let before = "Top\n1 Alpha\n2 Beta\n3 Gamma\nShuffled\nRed\nGreen\nBlue";
        let mut m = memory(&[before]);
        m.warm_up(
            before,
            &["Top\n1 Alpha\n2 Beta\n3 Gamma\nShuffled\nBlue\nRed\nGreen"],
        );
        let shuffled = "Top\n1 Alpha\n2 Beta\n3 Gamma\nShuffled\nGreen\nBlue\nRed";
        assert!(m.evidence(before, shuffled).is_empty());
        let swapped = "Top\n1 Beta\n2 Alpha\n3 Gamma\nShuffled\nGreen\nBlue\nRed";
        let e = m.evidence(before, swapped);
        assert!(!e.is_empty(), "{e:?}");
        assert!(e.new.is_empty(), "{e:?}");
        assert!(e.lasts_in(&m.evidence(before, swapped)));
    }

    #[test]
    fn a_line_that_appeared_during_the_samples_and_stayed_is_still_news() {
        let first = "Prices\nTea 3 EUR";
        let mut m = LineMemory::default();
        m.warm_up(first, &[first, "Prices\nTea 3 EUR\nCoffee 4 EUR"]);
        assert_eq!(
            m.evidence(first, "Prices\nTea 3 EUR\nCoffee 4 EUR").new,
            vec!["Coffee 4 EUR"]
        );
        // Churn that came and went in the samples is known.
        let mut m = LineMemory::default();
        m.warm_up(first, &["Prices\nTea 3 EUR\nAd: shoes", first]);
        assert!(m.evidence(first, "Prices\nTea 3 EUR\nAd: shoes").is_empty());
        // A line that stayed beside churn that went is still news.
        let mut m = LineMemory::default();
        let (a, b) = (
            "Prices\nTea 3 EUR\nCoffee 4 EUR\nAd: shoes",
            "Prices\nTea 3 EUR\nCoffee 4 EUR\nAd: hats",
        );
        m.warm_up(first, &[a, b]);
        assert_eq!(m.evidence(first, b).new, vec!["Coffee 4 EUR", "Ad: hats"]);
    }

    #[test]
    fn a_line_gone_from_a_list_that_kept_it_is_news_and_a_comer_is_not() {
        let jobs = "Jobs\nRust engineer, Berlin\nData analyst, Hamburg\nDesigner, Köln";
        let promoted = "Jobs\nRust engineer, Berlin\nPromoted: Sales lead\nData analyst, Hamburg\nDesigner, Köln";
        let mut m = LineMemory::default();
        // The promoted listing came, went and came back during the samples.
        m.warm_up(jobs, &[promoted, jobs, promoted]);
        assert!(
            m.evidence(promoted, jobs).is_empty(),
            "{:?}",
            m.evidence(promoted, jobs)
        );
        let taken_down = "Jobs\nRust engineer, Berlin\nPromoted: Sales lead\nDesigner, Köln";
        let e = m.evidence(promoted, taken_down);
        assert_eq!(e.gone, vec!["Data analyst, Hamburg"]);
        assert!(e.lasts_in(&m.evidence(promoted, taken_down)));
        assert!(e.describe().unwrap().contains("1 line no longer shown"));
        // Back again: the line comes and goes, and its next absence is no news.
        let back = m.evidence(promoted, promoted);
        assert!(!e.lasts_in(&back));
        m.learn_comers(&e.returned_in(&back), promoted);
        assert!(m.evidence(promoted, taken_down).is_empty());
    }

    #[test]
    fn a_number_that_never_changed_in_a_line_whose_counter_does_is_news() {
        let job = |salary: &str, applicants: u32, days: u32| {
            format!(
                "Jobs\nRust engineer · Berlin · €{salary} · {applicants} applicants · {days} days ago"
            )
        };
        let first = job("62,000", 11, 3);
        let samples = [
            job("62,000", 12, 3),
            job("62,000", 14, 4),
            job("62,000", 15, 4),
        ];
        let refs: Vec<&str> = samples.iter().map(String::as_str).collect();
        let mut m = LineMemory::default();
        m.warm_up(&first, &refs);
        // The counter and the relative date move on their own: no news.
        assert!(m.evidence(&first, &job("62,000", 19, 5)).is_empty());
        // The salary never moved: its change is news, and lasts while it stays.
        let raised = m.evidence(&first, &job("65,000", 19, 5));
        assert_eq!(raised.shifted.len(), 1, "{raised:?}");
        assert!(raised.describe().unwrap().contains("€62,000"), "{raised:?}");
        assert!(raised.lasts_in(&m.evidence(&first, &job("65,000", 21, 5))));
        assert!(!raised.lasts_in(&m.evidence(&first, &job("64,000", 21, 5))));
    }

    #[test]
    fn a_day_moved_in_a_line_is_news_and_the_pages_day_turning_is_not() {
        let wire = |until: &str, ago: &str, updated: &str| {
            format!(
                "Latest\nHarbour bridge closed for repairs until {until} {ago}\n\
                 Updated {updated}\nTram line 4 extension delayed to spring 3 h ago"
            )
        };
        let first = wire("Friday", "2 min ago", "Thursday 31 December");
        let m = memory(&[&first]);
        // Times move and the page's day turns: no news.
        let later = wire("Friday", "14 min ago", "Friday 1 January");
        assert!(
            m.evidence(&first, &later).is_empty(),
            "{:?}",
            m.evidence(&first, &later)
        );
        // The day the bridge opens moved: news.
        let moved = m.evidence(&first, &wire("Monday", "14 min ago", "Friday 1 January"));
        assert_eq!(moved.shifted.len(), 1, "{moved:?}");
        assert!(
            moved.shifted[0].ends_with("until Monday 14 min ago"),
            "{moved:?}"
        );
        // A minute later the weekday still names Monday, though the count run into it moved
        // on: the news lasts.
        let next = m.evidence(&first, &wire("Monday", "15 min ago", "Friday 1 January"));
        assert!(moved.lasts_in(&next), "{moved:?} then {next:?}");
    }

    #[test]
    fn a_line_is_the_same_line_as_its_age_passes_an_hour_beside_a_weekday() {
        let line = |ago: &str| format!("Latest\nHarbour bridge closed until Monday {ago}\nMore");
        let first = line("59 min ago");
        let m = memory(&[&first]);
        let later = m.evidence(&first, &line("1 h ago"));
        assert!(later.is_empty(), "{later:?}");
        assert_eq!(
            spans("until Monday 59 min ago")
                .iter()
                .map(|(text, _)| *text)
                .collect::<Vec<_>>(),
            ["Monday", "59 min ago"]
        );
    }

    #[test]
    fn a_number_changed_in_one_of_two_lines_alike_but_for_their_numbers_is_news() {
        // Two downloads alike but for their version, size and count; the counts move on every
        // check (an audience count).
        let page = |size: &str, count: u32, shuffled: bool| {
            let (a, b) = (
                format!("ingot-2.4.1-x86_64-linux.tar.gz {size} MB {count} downloads"),
                format!("ingot-2.4.0-x86_64-linux.tar.gz 3.1 MB 1,{count} downloads"),
            );
            let (a, b) = if shuffled { (b, a) } else { (a, b) };
            format!("Releases\n{a}\n{b}\nSponsors")
        };
        let first = page("3.1", 90, false);
        let m = memory(&[&first]);
        assert!(m.evidence(&first, &page("3.1", 93, false)).is_empty());
        let replaced = m.evidence(&first, &page("3.2", 93, false));
        assert_eq!(replaced.shifted.len(), 1, "{replaced:?}");
        assert!(replaced.shifted[0].contains("3.2 MB"), "{replaced:?}");
        // The two lines trading places each pair with their own line: no news of numbers.
        assert!(m.evidence(&first, &page("3.1", 93, true)).shifts.is_empty());
    }

    #[test]
    fn an_audience_count_in_a_line_is_no_news_and_the_number_beside_it_is() {
        let line = |visitors: &str, price: &str| {
            format!("Museum\nTickets €{price} · {visitors} visitors today\nOpen daily")
        };
        let first = line("1,204", "14");
        let m = memory(&[&first]);
        assert!(m.evidence(&first, &line("1,311", "14")).is_empty());
        assert_eq!(m.evidence(&first, &line("1,311", "16")).shifted.len(), 1);
        // A job's applicants are its audience; its salary beside them is what it offers.
        let job = |applicants: u32, salary: &str| {
            format!(
                "Data Analyst\nKestrel · €{salary}–€70,000 · posted 5 h ago · {applicants} applicants"
            )
        };
        let first = job(41, "62,000");
        let m = memory(&[&first]);
        assert!(m.evidence(&first, &job(44, "62,000")).is_empty());
        assert_eq!(m.evidence(&first, &job(44, "65,000")).shifted.len(), 1);
    }

    #[test]
    fn a_value_that_changed_once_in_the_samples_and_stayed_is_news_and_one_that_moves_is_churn() {
        let page = |high: u32, temp: &str| format!("Forecast\nTuesday high {high} C\nNow {temp} C");
        let first = page(11, "4.1");
        let samples = [page(11, "4.3"), page(12, "3.9"), page(12, "4.4")];
        let refs: Vec<&str> = samples.iter().map(String::as_str).collect();
        let mut m = LineMemory::default();
        m.warm_up(&first, &refs);
        let e = m.evidence(&first, &samples[2]);
        assert_eq!(
            e.shifted,
            vec!["Tuesday high 11 C \u{2192} Tuesday high 12 C"]
        );
        // A change that did not last teaches that its slot moves on its own.
        let mut m = LineMemory::default();
        m.warm_up(&first, &refs[..1]);
        let once = m.evidence(&first, &page(11, "5.0"));
        assert!(!once.is_empty());
        let later = m.evidence(&first, &page(11, "5.2"));
        m.learn_churn(&once.unlasting_slots(&later));
        assert!(m.evidence(&first, &page(11, "5.4")).is_empty());
        // A slot notified twice is churn.
        let mut m = LineMemory::default();
        m.accept(&first);
        let e = m.evidence(&first, &page(13, "4.1"));
        m.notified(&e);
        assert!(!m.evidence(&first, &page(14, "4.1")).is_empty());
        m.notified(&m.evidence(&first, &page(14, "4.1")));
        assert!(m.evidence(&first, &page(15, "4.1")).is_empty());
    }

    #[test]
    fn a_line_accepted_again_after_it_went_is_a_comer() {
        let (a, b) = ("News\nBanner: winter sale\nStory", "News\nStory");
        let mut m = memory(&[a, b]);
        assert_eq!(m.evidence(a, b).gone, vec!["Banner: winter sale"]);
        m.accept_after(b, a);
        assert!(m.evidence(a, b).is_empty(), "{:?}", m.evidence(a, b));
        // A line that takes the place of one gone (a banner rotating) is an exchange.
        let c = "News\nBanner: free shipping\nStory";
        let m = memory(&[a, c]);
        assert!(m.evidence(a, c).gone.is_empty());
    }

    #[test]
    fn a_comer_is_left_out_only_once_it_came_or_went_with_nothing_told() {
        let stocked = "Kettle\nIn stock, ships tomorrow\nReviews";
        let sold_out = "Kettle\nOut of stock\nReviews";
        let mut m = memory(&[stocked]);
        // Out of stock and back, each told: the stock line came back, a comer, but only with
        // notified changes, and checks that show it as it is prove nothing.
        m.accept_notified(stocked, sold_out);
        m.accept_notified(sold_out, stocked);
        m.accept_after(stocked, stocked);
        assert_eq!(m.without_comers(stocked), stocked);
        // A promoted line seen to come back with nothing told is left out, as it shows now.
        let promoted = "Kettle\nIn stock, ships tomorrow\nPromoted: Mug · 4.99\nReviews";
        m.accept_after(stocked, promoted);
        m.accept_after(promoted, stocked);
        m.accept_after(stocked, promoted);
        assert_eq!(m.without_comers(promoted), stocked);
        assert_eq!(m.without_comers(stocked), stocked);
        // Told later together with a change, it stays known; with another price it is not the
        // line that came and went.
        m.accept_notified(promoted, sold_out);
        assert_eq!(m.without_comers(promoted), stocked);
        let dearer = promoted.replace("4.99", "5.49");
        assert_eq!(m.without_comers(&dearer), dearer);
    }

    #[test]
    fn the_memory_is_bounded_and_survives_serialization() {
        let mut m = LineMemory::default();
        let big: String = (0..20_000)
            .map(|i| format!("line {}\n", words(i)))
            .collect();
        m.accept(&big);
        assert!(m.seen.len() <= MAX_SEEN);
        let json = serde_json::to_string(&m).unwrap();
        assert!(json.len() < MAX_SEEN * 6 + 100, "{}", json.len());
        assert_eq!(serde_json::from_str::<LineMemory>(&json).unwrap(), m);
    }

    /// A word for `i`, without digits (digits are volatile).
    fn words(mut i: usize) -> String {
        let mut out = String::new();
        loop {
            out.push((b'a' + (i % 26) as u8) as char);
            i /= 26;
            if i == 0 {
                return out;
            }
        }
    }

    #[test]
    fn one_new_line_among_ten_thousand_is_found() {
        let list: Vec<String> = (0..10_000).map(|i| format!("Item {}", words(i))).collect();
        let before = list.join("\n");
        let m = memory(&[&before]);
        let mut after = list.clone();
        after.insert(5_000, "Item brand new".into());
        let e = m.evidence(&before, &after.join("\n"));
        assert_eq!(e.new, vec!["Item brand new"]);
        assert!(e.moved.is_empty(), "{:?}", &e.moved[..e.moved.len().min(3)]);
    }
}
