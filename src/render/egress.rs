//! The egress proxy: every request a rendering browser context makes (documents, subresources,
//! redirects, script-initiated fetches) leaves through this small HTTP proxy, which applies the
//! engine's [`NetworkPolicy`] to the addresses it actually connects to and, for a monitor with
//! a location, forwards to that location's upstream proxy. One runs per render session, so its
//! refusals belong to one check.
//!
//! It understands `CONNECT host:port` (tunnels, for https and wss) and absolute-form requests
//! (plain http, sent on with `Connection: close` so one connection serves one target).

use crate::fetch::{NetworkPolicy, Refused};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};
use url::Url;

/// Longest request head accepted from the browser.
const MAX_HEAD: usize = 64 * 1024;
/// Time allowed to connect upstream or to read a request head.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A running egress proxy; it stops (with its tunnels) when dropped.
pub(crate) struct Egress {
    addr: SocketAddr,
    refused: Arc<Mutex<Option<Refused>>>,
    task: JoinHandle<()>,
}

impl Egress {
    /// Starts a proxy on 127.0.0.1 applying `policy`, forwarding to `upstream` when given.
    pub async fn start(policy: Arc<NetworkPolicy>, upstream: Option<Url>) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let refused = Arc::new(Mutex::new(None));
        let shared = Arc::new(Shared {
            policy,
            upstream,
            refused: refused.clone(),
        });
        let task = tokio::spawn(async move {
            // Connections live in this set, so aborting the task closes every tunnel.
            let mut connections = JoinSet::new();
            loop {
                tokio::select! {
                    accepted = listener.accept() => {
                        let Ok((stream, _)) = accepted else { continue };
                        let shared = shared.clone();
                        connections.spawn(async move {
                            let _ = serve(stream, &shared).await;
                        });
                    }
                    Some(_) = connections.join_next(), if !connections.is_empty() => {}
                }
            }
        });
        Ok(Egress {
            addr,
            refused,
            task,
        })
    }

    /// The proxy URL for a browser context.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The most recent refusal, to explain a failed navigation.
    pub fn last_refusal(&self) -> Option<Refused> {
        self.refused.lock().ok().and_then(|r| r.clone())
    }
}

impl Drop for Egress {
    fn drop(&mut self) {
        self.task.abort();
    }
}

struct Shared {
    policy: Arc<NetworkPolicy>,
    upstream: Option<Url>,
    refused: Arc<Mutex<Option<Refused>>>,
}

