//! JSON documents in canonical form: what [`super::Comparator`] compares when a whole value is a
//! JSON object or array.
//!
//! [`Document::parse`] reads a value that is (once trimmed) a JSON object or array and
//! [`Document::lines`] writes it one key or element a line, so a noise mask works on one key
//! at a time and a mask learned on one key order matches another:
//!
//! - object members sorted by key (byte order of the normalised key; duplicate keys keep their
//!   order); `"key": value` on one line, a nested container opening on its key's line;
//! - numbers by value, exactly: `1`, `1.0`, `1e0` and `10E-1` are `1`, `-0` is `0`; the decimal
//!   digits are kept as written (no rounding through a float, so big integers and long
//!   fractions stay exact), in plain notation unless that takes more than 21 digits;
//! - strings (keys too) after [`crate::normalize::comparison_key`], as text is compared, and
//!   written with JSON's escapes;
//! - no commas: a line's text does not depend on whether another element follows it, so an
//!   element added at the end changes one line.
//!
//! A scalar document (`5`, `"a"`, `true`) is left to the text comparison: `5.0` and `5` as a
//! whole value are different texts. Anything that is not valid JSON (RFC 8259), or nests deeper
//! than [`MAX_DEPTH`], is not a document and is compared as text. The document is read by the
//! engine's one JSON reader ([`crate::extract::json`]), one pass with no recursion deeper than
//! [`MAX_DEPTH`], so a 10 MB value is read in linear time.
//!
//! [`Document::set_lines`] is the form of [`crate::model::LineOrder::Set`] for documents: the
//! elements of every array sorted (a multiset: a shuffled array is no change, an element added,
//! removed or repeated is), each element as one unit so a value never moves from one element
//! to another unnoticed; object members are sorted already. An element is copied once for
//! each array of more than one element around it, so that form takes time linear in the value
//! times its array nesting (at most [`MAX_DEPTH`]).

use crate::extract::json::{Raw, canonical_number, read};
use crate::normalize::comparison_key;
use std::ops::Range;

/// The deepest nesting of arrays and objects read as a document; deeper values are text.
pub const MAX_DEPTH: usize = crate::extract::json::MAX_DEPTH;

/// A JSON object or array in canonical form, its lines written and its shape kept for
/// [`Document::set_lines`].
#[derive(Debug)]
pub(crate) struct Document {
    /// The canonical lines, each a `\n`-free text, joined by `\n`.
    text: String,
    /// The byte range of every line in `text`.
    lines: Vec<Range<usize>>,
    /// Which lines each container spans, for sorting array elements.
    shape: Shape,
}

/// The lines a value spans and, for a container, its parts.
#[derive(Debug)]
struct Shape {
    /// Line indices: the first (a scalar, a member's `"key": value`, or an opening bracket) to
    /// the last (the closing bracket), end exclusive.
    lines: Range<usize>,
    /// An array's elements or an object's members; empty for a scalar or an empty container.
    parts: Vec<Shape>,
    /// Whether `parts` are an array's elements (sorted by [`Document::set_lines`]).
    array: bool,
}

/// A parsed JSON value, strings normalised and numbers canonical.
enum Node {
    Scalar(String),
    Array(Vec<Node>),
    Object(Vec<(String, Node)>),
}

impl Document {
    /// The document `value` holds, when it is (trimmed, a leading byte order mark ignored) a
    /// JSON object or array of at most [`MAX_DEPTH`] levels; `None` for anything else.
    pub(crate) fn parse(value: &str) -> Option<Document> {
        let trimmed = value.trim_start_matches('\u{feff}').trim();
        if !looks_like(trimmed) {
            return None;
        }
        let node = meaning(trimmed, read(trimmed)?)?;
        let mut doc = Document {
            text: String::with_capacity(trimmed.len()),
            lines: Vec::new(),
            shape: Shape {
                lines: 0..0,
                parts: Vec::new(),
                array: false,
            },
        };
        doc.shape = doc.write(node, None);
        Some(doc)
    }

    /// The canonical lines joined by `\n`, arrays in their order.
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// The canonical lines with every byte range of `spans` (ranges of [`Document::text`],
    /// sorted, not overlapping) replaced by `placeholder` line by line: a span over a line
    /// break leaves a placeholder on each line it touches and keeps the break.
    pub(crate) fn masked(&self, spans: &[Range<usize>], placeholder: &str) -> Vec<String> {
        let mut spans = spans.iter().peekable();
        self.lines
            .iter()
            .map(|line| {
                let mut out = String::with_capacity(line.len());
                let mut at = line.start;
                while let Some(span) = spans.peek() {
                    if span.start >= line.end {
                        break;
                    }
                    let start = span.start.max(at);
                    let end = span.end.min(line.end);
                    if start < end {
                        out.push_str(&self.text[at..start]);
                        out.push_str(placeholder);
                        at = end;
                    }
                    if span.end > line.end {
                        // It goes on over the break: the next line takes its rest.
                        break;
                    }
                    spans.next();
                }
                out.push_str(&self.text[at..line.end]);
                out
            })
            .collect()
    }

