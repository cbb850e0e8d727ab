//! The network requests a render still waits for once the page itself looks settled, and the
//! addresses a renderer has learned not to wait for.
//!
//! The script in the page ([`super::scripts::INSTRUMENT`]) counts a fetch or XHR as pending
//! for at most a second of quiet, and cannot see a module loaded with `import()` at all. So
//! the tab also follows its requests through DevTools' network events ([`InFlight`]): once the
//! page has settled, any script, fetch or XHR still in flight is waited for, up to the render's
//! maximum wait, and the page is settled again after it ends; as many times as requests are
//! still open then, so a chain of requests (or a retry) is waited for like the first one. The
//! requests of one address are waited for [`MAX_WAITS_PER_ADDRESS`] times per render at most
//! ([`Waits`]): a page asking the same address again and again is polling it. An address whose
//! request was still open when a render's maximum wait ran out was seen hanging once; seen so
//! in [`SIGHTINGS`] renders it is a long poll or a stream and no longer waited for
//! ([`LongPolls`], one per renderer, bounded, forgotten after an hour). One slow or failed
//! answer is never enough, and an address that answers in a later render (with none of its
//! requests open at the end) is forgotten at once, so a data request is written off only when
//! it keeps hanging.

use chromiumoxide::cdp::browser_protocol::network::ResourceType;
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Requests followed per render at most; those past it are not waited for.
const MAX_IN_FLIGHT: usize = 1024;

/// Addresses remembered at most (sighted once or long polls); the least recently seen goes
/// first.
const MAX_ADDRESSES: usize = 1024;

/// How long a sighting, and so a long poll, is remembered after it was last seen hanging.
const MEMORY: Duration = Duration::from_secs(3600);

/// Renders in which an address must be seen hanging before it counts as a long poll: a data
/// request that was slow or failed once is still waited for next time.
pub(crate) const SIGHTINGS: u32 = 2;

/// Requests of one address waited for at most in one render: enough for a retry or two, and a
/// page that polls an address every few hundred milliseconds does not hold the render to its
/// maximum.
pub(crate) const MAX_WAITS_PER_ADDRESS: u32 = 4;

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

/// The waited-for requests of a tab's current render, by DevTools request id, and the
/// addresses whose requests were answered in it.
pub(crate) struct InFlight {
    open: Mutex<HashMap<String, String>>,
    /// Ids whose end was heard before their start: each kind of DevTools event is read by a
    /// task of its own, so a fast request's end may come first; its start must not open it
    /// again (it would look open until the deadline, and be taken for a hanging request).
    ended_early: Mutex<HashSet<String>>,
    /// Addresses with a request that finished loading in this render (bounded as `open`).
    answered: Mutex<HashSet<String>>,
    /// Bumped whenever a request ends, to wake a wait.
    ended: tokio::sync::watch::Sender<u64>,
}

