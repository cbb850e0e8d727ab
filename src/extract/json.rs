//! JSON documents in key order, for a `regex` to read: a server that writes its objects from a
//! hash map sends the same document with its members in another order on every request, and
//! the matches of a regex over it would come in that order, so a list whose order matters
//! (ranked offers) could only be compared as a set. [`sorted_keys`] writes the document with
//! the members of every object sorted by key and everything else as the server wrote it
//! (strings with their escapes, numbers with their digits, arrays in their order), without the
//! white space between tokens: the matches then come in an order that only the document's
//! content decides.
//!
//! One pass builds a tree of byte ranges (no value is copied), a second writes it; nesting is
//! bounded by [`MAX_DEPTH`], so a 10 MB body takes linear time and memory.

use std::ops::Range;

/// The deepest nesting read; a deeper document is left as it is.
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
    let mut reader = Reader {
        bytes: trimmed.as_bytes(),
        at: 0,
    };
    let node = reader.value(0)?;
    reader.skip_space();
    if reader.at != trimmed.len() {
        return None;
    }
    let mut out = String::with_capacity(trimmed.len());
    write(trimmed, &node, &mut out);
    Some(out)
}

/// A value as byte ranges of the text.
enum Node {
    /// A string (quotes included), a number, `true`, `false` or `null`.
    Raw(Range<usize>),
    Array(Vec<Node>),
    /// Members: the key's range (quotes included) and the value.
    Object(Vec<(Range<usize>, Node)>),
}

fn write(text: &str, node: &Node, out: &mut String) {
    match node {
        Node::Raw(range) => out.push_str(&text[range.clone()]),
        Node::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(text, item, out);
            }
            out.push(']');
        }
        Node::Object(members) => {
            let mut order: Vec<&(Range<usize>, Node)> = members.iter().collect();
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

    fn eat(&mut self, byte: u8) -> Option<()> {
        self.skip_space();
        (self.bytes.get(self.at) == Some(&byte)).then(|| self.at += 1)
    }

    fn value(&mut self, depth: usize) -> Option<Node> {
        if depth >= MAX_DEPTH {
            return None;
        }
        self.skip_space();
        match *self.bytes.get(self.at)? {
            b'{' => {
                self.at += 1;
                let mut members = Vec::new();
                self.skip_space();
                if self.bytes.get(self.at) == Some(&b'}') {
                    self.at += 1;
                    return Some(Node::Object(members));
                }
                loop {
                    self.skip_space();
                    let key = self.string()?;
                    self.eat(b':')?;
                    members.push((key, self.value(depth + 1)?));
                    self.skip_space();
                    match *self.bytes.get(self.at)? {
                        b',' => self.at += 1,
                        b'}' => {
                            self.at += 1;
                            return Some(Node::Object(members));
                        }
                        _ => return None,
                    }
                }
            }
            b'[' => {
                self.at += 1;
                let mut items = Vec::new();
                self.skip_space();
                if self.bytes.get(self.at) == Some(&b']') {
                    self.at += 1;
                    return Some(Node::Array(items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    self.skip_space();
                    match *self.bytes.get(self.at)? {
                        b',' => self.at += 1,
                        b']' => {
                            self.at += 1;
                            return Some(Node::Array(items));
                        }
                        _ => return None,
                    }
                }
            }
            b'"' => self.string().map(Node::Raw),
            _ => self.scalar().map(Node::Raw),
        }
    }

    /// A string at the reader, quotes included.
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
                b'\\' => self.at += 2,
                // Control characters are not allowed raw in a JSON string.
                0..=0x1f => return None,
                _ => self.at += 1,
            }
        }
    }

    /// A number, `true`, `false` or `null`.
    fn scalar(&mut self) -> Option<Range<usize>> {
        let start = self.at;
        while let Some(b) = self.bytes.get(self.at)
            && (b.is_ascii_alphanumeric() || matches!(b, b'-' | b'+' | b'.'))
        {
            self.at += 1;
        }
        let word = &self.bytes[start..self.at];
        let number = word
            .first()
            .is_some_and(|b| b.is_ascii_digit() || *b == b'-')
            && word
                .iter()
                .all(|b| b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E'));
        (number || matches!(word, b"true" | b"false" | b"null")).then_some(start..self.at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_come_in_key_order_and_everything_else_as_written() {
        let a = r#"{"price": 49.90, "offers": [{"seller":"b","price":51.00}, {"price":49.90,"seller":"a"}], "name":"Lamp \"400\""}"#;
        let b = r#"{"name":"Lamp \"400\"","offers":[{"price":51.00,"seller":"b"},{"seller":"a","price":49.90}],"price":49.90}"#;
        let want = r#"{"name":"Lamp \"400\"","offers":[{"price":51.00,"seller":"b"},{"price":49.90,"seller":"a"}],"price":49.90}"#;
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
