//! The plain HTTP fetcher: hyper-util's pooled HTTP/1.1 client over the engine's own connector
//! ([`super::connect`]), which checks every connection against the [`NetworkPolicy`] and
//! reaches servers directly or through a location's proxy. Redirects are followed here, one
//! exchange a hop, up to a limit: each hop's URL is checked before it is asked for (through a
//! location's proxy, which resolves names itself, its name is resolved and checked first).
//! Content codings are decoded as browsers decode them ([`encoding`]), the body read in
//! chunks up to a size cap counted again after decompression (so a gzip bomb is an error, not
//! an out-of-memory), and the whole exchange is under one deadline.

use super::connect::Connector;
use super::encoding;
use super::location_proxy::LocationProxy;
use super::policy::NetworkPolicy;
use super::tls::Verification;
use super::{
    CutShort, FetchError, FetchRequest, FetchedPage, Fetcher, Hop, MAX_URL_LEN, basic_authorization,
};
use async_trait::async_trait;
use bytes::Bytes;
use futures::FutureExt;
use http::header::{self, HeaderValue};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use std::collections::BTreeMap;
use std::error::Error as StdError;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use url::Url;

/// Encoded bodies larger than this are decoded on the blocking pool.
const INLINE_DECODE_LIMIT: usize = 64 * 1024;

/// How long an idle pooled connection is kept.
const POOL_IDLE: Duration = Duration::from_secs(30);

/// Settings of the HTTP fetcher.
#[derive(Debug, Clone)]
pub struct HttpSettings {
    /// Connect timeout.
    pub connect_timeout: Duration,
    /// Timeout of the whole exchange, body included.
    pub total_timeout: Duration,
    /// Largest body accepted, after decompression.
    pub max_body_bytes: u64,
    /// Most redirects followed.
    pub max_redirects: usize,
    /// User-Agent header unless the request sets one.
    pub user_agent: String,
    /// Which addresses may be reached.
    pub policy: Arc<NetworkPolicy>,
    /// Certificates (DER) trusted as roots besides the system's, for servers with an internal
    /// CA (or a test's own).
    pub root_certificates: Vec<Vec<u8>>,
}

impl Default for HttpSettings {
    fn default() -> Self {
        HttpSettings {
            connect_timeout: Duration::from_secs(10),
            total_timeout: Duration::from_secs(30),
            max_body_bytes: 10 * 1024 * 1024,
            max_redirects: 10,
            user_agent: concat!("wachet/", env!("CARGO_PKG_VERSION")).to_string(),
            policy: Arc::new(NetworkPolicy::public_only()),
            root_certificates: Vec::new(),
        }
    }
}

/// The HTTP fetcher: one connection pool for direct requests and one per proxy location.
#[derive(Clone)]
pub struct HttpFetcher {
    direct: Route,
    proxied: BTreeMap<String, Route>,
    settings: HttpSettings,
    user_agent: HeaderValue,
}

impl std::fmt::Debug for HttpFetcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpFetcher")
            .field("locations", &self.proxied.keys().collect::<Vec<_>>())
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// A way to servers (directly, or through one location's proxy) and its pool. Each has its own
/// TLS configuration, so its own cache of TLS sessions: a route's session is never resumed on
/// another (a site could tell a location proxy's traffic from the direct route's by the tickets
/// it issued to each).
#[derive(Clone)]
struct Route {
    client: Client<Connector, Full<Bytes>>,
    connector: Connector,
}

impl Route {
    fn new(
        settings: &HttpSettings,
        verification: &Verification,
        proxy: Option<LocationProxy>,
    ) -> Result<Self, FetchError> {
        let tls = verification
            .client_config(b"http/1.1")
            .map_err(FetchError::Other)?;
        let connector = Connector::new(
            settings.policy.clone(),
            settings.connect_timeout,
            tls,
            proxy,
        );
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(POOL_IDLE)
            .pool_timer(TokioTimer::new())
            .build(connector.clone());
        Ok(Route { client, connector })
    }
}

