//! The egress proxy: every request a rendering browser context makes (documents, subresources,
//! redirects, script-initiated fetches) leaves through this small HTTP proxy, which applies the
//! engine's [`NetworkPolicy`] to the addresses it actually connects to and, for a monitor with
//! a location, forwards to that location's upstream proxy. One runs per render session, so its
//! refusals belong to one check.
//!
//! It understands absolute-form requests (plain http) and `CONNECT host:port` (https, wss, and
//! Chromium's ws://). A tunnel is not passed through blind: TLS in it is intercepted (the
//! proxy answers the browser's handshake with a certificate of its own and opens its own TLS
//! to the real server, verified as the plain fetcher verifies; see [`super::intercept`]), so
//! what it carries is read like plain http. A plain-http request is sent on with
//! `Connection: close` (one proxy connection serves one request); a tunnel's connections are
//! kept alive from request to request while both sides frame their messages.
//!
//! It also bounds what a page may load. Every response, https included, is decoded as it
//! passes (its transfer and content encodings) and cut when its body passes the engine's body
//! cap, counted after decompression as on the plain path; everything (websockets too) adds to
//! a total per render. A cut connection is reset, so the browser sees a failed load rather than
//! a short page, and the cut is remembered so the render fails with the plain path's words.

use super::intercept::UpstreamTls;
use crate::fetch::connect::connect_any;
use crate::fetch::location_proxy::{LocationProxy, ProxyStream, Tunnel};
use crate::fetch::proxying::{RequestHead, read_head, read_head_after, serve_each};
use crate::fetch::{FetchError, NetworkPolicy, Refused};
use std::io::Write;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use url::Url;

/// Longest request head accepted from the browser.
const MAX_HEAD: usize = 64 * 1024;
/// Time allowed to connect upstream or to read a request head.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Cuts remembered at most; a render needs only the first few to explain itself.
const MAX_CUTS: usize = 64;

/// How much a page may load.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// The largest response body, after decompression.
    pub response: u64,
    /// The most bytes all responses of a render may add up to.
    pub render: u64,
}

/// What the proxy cut, for the renders to find theirs.
#[derive(Default)]
struct Usage {
    /// Responses cut for their size: the URL (for plain http) and the error.
    cuts: Vec<(Option<String>, FetchError)>,
    /// Whether the total of the current render was passed.
    total_passed: bool,
}

/// A running egress proxy; it stops (with its tunnels) when dropped.
pub(crate) struct Egress {
    addr: SocketAddr,
    refused: Arc<Mutex<Option<Refused>>>,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl Egress {
    /// Starts a proxy on 127.0.0.1 applying `policy` and `limits`, forwarding to `upstream`
    /// when given.
    pub async fn start(
        policy: Arc<NetworkPolicy>,
        upstream: Option<LocationProxy>,
        limits: Limits,
        tls: UpstreamTls,
    ) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let refused = Arc::new(Mutex::new(None));
        let shared = Arc::new(Shared {
            policy,
            upstream,
            refused: refused.clone(),
            failed: Mutex::new(None),
            tls,
            limits,
            loaded: AtomicU64::new(0),
            usage: Mutex::new(Usage::default()),
            cut_signal: tokio::sync::watch::Sender::new(0),
        });
        let accepting = shared.clone();
        // Aborting the task closes every tunnel.
        let task = tokio::spawn(serve_each(listener, move |stream| {
            let shared = accepting.clone();
            async move {
                let _ = serve(stream, &shared).await;
            }
        }));
        Ok(Egress {
            addr,
            refused,
            shared,
            task,
        })
    }

    /// Starts counting a new render's total. Renders of one session that run at once (a crawl's
    /// tabs) share the count from the latest start.
    pub fn begin_render(&self) {
        self.shared.loaded.store(0, Ordering::Release);
        if let Ok(mut usage) = self.shared.usage.lock() {
            usage.total_passed = false;
        }
    }

    /// The proxy URL for a browser context.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The most recent refusal, to explain a failed navigation.
    pub fn last_refusal(&self) -> Option<Refused> {
        self.refused.lock().ok().and_then(|r| r.clone())
    }

    /// Why the latest request the proxy could not carry failed: the policy refused it, or the
    /// real server's certificate did not verify. To explain a failed navigation.
    pub fn last_failure(&self) -> Option<FetchError> {
        self.shared.failed.lock().ok().and_then(|f| f.clone())
    }

    /// A watch on the cuts, to end a render as soon as something of it is cut.
    pub fn size_watch(&self) -> SizeWatch {
        SizeWatch {
            shared: self.shared.clone(),
            cuts: self.shared.cut_signal.subscribe(),
        }
    }
}

/// Tells a render when the proxy cut something, and whether it was the render's.
pub(crate) struct SizeWatch {
    shared: Arc<Shared>,
    cuts: tokio::sync::watch::Receiver<u64>,
}

