//! Comparison keys: the form of a value in which spellings that look the same to a reader are
//! one, so that "changed or not" is decided on what a reader sees, while the value itself is
//! kept as the page gave it (history shows the page as it was).
//!
//! A key ([`comparison_key`], [`key_chars`], [`same`]) is the value with
//!
//! - HTML character references that reached the value decoded: `&amp;`, `&#38;` and `&#x26;`
//!   are all `&`, `&nbsp;` is U+00A0 (a reference needs its `;`; an unknown name stays as
//!   written);
//! - zero-width and invisible formatting characters removed (U+200B–U+200F, U+2060, U+FEFF,
//!   U+00AD soft hyphen, U+034F, U+061C, U+180E);
//! - Unicode canonical composition (NFC), so `e` + U+0301 and `é` are one;
//! - every run of white space (any Unicode space: U+00A0, U+2009, U+202F, U+3000, line and
//!   paragraph breaks, ...) one ASCII space, none at either end;
//! - quote variants plain: `‘ ’ ‚ ‛ ‹ ›` are `'`, `“ ” „ ‟ « »` are `"`;
//! - dash variants plain: `‐ ‑ ‒ – — ― −` are `-`.
//!
//! Anything else is kept as it is, so an edit of one visible character (a digit, a letter, a
//! punctuation mark other than those variants) always gives another key. Case is kept; the
//! alerts fold it themselves for CaseInsensitive.
//!
//! The key is made in one pass over the value (linear time); [`same`] compares two keys as they
//! are made, without building either, and [`comparison_key`] allocates one output buffer. NFC
//! needs to hold a run of combining marks to sort them; runs are cut after 30 marks (Unicode's
//! stream-safe format), so a value of nothing but combining marks is still read in bounded
//! memory.
//!
//! ```
//! use wachet::normalize::{comparison_key, same};
//!
//! assert!(same("Price:\u{a0}3.50 EUR", "Price:  3.50&nbsp;EUR"));
//! assert!(same("“Tea” – 3 left", "\"Tea\" - 3 left"));
//! assert!(same("Caf\u{65}\u{301} &amp; more", "Café &#x26; more"));
//! assert!(!same("3 left", "2 left"));
//! assert_eq!(comparison_key("  Tom’s\u{200b} tea\n\n— 3.50 "), "Tom's tea - 3.50");
//! ```

use unicode_normalization::{Recompositions, StreamSafe, UnicodeNormalization};

/// The comparison key of `value` (see the [module documentation](self)).
pub fn comparison_key(value: &str) -> String {
    let mut key = String::with_capacity(value.len());
    key.extend(key_chars(value));
    key
}

/// The comparison key of `value` with its lines kept: a run of white space that holds a line
/// break is one `\n`, any other run one space. For diffs that speak of lines; two values
/// whose line keys differ only where one has a line break and the other a space are still
/// [`same`].
///
/// ```
/// use wachet::normalize::line_key;
/// assert_eq!(line_key("Tea:\u{a0}3.50 \r\n\n “Cake”:  2.00 "), "Tea: 3.50\n\"Cake\": 2.00");
/// ```
pub fn line_key(value: &str) -> String {
    let mut key = String::with_capacity(value.len());
    let mut chars = key_chars(value);
    chars.keep_lines = true;
    key.extend(chars);
    key
}

/// Whether `a` and `b` have the same comparison key: they differ only in white space, Unicode
/// form, quote and dash variants, invisible characters and character reference spellings.
/// Reads both at most once and allocates nothing per character.
pub fn same(a: &str, b: &str) -> bool {
    a == b || key_chars(a).eq(key_chars(b))
}

/// The characters of `value`'s comparison key, made as they are read.
pub fn key_chars(value: &str) -> KeyChars<'_> {
    let visible: fn(&char) -> bool = |c| !is_invisible(*c);
    KeyChars {
        inner: Entities { rest: value }.filter(visible).stream_safe().nfc(),
        pending_space: None,
        keep_lines: false,
        started: false,
        held: None,
    }
}

