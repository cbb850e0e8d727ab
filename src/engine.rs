//! The engine: the top of the data flow. It validates a monitor into a plan, has a
//! [`Fetcher`] download the page, has it analysed as every crawled page is (the page analysis
//! decides what runs on the blocking pool) and assembles the [`CheckOutcome`]; a Portal
//! monitor goes to the crawler. Configured with [`EngineBuilder`].

use crate::analysis::{self, Status};
use crate::check::{
    CheckOutcome, Checker, CrawlReport, ErrorKind, PageSource, PreparedMonitor, SourceError,
    Timings,
};
use crate::crawl::{self, CrawlEvent, CrawlSettings, CrawlStream, PortalFold};
use crate::fetch::hosts::{HostLimits, HostSlots, Polite};
use crate::fetch::http::{HttpFetcher, HttpSettings};
use crate::fetch::{FetchedPage, Fetcher, NetworkPolicy};
use crate::model::{ClientData, ClientJobType, LocationCode, Monitor};
use crate::validate::{self, InvalidMonitor};
use async_trait::async_trait;
use chrono::Utc;
use futures::StreamExt;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// An engine could not be built from its settings.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// A proxy URL is not usable.
    #[error("proxy for location \"{location}\": {reason}")]
    Proxy {
        /// The location.
        location: String,
        /// Why.
        reason: String,
    },
    /// The HTTP client could not be set up.
    #[error("could not set up the HTTP client: {0}")]
    Http(String),
    /// An origin given to [`EngineBuilder::only_origin`] is not a URL with a host.
    #[error("origin \"{0}\" is not a URL with a host and port")]
    Origin(String),
    /// A root certificate given to [`EngineBuilder::root_certificate`] is not usable.
    #[error("root certificate: {0}")]
    RootCertificate(String),
}

/// Settings of an [`Engine`]. Defaults: connect timeout 10 s, total 30 s, bodies up to 10 MiB,
/// 10 redirects, public networks only, no proxies, 4 requests in flight and 10 per second per
/// host across every check; crawls as [`CrawlSettings`] says.
#[derive(Debug, Clone, Default)]
pub struct EngineBuilder {
    http: HttpSettings,
    hosts: HostLimits,
    proxies: BTreeMap<String, String>,
    location: LocationCode,
    crawl: CrawlSettings,
    #[cfg(feature = "chrome")]
    render: crate::render::RenderSettings,
    /// PEM text given to [`EngineBuilder::root_certificate`], read at build.
    root_pems: Vec<Vec<u8>>,
    /// Origins given to [`EngineBuilder::only_origin`], read at build.
    only_origins: Vec<String>,
}

