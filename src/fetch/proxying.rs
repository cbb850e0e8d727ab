//! What the engine's proxies (the pinning tunnel, the render egress) and the test proxy share:
//! reading an HTTP/1 head (a request's or a response's) off a stream, parsing a request's, and
//! serving connections.
// Some of it serves only the render egress (feature `chrome`), and the test proxy.
#![cfg_attr(not(feature = "chrome"), allow(dead_code))]

use tokio::io::{AsyncRead, AsyncReadExt};

/// Serves each connection `listener` accepts with `serve`, for ever. The connections live in
/// the loop's own set, so aborting the task that runs it closes them all.
pub(crate) async fn serve_each<F, Fut>(listener: tokio::net::TcpListener, mut serve: F)
where
    F: FnMut(tokio::net::TcpStream) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let mut connections = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                connections.spawn(serve(stream));
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

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

/// What a proxy needs from a request head.
pub(crate) struct RequestHead<'a> {
    pub(crate) method: &'a str,
    pub(crate) target: &'a str,
    pub(crate) version: &'a str,
    /// The header lines, as sent.
    pub(crate) headers: Vec<&'a str>,
}

impl<'a> RequestHead<'a> {
    pub(crate) fn parse(text: &'a str) -> Self {
        let mut lines = text.split("\r\n");
        let mut parts = lines.next().unwrap_or("").split(' ');
        RequestHead {
            method: parts.next().unwrap_or(""),
            target: parts.next().unwrap_or(""),
            version: parts.next().unwrap_or("HTTP/1.1"),
            headers: lines.filter(|l| !l.is_empty()).collect(),
        }
    }

    /// The values of the headers `name`, in order.
    pub(crate) fn values(&self, name: &str) -> impl Iterator<Item = &'a str> {
        self.headers.iter().filter_map(move |line| {
            let (n, value) = line.split_once(':')?;
            n.trim().eq_ignore_ascii_case(name).then(|| value.trim())
        })
    }

    /// The value of the header `name`, if it is there.
    pub(crate) fn header(&self, name: &str) -> Option<&'a str> {
        self.values(name).next()
    }

    /// The host and port a `CONNECT` names (443 when it names none or no number).
    pub(crate) fn authority(&self) -> (&'a str, u16) {
        match self.target.rsplit_once(':') {
            Some((host, port)) => (host, port.parse().unwrap_or(443)),
            None => (self.target, 443),
        }
    }
}
