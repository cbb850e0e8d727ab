//! The pinning tunnel: https through a location's proxy names the address the network policy
//! checked, not the host.
//!
//! reqwest sends a proxy `CONNECT host:port` (a SOCKS proxy the host too), and the proxy
//! resolves the host with its own DNS, which may answer differently from ours (an internal zone
//! at the proxy's site, or a name rebound since we looked). So the plain fetcher points
//! reqwest's https traffic for a location at this small local proxy instead: it resolves the
//! host, refuses it unless every address is allowed, and opens the tunnel at the location's
//! proxy to that address ([`LocationProxy::tunnel`], whatever the proxy's scheme).
//! TLS inside still names the host (SNI, certificate), end to end between reqwest and the
//! site: the tunnel is passed through blind. It listens on 127.0.0.1 and takes only requests
//! carrying its own random credentials, so other local users cannot borrow the location's
//! proxy (or its credentials) through it.

use super::location_proxy::{LocationProxy, Tunnel};
use super::policy::NetworkPolicy;
use crate::fetch::proxying::{RequestHead, read_head};
use base64::Engine as _;
use std::hash::{BuildHasher, Hasher};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

/// Longest head read from either side, and how long reading it or connecting may take.
const MAX_HEAD: usize = 16 * 1024;
const WAIT: Duration = Duration::from_secs(10);
/// Tunnels open at once; reqwest's pool keeps far fewer.
const MAX_TUNNELS: usize = 256;

/// A pinning tunnel for one location's proxy. Cheap to clone; stops with its last clone.
#[derive(Debug, Clone)]
pub(crate) struct PinningTunnel {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    addr: SocketAddr,
    /// Taken by the first request, which starts the accept loop (a runtime is there then).
    listener: Mutex<Option<std::net::TcpListener>>,
    task: OnceLock<JoinHandle<()>>,
    /// The password reqwest proves itself with (user `wachet`).
    password: String,
    /// The `Proxy-Authorization` reqwest sends for `user`.
    expected_auth: String,
    upstream: LocationProxy,
    policy: Arc<NetworkPolicy>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(task) = self.task.get() {
            task.abort();
        }
    }
}

impl PinningTunnel {
    /// A tunnel toward the location's proxy `upstream`, bound now, serving from the first
    /// [`PinningTunnel::start`].
    pub fn new(upstream: LocationProxy, policy: Arc<NetworkPolicy>) -> std::io::Result<Self> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let password = random_hex();
        let expected_auth = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("wachet:{password}"))
        );
        Ok(PinningTunnel {
            inner: Arc::new(Inner {
                addr: listener.local_addr()?,
                listener: Mutex::new(Some(listener)),
                task: OnceLock::new(),
                password,
                expected_auth,
                upstream,
                policy,
            }),
        })
    }

    /// The proxy for reqwest's https requests, with the tunnel's credentials.
    pub fn proxy(&self) -> Result<reqwest::Proxy, reqwest::Error> {
        Ok(
            reqwest::Proxy::https(format!("http://{}", self.inner.addr))?
                .basic_auth("wachet", &self.inner.password),
        )
    }

    /// Starts serving, once; must run inside a tokio runtime.
    pub fn start(&self) {
        let Some(listener) = self.inner.listener.lock().ok().and_then(|mut l| l.take()) else {
            return;
        };
        let Ok(listener) = TcpListener::from_std(listener) else {
            return;
        };
        // Only the loop holds a weak reference, so dropping the fetcher ends it.
        let weak = Arc::downgrade(&self.inner);
        let task = tokio::spawn(async move {
            let permits = Arc::new(Semaphore::new(MAX_TUNNELS));
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    // Out of descriptors, say: give the tunnels open a moment to end.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                };
                let Some(inner) = weak.upgrade() else { return };
                let Ok(permit) = permits.clone().try_acquire_owned() else {
                    continue;
                };
                tokio::spawn(async move {
                    let _ = serve(stream, &inner).await;
                    drop(permit);
                });
            }
        });
        let _ = self.inner.task.set(task);
    }
}

