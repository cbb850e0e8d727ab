//! Character decoding of fetched pages, the way browsers pick the encoding: byte order mark,
//! then the `charset` of the Content-Type header, then a `<meta>` in the first 1024 bytes, then
//! UTF-8 when the bytes are valid UTF-8, else a guess from the bytes (chardetng). Bytes invalid
//! in the chosen encoding become U+FFFD, as in a browser, rather than failing the check.

use encoding_rs::{Encoding, UTF_8, WINDOWS_1252};
use std::borrow::Cow;

/// How far into a document a `<meta>` charset is looked for (the HTML prescan's window).
const PRESCAN: usize = 1024;

/// The decoded text and the encoding used. UTF-8 without invalid bytes is borrowed, not
/// copied: most pages are.
pub fn decode<'a>(
    bytes: &'a [u8],
    content_type: Option<&str>,
    tld: Option<&[u8]>,
) -> (Cow<'a, str>, &'static Encoding) {
    let encoding = choose(bytes, content_type, tld);
    let (text, used, _had_errors) = encoding.decode(bytes);
    (text, used)
}

fn choose(bytes: &[u8], content_type: Option<&str>, tld: Option<&[u8]>) -> &'static Encoding {
    if let Some((enc, _)) = Encoding::for_bom(bytes) {
        return enc;
    }
    if let Some(enc) = content_type.and_then(charset_param).and_then(label) {
        return enc;
    }
    if let Some(enc) = meta_charset(&bytes[..bytes.len().min(PRESCAN)]) {
        return enc;
    }
    if std::str::from_utf8(bytes).is_ok() {
        return UTF_8;
    }
    let mut detector = chardetng::EncodingDetector::new(chardetng::Iso2022JpDetection::Deny);
    detector.feed(bytes, true);
    // Valid UTF-8 was taken above, so the guess is among legacy encodings.
    detector.guess(tld, chardetng::Utf8Detection::Deny)
}

/// An encoding label as HTML reads it: UTF-16 in a declaration means UTF-8 (the bytes were
/// already read as ASCII-compatible), x-user-defined means windows-1252.
fn label(name: &str) -> Option<&'static Encoding> {
    let enc = Encoding::for_label(name.trim().as_bytes())?;
    Some(
        if enc == encoding_rs::UTF_16BE || enc == encoding_rs::UTF_16LE {
            UTF_8
        } else if enc == encoding_rs::X_USER_DEFINED {
            WINDOWS_1252
        } else {
            enc
        },
    )
}

fn charset_param(content_type: &str) -> Option<&str> {
    content_type.split(';').skip(1).find_map(|param| {
        let (key, value) = param.split_once('=')?;
        key.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| value.trim().trim_matches(|c| c == '"' || c == '\''))
    })
}

/// A simplified HTML prescan: `<meta charset=X>` or `<meta http-equiv=content-type content="...;
/// charset=X">`.
fn meta_charset(head: &[u8]) -> Option<&'static Encoding> {
    let mut from = 0;
    while let Some(found) = memchr::memchr(b'<', &head[from..]) {
        let start = from + found + 1;
        if !head[start..]
            .get(..4)
            .is_some_and(|name| name.eq_ignore_ascii_case(b"meta"))
        {
            from = start;
            continue;
        }
        let start = start + 4;
        let end = memchr::memchr(b'>', &head[start..]).map_or(head.len(), |p| start + p);
        if let Some(enc) = charset_in_meta(&head[start..end]) {
            return Some(enc);
        }
        from = end;
    }
    None
}

fn charset_in_meta(tag: &[u8]) -> Option<&'static Encoding> {
    let pos = tag
        .windows(7)
        .position(|w| w.eq_ignore_ascii_case(b"charset"))?;
    let rest = tag[pos + 7..].trim_ascii_start();
    let rest = rest.strip_prefix(b"=")?.trim_ascii_start();
    let start = rest
        .iter()
        .position(|&b| b != b'"' && b != b'\'')
        .unwrap_or(rest.len());
    let rest = &rest[start..];
    let end = rest
        .iter()
        .position(|&b| matches!(b, b'"' | b'\'' | b';' | b'/' | b'>') || b.is_ascii_whitespace())
        .unwrap_or(rest.len());
    label(std::str::from_utf8(&rest[..end]).ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_charset_wins_over_meta() {
        let page = b"<meta charset=utf-8><p>caf\xe9</p>";
        let (text, enc) = decode(page, Some("text/html; charset=windows-1252"), None);
        assert_eq!(enc, WINDOWS_1252);
        assert!(text.contains("café"));
    }

    #[test]
    fn meta_charset_and_http_equiv_are_read() {
        let sjis = b"<meta http-equiv=\"Content-Type\" content=\"text/html; charset=Shift_JIS\"><p>\x93\xfa\x96\x7b</p>";
        let (text, enc) = decode(sjis, Some("text/html"), None);
        assert_eq!(enc, encoding_rs::SHIFT_JIS);
        assert!(text.contains("日本"));
        let (_, enc) = decode(b"<meta charset='windows-1252'>", None, None);
        assert_eq!(enc, WINDOWS_1252);
        // Any case, after other tags and a stray `<`.
        let (_, enc) = decode(
            b"<!doctype html><a < b><META name=x><Meta CharSet=\"Shift_JIS\">",
            None,
            None,
        );
        assert_eq!(enc, encoding_rs::SHIFT_JIS);
        // A document that ends inside `<me` has no declaration.
        assert_eq!(decode(b"<p>plain</p><me", None, None).1, UTF_8);
    }

    #[test]
    fn valid_utf8_is_borrowed_not_copied() {
        let page = "<p>café</p>".as_bytes();
        assert!(matches!(
            decode(page, Some("text/html; charset=utf-8"), None).0,
            Cow::Borrowed(_)
        ));
        assert!(matches!(
            decode(b"a\xffb", Some("text/html; charset=utf-8"), None).0,
            Cow::Owned(_)
        ));
    }

    #[test]
    fn bom_wins_and_invalid_bytes_become_replacement_characters() {
        let (text, enc) = decode(
            b"\xef\xbb\xbfok",
            Some("text/html; charset=windows-1252"),
            None,
        );
        assert_eq!((text.as_ref(), enc), ("ok", UTF_8));
        let (text, _) = decode(b"a\xffb", Some("text/html; charset=utf-8"), None);
        assert_eq!(text, "a\u{fffd}b");
    }

    #[test]
    fn undeclared_pages_are_utf8_when_valid_else_guessed() {
        assert_eq!(decode("é".as_bytes(), None, None).1, UTF_8);
        let (text, _) = decode(
            b"<p>Gr\xfc\xdfe aus M\xfcnchen, sch\xf6ne Stra\xdfe</p>",
            None,
            None,
        );
        assert!(text.contains("Grüße"), "{text}");
    }
}
