//! How the plain fetcher reaches a server: the connector of its pooled HTTP/1.1 client
//! (hyper-util's). It owns the network policy's say over every connection the fetcher makes.
//!
//! - **Directly**, a name is resolved here and only the addresses the policy allows are tried,
//!   in turn; an IP literal is judged as it is. A name whose every address is refused fails with
//!   the first refusal.
//! - **Through a location's proxy** ([`LocationProxy`], any of its kinds), https and SOCKS
//!   tunnels go to the address the policy checked, never to the name, unless the policy allows
//!   everything (the proxy's own DNS cannot send them inside); plain http goes to an HTTP
//!   proxy in absolute form (the proxy resolves it: the fetcher checks the name first).
//!
//! https is then TLS with the route's own configuration (its own cache of sessions, so nothing
//! is resumed across routes), verified by the engine's [`Verification`](super::tls). The whole
//! connection (name, connect, tunnel, TLS) has the connect timeout. Every failure is a
//! [`FetchError`] naming the host.

use super::FetchError;
use super::location_proxy::{LocationProxy, ProxyStream, Tunnel};
use super::policy::NetworkPolicy;
use hyper::Uri;
use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::rt::TokioIo;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// A route's connector; cheap to clone (the client clones it for every connection).
#[derive(Clone)]
pub(crate) struct Connector {
    inner: Arc<Inner>,
}

struct Inner {
    policy: Arc<NetworkPolicy>,
    timeout: Duration,
    tls: TlsConnector,
    proxy: Option<LocationProxy>,
}

impl Connector {
    /// A connector applying `policy`, with TLS of `tls` (the route's own configuration), through
    /// `proxy` when the route has one.
    pub fn new(
        policy: Arc<NetworkPolicy>,
        timeout: Duration,
        tls: rustls::ClientConfig,
        proxy: Option<LocationProxy>,
    ) -> Self {
        Connector {
            inner: Arc::new(Inner {
                policy,
                timeout,
                tls: TlsConnector::from(Arc::new(tls)),
                proxy,
            }),
        }
    }

    /// Whether plain-http requests go to the route's proxy in absolute form, needing its
    /// credentials in a header.
    pub fn absolute_form(&self) -> Option<&LocationProxy> {
        self.inner
            .proxy
            .as_ref()
            .filter(|proxy| proxy.takes_absolute_form())
    }
}

impl tower_service::Service<Uri> for Connector {
    type Response = Conn;
    type Error = FetchError;
    type Future = Pin<Box<dyn Future<Output = Result<Conn, FetchError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), FetchError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let inner = self.inner.clone();
        Box::pin(async move {
            let host = uri
                .host()
                .unwrap_or_default()
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_string();
            let https = uri.scheme_str() == Some("https");
            let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
            match tokio::time::timeout(inner.timeout, inner.connect(&host, port, https)).await {
                Ok(result) => result,
                Err(_) => Err(FetchError::ConnectTimeout {
                    host,
                    after: inner.timeout,
                }),
            }
        })
    }
}

impl Inner {
    async fn connect(&self, host: &str, port: u16, https: bool) -> Result<Conn, FetchError> {
        let failed = |reason: String| FetchError::Connect {
            host: host.to_string(),
            reason,
        };
        let Some(proxy) = &self.proxy else {
            let addrs = allowed_addrs(&self.policy, host, port).await?;
            let tcp = connect_any(&addrs, self.timeout)
                .await
                .map_err(|e| failed(e.to_string()))?;
            return self.finish(ProxyStream::Tcp(tcp), host, https).await;
        };
        if !https && proxy.takes_absolute_form() {
            let stream = proxy
                .connect()
                .await
                .map_err(|e| failed(format!("through the location's proxy: {e}")))?;
            return Ok(Conn::new(stream, true));
        }
        // Every address is allowed (the plain path's name check has made sure under a
        // restricting policy); none is looked up when the tunnel names the host.
        let allowed = match proxy.tunnels_by_name(&self.policy) {
            true => Vec::new(),
            false => allowed_addrs(&self.policy, host, port).await?,
        };
        let targets = proxy.tunnel_targets(host, port, &allowed, &self.policy);
        match proxy.tunnel_any(&targets).await {
            Ok(Tunnel::Open(stream)) => self.finish(stream, host, https).await,
            Ok(Tunnel::Refused(reason)) => Err(failed(reason)),
            Err(e) => Err(failed(format!("through the location's proxy: {e}"))),
        }
    }

