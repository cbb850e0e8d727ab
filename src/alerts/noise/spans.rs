//! The differences between two masked line keys of one monitor, each written as a mask that
//! keeps working on later values ([`differences`]).
//!
//! Lines are diffed first (Myers under a deadline). Changed lines pair up when a run of them
//! has as many old lines as new; a pair whose lines share half their words, or their first or
//! last word, is one line with parts changed and is diffed word by word. Each differing
//! stretch is grown to the volatile span around it ([`Class::covering`]): the mask is that
//! span's class between a few words of the stable text on each side (`LEFT(CLASS)|(CLASS)RIGHT`,
//! so it still works when one side later changes). Stretches no class explains are the varying
//! words between two anchors, one span per line unless stable text between holds a digit.
//! One unlike line among pairs that kept their words is masked alone between its neighbours;
//! two or more unlike lines (a shuffled list, a feed with new items), or runs whose line counts
//! differ, are one block between the nearest lines every sample has. The work is bounded: lines
//! longer than [`MAX_LINE`] are only compared whole, runs of more than [`MAX_HUNKS`] changed
//! lines are blocks, at most [`MAX_HUNKS`] changed places are written, and both diffs share
//! one deadline.

use super::classes::Class;
use crate::alerts::compare::PLACEHOLDER;
use similar::{Algorithm, DiffTag};
use std::cell::OnceCell;
use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::time::{Duration, Instant};

/// Lines longer than this (bytes) are compared whole, never word by word.
pub(crate) const MAX_LINE: usize = 32 * 1024;

/// The most changed places (blocks of lines, or spans within lines) one comparison writes.
pub(crate) const MAX_HUNKS: usize = 64;

/// Blocks of changed lines at most this many stable lines apart are masked as one.
const BLOCK_GAP: usize = 2;

/// How long the line and word diffs of one comparison may search for a minimal script.
const DEADLINE: Duration = Duration::from_millis(200);

/// The most bytes of stable text a mask names on either side of its span.
const CONTEXT_BYTES: usize = 48;

/// The most words of stable text a mask names on either side of its span.
const CONTEXT_WORDS: usize = 3;

/// The longest example kept with a mask.
const EXAMPLE_CHARS: usize = 80;

/// One difference, written as a mask.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    /// The mask's pattern: one or two alternatives, each with one capture group.
    pub pattern: String,
    /// The kind of span (blocks of lines are [`Class::Words`]).
    pub class: Class,
    /// The span's text in the old key (shortened).
    pub old: String,
    /// The span's text in the new key (shortened).
    pub new: String,
}

/// What [`differences`] found.
#[derive(Debug, Default)]
pub(crate) struct Differences {
    /// The masks, one per changed place, in the order of the value.
    pub found: Vec<Found>,
    /// No line stayed the same: a mask would cover the whole value, so none is written.
    pub nothing_stable: bool,
}

/// The differences between `old` and `new`, two masked line keys of one monitor, as masks
/// (see the [module documentation](self)). Equal keys have none. A change with no stable text
/// around it (the whole value differs) sets [`Differences::nothing_stable`] and gives no
/// mask; a place a mask cannot describe (text inserted with nothing volatile beside it) gives
/// none either, so the masks may leave some differences unexplained.
pub(crate) fn differences(old: &str, new: &str) -> Differences {
    differences_within(old, new, None)
}

/// [`differences`], where a block's anchors must be lines of `stable` (lines that every sample
/// of a monitor has): a list item that kept its place in two samples is no anchor when a
/// third moved it.
pub(crate) fn differences_within(
    old: &str,
    new: &str,
    stable: Option<&HashSet<&str>>,
) -> Differences {
    let mut out = Differences::default();
    if old == new {
        return out;
    }
    let deadline = Instant::now() + DEADLINE;
    let old_lines: Vec<&str> = old.split('\n').collect();
    let new_lines: Vec<&str> = new.split('\n').collect();
    let ops = similar::capture_diff_slices_deadline(
        Algorithm::Myers,
        &old_lines,
        &new_lines,
        Some(deadline),
    );
    let mut hunks: Vec<(Range<usize>, Range<usize>)> = Vec::new();
    for op in ops {
        let (tag, o, n) = op.as_tag_tuple();
        if tag == DiffTag::Equal {
            continue;
        }
        match hunks.last_mut() {
            Some((lo, ln)) if lo.end == o.start && ln.end == n.start => {
                lo.end = o.end;
                ln.end = n.end;
            }
            _ => hunks.push((o, n)),
        }
    }
    let lines = Lines {
        old: &old_lines,
        new: &new_lines,
        stable,
        shapes: OnceCell::new(),
    };
    // Each changed run of lines is masked span by span, or as a block; blocks a line or two
    // apart are one block (a shuffled list in which an item or two kept their place).
    let mut blocks: Vec<(Range<usize>, Range<usize>, bool)> = Vec::new();
    for (o, n) in hunks.into_iter().take(MAX_HUNKS) {
        let too_long = match lines.within(o.clone(), n.clone(), deadline) {
            Within::Masks(found) => {
                out.found.extend(found);
                continue;
            }
            Within::Block => false,
            Within::TooLong => true,
        };
        let (o, n) = lines.grow(o, n);
        match blocks.last_mut() {
            Some((lo, ln, long)) if o.start <= lo.end + BLOCK_GAP || slid(lo, ln, &o, &n) => {
                lo.end = lo.end.max(o.end);
                ln.end = ln.end.max(n.end);
                *long |= too_long;
            }
            _ => blocks.push((o, n, too_long)),
        }
    }
    for (o, n, too_long) in blocks {
        // A block over most of the value is the page itself changing (another template, a
        // redesign), not noise beside its content: a mask that wide would hide every real
        // change. It is left unmasked (an A/B test's templates are flips for the
        // confirmation to judge).
        let wide = 2 * (o.len() + n.len()) > old_lines.len() + new_lines.len();
        match lines.block(o, n) {
            Some(_) if wide => {}
            Some(found) => out.found.push(found),
            // A line too long to compare word by word, alone in its value: what changed in it
            // is not known, so it is neither masked nor called unstable.
            None if too_long => {}
            None => {
                out.nothing_stable = true;
                out.found.clear();
                return out;
            }
        }
    }
    out.found.truncate(MAX_HUNKS);
    out
}

