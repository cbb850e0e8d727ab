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
//! than [`MAX_DEPTH`], is not a document and is compared as text. Parsing is one pass over the
//! value with no recursion deeper than [`MAX_DEPTH`], so a 10 MB value is read in linear time.
//!
//! [`Document::set_lines`] is the form of [`crate::model::LineOrder::Set`] for documents: the
//! elements of every array sorted (a multiset: a shuffled array is no change, an element added,
//! removed or repeated is), each element as one unit so a value never moves from one element
//! to another unnoticed; object members are sorted already. An element is copied once for
//! each array of more than one element around it, so that form takes time linear in the value
//! times its array nesting (at most [`MAX_DEPTH`]).

use crate::normalize::comparison_key;
use std::ops::Range;

/// The deepest nesting of arrays and objects read as a document; deeper values are text.
pub const MAX_DEPTH: usize = 128;

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
        let mut parser = Parser {
            bytes: trimmed.as_bytes(),
            text: trimmed,
            at: 0,
        };
        let node = parser.value(0)?;
        parser.skip_space();
        if parser.at != trimmed.len() {
            return None;
        }
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

/// A strict RFC 8259 reader that gives `None` on anything it does not accept.
struct Parser<'a> {
    bytes: &'a [u8],
    text: &'a str,
    at: usize,
}