/// The value's characters with references decoded and invisible ones dropped, composed (NFC)
/// in stream-safe runs.
type Composed<'a> = Recompositions<StreamSafe<Visible<'a>>>;

/// The value's characters with references decoded and invisible ones dropped.
type Visible<'a> = std::iter::Filter<Entities<'a>, fn(&char) -> bool>;

/// The characters of a comparison key ([`key_chars`]).
pub struct KeyChars<'a> {
    inner: Composed<'a>,
    /// The space to give for the white space read since the last character given.
    pending_space: Option<char>,
    /// A run of white space holding a line break is `\n` ([`line_key`]).
    keep_lines: bool,
    /// A character was given: white space before the first one is dropped.
    started: bool,
    /// A character read after white space, given after the one space.
    held: Option<char>,
}

impl Iterator for KeyChars<'_> {
    type Item = char;

    fn next(&mut self) -> Option<char> {
        if let Some(c) = self.held.take() {
            return Some(c);
        }
        loop {
            // At the end a pending space is dropped: no white space at the end of a key.
            let c = self.inner.next()?;
            if c.is_whitespace() {
                if self.started {
                    let line = self.keep_lines && is_line_break(c);
                    if line || self.pending_space.is_none() {
                        self.pending_space = Some(if line { '\n' } else { ' ' });
                    }
                }
                continue;
            }
            // The stream-safe format's own separator (U+034F), and any invisible character
            // NFC could not have seen removed.
            if is_invisible(c) {
                continue;
            }
            let c = plain(c);
            self.started = true;
            if let Some(space) = self.pending_space.take() {
                self.held = Some(c);
                return Some(space);
            }
            return Some(c);
        }
    }
}

fn is_line_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r' | '\u{b}' | '\u{c}' | '\u{85}' | '\u{2028}' | '\u{2029}'
    )
}

/// Characters that take no room and show nothing: a page may put them anywhere (soft hyphens
/// for line breaking, zero-width spaces and joiners, direction marks) without a reader seeing
/// a difference.
fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00ad}'
            | '\u{034f}'
            | '\u{061c}'
            | '\u{180e}'
            | '\u{200b}'
            | '\u{200c}'
            | '\u{200d}'
            | '\u{200e}'
            | '\u{200f}'
            | '\u{2060}'
            | '\u{feff}'
    )
}

/// A quote or dash variant as its plain ASCII form; any other character as it is.
fn plain(c: char) -> char {
    match c {
        '\u{2018}' | '\u{2019}' | '\u{201a}' | '\u{201b}' | '\u{2039}' | '\u{203a}' => '\'',
        '\u{201c}' | '\u{201d}' | '\u{201e}' | '\u{201f}' | '\u{ab}' | '\u{bb}' => '"',
        '\u{2010}' | '\u{2011}' | '\u{2012}' | '\u{2013}' | '\u{2014}' | '\u{2015}'
        | '\u{2212}' => '-',
        c => c,
    }
}

/// The characters of a text with its character references decoded, looking ahead at most a
/// reference's length from each `&`.
struct Entities<'a> {
    rest: &'a str,
}

impl Iterator for Entities<'_> {
    type Item = char;

    fn next(&mut self) -> Option<char> {
        let mut chars = self.rest.chars();
        let c = chars.next()?;
        if c == '&'
            && let Some((decoded, len)) = reference(self.rest)
        {
            self.rest = &self.rest[len..];
            return Some(decoded);
        }
        self.rest = chars.as_str();
        Some(c)
    }
}