impl EngineBuilder {
    /// How long connecting may take.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.http.connect_timeout = timeout;
        self
    }

    /// How long one fetch may take, body included.
    pub fn total_timeout(mut self, timeout: Duration) -> Self {
        self.http.total_timeout = timeout;
        self
    }

    /// The largest body accepted, counted after decompression.
    pub fn max_body_bytes(mut self, bytes: u64) -> Self {
        self.http.max_body_bytes = bytes;
        self
    }

    /// The User-Agent sent unless a monitor sets its own.
    pub fn user_agent(mut self, user_agent: impl Into<String>) -> Self {
        self.http.user_agent = user_agent.into();
        self
    }

    /// Allows loopback, private and link-local targets. Off by default: a service fetching
    /// URLs its users choose must not reach into its own network.
    pub fn allow_private_networks(mut self, allow: bool) -> Self {
        self.http.policy = Arc::new(if allow {
            NetworkPolicy::allow_all()
        } else {
            NetworkPolicy::public_only()
        });
        self
    }

    /// Allows the addresses of one network (such as `10.20.0.0/16`, or `127.0.0.1/32` in a
    /// test) while the rest of the private space stays refused.
    pub fn allow_network(mut self, network: ipnet::IpNet) -> Self {
        self.http.policy = Arc::new((*self.http.policy).clone().allowing(network));
        self
    }

    /// Confines the engine to `origin` (`http://127.0.0.1:8080`; its host and port, however
    /// reached): every request of a check, a crawl, a redirect hop or a rendered page to
    /// anything else is refused
    /// ([`FetchError::OutsideOrigins`](crate::fetch::FetchError::OutsideOrigins)), public
    /// addresses included, whatever the network policy allows. Each call adds one origin. For
    /// sandboxes: a fixture suite from an untrusted source reaches only its own fixture server
    /// this way (`wachet::testing::Suite`). An origin that is not a URL with a host fails
    /// [`EngineBuilder::build`].
    pub fn only_origin(mut self, origin: impl Into<String>) -> Self {
        self.only_origins.push(origin.into());
        self
    }

    /// Trusts the certificates in `pem` (PEM text, one or more `CERTIFICATE` blocks) as roots
    /// besides the system's, for sites with an internal CA (or a test's own server): on the
    /// plain path and for everything a rendered page loads over https alike. A PEM without a
    /// certificate, or a certificate that cannot be read, fails [`EngineBuilder::build`].
    pub fn root_certificate(mut self, pem: impl AsRef<[u8]>) -> Self {
        self.root_pems.push(pem.as_ref().to_vec());
        self
    }

    /// Routes monitors asking for `location` (such as `us`; case-insensitive) through the proxy
    /// at `url` (`http://`, `https://` or `socks5://`).
    pub fn proxy(mut self, location: impl AsRef<str>, url: impl Into<String>) -> Self {
        self.proxies
            .insert(location.as_ref().trim().to_ascii_lowercase(), url.into());
        self
    }

    /// The location this engine checks from (default [`LocationCode::Default`]: wherever it
    /// runs): monitors of that location are checked directly, without a proxy, as a checker
    /// running in that region does.
    pub fn location(mut self, location: LocationCode) -> Self {
        self.location = location;
        self
    }

    /// Most pages one Portal crawl visits (default 500).
    pub fn max_pages(mut self, pages: usize) -> Self {
        self.crawl.max_pages = pages;
        self
    }

    /// Requests in flight at once in a crawl (default 16).
    pub fn crawl_concurrency(mut self, requests: usize) -> Self {
        self.crawl.concurrency = requests;
        self
    }

    /// Requests in flight at once per host (host and port), across every check, crawl and
    /// request of this engine and its clones (default 4; 0 lifts the limit). A request waits
    /// for its host's slot at most the total timeout, then fails as
    /// [`FetchError::HostBusy`](crate::fetch::FetchError::HostBusy).
    pub fn per_host_concurrency(mut self, requests: usize) -> Self {
        self.hosts.concurrency = requests;
        self
    }

    /// Requests started per second per host (host and port), across every check, crawl and
    /// request of this engine and its clones (default 10; 0 lifts the limit).
    pub fn per_host_rps(mut self, rps: u32) -> Self {
        self.hosts.rps = rps;
        self
    }

    /// Removes `utm_*`, `fbclid` and `gclid` query parameters from links before dedup.
    pub fn strip_tracking_params(mut self, strip: bool) -> Self {
        self.crawl.strip_tracking_params = strip;
        self
    }

    /// How monitors with `dynamicContent` are rendered (feature `chrome`). The navigation
    /// timeout is the fetch's total timeout.
    #[cfg(feature = "chrome")]
    pub fn render_settings(mut self, settings: crate::render::RenderSettings) -> Self {
        self.render = settings;
        self
    }

    /// The Chromium executable to render with (feature `chrome`); else `CHROME_PATH`, else the
    /// usual Debian locations.
    #[cfg(feature = "chrome")]
    pub fn chrome_path(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.render.chrome_path = Some(path.into());
        self
    }

    /// Builds the engine.
    pub fn build(mut self) -> Result<Engine, BuildError> {
        for pem in &self.root_pems {
            self.http.root_certificates.extend(root_certificates(pem)?);
        }
        if !self.only_origins.is_empty() {
            let mut origins = Vec::new();
            for origin in &self.only_origins {
                let parsed = url::Url::parse(origin).ok();
                let host = parsed.as_ref().and_then(|u| u.host_str());
                let port = parsed.as_ref().and_then(|u| u.port_or_known_default());
                match (host, port) {
                    (Some(host), Some(port)) => origins.push((host.to_string(), port)),
                    _ => return Err(BuildError::Origin(origin.clone())),
                }
            }
            self.http.policy = Arc::new((*self.http.policy).clone().only_origins(origins));
        }
        // Made once: every TLS client of the engine verifies with it (the system's roots are
        // read at its first https request).
        let verification = crate::fetch::tls::Verification::new(&self.http.root_certificates)
            .map_err(BuildError::RootCertificate)?;
        for (location, url) in &self.proxies {
            // Not the URL itself in an error: it may hold the proxy's password.
            let unusable = |reason: String| BuildError::Proxy {
                location: location.clone(),
                reason,
            };
            let parsed = url::Url::parse(url).map_err(|e| unusable(format!("not a URL ({e})")))?;
            crate::fetch::location_proxy::LocationProxy::new(&parsed, Some(&verification))
                .map_err(unusable)?;
        }
        #[cfg(feature = "chrome")]
        let renderer = {
            let mut render = self.render;
            render.navigation_timeout = self.http.total_timeout;
            render.max_html_bytes = self.http.max_body_bytes;
            crate::render::Renderer::new(
                render,
                self.http.policy.clone(),
                self.proxies.clone(),
                &verification,
            )
        };
        // A request waits for its host's slot as long as a check may take.
        let total_timeout = self.http.total_timeout;
        let policy = self.http.policy.clone();
        let fetcher = HttpFetcher::verifying_with(self.http, &self.proxies, &verification)
            .map_err(|e| BuildError::Http(e.to_string()))?;
        let hosts = HostSlots::new(self.hosts);
        Ok(Engine {
            inner: Arc::new(Inner {
                fetcher: Arc::new(Polite::new(Arc::new(fetcher), hosts.clone(), total_timeout)),
                hosts,
                total_timeout,
                proxy_locations: self.proxies.keys().cloned().collect(),
                location: self.location,
                crawl: self.crawl,
                policy,
                #[cfg(feature = "chrome")]
                renderer,
            }),
        })
    }
}