impl HttpFetcher {
    /// A fetcher; `proxies` maps a location (lower case) to a proxy URL (`http://`, `https://`,
    /// `socks5://` or `socks5h://`). An error when a root certificate of the settings cannot be
    /// read or a proxy URL cannot be used; the system's roots are read at the first https
    /// request, which fails saying so when there are none.
    pub fn new(
        settings: HttpSettings,
        proxies: &BTreeMap<String, String>,
    ) -> Result<Self, FetchError> {
        let verification =
            Verification::new(&settings.root_certificates).map_err(FetchError::Other)?;
        Self::verifying_with(settings, proxies, &verification)
    }

    /// A fetcher whose connections verify servers with `verification` (an engine's, which its
    /// other TLS clients share).
    pub(crate) fn verifying_with(
        settings: HttpSettings,
        proxies: &BTreeMap<String, String>,
        verification: &Verification,
    ) -> Result<Self, FetchError> {
        let direct = Route::new(&settings, verification, None)?;
        let mut proxied = BTreeMap::new();
        for (location, url) in proxies {
            let unusable = |reason: String| {
                FetchError::Other(format!("the proxy for location {location}: {reason}"))
            };
            let url = Url::parse(url).map_err(|e| unusable(format!("not a URL ({e})")))?;
            let proxy = LocationProxy::new(&url, Some(verification)).map_err(unusable)?;
            proxied.insert(
                location.clone(),
                Route::new(&settings, verification, Some(proxy))?,
            );
        }
        let user_agent = HeaderValue::from_str(&settings.user_agent)
            .map_err(|e| FetchError::Other(format!("the user agent cannot be sent: {e}")))?;
        Ok(HttpFetcher {
            direct,
            proxied,
            settings,
            user_agent,
        })
    }

    /// The settings in force.
    pub fn settings(&self) -> &HttpSettings {
        &self.settings
    }

    /// One request and its response, redirects not followed: a redirect is handed back as a
    /// hop.
    async fn exchange(&self, request: &FetchRequest) -> Result<Hop, FetchError> {
        let start = Instant::now();
        let policy = &self.settings.policy;
        check_url(policy, &request.url)?;
        let (route, via_proxy) = match &request.proxy {
            Some(loc) => match self.proxied.get(loc) {
                Some(route) => (route, true),
                None => return Err(FetchError::Other(format!("no proxy for location {loc}"))),
            },
            None => (&self.direct, false),
        };
        if via_proxy {
            // The proxy resolves the target, so check the name here too.
            check_name(policy, &request.url).await?;
        }
        let sent = self.http_request(request, route)?;
        let response = route
            .client
            .request(sent)
            .await
            .map_err(|e| describe(&e, &request.url))?;
        let url = request.url.clone();
        let status = response.status().as_u16();
        // A 407 is the location's proxy's own only where it answered (plain http in absolute
        // form); through a tunnel, it is the site's.
        if status == 407
            && url.scheme() == "http"
            && let Some(proxy) = route.connector.absolute_form()
        {
            return Err(FetchError::Connect {
                host: url.host_str().unwrap_or_default().to_string(),
                reason: proxy.credentials_refused(),
            });
        }
        if response.status().is_redirection()
            && let Some(location) = response.headers().get(header::LOCATION)
        {
            if let Some(err) = unfollowed(&url, location.as_bytes()) {
                return Err(err);
            }
            let target = url.join(String::from_utf8_lossy(location.as_bytes()).trim());
            // The statuses browsers follow; another 3xx (a 300's choices) is the page.
            if matches!(status, 301 | 302 | 303 | 307 | 308)
                && let Ok(location) = target
            {
                return Ok(Hop::Redirect {
                    status,
                    location,
                    elapsed: start.elapsed(),
                });
            }
        }
        let (parts, body) = response.into_parts();
        let content_type = parts
            .headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        // The body's own length, as hyper framed it: none for a 204, a 304 or a HEAD's answer,
        // whatever their Content-Length says, nor for a chunked body.
        let length = hyper::body::Body::size_hint(&body).exact();
        let bodiless = request.method == http::Method::HEAD;
        let body = match bodiless {
            true => Bytes::new(),
            false => self.read_body(body, length).await?,
        };
        let limit = self.settings.max_body_bytes;
        let codings = encoding::codings(&parts.headers);
        let body = match codings.is_empty() {
            true => body,
            // Decompression is CPU work: off the async threads once it is more than a trifle.
            false if body.len() > INLINE_DECODE_LIMIT => {
                tokio::task::spawn_blocking(move || encoding::decode(body, &codings, limit))
                    .await
                    .map_err(|e| FetchError::Body(format!("decoding stopped: {e}")))??
            }
            false => encoding::decode(body, &codings, limit)?,
        };
        Ok(Hop::Page(FetchedPage {
            url,
            status,
            content_type,
            headers: parts.headers,
            rendered: false,
            bodiless,
            body,
            elapsed: start.elapsed(),
        }))
    }

