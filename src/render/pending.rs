//! The network requests a render still waits for once the page itself looks settled.
//!
//! The script in the page ([`super::scripts::INSTRUMENT`]) counts a fetch or XHR as pending
//! for at most a second of quiet, and cannot see a module loaded with `import()` at all. So
//! the tab also follows its requests through DevTools' network events ([`InFlight`]): once the
//! page has settled, any script, fetch or XHR still in flight is waited for, up to the render's
//! maximum wait, and the page is settled again after it ends. A request still open at that
//! maximum is a long poll or a stream: its address (without the query) is remembered
//! ([`LongPolls`], one per renderer, bounded, forgotten after an hour) and not waited for again,
//! so only the first check of such a page takes the maximum.

use chromiumoxide::cdp::browser_protocol::network::ResourceType;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Requests followed per render at most; those past it are not waited for.
const MAX_IN_FLIGHT: usize = 1024;

/// Long-poll addresses remembered at most; the oldest goes first.
const MAX_LONG_POLLS: usize = 1024;

/// How long a long-poll address is remembered: a request that hung once is waited for again
/// after this, in case it was a slow answer rather than a poll.
const LONG_POLL_MEMORY: Duration = Duration::from_secs(3600);

/// Whether requests of this type can still bring content into the page: scripts (an
/// `import()`, a chunk) and a script's own fetches and XHRs. Documents, stylesheets and event
/// streams are not waited for here.
pub(crate) fn waited_for(kind: Option<&ResourceType>) -> bool {
    matches!(
        kind,
        Some(ResourceType::Script | ResourceType::Fetch | ResourceType::Xhr)
    )
}

/// The address a request is remembered by: its URL without query and fragment, so a poll
/// that adds a cursor or a time to each request is one address.
pub(crate) fn address(url: &str) -> String {
    let end = url.find(['?', '#']).unwrap_or(url.len());
    url[..end].to_string()
}

/// The waited-for requests of a tab's current render, by DevTools request id.
pub(crate) struct InFlight {
    open: Mutex<HashMap<String, String>>,
    /// Bumped whenever a request ends, to wake a wait.
    ended: tokio::sync::watch::Sender<u64>,
}

impl Default for InFlight {
    fn default() -> Self {
        InFlight {
            open: Mutex::new(HashMap::new()),
            ended: tokio::sync::watch::Sender::new(0),
        }
    }
}

impl InFlight {
    /// Forgets everything: a new render begins.
    pub fn clear(&self) {
        if let Ok(mut open) = self.open.lock() {
            open.clear();
        }
    }

    /// A request started (or was redirected: the same id with a new URL).
    pub fn started(&self, id: &str, url: &str) {
        if url.starts_with("data:") || url.starts_with("blob:") {
            return;
        }
        if let Ok(mut open) = self.open.lock()
            && (open.len() < MAX_IN_FLIGHT || open.contains_key(id))
        {
            open.insert(id.to_string(), address(url));
        }
    }

    /// A request finished or failed.
    pub fn ended(&self, id: &str) {
        let removed = self.open.lock().map(|mut o| o.remove(id).is_some());
        if removed.unwrap_or(false) {
            self.ended.send_modify(|n| *n = n.wrapping_add(1));
        }
    }

    /// The addresses still open, long polls left out.
    pub fn open(&self, long_polls: &LongPolls) -> Vec<String> {
        let Ok(open) = self.open.lock() else {
            return Vec::new();
        };
        let mut addresses: Vec<String> = open
            .values()
            .filter(|a| !long_polls.knows(a))
            .cloned()
            .collect();
        addresses.sort();
        addresses.dedup();
        addresses
    }

    /// Waits until no request but known long polls is open, or until `deadline`. `Err` carries
    /// the addresses still open then. `Ok(true)` when there was something to wait for.
    pub async fn wait(
        &self,
        long_polls: &LongPolls,
        deadline: Instant,
    ) -> Result<bool, Vec<String>> {
        let mut ended = self.ended.subscribe();
        let mut waited = false;
        loop {
            ended.borrow_and_update();
            let open = self.open(long_polls);
            if open.is_empty() {
                return Ok(waited);
            }
            waited = true;
            let deadline = tokio::time::Instant::from_std(deadline);
            tokio::select! {
                changed = ended.changed() => {
                    if changed.is_err() {
                        return Err(open);
                    }
                }
                () = tokio::time::sleep_until(deadline) => return Err(self.open(long_polls)),
            }
        }
    }
}

/// Addresses that were still open when a render stopped waiting: not waited for again.
#[derive(Default)]
pub(crate) struct LongPolls {
    known: Mutex<HashMap<String, Instant>>,
}

impl LongPolls {
    /// Remembers `addresses` as long polls.
    pub fn learn(&self, addresses: &[String]) {
        let Ok(mut known) = self.known.lock() else {
            return;
        };
        let now = Instant::now();
        known.retain(|_, at| now.duration_since(*at) < LONG_POLL_MEMORY);
        for a in addresses {
            if known.len() >= MAX_LONG_POLLS
                && !known.contains_key(a)
                && let Some(oldest) = known
                    .iter()
                    .min_by_key(|(_, at)| **at)
                    .map(|(k, _)| k.clone())
            {
                known.remove(&oldest);
            }
            known.insert(a.clone(), now);
        }
    }

    /// Whether `address` is a known long poll.
    pub fn knows(&self, address: &str) -> bool {
        self.known
            .lock()
            .ok()
            .and_then(|k| k.get(address).map(|at| at.elapsed() < LONG_POLL_MEMORY))
            .unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_leaves_out_query_and_fragment() {
        assert_eq!(
            address("http://a.test/poll?since=1#x"),
            "http://a.test/poll"
        );
        assert_eq!(address("http://a.test/p#x?y"), "http://a.test/p");
        assert_eq!(address("http://a.test/p"), "http://a.test/p");
    }

    #[tokio::test]
    async fn a_wait_ends_when_the_requests_end_or_at_the_deadline() {
        let in_flight = std::sync::Arc::new(InFlight::default());
        let polls = LongPolls::default();
        let soon = Instant::now() + Duration::from_secs(5);
        assert_eq!(in_flight.wait(&polls, soon).await, Ok(false));

        in_flight.started("1", "http://a.test/data?x=1");
        in_flight.started("2", "data:text/plain,x");
        let ender = in_flight.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            ender.ended("1");
        });
        assert_eq!(in_flight.wait(&polls, soon).await, Ok(true));

        in_flight.started("3", "http://a.test/poll?since=2");
        let now = Instant::now() + Duration::from_millis(20);
        let open = in_flight.wait(&polls, now).await;
        assert_eq!(open, Err(vec!["http://a.test/poll".to_string()]));
        polls.learn(&open.unwrap_err());
        assert!(polls.knows("http://a.test/poll"));
        assert_eq!(in_flight.wait(&polls, soon).await, Ok(false));
        in_flight.clear();
        assert!(in_flight.open(&LongPolls::default()).is_empty());
    }

    #[test]
    fn long_polls_are_bounded() {
        let polls = LongPolls::default();
        for i in 0..MAX_LONG_POLLS + 10 {
            polls.learn(&[format!("http://a.test/{i}")]);
        }
        let known = polls.known.lock().unwrap().len();
        assert_eq!(known, MAX_LONG_POLLS);
        assert!(polls.knows(&format!("http://a.test/{}", MAX_LONG_POLLS + 9)));
    }
}
