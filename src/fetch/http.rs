//! The plain HTTP fetcher (reqwest with rustls): redirects followed up to a limit, every hop
//! and every connection checked against the [`NetworkPolicy`] (through a location's proxy,
//! which resolves names itself, one exchange per hop with each hop's name resolved and checked
//! first, and https tunnelled to the checked address by `fetch::pin`), content codings
//! decoded as browsers decode them ([`encoding`]), the body read in chunks up to a size cap
//! counted again after decompression (so a gzip bomb is an error, not an out-of-memory), and
//! the whole exchange under one deadline.

use super::encoding;
use super::location_proxy::{CREDENTIALS_REFUSED, LocationProxy};
use super::pin::PinningTunnel;
use super::policy::{NetworkPolicy, PolicyResolver};
use super::tls::Verification;
use super::{FetchError, FetchRequest, FetchedPage, Fetcher, Hop, MAX_URL_LEN};
use async_trait::async_trait;
use bytes::Bytes;
use reqwest::redirect;
use reqwest::{Client, Proxy};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::error::Error as StdError;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use url::Url;

tokio::task_local! {
    /// The redirect target the request in flight on this task went to last. reqwest reports
    /// an error at a redirect's target under the URL first asked for; the redirect policy
    /// (which runs inside the request's future, on its task) notes each hop here instead.
    static LAST_HOP: RefCell<Option<Url>>;
}

/// Encoded bodies larger than this are decoded on the blocking pool.
const INLINE_DECODE_LIMIT: usize = 64 * 1024;

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

/// A redirect the policy stopped; carried through reqwest's error chain.
#[derive(Debug, thiserror::Error)]
enum RedirectStop {
    #[error("too many redirects")]
    TooMany,
    #[error("redirect to a non-http(s) URL")]
    Scheme(String),
    #[error("redirect to a URL that is too long")]
    TooLong(String),
}

/// The HTTP fetcher: one connection pool per proxy location, and one more of each that stops
/// at redirects ([`Fetcher::fetch_hop`]).
#[derive(Debug, Clone)]
pub struct HttpFetcher {
    direct: Clients,
    proxied: BTreeMap<String, Clients>,
    /// The pinning tunnels of the locations whose https goes through one ([`super::pin`]).
    tunnels: BTreeMap<String, PinningTunnel>,
    settings: HttpSettings,
}

#[derive(Debug, Clone)]
struct Clients {
    following: Client,
    stopping: Client,
}

/// How a client reaches its targets.
enum Route<'a> {
    Direct,
    /// Everything through this proxy URL.
    Proxy(&'a str),
    /// Plain http through this proxy URL, https through the pinning tunnel in front of it.
    Pinned(&'a str, &'a PinningTunnel),
}

impl Clients {
    /// A route's two clients. They share one TLS configuration, so one cache of TLS sessions:
    /// a route's session is never resumed on another (a site could tell a location proxy's
    /// traffic from the direct route's by the tickets it issued to each).
    fn new(
        settings: &HttpSettings,
        route: &Route,
        verification: Option<&Verification>,
    ) -> Result<Self, reqwest::Error> {
        // Should this fail, reqwest builds its own configuration and reports what is wrong.
        let tls = verification.and_then(|v| v.client_config(b"http/1.1").ok());
        Ok(Clients {
            following: build_client(settings, route, tls.clone(), true)?,
            stopping: build_client(settings, route, tls, false)?,
        })
    }

    fn get(&self, follow: bool) -> &Client {
        if follow {
            &self.following
        } else {
            &self.stopping
        }
    }
}

impl HttpFetcher {
    /// A fetcher; `proxies` maps a location (lower case) to a proxy URL.
    pub fn new(
        settings: HttpSettings,
        proxies: &BTreeMap<String, String>,
    ) -> Result<Self, reqwest::Error> {
        // Where the roots cannot be loaded here, reqwest tries and reports why.
        let verification = Verification::new(&settings.root_certificates).ok();
        Self::verifying_with(settings, proxies, verification.as_ref())
    }