/// The certificates (DER) in `pem`; an error when there is none or one cannot be read.
fn root_certificates(pem: &[u8]) -> Result<Vec<Vec<u8>>, BuildError> {
    use rustls_pki_types::CertificateDer;
    use rustls_pki_types::pem::PemObject as _;
    let certificates = CertificateDer::pem_slice_iter(pem)
        .map(|c| c.map(|c| c.to_vec()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| BuildError::RootCertificate(format!("not valid PEM ({e})")))?;
    if certificates.is_empty() {
        return Err(BuildError::RootCertificate(
            "no CERTIFICATE block in the PEM text".into(),
        ));
    }
    Ok(certificates)
}

/// The wachet engine. Cheap to clone; clones share connection pools.
#[derive(Debug, Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// The plain HTTP fetcher behind the host slots.
    fetcher: Arc<Polite>,
    hosts: Arc<HostSlots>,
    /// How long a check's fetch and extraction may take together.
    total_timeout: Duration,
    proxy_locations: Vec<String>,
    location: LocationCode,
    crawl: CrawlSettings,
    /// Which addresses its fetchers may reach.
    policy: Arc<NetworkPolicy>,
    #[cfg(feature = "chrome")]
    renderer: crate::render::Renderer,
}

impl Engine {
    /// A builder with the default settings.
    pub fn builder() -> EngineBuilder {
        EngineBuilder::default()
    }

    /// Whether this engine checks monitors of `location`: its own location, or one it has a
    /// proxy for ([`EngineBuilder::location`], [`EngineBuilder::proxy`]).
    pub fn serves(&self, location: LocationCode) -> bool {
        location == self.inner.location
            || self
                .inner
                .proxy_locations
                .iter()
                .any(|l| *l == location.name().to_ascii_lowercase())
    }

