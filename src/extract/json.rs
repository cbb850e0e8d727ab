//! JSON documents in key order, for a `regex` to read: a server that writes its objects from a
//! hash map sends the same document with its members in another order on every request, and
//! the matches of a regex over it would come in that order, so a list whose order matters
//! (ranked offers) could only be compared as a set. [`sorted_keys`] writes the document with
//! the members of every object sorted by key, every number in one spelling
//! ([`canonical_number`]: an API that writes a price `89`, `89.0` or `8.9e1` on different
//! requests shows one price, so its spelling is not taken for noise that hides the price),
//! and everything else as the server wrote it (strings with their escapes, arrays in their
//! order), without the white space between tokens: the matches then come in an order and a
//! spelling that only the document's content decides.
//!
//! One strict pass ([`read`], the reader [`crate::alerts::compare`] uses too) builds a tree of
//! byte ranges (no value is copied), a second writes it; nesting is bounded by [`MAX_DEPTH`],
//! so a 10 MB body takes linear time and memory.

use std::ops::Range;

/// The deepest nesting of objects and arrays read; a deeper document is left as it is.
pub const MAX_DEPTH: usize = 128;

/// `text` with the members of every object sorted by key (their keys' bytes as written) and
/// no white space between tokens, when `text` is (trimmed) one JSON object or array; `None`
/// for anything else (HTML, plain text, a scalar, JSON that is cut or invalid, nesting
/// deeper than [`MAX_DEPTH`]), which is then read as it is.
pub fn sorted_keys(text: &str) -> Option<String> {
    let trimmed = text.trim_start_matches('\u{feff}').trim();
    if !matches!(trimmed.as_bytes().first(), Some(b'{' | b'[')) {
        return None;
    }
    let node = read(trimmed)?;
    let mut out = String::with_capacity(trimmed.len());
    write(trimmed, &node, &mut out);
    Some(out)
}

/// A JSON value as byte ranges of the text it was read from ([`read`]).
pub(crate) enum Raw {
    /// A string, quotes and escapes included (valid: its escapes decode).
    Str(Range<usize>),
    /// A number (valid by RFC 8259's grammar).
    Num(Range<usize>),
    /// `true`, `false` or `null`.
    Word(Range<usize>),
    Array(Vec<Raw>),
    /// Members: the key's range (a [`Raw::Str`]'s) and the value.
    Object(Vec<(Range<usize>, Raw)>),
}

/// `text` read as one JSON value by RFC 8259, strictly (white space around it allowed);
/// `None` for anything it does not accept or for containers nested deeper than
/// [`MAX_DEPTH`]. One pass, no recursion deeper than [`MAX_DEPTH`]. The one reader of JSON
/// in the engine: extraction writes its ranges in key order, comparison reads their meaning.
pub(crate) fn read(text: &str) -> Option<Raw> {
    let mut reader = Reader {
        bytes: text.as_bytes(),
        at: 0,
    };
    let node = reader.value(0)?;
    reader.skip_space();
    (reader.at == text.len()).then_some(node)
}

fn write(text: &str, node: &Raw, out: &mut String) {
    match node {
        Raw::Str(range) | Raw::Word(range) => out.push_str(&text[range.clone()]),
        Raw::Num(range) => out.push_str(&canonical_number(&text[range.clone()])),
        Raw::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(text, item, out);
            }
            out.push(']');
        }
        Raw::Object(members) => {
            let mut order: Vec<&(Range<usize>, Raw)> = members.iter().collect();
            // Stable: members with the same key keep their order.
            order.sort_by(|a, b| text[a.0.clone()].cmp(&text[b.0.clone()]));
            out.push('{');
            for (i, (key, value)) in order.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&text[key.clone()]);
                out.push(':');
                write(text, value, out);
            }
            out.push('}');
        }
    }
}

/// The most digits a number is written with in plain notation; longer ones take an exponent.
const PLAIN_DIGITS: i64 = 21;

