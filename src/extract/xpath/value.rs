//! Conversions between the four XPath types (section 4 of the REC) and the
//! comparison rules of section 3.4, including the existential semantics of
//! comparisons that involve node-sets.

use super::ast::CmpOp;
use super::nav::string_value;
use super::{Value, XNode};
use std::borrow::Cow;
use std::collections::HashSet;

/// XPath number -> string: integers without a decimal point, otherwise the
/// shortest digits that round-trip, never exponent notation. Rust's `{}` for
/// f64 already prints shortest round-trip digits without an exponent.
pub(crate) fn number_to_string(x: f64) -> String {
    if x.is_nan() {
        "NaN".to_string()
    } else if x.is_infinite() {
        if x > 0.0 { "Infinity" } else { "-Infinity" }.to_string()
    } else if x == 0.0 {
        // Covers -0, which XPath prints as 0.
        "0".to_string()
    } else {
        format!("{x}")
    }
}

fn is_xml_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

/// XPath string -> number: optional whitespace, optional `-`, digits with an
/// optional fraction, optional whitespace; anything else is NaN (no `+`, no
/// exponent, no `Infinity`).
pub(crate) fn string_to_number(s: &str) -> f64 {
    let t = s.trim_matches(is_xml_space);
    let body = t.strip_prefix('-').unwrap_or(t);
    let mut digits = 0usize;
    let mut dots = 0usize;
    for c in body.chars() {
        match c {
            '0'..='9' => digits += 1,
            '.' => dots += 1,
            _ => return f64::NAN,
        }
    }
    if digits == 0 || dots > 1 {
        return f64::NAN;
    }
    t.parse::<f64>().unwrap_or(f64::NAN)
}

pub(crate) fn bool_to_number(b: bool) -> f64 {
    if b { 1.0 } else { 0.0 }
}

impl<'a> Value<'a> {
    pub(crate) fn to_bool(&self) -> bool {
        match self {
            Value::Nodes(n) => !n.is_empty(),
            Value::String(s) => !s.is_empty(),
            Value::Number(x) => *x != 0.0 && !x.is_nan(),
            Value::Boolean(b) => *b,
        }
    }

    pub(crate) fn to_number(&self) -> f64 {
        match self {
            Value::Nodes(n) => n
                .first()
                .map_or(f64::NAN, |x| string_to_number(&string_value(*x))),
            Value::String(s) => string_to_number(s),
            Value::Number(x) => *x,
            Value::Boolean(b) => bool_to_number(*b),
        }
    }

    /// `string()` without copying when the value already owns a string.
    pub(crate) fn into_string(self) -> String {
        match self {
            Value::String(s) => s,
            other => other.to_xpath_string(),
        }
    }
}

fn cmp_numbers(op: CmpOp, x: f64, y: f64) -> bool {
    match op {
        CmpOp::Eq => x == y,
        CmpOp::Ne => x != y,
        CmpOp::Lt => x < y,
        CmpOp::Le => x <= y,
        CmpOp::Gt => x > y,
        CmpOp::Ge => x >= y,
    }
}

fn is_equality(op: CmpOp) -> bool {
    matches!(op, CmpOp::Eq | CmpOp::Ne)
}

/// The operator with its operands swapped (`a < b` is `b > a`).
fn flip(op: CmpOp) -> CmpOp {
    match op {
        CmpOp::Lt => CmpOp::Gt,
        CmpOp::Le => CmpOp::Ge,
        CmpOp::Gt => CmpOp::Lt,
        CmpOp::Ge => CmpOp::Le,
        other => other,
    }
}

/// Section 3.4 comparison of two values.
pub(crate) fn compare(op: CmpOp, a: &Value<'_>, b: &Value<'_>) -> bool {
    match (a, b) {
        (Value::Nodes(x), Value::Nodes(y)) => compare_node_sets(op, x, y),
        (Value::Nodes(x), other) => compare_nodes_with(op, x, other),
        (other, Value::Nodes(y)) => compare_nodes_with(flip(op), y, other),
        _ => {
            if is_equality(op) {
                let is_bool = |v: &Value<'_>| matches!(v, Value::Boolean(_));
                let is_num = |v: &Value<'_>| matches!(v, Value::Number(_));
                if is_bool(a) || is_bool(b) {
                    (a.to_bool() == b.to_bool()) == (op == CmpOp::Eq)
                } else if is_num(a) || is_num(b) {
                    // Via cmp_numbers so that NaN != NaN holds.
                    cmp_numbers(op, a.to_number(), b.to_number())
                } else {
                    (a.to_xpath_string() == b.to_xpath_string()) == (op == CmpOp::Eq)
                }
            } else {
                cmp_numbers(op, a.to_number(), b.to_number())
            }
        }
    }
}

/// Node-set `op` non-node-set, node-set on the left.
fn compare_nodes_with(op: CmpOp, nodes: &[XNode<'_>], other: &Value<'_>) -> bool {
    match other {
        Value::Boolean(b) => {
            let nb = !nodes.is_empty();
            if is_equality(op) {
                (nb == *b) == (op == CmpOp::Eq)
            } else {
                cmp_numbers(op, bool_to_number(nb), bool_to_number(*b))
            }
        }
        Value::Number(y) => nodes
            .iter()
            .any(|n| cmp_numbers(op, string_to_number(&string_value(*n)), *y)),
        Value::String(s) => {
            if is_equality(op) {
                let want = op == CmpOp::Eq;
                nodes
                    .iter()
                    .any(|n| (string_value(*n) == s.as_str()) == want)
            } else {
                let y = string_to_number(s);
                nodes
                    .iter()
                    .any(|n| cmp_numbers(op, string_to_number(&string_value(*n)), y))
            }
        }
        Value::Nodes(y) => compare_node_sets(op, nodes, y),
    }
}

fn compare_node_sets(op: CmpOp, a: &[XNode<'_>], b: &[XNode<'_>]) -> bool {
    if a.is_empty() || b.is_empty() {
        return false;
    }
    match op {
        CmpOp::Eq => {
            let (small, large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
            let set: HashSet<Cow<'_, str>> = small.iter().map(|n| string_value(*n)).collect();
            large.iter().any(|n| set.contains(&string_value(*n)))
        }
        CmpOp::Ne => {
            // Some pair differs unless both sides hold one and the same value.
            let uniform = |s: &[XNode<'_>]| -> Option<String> {
                let first = string_value(s[0]);
                if s[1..].iter().all(|n| string_value(*n) == first) {
                    Some(first.into_owned())
                } else {
                    None
                }
            };
            match (uniform(a), uniform(b)) {
                (Some(x), Some(y)) => x != y,
                _ => true,
            }
        }
        _ => {
            let nums = |s: &[XNode<'_>]| -> Vec<f64> {
                s.iter()
                    .map(|n| string_to_number(&string_value(*n)))
                    .filter(|x| !x.is_nan())
                    .collect()
            };
            let (xa, xb) = (nums(a), nums(b));
            let min = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
            let max = |v: &[f64]| v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            if xa.is_empty() || xb.is_empty() {
                return false;
            }
            match op {
                CmpOp::Lt | CmpOp::Le => cmp_numbers(op, min(&xa), max(&xb)),
                _ => cmp_numbers(op, max(&xa), min(&xb)),
            }
        }
    }
}
