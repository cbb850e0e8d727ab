//! Fetchers: the downloader stage. A [`Fetcher`] turns a [`FetchRequest`] into a
//! [`FetchedPage`] or a [`FetchError`]; the plain HTTP one is [`http::HttpFetcher`]. The engine
//! and the crawler only see the trait, so a rendering fetcher can stand in for the plain one.
//! Every fetcher the engine uses is wrapped in [`hosts::Polite`], which takes a slot of the
//! request's host first: the per-host limits hold across every check of an engine.

pub(crate) mod connect;
pub mod decode;
mod encoding;
pub mod hosts;
pub mod http;
pub(crate) mod location_proxy;
pub mod policy;
pub(crate) mod proxying;
pub(crate) mod tls;

use ::http::header::HeaderMap;
use async_trait::async_trait;
use bytes::Bytes;
use std::time::Duration;
use url::Url;

/// The HTTP method of a [`FetchRequest`].
pub use ::http::Method;
pub use ipnet::IpNet;
pub use policy::{NetworkPolicy, OutsideOrigins, Refused};

/// Longest URL accepted, as browsers and most servers do.
pub const MAX_URL_LEN: usize = 2048;

/// A URL's user and password as Basic authorization (percent-decoded, as browsers send them),
/// when it has either: for a site's `Authorization` and a location proxy's
/// `Proxy-Authorization` alike.
pub(crate) fn basic_authorization(url: &Url) -> Option<::http::HeaderValue> {
    use base64::Engine as _;
    if url.username().is_empty() && url.password().is_none() {
        return None;
    }
    let decode = |s: &str| percent_encoding::percent_decode_str(s).collect::<Vec<u8>>();
    let mut pair = decode(url.username());
    pair.push(b':');
    pair.extend(decode(url.password().unwrap_or("")));
    let encoded = base64::engine::general_purpose::STANDARD.encode(pair);
    ::http::HeaderValue::from_str(&format!("Basic {encoded}")).ok()
}

/// What to fetch.
#[derive(Debug, Clone)]
pub struct FetchRequest {
    /// The URL.
    pub url: Url,
    /// HTTP method.
    pub method: Method,
    /// Request headers.
    pub headers: HeaderMap,
    /// Request body.
    pub body: Option<String>,
    /// Location whose proxy to go through (lower case), if any.
    pub proxy: Option<String>,
}

impl FetchRequest {
    /// A plain GET of `url`.
    pub fn get(url: Url) -> Self {
        FetchRequest {
            url,
            method: Method::GET,
            headers: HeaderMap::new(),
            body: None,
            proxy: None,
        }
    }
}

/// A fetched response.
#[derive(Debug, Clone)]
pub struct FetchedPage {
    /// The URL after redirects.
    pub url: Url,
    /// HTTP status code.
    pub status: u16,
    /// The Content-Type header.
    pub content_type: Option<String>,
    /// The response headers (none for a rendered page, whose document the browser fetched).
    pub headers: HeaderMap,
    /// The body is a rendered DOM (scripts ran), not the document as served.
    pub rendered: bool,
    /// The response has no body by definition: it answers a HEAD request.
    pub bodiless: bool,
    /// The body, decompressed.
    pub body: Bytes,
    /// Time from sending the request to the end of the body.
    pub elapsed: Duration,
}

impl FetchedPage {
    /// The body as text, decoded as a browser would ([`decode`]).
    pub fn text(&self) -> String {
        self.decoded().into_owned()
    }

    /// [`FetchedPage::text`] borrowed from the body where the body is that text already (valid
    /// UTF-8, as most pages are).
    pub fn decoded(&self) -> std::borrow::Cow<'_, str> {
        let tld = self
            .url
            .host_str()
            .and_then(|h| h.rsplit('.').next())
            .map(str::as_bytes);
        decode::decode(&self.body, self.content_type.as_deref(), tld).0
    }
}

/// An error status as users see it in a check's `error`: "HTTP 404 Not Found".
pub(crate) fn status_text(status: u16) -> String {
    let reason = ::http::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("");
    format!("HTTP {status} {reason}").trim_end().to_string()
}

/// How the transfer of a body stopped before its end: the response said how long its body
/// is, and the connection did not carry all of it. (A body sent without a length ends when the
/// connection closes, and only a reset tells it was cut.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub enum CutShort {
    /// The connection closed before the body reached its Content-Length.
    #[error("the connection closed before the body's Content-Length was reached")]
    ContentLength,
    /// The connection closed before the last chunk of a chunked body.
    #[error("the connection closed before the body's last chunk")]
    LastChunk,
    /// The connection was reset (or aborted) while the body was arriving.
    #[error("the connection was reset while the body was arriving")]
    Reset,
}

