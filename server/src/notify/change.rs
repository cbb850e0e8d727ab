//! The visible change of a notification: what changed between the previous value and the
//! current one once normalisation and the monitor's noise masks have had their say.
//!
//! Both values are taken by their line forms ([`Comparator::line_form`]: the line key, in which
//! white space, Unicode forms, quote and dash variants and character references make no
//! difference, or a JSON document's canonical lines, so key order and number spellings make
//! none either) and cut into words, white space runs and masked spans
//! ([`Comparator::mask_spans`]). A masked
//! span equals any other masked span, so the word diff never reports noise as deleted or
//! inserted: it is shown as it reads now, dimmed. What remains deleted or inserted is the real
//! change; when none of it holds a visible character, there is no change to tell, and
//! [`super::notification`] sends nothing. Unchanged text is folded to a few lines around each
//! change and each change cut to a bounded length, so a one-word change in a 10 MB page reads
//! as one word; the diff searches for at most the engine's diff deadline, then settles for a
//! coarser script (linear memory, bounded time).

use crate::store::ChangeData;
use similar::{Algorithm, DiffTag};
use std::collections::{HashMap, VecDeque};
use std::fmt::Write;
use std::hash::{Hash, Hasher};
use std::time::{Duration, Instant};
use wachet::alerts::compare::{Comparator, PLACEHOLDER};
use wachet::model::LineOrder;

/// How long the word diff may search before settling for a coarser script: the engine's own
/// bound ([`wachet::diff::diff`]).
const DEADLINE: Duration = Duration::from_millis(300);
/// Longest deletion or insertion shown; a longer one is cut (the history has it whole).
pub const MAX_CHANGE_CHARS: usize = 5_000;
/// Unchanged lines kept before and after each change.
const CONTEXT_LINES: usize = 2;
/// Unchanged characters kept on each side of a change, whatever the lines.
const CONTEXT_CHARS: usize = 200;
/// The most text shown in all, in bytes; past it the rest of the change is left to the
/// history (a page changed all over still makes a readable notification).
const MAX_SHOWN_BYTES: usize = 64 * 1024;

/// What the HTML adds around one part at most (`<span class="noise" style=…>`…`</span>`).
const PART_MARKUP_BYTES: usize = 64;
/// The most pieces listed in [`ChangeData::removed`] and [`ChangeData::added`].
pub const MAX_PIECES: usize = 100;

/// What a stretch of the shown change is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Unchanged text.
    Same,
    /// Removed text.
    Removed,
    /// Added text.
    Added,
    /// A masked span (noise), as it reads now (or read, inside removed text).
    Noise,
    /// Unchanged text left out; its text says how much.
    Folded,
}

/// The change between two values of a monitor, ready to show ([`VisibleChange::html`],
/// [`VisibleChange::plain`]) and to send as data ([`VisibleChange::data`]).
#[derive(Debug, Clone, Default)]
pub struct VisibleChange {
    /// The stretches to show, in order.
    pub parts: Vec<(Kind, String)>,
    data: ChangeData,
    /// Whether something visible was removed, and added.
    visible: (bool, bool),
    noise: bool,
    /// Bytes of text in `parts`.
    shown: usize,
    /// Bytes of text in `data`.
    listed: usize,
}

impl VisibleChange {
    /// The change from `previous` (none: everything is added) to `current`, with the masks of
    /// `comparator`, lines in order.
    pub fn between(comparator: &Comparator, previous: Option<&str>, current: &str) -> Self {
        Self::with_order(comparator, LineOrder::Ordered, previous, current)
    }

