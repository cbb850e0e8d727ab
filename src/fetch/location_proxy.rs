//! A location's proxy as the engine speaks to it: the plain fetcher's connector
//! ([`super::connect`]) and the render egress for every request a rendered page makes. It owns
//! the proxy's scheme and credentials:
//! - `http://`: a `CONNECT`, or a plain-http request in absolute form;
//! - `https://`: the same inside TLS to the proxy, verified as servers are;
//! - `socks5://` and `socks5h://`: a SOCKS5 `CONNECT` (plain http is tunnelled too).
//!
//! The URL's user and password are the proxy's credentials (Basic for HTTP, user and password
//! for SOCKS5); they are never part of an error. A tunnel's target is named as the caller gives
//! it: an address the network policy checked, so the proxy's own DNS cannot move it (callers
//! pass a name only under an allow-all policy).

use super::NetworkPolicy;
use super::proxying::read_head;
use super::tls::Verification;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;
use url::Url;

/// Time allowed to reach the proxy, and again for it to open a tunnel.
const WAIT: Duration = Duration::from_secs(10);
/// Longest answer head read from an HTTP proxy.
const MAX_HEAD: usize = 16 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Http,
    Https,
    /// `resolves`: `socks5h`, whose proxy resolves the names it is given; `socks5` names
    /// are resolved here.
    Socks5 {
        resolves: bool,
    },
}

/// The most bytes a SOCKS5 user and password may take together: hyper-util's handshake writes
/// the greeting, the login and the request (an IPv6 address at most, as the engine names
/// targets under a restricting policy) into one 262-byte buffer.
const MAX_SOCKS_CREDENTIALS: usize = 234;

/// A location's proxy, parsed once.
pub(crate) struct LocationProxy {
    kind: Kind,
    /// Host and port to connect to (an IPv6 address in brackets).
    address: String,
    /// The host as TLS names it (an https proxy).
    host: String,
    /// User and password, for a SOCKS proxy's login.
    credentials: Option<(String, String)>,
    /// The same as Basic authorization, for an HTTP proxy: made once, sent with every request.
    authorization: Option<http::HeaderValue>,
    /// TLS toward an https proxy; its own cache of sessions.
    tls: Option<TlsConnector>,
}

impl std::fmt::Debug for LocationProxy {
    // Without the credentials.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocationProxy")
            .field("kind", &self.kind)
            .field("address", &self.address)
            .finish_non_exhaustive()
    }
}

/// A connection to a server or a proxy, or through a proxy.
pub(crate) enum ProxyStream {
    Tcp(TcpStream),
    /// TLS to an https proxy.
    ProxyTls(Box<TlsStream<TcpStream>>),
    /// TLS to the server, over any of these (the plain fetcher's https).
    ServerTls(Box<TlsStream<ProxyStream>>),
}

/// What asking for a tunnel came to.
pub(crate) enum Tunnel {
    /// Open to the target.
    Open(ProxyStream),
    /// Refused by the proxy, and why, in words for a check's error.
    Refused(String),
}

impl LocationProxy {
    /// The proxy at `url`; an https proxy is verified with `verification`, and cannot be used
    /// without one.
    pub fn new(url: &Url, verification: Option<&Verification>) -> Result<Self, String> {
        let kind = match url.scheme() {
            "http" => Kind::Http,
            "https" => Kind::Https,
            "socks5" => Kind::Socks5 { resolves: false },
            "socks5h" => Kind::Socks5 { resolves: true },
            other => return Err(format!("scheme \"{other}\" is not supported")),
        };
        let host = url
            .host_str()
            .filter(|host| !host.is_empty())
            .ok_or("the URL names no host")?;
        let port = url.port_or_known_default().unwrap_or(1080);
        let credentials = (!url.username().is_empty()).then(|| {
            let decode = |s: &str| {
                percent_encoding::percent_decode_str(s)
                    .decode_utf8_lossy()
                    .into_owned()
            };
            (decode(url.username()), decode(url.password().unwrap_or("")))
        });
        if matches!(kind, Kind::Socks5 { .. })
            && credentials
                .as_ref()
                .is_some_and(|(user, password)| user.len() + password.len() > MAX_SOCKS_CREDENTIALS)
        {
            return Err(format!(
                "a SOCKS proxy's user and password may take at most {MAX_SOCKS_CREDENTIALS} bytes \
                 together"
            ));
        }
        let tls = match kind {
            Kind::Https => {
                let verification =
                    verification.ok_or("no certificate verification for an https proxy")?;
                let config = verification.client_config(b"http/1.1")?;
                Some(TlsConnector::from(Arc::new(config)))
            }
            _ => None,
        };
        Ok(LocationProxy {
            kind,
            address: format!("{host}:{port}"),
            host: host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_string(),
            // As for SOCKS, only a URL with a user has credentials.
            authorization: credentials.as_ref().and(super::basic_authorization(url)),
            credentials,
            tls,
        })
    }