    /// A fetcher whose clients verify servers with `verification` (an engine's, which its
    /// other TLS clients share), or with reqwest's own verifier when `None`.
    pub(crate) fn verifying_with(
        settings: HttpSettings,
        proxies: &BTreeMap<String, String>,
        verification: Option<&Verification>,
    ) -> Result<Self, reqwest::Error> {
        let direct = Clients::new(&settings, &Route::Direct, verification)?;
        let mut proxied = BTreeMap::new();
        let mut tunnels = BTreeMap::new();
        for (location, url) in proxies {
            // Pinning needs a restricting policy to pin to (and an https proxy a verification).
            let tunnel = match Url::parse(url) {
                Ok(parsed) if !settings.policy.allows_all() => {
                    LocationProxy::new(&parsed, verification)
                        .ok()
                        .and_then(|proxy| PinningTunnel::new(proxy, settings.policy.clone()).ok())
                }
                _ => None,
            };
            let route = match &tunnel {
                Some(tunnel) => Route::Pinned(url, tunnel),
                None => Route::Proxy(url),
            };
            proxied.insert(
                location.clone(),
                Clients::new(&settings, &route, verification)?,
            );
            if let Some(tunnel) = tunnel {
                tunnels.insert(location.clone(), tunnel);
            }
        }
        Ok(HttpFetcher {
            direct,
            proxied,
            tunnels,
            settings,
        })
    }

    /// The settings in force.
    pub fn settings(&self) -> &HttpSettings {
        &self.settings
    }

