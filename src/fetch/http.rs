//! The plain HTTP fetcher (reqwest with rustls): redirects followed up to a limit, every hop
//! and every connection checked against the [`NetworkPolicy`], gzip/deflate/brotli decoded,
//! the body read in chunks up to a size cap counted after decompression (so a gzip bomb is an
//! error, not an out-of-memory), and the whole exchange under one deadline.

use super::policy::{NetworkPolicy, PolicyResolver};
use super::{FetchError, FetchRequest, FetchedPage, Fetcher, Hop};
use async_trait::async_trait;
use bytes::Bytes;
use reqwest::redirect;
use reqwest::{Client, Proxy};
use std::collections::BTreeMap;
use std::error::Error as StdError;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use url::Url;

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
}

/// The HTTP fetcher: one connection pool per proxy location, and one more of each that stops
/// at redirects ([`Fetcher::fetch_hop`]).
#[derive(Debug, Clone)]
pub struct HttpFetcher {
    direct: Clients,
    proxied: BTreeMap<String, Clients>,
    settings: HttpSettings,
}

#[derive(Debug, Clone)]
struct Clients {
    following: Client,
    stopping: Client,
}

impl Clients {
    fn new(settings: &HttpSettings, proxy: Option<&String>) -> Result<Self, reqwest::Error> {
        Ok(Clients {
            following: build_client(settings, proxy, true)?,
            stopping: build_client(settings, proxy, false)?,
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
        let direct = Clients::new(&settings, None)?;
        let mut proxied = BTreeMap::new();
        for (location, url) in proxies {
            proxied.insert(location.clone(), Clients::new(&settings, Some(url))?);
        }
        Ok(HttpFetcher {
            direct,
            proxied,
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
        check_literal(policy, &request.url)?;
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
        }
        let mut builder = client
            .request(request.method.clone(), request.url.clone())
            .headers(request.headers.clone())
            .timeout(self.settings.total_timeout);
        if let Some(body) = &request.body {
            builder = builder.body(body.clone());
        }
        let mut response = builder
            .send()
            .await
            .map_err(|e| self.describe(e, &request.url))?;
        let final_url = response.url().clone();
        if !via_proxy && let Some(peer) = response.remote_addr() {
            policy.check(final_url.host_str().unwrap_or(""), peer.ip())?;
        }
        let status = response.status().as_u16();
        if response.status().is_redirection()
            && let Some(location) = response.headers().get(reqwest::header::LOCATION)
        {
            // reqwest hands back, unfollowed, redirects to schemes it cannot fetch, and every
            // redirect when not following.
            let location = String::from_utf8_lossy(location.as_bytes());
            let target = final_url.join(&location);
            return match target {
                Ok(url) if !follow && matches!(url.scheme(), "http" | "https") => {
                    Ok(Hop::Redirect {
                        status,
                        location: url,
                        elapsed: start.elapsed(),
                    })
                }
                Ok(url) => Err(FetchError::BadRedirect {
                    url: url.to_string(),
                }),
                Err(_) => Err(FetchError::BadRedirect {
                    url: location.to_string(),
                }),
            };
        }
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let limit = self.settings.max_body_bytes;
        if response.content_length().is_some_and(|len| len > limit) {
            return Err(FetchError::TooLarge { limit });
        }
        let capacity = response.content_length().unwrap_or(0).min(limit);
        let mut body = Vec::with_capacity(usize::try_from(capacity).unwrap_or(0));
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| self.describe(e, &final_url))?
        {
            if (body.len() + chunk.len()) as u64 > limit {
                return Err(FetchError::TooLarge { limit });
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Hop::Page(FetchedPage {
            url: final_url,
            status,
            content_type,
            body: Bytes::from(body),
            elapsed: start.elapsed(),
        }))
    }

    /// One exchange under the fetch's deadline.
    async fn bounded(&self, request: &FetchRequest, follow: bool) -> Result<Hop, FetchError> {
        // reqwest's own timeout covers the body too; this one also bounds our own work and any
        // path reqwest might not cover (a slow DNS answer included).
        let deadline = self.settings.total_timeout + Duration::from_secs(1);
        match tokio::time::timeout(deadline, self.exchange(request, follow)).await {
            Ok(result) => result,
            Err(_) => Err(FetchError::Timeout(self.settings.total_timeout)),
        }
    }

    /// Turns reqwest's error into one a user can act on.
    fn describe(&self, err: reqwest::Error, url: &Url) -> FetchError {
        let host = err
            .url()
            .and_then(|u| u.host_str())
            .or(url.host_str())
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
            if let Some(stop) = e.downcast_ref::<RedirectStop>() {
                return match stop {
                    RedirectStop::TooMany => FetchError::TooManyRedirects {
                        limit: self.settings.max_redirects,
                    },
                    RedirectStop::Scheme(url) => FetchError::BadRedirect { url: url.clone() },
                };
            }
            innermost = e.to_string();
            source = e.source();
        }
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
            return FetchError::Connect {
                host,
                reason: innermost,
            };
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
    proxy: Option<&String>,
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
        if let Err(refused) = check_literal(&policy, url) {
            return attempt.error(refused);
        }
        attempt.follow()
    });
    let mut builder = Client::builder()
        .user_agent(settings.user_agent.clone())
        .connect_timeout(settings.connect_timeout)
        .redirect(redirects)
        .dns_resolver(PolicyResolver::shared(settings.policy.clone()))
        .pool_idle_timeout(Duration::from_secs(30));
    match proxy {
        Some(url) => builder = builder.proxy(Proxy::all(url.as_str())?),
        None => builder = builder.no_proxy(),
    }
    builder.build()
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
