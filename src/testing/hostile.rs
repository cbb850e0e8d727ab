//! Hostile pages: what a careless or malicious site may serve to a monitoring service, for
//! tests that the engine stays within its bounds (time, memory, processes) and says what
//! happened. Each [`Hostile`] case is a [`Reply`] to put on a [`FixtureServer`];
//! [`HostileServer`] serves all of them at once, each under its own path.
//!
//! The rendered cases are a gzip bomb (1 GiB of text in about 7 MB), a 50 MB page, a script
//! growing its heap without end, one allocating ArrayBuffers without end, a `document.write`
//! loop, a script building a 100 MB DOM, and a page framing a `file:` URL.

use super::{FixtureServer, Reply};
use bytes::Bytes;

/// One hostile case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Hostile {
    /// A gzip-encoded page that decompresses to 1 GiB.
    GzipBomb,
    /// A 50 MB page.
    HugePage,
    /// A script that grows its JavaScript heap until it is stopped.
    HeapGrowth,
    /// A script that allocates (and touches) ArrayBuffers until it is stopped.
    ArrayBuffers,
    /// A script that calls `document.write` in a loop that never ends.
    DocumentWriteLoop,
    /// A script that builds a DOM of 100 MB of text.
    HugeDom,
    /// A page with an iframe of `file:///etc/passwd` (its own text is "hello").
    FileIframe,
}

impl Hostile {
    /// Every case, in the order above.
    pub const ALL: [Hostile; 7] = [
        Hostile::GzipBomb,
        Hostile::HugePage,
        Hostile::HeapGrowth,
        Hostile::ArrayBuffers,
        Hostile::DocumentWriteLoop,
        Hostile::HugeDom,
        Hostile::FileIframe,
    ];

    /// The path [`HostileServer`] serves the case under.
    pub fn path(self) -> &'static str {
        match self {
            Hostile::GzipBomb => "/gzip-bomb",
            Hostile::HugePage => "/huge-page",
            Hostile::HeapGrowth => "/heap-growth",
            Hostile::ArrayBuffers => "/array-buffers",
            Hostile::DocumentWriteLoop => "/document-write-loop",
            Hostile::HugeDom => "/huge-dom",
            Hostile::FileIframe => "/file-iframe",
        }
    }

    /// The reply that serves the case. The large ones are built here (the bomb in well under a
    /// second, the 50 MB page by filling memory).
    pub fn reply(self) -> Reply {
        match self {
            Hostile::GzipBomb => Reply::html(gzip_bomb(1 << 30)).header("content-encoding", "gzip"),
            Hostile::HugePage => {
                let mut page = b"<!doctype html><title>huge</title><p>".to_vec();
                page.resize(page.len() + 50 * 1024 * 1024, b'a');
                Reply::html(page)
            }
            Hostile::HeapGrowth => Reply::html(
                "<!doctype html><p>heap</p><script>\
                 const kept = []; for (;;) kept.push(new Array(100000).fill(kept.length));\
                 </script>",
            ),
            Hostile::ArrayBuffers => Reply::html(
                "<!doctype html><p>buffers</p><script>\
                 const kept = [];\
                 for (;;) { const b = new ArrayBuffer(32 << 20); new Uint8Array(b).fill(1); kept.push(b); }\
                 </script>",
            ),
            Hostile::DocumentWriteLoop => Reply::html(
                "<!doctype html><p>write</p><script>\
                 for (;;) document.write('<p>' + 'a'.repeat(1000) + '</p>');\
                 </script>",
            ),
            Hostile::HugeDom => Reply::html(
                "<!doctype html><p>dom</p><script>\
                 const line = '<p>' + 'a'.repeat(1000) + '</p>';\
                 const block = line.repeat(1000);\
                 for (let i = 0; i < 100; i++) document.body.insertAdjacentHTML('beforeend', block);\
                 </script>",
            ),
            Hostile::FileIframe => Reply::html(
                "<!doctype html><p>hello</p><iframe src=\"file:///etc/passwd\"></iframe>",
            ),
        }
    }
}

/// A fixture server with every [`Hostile`] case at its [`Hostile::path`], plus `/` linking
/// to each (for crawls) and `/ok`, a harmless page whose text is "fine".
pub struct HostileServer {
    server: FixtureServer,
}

impl HostileServer {
    /// Starts the server on 127.0.0.1.
    pub async fn start() -> std::io::Result<HostileServer> {
        let links: String = Hostile::ALL
            .iter()
            .map(|case| format!("<a href=\"{}\">{:?}</a>\n", case.path(), case))
            .collect();
        let mut builder = FixtureServer::builder()
            .page(
                "/",
                format!("<!doctype html><a href=\"/ok\">ok</a>\n{links}"),
            )
            .page("/ok", "<!doctype html><p>fine</p>");
        for case in Hostile::ALL {
            builder = builder.reply(case.path(), case.reply());
        }
        Ok(HostileServer {
            server: builder.start().await?,
        })
    }

    /// The URL of `case`.
    pub fn url(&self, case: Hostile) -> String {
        self.server.url(case.path())
    }

    /// The fixture server underneath (for its other pages and its request log).
    pub fn server(&self) -> &FixtureServer {
        &self.server
    }
}