/// The mask of the lines `run` of `lines` (a masked line key's lines) as one block between the
/// lines right around it, as [`differences`] writes a block: for a part of a value known to be
/// noise by its words ([`super::known`]), so it may later change its lines or be left out.
/// `None` unless each line beside it (where the value does not end) can anchor it: in `stable`
/// where given, with a letter or a digit, and no other line of its shape. The block never
/// grows over other lines, as a block of changed lines does: a line beside the banner may be a
/// real change seen on the same check.
pub(crate) fn block_of(
    lines: &[&str],
    run: Range<usize>,
    stable: Option<&HashSet<&str>>,
) -> Option<Found> {
    let around = Lines {
        old: lines,
        new: lines,
        stable,
        shapes: OnceCell::new(),
    };
    let anchors = |i: usize| {
        let line = lines[i];
        line.chars().any(char::is_alphanumeric)
            && stable.is_none_or(|s| s.contains(line))
            && around.shapes().unique(i)
    };
    let above = run.start == 0 || anchors(run.start - 1);
    let below = run.end >= lines.len() || anchors(run.end);
    if !(above && below) || run.is_empty() {
        return None;
    }
    around.block(run.clone(), run)
}

/// Whether the run `o`/`n` and the block before it, `lo`/`ln`, are the two ends of a list
/// that slid (a feed: lines came in at one end and as many went out at the other, at most
/// [`MAX_SLIDE`] lines apart): one block, so its mask is anchored on the lines around the
/// list, not on an item that will slide out too.
fn slid(lo: &Range<usize>, ln: &Range<usize>, o: &Range<usize>, n: &Range<usize>) -> bool {
    let came = ln.len().saturating_sub(lo.len());
    let went = o.len().saturating_sub(n.len());
    let came_last = n.len().saturating_sub(o.len());
    let went_first = lo.len().saturating_sub(ln.len());
    let balanced = (came > 0 && came == went) || (went_first > 0 && went_first == came_last);
    balanced && o.start.saturating_sub(lo.end) <= MAX_SLIDE
}

/// The most lines between the two ends of a list that slid ([`slid`]).
const MAX_SLIDE: usize = 40;

/// How a changed run of lines is to be masked.
enum Within {
    /// Span by span, with these masks.
    Masks(Vec<Found>),
    /// As one block: its lines do not pair up.
    Block,
    /// As one block: a line is longer than [`MAX_LINE`].
    TooLong,
}

struct Lines<'a> {
    old: &'a [&'a str],
    new: &'a [&'a str],
    stable: Option<&'a HashSet<&'a str>>,
    /// The old lines as anchors see them ([`Shapes`]), made once a block needs them.
    shapes: OnceCell<Shapes>,
}

/// The old lines as a block's anchor patterns see them: each run of digits as one `0`, since
/// [`literal`] matches any number there. A line whose shape another line shares is no anchor:
/// its pattern would stop the block at whichever of them comes first (the same story listed
/// five times at the start of a feed, `N minutes ago` before each).
struct Shapes {
    lines: Vec<String>,
    counts: HashMap<String, usize>,
}

impl Shapes {
    fn of(lines: &[&str]) -> Shapes {
        let lines: Vec<String> = lines.iter().map(|l| shape(l)).collect();
        let mut counts: HashMap<String, usize> = HashMap::new();
        for l in &lines {
            *counts.entry(l.clone()).or_default() += 1;
        }
        Shapes { lines, counts }
    }

    fn unique(&self, line: usize) -> bool {
        self.lines
            .get(line)
            .is_some_and(|l| self.counts.get(l) == Some(&1))
    }

    /// How many lines start (or end) with `part`'s shape; in a value of more than
    /// [`MAX_SHORTENED`] lines, taken as more than one (an anchor is then named as before, not
    /// shortened: each try reads every line).
    fn sharing(&self, part: &str, start: bool) -> usize {
        if self.lines.len() > MAX_SHORTENED {
            return usize::MAX;
        }
        let part = shape(part);
        self.lines
            .iter()
            .filter(|l| {
                if start {
                    l.starts_with(&part)
                } else {
                    l.ends_with(&part)
                }
            })
            .count()
    }
}

