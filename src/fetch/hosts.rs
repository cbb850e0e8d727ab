//! Per-host politeness for every request the engine makes: the downloader's host slots, as in
//! Scrapy's downloader. Every fetch through the engine (a single page, a crawl's page, a rendered
//! document's navigation, a frontend's own request through [`Engine::fetcher`]) first takes a
//! slot of its host (host and port, as the server sees them): at most `concurrency` requests in
//! flight per host and at most `rps` started per second (a `governor` rate limiter), however many
//! checks and crawls run at once. A wait for a slot is bounded; an idle host's entry is dropped
//! once the registry passes its bound, so the registry never grows with the number of hosts ever
//! seen.
//!
//! [`Engine::fetcher`]: crate::Engine::fetcher

use super::{FetchError, FetchRequest, FetchedPage, Fetcher, Hop};
use async_trait::async_trait;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use url::Url;

/// Hosts kept while idle; past this, idle hosts are dropped (their rate history with them,
/// which is harmless once they have been idle for longer than a second).
const MAX_IDLE_HOSTS: usize = 1024;

/// How long a host must have been idle before its entry may be dropped: longer than the rate
/// limiter's one-second window, so dropping it never lets a burst through.
const IDLE_BEFORE_EVICTION: Duration = Duration::from_secs(2);

/// Limits per host. `0` lifts a limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostLimits {
    /// Requests in flight at once per host (default 4).
    pub concurrency: usize,
    /// Requests started per second per host (default 10).
    pub rps: u32,
}

impl Default for HostLimits {
    fn default() -> Self {
        HostLimits {
            concurrency: 4,
            rps: 10,
        }
    }
}

struct Host {
    /// The registry's key, shared with the permits of this host.
    key: Arc<str>,
    slots: Option<Arc<Semaphore>>,
    limiter: Option<DefaultDirectRateLimiter>,
    /// Permits handed out and not yet returned, and when the last one was returned.
    busy: usize,
    last_used: Instant,
}

/// The registry of host slots an engine's fetches share.
pub struct HostSlots {
    limits: HostLimits,
    hosts: Mutex<HashMap<Arc<str>, Host>>,
    clock: DefaultClock,
}

impl std::fmt::Debug for HostSlots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostSlots")
            .field("limits", &self.limits)
            .field("hosts", &self.len())
            .finish()
    }
}

/// A host's slot, held while its request runs; dropping it frees the slot.
pub struct HostPermit {
    registry: Arc<HostSlots>,
    key: Arc<str>,
    _slot: Option<OwnedSemaphorePermit>,
}

impl Drop for HostPermit {
    fn drop(&mut self) {
        if let Ok(mut hosts) = self.registry.hosts.lock()
            && let Some(host) = hosts.get_mut(&self.key)
        {
            host.busy = host.busy.saturating_sub(1);
            host.last_used = Instant::now();
        }
    }
}

impl HostSlots {
    /// A registry enforcing `limits`.
    pub fn new(limits: HostLimits) -> Arc<Self> {
        Arc::new(HostSlots {
            limits,
            hosts: Mutex::new(HashMap::new()),
            clock: DefaultClock::default(),
        })
    }

    /// The limits in force.
    pub fn limits(&self) -> HostLimits {
        self.limits
    }

    /// Hosts currently known (busy ones, and idle ones up to the bound).
    pub fn len(&self) -> usize {
        self.hosts.lock().map_or(0, |h| h.len())
    }