    /// [`VisibleChange::between`] for a monitor comparing lines as `order` says. With
    /// [`LineOrder::Set`] the previous value's lines are first put in the order the current
    /// value has them (the lines it no longer has after the line they followed), so a shuffled
    /// list shows no change and an added or removed line shows as one.
    pub fn with_order(
        comparator: &Comparator,
        order: LineOrder,
        previous: Option<&str>,
        current: &str,
    ) -> Self {
        let new_key = comparator.line_form(current);
        let old_key = comparator.line_form(previous.unwrap_or(""));
        let old_key = match order {
            LineOrder::Set => in_order_of(comparator, &old_key, &new_key),
            LineOrder::Ordered => old_key,
        };
        let old = tokens(&old_key, &comparator.mask_spans(&old_key));
        let new = tokens(&new_key, &comparator.mask_spans(&new_key));
        let runs = regroup(semantic_cleanup(runs(&old, &new)));
        let mut change = VisibleChange {
            visible: visible_sides(&old, &new),
            ..VisibleChange::default()
        };
        let last = runs.len().saturating_sub(1);
        let mut cut = false;
        for (i, run) in runs.iter().enumerate() {
            if !cut && change.shown > MAX_SHOWN_BYTES {
                cut = true;
                change.show(
                    Kind::Folded,
                    "\n\u{2026} more changes: the history shows them all\n",
                );
            }
            match run.op {
                Op::Same if !cut => change.fold(&run.pieces, i > 0, i < last),
                Op::Same => {}
                Op::Removed | Op::Added => change.edit(run, !cut),
            }
        }
        change.noise = change.parts.iter().any(|(kind, _)| *kind == Kind::Noise);
        change
    }

    /// Whether anything but white space and masked spans was removed or added: when not, a
    /// notification about this change has nothing to say.
    pub fn is_visible(&self) -> bool {
        self.visible.0 || self.visible.1
    }

    /// Whether something visible (not white space, not noise) was removed.
    pub fn removed_visible(&self) -> bool {
        self.visible.0
    }

    /// Whether something visible (not white space, not noise) was added.
    pub fn added_visible(&self) -> bool {
        self.visible.1
    }

    /// Whether some of the shown text is noise (so a legend belongs beside it).
    pub fn has_noise(&self) -> bool {
        self.noise
    }

    /// The removed and added pieces.
    pub fn data(&self) -> &ChangeData {
        &self.data
    }

    /// The change as HTML: removed text in `<del>`, added text in `<ins>`, noise in `<span
    /// class="noise">` (never inside `<del>` or `<ins>`), folded text in `<span
    /// class="folded">`, all escaped; inline styles too, for mail readers that ignore classes.
    pub fn html(&self) -> String {
        let mut out = String::new();
        for (kind, text) in &self.parts {
            let text = super::content::escape(text);
            let _ = match kind {
                Kind::Same => write!(out, "{text}"),
                Kind::Removed => write!(out, "<del style=\"background:#fdd\">{text}</del>"),
                Kind::Added => write!(out, "<ins style=\"background:#dfd\">{text}</ins>"),
                Kind::Noise => write!(
                    out,
                    "<span class=\"noise\" style=\"color:#5f6368\">{text}</span>"
                ),
                Kind::Folded => write!(
                    out,
                    "<span class=\"folded\" style=\"color:#5f6368\">{text}</span>"
                ),
            };
        }
        out
    }

    /// The change as plain text: `[-removed-]`, `{+added+}`, noise between `⟨` and `⟩`.
    pub fn plain(&self) -> String {
        let mut out = String::new();
        for (kind, text) in &self.parts {
            let _ = match kind {
                Kind::Same | Kind::Folded => write!(out, "{text}"),
                Kind::Removed => write!(out, "[-{text}-]"),
                Kind::Added => write!(out, "{{+{text}+}}"),
                Kind::Noise => write!(out, "\u{27e8}{text}\u{27e9}"),
            };
        }
        out
    }

    /// The change as Markdown: removed text struck through (`~~`), added text in bold, noise
    /// in italics, the markers' own characters escaped.
    pub fn markdown(&self) -> String {
        let escape = |text: &str| {
            let mut out = String::with_capacity(text.len());
            for c in text.chars() {
                if matches!(c, '*' | '_' | '~' | '`' | '\\' | '[' | ']') {
                    out.push('\\');
                }
                out.push(c);
            }
            out
        };
        // Markers hug the words: white space at a marked run's edges stays outside it.
        let mark = |out: &mut String, marker: &str, text: &str| {
            let trimmed = text.trim();
            if trimmed.is_empty() {
                out.push_str(text);
                return;
            }
            let start = text.len() - text.trim_start().len();
            let end = text.trim_end().len();
            let _ = write!(
                out,
                "{}{marker}{}{marker}{}",
                &text[..start],
                escape(trimmed),
                &text[end..]
            );
        };
        let mut out = String::new();
        for (kind, text) in &self.parts {
            match kind {
                Kind::Same | Kind::Folded => out.push_str(&escape(text)),
                Kind::Removed => mark(&mut out, "~~", text),
                Kind::Added => mark(&mut out, "**", text),
                Kind::Noise => mark(&mut out, "_", text),
            }
        }
        out
    }