impl Default for InFlight {
    fn default() -> Self {
        InFlight {
            open: Mutex::new(HashMap::new()),
            ended_early: Mutex::new(HashSet::new()),
            answered: Mutex::new(HashSet::new()),
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
        if let Ok(mut early) = self.ended_early.lock() {
            early.clear();
        }
        if let Ok(mut answered) = self.answered.lock() {
            answered.clear();
        }
    }

    /// A request started (or was redirected: the same id with a new URL).
    pub fn started(&self, id: &str, url: &str) {
        if url.starts_with("data:") || url.starts_with("blob:") {
            return;
        }
        if self
            .ended_early
            .lock()
            .is_ok_and(|mut early| early.remove(id))
        {
            return;
        }
        if let Ok(mut open) = self.open.lock()
            && (open.len() < MAX_IN_FLIGHT || open.contains_key(id))
        {
            open.insert(id.to_string(), address(url));
        }
    }

    /// A request ended: it finished loading (`answered`, whatever its status) or failed.
    pub fn ended(&self, id: &str, answered: bool) {
        let removed = self.open.lock().ok().and_then(|mut o| o.remove(id));
        let Some(address) = removed else {
            if let Ok(mut early) = self.ended_early.lock()
                && early.len() < MAX_IN_FLIGHT
            {
                early.insert(id.to_string());
            }
            return;
        };
        if answered
            && let Ok(mut done) = self.answered.lock()
            && done.len() < MAX_IN_FLIGHT
        {
            done.insert(address);
        }
        self.ended.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// The addresses still open, sorted, known long polls and those in `skip` left out.
    pub fn open(&self, long_polls: &LongPolls, skip: &HashSet<String>) -> Vec<String> {
        let Ok(open) = self.open.lock() else {
            return Vec::new();
        };
        let mut addresses: Vec<String> = open
            .values()
            .filter(|a| !skip.contains(*a) && !long_polls.knows(a))
            .cloned()
            .collect();
        addresses.sort();
        addresses.dedup();
        addresses
    }

    /// The addresses answered in this render with none of their requests open now.
    pub fn answered(&self) -> Vec<String> {
        let open: HashSet<String> = self
            .open
            .lock()
            .map(|o| o.values().cloned().collect())
            .unwrap_or_default();
        let Ok(answered) = self.answered.lock() else {
            return Vec::new();
        };
        answered
            .iter()
            .filter(|a| !open.contains(*a))
            .cloned()
            .collect()
    }

    /// Waits until no request is open but known long polls and those in `skip`, or until
    /// `deadline`. `Ok(true)` when there was something to wait for, `Ok(false)` when there was
    /// nothing; `Err` carries the addresses still open at the deadline.
    pub async fn wait(
        &self,
        long_polls: &LongPolls,
        skip: &HashSet<String>,
        deadline: Instant,
    ) -> Result<bool, Vec<String>> {
        let mut ended = self.ended.subscribe();
        let mut waited = false;
        loop {
            ended.borrow_and_update();
            let open = self.open(long_polls, skip);
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
                () = tokio::time::sleep_until(deadline) => {
                    return Err(self.open(long_polls, skip));
                }
            }
        }
    }
}

/// What one render waited for: how often per address, and which addresses it saw hanging.
#[derive(Default)]
pub(crate) struct Waits {
    rounds: HashMap<String, u32>,
    /// Addresses waited for [`MAX_WAITS_PER_ADDRESS`] times: not waited for again.
    pub exhausted: HashSet<String>,
    /// Addresses still open when a wait ran out.
    pub hanging: HashSet<String>,
}

impl Waits {
    /// Counts a wait for each of `addresses`.
    pub fn waiting_for(&mut self, addresses: &[String]) {
        for a in addresses {
            if self.rounds.len() >= MAX_IN_FLIGHT && !self.rounds.contains_key(a) {
                // A page requesting more addresses than that is not waited for by address.
                self.exhausted.insert(a.clone());
                continue;
            }
            let n = self.rounds.entry(a.clone()).or_insert(0);
            *n += 1;
            if *n >= MAX_WAITS_PER_ADDRESS {
                self.exhausted.insert(a.clone());
            }
        }
    }

    /// `addresses` were still open when a wait ran out.
    pub fn hung(&mut self, addresses: Vec<String>) {
        if self.hanging.len() < MAX_IN_FLIGHT {
            self.hanging.extend(addresses);
        }
    }
}

struct Seen {
    /// Renders that saw the address hanging, within [`MEMORY`] of each other.
    sightings: u32,
    last: Instant,
}

/// Addresses seen hanging past a render's maximum wait; those seen in [`SIGHTINGS`] renders
/// are long polls, not waited for again. Bounded and forgetful: see the module docs.
#[derive(Default)]
pub(crate) struct LongPolls {
    seen: Mutex<HashMap<String, Seen>>,
}

impl LongPolls {
    /// Records what a render saw: `hanging` addresses were open when its wait ran out (one more
    /// sighting each); `answered` ones had a request answered and none left open at its end,
    /// so they are no long polls and are forgotten.
    pub fn after_render(&self, hanging: &HashSet<String>, answered: &[String]) {
        let Ok(mut seen) = self.seen.lock() else {
            return;
        };
        let now = Instant::now();
        seen.retain(|_, s| now.duration_since(s.last) < MEMORY);
        for a in answered {
            if !hanging.contains(a) {
                seen.remove(a);
            }
        }
        for a in hanging {
            if seen.len() >= MAX_ADDRESSES
                && !seen.contains_key(a)
                && let Some(oldest) = seen
                    .iter()
                    .min_by_key(|(_, s)| s.last)
                    .map(|(k, _)| k.clone())
            {
                seen.remove(&oldest);
            }
            let entry = seen.entry(a.clone()).or_insert(Seen {
                sightings: 0,
                last: now,
            });
            entry.sightings = entry.sightings.saturating_add(1);
            entry.last = now;
        }
    }

