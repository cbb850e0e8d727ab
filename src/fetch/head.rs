//! Reading an HTTP/1 head (a request's or a response's) off a stream, for the proxies of the
//! engine and of its tests.

use tokio::io::{AsyncRead, AsyncReadExt};

/// Reads up to the end of a head of at most `max` bytes; returns the head and any bytes read
/// past it.
pub(crate) async fn read_head(
    stream: &mut (impl AsyncRead + Unpin),
    max: usize,
) -> std::io::Result<(Vec<u8>, Vec<u8>)> {
    read_head_after(stream, Vec::new(), max).await
}

/// Reads up to the end of a head that starts with `buf` (bytes already read).
pub(crate) async fn read_head_after(
    stream: &mut (impl AsyncRead + Unpin),
    mut buf: Vec<u8>,
    max: usize,
) -> std::io::Result<(Vec<u8>, Vec<u8>)> {
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buf.split_off(end + 4);
            return Ok((buf, rest));
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::Error::other(
                "connection closed before the request head",
            ));
        }
        buf.extend_from_slice(&chunk[..n]);
        if buf.len() > max {
            return Err(std::io::Error::other("request head too large"));
        }
    }
}
