//! A render session: the isolation domain of one check (or one whole Portal crawl). It has its
//! own browser context (cookies, storage and cache of nobody else) whose traffic leaves through
//! its own egress proxy, and it reuses its tabs from page to page. It is a [`Fetcher`], so the
//! engine and the crawler use it exactly like the plain HTTP fetcher.

use super::browser::Live;
use super::egress::{Egress, Limits};
use super::intercept::UpstreamTls;
use super::tab::{COMMAND_TIMEOUT, Tab, TabError};
use super::{RenderError, RendererInner};
use crate::fetch::location_proxy::LocationProxy;
use crate::fetch::{FetchError, FetchRequest, FetchedPage, Fetcher};
use async_trait::async_trait;
use chromiumoxide::cdp::browser_protocol::browser::BrowserContextId;
use chromiumoxide::cdp::browser_protocol::target::CreateBrowserContextParams;
use std::sync::Arc;

/// What a session renders with.
#[derive(Debug, Clone, Default)]
pub struct SessionOptions {
    /// Location whose upstream proxy the session's traffic goes through.
    pub proxy: Option<String>,
    /// Scroll each page to the bottom until it stops growing (`scrollPage`).
    pub scroll: bool,
    /// What each render enters before it takes a tab ([`crate::PreparedMonitor::with_tabs`]).
    /// The engine leaves it empty and enters the gate itself, before the page's host slot
    /// ([`Gated`]), so a render waiting at its gate holds no slot another's render of the host
    /// could use.
    pub tabs: Option<Arc<dyn crate::TabGate>>,
    /// The monitor's browser steps and login, run after each page loads.
    pub steps: Option<super::StepRun>,
}

/// A fetcher whose every request first enters `gate` ([`crate::TabGate`]) and holds what it
/// gave until the request ends: the engine wraps a session's host slots in it, so a render
/// waiting for its frontend's turn holds nothing of anyone else's.
pub(crate) struct Gated {
    pub(crate) gate: Arc<dyn crate::TabGate>,
    pub(crate) inner: Arc<dyn Fetcher>,
}

#[async_trait]
impl Fetcher for Gated {
    async fn fetch(&self, request: &FetchRequest) -> Result<FetchedPage, FetchError> {
        let _turn = self.gate.enter().await?;
        self.inner.fetch(request).await
    }

    async fn fetch_hop(&self, request: &FetchRequest) -> Result<crate::fetch::Hop, FetchError> {
        let _turn = self.gate.enter().await?;
        self.inner.fetch_hop(request).await
    }
}

struct Context {
    live: Arc<Live>,
    id: BrowserContextId,
    egress: Egress,
    idle: Vec<Tab>,
}

/// A render session; see the module docs. Close it with [`RenderSession::close`]; dropping it
/// also releases its context, in the background.
pub struct RenderSession {
    renderer: Arc<RendererInner>,
    options: SessionOptions,
    context: tokio::sync::Mutex<Option<Context>>,
}

impl RenderSession {
    pub(crate) fn new(renderer: Arc<RendererInner>, options: SessionOptions) -> Self {
        renderer
            .sessions
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        RenderSession {
            renderer,
            options,
            context: tokio::sync::Mutex::new(None),
        }
    }

