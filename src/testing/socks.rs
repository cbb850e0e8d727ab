//! A SOCKS5 proxy for tests: the stand-in for a location's `socks5://` proxy.
//!
//! It speaks the protocol's `CONNECT` (RFC 1928), with no authentication or, when built with
//! [`SocksProxyBuilder::credentials`], only with that user and password (RFC 1929). Like
//! [`super::proxy::ForwardProxy`] it resolves the names it is given itself, applies no policy,
//! has names of its own ([`SocksProxyBuilder::alias`]), and records every target it was asked
//! for.

use std::collections::HashMap;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

const WAIT: Duration = Duration::from_secs(10);

/// Builds a [`SocksProxy`].
#[derive(Debug, Default)]
pub struct SocksProxyBuilder {
    aliases: HashMap<String, SocketAddr>,
    credentials: Option<(Vec<u8>, Vec<u8>)>,
}

impl SocksProxyBuilder {
    /// Resolves `name` (any port) to `addr`, for this proxy only.
    pub fn alias(mut self, name: impl Into<String>, addr: SocketAddr) -> Self {
        self.aliases.insert(name.into().to_ascii_lowercase(), addr);
        self
    }

    /// Takes only clients that log in as `user` with `password`.
    pub fn credentials(mut self, user: &str, password: &str) -> Self {
        self.credentials = Some((user.as_bytes().to_vec(), password.as_bytes().to_vec()));
        self
    }

    /// Starts the proxy on a free port of 127.0.0.1.
    pub async fn start(self) -> std::io::Result<SocksProxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let seen = Arc::new(Mutex::new(Vec::new()));
        let shared = Arc::new(Shared {
            aliases: self.aliases,
            credentials: self.credentials,
            seen: seen.clone(),
        });
        // Aborting the task closes them all.
        let task = tokio::spawn(crate::fetch::proxying::serve_each(
            listener,
            move |stream| {
                let shared = shared.clone();
                async move {
                    let opened = tokio::time::timeout(WAIT, handshake(stream, &shared)).await;
                    if let Ok(Ok(Some((mut client, mut server)))) = opened {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                }
            },
        ));
        Ok(SocksProxy { addr, seen, task })
    }
}

/// A running SOCKS5 proxy; stops when dropped.
#[derive(Debug)]
pub struct SocksProxy {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<String>>>,
    task: JoinHandle<()>,
}

impl SocksProxy {
    /// A builder.
    pub fn builder() -> SocksProxyBuilder {
        SocksProxyBuilder::default()
    }

    /// Its URL with `scheme` (`socks5` or `socks5h`), and credentials when given.
    pub fn url(&self, scheme: &str, credentials: Option<(&str, &str)>) -> String {
        match credentials {
            Some((user, password)) => format!("{scheme}://{user}:{password}@{}", self.addr),
            None => format!("{scheme}://{}", self.addr),
        }
    }

    /// The targets asked for so far, as `host:port` (an address or a name, as the client sent
    /// it), including those refused for bad credentials (as `refused`).
    pub fn targets(&self) -> Vec<String> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

impl Drop for SocksProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

struct Shared {
    aliases: HashMap<String, SocketAddr>,
    credentials: Option<(Vec<u8>, Vec<u8>)>,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Shared {
    fn record(&self, what: String) {
        if let Ok(mut seen) = self.seen.lock() {
            seen.push(what);
        }
    }
}

/// The greeting, the login and the request; the two ends to relay between once the target is
/// connected.
async fn handshake(
    mut client: TcpStream,
    shared: &Shared,
) -> std::io::Result<Option<(TcpStream, TcpStream)>> {
    let mut head = [0u8; 2];
    client.read_exact(&mut head).await?;
    let mut methods = vec![0u8; usize::from(head[1])];
    client.read_exact(&mut methods).await?;
    if head[0] != 5 {
        return Ok(None);
    }
    let wanted = if shared.credentials.is_some() { 2 } else { 0 };
    if !methods.contains(&wanted) {
        client.write_all(&[5, 0xff]).await?;
        shared.record("refused: no acceptable method".into());
        return Ok(None);
    }
    client.write_all(&[5, wanted]).await?;
    if let Some((user, password)) = &shared.credentials {
        let mut version_len = [0u8; 2];
        client.read_exact(&mut version_len).await?;
        let mut given_user = vec![0u8; usize::from(version_len[1])];
        client.read_exact(&mut given_user).await?;
        let given_password = {
            let len = client.read_u8().await?;
            let mut p = vec![0u8; usize::from(len)];
            client.read_exact(&mut p).await?;
            p
        };
        if &given_user != user || &given_password != password {
            client.write_all(&[1, 1]).await?;
            shared.record("refused: bad credentials".into());
            return Ok(None);
        }
        client.write_all(&[1, 0]).await?;
    }
    let mut request = [0u8; 4];
    client.read_exact(&mut request).await?;
    let host = match request[3] {
        1 => {
            let mut ip = [0u8; 4];
            client.read_exact(&mut ip).await?;
            Ipv4Addr::from(ip).to_string()
        }
        4 => {
            let mut ip = [0u8; 16];
            client.read_exact(&mut ip).await?;
            Ipv6Addr::from(ip).to_string()
        }
        3 => {
            let len = client.read_u8().await?;
            let mut name = vec![0u8; usize::from(len)];
            client.read_exact(&mut name).await?;
            String::from_utf8_lossy(&name).into_owned()
        }
        _ => return Ok(None),
    };
    let port = client.read_u16().await?;
    shared.record(if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    });
    let connected = match shared.aliases.get(&host.to_ascii_lowercase()) {
        Some(addr) => TcpStream::connect(addr).await,
        None => TcpStream::connect((host.as_str(), port)).await,
    };
    match connected {
        Ok(server) => {
            client.write_all(&[5, 0, 0, 1, 0, 0, 0, 0, 0, 0]).await?;
            Ok(Some((client, server)))
        }
        Err(_) => {
            // Connection refused.
            client.write_all(&[5, 5, 0, 1, 0, 0, 0, 0, 0, 0]).await?;
            Ok(None)
        }
    }
}