/// The character a reference at the start of `text` (which starts with `&`) stands for, and
/// the reference's length in bytes; `None` when it is not a complete reference.
fn reference(text: &str) -> Option<(char, usize)> {
    let body = text.get(1..)?;
    if let Some(numeric) = body.strip_prefix('#') {
        let (digits, radix, skip) = match numeric.strip_prefix(['x', 'X']) {
            Some(hex) => (hex, 16, 3),
            None => (numeric, 10, 2),
        };
        // At most 7 digits (U+10FFFF is 1114111): more is no character.
        let len = digits
            .bytes()
            .take(8)
            .take_while(|b| (*b as char).is_digit(radix))
            .count();
        if len == 0 || len > 7 || digits.as_bytes().get(len) != Some(&b';') {
            return None;
        }
        let code = u32::from_str_radix(&digits[..len], radix).ok()?;
        let c = char::from_u32(code).filter(|&c| c != '\0')?;
        return Some((c, skip + len + 1));
    }
    let len = body
        .bytes()
        .take(MAX_NAME + 1)
        .take_while(u8::is_ascii_alphanumeric)
        .count();
    if len == 0 || len > MAX_NAME || body.as_bytes().get(len) != Some(&b';') {
        return None;
    }
    let c = named(&body[..len])?;
    Some((c, len + 2))
}

/// The longest name in [`named`].
const MAX_NAME: usize = 8;