impl SizeWatch {
    /// Resolves at the next cut (never, once the proxy is gone).
    pub async fn next_cut(&mut self) {
        if self.cuts.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }

    /// See [`Shared::size_error`].
    pub fn size_error(&self, urls: &[String]) -> Option<FetchError> {
        self.shared.size_error(urls)
    }
}

impl Shared {
    /// Why the render that loaded `urls` must fail for its size, if it must: one of them was
    /// cut, or the render's total was passed.
    fn size_error(&self, urls: &[String]) -> Option<FetchError> {
        let usage = self.usage.lock().ok()?;
        let cut = usage.cuts.iter().find(|(url, _)| {
            url.as_ref()
                .is_some_and(|u| urls.iter().any(|seen| same_resource(seen, u)))
        });
        if let Some((_, error)) = cut {
            return Some(error.clone());
        }
        usage.total_passed.then(|| total_error(self.limits.render))
    }
}

impl Drop for Egress {
    fn drop(&mut self) {
        self.task.abort();
    }
}

struct Shared {
    policy: Arc<NetworkPolicy>,
    upstream: Option<LocationProxy>,
    refused: Arc<Mutex<Option<Refused>>>,
    /// The latest request the proxy could not carry, and why (a refusal, a certificate).
    failed: Mutex<Option<FetchError>>,
    tls: UpstreamTls,
    limits: Limits,
    /// Bytes loaded since the current render began.
    loaded: AtomicU64,
    usage: Mutex<Usage>,
    /// Counts the cuts, waking renders that wait on them.
    cut_signal: tokio::sync::watch::Sender<u64>,
}

impl Shared {
    /// Adds `n` bytes to the render's total; false once it is passed.
    fn add_loaded(&self, n: u64) -> bool {
        let total = self.loaded.fetch_add(n, Ordering::AcqRel).saturating_add(n);
        if total <= self.limits.render {
            return true;
        }
        if let Ok(mut usage) = self.usage.lock() {
            usage.total_passed = true;
        }
        self.cut_signal.send_modify(|n| *n += 1);
        false
    }

    /// Records that the location's proxy could not be reached on the way to `host`, for the
    /// render to say so; the error, to end the browser's connection with.
    fn proxy_failed(&self, host: &str, error: std::io::Error) -> std::io::Error {
        self.connect_failed(host, format!("through the location's proxy: {error}"));
        error
    }

    /// Records that no connection toward `host` (bracketed or not) could be made, and why.
    fn connect_failed(&self, host: &str, reason: String) {
        self.fail(FetchError::Connect {
            host: host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_string(),
            reason,
        });
    }

    fn fail(&self, error: FetchError) {
        if let Ok(mut slot) = self.failed.lock() {
            *slot = Some(error);
        }
    }

    fn record_cut(&self, url: Option<String>, error: FetchError) {
        if let Ok(mut usage) = self.usage.lock()
            && usage.cuts.len() < MAX_CUTS
        {
            usage.cuts.push((url, error));
        }
        self.cut_signal.send_modify(|n| *n += 1);
    }
}

fn total_error(limit: u64) -> FetchError {
    FetchError::Render(format!(
        "the page and what it loads are larger than {limit} bytes"
    ))
}

/// Whether two URLs name the same resource (the browser may drop a fragment, or add a slash).
fn same_resource(a: &str, b: &str) -> bool {
    let strip = |u: &str| {
        u.split('#')
            .next()
            .unwrap_or("")
            .trim_end_matches('/')
            .to_string()
    };
    strip(a) == strip(b)
}

impl RequestHead<'_> {
    /// The length of the request's body when the proxy can carry the request on a kept-alive
    /// connection: a body of known length (or none), no upgrade, no `Expect`. `None` for the
    /// others, which end their connection.
    fn body_length(&self) -> Option<u64> {
        if ["transfer-encoding", "upgrade", "expect"]
            .iter()
            .any(|h| self.header(h).is_some())
        {
            return None;
        }
        match self.header("content-length") {
            Some(length) => length.parse().ok(),
            None => Some(0),
        }
    }

    /// The head to send on with `target` in its request line: hop-by-hop headers dropped, and
    /// only codings the proxy can measure offered (zstd is not one of them). Unless `keep_alive`,
    /// the connection is closed after the response (one connection serves one request), except
    /// for an upgrade (a websocket), which needs its `Connection: Upgrade`. `extra` holds header
    /// lines to add (each with its CRLF).
    fn forward(&self, target: &str, keep_alive: bool, extra: &str) -> String {
        let upgrade = self.header("upgrade").is_some();
        let mut out = format!("{} {target} {}\r\n", self.method, self.version);
        for line in &self.headers {
            let name = line.split(':').next().unwrap_or("").trim();
            let dropped = [
                "proxy-connection",
                "keep-alive",
                "proxy-authorization",
                "accept-encoding",
            ]
            .iter()
            .any(|h| name.eq_ignore_ascii_case(h))
                || (!upgrade && name.eq_ignore_ascii_case("connection"));
            if !dropped {
                out.push_str(line);
                out.push_str("\r\n");
            }
        }
        out.push_str("Accept-Encoding: gzip, deflate, br\r\n");
        out.push_str(extra);
        if !upgrade && !keep_alive {
            out.push_str("Connection: close\r\n");
        }
        out.push_str("\r\n");
        out
    }
}