    /// The request as sent: the URL without its credentials (they become Basic
    /// authorization, as browsers send them) or fragment, and the fetcher's default headers
    /// where the request sets none of its own.
    fn http_request(
        &self,
        request: &FetchRequest,
        route: &Route,
    ) -> Result<hyper::Request<Full<Bytes>>, FetchError> {
        let url = &request.url;
        let credentials = !url.username().is_empty() || url.password().is_some();
        let uri = match credentials {
            false => hyper::Uri::try_from(&url[..url::Position::AfterQuery]),
            true => hyper::Uri::try_from(format!(
                "{}{}",
                &url[..url::Position::BeforeUsername],
                &url[url::Position::BeforeHost..url::Position::AfterQuery]
            )),
        }
        .map_err(|e| {
            // Not the URL as given: it may hold a password.
            let shown = &url[url::Position::BeforeHost..url::Position::AfterQuery];
            FetchError::Other(format!(
                "{}://{} cannot be requested: {e}",
                url.scheme(),
                shorten(shown)
            ))
        })?;
        let body = match &request.body {
            Some(body) => Full::new(Bytes::from(body.clone())),
            None => Full::new(Bytes::new()),
        };
        let mut sent = hyper::Request::new(body);
        *sent.method_mut() = request.method.clone();
        *sent.uri_mut() = uri;
        let headers = sent.headers_mut();
        *headers = request.headers.clone();
        if !headers.contains_key(header::USER_AGENT) {
            headers.insert(header::USER_AGENT, self.user_agent.clone());
        }
        if !headers.contains_key(header::ACCEPT) {
            headers.insert(header::ACCEPT, HeaderValue::from_static("*/*"));
        }
        if !headers.contains_key(header::ACCEPT_ENCODING) {
            headers.insert(
                header::ACCEPT_ENCODING,
                HeaderValue::from_static(encoding::ACCEPT_ENCODING),
            );
        }
        if credentials
            && !headers.contains_key(header::AUTHORIZATION)
            && let Some(value) = basic_authorization(url)
        {
            headers.insert(header::AUTHORIZATION, value);
        }
        if url.scheme() == "http"
            && let Some(proxy) = route.connector.absolute_form()
            && let Some(value) = proxy.authorization()
        {
            headers.insert(header::PROXY_AUTHORIZATION, value.clone());
        }
        Ok(sent)
    }

    /// Reads a response's body, refusing one larger than the settings allow. A body that
    /// arrives in one piece (most pages on a fast network) is kept as it came, not copied.
    async fn read_body(&self, body: Incoming, length: Option<u64>) -> Result<Bytes, FetchError> {
        // A body that stopped short of its announced length says so by that length.
        self.read_body_of(body, length)
            .await
            .map_err(|err| match (err, length) {
                (FetchError::CutShort(CutShort::LastChunk), Some(_)) => {
                    FetchError::CutShort(CutShort::ContentLength)
                }
                (err, _) => err,
            })
    }