/// The named references pages commonly leave in text: markup's own, spaces and invisible
/// characters, quotes, dashes and the usual symbols. An unknown name stays as written.
fn named(name: &str) -> Option<char> {
    Some(match name {
        "amp" | "AMP" => '&',
        "lt" | "LT" => '<',
        "gt" | "GT" => '>',
        "quot" | "QUOT" => '"',
        "apos" => '\'',
        "nbsp" => '\u{a0}',
        "ensp" => '\u{2002}',
        "emsp" => '\u{2003}',
        "thinsp" => '\u{2009}',
        "hairsp" => '\u{200a}',
        "zwnj" => '\u{200c}',
        "zwj" => '\u{200d}',
        "lrm" => '\u{200e}',
        "rlm" => '\u{200f}',
        "shy" => '\u{ad}',
        "lsquo" => '\u{2018}',
        "rsquo" => '\u{2019}',
        "sbquo" => '\u{201a}',
        "ldquo" => '\u{201c}',
        "rdquo" => '\u{201d}',
        "bdquo" => '\u{201e}',
        "laquo" => '\u{ab}',
        "raquo" => '\u{bb}',
        "lsaquo" => '\u{2039}',
        "rsaquo" => '\u{203a}',
        "hyphen" | "dash" => '\u{2010}',
        "ndash" => '\u{2013}',
        "mdash" => '\u{2014}',
        "horbar" => '\u{2015}',
        "minus" => '\u{2212}',
        "hellip" => '\u{2026}',
        "bull" => '\u{2022}',
        "middot" => '\u{b7}',
        "copy" => '\u{a9}',
        "reg" => '\u{ae}',
        "trade" => '\u{2122}',
        "euro" => '\u{20ac}',
        "pound" => '\u{a3}',
        "yen" => '\u{a5}',
        "cent" => '\u{a2}',
        "sect" => '\u{a7}',
        "deg" => '\u{b0}',
        "times" => '\u{d7}',
        "divide" => '\u{f7}',
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows of values that must have one key: each row's values against its first.
    fn assert_same(kind: &str, rows: &[&[&str]]) {
        for row in rows {
            for variant in &row[1..] {
                assert!(
                    same(row[0], variant),
                    "{kind}: {:?} and {variant:?} differ: {:?} vs {:?}",
                    row[0],
                    comparison_key(row[0]),
                    comparison_key(variant)
                );
                assert_eq!(comparison_key(row[0]), comparison_key(variant), "{kind}");
            }
        }
    }

    #[test]
    fn white_space_runs_of_any_kind_are_one_space() {
        assert_same(
            "white space",
            &[
                &[
                    "Price: 3.50 EUR",
                    "Price:  3.50   EUR",
                    "Price:\u{a0}3.50\u{202f}EUR",
                    "Price:\t3.50\nEUR",
                    "Price:\u{2009}3.50\u{3000}EUR",
                    "Price:\u{2002}\u{2003}3.50\r\n EUR",
                    "  Price: 3.50 EUR\n\n",
                    "Price:\u{2028}3.50\u{2029}EUR",
                    "\u{85}Price:\u{1680}3.50\u{205f}EUR",
                ],
                &["a b", "a\u{a0}\u{a0}b", "\na \n b\n"],
                &["", "   ", "\n\u{a0}\t"],
            ],
        );
    }

    #[test]
    fn line_keys_keep_line_breaks_and_are_same_where_keys_are() {
        assert_eq!(line_key("a \n b\u{2028}\u{a0}c  d\r\n"), "a\nb\nc d");
        assert_eq!(line_key("\n\n a"), "a");
        assert!(same("a\nb", "a b"));
        for text in TEXTS {
            assert_eq!(line_key(text).replace('\n', " "), comparison_key(text));
        }
    }

    #[test]
    fn zero_width_and_invisible_characters_are_removed() {
        assert_same(
            "invisible",
            &[&[
                "Earl Grey",
                "Earl\u{200b} Grey",
                "\u{feff}Earl Grey",
                "Ea\u{ad}rl Gr\u{ad}ey",
                "Earl \u{200d}Grey\u{200c}",
                "\u{200e}Earl Grey\u{200f}",
                "Earl\u{2060} Grey\u{34f}",
                "Earl \u{200b} Grey",
            ]],
        );
    }

    #[test]
    fn unicode_forms_are_composed() {
        assert_same(
            "NFC",
            &[
                &["Café", "Cafe\u{301}"],
                &["Ångström", "A\u{30a}ngstro\u{308}m", "\u{212b}ngström"],
                &["ệ", "e\u{323}\u{302}", "e\u{302}\u{323}", "ê\u{323}"],
                // A zero-width character between a letter and its mark does not keep them
                // apart.
                &["é", "e\u{200b}\u{301}"],
                &["한", "\u{1112}\u{1161}\u{11ab}"],
            ],
        );
    }

    #[test]
    fn quote_variants_are_plain() {
        assert_same(
            "quotes",
            &[
                &[
                    "\"Tea\" isn't 'tea'",
                    "“Tea” isn’t ‘tea’",
                    "„Tea‟ isn‛t ‚tea’",
                    "«Tea» isn't ‹tea›",
                    "&ldquo;Tea&rdquo; isn&rsquo;t &lsquo;tea&rsquo;",
                ],
                &["«\u{a0}Thé\u{a0}»", "\" Thé \""],
            ],
        );
    }

    #[test]
    fn dash_variants_are_plain() {
        assert_same(
            "dashes",
            &[
                &[
                    "9-17 - open",
                    "9–17 — open",
                    "9‐17 ― open",
                    "9‑17 ‒ open",
                    "9&ndash;17 &mdash; open",
                ],
                &["-3 °C", "−3 °C", "&minus;3&nbsp;&deg;C"],
            ],
        );
    }

    #[test]
    fn character_reference_spellings_are_one() {
        assert_same(
            "references",
            &[
                &[
                    "Tea & cake",
                    "Tea &amp; cake",
                    "Tea &#38; cake",
                    "Tea &#x26; cake",
                    "Tea &#X26; cake",
                    "Tea &#038; cake",
                    "Tea &AMP; cake",
                ],
                &["a\u{a0}b", "a&nbsp;b", "a&#160;b", "a&#xa0;b", "a b"],
                &["<b>", "&lt;b&gt;", "&#60;b&#62;"],
                &["Café", "Caf&#233;", "Caf&#xE9;", "Cafe&#x301;"],
                &["€ 5", "&euro; 5", "&#8364;&nbsp;5"],
            ],
        );
    }

    #[test]
    fn incomplete_or_unknown_references_stay_as_written() {
        for (text, key) in [
            ("Tea &amp cake", "Tea &amp cake"),
            ("AT&T", "AT&T"),
            ("&unknown;", "&unknown;"),
            ("&#;", "&#;"),
            ("&#x;", "&#x;"),
            ("&#99999999;", "&#99999999;"),
            ("&#x110000;", "&#x110000;"),
            ("&#xD800;", "&#xD800;"),
            ("&#0;", "&#0;"),
            ("&", "&"),
            ("&&amp;", "&&"),
            ("&amp;amp;", "&amp;"),
            ("&#x26", "&#x26"),
            ("é&", "é&"),
        ] {
            assert_eq!(comparison_key(text), key, "{text:?}");
        }
    }

    /// Texts whose every one-character edit must change the key.
    const TEXTS: &[&str] = &[
        "Price: 3.50 EUR",
        "Tom's tea & cake, 9-17 (open) \"today\"!",
        "Größe: 42 — Café «Thé»",
        "1,234.50 / 1.234,50 = 100% ; a:b? #7 @home *new* [x] {y} <z> ~q^r|s_t+u=v`w$",
        // (An inserted `0` in `&#38;` would be a spelling of the same `&`: no numeric
        // reference here.)
        "&amp; &lt;b&gt; &nbsp; x",
        "Ülkü's naïve façade",
    ];

    /// Characters an edit puts in: letters, digits, and punctuation that is no variant.
    const INSERTED: &[char] = &[
        'a', 'Z', '0', '7', '.', ',', '!', '?', ';', ':', '%', '(', '/', '&', '#', '*', 'é', 'ß',
        '€', '…', '°', '_', '\'', '"', '-',
    ];

    fn visible(c: char) -> bool {
        !c.is_whitespace() && !is_invisible(c)
    }

    #[test]
    fn every_one_character_edit_of_a_visible_character_changes_the_key() {
        let mut edits = 0;
        for text in TEXTS {
            let key = comparison_key(text);
            let chars: Vec<(usize, char)> = text.char_indices().collect();
            for &(at, c) in &chars {
                let after = &text[at + c.len_utf8()..];
                let before = &text[..at];
                let mut changed = Vec::new();
                if visible(c) {
                    // Deleted.
                    changed.push(format!("{before}{after}"));
                    // Replaced by a different plain character.
                    for &by in INSERTED.iter().filter(|&&by| plain(by) != plain(c)) {
                        changed.push(format!("{before}{by}{after}"));
                    }
                }
                // Inserted before it.
                for &by in INSERTED {
                    changed.push(format!("{before}{by}{c}{after}"));
                }
                for edited in changed {
                    assert_ne!(comparison_key(&edited), key, "{edited:?} against {text:?}");
                    assert!(!same(&edited, text), "{edited:?} against {text:?}");
                    edits += 1;
                }
            }
        }
        assert!(edits > 2000, "only {edits} edits tried");
    }

    #[test]
    fn ten_megabytes_of_worst_cases_are_read_in_one_pass() {
        let big = 10 * 1024 * 1024;
        // Combining marks only: NFC's reordering buffer stays bounded (stream-safe runs).
        let marks = "\u{301}\u{323}".repeat(big / 4);
        let key = comparison_key(&marks);
        assert!(key.len() <= marks.len());
        // An ampersand at every byte: each looks ahead a few bytes only.
        let ampersands = "&".repeat(big);
        assert_eq!(comparison_key(&ampersands).len(), big);
        // Unfinished references as long as a name may be.
        let near = "&#1234567".repeat(big / 9);
        assert_eq!(comparison_key(&near), near);
        // White space only: an empty key.
        assert_eq!(comparison_key(&" \u{a0}".repeat(big / 3)), "");
        assert!(same(&"a ".repeat(big / 2), &"a\u{a0}".repeat(big / 2)));
    }
}