async fn serve(mut client: TcpStream, shared: &Shared) -> std::io::Result<()> {
    let (head, rest) = tokio::time::timeout(CONNECT_TIMEOUT, read_head(&mut client, MAX_HEAD))
        .await
        .map_err(|_| std::io::Error::other("request head timed out"))??;
    let text = String::from_utf8_lossy(&head).into_owned();
    let request = RequestHead::parse(&text);
    if request.method.eq_ignore_ascii_case("CONNECT") {
        let (host, port) = request.authority();
        return tunnel(client, &rest, host, port, shared).await;
    }
    let (host, port, origin_form) = match Url::parse(request.target) {
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
    };
    let Some(allowed) = open(&mut client, &host, port, shared).await? else {
        return Ok(());
    };
    // An HTTP proxy takes the absolute form, with its credentials; a server (straight, or
    // through a SOCKS tunnel) the origin form.
    let (mut server, head) = match &shared.upstream {
        Some(proxy) if proxy.takes_absolute_form() => {
            let server = match proxy.connect().await {
                Ok(server) => server,
                Err(e) => return Err(shared.proxy_failed(&host, e)),
            };
            let head = request.forward(
                request.target,
                false,
                &proxy.authorization_line().unwrap_or_default(),
            );
            (server, head)
        }
        _ => match reach(&host, port, &allowed, shared).await? {
            Some(server) => (server, request.forward(&origin_form, false, "")),
            None => return Ok(()),
        },
    };
    server.write_all(head.as_bytes()).await?;
    server.write_all(&rest).await?;
    let by_proxy = shared
        .upstream
        .as_ref()
        .is_some_and(LocationProxy::takes_absolute_form);
    let outcome = exchange(
        &mut client,
        &mut server,
        &request,
        shared,
        request.target,
        by_proxy,
    )
    .await;
    if matches!(outcome, Ok(Relay::Cut)) {
        // A reset, not a close: a close would end the body as if it were complete.
        let _ = client.set_zero_linger();
    }
    outcome.map(|_| ())
}

/// The addresses of `host:port` the policy allows (where a location's proxy is to connect, all
/// of them); `None` when it refused them, the browser told so.
async fn open(
    client: &mut TcpStream,
    host: &str,
    port: u16,
    shared: &Shared,
) -> std::io::Result<Option<Vec<SocketAddr>>> {
    let bare_host = host.trim_start_matches('[').trim_end_matches(']');
    if let Err(outside) = shared.policy.check_origin(host, port) {
        // Closed without an answer, the browser's load fails and the render reports this.
        shared.fail(FetchError::OutsideOrigins(outside));
        return Ok(None);
    }
    let (allowed, refused) = allowed_addrs(&shared.policy, bare_host, port).await;
    // Directly, the refused addresses are simply not used. A location's proxy resolves the
    // name itself and may pick any of them, so there one refused address refuses the name.
    if let Some(refusal) = refused
        && (allowed.is_empty() || shared.upstream.is_some())
    {
        let message = refusal.to_string();
        shared.fail(FetchError::Refused(refusal.clone()));
        if let Ok(mut slot) = shared.refused.lock() {
            *slot = Some(refusal);
        }
        respond(client, 403, &message).await?;
        return Ok(None);
    }
    if allowed.is_empty() && shared.upstream.is_some() && !shared.policy.allows_all() {
        // A name only the location's proxy can resolve (an internal one there) is never
        // handed to it: the policy cannot judge what it does not see. Closing without an
        // answer fails the browser's load, and the render reports this.
        shared.fail(FetchError::Connect {
            host: bare_host.to_string(),
            reason: "the name does not resolve here, so the network policy cannot check it \
                     (not sent to the location's proxy)"
                .into(),
        });
        return Ok(None);
    }
    Ok(Some(allowed))
}