    async fn exchange(&self, request: &FetchRequest, follow: bool) -> Result<Hop, FetchError> {
        let start = Instant::now();
        let policy = &self.settings.policy;
        check_url(policy, &request.url)?;
        let (client, via_proxy) = match &request.proxy {
            Some(loc) => match self.proxied.get(loc) {
                Some(clients) => (clients.get(follow), true),
                None => return Err(FetchError::Other(format!("no proxy for location {loc}"))),
            },
            None => (self.direct.get(follow), false),
        };
        if via_proxy {
            // The proxy resolves the target, so check the name here too.
            check_name(policy, &request.url).await?;
            if let Some(tunnel) = request.proxy.as_ref().and_then(|l| self.tunnels.get(l)) {
                tunnel.start();
            }
        }
        // No timeout of reqwest's own: [`HttpFetcher::bounded`] bounds the whole exchange, body
        // included, and a second timer a request cost the crawl CPU for nothing. The client
        // adds Accept-Encoding unless the request sets one.
        let mut builder = client.request(request.method.clone(), request.url.clone());
        if !request.headers.is_empty() {
            builder = builder.headers(request.headers.clone());
        }
        if let Some(body) = &request.body {
            builder = builder.body(body.clone());
        }
        let (sent, hop) = LAST_HOP
            .scope(RefCell::new(None), async {
                let sent = builder.send().await;
                (sent, LAST_HOP.with(|hop| hop.take()))
            })
            .await;
        let mut response = sent.map_err(|e| self.describe(e, hop.as_ref()))?;
        let final_url = response.url().clone();
        if !via_proxy && let Some(peer) = response.remote_addr() {
            policy.check(final_url.host_str().unwrap_or(""), peer.ip())?;
        }
        let status = response.status().as_u16();
        if via_proxy && status == 407 {
            // The location's proxy answering for itself, not the page.
            return Err(FetchError::Connect {
                host: request.url.host_str().unwrap_or_default().to_string(),
                reason: CREDENTIALS_REFUSED.to_string(),
            });
        }
        if response.status().is_redirection()
            && let Some(location) = response.headers().get(reqwest::header::LOCATION)
        {
            if let Some(err) = unfollowed(&final_url, location.as_bytes()) {
                return Err(err);
            }
            // Not following, reqwest hands back every redirect: the caller takes the hop.
            let target = final_url.join(String::from_utf8_lossy(location.as_bytes()).trim());
            // Only the statuses reqwest follows; another 3xx (a 300's choices) is the page.
            let followed = matches!(status, 301 | 302 | 303 | 307 | 308);
            if !follow
                && followed
                && let Ok(location) = target
            {
                return Ok(Hop::Redirect {
                    status,
                    location,
                    elapsed: start.elapsed(),
                });
            }
        }
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let limit = self.settings.max_body_bytes;
        let body = self.read_body(&mut response).await?;
        let codings = encoding::codings(response.headers());
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
            url: final_url,
            status,
            content_type,
            // The body is read: the headers are no longer needed where they are.
            headers: std::mem::take(response.headers_mut()),
            rendered: false,
            bodiless: request.method == reqwest::Method::HEAD,
            body,
            elapsed: start.elapsed(),
        }))
    }

    /// Reads a response's body, refusing one larger than the settings allow. A body that
    /// arrives in one piece (most pages on a fast network) is kept as it came, not copied.
    async fn read_body(&self, response: &mut reqwest::Response) -> Result<Bytes, FetchError> {
        let limit = self.settings.max_body_bytes;
        let too_large = |len: usize| len as u64 > limit;
        if response.content_length().is_some_and(|len| len > limit) {
            return Err(FetchError::TooLarge { limit });
        }
        let expected = response.content_length().unwrap_or(0).min(limit);
        let Some(first) = self.chunk(response).await? else {
            return Ok(Bytes::new());
        };
        if too_large(first.len()) {
            return Err(FetchError::TooLarge { limit });
        }
        let Some(second) = self.chunk(response).await? else {
            return Ok(first);
        };
        let capacity = usize::try_from(expected)
            .unwrap_or(0)
            .max(first.len() + second.len());
        let mut body = Vec::with_capacity(capacity);
        body.extend_from_slice(&first);
        let mut chunk = Some(second);
        while let Some(piece) = chunk {
            if too_large(body.len() + piece.len()) {
                return Err(FetchError::TooLarge { limit });
            }
            body.extend_from_slice(&piece);
            chunk = self.chunk(response).await?;
        }
        Ok(Bytes::from(body))
    }

    async fn chunk(&self, response: &mut reqwest::Response) -> Result<Option<Bytes>, FetchError> {
        response.chunk().await.map_err(|e| self.describe(e, None))
    }

    /// One fetch under its deadline: one exchange, or through a location's proxy every hop of
    /// its redirects. The deadline covers everything: name resolution, connecting, every
    /// redirect, the body and its decoding.
    async fn bounded(&self, request: &FetchRequest, follow: bool) -> Result<Hop, FetchError> {
        let deadline = self.settings.total_timeout;
        let work = async {
            match follow && request.proxy.is_some() {
                true => self.follow_through_proxy(request).await,
                false => self.exchange(request, follow).await,
            }
        };
        match tokio::time::timeout(deadline, work).await {
            Ok(result) => result,
            Err(_) => Err(FetchError::Timeout(self.settings.total_timeout)),
        }
    }

    /// Follows a proxied request's redirects one exchange at a time. reqwest's own following
    /// hands a redirect's name to the proxy, which resolves it where the network policy never
    /// sees the answer; one exchange per hop puts each hop's host through
    /// [`check_name`] first, as the direct path's resolver does.
    async fn follow_through_proxy(&self, request: &FetchRequest) -> Result<Hop, FetchError> {
        let mut hop = request.clone();
        let mut redirects = 0;
        loop {
            let answer = match self.exchange(&hop, false).await {
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

    /// Turns reqwest's error into one a user can act on; one that happened at a redirect's
    /// target names the target, since the user asked for another URL.
    fn describe(&self, err: reqwest::Error, hop: Option<&Url>) -> FetchError {
        let described = self.describe_at(err, hop);
        match hop {
            Some(target) => at_redirect(target, described),
            None => described,
        }
    }

    fn describe_at(&self, err: reqwest::Error, hop: Option<&Url>) -> FetchError {
        let host = hop
            .or(err.url())
            .and_then(|u| u.host_str())
            .unwrap_or("")
            .to_string();
        let mut source: Option<&(dyn StdError + 'static)> = Some(&err);
        let mut innermost = err.to_string();
        while let Some(e) = source {
            if let Some(fetch) = e.downcast_ref::<FetchError>() {
                return fetch.clone();
            }
            if let Some(refused) = e.downcast_ref::<super::Refused>() {
                return FetchError::Refused(refused.clone());
            }
            if let Some(outside) = e.downcast_ref::<super::OutsideOrigins>() {
                return FetchError::OutsideOrigins(outside.clone());
            }
            if let Some(stop) = e.downcast_ref::<RedirectStop>() {
                return match stop {
                    RedirectStop::TooMany => FetchError::TooManyRedirects {
                        limit: self.settings.max_redirects,
                    },
                    RedirectStop::Scheme(url) => FetchError::BadRedirect { url: url.clone() },
                    RedirectStop::TooLong(url) => FetchError::InvalidRedirect {
                        target: shorten(url),
                        reason: format!("is longer than {MAX_URL_LEN} characters"),
                    },
                };
            }
            // hyper ends a body shorter than its Content-Length with an unexpected end of file.
            if (err.is_body() || err.is_decode())
                && e.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::UnexpectedEof)
            {
                return FetchError::CutShort;
            }
            innermost = e.to_string();
            source = e.source();
        }
        // Only connecting has a timeout of reqwest's own; the exchange's is `bounded`'s, which
        // reports itself. Another timeout from reqwest is mapped all the same.
        if err.is_timeout() {
            if err.is_connect() {
                return FetchError::ConnectTimeout {
                    host,
                    after: self.settings.connect_timeout,
                };
            }
            return FetchError::Timeout(self.settings.total_timeout);
        }
        if err.is_connect() {
            // reqwest's words for a location's proxy refusing (through the pinning tunnel, which
            // answers as the proxy did; a SOCKS proxy's refusal as a 407 or a 502), in the words
            // the render egress uses.
            let reason = if innermost.contains("proxy authorization required")
                || innermost.contains("credentials not accepted")
            {
                CREDENTIALS_REFUSED.to_string()
            } else if innermost == "tunnel error: unsuccessful" {
                "the location's proxy refused the tunnel".to_string()
            } else {
                innermost
            };
            return FetchError::Connect { host, reason };
        }
        if err.is_body() || err.is_decode() {
            return FetchError::Body(innermost);
        }
        FetchError::Other(innermost)
    }
}

#[async_trait]
impl Fetcher for HttpFetcher {
    async fn fetch(&self, request: &FetchRequest) -> Result<FetchedPage, FetchError> {
        match self.bounded(request, true).await? {
            Hop::Page(page) => Ok(page),
            // The following client hands back only redirects it cannot follow, as errors.
            Hop::Redirect { location, .. } => Err(FetchError::BadRedirect {
                url: location.to_string(),
            }),
        }
    }

    async fn fetch_hop(&self, request: &FetchRequest) -> Result<Hop, FetchError> {
        self.bounded(request, false).await
    }
}

fn build_client(
    settings: &HttpSettings,
    route: &Route,
    tls: Option<rustls::ClientConfig>,
    follow: bool,
) -> Result<Client, reqwest::Error> {
    let policy = settings.policy.clone();
    let max = settings.max_redirects;
    let redirects = redirect::Policy::custom(move |attempt| {
        if !follow {
            return attempt.stop();
        }
        if attempt.previous().len() > max {
            return attempt.error(RedirectStop::TooMany);
        }
        let url = attempt.url();
        if !matches!(url.scheme(), "http" | "https") {
            let shown = url.to_string();
            return attempt.error(RedirectStop::Scheme(shown));
        }
        if url.as_str().len() > MAX_URL_LEN {
            let shown = url.to_string();
            return attempt.error(RedirectStop::TooLong(shown));
        }
        if let Err(refused) = check_url(&policy, url) {
            return attempt.error(refused);
        }
        let hop = url.clone();
        // Outside a fetch's scope (none today) there is nothing to note.
        let _ = LAST_HOP.try_with(|last| last.replace(Some(hop)));
        attempt.follow()
    });
    // Content codings are decoded by [`encoding`], as browsers decode them (layered, raw
    // deflate), which reqwest's decoder does not.
    let mut builder = Client::builder()
        .no_gzip()
        .no_deflate()
        .no_brotli()
        .no_zstd()
        .user_agent(settings.user_agent.clone())
        .default_headers(reqwest::header::HeaderMap::from_iter([(
            reqwest::header::ACCEPT_ENCODING,
            reqwest::header::HeaderValue::from_static(encoding::ACCEPT_ENCODING),
        )]))
        .connect_timeout(settings.connect_timeout)
        .redirect(redirects)
        // reqwest retries only HTTP/2 and HTTP/3 refusals, and this client speaks HTTP/1.1; its
        // retry layer would still copy every request's headers to have them ready.
        .retry(reqwest::retry::never().max_retries_per_request(0))
        .dns_resolver(PolicyResolver::shared(settings.policy.clone()))
        .pool_idle_timeout(Duration::from_secs(30));
    match tls {
        Some(config) => builder = builder.tls_backend_preconfigured(config),
        None => {
            for der in &settings.root_certificates {
                builder = builder.add_root_certificate(reqwest::Certificate::from_der(der)?);
            }
        }
    }
    builder = match route {
        Route::Direct => builder.no_proxy(),
        Route::Proxy(url) => builder.proxy(Proxy::all(*url)?),
        Route::Pinned(url, tunnel) => builder.proxy(tunnel.proxy()?).proxy(Proxy::http(*url)?),
    };
    builder.build()
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

/// The request a redirect asks for, as reqwest (and browsers) make it: a 303, and a 301 or
/// 302 of a POST, become a bodiless GET; credentials stay with their origin.
fn redirected(previous: &FetchRequest, status: u16, location: Url) -> FetchRequest {
    use reqwest::header;
    let mut next = previous.clone();
    let to_get = match status {
        303 => previous.method != reqwest::Method::HEAD,
        301 | 302 => previous.method == reqwest::Method::POST,
        _ => false,
    };
    if to_get {
        next.method = reqwest::Method::GET;
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
    }
    next.url = location;
    next
}

/// Why reqwest handed back a redirect unfollowed, when it is an error: a `Location` that is not
/// ASCII, not a URL, or not http(s). `None` for a target reqwest simply does not follow (the
/// status of a `300 Multiple Choices`, say): that response is the page.
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
    if !location.is_ascii() {
        return Some(FetchError::InvalidRedirect {
            target: shown(),
            reason: "is not a valid URL (it has bytes that are not ASCII)".into(),
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
    let addrs = tokio::net::lookup_host((host, 0))
        .await
        .map_err(|e| FetchError::Connect {
            host: host.to_string(),
            reason: e.to_string(),
        })?;
    for addr in addrs {
        policy.check(host, addr.ip())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_location_in_another_encoding_is_named_as_a_browser_shows_it() {
        let base = Url::parse("http://example.com/a").unwrap();
        // "/café" in Latin-1: not UTF-8, so no URL a browser or reqwest would follow.
        let err = unfollowed(&base, b"/caf\xe9").unwrap();
        assert_eq!(
            err.to_string(),
            "redirected to \"/caf%E9\", which is not a valid URL (it has bytes that are not ASCII)"
        );
        let err = unfollowed(&base, b"ftp://example.com/file").unwrap();
        assert!(matches!(err, FetchError::BadRedirect { .. }), "{err}");
        // A fine target reqwest did not follow (a 300's) is no error: that response is the page.
        assert!(unfollowed(&base, b"/b").is_none());
    }
}
