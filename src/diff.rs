//! Diffs of two values as the API's DiffElements: word-granular, then cleaned up so a change
//! reads as a person would describe it ("12" became "14"), not as interleaved fragments.
//!
//! Words are diffed with `similar` (Myers with a deadline, so two large unrelated values still
//! finish quickly, with a coarser result). The cleanup is diff-match-patch's semantic rule: an
//! equality no longer than the edits on both sides of it is folded into them, and the edits
//! between two equalities are written as one delete followed by one insert.

use crate::model::{DiffElement, DiffOperation};
use similar::{Algorithm, ChangeTag, TextDiffConfig};
use std::time::Duration;

/// How long the word diff may search for a minimal script before settling for a coarser one.
const DEADLINE: Duration = Duration::from_millis(300);

/// The changes that turn `old` into `new`.
///
/// ```
/// use wachet::diff::diff;
/// use wachet::model::DiffOperation::*;
/// let d = diff("Price: 12 EUR", "Price: 14 EUR");
/// let ops: Vec<_> = d.iter().map(|e| (e.operation, e.text.as_deref().unwrap())).collect();
/// assert_eq!(ops, [(Equal, "Price: "), (Delete, "12"), (Insert, "14"), (Equal, " EUR")]);
/// ```
pub fn diff(old: &str, new: &str) -> Vec<DiffElement> {
    let text_diff = TextDiffConfig::default()
        .algorithm(Algorithm::Myers)
        .timeout(DEADLINE)
        .diff_words(old, new);
    let mut runs: Vec<Run> = Vec::new();
    for change in text_diff.iter_all_changes() {
        let op = match change.tag() {
            ChangeTag::Equal => DiffOperation::Equal,
            ChangeTag::Delete => DiffOperation::Delete,
            ChangeTag::Insert => DiffOperation::Insert,
        };
        push(&mut runs, op, change.value());
    }
    let runs = regroup(semantic_cleanup(runs));
    runs.into_iter()
        .filter(|r| !r.text.is_empty())
        .map(|r| DiffElement {
            operation: r.op,
            text: Some(r.text),
        })
        .collect()
}

struct Run {
    op: DiffOperation,
    text: String,
}

fn push(runs: &mut Vec<Run>, op: DiffOperation, text: &str) {
    match runs.last_mut() {
        Some(last) if last.op == op => last.text.push_str(text),
        _ => runs.push(Run {
            op,
            text: text.to_string(),
        }),
    }
}

/// Folds each equality that is no longer than the edits on either side of it into those edits.
fn semantic_cleanup(runs: Vec<Run>) -> Vec<Run> {
    // Edit lengths (deleted, inserted) before each run, and after it, in characters.
    let n = runs.len();
    let len = |r: &Run| r.text.chars().count();
    let mut before = vec![(0usize, 0usize); n];
    let mut acc = (0, 0);
    for (i, r) in runs.iter().enumerate() {
        before[i] = acc;
        match r.op {
            DiffOperation::Equal => acc = (0, 0),
            DiffOperation::Delete => acc.0 += len(r),
            DiffOperation::Insert => acc.1 += len(r),
        }
    }
    let mut after = vec![(0usize, 0usize); n];
    acc = (0, 0);
    for (i, r) in runs.iter().enumerate().rev() {
        after[i] = acc;
        match r.op {
            DiffOperation::Equal => acc = (0, 0),
            DiffOperation::Delete => acc.0 += len(r),
            DiffOperation::Insert => acc.1 += len(r),
        }
    }
    let mut out = Vec::with_capacity(n);
    for (i, run) in runs.into_iter().enumerate() {
        let edits_before = before[i].0.max(before[i].1);
        let edits_after = after[i].0.max(after[i].1);
        let small = run.op == DiffOperation::Equal
            && edits_before > 0
            && edits_after > 0
            && len(&run) <= edits_before.min(edits_after);
        if small {
            push(&mut out, DiffOperation::Delete, &run.text);
            push(&mut out, DiffOperation::Insert, &run.text);
        } else {
            push(&mut out, run.op, &run.text);
        }
    }
    out
}

/// Between two equalities, all deleted text as one delete, then all inserted text as one insert.
fn regroup(runs: Vec<Run>) -> Vec<Run> {
    let mut out: Vec<Run> = Vec::with_capacity(runs.len());
    let mut deleted = String::new();
    let mut inserted = String::new();
    let flush = |out: &mut Vec<Run>, deleted: &mut String, inserted: &mut String| {
        if !deleted.is_empty() {
            push(out, DiffOperation::Delete, deleted);
            deleted.clear();
        }
        if !inserted.is_empty() {
            push(out, DiffOperation::Insert, inserted);
            inserted.clear();
        }
    };
    for run in runs {
        match run.op {
            DiffOperation::Delete => deleted.push_str(&run.text),
            DiffOperation::Insert => inserted.push_str(&run.text),
            DiffOperation::Equal => {
                flush(&mut out, &mut deleted, &mut inserted);
                push(&mut out, DiffOperation::Equal, &run.text);
            }
        }
    }
    flush(&mut out, &mut deleted, &mut inserted);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use DiffOperation::*;

    fn ops(old: &str, new: &str) -> Vec<(DiffOperation, String)> {
        diff(old, new)
            .into_iter()
            .map(|e| (e.operation, e.text.unwrap_or_default()))
            .collect()
    }

    fn apply(old: &str, new: &str) -> (String, String) {
        let d = diff(old, new);
        let a = d
            .iter()
            .filter(|e| e.operation != Insert)
            .filter_map(|e| e.text.clone())
            .collect();
        let b = d
            .iter()
            .filter(|e| e.operation != Delete)
            .filter_map(|e| e.text.clone())
            .collect();
        (a, b)
    }

    #[test]
    fn interleaved_small_changes_read_as_one_replacement() {
        assert_eq!(
            ops("Tea 3.50 in stock", "Coffee 4.20 sold out"),
            [
                (Delete, "Tea 3.50 in stock".to_string()),
                (Insert, "Coffee 4.20 sold out".to_string())
            ]
        );
    }

    #[test]
    fn unchanged_and_empty_values() {
        assert_eq!(ops("same", "same"), [(Equal, "same".to_string())]);
        assert_eq!(ops("", "new"), [(Insert, "new".to_string())]);
        assert!(ops("", "").is_empty());
    }

    #[test]
    fn the_diff_rebuilds_both_values() {
        let old = "line one\nthe price is 12 EUR\nline three\n";
        let new = "line one\nthe price is 14 EUR\nline 3\nline four\n";
        assert_eq!(apply(old, new), (old.to_string(), new.to_string()));
    }
}