    /// Makes sure the session has a live context, (re)creating it on a (re)launched browser.
    async fn ensure_context(&self, slot: &mut Option<Context>) -> Result<(), RenderError> {
        if slot.as_ref().is_some_and(|c| c.live.is_alive()) {
            return Ok(());
        }
        *slot = None;
        let live = self.renderer.browser().await?;
        let upstream = match &self.options.proxy {
            Some(location) => Some(
                self.renderer
                    .proxies
                    .get(location)
                    .and_then(|u| url::Url::parse(u).ok())
                    .ok_or_else(|| RenderError::Launch(format!("no proxy for location {location}")))
                    .and_then(|url| {
                        // Its own TLS to an https proxy too, for the same reason as below.
                        LocationProxy::new(&url, Some(&self.renderer.verification)).map_err(|e| {
                            RenderError::Launch(format!("the proxy for location {location}: {e}"))
                        })
                    })?,
            ),
            None => None,
        };
        let limits = Limits {
            response: self.renderer.settings.max_html_bytes,
            render: self.renderer.settings.max_render_bytes,
        };
        // TLS of its own, so its own cache of TLS sessions: a session resumed by another check,
        // or through another location's proxy, would let a site link the two.
        let tls = UpstreamTls::new(&self.renderer.verification).map_err(RenderError::Launch)?;
        let egress = Egress::start(self.renderer.policy.clone(), upstream, limits, tls)
            .await
            .map_err(|e| RenderError::Launch(format!("cannot start the egress proxy: {e}")))?;
        let params = CreateBrowserContextParams::builder()
            .proxy_server(egress.url())
            // Without this Chromium sends loopback requests around the proxy.
            .proxy_bypass_list("<-loopback>")
            .dispose_on_detach(true)
            .build();
        let id = match tokio::time::timeout(
            COMMAND_TIMEOUT,
            live.browser.create_browser_context(params),
        )
        .await
        {
            Ok(Ok(id)) => id,
            Ok(Err(e)) => {
                live.mark_dead();
                return Err(RenderError::Launch(format!(
                    "cannot create a browser context: {e}"
                )));
            }
            Err(_) => {
                live.mark_dead();
                return Err(RenderError::Launch(
                    "creating a browser context timed out".into(),
                ));
            }
        };
        *slot = Some(Context {
            live,
            id,
            egress,
            idle: Vec::new(),
        });
        Ok(())
    }

    /// What the session renders with.
    pub(super) fn options(&self) -> &SessionOptions {
        &self.options
    }

    /// Why the egress refused the session's latest request, if it did.
    pub(super) async fn last_refusal(&self) -> Option<FetchError> {
        let slot = self.context.lock().await;
        self.refusal(&slot)
    }

    /// An idle tab of this session, or a new one.
    pub(super) async fn take_tab(&self) -> Result<(Tab, Arc<Live>), TabError> {
        let mut slot = self.context.lock().await;
        self.ensure_context(&mut slot)
            .await
            .map_err(|e| TabError::BrowserGone(e.to_string()))?;
        let Some(context) = slot.as_mut() else {
            return Err(TabError::BrowserGone("no browser context".into()));
        };
        if let Some(tab) = context.idle.pop() {
            return Ok((tab, context.live.clone()));
        }
        let (live, id) = (context.live.clone(), context.id.clone());
        // Other renders of the session go on (or open their own tabs) meanwhile.
        drop(slot);
        let tab = Tab::open(&live.browser, &id, &self.renderer.settings).await?;
        Ok((tab, live))
    }

    async fn give_back(&self, tab: Tab, live: &Arc<Live>) {
        let mut slot = self.context.lock().await;
        match slot.as_mut() {
            Some(context)
                if Arc::ptr_eq(&context.live, live)
                    && self.renderer.settings.reuse_tabs
                    && !tab.worn_out() =>
            {
                context.idle.push(tab);
            }
            _ => {
                drop(slot);
                tab.close().await;
            }
        }
    }

    fn refusal(&self, slot: &Option<Context>) -> Option<FetchError> {
        slot.as_ref().and_then(|c| c.egress.last_failure())
    }

