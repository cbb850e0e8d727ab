//! The API's connections, from accept to close: how many may be open (in all, and per client
//! network: an IPv4 address, an IPv6 /64), and how long each may take to send a request head or
//! sit idle, so slow or greedy clients cannot hold the service's sockets for ever. Connections
//! over a bound are closed as soon as they are accepted. Each is served by hyper's HTTP/1 with a
//! watchdog that closes it past a limit, and drained gracefully on shutdown. How long a request
//! body may take is the body extractor's limit (`api::body`), set from here too.

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

/// Longest a request body may take to arrive (`--body-read-timeout`), for the extractors of
/// both frontends; set by the router as a request extension, [`DEFAULT_BODY_READ_TIMEOUT`]
/// without it.
#[derive(Debug, Clone, Copy)]
pub struct BodyReadTimeout(pub std::time::Duration);

/// The body read timeout of a router that sets none.
pub const DEFAULT_BODY_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tower::Service;

/// Limits on the API's connections.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionSettings {
    /// Longest a request head may take from its first byte to its last.
    pub header_read_timeout: Duration,
    /// Longest a request body may take to arrive (answered 408).
    pub body_read_timeout: Duration,
    /// Longest a connection may stay without a byte moving while no request is handled: a
    /// kept-alive connection waiting for its next request, or a client not reading its answer.
    pub idle_timeout: Duration,
    /// Most connections open at once.
    pub max_connections: usize,
    /// Most connections open at once from one client network (an IPv4 address, an IPv6 /64).
    pub max_connections_per_client: usize,
}

impl Default for ConnectionSettings {
    fn default() -> Self {
        ConnectionSettings {
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(60),
            max_connections: 4096,
            max_connections_per_client: 256,
        }
    }
}

/// Serves `router` on `listener` until `stop` turns true, then lets the open connections finish
/// their requests in flight (closing idle ones at once) and returns when all are closed.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    settings: ConnectionSettings,
    mut stop: watch::Receiver<bool>,
) -> std::io::Result<()> {
    let settings = Arc::new(settings);
    let open = Arc::new(Open::default());
    // Each connection holds a receiver; `closed()` tells when the last one has ended.
    let (alive, _) = watch::channel(());
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = stop.wait_for(|stop| *stop) => break,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(err) => {
                // Out of file descriptors, most likely: wait for connections to close rather
                // than spin on the error.
                tracing::warn!(%err, "cannot accept a connection");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Some(admitted) = open.admit(peer.ip(), &settings) else {
            tracing::debug!(%peer, "connection refused: too many open");
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let connection = connection(stream, peer, router.clone(), settings.clone(), stop.clone());
        let held = alive.subscribe();
        tokio::spawn(async move {
            connection.await;
            drop(admitted);
            drop(held);
        });
    }
    drop(listener);
    alive.closed().await;
    Ok(())
}

/// The network a client counts in: its IPv4 address, or the /64 of its IPv6 address (one
/// subscriber's allocation, where a single host may use any of 2^64 addresses).
fn client_network(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let prefix = u128::from(v6) & !((1u128 << 64) - 1);
                IpAddr::V6(Ipv6Addr::from(prefix))
            }
        },
    }
}

/// Open connections, in all and per client network.
#[derive(Default)]
struct Open {
    total: AtomicUsize,
    per_client: Mutex<HashMap<IpAddr, usize>>,
}

/// One admitted connection; dropping it frees its place.
struct Admitted {
    open: Arc<Open>,
    network: IpAddr,
}

impl Open {
    fn admit(self: &Arc<Self>, ip: IpAddr, settings: &ConnectionSettings) -> Option<Admitted> {
        let network = client_network(ip);
        let mut per_client = self.per_client.lock().ok()?;
        if self.total.load(Ordering::Relaxed) >= settings.max_connections {
            return None;
        }
        let count = per_client.entry(network).or_insert(0);
        if *count >= settings.max_connections_per_client {
            return None;
        }
        *count += 1;
        self.total.fetch_add(1, Ordering::Relaxed);
        Some(Admitted {
            open: self.clone(),
            network,
        })
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        self.open.total.fetch_sub(1, Ordering::Relaxed);
        if let Ok(mut per_client) = self.open.per_client.lock()
            && let Some(count) = per_client.get_mut(&self.network)
        {
            *count = count.saturating_sub(1);
            if *count == 0 {
                // Emptied entries go, so the map never holds more than the open connections.
                per_client.remove(&self.network);
            }
        }
    }
}