    async fn read_body_of(
        &self,
        mut body: Incoming,
        length: Option<u64>,
    ) -> Result<Bytes, FetchError> {
        let limit = self.settings.max_body_bytes;
        let too_large = |len: usize| len as u64 > limit;
        if length.is_some_and(|len| len > limit) {
            return Err(FetchError::TooLarge { limit });
        }
        let expected = length.unwrap_or(0).min(limit);
        let Some(first) = next_chunk(&mut body).await? else {
            return Ok(Bytes::new());
        };
        if too_large(first.len()) {
            return Err(FetchError::TooLarge { limit });
        }
        let Some(second) = next_chunk(&mut body).await? else {
            return Ok(first);
        };
        let capacity = usize::try_from(expected)
            .unwrap_or(0)
            .max(first.len() + second.len());
        let mut bytes = Vec::with_capacity(capacity);
        bytes.extend_from_slice(&first);
        let mut chunk = Some(second);
        while let Some(piece) = chunk {
            if too_large(bytes.len() + piece.len()) {
                return Err(FetchError::TooLarge { limit });
            }
            bytes.extend_from_slice(&piece);
            chunk = next_chunk(&mut body).await?;
        }
        Ok(Bytes::from(bytes))
    }

    /// One fetch under its deadline: one exchange, or every hop of its redirects. The deadline
    /// covers everything: name resolution, connecting, every redirect, the body and its
    /// decoding. Given the work rather than choosing it inside, and a combinator rather than an
    /// `async fn`: a future holds the state of its largest branch, and an `async fn` keeps its
    /// argument beside what it awaits, so a crawled page's single exchange, which the fetcher
    /// boxes, was past the allocator's per-thread cache size (1216 bytes; 872 now).
    fn bounded(
        &self,
        work: impl Future<Output = Result<Hop, FetchError>>,
    ) -> impl Future<Output = Result<Hop, FetchError>> {
        let limit = self.settings.total_timeout;
        tokio::time::timeout(limit, work).map(move |finished| match finished {
            Ok(result) => result,
            Err(_) => Err(FetchError::Timeout(limit)),
        })
    }

    /// Follows a request's redirects one exchange at a time, each hop's URL checked as the
    /// first was (through a location's proxy, its name resolved and checked first: the proxy
    /// would resolve it where the network policy never sees the answer).
    async fn follow_redirects(&self, request: &FetchRequest) -> Result<Hop, FetchError> {
        let mut hop = request.clone();
        let mut redirects = 0;
        loop {
            let answer = match self.exchange(&hop).await {
                Err(e) if redirects > 0 => return Err(at_redirect(&hop.url, e)),
                answer => answer?,
            };
            let (status, location) = match answer {
                Hop::Page(page) => return Ok(Hop::Page(page)),
                Hop::Redirect {
                    status, location, ..
                } => (status, location),
            };
            if redirects == self.settings.max_redirects {
                return Err(FetchError::TooManyRedirects {
                    limit: self.settings.max_redirects,
                });
            }
            redirects += 1;
            hop = redirected(&hop, status, location);
        }
    }
}

/// The next piece of a body; `None` at its end.
async fn next_chunk(body: &mut Incoming) -> Result<Option<Bytes>, FetchError> {
    loop {
        match body.frame().await {
            None => return Ok(None),
            Some(Ok(frame)) => {
                // Trailers carry nothing a check reads.
                if let Ok(data) = frame.into_data() {
                    return Ok(Some(data));
                }
            }
            Some(Err(e)) => return Err(describe_body(&e)),
        }
    }
}