    /// Renders one request, retrying once after a crashed tab or a dead browser (not after a
    /// tab killed for its memory: the page would do it again).
    pub async fn render(&self, request: &FetchRequest) -> Result<FetchedPage, FetchError> {
        // The frontend's turn first, then the tab: a render waiting for its turn holds no tab
        // another's render could use.
        let _turn = match &self.options.tabs {
            Some(gate) => Some(gate.enter().await?),
            None => None,
        };
        let _permit = self.renderer.acquire_tab().await?;
        let mut last = FetchError::Render("rendering failed".into());
        for _attempt in 0..2 {
            let began = std::time::Instant::now();
            let (mut tab, live) = match self.take_tab().await {
                Ok(pair) => pair,
                Err(TabError::BrowserGone(reason)) => {
                    self.renderer.forget_browser().await;
                    last = FetchError::Render(format!("the browser failed: {reason}"));
                    continue;
                }
                Err(TabError::Crashed) => continue,
                Err(TabError::Page { error, .. }) => return Err(error),
                Err(TabError::Step(failure)) => {
                    return Err(FetchError::Render(failure.head));
                }
            };
            let Some(mut sizes) = self
                .with_egress(|e| {
                    e.begin_render();
                    e.size_watch()
                })
                .await
            else {
                tab.close().await;
                continue;
            };
            let loaded = tab.loaded_urls();
            // A response cut for its size ends the render at once and explains it, whatever it
            // looked like to the browser (a short page, a failed load, a page still loading).
            let result = {
                let render = tab.render(
                    request,
                    &self.renderer.settings,
                    &self.renderer.long_polls,
                    self.options.scroll,
                    self.options.steps.as_ref().filter(|run| !run.done()),
                );
                tokio::pin!(render);
                loop {
                    tokio::select! {
                        result = &mut render => break Some(result),
                        () = sizes.next_cut() => {
                            if sizes.size_error(&loaded.get()).is_some() {
                                break None;
                            }
                        }
                    }
                }
            };
            if let Some(error) = sizes.size_error(&loaded.get()) {
                match result {
                    Some(Ok(_)) => self.give_back(tab, &live).await,
                    _ => tab.close().await,
                }
                return Err(error);
            }
            let Some(result) = result else {
                tab.close().await;
                continue;
            };
            match result {
                Ok(page) => {
                    self.give_back(tab, &live).await;
                    // The egress answers a refused plain-http request with its own 403; report
                    // the refusal, not the status it stood in for.
                    if page.status == 403 {
                        let slot = self.context.lock().await;
                        if let Some(refused) = slot.as_ref().and_then(|c| c.egress.last_refusal())
                            && page.url.host_str() == Some(refused.host.as_str())
                        {
                            return Err(FetchError::Refused(refused));
                        }
                    }
                    return Ok(page);
                }
                Err(TabError::Crashed) => {
                    tab.close().await;
                    if let Some(reason) = live.memory_crash_since(began) {
                        return Err(FetchError::Render(reason));
                    }
                    last = FetchError::Render("the page crashed the browser tab".into());
                }
                Err(TabError::BrowserGone(reason)) => {
                    drop(tab);
                    live.mark_dead();
                    self.renderer.forget_browser().await;
                    last = FetchError::Render(format!("the browser failed: {reason}"));
                }
                Err(TabError::Step(failure)) => {
                    if failure.discard {
                        tab.close().await;
                    } else {
                        self.give_back(tab, &live).await;
                    }
                    let slot = self.context.lock().await;
                    let refused = self.refusal(&slot);
                    let message = match &self.options.steps {
                        Some(run) => failure.message(&run.steps, refused),
                        None => failure.head,
                    };
                    return Err(FetchError::Render(message));
                }
                Err(TabError::Page { error, discard }) => {
                    if discard {
                        tab.close().await;
                    } else {
                        self.give_back(tab, &live).await;
                    }
                    // A navigation that failed because the egress refused it says so.
                    let slot = self.context.lock().await;
                    return Err(self.refusal(&slot).unwrap_or(error));
                }
            }
            if !live.is_alive() {
                self.renderer.forget_browser().await;
            }
        }
        Err(last)
    }

    /// Runs `f` on the session's egress proxy, if the session has one.
    async fn with_egress<T>(&self, f: impl FnOnce(&Egress) -> T) -> Option<T> {
        let slot = self.context.lock().await;
        slot.as_ref().map(|c| f(&c.egress))
    }

    /// Releases the session's browser context (its cookies, storage and cache with it); the
    /// next render makes a new one.
    pub(super) async fn reset(&self) {
        let context = self.context.lock().await.take();
        if let Some(context) = context {
            dispose(context).await;
        }
    }

    /// Releases the session's browser context, closing its tabs.
    pub async fn close(self) {
        let context = self.context.lock().await.take();
        if let Some(context) = context {
            dispose(context).await;
        }
    }
}

async fn dispose(context: Context) {
    let Context { live, id, idle, .. } = context;
    drop(idle);
    let dispose = live.browser.dispose_browser_context(id);
    let _ = tokio::time::timeout(COMMAND_TIMEOUT, dispose).await;
    drop(live);
}

impl Drop for RenderSession {
    fn drop(&mut self) {
        self.renderer
            .sessions
            .fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
        self.renderer.touch();
        let context = self.context.get_mut().take();
        if let Some(context) = context
            && let Ok(handle) = tokio::runtime::Handle::try_current()
        {
            handle.spawn(dispose(context));
        }
    }
}

#[async_trait]
impl Fetcher for RenderSession {
    async fn fetch(&self, request: &FetchRequest) -> Result<FetchedPage, FetchError> {
        self.render(request).await
    }
}