/// A connection to `host:port`, whose `allowed` addresses the policy checked: straight to them,
/// or through the location's proxy to each of them in turn
/// ([`LocationProxy::tunnel_targets`]), as a direct connection tries them. `None` when the proxy refused the tunnel (recorded for the render).
async fn reach(
    host: &str,
    port: u16,
    allowed: &[SocketAddr],
    shared: &Shared,
) -> std::io::Result<Option<ProxyStream>> {
    let Some(proxy) = &shared.upstream else {
        return Ok(Some(ProxyStream::Tcp(
            connect_any(allowed, CONNECT_TIMEOUT).await?,
        )));
    };
    let targets = proxy.tunnel_targets(host, port, allowed, &shared.policy);
    match proxy.tunnel_any(&targets).await {
        Ok(Tunnel::Open(stream)) => Ok(Some(stream)),
        Ok(Tunnel::Refused(reason)) => {
            // Not the proxy's answer: Chromium would wait on a 407 for credentials it will
            // never have. Closed without an answer, the load fails and the render says why.
            shared.connect_failed(host, reason);
            Ok(None)
        }
        Err(e) => Err(shared.proxy_failed(host, e)),
    }
}

/// The first byte of a TLS handshake record: a tunnel that starts with it carries TLS.
const TLS_HANDSHAKE: u8 = 0x16;

/// Serves a `CONNECT`. The tunnel is not passed through blind: TLS in it (https, wss) is
/// intercepted ([`intercept`](super::intercept)), the real server's certificate verified before
/// the browser's handshake is accepted, and the requests it carries are relayed like plain-http
/// ones, measured; plain http in it (Chromium tunnels ws:// too) is relayed the same.
async fn tunnel(
    mut client: TcpStream,
    rest: &[u8],
    host: &str,
    port: u16,
    shared: &Shared,
) -> std::io::Result<()> {
    let Some(allowed) = open(&mut client, host, port, shared).await? else {
        return Ok(());
    };
    let Some(mut server) = reach(host, port, &allowed, shared).await? else {
        return Ok(());
    };
    if !rest.is_empty() {
        return respond(&mut client, 400, "data before the tunnel was established").await;
    }
    client
        .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        .await?;
    let mut first = [0u8; 1];
    let peeked = tokio::time::timeout(CONNECT_TIMEOUT, client.peek(&mut first))
        .await
        .map_err(|_| std::io::Error::other("the tunnel stayed unused"))??;
    if peeked == 0 {
        return Ok(());
    }
    let bare_host = host.trim_start_matches('[').trim_end_matches(']');
    if first[0] != TLS_HANDSHAKE {
        let origin = if port == 80 {
            host.to_string()
        } else {
            format!("{host}:{port}")
        };
        let outcome = relay_requests(&mut client, &mut server, shared, "http", &origin).await;
        if matches!(outcome, Ok(Relay::Cut)) {
            let _ = client.set_zero_linger();
        }
        return outcome.map(|_| ());
    }
    // The real server first: when its certificate fails, the browser's handshake fails too,
    // and the render says why.
    let mut upstream =
        match tokio::time::timeout(CONNECT_TIMEOUT, shared.tls.connect(bare_host, server)).await {
            Ok(Ok(stream)) => stream,
            Ok(Err(e)) => {
                shared.fail(FetchError::Connect {
                    host: bare_host.to_string(),
                    reason: e.to_string(),
                });
                return Err(e);
            }
            Err(_) => {
                shared.fail(FetchError::ConnectTimeout {
                    host: bare_host.to_string(),
                    after: CONNECT_TIMEOUT,
                });
                return Err(std::io::Error::other("TLS handshake timed out"));
            }
        };
    let acceptor = super::intercept::authority()
        .and_then(|a| a.acceptor(bare_host))
        .map_err(std::io::Error::other)?;
    let mut browser = tokio::time::timeout(CONNECT_TIMEOUT, acceptor.accept(client))
        .await
        .map_err(|_| std::io::Error::other("the browser's TLS handshake timed out"))??;
    let origin = if port == 443 {
        host.to_string()
    } else {
        format!("{host}:{port}")
    };
    let outcome = relay_requests(&mut browser, &mut upstream, shared, "https", &origin).await;
    match outcome {
        Ok(Relay::Cut) => {
            let _ = browser.get_ref().0.set_zero_linger();
        }
        Ok(Relay::Done | Relay::Reusable) => {
            // close_notify, so the browser can tell the end of a body read to the close.
            let _ = tokio::time::timeout(Duration::from_secs(1), browser.shutdown()).await;
        }
        Err(_) => {}
    }
    outcome.map(|_| ())
}