impl Parser<'_> {
    fn skip_space(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.at) {
            self.at += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> bool {
        self.skip_space();
        if self.bytes.get(self.at) == Some(&byte) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn value(&mut self, depth: usize) -> Option<Node> {
        self.skip_space();
        match *self.bytes.get(self.at)? {
            b'{' => {
                if depth >= MAX_DEPTH {
                    return None;
                }
                self.at += 1;
                let mut members = Vec::new();
                if self.eat(b'}') {
                    return Some(Node::Object(members));
                }
                loop {
                    self.skip_space();
                    let name = self.string()?;
                    if !self.eat(b':') {
                        return None;
                    }
                    let value = self.value(depth + 1)?;
                    members.push((name, value));
                    if self.eat(b',') {
                        continue;
                    }
                    return self.eat(b'}').then_some(Node::Object(members));
                }
            }
            b'[' => {
                if depth >= MAX_DEPTH {
                    return None;
                }
                self.at += 1;
                let mut items = Vec::new();
                if self.eat(b']') {
                    return Some(Node::Array(items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    if self.eat(b',') {
                        continue;
                    }
                    return self.eat(b']').then_some(Node::Array(items));
                }
            }
            b'"' => self.string().map(Node::Scalar),
            b't' => self.word("true"),
            b'f' => self.word("false"),
            b'n' => self.word("null"),
            _ => self.number().map(Node::Scalar),
        }
    }

    fn word(&mut self, word: &str) -> Option<Node> {
        let end = self.at + word.len();
        (self.bytes.get(self.at..end)? == word.as_bytes()).then(|| {
            self.at = end;
            Node::Scalar(word.to_string())
        })
    }

    /// A string at the cursor, decoded, normalised and written back with JSON's escapes.
    fn string(&mut self) -> Option<String> {
        if self.bytes.get(self.at) != Some(&b'"') {
            return None;
        }
        self.at += 1;
        let mut decoded = String::new();
        loop {
            let run = self.bytes[self.at..]
                .iter()
                .position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
            // Bytes before a quote, a backslash or a control byte end on a char boundary.
            decoded.push_str(&self.text[self.at..self.at + run]);
            self.at += run;
            match self.bytes[self.at] {
                b'"' => {
                    self.at += 1;
                    break;
                }
                b'\\' => {
                    let escaped = *self.bytes.get(self.at + 1)?;
                    self.at += 2;
                    let c = match escaped {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => self.unicode_escape()?,
                        _ => return None,
                    };
                    decoded.push(c);
                }
                _ => return None,
            }
        }
        let key = comparison_key(&decoded);
        serde_json::to_string(&key).ok()
    }

    /// The character of a `\u` escape whose four digits are at the cursor (a surrogate pair
    /// is two escapes; a lone surrogate is U+FFFD, as browsers read it).
    fn unicode_escape(&mut self) -> Option<char> {
        let high = self.hex4()?;
        if !(0xD800..0xDC00).contains(&high) {
            return Some(char::from_u32(high).unwrap_or('\u{fffd}'));
        }
        if self.bytes.get(self.at..self.at + 2) == Some(b"\\u") {
            let back = self.at;
            self.at += 2;
            let low = self.hex4()?;
            if (0xDC00..0xE000).contains(&low) {
                let code = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
                return Some(char::from_u32(code).unwrap_or('\u{fffd}'));
            }
            self.at = back;
        }
        Some('\u{fffd}')
    }

    fn hex4(&mut self) -> Option<u32> {
        let digits = self.text.get(self.at..self.at + 4)?;
        if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        self.at += 4;
        u32::from_str_radix(digits, 16).ok()
    }

    /// A number at the cursor (RFC 8259's grammar), in canonical form ([`canonical_number`]).
    fn number(&mut self) -> Option<String> {
        let start = self.at;
        let digits = |p: &mut Self| {
            let from = p.at;
            while p.bytes.get(p.at).is_some_and(u8::is_ascii_digit) {
                p.at += 1;
            }
            p.at - from
        };
        if self.bytes.get(self.at) == Some(&b'-') {
            self.at += 1;
        }
        let int_start = self.at;
        let int = digits(self);
        if int == 0 || (int > 1 && self.bytes[int_start] == b'0') {
            return None;
        }
        if self.bytes.get(self.at) == Some(&b'.') {
            self.at += 1;
            if digits(self) == 0 {
                return None;
            }
        }
        if let Some(b'e' | b'E') = self.bytes.get(self.at) {
            self.at += 1;
            if let Some(b'+' | b'-') = self.bytes.get(self.at) {
                self.at += 1;
            }
            if digits(self) == 0 {
                return None;
            }
        }
        Some(canonical_number(&self.text[start..self.at]))
    }
}

/// The most digits a number is written with in plain notation; longer ones take an exponent.
const PLAIN_DIGITS: i64 = 21;

/// The one spelling of the number `text` (valid JSON number syntax): its significant digits,
/// exactly, in plain notation (`1250`, `0.125`) when that needs at most [`PLAIN_DIGITS`]
/// digits, else as `d.ddde±N`; `0` for any zero.
fn canonical_number(text: &str) -> String {
    let (negative, rest) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (mantissa, exponent) = match rest.find(['e', 'E']) {
        Some(at) => (&rest[..at], exponent_of(&rest[at + 1..])),
        None => (rest, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let all = format!("{int}{frac}");
    let significant = all.trim_start_matches('0');
    let digits = significant.trim_end_matches('0');
    if digits.is_empty() {
        return "0".to_string();
    }
    let trailing = significant.len() - digits.len();
    // The number is digits × 10^scale.
    let scale = exponent
        .saturating_sub(frac.len() as i64)
        .saturating_add(trailing as i64);
    let count = digits.len() as i64;
    // Digits before the decimal point.
    let point = count.saturating_add(scale);
    let mut out = String::with_capacity(digits.len() + 8);
    if negative {
        out.push('-');
    }
    if scale >= 0 && point <= PLAIN_DIGITS {
        out.push_str(digits);
        out.extend(std::iter::repeat_n('0', scale as usize));
    } else if scale < 0 && point > 0 {
        let (whole, fraction) = digits.split_at(point as usize);
        out.push_str(whole);
        out.push('.');
        out.push_str(fraction);
    } else if scale < 0 && point <= 0 && count - point <= PLAIN_DIGITS {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-point) as usize));
        out.push_str(digits);
    } else {
        let (first, more) = digits.split_at(1);
        out.push_str(first);
        if !more.is_empty() {
            out.push('.');
            out.push_str(more);
        }
        out.push('e');
        out.push_str(&point.saturating_sub(1).to_string());
    }
    out
}

/// An exponent's value; one too large for any real number is held at a bound far beyond
/// every digit count a value can have, so it still orders and compares sensibly.
fn exponent_of(text: &str) -> i64 {
    const BOUND: i64 = 1 << 48;
    let (negative, digits) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let digits = digits.trim_start_matches('0');
    let magnitude = if digits.len() > 15 {
        BOUND
    } else {
        digits.parse::<i64>().unwrap_or(0).min(BOUND)
    };
    if negative { -magnitude } else { magnitude }
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