/// The most lines of a value in which a block's anchors are shortened ([`Shapes::sharing`]).
const MAX_SHORTENED: usize = 10_000;

/// `text` with each run of ASCII digits as one `0`.
fn shape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut digits = false;
    for c in text.chars() {
        if c.is_ascii_digit() {
            if !digits {
                out.push('0');
            }
            digits = true;
        } else {
            digits = false;
            out.push(c);
        }
    }
    out
}

impl Lines<'_> {
    /// The masks of a changed run of lines compared word by word, when its lines pair up and
    /// each pair still shares enough words; otherwise why the run is to be masked as a block.
    fn within(&self, o: Range<usize>, n: Range<usize>, deadline: Instant) -> Within {
        // More changed lines in a row than masks a comparison writes: a block, and no word
        // diffs of thousands of lines.
        if o.len() != n.len() || o.len() > MAX_HUNKS {
            return Within::Block;
        }
        let mut pairs = Vec::with_capacity(o.len());
        let mut unlike = 0;
        for (i, j) in o.clone().zip(n) {
            let (a, b) = (self.old[i], self.new[j]);
            if a.len() > MAX_LINE || b.len() > MAX_LINE {
                return Within::TooLong;
            }
            let pair = Pair::diff(a, b, deadline);
            unlike += usize::from(!pair.alike());
            pairs.push((i, pair));
        }
        // Two unlike lines or more are a list or a block of text that changed: one block. One
        // unlike line among lines that kept most words (a rotating promo under a table whose
        // currency signs move) is masked alone, so the table stays compared.
        if unlike > 1 || (unlike == 1 && pairs.len() == 1) {
            return Within::Block;
        }
        let mut found = Vec::new();
        for (i, pair) in pairs {
            let above = i.checked_sub(1).map(|k| self.old[k]);
            let below = self.old.get(i + 1).copied();
            if pair.alike() {
                found.extend(pair.masks(above, below));
            } else if let Some(f) = whole_line(&pair, above, below) {
                found.push(f);
            }
        }
        Within::Masks(found)
    }

    /// The run `o` (old lines) / `n` (new lines) grown over equal lines on both sides until
    /// the lines beside it are anchors: stable in every sample, with a letter or a digit, and
    /// no other line of the value has their shape ([`Shapes`]). A side with no such line up
    /// to the value's edge (every line a numbered row) stops at the nearest stable line, as
    /// the block is better anchored on a line like others than left with no anchor at all.
    fn grow(&self, o: Range<usize>, n: Range<usize>) -> (Range<usize>, Range<usize>) {
        let shapes = self.shapes();
        let stable = |i: usize| {
            let line = self.old[i];
            line.chars().any(char::is_alphanumeric) && self.stable.is_none_or(|s| s.contains(line))
        };
        let unique = |i: usize| stable(i) && shapes.unique(i);
        let side = |up: bool| match self.reach(&o, &n, up, &unique) {
            (k, true) => k,
            (k, false) => match self.reach(&o, &n, up, &stable) {
                (near, true) => near,
                _ => k,
            },
        };
        let (above, below) = (side(true), side(false));
        (
            o.start - above..o.end + below,
            n.start - above..n.end + below,
        )
    }

    /// How many equal lines the run `o`/`n` grows over, upwards or downwards, before the line
    /// beside it passes `anchor`; and whether one did (else the run reached the edge).
    fn reach(
        &self,
        o: &Range<usize>,
        n: &Range<usize>,
        up: bool,
        anchor: &dyn Fn(usize) -> bool,
    ) -> (usize, bool) {
        let mut k = 0;
        loop {
            let next = if up {
                (k < o.start && k < n.start).then(|| o.start - k - 1)
            } else {
                (o.end + k < self.old.len() && n.end + k < self.new.len()).then_some(o.end + k)
            };
            match next {
                Some(i) if anchor(i) => return (k, true),
                Some(_) => k += 1,
                None => return (k, false),
            }
        }
    }

    fn shapes(&self) -> &Shapes {
        self.shapes.get_or_init(|| Shapes::of(self.old))
    }

    /// The mask of a changed run of lines as one block between the nearest stable lines;
    /// `None` when there is no stable line on either side.
    fn block(&self, o: Range<usize>, n: Range<usize>) -> Option<Found> {
        let above = o.start.checked_sub(1).map(|k| self.old[k]);
        let below = self.old.get(o.end).copied();
        let shapes = self.shapes();
        let pattern = match (above, below) {
            (Some(a), Some(b)) => format!(
                "{}(\\n(?:[^\\n]*\\n)*?){}",
                line_end_anchor(a, shapes),
                line_start_anchor(b, shapes)
            ),
            (Some(a), None) => format!("{}(\\n[\\s\\S]*)\\z", line_end_anchor(a, shapes)),
            (None, Some(b)) => format!("\\A((?:[^\\n]*\\n)*?){}", line_start_anchor(b, shapes)),
            (None, None) => return None,
        };
        // A line that is a date (or a number) on both sides is of that class, so its meaning
        // counts (a date that turned with the clock).
        let class = match (&self.old[o.clone()], &self.new[n.clone()]) {
            ([a], [b]) => Class::covering(a, 0..a.len(), b, 0..b.len())
                .filter(|(_, ra, rb)| *ra == (0..a.len()) && *rb == (0..b.len()))
                .map_or(Class::Words, |(class, ..)| class),
            _ => Class::Words,
        };
        Some(Found {
            pattern,
            class,
            old: example(&self.old[o].join("\n")),
            new: example(&self.new[n].join("\n")),
        })
    }
}