    /// Adds `text` of `kind` to what is shown.
    fn show(&mut self, kind: Kind, text: &str) {
        if text.is_empty() {
            return;
        }
        self.shown += text.len();
        match self.parts.last_mut() {
            Some((last, shown)) if *last == kind => shown.push_str(text),
            _ => {
                // Each part is wrapped in its own tags in the HTML: a change of many one-word
                // edits costs those too, so they count against the bound.
                self.shown += PART_MARKUP_BYTES;
                self.parts.push((kind, text.to_string()));
            }
        }
    }

    /// Records a removed or added run: shown (when `show`, cut to [`MAX_CHANGE_CHARS`]) with
    /// its noise apart, and listed as data.
    fn edit(&mut self, run: &Run<'_>, show: bool) {
        let kind = if run.op == Op::Removed {
            Kind::Removed
        } else {
            Kind::Added
        };
        let mut budget = MAX_CHANGE_CHARS;
        let mut keyed = String::new();
        let mut real = false;
        for piece in &run.pieces {
            if piece.noise {
                keyed.push_str(PLACEHOLDER);
            } else {
                keyed.push_str(piece.text);
                real |= piece.text.chars().any(|c| !c.is_whitespace());
            }
            if budget == 0 || !show {
                continue;
            }
            let (shown, used) = head(piece.text, budget);
            budget -= used;
            let shown_kind = if piece.noise { Kind::Noise } else { kind };
            self.show(shown_kind, &shown);
        }
        if budget == 0 && show {
            self.show(kind, "\u{2026}");
        }
        if !real {
            return;
        }
        let keyed = keyed.trim();
        let list = if run.op == Op::Removed {
            &mut self.data.removed
        } else {
            &mut self.data.added
        };
        if list.len() < MAX_PIECES && self.listed <= MAX_SHOWN_BYTES {
            let piece = head(keyed, MAX_CHANGE_CHARS).0;
            self.listed += piece.len();
            list.push(piece);
        }
    }
}

/// The lines of `old` (a line key) in the order `new` has them: each line of `new` takes the
/// first unused line of `old` with the same masked form; a line of `old` that none takes
/// follows the line it followed in `old`. When masks span lines, `old` as it is.
fn in_order_of<'a>(comparator: &Comparator, old: &'a str, new: &str) -> String {
    let masked = |key: &str| {
        let mut out = String::with_capacity(key.len());
        let mut at = 0;
        for span in comparator.mask_spans(key) {
            out.push_str(key.get(at..span.start).unwrap_or(""));
            out.push_str(PLACEHOLDER);
            at = span.end;
        }
        out.push_str(key.get(at..).unwrap_or(""));
        out
    };
    let (old_masked, new_masked) = (masked(old), masked(new));
    let old_lines: Vec<&'a str> = old.split('\n').collect();
    let old_forms: Vec<&str> = old_masked.split('\n').collect();
    if old_lines.len() != old_forms.len() {
        return old.to_string();
    }
    let mut pool: HashMap<&str, VecDeque<usize>> = HashMap::new();
    for (i, form) in old_forms.iter().enumerate() {
        pool.entry(form).or_default().push_back(i);
    }
    let mut taken = vec![false; old_lines.len()];
    let mut order = Vec::with_capacity(old_lines.len());
    for form in new_masked.split('\n') {
        if let Some(i) = pool.get_mut(form).and_then(VecDeque::pop_front) {
            taken[i] = true;
            order.push(i);
        }
    }
    // The lines no longer there, by the taken line they followed (None: before any).
    let mut after: HashMap<Option<usize>, Vec<usize>> = HashMap::new();
    let mut last = None;
    for (i, was_taken) in taken.iter().enumerate() {
        if *was_taken {
            last = Some(i);
        } else {
            after.entry(last).or_default().push(i);
        }
    }
    let mut lines: Vec<&'a str> = Vec::with_capacity(old_lines.len());
    let follow = |anchor: Option<usize>, lines: &mut Vec<&'a str>| {
        for &i in after.get(&anchor).map(Vec::as_slice).unwrap_or_default() {
            lines.push(old_lines[i]);
        }
    };
    follow(None, &mut lines);
    for i in order {
        lines.push(old_lines[i]);
        follow(Some(i), &mut lines);
    }
    lines.join("\n")
}