    /// Whether plain-http requests go to it in absolute form (an HTTP proxy); a SOCKS proxy
    /// tunnels them instead.
    pub fn takes_absolute_form(&self) -> bool {
        !matches!(self.kind, Kind::Socks5 { .. })
    }

    /// Whether a tunnel under `policy` names its target as given, so it needs no resolution
    /// here: nothing needs checking (an allow-all policy) and the proxy resolves the names it
    /// is given (`socks5://` does not: its names are resolved here, as its scheme says).
    pub fn tunnels_by_name(&self, policy: &NetworkPolicy) -> bool {
        policy.allows_all() && self.kind != Kind::Socks5 { resolves: false }
    }

    /// Where a tunnel to `host:port` may go, in order, given the addresses of it that `policy`
    /// allowed. Unless it [tunnels by name](Self::tunnels_by_name) (or no address is known),
    /// those addresses, never the host, so the proxy's own resolver (another view of DNS, or an
    /// answer changed since) cannot turn the tunnel inside; TLS in the tunnel still names the
    /// host.
    pub fn tunnel_targets(
        &self,
        host: &str,
        port: u16,
        allowed: &[SocketAddr],
        policy: &NetworkPolicy,
    ) -> Vec<(String, u16)> {
        if allowed.is_empty() || self.tunnels_by_name(policy) {
            return vec![(host.to_string(), port)];
        }
        allowed
            .iter()
            .map(|addr| (addr.ip().to_string(), addr.port()))
            .collect()
    }

    /// A tunnel to the first of `targets` the proxy opens one to, trying each in turn as a
    /// direct connection tries a name's addresses; else how the last try ended.
    pub async fn tunnel_any(&self, targets: &[(String, u16)]) -> io::Result<Tunnel> {
        let mut last = Err(io::Error::other("no address to tunnel to"));
        for (target, target_port) in targets {
            match self.tunnel(target, *target_port).await {
                Ok(Tunnel::Open(stream)) => return Ok(Tunnel::Open(stream)),
                other => last = other,
            }
        }
        last
    }

    /// Why a check failed when the proxy answered that it wants credentials.
    pub fn credentials_refused(&self) -> String {
        match self.credentials {
            Some(_) => "the location's proxy refused its credentials (the user and password of \
                        its URL)"
                .into(),
            None => "the location's proxy asks for credentials, and its URL has none".into(),
        }
    }

    /// The `Proxy-Authorization` value for a request to an HTTP proxy, when it has credentials.
    pub fn authorization(&self) -> Option<&http::HeaderValue> {
        self.authorization.as_ref()
    }

    /// The same as a header line, with its CRLF.
    pub fn authorization_line(&self) -> Option<String> {
        let value = self.authorization.as_ref()?.to_str().ok()?;
        Some(format!("Proxy-Authorization: {value}\r\n"))
    }