    /// `lines` (one per canonical line, as [`Document::masked`] gives them) with the elements
    /// of every array sorted, joined by `\n`.
    pub(crate) fn set_lines(&self, lines: &[String]) -> String {
        let mut out = String::with_capacity(self.text.len());
        self.write_sorted(&self.shape, lines, &mut out);
        out
    }

    fn write_sorted(&self, shape: &Shape, lines: &[String], out: &mut String) {
        if shape.parts.is_empty() {
            push_lines(out, &lines[shape.lines.clone()]);
            return;
        }
        push_line(out, &lines[shape.lines.start]);
        // An element is written once per array around it that has more than one: sorting
        // needs it apart; a lone element goes straight into its parent.
        if shape.array && shape.parts.len() > 1 {
            let mut parts: Vec<String> = shape
                .parts
                .iter()
                .map(|part| {
                    let mut text = String::new();
                    self.write_sorted(part, lines, &mut text);
                    text
                })
                .collect();
            parts.sort_unstable();
            for part in parts {
                push_line(out, &part);
            }
        } else {
            for part in &shape.parts {
                self.write_sorted(part, lines, out);
            }
        }
        push_line(out, &lines[shape.lines.end - 1]);
    }

    /// Writes `node` (after `key`, for an object's member) and returns the lines it spans.
    fn write(&mut self, node: Node, key: Option<&str>) -> Shape {
        let first = self.lines.len();
        let start = |doc: &mut Document| {
            if !doc.text.is_empty() {
                doc.text.push('\n');
            }
            let at = doc.text.len();
            if let Some(key) = key {
                doc.text.push_str(key);
                doc.text.push_str(": ");
            }
            at
        };
        let (parts, array) = match node {
            Node::Scalar(text) => {
                let at = start(self);
                self.text.push_str(&text);
                self.lines.push(at..self.text.len());
                (Vec::new(), false)
            }
            Node::Array(items) if items.is_empty() => {
                let at = start(self);
                self.text.push_str("[]");
                self.lines.push(at..self.text.len());
                (Vec::new(), false)
            }
            Node::Object(members) if members.is_empty() => {
                let at = start(self);
                self.text.push_str("{}");
                self.lines.push(at..self.text.len());
                (Vec::new(), false)
            }
            Node::Array(items) => {
                let at = start(self);
                self.text.push('[');
                self.lines.push(at..self.text.len());
                let parts = items
                    .into_iter()
                    .map(|item| self.write(item, None))
                    .collect();
                self.close(']');
                (parts, true)
            }
            Node::Object(mut members) => {
                let at = start(self);
                self.text.push('{');
                self.lines.push(at..self.text.len());
                members.sort_by(|a, b| a.0.cmp(&b.0));
                let parts = members
                    .into_iter()
                    .map(|(name, value)| self.write(value, Some(&name)))
                    .collect();
                self.close('}');
                (parts, false)
            }
        };
        Shape {
            lines: first..self.lines.len(),
            parts,
            array,
        }
    }

    fn close(&mut self, bracket: char) {
        self.text.push('\n');
        let at = self.text.len();
        self.text.push(bracket);
        self.lines.push(at..self.text.len());
    }
}

fn push_line(out: &mut String, line: &str) {
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str(line);
}

fn push_lines(out: &mut String, lines: &[String]) {
    for line in lines {
        push_line(out, line);
    }
}

/// Whether `trimmed` may be a document: an object or an array. Cheap, for every comparison.
pub(crate) fn looks_like(trimmed: &str) -> bool {
    matches!(
        (trimmed.as_bytes().first(), trimmed.as_bytes().last()),
        (Some(b'{'), Some(b'}')) | (Some(b'['), Some(b']'))
    )
}

/// What the JSON `raw`, read from `text`, means: strings decoded and normalised as text is
/// compared (and written back with JSON's escapes), numbers in their one spelling. `None`
/// when a string does not decode (the reader checked its escapes, so never in practice).
fn meaning(text: &str, raw: Raw) -> Option<Node> {
    Some(match raw {
        Raw::Str(range) => Node::Scalar(string(&text[range])?),
        Raw::Num(range) => Node::Scalar(canonical_number(&text[range])),
        Raw::Word(range) => Node::Scalar(text[range].to_string()),
        Raw::Array(items) => Node::Array(
            items
                .into_iter()
                .map(|item| meaning(text, item))
                .collect::<Option<_>>()?,
        ),
        Raw::Object(members) => Node::Object(
            members
                .into_iter()
                .map(|(key, value)| Some((string(&text[key])?, meaning(text, value)?)))
                .collect::<Option<_>>()?,
        ),
    })
}