/// Whether words (not white space, not masked spans) were removed, and added, judged on the
/// words alone: where masked spans come and go (a counter grouped in two now), the word diff
/// may align them so that an unchanged word reads as moved, but the words tell the truth.
fn visible_sides(old: &[Piece<'_>], new: &[Piece<'_>]) -> (bool, bool) {
    let (old, new) = (words(old), words(new));
    if old == new {
        return (false, false);
    }
    let deadline = Instant::now() + DEADLINE;
    let ops = similar::capture_diff_slices_deadline(Algorithm::Myers, &old, &new, Some(deadline));
    let mut sides = (false, false);
    for op in ops {
        match op.tag() {
            DiffTag::Equal => {}
            DiffTag::Delete => sides.0 = true,
            DiffTag::Insert => sides.1 = true,
            DiffTag::Replace => sides = (true, true),
        }
    }
    sides
}

/// The words of `pieces`: no white space, no masked span.
fn words<'a>(pieces: &[Piece<'a>]) -> Vec<&'a str> {
    pieces
        .iter()
        .filter(|p| !p.noise && !p.text.trim().is_empty())
        .map(|p| p.text)
        .collect()
}

/// A word, a white space run or a masked span of a line key.
#[derive(Debug, Clone, Copy)]
struct Piece<'a> {
    text: &'a str,
    noise: bool,
}

// Masked spans are all equal to each other, whatever they read: that is what keeps noise
// out of the diff's deletions and insertions.
impl PartialEq for Piece<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.noise == other.noise && (self.noise || self.text == other.text)
    }
}

impl Eq for Piece<'_> {}

impl Hash for Piece<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.noise.hash(state);
        if !self.noise {
            self.text.hash(state);
        }
    }
}

/// `key` cut into pieces: each span of `masks` (sorted, apart) one piece, the text between
/// them into words and white space runs.
fn tokens<'a>(key: &'a str, masks: &[std::ops::Range<usize>]) -> Vec<Piece<'a>> {
    let mut out = Vec::new();
    let mut at = 0;
    let words = |text: &'a str, out: &mut Vec<Piece<'a>>| {
        let mut start = 0;
        let mut space = None;
        for (i, c) in text.char_indices() {
            let is_space = c.is_whitespace();
            if space.is_some_and(|s| s != is_space) {
                out.push(Piece {
                    text: &text[start..i],
                    noise: false,
                });
                start = i;
            }
            space = Some(is_space);
        }
        if start < text.len() {
            out.push(Piece {
                text: &text[start..],
                noise: false,
            });
        }
    };
    for span in masks {
        let (Some(before), Some(masked)) = (key.get(at..span.start), key.get(span.clone())) else {
            continue;
        };
        words(before, &mut out);
        out.push(Piece {
            text: masked,
            noise: true,
        });
        at = span.end;
    }
    words(key.get(at..).unwrap_or(""), &mut out);
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Same,
    Removed,
    Added,
}

/// Consecutive pieces of one kind. The unchanged ones are the current value's (noise as it
/// reads now).
struct Run<'a> {
    op: Op,
    pieces: Vec<Piece<'a>>,
}

impl Run<'_> {
    fn chars(&self) -> usize {
        self.pieces.iter().map(|p| p.text.chars().count()).sum()
    }
}

fn add<'a>(runs: &mut Vec<Run<'a>>, op: Op, pieces: &[Piece<'a>]) {
    if pieces.is_empty() {
        return;
    }
    match runs.last_mut() {
        Some(last) if last.op == op => last.pieces.extend_from_slice(pieces),
        _ => runs.push(Run {
            op,
            pieces: pieces.to_vec(),
        }),
    }
}