async fn serve(mut client: TcpStream, inner: &Inner) -> std::io::Result<()> {
    let (head, _) = tokio::time::timeout(WAIT, read_head(&mut client, MAX_HEAD))
        .await
        .map_err(|_| std::io::Error::other("request head timed out"))??;
    let text = String::from_utf8_lossy(&head).into_owned();
    let request = RequestHead::parse(&text);
    let authorized = request
        .values("proxy-authorization")
        .any(|value| value == inner.expected_auth);
    if !authorized || !request.method.eq_ignore_ascii_case("CONNECT") {
        return answer(&mut client, "407 Proxy Authentication Required").await;
    }
    let Some((host, port)) = request.target.rsplit_once(':').and_then(|(h, p)| {
        Some((
            h.trim_start_matches('[').trim_end_matches(']'),
            p.parse().ok()?,
        ))
    }) else {
        return answer(&mut client, "400 Bad Request").await;
    };
    let Some(pinned) = pin(&inner.policy, host, port).await else {
        return answer(&mut client, "403 Forbidden").await;
    };
    let (mut server, early) = match inner
        .upstream
        .tunnel(&pinned.ip().to_string(), pinned.port())
        .await?
    {
        Tunnel::Open { stream, early } => (stream, early),
        Tunnel::Refused { answer, .. } => return client.write_all(&answer).await,
    };
    client
        .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        .await?;
    client.write_all(&early).await?;
    tokio::io::copy_bidirectional(&mut client, &mut server).await?;
    Ok(())
}

/// The address to tunnel to: the first of `host`'s, when the policy allows every one of them
/// (the proxy could have picked any); `None` when it refuses one, or the name does not resolve.
async fn pin(policy: &NetworkPolicy, host: &str, port: u16) -> Option<SocketAddr> {
    policy.check_origin(host, port).ok()?;
    let resolved: Vec<SocketAddr> =
        tokio::time::timeout(WAIT, tokio::net::lookup_host((host, port)))
            .await
            .ok()?
            .ok()?
            .collect();
    if resolved.iter().any(|a| policy.check(host, a.ip()).is_err()) {
        return None;
    }
    resolved.first().copied()
}

async fn answer(client: &mut TcpStream, status: &str) -> std::io::Result<()> {
    let response = format!("HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    client.write_all(response.as_bytes()).await
}

/// 128 bits from the OS's randomness (the keys std seeds its hash maps with), in hex.
fn random_hex() -> String {
    let state = std::collections::hash_map::RandomState::new();
    let word = |salt: u64| {
        let mut hasher = state.build_hasher();
        hasher.write_u64(salt);
        hasher.finish()
    };
    format!("{:016x}{:016x}", word(1), word(2))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    /// Another local user cannot borrow the tunnel, and a target the policy refuses is refused
    /// before the location's proxy hears of it (nothing listens there).
    #[tokio::test]
    async fn only_its_own_client_gets_a_tunnel_and_only_to_allowed_addresses() {
        let upstream = url::Url::parse("http://127.0.0.1:9").unwrap();
        let upstream = LocationProxy::new(&upstream, None).unwrap();
        let tunnel = PinningTunnel::new(upstream, Arc::new(NetworkPolicy::public_only())).unwrap();
        tunnel.start();
        let addr = tunnel.inner.addr;
        let ask = |head: String| async move {
            let mut stream = TcpStream::connect(addr).await.unwrap();
            stream.write_all(head.as_bytes()).await.unwrap();
            let mut answer = String::new();
            stream.read_to_string(&mut answer).await.unwrap();
            answer
        };
        let stranger = ask("CONNECT example.com:443 HTTP/1.1\r\n\r\n".into()).await;
        assert!(stranger.starts_with("HTTP/1.1 407"), "{stranger}");
        let auth = &tunnel.inner.expected_auth;
        let inside = ask(format!(
            "CONNECT localhost:443 HTTP/1.1\r\nProxy-Authorization: {auth}\r\n\r\n"
        ))
        .await;
        assert!(inside.starts_with("HTTP/1.1 403"), "{inside}");
    }

    #[test]
    fn credentials_differ_from_tunnel_to_tunnel() {
        assert_ne!(random_hex(), random_hex());
        assert_eq!(random_hex().len(), 32);
    }
}