/// Why a fetch failed. The text is what users see in a check's `error`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    /// The whole request (connect, redirects, body) took longer than allowed.
    #[error("timed out after {} s", .0.as_secs_f64())]
    Timeout(Duration),
    /// Connecting took longer than allowed.
    #[error("could not connect to {host} within {} s", .after.as_secs_f64())]
    ConnectTimeout {
        /// The host.
        host: String,
        /// The connect timeout.
        after: Duration,
    },
    /// The network policy refused the address.
    #[error(transparent)]
    Refused(#[from] Refused),
    /// The target is outside the origins the engine is confined to
    /// ([`EngineBuilder::only_origin`](crate::EngineBuilder::only_origin)).
    #[error(transparent)]
    OutsideOrigins(#[from] OutsideOrigins),
    /// The redirect chain was too long (or looped).
    #[error("stopped after {limit} redirects (a redirect loop?)")]
    TooManyRedirects {
        /// The redirect limit.
        limit: usize,
    },
    /// A redirect pointed somewhere that is not http(s).
    #[error("redirected to \"{url}\", which is not an http or https URL")]
    BadRedirect {
        /// The redirect target.
        url: String,
    },
    /// A redirect pointed to something that cannot be fetched: not a URL, or longer than URLs
    /// wachet follows.
    #[error("redirected to \"{target}\", which {reason}")]
    InvalidRedirect {
        /// The redirect target, as given (cut when long).
        target: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A request failed at the target of a redirect, not at the URL asked for.
    #[error("redirected to {target}: {error}")]
    AfterRedirect {
        /// The redirect target.
        target: String,
        /// What happened there.
        error: Box<FetchError>,
    },
    /// The body was larger than allowed (after decompression).
    #[error("the response is larger than {limit} bytes")]
    TooLarge {
        /// The size limit in bytes.
        limit: u64,
    },
    /// No connection could be made.
    #[error("could not connect to {host}: {reason}")]
    Connect {
        /// The host.
        host: String,
        /// Why.
        reason: String,
    },
    /// The body could not be read or decompressed.
    #[error("the response could not be read: {0}")]
    Body(String),
    /// The transfer of the body stopped before its end ([`CutShort`] says how).
    #[error("the page was cut short ({0})")]
    CutShort(CutShort),
    /// No slot of the host freed in time: the engine's per-host limits
    /// ([`hosts`]) were taken by other requests for longer than a fetch may wait.
    #[error("waited {} s for a free slot of {host} (per-host limit)", .after.as_secs_f64())]
    HostBusy {
        /// The host and port.
        host: String,
        /// How long the request waited.
        after: Duration,
    },
    /// Rendering in the browser failed.
    #[error("{0}")]
    Render(String),
    /// The frontend's count of browser tabs gave the render none
    /// ([`TabGate`](crate::TabGate)): its own wait ran out, or too many renders of the same
    /// person wait already.
    #[error(transparent)]
    NoTab(#[from] crate::TabRefused),
    /// Any other failure of the request.
    #[error("the request failed: {0}")]
    Other(String),
}

/// One hop of a fetch that leaves redirects to its caller ([`Fetcher::fetch_hop`]).
#[derive(Debug, Clone)]
pub enum Hop {
    /// A response that is not a redirect (any status).
    Page(FetchedPage),
    /// A redirect (301, 302, 303, 307 or 308 with a `Location`, the statuses followed), not
    /// followed.
    Redirect {
        /// The status (301, 302, 303, 307, 308, ...).
        status: u16,
        /// Where it points, resolved against the request's URL; always http or https.
        location: Url,
        /// Time from sending the request to the end of the response.
        elapsed: Duration,
    },
}

/// Fetches pages. Implementations must bound every wait and every buffer.
#[async_trait]
pub trait Fetcher: Send + Sync {
    /// Fetches one request, following redirects.
    async fn fetch(&self, request: &FetchRequest) -> Result<FetchedPage, FetchError>;

    /// Fetches one request without following a redirect, so the caller can follow it hop by
    /// hop (the crawler claims each hop's URL before fetching it). The network policy applies
    /// to the request as to any. A fetcher that cannot stop at redirects (a browser) follows
    /// them, as the default does, and returns the page it ended on.
    async fn fetch_hop(&self, request: &FetchRequest) -> Result<Hop, FetchError> {
        self.fetch(request).await.map(Hop::Page)
    }
}