    /// TLS over `stream` for https, verified for `host`.
    async fn finish(
        &self,
        stream: ProxyStream,
        host: &str,
        https: bool,
    ) -> Result<Conn, FetchError> {
        if !https {
            return Ok(Conn::new(stream, false));
        }
        let name = rustls_pki_types::ServerName::try_from(host.to_string()).map_err(|e| {
            FetchError::Connect {
                host: host.to_string(),
                reason: e.to_string(),
            }
        })?;
        let tls = self
            .tls
            .connect(name, stream)
            .await
            .map_err(|e| FetchError::Connect {
                host: host.to_string(),
                reason: e.to_string(),
            })?;
        Ok(Conn::new(ProxyStream::ServerTls(Box::new(tls)), false))
    }
}

/// The addresses of `host` the policy allows (an IP literal is its own); the first refusal when
/// it allows none.
async fn allowed_addrs(
    policy: &NetworkPolicy,
    host: &str,
    port: u16,
) -> Result<Vec<SocketAddr>, FetchError> {
    let (allowed, refused) = policy
        .screen(host, port)
        .await
        .map_err(|e| FetchError::Connect {
            host: host.to_string(),
            reason: format!("dns error: {e}"),
        })?;
    match (allowed.is_empty(), refused) {
        (true, Some(refusal)) => Err(refusal.into()),
        (true, None) => Err(FetchError::Connect {
            host: host.to_string(),
            reason: "the name resolved to no address".into(),
        }),
        (false, _) => Ok(allowed),
    }
}

/// The first of `addrs` that takes the connection, each given its share of `timeout`, so one
/// address that drops packets (a broken IPv6 route, say) leaves time for the others. The plain
/// fetcher's direct connections and the render egress's alike.
pub(crate) async fn connect_any(
    addrs: &[SocketAddr],
    timeout: Duration,
) -> std::io::Result<TcpStream> {
    let share = timeout / u32::try_from(addrs.len().max(1)).unwrap_or(u32::MAX);
    let mut last = std::io::Error::other("no address to connect to");
    for &addr in addrs {
        match tokio::time::timeout(share, TcpStream::connect(addr))
            .await
            .unwrap_or_else(|_| {
                Err(std::io::Error::other(format!(
                    "{addr} did not answer in time"
                )))
            }) {
            Ok(stream) => {
                // Requests are written whole; waiting to coalesce them only adds latency.
                stream.set_nodelay(true)?;
                return Ok(stream);
            }
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// A connection of the client.
pub(crate) struct Conn {
    io: TokioIo<ProxyStream>,
    /// Requests on it go to an HTTP proxy in absolute form.
    absolute_form: bool,
}

impl Conn {
    fn new(stream: ProxyStream, absolute_form: bool) -> Self {
        Conn {
            io: TokioIo::new(stream),
            absolute_form,
        }
    }
}

impl Connection for Conn {
    fn connected(&self) -> Connected {
        // No extras: hyper-util copies them into every response's extensions (three
        // allocations a request), and the address needs no second look: the policy judges an
        // address alone, and the connection went only to an address it allowed (the pool keeps
        // it for this scheme and authority).
        Connected::new().proxy(self.absolute_form)
    }
}

impl hyper::rt::Read for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl hyper::rt::Write for Conn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}