    /// Checks that `monitor` can be checked, without fetching anything: URL, method, headers,
    /// XPath, exclusion XPath, regex, crawling depth, URL filters and proxy locations.
    pub fn validate(&self, monitor: &Monitor) -> Result<(), InvalidMonitor> {
        self.prepare(monitor).map(|_| ())
    }

    /// Compiles `monitor` once for any number of checks ([`Checker::check_prepared`],
    /// [`Checker::crawl_prepared`]); `Err` with every problem found when it cannot be checked.
    pub fn prepare(&self, monitor: &Monitor) -> Result<PreparedMonitor, InvalidMonitor> {
        let plan = validate::compile(monitor, &self.inner.proxy_locations, self.inner.location)?;
        #[cfg(not(feature = "chrome"))]
        if monitor.dynamic_content || plan.steps.is_some() {
            return Err(InvalidMonitor {
                errors: vec![crate::validate::FieldError {
                    field: "dynamicContent".into(),
                    message: "this build of wachet has no browser (feature `chrome`)".into(),
                }],
            });
        }
        Ok(PreparedMonitor {
            monitor: Arc::new(monitor.clone()),
            plan: Arc::new(plan),
            tabs: None,
            sessions: None,
        })
    }

    /// Crawls `monitor` as a Portal monitor (whatever its `jobType`), streaming pages as they
    /// finish. Must be called inside a tokio runtime; dropping the stream stops the crawl.
    pub fn crawl(&self, monitor: &Monitor) -> Result<CrawlStream, InvalidMonitor> {
        let prepared = self.prepare(monitor)?;
        Ok(self.crawl_prepared(&prepared))
    }

    /// [`Checker::crawl_prepared`].
    pub fn crawl_prepared(&self, prepared: &PreparedMonitor) -> CrawlStream {
        #[cfg(feature = "chrome")]
        let steps = prepared.plan.steps.clone().map(|s| {
            crate::render::StepRun::new(s, prepared.sessions.clone(), self.inner.policy.clone())
        });
        #[cfg(not(feature = "chrome"))]
        let steps: Option<()> = None;
        // Its login runs once, at the start page: that page's entry says whether it did.
        #[cfg(feature = "chrome")]
        let logged_in = steps
            .as_ref()
            .filter(|_| prepared.renders())
            .map(|run| run.logged_in.clone());
        let fetcher = self.fetcher_with_steps(prepared, steps);
        #[allow(unused_mut)] // without the browser nothing signs in
        let mut stream = crawl::start(
            prepared.plan.clone(),
            &prepared.monitor,
            fetcher,
            &self.inner.crawl,
            self.inner.hosts.limits(),
            self.inner.total_timeout,
        );
        #[cfg(feature = "chrome")]
        {
            stream.logged_in = logged_in;
        }
        stream
    }

    /// The engine's plain HTTP downloader, under its network policy (private networks refused
    /// unless allowed) and limits, per-host limits included, for a frontend's own requests,
    /// such as webhook deliveries: they then reach exactly what a monitor may reach, as
    /// politely. Any HTTP status is an `Ok`.
    pub fn fetcher(&self) -> Arc<dyn crate::fetch::Fetcher> {
        self.inner.fetcher.clone()
    }

    /// Which addresses the engine may reach: for a frontend's connections that do not go
    /// through [`Engine::fetcher`] (an SMTP server a notification URL names).
    pub fn network_policy(&self) -> Arc<NetworkPolicy> {
        self.inner.policy.clone()
    }

    /// The shared browser (feature `chrome`), for inspection and shutdown.
    #[cfg(feature = "chrome")]
    pub fn renderer(&self) -> &crate::render::Renderer {
        &self.inner.renderer
    }