    /// A connection to the proxy itself, TLS opened for an https proxy.
    pub async fn connect(&self) -> io::Result<ProxyStream> {
        let tcp = tokio::time::timeout(WAIT, TcpStream::connect(self.address.as_str()))
            .await
            .map_err(|_| io::Error::other("connecting to the location's proxy timed out"))??;
        // Requests are written whole; waiting to coalesce them only adds latency.
        tcp.set_nodelay(true)?;
        match &self.tls {
            None => Ok(ProxyStream::Tcp(tcp)),
            Some(connector) => {
                let name = rustls_pki_types::ServerName::try_from(self.host.clone())
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
                let tls = tokio::time::timeout(WAIT, connector.connect(name, tcp))
                    .await
                    .map_err(|_| {
                        io::Error::other("the TLS handshake with the location's proxy timed out")
                    })??;
                Ok(ProxyStream::ProxyTls(Box::new(tls)))
            }
        }
    }

    /// A tunnel to `host:port` (an IPv6 address with or without brackets) through the proxy.
    pub async fn tunnel(&self, host: &str, port: u16) -> io::Result<Tunnel> {
        let mut stream = self.connect().await?;
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        if !self.takes_absolute_form() {
            return tokio::time::timeout(WAIT, self.socks_connect(stream, bare, port))
                .await
                .map_err(|_| io::Error::other("the location's SOCKS proxy did not answer"))?;
        }
        let authority = if bare.contains(':') {
            format!("[{bare}]:{port}")
        } else {
            format!("{bare}:{port}")
        };
        let mut head = format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n");
        if let Some(line) = self.authorization_line() {
            head.push_str(&line);
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes()).await?;
        stream.flush().await?;
        let (answer, early) = tokio::time::timeout(WAIT, read_head(&mut stream, MAX_HEAD))
            .await
            .map_err(|_| io::Error::other("the location's proxy did not answer"))??;
        let status = String::from_utf8_lossy(&answer)
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse::<u16>().ok())
            .unwrap_or(0);
        // Neither HTTP nor TLS lets a server speak first: bytes past the answer are not the
        // target's, and a tunnel that carries them cannot be trusted to frame its messages.
        if (200..300).contains(&status) && early.is_empty() {
            return Ok(Tunnel::Open(stream));
        }
        let reason = if status == 407 {
            self.credentials_refused()
        } else if (200..300).contains(&status) {
            "the location's proxy sent data before the tunnel was used".to_string()
        } else {
            let line = String::from_utf8_lossy(&answer);
            let line = line.lines().next().unwrap_or("").trim();
            format!("the location's proxy refused the tunnel (it answered \"{line}\")")
        };
        Ok(Tunnel::Refused(reason))
    }

    async fn socks_connect(
        &self,
        stream: ProxyStream,
        host: &str,
        port: u16,
    ) -> io::Result<Tunnel> {
        use hyper_util::client::legacy::connect::proxy::SocksV5;
        use hyper_util::rt::TokioIo;
        use tower_service::Service as _;
        let target: http::Uri = if host.contains(':') {
            format!("http://[{host}]:{port}")
        } else {
            format!("http://{host}:{port}")
        }
        .parse()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        // SOCKS5 names the target as given: an address stays one, a name goes to the proxy.
        let mut socks = SocksV5::new(target.clone(), Connected(Some(TokioIo::new(stream))));
        if let Some((user, password)) = &self.credentials {
            socks = socks.with_auth(user.clone(), password.clone());
        }
        match socks.call(target).await {
            Ok(io) => Ok(Tunnel::Open(io.into_inner())),
            Err(e) => {
                // hyper-util names its errors' types only privately: their words tell the
                // refused credentials from the rest.
                let said = e.to_string();
                Ok(Tunnel::Refused(
                    if said.contains("credentials") || said.contains("authentication") {
                        self.credentials_refused()
                    } else if said.contains("io error") {
                        format!("the tunnel through the location's proxy failed ({said})")
                    } else {
                        format!("the location's proxy refused the tunnel ({said})")
                    },
                ))
            }
        }
    }
}

/// The connector hyper-util's SOCKS handshake runs over: the connection already made.
struct Connected(Option<hyper_util::rt::TokioIo<ProxyStream>>);

impl tower_service::Service<http::Uri> for Connected {
    type Response = hyper_util::rt::TokioIo<ProxyStream>;
    type Error = io::Error;
    type Future = std::future::Ready<io::Result<Self::Response>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: http::Uri) -> Self::Future {
        std::future::ready(
            self.0
                .take()
                .ok_or_else(|| io::Error::other("the connection was used already")),
        )
    }
}