async fn serve(mut client: TcpStream, shared: &Shared) -> std::io::Result<()> {
    let (head, rest) = tokio::time::timeout(CONNECT_TIMEOUT, read_head(&mut client))
        .await
        .map_err(|_| std::io::Error::other("request head timed out"))??;
    let text = String::from_utf8_lossy(&head).into_owned();
    let mut lines = text.split("\r\n");
    let request_line = lines.next().unwrap_or("");
    let mut parts = request_line.split(' ');
    let (method, target, version) = (
        parts.next().unwrap_or(""),
        parts.next().unwrap_or(""),
        parts.next().unwrap_or("HTTP/1.1"),
    );
    let connect = method.eq_ignore_ascii_case("CONNECT");
    let (host, port, origin_form) = if connect {
        match target.rsplit_once(':') {
            Some((host, port)) => (host.to_string(), port.parse().unwrap_or(443), String::new()),
            None => (target.to_string(), 443, String::new()),
        }
    } else {
        match Url::parse(target) {
            Ok(url) if url.scheme() == "http" => {
                let mut path = url.path().to_string();
                if let Some(q) = url.query() {
                    path.push('?');
                    path.push_str(q);
                }
                (
                    url.host_str().unwrap_or("").to_string(),
                    url.port_or_known_default().unwrap_or(80),
                    path,
                )
            }
            _ => return respond(&mut client, 400, "only http and CONNECT are proxied").await,
        }
    };
    let bare_host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();

    let allowed = match allowed_addrs(&shared.policy, &bare_host, port).await {
        Ok(addrs) => addrs,
        Err(refusal) => {
            let message = refusal.to_string();
            if let Ok(mut slot) = shared.refused.lock() {
                *slot = Some(refusal);
            }
            return respond(&mut client, 403, &message).await;
        }
    };

    let mut server = match &shared.upstream {
        Some(proxy) => {
            let proxy_addr = format!(
                "{}:{}",
                proxy.host_str().unwrap_or(""),
                proxy.port_or_known_default().unwrap_or(80)
            );
            connect_any(&[proxy_addr]).await?
        }
        None => connect_any(&allowed).await?,
    };

    if connect && shared.upstream.is_none() {
        client
            .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            .await?;
    } else if connect {
        // The upstream proxy answers the CONNECT itself.
        server.write_all(&head).await?;
    } else {
        let mut out = if shared.upstream.is_some() {
            format!("{method} {target} {version}\r\n")
        } else {
            format!("{method} {origin_form} {version}\r\n")
        };
        for line in lines {
            if line.is_empty() {
                continue;
            }
            let name = line.split(':').next().unwrap_or("").trim();
            if [
                "proxy-connection",
                "connection",
                "keep-alive",
                "proxy-authorization",
            ]
            .iter()
            .any(|h| name.eq_ignore_ascii_case(h))
            {
                continue;
            }
            out.push_str(line);
            out.push_str("\r\n");
        }
        out.push_str("Connection: close\r\n\r\n");
        server.write_all(out.as_bytes()).await?;
    }
    server.write_all(&rest).await?;
    tokio::io::copy_bidirectional(&mut client, &mut server).await?;
    Ok(())
}

/// The addresses of `host` the policy allows; a refusal when none is left.
async fn allowed_addrs(
    policy: &NetworkPolicy,
    host: &str,
    port: u16,
) -> Result<Vec<String>, Refused> {
    let resolved: Vec<SocketAddr> =
        match tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::lookup_host((host, port))).await {
            Ok(Ok(addrs)) => addrs.collect(),
            _ => Vec::new(),
        };
    let mut refusal = None;
    let mut allowed = Vec::new();
    for addr in resolved {
        match policy.check(host, addr.ip()) {
            Ok(()) => allowed.push(addr.to_string()),
            Err(r) => {
                refusal.get_or_insert(r);
            }
        }
    }
    match (allowed.is_empty(), refusal) {
        (true, Some(r)) => Err(r),
        // Unresolvable: let the connect fail as a plain network error.
        _ => Ok(allowed),
    }
}

async fn connect_any(addrs: &[String]) -> std::io::Result<TcpStream> {
    let mut last = std::io::Error::other("no address to connect to");
    for addr in addrs {
        match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr.as_str())).await {
            Ok(Ok(stream)) => return Ok(stream),
            Ok(Err(e)) => last = e,
            Err(_) => last = std::io::Error::other("connect timed out"),
        }
    }
    Err(last)
}

/// Reads up to the end of the request head; returns the head and any bytes read past it.
async fn read_head(stream: &mut TcpStream) -> std::io::Result<(Vec<u8>, Vec<u8>)> {
    let mut buf = Vec::with_capacity(2048);
    let mut chunk = [0u8; 4096];
    loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::Error::other(
                "connection closed before the request head",
            ));
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buf.split_off(end + 4);
            return Ok((buf, rest));
        }
        if buf.len() > MAX_HEAD {
            return Err(std::io::Error::other("request head too large"));
        }
    }
}

async fn respond(client: &mut TcpStream, status: u16, message: &str) -> std::io::Result<()> {
    let reason = if status == 403 {
        "Forbidden"
    } else {
        "Bad Request"
    };
    let response = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{message}",
        message.len()
    );
    client.write_all(response.as_bytes()).await
}