/// The one spelling of the number `text` (valid JSON number syntax): its significant digits,
/// exactly, in plain notation (`1250`, `0.125`) when that needs at most [`PLAIN_DIGITS`]
/// digits, else as `d.ddde±N`; `0` for any zero.
pub(crate) fn canonical_number(text: &str) -> String {
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

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn skip_space(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.at) {
            self.at += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> bool {
        self.skip_space();
        let found = self.bytes.get(self.at) == Some(&byte);
        self.at += usize::from(found);
        found
    }

    fn value(&mut self, depth: usize) -> Option<Raw> {
        self.skip_space();
        match *self.bytes.get(self.at)? {
            b'{' => {
                if depth >= MAX_DEPTH {
                    return None;
                }
                self.at += 1;
                let mut members = Vec::new();
                if self.eat(b'}') {
                    return Some(Raw::Object(members));
                }
                loop {
                    self.skip_space();
                    let key = self.string()?;
                    if !self.eat(b':') {
                        return None;
                    }
                    members.push((key, self.value(depth + 1)?));
                    if self.eat(b',') {
                        continue;
                    }
                    return self.eat(b'}').then_some(Raw::Object(members));
                }
            }
            b'[' => {
                if depth >= MAX_DEPTH {
                    return None;
                }
                self.at += 1;
                let mut items = Vec::new();
                if self.eat(b']') {
                    return Some(Raw::Array(items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    if self.eat(b',') {
                        continue;
                    }
                    return self.eat(b']').then_some(Raw::Array(items));
                }
            }
            b'"' => self.string().map(Raw::Str),
            b't' => self.word("true"),
            b'f' => self.word("false"),
            b'n' => self.word("null"),
            _ => self.number().map(Raw::Num),
        }
    }

    fn word(&mut self, word: &str) -> Option<Raw> {
        let start = self.at;
        let end = start + word.len();
        (self.bytes.get(start..end)? == word.as_bytes()).then(|| {
            self.at = end;
            Raw::Word(start..end)
        })
    }

    /// A string at the cursor, quotes included: no raw control character, every escape one
    /// JSON knows (`\u` with four hex digits).
    fn string(&mut self) -> Option<Range<usize>> {
        let start = self.at;
        if self.bytes.get(self.at) != Some(&b'"') {
            return None;
        }
        self.at += 1;
        loop {
            match *self.bytes.get(self.at)? {
                b'"' => {
                    self.at += 1;
                    return Some(start..self.at);
                }
                b'\\' => match *self.bytes.get(self.at + 1)? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.at += 2,
                    b'u' => {
                        let hex = self.bytes.get(self.at + 2..self.at + 6)?;
                        if !hex.iter().all(u8::is_ascii_hexdigit) {
                            return None;
                        }
                        self.at += 6;
                    }
                    _ => return None,
                },
                0..=0x1f => return None,
                _ => self.at += 1,
            }
        }
    }

    /// A number at the cursor, by RFC 8259's grammar.
    fn number(&mut self) -> Option<Range<usize>> {
        let start = self.at;
        let digits = |r: &mut Self| {
            let from = r.at;
            while r.bytes.get(r.at).is_some_and(u8::is_ascii_digit) {
                r.at += 1;
            }
            r.at - from
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
        Some(start..self.at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_come_in_key_order_numbers_in_one_spelling_and_the_rest_as_written() {
        let a = r#"{"price": 49.90, "offers": [{"seller":"b","price":51.00}, {"price":4.99e1,"seller":"a"}], "name":"Lamp \"400\""}"#;
        let b = r#"{"name":"Lamp \"400\"","offers":[{"price":51,"seller":"b"},{"seller":"a","price":49.9}],"price":49.900}"#;
        let want = r#"{"name":"Lamp \"400\"","offers":[{"price":51,"seller":"b"},{"price":49.9,"seller":"a"}],"price":49.9}"#;
        assert_eq!(sorted_keys(a).as_deref(), Some(want));
        assert_eq!(sorted_keys(b).as_deref(), Some(want));
    }

    #[test]
    fn anything_but_a_whole_json_container_is_left_alone() {
        for text in [
            "<html><body>{}</body></html>",
            "5",
            "\"a\"",
            "{\"a\":1",
            "{\"a\":1} trailing",
            "[1,,2]",
            "{\"a\":tru}",
            "{\"a\":\"line\nbreak\"}",
            "",
        ] {
            assert_eq!(sorted_keys(text), None, "{text:?}");
        }
        let deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
        assert_eq!(sorted_keys(&deep), None);
        let ok = "[".repeat(MAX_DEPTH - 1) + &"]".repeat(MAX_DEPTH - 1);
        assert_eq!(sorted_keys(&ok), Some(ok.clone()));
    }
}