/// The word diff of `old` and `new` as runs.
fn runs<'a>(old: &[Piece<'a>], new: &[Piece<'a>]) -> Vec<Run<'a>> {
    let deadline = Instant::now() + DEADLINE;
    let ops = similar::capture_diff_slices_deadline(Algorithm::Myers, old, new, Some(deadline));
    let mut out = Vec::new();
    for op in ops {
        let (tag, before, after) = op.as_tag_tuple();
        match tag {
            DiffTag::Equal => add(&mut out, Op::Same, &new[after]),
            DiffTag::Delete => add(&mut out, Op::Removed, &old[before]),
            DiffTag::Insert => add(&mut out, Op::Added, &new[after]),
            DiffTag::Replace => {
                add(&mut out, Op::Removed, &old[before]);
                add(&mut out, Op::Added, &new[after]);
            }
        }
    }
    out
}

/// diff-match-patch's semantic rule, as the engine's diff applies it: an unchanged run no
/// longer than the edits on both sides of it is folded into them, so interleaved fragments
/// read as one replacement. A run holding noise is never folded: its noise would then show as
/// removed and added.
fn semantic_cleanup(runs: Vec<Run<'_>>) -> Vec<Run<'_>> {
    let n = runs.len();
    let mut before = vec![(0usize, 0usize); n];
    let mut acc = (0, 0);
    for (i, r) in runs.iter().enumerate() {
        before[i] = acc;
        match r.op {
            Op::Same => acc = (0, 0),
            Op::Removed => acc.0 += r.chars(),
            Op::Added => acc.1 += r.chars(),
        }
    }
    let mut after = vec![(0usize, 0usize); n];
    acc = (0, 0);
    for (i, r) in runs.iter().enumerate().rev() {
        after[i] = acc;
        match r.op {
            Op::Same => acc = (0, 0),
            Op::Removed => acc.0 += r.chars(),
            Op::Added => acc.1 += r.chars(),
        }
    }
    let mut out = Vec::with_capacity(n);
    for (i, run) in runs.into_iter().enumerate() {
        let edits_before = before[i].0.max(before[i].1);
        let edits_after = after[i].0.max(after[i].1);
        let small = run.op == Op::Same
            && edits_before > 0
            && edits_after > 0
            && !run.pieces.iter().any(|p| p.noise)
            && run.chars() <= edits_before.min(edits_after);
        if small {
            add(&mut out, Op::Removed, &run.pieces);
            add(&mut out, Op::Added, &run.pieces);
        } else {
            add(&mut out, run.op, &run.pieces);
        }
    }
    out
}

/// Between two unchanged runs, everything removed as one run, then everything added as one.
fn regroup(runs: Vec<Run<'_>>) -> Vec<Run<'_>> {
    let mut out: Vec<Run<'_>> = Vec::with_capacity(runs.len());
    let mut removed = Vec::new();
    let mut added = Vec::new();
    for run in runs {
        match run.op {
            Op::Removed => removed.extend(run.pieces),
            Op::Added => added.extend(run.pieces),
            Op::Same => {
                add(&mut out, Op::Removed, &std::mem::take(&mut removed));
                add(&mut out, Op::Added, &std::mem::take(&mut added));
                add(&mut out, Op::Same, &run.pieces);
            }
        }
    }
    add(&mut out, Op::Removed, &removed);
    add(&mut out, Op::Added, &added);
    out
}

/// At most `max` characters of `text`, and how many it took.
fn head(text: &str, max: usize) -> (String, usize) {
    match text.char_indices().nth(max) {
        Some((cut, _)) => (text[..cut].to_string(), max),
        None => (text.to_string(), text.chars().count()),
    }
}

/// Shows an unchanged run: whole when short, else the lines next to the changes around it
/// (`after_change`: a change comes before it; `before_change`: one follows) with the middle
/// folded into a note of how many lines it held.
impl VisibleChange {
    fn fold(&mut self, pieces: &[Piece<'_>], after_change: bool, before_change: bool) {
        let text_len: usize = pieces.iter().map(|p| p.text.len()).sum();
        // Where the kept head ends and the kept tail starts, in bytes of the run's text.
        let mut head_end = 0;
        if after_change {
            head_end = cut_after_lines(pieces, CONTEXT_LINES + 1).min(char_offset(
                pieces,
                CONTEXT_CHARS,
                false,
            ));
        }
        let mut tail_start = text_len;
        if before_change {
            tail_start = cut_before_lines(pieces, CONTEXT_LINES + 1).max(char_offset(
                pieces,
                CONTEXT_CHARS,
                true,
            ));
        }
        if head_end >= tail_start {
            for piece in pieces {
                self.show(kind_of(piece), piece.text);
            }
            return;
        }
        let mut at = 0;
        let mut breaks = 0;
        let mut folded = false;
        let note = |breaks: usize| {
            if breaks == 0 {
                return " \u{2026} ".to_string();
            }
            // The hidden text starts with the break ending the kept head and ends with the one
            // starting the kept tail, where they are kept.
            let lines = breaks + 1 - usize::from(head_end > 0) - usize::from(tail_start < text_len);
            let (before, after) = (
                if head_end > 0 { "\n" } else { "" },
                if tail_start < text_len { "\n" } else { "" },
            );
            match lines {
                1 => format!("{before}\u{2026} 1 unchanged line \u{2026}{after}"),
                n => format!("{before}\u{2026} {n} unchanged lines \u{2026}{after}"),
            }
        };
        for piece in pieces {
            let (start, end) = (at, at + piece.text.len());
            at = end;
            let kind = kind_of(piece);
            // The part of this piece inside the head, and inside the tail.
            if start < head_end {
                let cut = floor_boundary(piece.text, head_end.min(end) - start);
                self.show(kind, &piece.text[..cut]);
            }
            let hidden_from = head_end.max(start);
            let hidden_to = tail_start.min(end);
            if hidden_from < hidden_to {
                let a = floor_boundary(piece.text, hidden_from - start);
                let b = floor_boundary(piece.text, hidden_to - start);
                breaks += piece.text[a..b].matches('\n').count();
                folded = true;
            }
            if end > tail_start {
                if folded {
                    self.show(Kind::Folded, &note(breaks));
                    folded = false;
                }
                let cut = floor_boundary(piece.text, tail_start.max(start) - start);
                self.show(kind, &piece.text[cut..]);
            }
        }
        if folded {
            self.show(Kind::Folded, &note(breaks));
        }
    }
}

fn kind_of(piece: &Piece<'_>) -> Kind {
    if piece.noise { Kind::Noise } else { Kind::Same }
}

/// The largest char boundary of `text` at or below `at`.
fn floor_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The byte offset, in the pieces' text, right before the `n`th line break (or the end).
fn cut_after_lines(pieces: &[Piece<'_>], n: usize) -> usize {
    let mut at = 0;
    let mut seen = 0;
    for piece in pieces {
        for (i, c) in piece.text.char_indices() {
            if c == '\n' {
                seen += 1;
                if seen == n {
                    return at + i;
                }
            }
        }
        at += piece.text.len();
    }
    at
}

/// The byte offset right after the `n`th line break counted from the end (or 0).
fn cut_before_lines(pieces: &[Piece<'_>], n: usize) -> usize {
    let mut end: usize = pieces.iter().map(|p| p.text.len()).sum();
    let mut seen = 0;
    for piece in pieces.iter().rev() {
        let start = end - piece.text.len();
        for (i, c) in piece.text.char_indices().rev() {
            if c == '\n' {
                seen += 1;
                if seen == n {
                    return start + i + 1;
                }
            }
        }
        end = start;
    }
    0
}

/// The byte offset `n` characters from the start (or, `from_end`, from the end).
fn char_offset(pieces: &[Piece<'_>], n: usize, from_end: bool) -> usize {
    let total: usize = pieces.iter().map(|p| p.text.len()).sum();
    let mut left = n;
    if !from_end {
        let mut at = 0;
        for piece in pieces {
            for (i, _) in piece.text.char_indices() {
                if left == 0 {
                    return at + i;
                }
                left -= 1;
            }
            at += piece.text.len();
        }
        return total;
    }
    let mut end = total;
    for piece in pieces.iter().rev() {
        let start = end - piece.text.len();
        for (i, _) in piece.text.char_indices().rev() {
            left -= 1;
            if left == 0 {
                return start + i;
            }
        }
        end = start;
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;
    use wachet::model::{Monitor, NoiseMask};

    fn masked(patterns: &[&str]) -> Comparator {
        let mut monitor = Monitor::new("https://example.com/");
        monitor.noise = Some(
            patterns
                .iter()
                .map(|p| NoiseMask {
                    pattern: p.to_string(),
                    learned: false,
                    active: true,
                    example: None,
                })
                .collect(),
        );
        Comparator::lenient(&monitor)
    }

    #[test]
    fn noise_beside_a_real_change_is_dimmed_never_deleted_or_inserted() {
        let comparator = masked(&[r"(\d+) people are looking"]);
        let change = VisibleChange::between(
            &comparator,
            Some("Tea\n$129.99 · 12 people are looking"),
            "Tea\n$128.99 · 31 people are looking",
        );
        assert!(change.is_visible());
        assert_eq!(
            change.plain(),
            "Tea\n[-129.99-]{+128.99+} USD · \u{27e8}31\u{27e9} people are looking"
        );
        let html = change.html();
        assert!(
            html.contains(">129.99</del>") && html.contains(">128.99</ins>"),
            "{html}"
        );
        assert!(
            html.contains("<span class=\"noise\" style=\"color:#5f6368\">31</span>"),
            "{html}"
        );
        assert_eq!(change.data().removed, ["129.99"]);
        assert_eq!(change.data().added, ["128.99"]);
        assert!(change.has_noise());
    }

    #[test]
    fn noise_alone_is_no_visible_change() {
        let comparator = masked(&[r"\d+ (?:minutes|views)", r"token=\w+"]);
        let change = VisibleChange::between(
            &comparator,
            Some("Updated 3 minutes ago · 1200 views token=ab12"),
            "Updated 5 minutes ago · 1201 views token=zz99",
        );
        assert!(!change.is_visible(), "{:?}", change.parts);
        assert_eq!(change.data(), &ChangeData::default());
        // Spellings the normalisation ignores are no change either.
        let plain = Comparator::default();
        let change = VisibleChange::between(
            &plain,
            Some("caf\u{e9}  &amp; \u{201c}tea\u{201d}"),
            "cafe\u{301} & \"tea\"",
        );
        assert!(!change.is_visible(), "{:?}", change.parts);
    }

    #[test]
    fn a_real_change_in_masked_text_still_shows_a_masked_count_that_moved_does_not() {
        // Two masked spans now one: the spans moved, no word did.
        let comparator = masked(&[r"\d+"]);
        let change = VisibleChange::between(&comparator, Some("a 12 34 b"), "a 1234 b");
        assert!(!change.is_visible(), "{:?}", change.parts);
        let change = VisibleChange::between(&comparator, Some("a 12 b"), "a 13 c");
        assert!(change.is_visible());
        assert_eq!(change.data().added, ["c"]);
    }

    #[test]
    fn lines_compared_as_a_set_show_only_what_came_and_went() {
        let comparator = masked(&[r"(\d+) left"]);
        let old = "Tea 3 left\nCoffee\nCocoa\nMate";
        let new = "Mate\nChai\nTea 2 left\nCoffee";
        let change = VisibleChange::with_order(&comparator, LineOrder::Set, Some(old), new);
        assert_eq!(change.data().added, ["Chai"]);
        assert_eq!(change.data().removed, ["Cocoa"]);
        assert_eq!(
            change.plain(),
            "Mate\n{+Chai\n+}Tea \u{27e8}2\u{27e9} left\nCoffee[-\nCocoa-]"
        );
        let shuffled = VisibleChange::with_order(
            &comparator,
            LineOrder::Set,
            Some(old),
            "Mate\nCocoa\nCoffee\nTea 9 left",
        );
        assert!(!shuffled.is_visible(), "{:?}", shuffled.parts);
    }

    #[test]
    fn a_json_document_shows_its_change_not_its_key_order() {
        let comparator = masked(&[r#""requestId": "(\w+)""#]);
        let old = r#"{"price": 3.5, "requestId": "a1", "name": "Tea"}"#;
        let new = r#"{"name": "Tea", "requestId": "b2", "price": 4.20}"#;
        let change = VisibleChange::between(&comparator, Some(old), new);
        assert_eq!(change.data().removed.len(), 1, "{:?}", change.parts);
        assert_eq!(change.data().added.len(), 1, "{:?}", change.parts);
        assert!(
            change.data().removed[0].contains("3.5"),
            "{:?}",
            change.data()
        );
        assert!(
            change.data().added[0].contains("4.2"),
            "{:?}",
            change.data()
        );
        let reordered = r#"{"requestId": "c3", "name": "Tea", "price": 3.50}"#;
        assert!(!VisibleChange::between(&comparator, Some(old), reordered).is_visible());
    }

    #[test]
    fn unchanged_lines_are_folded_around_the_change() {
        let lines: Vec<String> = (0..1000).map(|i| format!("line {i}")).collect();
        let old = lines.join("\n");
        let new = old.replace("line 500\n", "line five hundred\n");
        let change = VisibleChange::between(&Comparator::default(), Some(&old), &new);
        let plain = change.plain();
        assert!(
            plain.contains("line 498\nline 499\nline [-500-]{+five hundred+}\nline 501\nline 502"),
            "{plain}"
        );
        assert!(
            plain.starts_with("\u{2026} 498 unchanged lines \u{2026}\nline 498\n"),
            "{plain}"
        );
        assert!(
            plain.ends_with("line 502\n\u{2026} 497 unchanged lines \u{2026}"),
            "{plain}"
        );
        assert!(!plain.contains("line 10\n"), "{plain}");
    }

    #[test]
    fn a_small_change_in_a_ten_megabyte_value_reads_as_one_word() {
        let filler = "lorem ipsum dolor ".repeat(290_000);
        let old = format!("{filler}price 3.50 EUR {filler}");
        let new = format!("{filler}price 3.90 EUR {filler}");
        assert!(old.len() > 10_000_000);
        let change = VisibleChange::between(&Comparator::default(), Some(&old), &new);
        assert_eq!(change.data().removed, ["3.50"]);
        assert_eq!(change.data().added, ["3.90"]);
        assert!(change.html().len() < 2_000, "{}", change.html().len());
    }

    #[test]
    fn a_value_changed_all_over_makes_a_bounded_notification() {
        let old: Vec<String> = (0..50_000).map(|i| format!("row {i} old")).collect();
        let new: Vec<String> = (0..50_000).map(|i| format!("row {i} new")).collect();
        let change = VisibleChange::between(
            &Comparator::default(),
            Some(&old.join("\n")),
            &new.join("\n"),
        );
        let html = change.html();
        assert!(html.len() < 2 * MAX_SHOWN_BYTES, "{}", html.len());
        // However the diff went (one coarse replacement once its deadline passed, or many small
        // ones cut short), what is shown and sent stays bounded.
        assert!(change.data().added.len() <= MAX_PIECES);
        assert!(
            change
                .data()
                .added
                .iter()
                .all(|p| p.chars().count() <= MAX_CHANGE_CHARS)
        );
        assert!(change.is_visible());
    }

    #[test]
    fn past_the_shown_bound_the_rest_is_left_to_the_history() {
        // Each row changes, and the unchanged text between two changes is longer than they
        // are, so each change is shown apart.
        let same = "x".repeat(150);
        let old: Vec<String> = (0..1_000).map(|i| format!("row {i} {same} old")).collect();
        let new: Vec<String> = (0..1_000).map(|i| format!("row {i} {same} new")).collect();
        let change = VisibleChange::between(
            &Comparator::default(),
            Some(&old.join("\n")),
            &new.join("\n"),
        );
        let plain = change.plain();
        assert!(
            plain.contains("more changes: the history shows them all"),
            "{}",
            plain.len()
        );
        assert!(
            plain.len() < MAX_SHOWN_BYTES + 2 * MAX_CHANGE_CHARS,
            "{}",
            plain.len()
        );
        assert!(!plain.contains("row 999 "), "cut before the end");
    }

    #[test]
    fn a_long_change_is_cut_and_everything_escaped() {
        let new = format!("<b>{}</b>", "x".repeat(20_000));
        let change = VisibleChange::between(&Comparator::default(), Some("old"), &new);
        let html = change.html();
        assert!(
            html.contains("&lt;b&gt;") && !html.contains("<b>"),
            "{}",
            &html[..200]
        );
        assert!(html.len() < MAX_CHANGE_CHARS + 500, "{}", html.len());
        assert_eq!(change.data().added[0].chars().count(), MAX_CHANGE_CHARS);
    }
}