    /// Whether `address` is a known long poll: seen hanging in [`SIGHTINGS`] renders, the
    /// last within [`MEMORY`].
    pub fn knows(&self, address: &str) -> bool {
        self.seen
            .lock()
            .ok()
            .and_then(|k| {
                k.get(address)
                    .map(|s| s.sightings >= SIGHTINGS && s.last.elapsed() < MEMORY)
            })
            .unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(addresses: &[&str]) -> HashSet<String> {
        addresses.iter().map(|a| a.to_string()).collect()
    }

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
        let none = HashSet::new();
        let soon = Instant::now() + Duration::from_secs(5);
        assert_eq!(in_flight.wait(&polls, &none, soon).await, Ok(false));

        in_flight.started("1", "http://a.test/data?x=1");
        in_flight.started("2", "data:text/plain,x");
        let ender = in_flight.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            ender.ended("1", true);
        });
        assert_eq!(in_flight.wait(&polls, &none, soon).await, Ok(true));
        assert_eq!(in_flight.answered(), vec!["http://a.test/data".to_string()]);

        in_flight.started("3", "http://a.test/poll?since=2");
        let now = Instant::now() + Duration::from_millis(20);
        let open = in_flight.wait(&polls, &none, now).await;
        assert_eq!(open, Err(vec!["http://a.test/poll".to_string()]));
        let skip = set(&["http://a.test/poll"]);
        assert_eq!(in_flight.wait(&polls, &skip, soon).await, Ok(false));
        in_flight.clear();
        assert!(in_flight.open(&polls, &none).is_empty());
        assert!(in_flight.answered().is_empty());

        // An end heard before its start: the request is over, not open for ever.
        in_flight.ended("4", true);
        in_flight.started("4", "http://a.test/fast");
        assert_eq!(in_flight.wait(&polls, &none, soon).await, Ok(false));
    }

    #[test]
    fn an_address_is_a_long_poll_only_once_seen_hanging_in_two_renders() {
        let polls = LongPolls::default();
        let poll = set(&["http://a.test/poll"]);
        polls.after_render(&poll, &[]);
        assert!(
            !polls.knows("http://a.test/poll"),
            "one sighting is not enough"
        );
        polls.after_render(&HashSet::new(), &[]);
        assert!(!polls.knows("http://a.test/poll"));
        polls.after_render(&poll, &[]);
        assert!(polls.knows("http://a.test/poll"));
        // Answered with nothing left open: it was slow data, not a poll.
        polls.after_render(&HashSet::new(), &["http://a.test/poll".to_string()]);
        assert!(!polls.knows("http://a.test/poll"));
        polls.after_render(&poll, &[]);
        assert!(!polls.knows("http://a.test/poll"), "counting starts again");
    }

    #[test]
    fn a_render_waits_for_an_address_a_bounded_number_of_times() {
        let mut waits = Waits::default();
        let data = vec!["http://a.test/data".to_string()];
        for _ in 1..MAX_WAITS_PER_ADDRESS {
            waits.waiting_for(&data);
            assert!(waits.exhausted.is_empty());
        }
        waits.waiting_for(&data);
        assert!(waits.exhausted.contains("http://a.test/data"));
    }

    #[test]
    fn remembered_addresses_are_bounded() {
        let polls = LongPolls::default();
        for i in 0..MAX_ADDRESSES + 10 {
            let one = set(&[&format!("http://a.test/{i}")]);
            polls.after_render(&one, &[]);
            polls.after_render(&one, &[]);
        }
        let known = polls.seen.lock().unwrap().len();
        assert_eq!(known, MAX_ADDRESSES);
        assert!(polls.knows(&format!("http://a.test/{}", MAX_ADDRESSES + 9)));
    }
}