/// Serves one connection until it ends, a limit closes it, or shutdown drains it.
async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    router: Router,
    settings: Arc<ConnectionSettings>,
    mut stop: watch::Receiver<bool>,
) {
    let activity = Arc::new(Activity::new());
    let io = TokioIo::new(Watched {
        inner: stream,
        activity: activity.clone(),
    });
    let handlers = activity.clone();
    let service = hyper::service::service_fn(move |mut request: axum::http::Request<Incoming>| {
        let handling = Handling::start(handlers.clone());
        request.extensions_mut().insert(ConnectInfo(peer));
        let response = router.clone().call(request);
        async move {
            let response = response.await;
            drop(handling);
            response
        }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        // hyper's own clock starts when it waits for a head (idle time included); the watchdog
        // below tells the two apart, this is only the backstop.
        .header_read_timeout(settings.header_read_timeout + settings.idle_timeout)
        .serve_connection(io, service);
    tokio::pin!(conn);
    let watchdog = watchdog(&activity, &settings);
    tokio::pin!(watchdog);
    let mut draining = false;
    loop {
        tokio::select! {
            result = conn.as_mut() => {
                if let Err(err) = result {
                    tracing::debug!(%peer, %err, "connection ended with an error");
                }
                return;
            }
            reason = &mut watchdog => {
                tracing::debug!(%peer, reason, "connection closed");
                return;
            }
            _ = stop.wait_for(|stop| *stop), if !draining => {
                draining = true;
                conn.as_mut().graceful_shutdown();
            }
        }
    }
}

/// Resolves, with the reason, when the connection is past a limit.
async fn watchdog(activity: &Activity, settings: &ConnectionSettings) -> &'static str {
    let shortest = settings.header_read_timeout.min(settings.idle_timeout);
    let tick = (shortest / 4).clamp(Duration::from_millis(20), Duration::from_secs(1));
    let header = millis(settings.header_read_timeout);
    let idle = millis(settings.idle_timeout);
    loop {
        tokio::time::sleep(tick).await;
        if activity.handling.load(Ordering::Acquire) > 0 {
            continue;
        }
        let now = activity.now();
        let head = activity.head_since.load(Ordering::Acquire);
        if head != NONE {
            if now.saturating_sub(head) > header {
                return "the request head took longer than the header read timeout";
            }
        } else if now.saturating_sub(activity.last_io.load(Ordering::Acquire)) > idle {
            return "idle longer than the idle timeout";
        }
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

const NONE: u64 = u64::MAX;

/// What a connection is doing, in milliseconds since it opened.
struct Activity {
    opened: Instant,
    /// Last time a byte was read or written.
    last_io: AtomicU64,
    /// When the first byte of a request head arrived, while no request is handled; [`NONE`]
    /// when no head is being read.
    head_since: AtomicU64,
    /// Requests whose handler is running (their bodies have their own limit).
    handling: AtomicUsize,
}

impl Activity {
    fn new() -> Self {
        Activity {
            opened: Instant::now(),
            last_io: AtomicU64::new(0),
            head_since: AtomicU64::new(NONE),
            handling: AtomicUsize::new(0),
        }
    }

    fn now(&self) -> u64 {
        millis(self.opened.elapsed())
    }

    fn read(&self) {
        let now = self.now();
        self.last_io.store(now, Ordering::Release);
        if self.handling.load(Ordering::Acquire) == 0 {
            let _ =
                self.head_since
                    .compare_exchange(NONE, now, Ordering::AcqRel, Ordering::Acquire);
        }
    }

    fn wrote(&self) {
        self.last_io.store(self.now(), Ordering::Release);
    }
}

/// A request being handled: its head is complete; dropping it ends the handling.
struct Handling(Arc<Activity>);

impl Handling {
    fn start(activity: Arc<Activity>) -> Self {
        activity.handling.fetch_add(1, Ordering::AcqRel);
        activity.head_since.store(NONE, Ordering::Release);
        Handling(activity)
    }
}

impl Drop for Handling {
    fn drop(&mut self) {
        self.0.wrote();
        self.0.handling.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A stream that records its reads and writes in an [`Activity`].
struct Watched {
    inner: TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let result = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.read();
        }
        result
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let result = Pin::new(&mut self.inner).poll_write(cx, data);
        if matches!(result, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.wrote();
        }
        result
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let result = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(result, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.wrote();
        }
        result
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_count_by_address_or_ipv6_slash_64() {
        let net = |s: &str| client_network(s.parse().unwrap()).to_string();
        assert_eq!(net("192.0.2.7"), "192.0.2.7");
        assert_eq!(net("2001:db8:1:2:aaaa::1"), "2001:db8:1:2::");
        assert_eq!(net("2001:db8:1:2:ffff:1:2:3"), "2001:db8:1:2::");
        assert_eq!(net("::ffff:192.0.2.7"), "192.0.2.7");
    }

    #[test]
    fn bounds_in_all_and_per_client() {
        let settings = ConnectionSettings {
            max_connections: 3,
            max_connections_per_client: 2,
            ..ConnectionSettings::default()
        };
        let open = Arc::new(Open::default());
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "192.0.2.2".parse().unwrap();
        let first = open.admit(a, &settings).unwrap();
        let _second = open.admit(a, &settings).unwrap();
        assert!(open.admit(a, &settings).is_none(), "third from one client");
        let _third = open.admit(b, &settings).unwrap();
        assert!(open.admit(b, &settings).is_none(), "fourth in all");
        drop(first);
        assert!(open.admit(a, &settings).is_some(), "a place freed");
    }
}