/// The mask of a line that changed whole, between its neighbours: the line after the last
/// words of the line above, or before the first words of the line below.
fn whole_line(pair: &Pair<'_>, above: Option<&str>, below: Option<&str>) -> Option<Found> {
    let mut alternatives = Vec::new();
    if let Some(words) = above
        .map(|l| suffix_words(l, CONTEXT_WORDS, CONTEXT_BYTES))
        .filter(|w| w.chars().any(char::is_alphanumeric))
    {
        alternatives.push(format!("(?i:{})\\n([^\\n]*)$", literal(words)));
    }
    if let Some(words) = below
        .map(|l| prefix_words(l, CONTEXT_WORDS, CONTEXT_BYTES))
        .filter(|w| w.chars().any(char::is_alphanumeric))
    {
        alternatives.push(format!("^([^\\n]*)\\n(?i:{})", literal(words)));
    }
    (!alternatives.is_empty()).then(|| Found {
        pattern: alternatives.join("|"),
        class: Class::Words,
        old: example(pair.a),
        new: example(pair.b),
    })
}

/// The most words a block's anchor names of its line.
const ANCHOR_WORDS: usize = 8;

/// The most bytes a block's anchor names of its line.
const ANCHOR_BYTES: usize = 64;

/// The end of a stable line above a block: for a line of more than [`CONTEXT_WORDS`] words,
/// its fewest last words that no other line ends with and that say enough alone
/// ([`telling`]), so the anchor outlives an edit of the rest of its line (a rotating ad after
/// its label); else the whole line from its start when short, else its last words.
fn line_end_anchor(line: &str, shapes: &Shapes) -> String {
    for words in shortest(line)..=ANCHOR_WORDS {
        let tail = suffix_words(line, words, ANCHOR_BYTES);
        if tail.len() == line.len() {
            break;
        }
        if telling(tail) && shapes.sharing(tail, false) == 1 {
            return literal(tail);
        }
    }
    let tail = suffix_words(line, ANCHOR_WORDS, ANCHOR_BYTES);
    if tail.len() == line.len() {
        format!("^{}", literal(line))
    } else {
        literal(tail)
    }
}

/// The fewest words an anchor names of `line`: all of a short line (a heading is its own
/// best anchor), else one.
fn shortest(line: &str) -> usize {
    let words = tokens(line)
        .into_iter()
        .filter(|t| is_word(&line[t.clone()]))
        .count();
    if words <= CONTEXT_WORDS {
        ANCHOR_WORDS + 1
    } else {
        1
    }
}

/// The start of a stable line below a block: as [`line_end_anchor`], its first words.
fn line_start_anchor(line: &str, shapes: &Shapes) -> String {
    for words in shortest(line)..=ANCHOR_WORDS {
        let head = prefix_words(line, words, ANCHOR_BYTES);
        if head.len() == line.len() {
            break;
        }
        if telling(head) && shapes.sharing(head, true) == 1 {
            return literal(head);
        }
    }
    let head = prefix_words(line, ANCHOR_WORDS, ANCHOR_BYTES);
    if head.len() == line.len() {
        format!("{}$", literal(line))
    } else {
        literal(head)
    }
}

/// Two lines diffed word by word.
struct Pair<'a> {
    a: &'a str,
    b: &'a str,
    /// The differing stretches, in order: byte ranges in `a` and in `b`.
    hunks: Vec<(Range<usize>, Range<usize>)>,
    /// Words (letters or digits) the two lines share, and the most either has.
    shared: usize,
    words: usize,
    /// Whether they start, or end, with the same word.
    same_edge: bool,
}