/// The JSON string `quoted` (quotes included, escapes valid), decoded, normalised and
/// written back with JSON's escapes.
fn string(quoted: &str) -> Option<String> {
    let inner = quoted.strip_prefix('"')?.strip_suffix('"')?;
    let bytes = inner.as_bytes();
    let mut decoded = String::with_capacity(inner.len());
    let mut at = 0;
    while at < bytes.len() {
        let run = bytes[at..]
            .iter()
            .position(|&b| b == b'\\')
            .unwrap_or(bytes.len() - at);
        // Bytes before a backslash end on a char boundary.
        decoded.push_str(&inner[at..at + run]);
        at += run;
        if at == bytes.len() {
            break;
        }
        let escaped = *bytes.get(at + 1)?;
        at += 2;
        let c = match escaped {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => unicode_escape(inner, &mut at)?,
            _ => return None,
        };
        decoded.push(c);
    }
    let key = comparison_key(&decoded);
    serde_json::to_string(&key).ok()
}

/// The character of a `\u` escape whose four digits are at `at` in `text` (a surrogate pair
/// is two escapes; a lone surrogate is U+FFFD, as browsers read it).
fn unicode_escape(text: &str, at: &mut usize) -> Option<char> {
    let high = hex4(text, at)?;
    if !(0xD800..0xDC00).contains(&high) {
        return Some(char::from_u32(high).unwrap_or('\u{fffd}'));
    }
    if text.as_bytes().get(*at..*at + 2) == Some(b"\\u") {
        let back = *at;
        *at += 2;
        let low = hex4(text, at)?;
        if (0xDC00..0xE000).contains(&low) {
            let code = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
            return Some(char::from_u32(code).unwrap_or('\u{fffd}'));
        }
        *at = back;
    }
    Some('\u{fffd}')
}

fn hex4(text: &str, at: &mut usize) -> Option<u32> {
    let digits = text.get(*at..*at + 4)?;
    if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    *at += 4;
    u32::from_str_radix(digits, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canonical(value: &str) -> Option<String> {
        Document::parse(value).map(|d| d.text().to_string())
    }

    #[test]
    fn numbers_have_one_spelling_each() {
        for (written, canonical) in [
            ("1", "1"),
            ("1.0", "1"),
            ("1e0", "1"),
            ("10E-1", "1"),
            ("0.1e1", "1"),
            ("-0", "0"),
            ("-0.0e5", "0"),
            ("1250", "1250"),
            ("1.25e3", "1250"),
            ("0.125", "0.125"),
            ("125e-3", "0.125"),
            ("-3.50", "-3.5"),
            ("12345678901234567890123", "1.2345678901234567890123e22"),
            ("123456789012345678901", "123456789012345678901"),
            ("100000000000000000000000", "1e23"),
            ("1e-30", "1e-30"),
            ("0.000001", "0.000001"),
            ("1e999999999999999999999", "1e281474976710656"),
        ] {
            assert_eq!(canonical_number(written), canonical, "{written}");
        }
        // Exact beyond a float's precision.
        assert_ne!(
            canonical_number("9007199254740993"),
            canonical_number("9007199254740992")
        );
        assert_ne!(
            canonical_number("0.30000000000000001"),
            canonical_number("0.3")
        );
    }

    #[test]
    fn only_objects_and_arrays_of_valid_json_are_documents() {
        for text in [
            "5",
            "\"a\"",
            "true",
            "{",
            "{\"a\":}",
            "{\"a\":1,}",
            "[1,]",
            "[01]",
            "[1.]",
            "[.5]",
            "[1e]",
            "{'a':1}",
            "[\"a\nb\"]",
            "[\"\\x\"]",
            "{\"a\":1} {\"b\":2}",
            "[NaN]",
        ] {
            assert!(canonical(text).is_none(), "{text:?}");
        }
        assert_eq!(canonical(" \u{feff}[] ").as_deref(), None);
        assert_eq!(canonical("\u{feff} [ ] ").as_deref(), Some("[]"));
    }

    #[test]
    fn keys_sort_and_strings_normalise() {
        let doc = r#"{"b": [1, {"y": "Tea\u00a0 &amp; cake", "x": null}], "a": {}}"#;
        assert_eq!(
            canonical(doc).unwrap(),
            "{\n\"a\": {}\n\"b\": [\n1\n{\n\"x\": null\n\"y\": \"Tea & cake\"\n}\n]\n}"
        );
    }

    #[test]
    fn nesting_beyond_the_limit_is_text() {
        let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(canonical(&ok).is_some());
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert!(canonical(&deep).is_none());
        let huge = format!("{}{}", "[".repeat(1_000_000), "]".repeat(1_000_000));
        assert!(canonical(&huge).is_none());
    }
}