    /// The plain HTTP fetcher, or for `dynamicContent` a new render session (one isolation
    /// domain: its cookies and storage are its own, and go when it is dropped).
    fn fetcher_for(&self, prepared: &PreparedMonitor) -> Arc<dyn Fetcher> {
        self.fetcher_with_steps(prepared, None)
    }

    /// [`Self::fetcher_for`], a render running `steps` (the monitor's, with its session store).
    fn fetcher_with_steps(
        &self,
        prepared: &PreparedMonitor,
        #[cfg(feature = "chrome")] steps: Option<crate::render::StepRun>,
        #[cfg(not(feature = "chrome"))] steps: Option<()>,
    ) -> Arc<dyn Fetcher> {
        #[cfg(feature = "chrome")]
        if prepared.renders() {
            let steps = steps.or_else(|| {
                prepared.plan.steps.clone().map(|s| {
                    crate::render::StepRun::new(
                        s,
                        prepared.sessions.clone(),
                        self.inner.policy.clone(),
                    )
                })
            });
            let options = crate::render::SessionOptions {
                proxy: prepared.plan.proxy.clone(),
                scroll: prepared.monitor.scroll_page,
                tabs: None,
                steps,
            };
            // The document's navigation takes its host's slot like any fetch; the page's own
            // subresources are the browser's business.
            let polite: Arc<dyn Fetcher> = Arc::new(Polite::new(
                Arc::new(self.inner.renderer.session(options)),
                self.inner.hosts.clone(),
                self.inner.total_timeout,
            ));
            // The frontend's turn comes before the host's slot: a render waiting for its turn
            // (its person's tabs all held) holds no slot another person's render of the host
            // could use.
            return match prepared.tabs.clone() {
                Some(gate) => Arc::new(crate::render::Gated {
                    gate,
                    inner: polite,
                }),
                None => polite,
            };
        }
        let _ = (prepared, steps);
        self.inner.fetcher.clone()
    }

    /// Runs a whole crawl and gathers it into one outcome: the monitor's own result is the
    /// [`PortalFold`]'s (the sorted URLs of the pages crawled; a failed start page fails the
    /// check).
    async fn check_portal(&self, prepared: &PreparedMonitor) -> CheckOutcome {
        let started = Instant::now();
        let at = Utc::now();
        let mut stream = self.crawl_prepared(prepared);
        let mut fold = PortalFold::new();
        let mut pages = Vec::new();
        let mut left_out = Vec::new();
        let mut summary = None;
        while let Some(event) = stream.next().await {
            fold.add(&event);
            match event {
                CrawlEvent::Page { page, .. } => pages.push(page),
                CrawlEvent::LeftOut(page) => left_out.push(page),
                CrawlEvent::Finished(s) => summary = Some(s),
            }
        }
        let start = pages.iter().find(|p| p.depth == 0);
        let (status, final_url, content_type) = start.map_or((None, None, None), |p| {
            (p.status, p.final_url.clone(), p.content_type.clone())
        });
        let (mut data, error_kind) = fold.finish(at);
        data.logged_in = start.is_some_and(|p| p.data.logged_in);
        let total = started.elapsed();
        let (budget_reached, stats) =
            summary.map_or((false, Default::default()), |s| (s.budget_reached, s.stats));
        CheckOutcome {
            data,
            error_kind,
            status,
            final_url,
            content_type,
            timings: Timings {
                fetch: total,
                extract: Duration::ZERO,
                total,
            },
            raw_html: None,
            title: None,
            server_date: None,
            crawl: Some(CrawlReport {
                pages,
                left_out,
                budget_reached,
                stats,
            }),
        }
    }