impl<'a> Pair<'a> {
    fn diff(a: &'a str, b: &'a str, deadline: Instant) -> Pair<'a> {
        let ta = tokens(a);
        let tb = tokens(b);
        let sa: Vec<&str> = ta.iter().map(|r| &a[r.clone()]).collect();
        let sb: Vec<&str> = tb.iter().map(|r| &b[r.clone()]).collect();
        let ops = similar::capture_diff_slices_deadline(Algorithm::Myers, &sa, &sb, Some(deadline));
        let span = |t: &[Range<usize>], r: Range<usize>, len: usize| -> Range<usize> {
            match (t.get(r.start), r.is_empty()) {
                (Some(first), false) => first.start..t[r.end - 1].end,
                (Some(first), true) => first.start..first.start,
                (None, _) => len..len,
            }
        };
        let mut hunks: Vec<(Range<usize>, Range<usize>)> = Vec::new();
        let mut shared = 0;
        for op in ops {
            let (tag, o, n) = op.as_tag_tuple();
            if tag == DiffTag::Equal {
                shared += sa[o].iter().filter(|t| is_word(t)).count();
                continue;
            }
            let (ra, rb) = (span(&ta, o, a.len()), span(&tb, n, b.len()));
            match hunks.last_mut() {
                Some((la, lb)) if la.end == ra.start && lb.end == rb.start => {
                    la.end = ra.end;
                    lb.end = rb.end;
                }
                _ => hunks.push((ra, rb)),
            }
        }
        let words = sa
            .iter()
            .filter(|t| is_word(t))
            .count()
            .max(sb.iter().filter(|t| is_word(t)).count());
        let first = |s: &[&'a str]| s.iter().find(|t| is_word(t)).copied();
        let last = |s: &[&'a str]| s.iter().rev().find(|t| is_word(t)).copied();
        let same_edge = (first(&sa).is_some() && first(&sa) == first(&sb))
            || (last(&sa).is_some() && last(&sa) == last(&sb));
        Pair {
            a,
            b,
            hunks,
            shared,
            words,
            same_edge,
        }
    }

    /// Whether the two lines are one line with parts changed (rather than two different
    /// lines, as in a shuffled list): they share at least half their words, or their first or
    /// last word.
    fn alike(&self) -> bool {
        self.shared * 2 >= self.words.max(1) || self.same_edge
    }

    /// The masks of this pair's differences. `above` and `below` are the neighbouring lines,
    /// the context of a span that fills its whole line.
    fn masks(&self, above: Option<&str>, below: Option<&str>) -> Vec<Found> {
        let spans = self.spans();
        let mut found = Vec::new();
        for (k, (class, ra, rb)) in spans.iter().enumerate() {
            let prev_end = k.checked_sub(1).map_or(0, |p| spans[p].1.end);
            let next_start = spans.get(k + 1).map_or(self.a.len(), |s| s.1.start);
            let left = left_context(self.a, prev_end, ra.start, above);
            // A span that runs to the end of its line after words of its own line ends with
            // the line: the next line's words would stop the mask matching once that line
            // changes (a ranked list's first two entries trading places), and the noise would
            // be back just when a real change needs telling apart from it.
            let own_left = suffix_words(&self.a[prev_end..ra.start], CONTEXT_WORDS, CONTEXT_BYTES)
                .chars()
                .any(char::is_alphanumeric);
            let below = if own_left { None } else { below };
            let right = right_context(self.a, ra.end, next_start, below);
            if let Some(pattern) = write(*class, &left, &right) {
                found.push(Found {
                    pattern,
                    class: *class,
                    old: example(&self.a[ra.clone()]),
                    new: example(&self.b[rb.clone()]),
                });
            }
        }
        found
    }

    /// The spans of this pair's differences: each stretch (or run of stretches separated only
    /// by punctuation and spaces) grown to the volatile span around it, or kept as varying
    /// words; overlapping spans joined.
    fn spans(&self) -> Vec<(Class, Range<usize>, Range<usize>)> {
        let mut clusters: Vec<Vec<(Range<usize>, Range<usize>)>> = Vec::new();
        for h in &self.hunks {
            match clusters.last_mut() {
                Some(c)
                    if c.last().is_some_and(|l| {
                        !self.a[l.0.end..h.0.start]
                            .chars()
                            .any(char::is_alphanumeric)
                    }) =>
                {
                    c.push(h.clone())
                }
                _ => clusters.push(vec![h.clone()]),
            }
        }
        let mut spans: Vec<(Class, Range<usize>, Range<usize>)> = Vec::new();
        for cluster in clusters {
            let (Some(first), Some(last)) = (cluster.first(), cluster.last()) else {
                continue;
            };
            let whole = (first.0.start..last.0.end, first.1.start..last.1.end);
            if let Some(s) = self.cover(&whole) {
                spans.push(s);
                continue;
            }
            for h in &cluster {
                spans.push(
                    self.cover(h)
                        .unwrap_or((Class::Words, h.0.clone(), h.1.clone())),
                );
            }
        }
        spans.sort_by_key(|s| s.1.start);
        // Spans between the first and the last varying words join them, unless stable text
        // between holds a digit (a price beside a moving currency sign stays compared).
        if let (Some(first), Some(last)) = (
            spans.iter().position(|s| s.0 == Class::Words),
            spans.iter().rposition(|s| s.0 == Class::Words),
        ) {
            let between = &self.a[spans[first].1.end..spans[last].1.start.max(spans[first].1.end)];
            if !between.chars().any(|c| c.is_ascii_digit()) {
                for s in &mut spans[first..=last] {
                    s.0 = Class::Words;
                }
            }
        }
        let mut joined: Vec<(Class, Range<usize>, Range<usize>)> = Vec::new();
        for s in spans {
            if let Some(last) = joined.last_mut() {
                let overlap = s.1.start < last.1.end || s.2.start < last.2.end;
                // Varying words on one line are one span, with whatever lies between them: a
                // list shuffled within its line, an ad whose words share a few with the next.
                let words_between = last.0 == Class::Words
                    && s.0 == Class::Words
                    && s.1.start >= last.1.end
                    && !self.a[last.1.end..s.1.start]
                        .chars()
                        .any(|c| c.is_ascii_digit());
                if overlap || words_between {
                    let class = if last.0 == s.0 { s.0 } else { Class::Words };
                    last.0 = class;
                    last.1.end = last.1.end.max(s.1.end);
                    last.2.end = last.2.end.max(s.2.end);
                    continue;
                }
            }
            joined.push(s);
        }
        joined
    }

    /// The volatile span a stretch belongs to. A stretch empty on one side (text inserted)
    /// takes the word beside it on both sides first, so a clock that gained its seconds is
    /// still one clock.
    fn cover(
        &self,
        h: &(Range<usize>, Range<usize>),
    ) -> Option<(Class, Range<usize>, Range<usize>)> {
        let (mut ra, mut rb) = h.clone();
        // A span an earlier mask hides on one side (the mask's anchor changed on the other):
        // the kind of the text on the other side.
        if &self.a[ra.clone()] == PLACEHOLDER {
            return Class::covering_one(self.b, rb).map(|(c, r)| (c, ra, r));
        }
        if &self.b[rb.clone()] == PLACEHOLDER {
            return Class::covering_one(self.a, ra).map(|(c, r)| (c, r, rb));
        }
        if ra.is_empty() || rb.is_empty() {
            let before = last_token(&self.a[..ra.start]);
            if before > 0 && last_token(&self.b[..rb.start]) == before {
                ra.start -= before;
                rb.start -= before;
            } else {
                let after = first_token(&self.a[ra.end..]);
                if after == 0 || first_token(&self.b[rb.end..]) != after {
                    return None;
                }
                ra.end += after;
                rb.end += after;
            }
        }
        Class::covering(self.a, ra, self.b, rb)
    }
}

/// Where a span's stable text on one side is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Context {
    /// Stable text (a regular expression for it).
    Text(String),
    /// The span starts (ends) its line and its line has no stable text on that side.
    LineEdge,
    /// Another span right beside it: no anchor on that side.
    None,
}

