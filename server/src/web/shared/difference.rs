//! A difference bounded in work for a page: the engine's word diff for small values, and for
//! large ones a diff by lines whose small changed runs are diffed word by word, so that the
//! work grows with the values' size rather than its square. The difference page and the feeds
//! both show it.

use wachet::model::{DiffElement, DiffOperation};

/// Values up to this size (either side, bytes) are diffed word by word in one go.
const WHOLE_DIFF_BYTES: usize = 256 * 1024;

/// How long the line diff of larger values may search before settling for a coarser one: a
/// guard against values built to be slow (Myers is quadratic in the edit distance), set well
/// above what a 10 MB page with a few changes takes (0.6 s in a debug build on a busy 2-core
/// machine), so a long page on a busy machine still gets its word-level changes.
const LINE_DEADLINE: std::time::Duration = std::time::Duration::from_secs(5);

/// Largest changed run of lines (both sides) diffed word by word; a larger one shows as
/// deleted, then inserted.
const WORD_DIFF_BYTES: usize = 64 * 1024;

/// Bytes of changed runs diffed word by word on one page; past it, runs show whole. About what
/// a page shows ([`SHOWN_BYTES`]): more would be work for changes the page never shows.
const WORD_DIFF_TOTAL_BYTES: usize = 256 * 1024;

/// The engine's word diff of `old` and `new` when they are small; for larger values, a diff by
/// lines whose changed runs are diffed word by word when they are small enough, so that the
/// work is bounded by the values' size rather than its square.
pub(crate) fn bounded_diff(old: &str, new: &str) -> Vec<DiffElement> {
    if old.len() <= WHOLE_DIFF_BYTES && new.len() <= WHOLE_DIFF_BYTES {
        return wachet::diff::diff(old, new);
    }
    let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
    let new_lines: Vec<&str> = new.split_inclusive('\n').collect();
    let lines = similar::TextDiff::configure()
        .algorithm(similar::Algorithm::Myers)
        .timeout(LINE_DEADLINE)
        .diff_slices(&old_lines, &new_lines);
    let mut out: Vec<DiffElement> = Vec::new();
    let mut word_diffed = 0usize;
    for op in lines.ops() {
        let removed = old_lines[op.old_range()].concat();
        let added = new_lines[op.new_range()].concat();
        if op.tag() == similar::DiffTag::Equal {
            push_element(&mut out, DiffOperation::Equal, removed);
            continue;
        }
        let size = removed.len() + added.len();
        if size <= WORD_DIFF_BYTES && word_diffed + size <= WORD_DIFF_TOTAL_BYTES {
            word_diffed += size;
            for element in wachet::diff::diff(&removed, &added) {
                push_element(
                    &mut out,
                    element.operation,
                    element.text.unwrap_or_default(),
                );
            }
        } else {
            push_element(&mut out, DiffOperation::Delete, removed);
            push_element(&mut out, DiffOperation::Insert, added);
        }
    }
    out
}

/// Appends `text` to the diff, joined with the last element when it has the same operation.
fn push_element(out: &mut Vec<DiffElement>, operation: DiffOperation, text: String) {
    if text.is_empty() {
        return;
    }
    match out.last_mut() {
        Some(DiffElement {
            operation: last,
            text: Some(last_text),
        }) if *last == operation => last_text.push_str(&text),
        _ => out.push(DiffElement {
            operation,
            text: Some(text),
        }),
    }
}
