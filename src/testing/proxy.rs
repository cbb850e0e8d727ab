//! A forwarding HTTP proxy for tests: the stand-in for a location's proxy (`--proxy us=URL`).
//!
//! Like a real one it takes absolute-form requests (`GET http://host/path`) and `CONNECT
//! host:port`, resolves the names it is given itself and connects wherever they point,
//! loopback included: it applies no policy, so whatever it reaches is what the engine let
//! through. [`ForwardProxyBuilder::alias`] gives it names of its own, which only it can resolve
//! (an internal DNS zone at the proxy's site). Every request line it received is recorded.

use crate::fetch::proxying::{RequestHead, read_head, serve_each};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// Longest request head read, and how long reading it or connecting may take.
const MAX_HEAD: usize = 16 * 1024;
const WAIT: Duration = Duration::from_secs(10);

/// Builds a [`ForwardProxy`].
#[derive(Debug, Default)]
pub struct ForwardProxyBuilder {
    aliases: HashMap<String, SocketAddr>,
    credentials: Option<String>,
}

impl ForwardProxyBuilder {
    /// Resolves `name` (any port) to `addr`, for this proxy only.
    pub fn alias(mut self, name: impl Into<String>, addr: SocketAddr) -> Self {
        self.aliases.insert(name.into().to_ascii_lowercase(), addr);
        self
    }

    /// Asks every request for these credentials (Basic `Proxy-Authorization`), answering 407
    /// to a request without them, as a proxy with accounts does.
    pub fn credentials(mut self, user: &str, password: &str) -> Self {
        use base64::Engine as _;
        let encoded =
            base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        self.credentials = Some(format!("Basic {encoded}"));
        self
    }

    /// Starts the proxy on a free port of 127.0.0.1.
    pub async fn start(self) -> std::io::Result<ForwardProxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let seen = Arc::new(Mutex::new(Vec::new()));
        let shared = Arc::new(Shared {
            aliases: self.aliases,
            credentials: self.credentials,
            seen: seen.clone(),
        });
        // Aborting the task closes them all.
        let task = tokio::spawn(serve_each(listener, move |stream| {
            let shared = shared.clone();
            async move {
                let _ = serve(stream, &shared).await;
            }
        }));
        Ok(ForwardProxy { addr, seen, task })
    }
}

/// A running forwarding proxy; stops when dropped.
#[derive(Debug)]
pub struct ForwardProxy {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<String>>>,
    task: JoinHandle<()>,
}

impl ForwardProxy {
    /// A builder.
    pub fn builder() -> ForwardProxyBuilder {
        ForwardProxyBuilder::default()
    }

    /// Its URL, `http://127.0.0.1:PORT`, for [`EngineBuilder::proxy`](crate::EngineBuilder::proxy).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The request lines received so far (`CONNECT 1.2.3.4:443 HTTP/1.1`,
    /// `GET http://host/path HTTP/1.1`).
    pub fn requests(&self) -> Vec<String> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

impl Drop for ForwardProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

struct Shared {
    aliases: HashMap<String, SocketAddr>,
    /// The `Proxy-Authorization` every request must carry, if any.
    credentials: Option<String>,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Shared {
    async fn connect(&self, host: &str, port: u16) -> std::io::Result<TcpStream> {
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let connecting = async {
            match self.aliases.get(&bare.to_ascii_lowercase()) {
                Some(addr) => TcpStream::connect(addr).await,
                None => TcpStream::connect((bare, port)).await,
            }
        };
        tokio::time::timeout(WAIT, connecting)
            .await
            .map_err(|_| std::io::Error::other("connect timed out"))?
    }
}

async fn serve(mut client: TcpStream, shared: &Shared) -> std::io::Result<()> {
    let (head, rest) = tokio::time::timeout(WAIT, read_head(&mut client, MAX_HEAD))
        .await
        .map_err(|_| std::io::Error::other("request head timed out"))??;
    let text = String::from_utf8_lossy(&head).into_owned();
    if let Ok(mut seen) = shared.seen.lock() {
        seen.push(text.split("\r\n").next().unwrap_or("").to_string());
    }
    let request = RequestHead::parse(&text);
    if let Some(expected) = &shared.credentials
        && request.header("proxy-authorization") != Some(expected.as_str())
    {
        return client
            .write_all(
                b"HTTP/1.1 407 Proxy Authentication Required\r\n\
                  Proxy-Authenticate: Basic realm=\"test\"\r\nContent-Length: 0\r\n\
                  Connection: close\r\n\r\n",
            )
            .await;
    }
    let (method, target, version) = (request.method, request.target, request.version);
    if method.eq_ignore_ascii_case("CONNECT") {
        let (host, port) = request.authority();
        let Ok(mut server) = shared.connect(host, port).await else {
            return client
                .write_all(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
                .await;
        };
        client
            .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            .await?;
        server.write_all(&rest).await?;
        tokio::io::copy_bidirectional(&mut client, &mut server).await?;
        return Ok(());
    }
    let Ok(url) = url::Url::parse(target) else {
        return client
            .write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
            .await;
    };
    let host = url.host_str().unwrap_or("").to_string();
    let port = url.port_or_known_default().unwrap_or(80);
    let Ok(mut server) = shared.connect(&host, port).await else {
        return client
            .write_all(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            .await;
    };
    let mut path = url.path().to_string();
    if let Some(query) = url.query() {
        path.push('?');
        path.push_str(query);
    }
    // One request per connection: the server closes after its answer, which ends the relay.
    let mut forwarded = format!("{method} {path} {version}\r\n");
    for header in &request.headers {
        let name = header.split(':').next().unwrap_or("").trim();
        if ![
            "connection",
            "proxy-connection",
            "keep-alive",
            "proxy-authorization",
        ]
        .iter()
        .any(|h| name.eq_ignore_ascii_case(h))
        {
            forwarded.push_str(header);
            forwarded.push_str("\r\n");
        }
    }
    forwarded.push_str("Connection: close\r\n\r\n");
    server.write_all(forwarded.as_bytes()).await?;
    server.write_all(&rest).await?;
    tokio::io::copy_bidirectional(&mut client, &mut server).await?;
    Ok(())
}