    async fn check_page(&self, prepared: &PreparedMonitor) -> CheckOutcome {
        #[cfg(feature = "chrome")]
        let steps = prepared.plan.steps.clone().map(|s| {
            crate::render::StepRun::new(s, prepared.sessions.clone(), self.inner.policy.clone())
        });
        #[cfg(not(feature = "chrome"))]
        let steps: Option<()> = None;
        let mut outcome = self.check_fetched(prepared, steps.clone()).await;
        #[cfg(feature = "chrome")]
        if let Some(run) = steps {
            outcome.data.logged_in = run.logged_in();
        }
        // A page that shows what was typed into it (a field's value kept in its markup) must
        // not carry a secret into the value, its error or the stored HTML.
        if let Some(plan) = prepared.plan.steps.as_ref().filter(|s| s.has_secrets()) {
            let data = &mut outcome.data;
            for text in [&mut data.raw, &mut data.error, &mut outcome.raw_html] {
                if let Some(text) = text.as_mut() {
                    *text = plan.scrub(text);
                }
            }
        }
        outcome
    }

    async fn check_fetched(
        &self,
        prepared: &PreparedMonitor,
        #[cfg(feature = "chrome")] steps: Option<crate::render::StepRun>,
        #[cfg(not(feature = "chrome"))] steps: Option<()>,
    ) -> CheckOutcome {
        let fetcher = self.fetcher_with_steps(prepared, steps);
        let monitor = &prepared.monitor;
        let started = Instant::now();
        let at = Utc::now();
        let request = prepared.plan.request();
        let fetched = fetcher.fetch(&request).await;
        // A render session ends with its check; its context goes with it.
        drop(fetcher);
        let page = match fetched {
            Ok(page) => page,
            Err(err) => {
                let total = started.elapsed();
                return CheckOutcome {
                    data: ClientData::failure(at, err.to_string()),
                    error_kind: Some(ErrorKind::of_fetch(&err)),
                    status: None,
                    final_url: None,
                    content_type: None,
                    timings: Timings {
                        fetch: total,
                        extract: Duration::ZERO,
                        total,
                    },
                    raw_html: None,
                    title: None,
                    server_date: None,
                    crawl: None,
                };
            }
        };
        let fetch_time = started.elapsed();
        let status = analysis::judge_status(page.status, monitor.ignore_invalid_pages);
        let keep_html = monitor.collect_raw_html;
        let plan = prepared.plan.clone();
        let FetchedPage {
            url,
            status: code,
            content_type,
            ..
        } = page.clone();
        let server_date = page
            .headers
            .get(http::header::DATE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| chrono::DateTime::parse_from_rfc2822(v).ok())
            .map(|t| t.with_timezone(&Utc));
        let extract_start = Instant::now();
        // The check's timeout covers the fetch and the extraction together.
        let deadline = crate::extract::Deadline::at(started + self.inner.total_timeout);
        let html = content_type
            .as_deref()
            .is_none_or(|kind| kind.to_ascii_lowercase().contains("html"));
        let extracted = analysis::off_runtime(page.body.len(), move || {
            let text = page.decoded();
            let (value, title) = match status {
                // A wall served with an error status says more than the status.
                Status::Failed(failure) => {
                    (Err(analysis::screen(&page, &text).unwrap_or(failure)), None)
                }
                // An ignored error page is checked like any other.
                Status::Fine | Status::Ignored => {
                    match analysis::analyse(&page, &text, &plan.extractor, deadline, false) {
                        Ok(analysed) => {
                            // The one pass read the title on its way; a tree parse leaves it
                            // to the head's tokenizer, which stops at the title's end.
                            let title = match analysed.title {
                                Some(title) => title,
                                None if html => crate::extract::title::title(&text),
                                None => None,
                            };
                            (analysed.value, title.filter(|_| html))
                        }
                        Err(failure) => (Err(failure), None),
                    }
                }
            };
            (value, keep_html.then(|| text.into_owned()), title)
        })
        .await;
        let (value, raw_html, title) =
            extracted.unwrap_or_else(|failure| (Err(failure), None, None));
        let (data, error_kind) = match value {
            Ok(raw) => (ClientData::value(at, raw), None),
            Err(failure) => (ClientData::failure(at, failure.message), Some(failure.kind)),
        };
        CheckOutcome {
            data,
            error_kind,
            status: Some(code),
            final_url: Some(url.to_string()),
            content_type,
            timings: Timings {
                fetch: fetch_time,
                extract: extract_start.elapsed(),
                total: started.elapsed(),
            },
            raw_html,
            title,
            server_date,
            crawl: None,
        }
    }
}