    /// Whether no host is known.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Takes a slot of `url`'s host, waiting at most `wait` for one. `Err` when none freed in
    /// time ([`FetchError::HostBusy`]).
    pub async fn acquire(
        self: &Arc<Self>,
        url: &Url,
        wait: Duration,
    ) -> Result<HostPermit, FetchError> {
        let deadline = tokio::time::Instant::now() + wait;
        let Some((key, semaphore)) = with_host_key(url, |key| self.enter(key)) else {
            return Err(FetchError::HostBusy {
                host: host_key(url),
                after: wait,
            });
        };
        let busy = || FetchError::HostBusy {
            host: key.to_string(),
            after: wait,
        };
        // From here on the entry counts this request as busy, so it is never evicted under it;
        // the permit's drop undoes that, whatever happens below.
        let mut permit = HostPermit {
            registry: self.clone(),
            key: key.clone(),
            _slot: None,
        };
        if let Some(semaphore) = semaphore {
            match tokio::time::timeout_at(deadline, semaphore.acquire_owned()).await {
                Ok(Ok(slot)) => permit._slot = Some(slot),
                // The semaphore is never closed; treat it as busy all the same.
                Ok(Err(_)) | Err(_) => return Err(busy()),
            }
        }
        // The rate token is taken only once a slot is held, so no token is spent by a request
        // that then waits for a slot.
        loop {
            let wait_for = {
                let hosts = self.hosts.lock().map_err(|_| busy())?;
                match hosts.get(&key).and_then(|h| h.limiter.as_ref()) {
                    None => break,
                    Some(limiter) => match limiter.check() {
                        Ok(()) => break,
                        Err(not_until) => not_until.wait_time_from(self.clock.now()),
                    },
                }
            };
            let at = tokio::time::Instant::now() + wait_for;
            if at > deadline {
                return Err(busy());
            }
            tokio::time::sleep_until(at).await;
        }
        Ok(permit)
    }

    /// Registers one more request of `key`: its entry's shared key and its semaphore. Drops
    /// idle hosts when the registry has passed its bound. `None` only when the lock is
    /// poisoned.
    fn enter(&self, key: &str) -> Option<(Arc<str>, Option<Arc<Semaphore>>)> {
        let mut hosts = self.hosts.lock().ok()?;
        if hosts.len() >= MAX_IDLE_HOSTS && !hosts.contains_key(key) {
            let now = Instant::now();
            hosts.retain(|_, h| {
                h.busy > 0 || now.duration_since(h.last_used) < IDLE_BEFORE_EVICTION
            });
        }
        // A known host (nearly every request of a crawl) costs no allocation: its key is shared.
        if let Some(host) = hosts.get_mut(key) {
            host.busy += 1;
            return Some((host.key.clone(), host.slots.clone()));
        }
        let limits = self.limits;
        let shared: Arc<str> = Arc::from(key);
        let host = hosts.entry(shared.clone()).or_insert_with(|| Host {
            key: shared.clone(),
            slots: (limits.concurrency > 0).then(|| Arc::new(Semaphore::new(limits.concurrency))),
            limiter: NonZeroU32::new(limits.rps).map(|n| RateLimiter::direct(Quota::per_second(n))),
            busy: 0,
            last_used: Instant::now(),
        });
        host.busy += 1;
        Some((shared, host.slots.clone()))
    }
}

/// Host and port, as a server sees them.
pub fn host_key(url: &Url) -> String {
    with_host_key(url, str::to_string)
}

/// Calls `f` with [`host_key`] of `url`, built on the stack: the engine looks a host up for
/// every request, and an allocation each time was a measurable part of a crawl's CPU.
pub(crate) fn with_host_key<R>(url: &Url, f: impl FnOnce(&str) -> R) -> R {
    let host = url.host_str().unwrap_or("");
    let Some(port) = url.port_or_known_default() else {
        return f(host);
    };
    use std::io::Write as _;
    const ROOM: usize = 256;
    let mut buf = [0u8; ROOM];
    let mut room = &mut buf[..];
    // A host too long for the buffer (no DNS name is) gets an allocated key.
    if write!(room, "{host}:{port}").is_err() {
        return f(&format!("{host}:{port}"));
    }
    let written = ROOM - room.len();
    match std::str::from_utf8(&buf[..written]) {
        Ok(key) => f(key),
        // What was written is a host and digits, UTF-8; never reached.
        Err(_) => f(&format!("{host}:{port}")),
    }
}