/// A body's read error: a connection that closed before the body's end (its Content-Length,
/// or the last chunk of a chunked body) or was reset while it arrived is a page cut short;
/// anything else, what hyper says.
fn describe_body(error: &hyper::Error) -> FetchError {
    use std::io::ErrorKind as Io;
    // hyper frames a body by its Content-Length or by chunks; without either it ends at the
    // connection's close, which is no error.
    let unfinished = FetchError::CutShort(CutShort::LastChunk);
    let mut source: Option<&(dyn StdError + 'static)> = Some(error);
    let mut innermost = error.to_string();
    while let Some(e) = source {
        match e.downcast_ref::<std::io::Error>().map(std::io::Error::kind) {
            Some(Io::UnexpectedEof) => return unfinished,
            Some(Io::ConnectionReset | Io::ConnectionAborted | Io::BrokenPipe) => {
                return FetchError::CutShort(CutShort::Reset);
            }
            _ => {}
        }
        innermost = e.to_string();
        source = e.source();
    }
    if error.is_incomplete_message() {
        return unfinished;
    }
    FetchError::Body(innermost)
}

/// The client's error as one a user can act on: the connector's own (a refusal, a timeout, a
/// connection that failed, each naming its host) as it came; what hyper says otherwise.
fn describe(error: &hyper_util::client::legacy::Error, url: &Url) -> FetchError {
    let mut source: Option<&(dyn StdError + 'static)> = Some(error);
    let mut innermost = error.to_string();
    while let Some(e) = source {
        if let Some(fetch) = e.downcast_ref::<FetchError>() {
            return fetch.clone();
        }
        innermost = e.to_string();
        source = e.source();
    }
    let host = url.host_str().unwrap_or("").to_string();
    if error.is_connect() {
        return FetchError::Connect {
            host,
            reason: innermost,
        };
    }
    FetchError::Other(innermost)
}

#[async_trait]
impl Fetcher for HttpFetcher {
    async fn fetch(&self, request: &FetchRequest) -> Result<FetchedPage, FetchError> {
        match self.bounded(self.follow_redirects(request)).await? {
            Hop::Page(page) => Ok(page),
            // Following, every redirect is taken or is an error; no hop comes back.
            Hop::Redirect { location, .. } => Err(FetchError::BadRedirect {
                url: location.to_string(),
            }),
        }
    }

    async fn fetch_hop(&self, request: &FetchRequest) -> Result<Hop, FetchError> {
        self.bounded(self.exchange(request)).await
    }
}

/// An error met at a redirect's target, named by it where the error does not say where it
/// happened.
fn at_redirect(target: &Url, error: FetchError) -> FetchError {
    match error {
        FetchError::Connect { .. } | FetchError::ConnectTimeout { .. } | FetchError::Other(_) => {
            FetchError::AfterRedirect {
                target: shorten(target.as_str()),
                error: Box::new(error),
            }
        }
        other => other,
    }
}

/// The request a redirect asks for, as browsers make it: a 303, and a 301 or 302 of a POST,
/// become a bodiless GET; credentials stay with their origin (a URL's own too); the page
/// redirected from is the referrer, unless that would tell an http page of an https one.
fn redirected(previous: &FetchRequest, status: u16, location: Url) -> FetchRequest {
    use http::Method;
    let mut next = previous.clone();
    let to_get = match status {
        303 => previous.method != Method::HEAD,
        301 | 302 => previous.method == Method::POST,
        _ => false,
    };
    if to_get {
        next.method = Method::GET;
        next.body = None;
        for name in [header::CONTENT_TYPE, header::CONTENT_ENCODING] {
            next.headers.remove(name);
        }
    }
    let cross_origin = location.origin() != previous.url.origin();
    if cross_origin {
        for name in [
            header::AUTHORIZATION,
            header::COOKIE,
            header::PROXY_AUTHORIZATION,
            header::WWW_AUTHENTICATE,
        ] {
            next.headers.remove(name);
        }
    } else if !next.headers.contains_key(header::AUTHORIZATION)
        && location.username().is_empty()
        && let Some(value) = basic_authorization(&previous.url)
    {
        next.headers.insert(header::AUTHORIZATION, value);
    }
    next.headers.remove(header::REFERER);
    if !(previous.url.scheme() == "https" && location.scheme() == "http") {
        let mut referrer = previous.url.clone();
        let _ = referrer.set_username("");
        let _ = referrer.set_password(None);
        referrer.set_fragment(None);
        if let Ok(value) = HeaderValue::from_str(referrer.as_str()) {
            next.headers.insert(header::REFERER, value);
        }
    }
    next.url = location;
    next
}

/// Why a redirect cannot be followed, when it is an error: a `Location` that is not UTF-8, not
/// a URL, or not http(s). `None` for a fine target (a `300 Multiple Choices`'s, which is not
/// followed, say: that response is the page).
fn unfollowed(base: &Url, location: &[u8]) -> Option<FetchError> {
    let shown = || {
        // Bytes shown as a browser's address bar would: non-ASCII ones percent-encoded.
        let mut shown = String::new();
        for &b in location {
            match b {
                0x21..=0x7e => shown.push(char::from(b)),
                _ => shown.push_str(&format!("%{b:02X}")),
            }
        }
        shorten(&shown)
    };
    // UTF-8 is followed percent-encoded, as browsers follow it; other bytes name no URL.
    if std::str::from_utf8(location).is_err() {
        return Some(FetchError::InvalidRedirect {
            target: shown(),
            reason: "is not a valid URL (it has bytes that are not UTF-8)".into(),
        });
    }
    let text = String::from_utf8_lossy(location);
    match base.join(text.trim()) {
        Err(e) => Some(FetchError::InvalidRedirect {
            target: shown(),
            reason: format!("is not a valid URL ({e})"),
        }),
        Ok(url) if !matches!(url.scheme(), "http" | "https") => Some(FetchError::BadRedirect {
            url: shorten(url.as_str()),
        }),
        Ok(url) if url.as_str().len() > MAX_URL_LEN => Some(FetchError::InvalidRedirect {
            target: shorten(url.as_str()),
            reason: format!("is longer than {MAX_URL_LEN} characters"),
        }),
        Ok(_) => None,
    }
}

/// A URL cut for an error message: its first 200 characters.
fn shorten(url: &str) -> String {
    match url.char_indices().nth(200) {
        Some((at, _)) => format!("{}...", &url[..at]),
        None => url.to_string(),
    }
}

/// Refuses a URL outside the policy's origins, or with an IP-literal host the policy does not
/// allow (names go through the resolver).
fn check_url(policy: &NetworkPolicy, url: &Url) -> Result<(), FetchError> {
    let port = url.port_or_known_default().unwrap_or(0);
    policy.check_origin(url.host_str().unwrap_or(""), port)?;
    check_literal(policy, url)
}

/// Refuses an IP-literal host the policy does not allow (names go through the resolver).
fn check_literal(policy: &NetworkPolicy, url: &Url) -> Result<(), FetchError> {
    let ip: Option<IpAddr> = match url.host() {
        Some(url::Host::Ipv4(v4)) => Some(v4.into()),
        Some(url::Host::Ipv6(v6)) => Some(v6.into()),
        _ => None,
    };
    if let Some(ip) = ip {
        policy.check(url.host_str().unwrap_or(""), ip)?;
    }
    Ok(())
}

/// Resolves the URL's host and refuses it when any address is refused.
async fn check_name(policy: &NetworkPolicy, url: &Url) -> Result<(), FetchError> {
    if policy.allows_all() {
        return Ok(());
    }
    let Some(url::Host::Domain(host)) = url.host() else {
        return Ok(());
    };
    let (_, refused) = policy
        .screen(host, 0)
        .await
        .map_err(|e| FetchError::Connect {
            host: host.to_string(),
            reason: e.to_string(),
        })?;
    match refused {
        Some(refusal) => Err(refusal.into()),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_location_in_another_encoding_is_named_as_a_browser_shows_it() {
        let base = Url::parse("http://example.com/a").unwrap();
        // "/café" in Latin-1: not UTF-8, so no URL a browser would follow.
        let err = unfollowed(&base, b"/caf\xe9").unwrap();
        assert_eq!(
            err.to_string(),
            "redirected to \"/caf%E9\", which is not a valid URL (it has bytes that are not UTF-8)"
        );
        let err = unfollowed(&base, b"ftp://example.com/file").unwrap();
        assert!(matches!(err, FetchError::BadRedirect { .. }), "{err}");
        // A fine target (a 300's, not followed) is no error: that response is the page.
        assert!(unfollowed(&base, b"/b").is_none());
    }
}