fn left_context(line: &str, from: usize, to: usize, above: Option<&str>) -> Context {
    let stretch = &line[from..to];
    let words = suffix_words(stretch, CONTEXT_WORDS, CONTEXT_BYTES);
    if words.chars().any(char::is_alphanumeric) {
        return Context::Text(format!("(?i:{})", literal(words)));
    }
    if from > 0 {
        return Context::None;
    }
    // At the start of its line: the line before, then this line's punctuation, is the anchor.
    match above.map(|l| suffix_words(l, CONTEXT_WORDS, CONTEXT_BYTES)) {
        Some(prev) if prev.chars().any(char::is_alphanumeric) => {
            Context::Text(format!("(?i:{}\\n{})", literal(prev), literal(stretch)))
        }
        _ if !stretch.is_empty() => Context::Text(format!("^(?i:{})", literal(stretch))),
        _ => Context::LineEdge,
    }
}

fn right_context(line: &str, from: usize, to: usize, below: Option<&str>) -> Context {
    let stretch = &line[from..to];
    let words = prefix_words(stretch, CONTEXT_WORDS, CONTEXT_BYTES);
    if words.chars().any(char::is_alphanumeric) {
        return Context::Text(format!("(?i:{})", literal(words)));
    }
    if to < line.len() {
        return Context::None;
    }
    match below.map(|l| prefix_words(l, CONTEXT_WORDS, CONTEXT_BYTES)) {
        Some(next) if next.chars().any(char::is_alphanumeric) => {
            Context::Text(format!("(?i:{}\\n{})", literal(stretch), literal(next)))
        }
        _ if !stretch.is_empty() => Context::Text(format!("(?i:{})$", literal(stretch))),
        _ => Context::LineEdge,
    }
}

/// The pattern of a span of `class` between `left` and `right`; `None` when the span has no
/// anchor that would keep the mask from matching anywhere.
fn write(class: Class, left: &Context, right: &Context) -> Option<String> {
    let group = format!("({})", class.fragment());
    if !class.is_volatile() {
        // Varying words need both ends.
        return match (left, right) {
            (Context::Text(l), Context::Text(r)) => Some(format!("{l}{group}{r}")),
            (Context::Text(l), Context::LineEdge) => Some(format!("{l}([^\\n]*)$")),
            (Context::LineEdge, Context::Text(r)) => Some(format!("^{group}{r}")),
            _ => None,
        };
    }
    let mut alternatives = Vec::new();
    if let Context::Text(l) = left
        && telling(l)
    {
        let end = if *right == Context::LineEdge { "$" } else { "" };
        alternatives.push(format!("{l}{group}{end}"));
    }
    if let Context::Text(r) = right
        && telling(r)
    {
        let start = if *left == Context::LineEdge { "^" } else { "" };
        alternatives.push(format!("{start}{group}{r}"));
    }
    if alternatives.is_empty() {
        // Neither side says enough alone (a currency code, a unit): only both together.
        let side = |c: &Context, edge: &'static str| match c {
            Context::Text(t) => Some(t.clone()),
            Context::LineEdge => Some(edge.to_string()),
            Context::None => None,
        };
        let (l, r) = (side(left, "^")?, side(right, "$")?);
        if l == "^" && r == "$" {
            return None;
        }
        alternatives.push(format!("{l}{group}{r}"));
    }
    Some(alternatives.join("|"))
}