/// How long a kept-alive connection waits for its next request.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// Relays the requests a tunnel carries (their URLs are `scheme://origin` and the request's
/// target), each measured as a plain-http one. Both connections are kept alive from request
/// to request (a new tunnel and two TLS handshakes a request would slow pages of many
/// resources) while the requests and responses say where they end; the first that does not
/// (a body of unknown length, an upgrade, a response read to the close) is the last.
async fn relay_requests<C, S>(
    client: &mut C,
    server: &mut S,
    shared: &Shared,
    scheme: &str,
    origin: &str,
) -> std::io::Result<Relay>
where
    C: AsyncRead + AsyncWrite + Unpin,
    S: AsyncRead + AsyncWrite + Unpin,
{
    // A tunnel the browser opened ahead of need waits for its first request this long.
    let mut wait = CONNECT_TIMEOUT;
    loop {
        let (head, rest) = match tokio::time::timeout(wait, read_head(client, MAX_HEAD)).await {
            Ok(Ok(read)) => read,
            // A kept-alive connection the browser closed, or left idle, ends here.
            _ if wait == KEEP_ALIVE => return Ok(Relay::Done),
            Ok(Err(e)) => return Err(e),
            Err(_) => return Err(std::io::Error::other("request head timed out")),
        };
        wait = KEEP_ALIVE;
        let text = String::from_utf8_lossy(&head).into_owned();
        let request = RequestHead::parse(&text);
        let url = format!("{scheme}://{origin}{}", request.target);
        let Some(length) = request.body_length().filter(|n| *n >= rest.len() as u64) else {
            server
                .write_all(request.forward(request.target, false, "").as_bytes())
                .await?;
            server.write_all(&rest).await?;
            server.flush().await?;
            return exchange(client, server, &request, shared, &url, false).await;
        };
        server
            .write_all(request.forward(request.target, true, "").as_bytes())
            .await?;
        server.write_all(&rest).await?;
        let left = length - rest.len() as u64;
        if left > 0 {
            let copied = tokio::io::copy(&mut (&mut *client).take(left), server).await?;
            if copied < left {
                return Ok(Relay::Done);
            }
        }
        server.flush().await?;
        let framing = Framing {
            keep_alive: true,
            head: request.method.eq_ignore_ascii_case("HEAD"),
            by_proxy: false,
        };
        match relay_response(server, client, shared, &url, framing).await? {
            Relay::Reusable => client.flush().await?,
            ended => return Ok(ended),
        }
    }
}

/// Sends the request's body (if any) up as it comes and relays the response down, measured.
/// `by_proxy`: the request went to the location's HTTP proxy in absolute form, so a 407 is the
/// proxy's.
async fn exchange<C, S>(
    client: &mut C,
    server: &mut S,
    request: &RequestHead<'_>,
    shared: &Shared,
    url: &str,
    by_proxy: bool,
) -> std::io::Result<Relay>
where
    C: AsyncRead + AsyncWrite + Unpin,
    S: AsyncRead + AsyncWrite + Unpin,
{
    let (mut client_read, mut client_write) = tokio::io::split(client);
    let (mut server_read, mut server_write) = tokio::io::split(server);
    let upload = async {
        let _ = tokio::io::copy(&mut client_read, &mut server_write).await;
        std::future::pending::<()>().await
    };
    let framing = Framing {
        keep_alive: false,
        head: request.method.eq_ignore_ascii_case("HEAD"),
        by_proxy,
    };
    let download = relay_response(&mut server_read, &mut client_write, shared, url, framing);
    tokio::select! {
        relayed = download => relayed,
        () = upload => Ok(Relay::Done),
    }
}

/// How a relay ended.
enum Relay {
    /// The response (or tunnel) ended, and with it the connection.
    Done,
    /// The response ended where its framing said, and both connections may carry another.
    Reusable,
    /// It was cut for its size.
    Cut,
}

/// What the relay of a response needs from its request.
#[derive(Clone, Copy)]
struct Framing {
    /// The connections are kept alive after the response when the server agrees.
    keep_alive: bool,
    /// The request was a HEAD: the response has no body, whatever its head says.
    head: bool,
    /// The response comes through the location's HTTP proxy, which may answer for itself.
    by_proxy: bool,
}

/// Relays a tunnel's bytes to the browser, adding them to the render's total.
async fn relay_tunnel(
    from: &mut (impl tokio::io::AsyncRead + Unpin),
    to: &mut (impl tokio::io::AsyncWrite + Unpin),
    shared: &Shared,
) -> std::io::Result<Relay> {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = from.read(&mut buf).await?;
        if n == 0 {
            return Ok(Relay::Done);
        }
        if !shared.add_loaded(n as u64) {
            return Ok(Relay::Cut);
        }
        to.write_all(&buf[..n]).await?;
        to.flush().await?;
    }
}