impl AsyncRead for ProxyStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ProxyStream::Tcp(s) => Pin::new(s).poll_read(cx, buf),
            ProxyStream::ProxyTls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
            ProxyStream::ServerTls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for ProxyStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            ProxyStream::Tcp(s) => Pin::new(s).poll_write(cx, buf),
            ProxyStream::ProxyTls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
            ProxyStream::ServerTls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ProxyStream::Tcp(s) => Pin::new(s).poll_flush(cx),
            ProxyStream::ProxyTls(s) => Pin::new(s.as_mut()).poll_flush(cx),
            ProxyStream::ServerTls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ProxyStream::Tcp(s) => Pin::new(s).poll_shutdown(cx),
            ProxyStream::ProxyTls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
            ProxyStream::ServerTls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proxy(url: &str) -> LocationProxy {
        LocationProxy::new(&Url::parse(url).unwrap(), None).unwrap()
    }

    #[test]
    fn a_tunnel_names_the_checked_addresses_unless_nothing_needs_checking() {
        let allowed: [SocketAddr; 2] = [
            "93.184.216.34:443".parse().unwrap(),
            "[2606:2800::1]:443".parse().unwrap(),
        ];
        let addresses = vec![
            ("93.184.216.34".to_string(), 443),
            ("2606:2800::1".to_string(), 443),
        ];
        let by_name = vec![("example.com".to_string(), 443)];
        let targets = |proxy: &LocationProxy, policy: &NetworkPolicy| {
            proxy.tunnel_targets("example.com", 443, &allowed, policy)
        };
        let (http, socks5h, socks5) = (
            proxy("http://p.test:3128"),
            proxy("socks5h://p.test:1080"),
            proxy("socks5://p.test:1080"),
        );
        for proxy in [&http, &socks5h, &socks5] {
            assert_eq!(targets(proxy, &NetworkPolicy::public_only()), addresses);
        }
        // Nothing to protect: a proxy that resolves names may resolve as it likes.
        assert_eq!(targets(&http, &NetworkPolicy::allow_all()), by_name);
        assert_eq!(targets(&socks5h, &NetworkPolicy::allow_all()), by_name);
        // Unless it is a proxy that is to be given addresses (`socks5://`).
        assert_eq!(targets(&socks5, &NetworkPolicy::allow_all()), addresses);
        // No address known (a name only resolved under an allow-all policy): the name.
        assert_eq!(
            socks5.tunnel_targets("example.com", 443, &[], &NetworkPolicy::allow_all()),
            by_name
        );
    }

    /// The first address answers nothing (a name whose first address is unreachable, say a
    /// broken IPv6 route): the tunnel goes on to the next one, as a direct connection would.
    #[tokio::test]
    async fn a_tunnel_goes_on_to_the_next_address_when_one_cannot_be_reached() {
        let site = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = site.local_addr().unwrap().port();
        let forward = crate::testing::proxy::ForwardProxy::builder()
            .start()
            .await
            .unwrap();
        let location = proxy(&forward.url());
        // Nothing listens on 127.0.0.2 at that port: the proxy answers 502 for it.
        let targets = [
            ("127.0.0.2".to_string(), port),
            ("127.0.0.1".to_string(), port),
        ];
        let tunnel = location.tunnel_any(&targets).await.unwrap();
        assert!(matches!(tunnel, Tunnel::Open(_)));
        assert_eq!(
            forward.requests(),
            [
                format!("CONNECT 127.0.0.2:{port} HTTP/1.1"),
                format!("CONNECT 127.0.0.1:{port} HTTP/1.1")
            ]
        );
        // Every address refused: the last refusal is the answer.
        let closed = [("127.0.0.2".to_string(), port)];
        match location.tunnel_any(&closed).await.unwrap() {
            Tunnel::Refused(reason) => assert!(reason.contains("502"), "{reason}"),
            Tunnel::Open(_) => panic!("a tunnel to nothing opened"),
        }
    }
}