/// Whether a context (its pattern) is specific enough to anchor a mask on its own: two words,
/// or one of at least six letters. A lone currency code or unit (`USD`, `ms`, `%`) stands
/// beside every price or measure of a page, so a mask anchored on it alone would hide a real
/// price change elsewhere on the page.
fn telling(pattern: &str) -> bool {
    let text = pattern.trim_start_matches("(?i:").replace("\\n", " ");
    let words: Vec<usize> = text
        .split(|c: char| !c.is_alphabetic())
        .map(|w| w.chars().count())
        .filter(|&n| n > 1)
        .collect();
    words.len() >= 2 || words.iter().any(|&n| n >= 6)
}

/// `text` as a regular expression matching itself, except that a placeholder (a span an
/// earlier mask hides, a block of lines included: masks apply to the unmasked value) matches
/// any text, and a number matches any number: context that holds a year or a count (a
/// footer's `© 2026`) must not stop matching when that number moves, or the mask goes with it.
fn literal(text: &str) -> String {
    let escaped = regex::escape(text).replace(PLACEHOLDER, "[\\s\\S]*?");
    let mut out = String::with_capacity(escaped.len());
    let mut digits = false;
    for c in escaped.chars() {
        if c.is_ascii_digit() {
            if !digits {
                out.push_str("[0-9]+");
            }
            digits = true;
        } else {
            digits = false;
            out.push(c);
        }
    }
    out
}

/// The tokens of a line: runs of letters and digits, runs of white space, and single other
/// characters, as byte ranges.
fn tokens(line: &str) -> Vec<Range<usize>> {
    let mut out: Vec<Range<usize>> = Vec::new();
    let mut kind = 0u8;
    for (i, c) in line.char_indices() {
        let k = if c.is_alphanumeric() || c == '_' {
            1
        } else if c.is_whitespace() {
            2
        } else {
            3
        };
        match out.last_mut() {
            Some(last) if k == kind && k != 3 => last.end = i + c.len_utf8(),
            _ => out.push(i..i + c.len_utf8()),
        }
        kind = k;
    }
    out
}

fn is_word(token: &str) -> bool {
    token.chars().next().is_some_and(char::is_alphanumeric)
}

/// The length in bytes of the last token of `text`.
fn last_token(text: &str) -> usize {
    tokens(text).last().map_or(0, |r| r.len())
}

/// The length in bytes of the first token of `text`.
fn first_token(text: &str) -> usize {
    tokens(text).first().map_or(0, |r| r.len())
}

/// The end of `text` holding at most `words` words and `bytes` bytes, starting at a token.
fn suffix_words(text: &str, words: usize, bytes: usize) -> &str {
    let mut start = text.len();
    let mut seen = 0;
    for t in tokens(text).iter().rev() {
        let w = is_word(&text[t.clone()]);
        if (w && seen == words) || text.len() - t.start > bytes {
            break;
        }
        seen += usize::from(w);
        start = t.start;
    }
    &text[start..]
}

/// The start of `text` holding at most `words` words and `bytes` bytes, ending at a token.
fn prefix_words(text: &str, words: usize, bytes: usize) -> &str {
    let mut end = 0;
    let mut seen = 0;
    for t in tokens(text) {
        let w = is_word(&text[t.clone()]);
        if (w && seen == words) || t.end > bytes {
            break;
        }
        seen += usize::from(w);
        end = t.end;
    }
    &text[..end]
}