/// Relays one plain-http response to the browser, measuring its body as it passes.
async fn relay_response(
    from: &mut (impl tokio::io::AsyncRead + Unpin),
    to: &mut (impl tokio::io::AsyncWrite + Unpin),
    shared: &Shared,
    url: &str,
    framing: Framing,
) -> std::io::Result<Relay> {
    let limit = shared.limits.response;
    let (mut head, mut pending) = read_head(from, MAX_HEAD).await?;
    // Interim answers (100 Continue) come before the real head.
    let mut info = ResponseHead::parse(&head);
    while (100..200).contains(&info.status) && info.status != 101 {
        to.write_all(&head).await?;
        let (next, rest) = read_head_after(from, pending, MAX_HEAD).await?;
        head = next;
        pending = rest;
        info = ResponseHead::parse(&head);
    }
    if framing.by_proxy
        && info.status == 407
        && let Some(proxy) = &shared.upstream
    {
        // Not relayed: Chromium would wait on a 407 for credentials it will never have.
        // Closed without an answer, the load fails and the render says why.
        let refused = proxy.credentials_refused();
        let host = Url::parse(url)
            .ok()
            .and_then(|u| u.host_str().map(str::to_string))
            .unwrap_or_default();
        shared.connect_failed(&host, refused.clone());
        return Err(std::io::Error::other(refused));
    }
    if info.status == 101 {
        // An upgraded connection (a websocket) is a tunnel from here on.
        to.write_all(&head).await?;
        to.write_all(&pending).await?;
        to.flush().await?;
        return relay_tunnel(from, to, shared).await;
    }
    let reusable = framing.keep_alive && info.keep_alive;
    if reusable {
        to.write_all(&head).await?;
    } else {
        // The proxy closes the connection after the response, and says so.
        to.write_all(&closing(&head)).await?;
    }
    let bodiless = framing.head || matches!(info.status, 204 | 304);
    let mut meter = BodyMeter::new(&info, limit, bodiless);
    let mut buf = vec![0u8; 16 * 1024];
    let mut chunk = pending;
    loop {
        if !chunk.is_empty() {
            if !shared.add_loaded(chunk.len() as u64) {
                return Ok(Relay::Cut);
            }
            if meter.feed(&chunk).is_err() {
                shared.record_cut(Some(url.to_string()), FetchError::TooLarge { limit });
                return Ok(Relay::Cut);
            }
            to.write_all(&chunk).await?;
            to.flush().await?;
        }
        if meter.complete() {
            return Ok(if reusable {
                Relay::Reusable
            } else {
                Relay::Done
            });
        }
        let n = from.read(&mut buf).await?;
        if n == 0 {
            return Ok(Relay::Done);
        }
        chunk = buf[..n].to_vec();
    }
}

/// `head` with `Connection: close` in place of its own connection headers.
fn closing(head: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(head);
    let mut out = String::with_capacity(text.len() + 19);
    for line in text.split("\r\n").filter(|l| !l.is_empty()) {
        let name = line.split(':').next().unwrap_or("").trim();
        if !name.eq_ignore_ascii_case("connection") && !name.eq_ignore_ascii_case("keep-alive") {
            out.push_str(line);
            out.push_str("\r\n");
        }
    }
    out.push_str("Connection: close\r\n\r\n");
    out.into_bytes()
}

/// What the relay needs from a response head.
struct ResponseHead {
    status: u16,
    /// HTTP/1.1 without `Connection: close`: the server keeps the connection.
    keep_alive: bool,
    chunked: bool,
    length: Option<u64>,
    /// Content codings in the order they were applied.
    encodings: Vec<String>,
}

impl ResponseHead {
    fn parse(head: &[u8]) -> Self {
        let text = String::from_utf8_lossy(head);
        let mut lines = text.split("\r\n");
        let status_line = lines.next().unwrap_or("");
        let status = status_line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let mut parsed = ResponseHead {
            status,
            keep_alive: status_line.starts_with("HTTP/1.1 "),
            chunked: false,
            length: None,
            encodings: Vec::new(),
        };
        for line in lines {
            let Some((name, value)) = line.split_once(':') else {
                continue;
            };
            let (name, value) = (name.trim(), value.trim().to_ascii_lowercase());
            if name.eq_ignore_ascii_case("transfer-encoding") {
                parsed.chunked |= value.split(',').any(|v| v.trim() == "chunked");
            } else if name.eq_ignore_ascii_case("connection") {
                parsed.keep_alive &= !value.split(',').any(|v| v.trim() == "close");
            } else if name.eq_ignore_ascii_case("content-length") {
                parsed.length = value.parse().ok();
            } else if name.eq_ignore_ascii_case("content-encoding") {
                parsed.encodings.extend(
                    value
                        .split(',')
                        .map(|v| v.trim().to_string())
                        .filter(|v| !v.is_empty() && v != "identity"),
                );
            }
        }
        parsed
    }
}

/// Counts a response body as the browser will see it: transfer coding removed, content codings
/// decoded (into nothing: only the count is kept). A coding it cannot decode is counted as sent.
struct BodyMeter {
    chunks: Option<Dechunker>,
    /// Bytes of body still expected when the length is known.
    remaining: Option<u64>,
    decoder: Option<Box<dyn Write + Send>>,
    /// Codings still to set up, on the first bytes of the body (deflate comes in two forms).
    encodings: Vec<String>,
    decoded: Arc<AtomicU64>,
    limit: u64,
}