#[async_trait]
impl Checker for Engine {
    fn serves(&self, location: LocationCode) -> bool {
        Engine::serves(self, location)
    }

    fn network_policy(&self) -> Arc<NetworkPolicy> {
        Engine::network_policy(self)
    }

    fn host_concurrency(&self) -> usize {
        self.inner.hosts.limits().concurrency
    }

    fn browser_tabs(&self) -> usize {
        #[cfg(feature = "chrome")]
        return self.inner.renderer.tabs();
        #[cfg(not(feature = "chrome"))]
        0
    }

    fn prepare(&self, monitor: &Monitor) -> Result<PreparedMonitor, InvalidMonitor> {
        Engine::prepare(self, monitor)
    }

    async fn check_prepared(&self, prepared: &PreparedMonitor) -> CheckOutcome {
        if prepared.monitor.job_type == ClientJobType::Portal {
            return self.check_portal(prepared).await;
        }
        self.check_page(prepared).await
    }

    fn crawl_prepared(&self, prepared: &PreparedMonitor) -> CrawlStream {
        Engine::crawl_prepared(self, prepared)
    }

    #[cfg(feature = "chrome")]
    async fn record(
        &self,
        prepared: &PreparedMonitor,
    ) -> Result<crate::render::Recording, SourceError> {
        let options = crate::render::SessionOptions {
            proxy: prepared.plan.proxy.clone(),
            scroll: false,
            tabs: prepared.tabs.clone(),
            steps: None,
        };
        self.inner
            .renderer
            .record(&prepared.plan.request(), options)
            .await
            .map_err(|err| SourceError {
                kind: ErrorKind::of_fetch(&err),
                message: err.to_string(),
            })
    }

    async fn page_source(&self, prepared: &PreparedMonitor) -> Result<PageSource, SourceError> {
        let fetcher = self.fetcher_for(prepared);
        let fetched = fetcher.fetch(&prepared.plan.request()).await;
        drop(fetcher);
        let page = fetched.map_err(|err| SourceError {
            kind: ErrorKind::of_fetch(&err),
            message: err.to_string(),
        })?;
        if let Status::Failed(failure) =
            analysis::judge_status(page.status, prepared.monitor.ignore_invalid_pages)
        {
            return Err(SourceError {
                message: failure.message,
                kind: failure.kind,
            });
        }
        let bytes = page.body.len();
        let status = page.status;
        let final_url = page.url.to_string();
        let content_type = page.content_type.clone();
        // Decoding a large body is CPU work like an extraction.
        let html = analysis::off_runtime(bytes, move || page.text())
            .await
            .map_err(|failure| SourceError {
                message: failure.message,
                kind: failure.kind,
            })?;
        Ok(PageSource {
            html,
            final_url,
            status,
            content_type,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::COMPILES;

    #[tokio::test(flavor = "current_thread")]
    async fn a_prepared_monitor_is_never_compiled_again() {
        let closed = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap();
        let engine = Engine::builder()
            .allow_private_networks(true)
            .build()
            .unwrap();
        let mut monitor = Monitor::new(format!("http://127.0.0.1:{closed}/"));
        monitor.x_path = Some("//p[contains(., 'x')]".into());
        monitor.regex = Some(r"(\d+)".into());
        let compiles = || COMPILES.with(|c| c.get());
        let prepared = Checker::prepare(&engine, &monitor).unwrap();
        let before = compiles();
        for _ in 0..3 {
            let outcome = engine.check_prepared(&prepared).await;
            assert_eq!(outcome.error_kind, Some(ErrorKind::Network));
        }
        assert_eq!(
            compiles(),
            before,
            "checking a prepared monitor compiled it again"
        );
        // The counter does count: an unprepared check compiles.
        let _ = Checker::check(&engine, &monitor).await.unwrap();
        assert_eq!(compiles(), before + 1);
    }
}
