//! Content codings: the body as the server encoded it, decoded as browsers decode it. Every
//! coding the `Content-Encoding` header lists is undone, last applied first, so `gzip, gzip` is
//! two layers; `deflate` is zlib-wrapped as the standard says or raw, as servers often send it
//! and browsers accept; `x-gzip` is gzip. The output is capped at the body limit while it is
//! produced, so a small bomb never becomes a large buffer. A coding wachet does not know leaves
//! the body as it came, as a browser shows it.

use super::FetchError;
use bytes::Bytes;
use http::header::{CONTENT_ENCODING, HeaderMap};
use std::io::Read;

/// What the fetcher tells servers it can decode.
pub(crate) const ACCEPT_ENCODING: &str = "gzip, deflate, br";

/// The codings of a response, in the order they were applied (all `Content-Encoding` headers,
/// comma-separated lists included), without `identity`.
pub(crate) fn codings(headers: &HeaderMap) -> Vec<String> {
    headers
        .get_all(CONTENT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|c| c.trim().to_ascii_lowercase())
        .filter(|c| !c.is_empty() && c != "identity")
        .collect()
}

/// Undoes `codings` (as [`codings`] lists them) on `body`, refusing output over `limit` bytes.
pub(crate) fn decode(body: Bytes, codings: &[String], limit: u64) -> Result<Bytes, FetchError> {
    let mut body = body;
    for coding in codings.iter().rev() {
        body = match coding.as_str() {
            "gzip" | "x-gzip" => {
                read_capped(flate2::read::MultiGzDecoder::new(&body[..]), limit, coding)?
            }
            "deflate" => inflate(&body, limit)?,
            "br" => read_capped(
                brotli_decompressor::Decompressor::new(&body[..], 8 * 1024),
                limit,
                coding,
            )?,
            // Unknown to us and not asked for: shown as it came, as a browser would.
            _ => return Ok(body),
        };
    }
    Ok(body)
}

/// `deflate` as browsers read it: a zlib stream when the first two bytes are a zlib header,
/// else raw deflate.
fn inflate(body: &[u8], limit: u64) -> Result<Bytes, FetchError> {
    let zlib = body.len() >= 2
        && body[0] & 0x0f == 8
        && (u16::from(body[0]) << 8 | u16::from(body[1])) % 31 == 0;
    if zlib {
        read_capped(flate2::read::ZlibDecoder::new(body), limit, "deflate")
    } else {
        read_capped(flate2::read::DeflateDecoder::new(body), limit, "deflate")
    }
}

fn read_capped(reader: impl Read, limit: u64, coding: &str) -> Result<Bytes, FetchError> {
    let mut out = Vec::new();
    reader
        .take(limit.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|e| FetchError::Body(format!("could not decode its {coding} content: {e}")))?;
    if out.len() as u64 > limit {
        return Err(FetchError::TooLarge { limit });
    }
    Ok(Bytes::from(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::header::HeaderValue;
    use std::io::Write;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn codings_of(values: &[&str]) -> Vec<String> {
        let mut headers = HeaderMap::new();
        for v in values {
            headers.append(CONTENT_ENCODING, HeaderValue::from_str(v).unwrap());
        }
        codings(&headers)
    }

    #[test]
    fn layers_are_undone_last_first() {
        let twice = gzip(&gzip(b"<p>hello</p>"));
        let codings = codings_of(&["gzip, GZIP"]);
        assert_eq!(codings, ["gzip", "gzip"]);
        let out = decode(Bytes::from(twice.clone()), &codings, 1000).unwrap();
        assert_eq!(&out[..], b"<p>hello</p>");
        // Two header lines are the same as one list.
        let out = decode(Bytes::from(twice), &codings_of(&["gzip", "gzip"]), 1000).unwrap();
        assert_eq!(&out[..], b"<p>hello</p>");
    }

    #[test]
    fn deflate_is_read_with_or_without_its_zlib_wrapper() {
        let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        zlib.write_all(b"wrapped").unwrap();
        let mut raw = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
        raw.write_all(b"raw").unwrap();
        let d = codings_of(&["deflate"]);
        let out = decode(Bytes::from(zlib.finish().unwrap()), &d, 100).unwrap();
        assert_eq!(&out[..], b"wrapped");
        let out = decode(Bytes::from(raw.finish().unwrap()), &d, 100).unwrap();
        assert_eq!(&out[..], b"raw");
    }

    #[test]
    fn output_past_the_limit_is_refused_and_garbage_is_an_error() {
        let bomb = gzip(&vec![b'a'; 1 << 20]);
        let err = decode(Bytes::from(bomb), &codings_of(&["gzip"]), 1000).unwrap_err();
        assert_eq!(err, FetchError::TooLarge { limit: 1000 });
        let err = decode(
            Bytes::from_static(b"not gzip"),
            &codings_of(&["gzip"]),
            1000,
        );
        assert!(
            err.unwrap_err()
                .to_string()
                .contains("could not decode its gzip content"),
            "a corrupt body says which coding failed"
        );
        let same = decode(Bytes::from_static(b"as is"), &codings_of(&["identity"]), 10);
        assert_eq!(&same.unwrap()[..], b"as is");
        let unknown = decode(Bytes::from_static(b"as is"), &codings_of(&["compress"]), 10);
        assert_eq!(&unknown.unwrap()[..], b"as is");
    }
}