impl BodyMeter {
    /// A meter for the body `head` announces (none when `bodiless`).
    fn new(head: &ResponseHead, limit: u64, bodiless: bool) -> Self {
        BodyMeter {
            chunks: (head.chunked && !bodiless).then(Dechunker::default),
            remaining: match (bodiless, head.chunked) {
                (true, _) => Some(0),
                (false, true) => None,
                (false, false) => head.length,
            },
            decoder: None,
            encodings: head.encodings.clone(),
            decoded: Arc::new(AtomicU64::new(0)),
            limit,
        }
    }

    /// Counts `data` (as received); an error once the body is larger than the limit.
    fn feed(&mut self, data: &[u8]) -> Result<(), ()> {
        if let Some(remaining) = self.remaining.as_mut() {
            *remaining = remaining.saturating_sub(data.len() as u64);
        }
        match self.chunks.take() {
            Some(mut chunks) => {
                let mut result = Ok(());
                chunks.feed(data, |payload| {
                    if result.is_ok() {
                        result = self.count(payload);
                    }
                });
                self.chunks = Some(chunks);
                result
            }
            None => self.count(data),
        }
    }

    fn count(&mut self, payload: &[u8]) -> Result<(), ()> {
        if payload.is_empty() {
            return Ok(());
        }
        if !self.encodings.is_empty() {
            self.decoder =
                decoder_chain(&self.encodings, payload, self.decoded.clone(), self.limit);
            self.encodings.clear();
        }
        match self.decoder.as_mut() {
            Some(decoder) => {
                if decoder.write_all(payload).is_err() {
                    // Past the limit, or not decodable: then it is counted as sent.
                    self.decoder = None;
                    if self.decoded.load(Ordering::Acquire) <= self.limit {
                        self.decoded
                            .fetch_add(payload.len() as u64, Ordering::AcqRel);
                    }
                }
            }
            None => {
                self.decoded
                    .fetch_add(payload.len() as u64, Ordering::AcqRel);
            }
        }
        if self.decoded.load(Ordering::Acquire) > self.limit {
            return Err(());
        }
        Ok(())
    }

    /// Whether the whole body has passed.
    fn complete(&self) -> bool {
        self.remaining == Some(0) || self.chunks.as_ref().is_some_and(Dechunker::done)
    }
}

/// Counts what is written to it; fails once more than `limit` bytes came.
struct Count {
    seen: Arc<AtomicU64>,
    limit: u64,
}