/// A fetcher whose every request first takes a slot of its host ([`HostSlots`]).
pub struct Polite {
    inner: Arc<dyn Fetcher>,
    slots: Arc<HostSlots>,
    wait: Duration,
}

impl Polite {
    /// Wraps `inner`; a request waits at most `wait` for its host's slot.
    pub fn new(inner: Arc<dyn Fetcher>, slots: Arc<HostSlots>, wait: Duration) -> Self {
        Polite { inner, slots, wait }
    }
}

impl std::fmt::Debug for Polite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Polite")
            .field("slots", &self.slots)
            .field("wait", &self.wait)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl Fetcher for Polite {
    async fn fetch(&self, request: &FetchRequest) -> Result<FetchedPage, FetchError> {
        let _slot = self.slots.acquire(&request.url, self.wait).await?;
        self.inner.fetch(request).await
    }

    async fn fetch_hop(&self, request: &FetchRequest) -> Result<Hop, FetchError> {
        let _slot = self.slots.acquire(&request.url, self.wait).await?;
        self.inner.fetch_hop(request).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn host_keys_are_host_and_port_as_the_server_sees_them() {
        let long = format!("http://{}.test:8080/", "a".repeat(300));
        for (given, key) in [
            ("http://a.test/", "a.test:80"),
            ("https://a.test/x", "a.test:443"),
            ("http://a.test:0/", "a.test:0"),
            ("http://a.test:65535/", "a.test:65535"),
            ("http://127.0.0.2:8080/", "127.0.0.2:8080"),
            ("http://[::1]:9/", "[::1]:9"),
            ("foo://a.test/", "a.test"),
            (long.as_str(), &long[7..long.len() - 1]),
        ] {
            assert_eq!(host_key(&url(given)), key, "{given}");
        }
    }

    #[tokio::test]
    async fn a_full_host_times_out_and_other_hosts_do_not_wait() {
        let slots = HostSlots::new(HostLimits {
            concurrency: 1,
            rps: 0,
        });
        let held = slots
            .acquire(&url("http://a.test/1"), Duration::from_secs(1))
            .await
            .unwrap();
        let err = slots
            .acquire(&url("http://a.test:80/2"), Duration::from_millis(50))
            .await
            .err();
        assert!(matches!(err, Some(FetchError::HostBusy { .. })), "{err:?}");
        // Another port is another host.
        slots
            .acquire(&url("http://a.test:8080/"), Duration::from_millis(50))
            .await
            .unwrap();
        drop(held);
        slots
            .acquire(&url("http://a.test/3"), Duration::from_millis(50))
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn idle_hosts_are_dropped_past_the_bound_busy_ones_kept() {
        let slots = HostSlots::new(HostLimits::default());
        let busy = slots
            .acquire(&url("http://busy.test/"), Duration::from_secs(1))
            .await
            .unwrap();
        for i in 0..MAX_IDLE_HOSTS + 10 {
            let host = format!("http://h{i}.test/");
            drop(
                slots
                    .acquire(&url(&host), Duration::from_secs(1))
                    .await
                    .unwrap(),
            );
        }
        // Recently used hosts are kept a little while, so the map may pass the bound briefly,
        // but never by more than the hosts used in the last seconds.
        assert!(slots.len() <= MAX_IDLE_HOSTS + 11);
        {
            let mut hosts = slots.hosts.lock().unwrap();
            for host in hosts.values_mut() {
                host.last_used = host
                    .last_used
                    .checked_sub(IDLE_BEFORE_EVICTION)
                    .unwrap_or(host.last_used);
            }
        }
        drop(
            slots
                .acquire(&url("http://new.test/"), Duration::from_secs(1))
                .await
                .unwrap(),
        );
        assert_eq!(slots.len(), 2, "only the busy host and the new one remain");
        drop(busy);
    }
}