/// A gzip stream of an HTML prefix followed by `size` letters `a`: one literal, then repeats
/// of the longest match (258 bytes at distance 1) in a fixed-Huffman deflate block, 13 bits
/// each.
pub fn gzip_bomb(size: u64) -> Bytes {
    const PREFIX: &[u8] = b"<!doctype html><title>bomb</title><p>";
    let mut bits = BitWriter::default();
    bits.push(1, 1); // the last block
    bits.push(1, 2); // fixed Huffman codes
    let literal = |bits: &mut BitWriter, byte: u8| {
        if byte < 144 {
            bits.push_code(0x30 + u32::from(byte), 8);
        } else {
            bits.push_code(0x190 + u32::from(byte) - 144, 9);
        }
    };
    for &byte in PREFIX {
        literal(&mut bits, byte);
    }
    if size > 0 {
        literal(&mut bits, b'a');
        let repeats = (size - 1) / 258;
        for _ in 0..repeats {
            bits.push_code(0xC5, 8); // length 258 (code 285)
            bits.push_code(0, 5); // distance 1
        }
        for _ in 0..(size - 1) % 258 {
            literal(&mut bits, b'a');
        }
    }
    bits.push_code(0, 7); // end of block
    let deflate = bits.finish();

    let crc = crc32_combine(crc32(PREFIX), crc32_repeated(b'a', size), size);
    let mut out = Vec::with_capacity(deflate.len() + 18);
    out.extend_from_slice(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255]);
    out.extend_from_slice(&deflate);
    out.extend_from_slice(&crc.to_le_bytes());
    let total = PREFIX.len() as u64 + size;
    out.extend_from_slice(&(total as u32).to_le_bytes());
    Bytes::from(out)
}

/// Bits written least significant first, as deflate packs them.
#[derive(Default)]
struct BitWriter {
    out: Vec<u8>,
    acc: u64,
    count: u32,
}

impl BitWriter {
    fn push(&mut self, value: u32, bits: u32) {
        self.acc |= u64::from(value) << self.count;
        self.count += bits;
        while self.count >= 8 {
            self.out.push(self.acc as u8);
            self.acc >>= 8;
            self.count -= 8;
        }
    }

    /// A Huffman code, which deflate stores most significant bit first.
    fn push_code(&mut self, code: u32, bits: u32) {
        let reversed = code.reverse_bits() >> (32 - bits);
        self.push(reversed, bits);
    }

    fn finish(mut self) -> Vec<u8> {
        if self.count > 0 {
            self.out.push(self.acc as u8);
        }
        self.out
    }
}

const CRC_POLY: u32 = 0xedb8_8320;

fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in data {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ CRC_POLY
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// a(x) * b(x) modulo the CRC polynomial (bit-reflected, as zlib's `multmodp`).
fn mult_mod_p(a: u32, mut b: u32) -> u32 {
    let mut m = 1u32 << 31;
    let mut p = 0u32;
    loop {
        if a & m != 0 {
            p ^= b;
            if a & (m - 1) == 0 {
                break;
            }
        }
        m >>= 1;
        if m == 0 {
            break;
        }
        b = if b & 1 != 0 {
            (b >> 1) ^ CRC_POLY
        } else {
            b >> 1
        };
    }
    p
}

/// x^(8 * bytes) modulo the CRC polynomial.
fn x_pow_bytes(bytes: u64) -> u32 {
    let mut result = 1u32 << 31; // x^0
    let mut square = 1u32 << 30; // x^1
    // x^(2^3) = x^8 is one byte.
    for _ in 0..3 {
        square = mult_mod_p(square, square);
    }
    let mut n = bytes;
    while n != 0 {
        if n & 1 != 0 {
            result = mult_mod_p(square, result);
        }
        square = mult_mod_p(square, square);
        n >>= 1;
    }
    result
}

/// The CRC of A followed by B, from their CRCs and B's length.
fn crc32_combine(crc_a: u32, crc_b: u32, len_b: u64) -> u32 {
    mult_mod_p(x_pow_bytes(len_b), crc_a) ^ crc_b
}

/// The CRC of `count` copies of `byte`, by doubling.
fn crc32_repeated(byte: u8, count: u64) -> u32 {
    let mut result = crc32(&[]);
    let mut result_len = 0u64;
    let mut block = crc32(&[byte]);
    let mut block_len = 1u64;
    let mut n = count;
    while n != 0 {
        if n & 1 != 0 {
            result = crc32_combine(result, block, block_len);
            result_len += block_len;
        }
        n >>= 1;
        if n != 0 {
            block = crc32_combine(block, block, block_len);
            block_len *= 2;
        }
    }
    debug_assert_eq!(result_len, count);
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn the_bomb_is_a_valid_gzip_stream() {
        for size in [0u64, 1, 257, 258, 259, 1_000_003] {
            let bomb = gzip_bomb(size);
            let mut decoded = Vec::new();
            flate2::read::GzDecoder::new(&bomb[..])
                .read_to_end(&mut decoded)
                .unwrap();
            let prefix = b"<!doctype html><title>bomb</title><p>";
            assert_eq!(&decoded[..prefix.len()], prefix);
            assert_eq!(decoded.len() as u64, prefix.len() as u64 + size);
            assert!(decoded[prefix.len()..].iter().all(|b| *b == b'a'));
        }
        let text = b"hello, world";
        assert_eq!(
            crc32_combine(crc32(&text[..5]), crc32(&text[5..]), 7),
            crc32(text)
        );
    }
}