impl Write for Count {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let seen = self.seen.fetch_add(buf.len() as u64, Ordering::AcqRel) + buf.len() as u64;
        if seen > self.limit {
            return Err(std::io::Error::other("larger than the limit"));
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Decoders for `encodings` (in the order applied) feeding a counter; `None` when one of them
/// is not known (zstd is not offered to servers, so it should not come).
fn decoder_chain(
    encodings: &[String],
    first: &[u8],
    seen: Arc<AtomicU64>,
    limit: u64,
) -> Option<Box<dyn Write + Send>> {
    let mut writer: Box<dyn Write + Send> = Box::new(Count { seen, limit });
    let last = encodings.len().saturating_sub(1);
    for (i, encoding) in encodings.iter().enumerate() {
        writer = match encoding.as_str() {
            "gzip" | "x-gzip" => Box::new(flate2::write::GzDecoder::new(writer)),
            // Browsers take deflate with or without its zlib wrapper; the first bytes tell, when
            // it is the coding applied last (the one the body starts with).
            "deflate" if i == last && !is_zlib(first) => {
                Box::new(flate2::write::DeflateDecoder::new(writer))
            }
            "deflate" => Box::new(flate2::write::ZlibDecoder::new(writer)),
            "br" => Box::new(brotli_decompressor::DecompressorWriter::new(
                writer,
                16 * 1024,
            )),
            _ => return None,
        };
    }
    Some(writer)
}

/// Whether `data` starts with a zlib header.
fn is_zlib(data: &[u8]) -> bool {
    match data {
        [cmf, flg, ..] => cmf & 0x0f == 8 && (u16::from(*cmf) * 256 + u16::from(*flg)) % 31 == 0,
        [cmf] => cmf & 0x0f == 8 && cmf >> 4 <= 7,
        [] => false,
    }
}

/// Removes the chunked transfer coding, incrementally.
#[derive(Default)]
struct Dechunker {
    state: ChunkState,
    size: u64,
}

#[derive(Default, Clone, Copy, PartialEq, Eq)]
enum ChunkState {
    /// Reading the size (hex digits).
    #[default]
    Size,
    /// Skipping a chunk extension up to the end of the line.
    Extension,
    /// Inside the data, with this many bytes left.
    Data(u64),
    /// After the data, up to the end of its line.
    DataEnd,
    /// In the trailer; whether the current line is empty so far.
    Trailer(bool),
    Done,
}

impl Dechunker {
    fn done(&self) -> bool {
        self.state == ChunkState::Done
    }

    fn feed(&mut self, mut data: &[u8], mut payload: impl FnMut(&[u8])) {
        while let Some((&byte, rest)) = data.split_first() {
            match self.state {
                ChunkState::Data(left) => {
                    let take = usize::try_from(left).unwrap_or(usize::MAX).min(data.len());
                    payload(&data[..take]);
                    data = &data[take..];
                    let left = left - take as u64;
                    self.state = if left == 0 {
                        ChunkState::DataEnd
                    } else {
                        ChunkState::Data(left)
                    };
                    continue;
                }
                ChunkState::Size => match byte {
                    b'0'..=b'9' | b'a'..=b'f' | b'A'..=b'F' => {
                        let digit = u64::from((byte as char).to_digit(16).unwrap_or(0));
                        self.size = self.size.saturating_mul(16).saturating_add(digit);
                    }
                    b'\n' => self.end_size_line(),
                    b'\r' => {}
                    _ => self.state = ChunkState::Extension,
                },
                ChunkState::Extension => {
                    if byte == b'\n' {
                        self.end_size_line();
                    }
                }
                ChunkState::DataEnd => {
                    if byte == b'\n' {
                        self.state = ChunkState::Size;
                    }
                }
                ChunkState::Trailer(empty) => match byte {
                    b'\n' if empty => self.state = ChunkState::Done,
                    b'\n' => self.state = ChunkState::Trailer(true),
                    b'\r' => {}
                    _ => self.state = ChunkState::Trailer(false),
                },
                ChunkState::Done => return,
            }
            data = rest;
        }
    }

    fn end_size_line(&mut self) {
        self.state = if self.size == 0 {
            ChunkState::Trailer(true)
        } else {
            ChunkState::Data(self.size)
        };
        self.size = 0;
    }
}

/// The addresses of `host` the policy allows, and the first refusal if it refused one. An
/// unresolvable name has neither: the connect fails as a plain network error.
async fn allowed_addrs(
    policy: &NetworkPolicy,
    host: &str,
    port: u16,
) -> (Vec<SocketAddr>, Option<Refused>) {
    match tokio::time::timeout(CONNECT_TIMEOUT, policy.screen(host, port)).await {
        Ok(Ok(screened)) => screened,
        _ => (Vec::new(), None),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_kept_alive_only_when_its_body_is_framed_by_its_length() {
        let length = |head: &str| RequestHead::parse(head).body_length();
        assert_eq!(length("GET / HTTP/1.1\r\nHost: a\r\n\r\n"), Some(0));
        assert_eq!(
            length("POST / HTTP/1.1\r\ncontent-length: 12\r\n\r\n"),
            Some(12)
        );
        assert_eq!(length("POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n"), None);
        assert_eq!(
            length("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"),
            None
        );
        assert_eq!(
            length("GET /ws HTTP/1.1\r\nUpgrade: websocket\r\n\r\n"),
            None
        );
        assert_eq!(
            length("PUT / HTTP/1.1\r\nExpect: 100-continue\r\n\r\n"),
            None
        );
    }

    #[test]
    fn forwarded_heads_offer_measurable_codings_and_keep_an_upgrade() {
        let head = "GET /x HTTP/1.1\r\nHost: a\r\nAccept-Encoding: gzip, zstd\r\n\
                    Connection: keep-alive\r\nProxy-Connection: keep-alive\r\n\r\n";
        let request = RequestHead::parse(head);
        let closed = request.forward("/x", false, "");
        assert_eq!(
            closed,
            "GET /x HTTP/1.1\r\nHost: a\r\nAccept-Encoding: gzip, deflate, br\r\n\
             Connection: close\r\n\r\n"
        );
        assert!(!request.forward("/x", true, "").contains("Connection"));
        let upgrade = RequestHead::parse(
            "GET /ws HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
        );
        let sent = upgrade.forward("/ws", false, "");
        assert!(sent.contains("Connection: Upgrade\r\n") && !sent.contains("close"));
    }

    #[test]
    fn a_response_keeps_its_connection_unless_it_says_close() {
        let keeps = |head: &[u8]| ResponseHead::parse(head).keep_alive;
        assert!(keeps(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n"));
        assert!(!keeps(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n"));
        assert!(!keeps(b"HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\n"));
        assert_eq!(
            closing(b"HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\nA: b\r\n\r\n"),
            b"HTTP/1.1 200 OK\r\nA: b\r\nConnection: close\r\n\r\n"
        );
    }

    #[test]
    fn a_bodiless_response_is_complete_at_once() {
        let head = ResponseHead::parse(b"HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\n");
        assert!(BodyMeter::new(&head, 10, true).complete());
        assert!(!BodyMeter::new(&head, 10, false).complete());
        let chunked = ResponseHead::parse(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
        assert!(BodyMeter::new(&chunked, 10, true).complete());
    }
}