/// `text` shortened to [`EXAMPLE_CHARS`] characters for a person to recognise.
pub(crate) fn example(text: &str) -> String {
    match text.char_indices().nth(EXAMPLE_CHARS) {
        Some((cut, _)) => format!("{}{PLACEHOLDER}", &text[..cut]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn patterns(old: &str, new: &str) -> Vec<String> {
        differences(old, new)
            .found
            .into_iter()
            .map(|f| f.pattern)
            .collect()
    }

    #[test]
    fn words_that_end_a_line_are_masked_to_its_end_and_still_match_when_the_next_line_changes() {
        let page = |on_air: &str, top: &str| {
            format!("Radio Meridian\nOn air now: {on_air}\n{top}\nSlow Comet - Mira Okafor")
        };
        let p = patterns(
            &page("Iron & Ivy - Marlow", "Glass Harbour - The Lanterns"),
            &page("Blue Hour - Sana Idris", "Glass Harbour - The Lanterns"),
        );
        assert_eq!(p.len(), 1, "{p:?}");
        let mask = regex::RegexBuilder::new(&p[0])
            .multi_line(true)
            .build()
            .unwrap();
        // The chart's first two entries traded places: the mask still finds the line.
        let swapped = page("Tin Roof Rain - Hollis", "Slow Comet - Mira Okafor");
        assert!(mask.is_match(&swapped), "{p:?}");
    }

    #[test]
    fn a_counter_is_masked_between_its_words() {
        let p = patterns(
            "Aurora\nIn stock - 12 bought in the last hour\nEnd",
            "Aurora\nIn stock - 15 bought in the last hour\nEnd",
        );
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(p[0].starts_with("(?i:In stock \\- )("), "{}", p[0]);
    }

    #[test]
    fn context_words_are_bounded() {
        assert_eq!(
            suffix_words("one two three four ", 3, 48),
            " two three four "
        );
        assert_eq!(
            prefix_words(" bought in the last hour", 3, 48),
            " bought in the "
        );
    }

    #[test]
    fn a_value_with_no_stable_line_has_no_mask() {
        let d = differences("alpha beta", "gamma delta");
        assert!(d.nothing_stable);
        assert!(d.found.is_empty());
    }

    #[test]
    fn another_template_over_most_of_the_value_is_no_mask() {
        let table = "Home Help\nPricing\nSimple plans for every team.\nStarter 0 USD per user\nTeam 39 USD per user\nCompare all features\n(c) Flowbase";
        let cards = "Home Help\nPlans that grow with you\nStarter\n0 USD/mo per seat\nTeam\n39 USD/mo per seat\nStart free trial\nTrusted by 4,000+ teams\n(c) Flowbase";
        let d = differences(table, cards);
        assert!(d.found.is_empty(), "{:#?}", d.found);
        assert!(!d.nothing_stable);
        // A rotating block beside content that stays is still one.
        let a = "Home\nPrice 39 USD\nIn stock\nShips today\nFree returns\nAlso bought\nMilk Frother\nTamper\n(c) Shop";
        let b = "Home\nPrice 39 USD\nIn stock\nShips today\nFree returns\nAlso bought\nKnock Box\nScale Mini\n(c) Shop";
        assert_eq!(differences(a, b).found.len(), 1);
    }

    #[test]
    fn a_block_anchored_on_a_footer_year_still_matches_once_the_year_rolls() {
        let a = "Home\nPrice 39 USD\nIn stock\nShips today\nFree returns\nAlso bought\nMilk Frother\nTamper\n© 2026 Shop. All rights reserved.";
        let b = "Home\nPrice 39 USD\nIn stock\nShips today\nFree returns\nAlso bought\nKnock Box\nScale Mini\n© 2026 Shop. All rights reserved.";
        let found = differences(a, b).found;
        assert_eq!(found.len(), 1);
        let mask = regex::RegexBuilder::new(&found[0].pattern)
            .multi_line(true)
            .build()
            .unwrap();
        let next_year = b.replace("2026", "2027").replace("Knock Box", "Cup Warmer");
        let caps = mask.captures(&next_year).expect("the mask still matches");
        assert!(caps.get(1).unwrap().as_str().contains("Cup Warmer"));
    }

    #[test]
    fn a_block_is_anchored_on_lines_no_other_line_resembles_by_the_fewest_words_that_tell() {
        // (what, old, new, the block's expected pattern)
        let cases = [
            (
                "a feed listing one story several times (its first minutes): the items are no anchors",
                "Latest\n1 minute ago Council approves new cycle lanes (0)\n4 minutes ago Council approves new cycle lanes (0)\n7 minutes ago Council approves new cycle lanes (0)\nAdvertisement: Switch your energy supplier and save\nMost read",
                "Latest\njust now Storm damage bill reaches 2m (1)\n4 minutes ago Council approves new cycle lanes (0)\n7 minutes ago Council approves new cycle lanes (0)\nAdvertisement: Switch your energy supplier and save\nMost read",
                "^Latest(\\n(?:[^\\n]*\\n)*?)Advertisement: ",
            ),
            (
                "lines that differ in their numbers only are one shape",
                "Rank\nTrack 1 plays 10\nTrack 2 plays 20\nChart ends here",
                "Rank\nNew single\nTrack 2 plays 20\nChart ends here",
                "^Rank(\\n(?:[^\\n]*\\n)*?)Chart ends here$",
            ),
            (
                "a short line is named whole",
                "Also bought\nMilk Frother\nTamper\nFooter",
                "Also bought\nKnock Box\nScale Mini\nFooter",
                "^Also bought(\\n(?:[^\\n]*\\n)*?)Footer$",
            ),
        ];
        for (what, old, new, expected) in cases {
            let found = differences(old, new).found;
            assert_eq!(found.len(), 1, "{what}: {found:#?}");
            assert_eq!(found[0].pattern, expected, "{what}");
        }
        // The feed's block still holds once the ad rotated and the repeated story slid out.
        let (_, old, _, pattern) = cases[0];
        let mask = regex::RegexBuilder::new(pattern)
            .multi_line(true)
            .build()
            .unwrap();
        let later = "Latest\njust now New bridge design unveiled (4)\n3 minutes ago Market traders protest rent rise (3)\nAdvertisement: Book your spring holiday today\nMost read";
        assert!(mask.is_match(old) && mask.is_match(later));
        // Where every line has one shape (numbered rows), the nearest stable lines still
        // anchor the block: the value has stable parts.
        let rows = differences(
            "row 1: 5\nrow 2: 7\nrow 3: 9\nrow 4: 2",
            "row 1: 5\nsomething else entirely\nanother line\nrow 4: 2",
        );
        assert!(!rows.nothing_stable);
        assert_eq!(rows.found.len(), 1, "{:#?}", rows.found);
        assert_eq!(
            rows.found[0].pattern,
            "^row [0-9]+: [0-9]+(\\n(?:[^\\n]*\\n)*?)row [0-9]+: [0-9]+$"
        );
    }
}
