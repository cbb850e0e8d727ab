//! The crawl's scheduler: which pending page goes out next. Pages wait in one queue per host;
//! a page is dispatched when a global slot is free, its host has fewer than its in-flight limit
//! out, and the host's rate limiter (governor) has a token. Hosts take turns, so one slow or
//! rate-limited host never holds up the others, and nothing waiting holds a slot.

use super::page::Pending;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use std::collections::{HashMap, VecDeque};
use std::num::NonZeroU32;
use std::time::{Duration, Instant};

/// Limits on requests in flight and per host.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub concurrency: usize,
    /// 0 = unlimited.
    pub per_host_concurrency: usize,
    /// 0 = unlimited.
    pub per_host_rps: u32,
}

struct Host {
    queue: VecDeque<Pending>,
    in_flight: usize,
    limiter: Option<DefaultDirectRateLimiter>,
}

pub(crate) struct Scheduler {
    limits: Limits,
    hosts: HashMap<String, Host>,
    /// Hosts with queued pages, in turn order.
    turns: VecDeque<String>,
    in_flight: usize,
    queued: usize,
    clock: DefaultClock,
}

impl Scheduler {
    pub fn new(limits: Limits) -> Self {
        Scheduler {
            limits,
            hosts: HashMap::new(),
            turns: VecDeque::new(),
            in_flight: 0,
            queued: 0,
            clock: DefaultClock::default(),
        }
    }

    pub fn push(&mut self, pending: Pending) {
        let key = host_key(&pending.url);
        let rps = self.limits.per_host_rps;
        let host = self.hosts.entry(key.clone()).or_insert_with(|| Host {
            queue: VecDeque::new(),
            in_flight: 0,
            limiter: NonZeroU32::new(rps).map(|n| RateLimiter::direct(Quota::per_second(n))),
        });
        if host.queue.is_empty() {
            self.turns.push_back(key);
        }
        host.queue.push_back(pending);
        self.queued += 1;
    }

    /// The next page to dispatch, or when to ask again (`Err(Some(instant))`) or nothing to do
    /// until a page finishes (`Err(None)`).
    pub fn next(&mut self) -> Result<(String, Pending), Option<Instant>> {
        if self.in_flight >= self.limits.concurrency {
            return Err(None);
        }
        let mut wake: Option<Instant> = None;
        for _ in 0..self.turns.len() {
            let Some(key) = self.turns.pop_front() else {
                break;
            };
            let Some(host) = self.hosts.get_mut(&key) else {
                continue;
            };
            let per_host = self.limits.per_host_concurrency;
            if per_host > 0 && host.in_flight >= per_host {
                self.turns.push_back(key);
                continue;
            }
            if let Some(limiter) = &host.limiter
                && let Err(not_until) = limiter.check()
            {
                let wait: Duration = not_until.wait_time_from(self.clock.now());
                let at = Instant::now() + wait;
                wake = Some(wake.map_or(at, |w| w.min(at)));
                self.turns.push_back(key);
                continue;
            }
            let Some(pending) = host.queue.pop_front() else {
                continue;
            };
            host.in_flight += 1;
            self.in_flight += 1;
            self.queued -= 1;
            if !host.queue.is_empty() {
                self.turns.push_back(key.clone());
            }
            return Ok((key, pending));
        }
        Err(wake)
    }

    pub fn finished(&mut self, key: &str) {
        self.in_flight = self.in_flight.saturating_sub(1);
        if let Some(host) = self.hosts.get_mut(key) {
            host.in_flight = host.in_flight.saturating_sub(1);
        }
    }

    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    pub fn queued(&self) -> usize {
        self.queued
    }
}

/// Rate limits apply per host and port, as a server sees them.
fn host_key(url: &url::Url) -> String {
    match url.port_or_known_default() {
        Some(port) => format!("{}:{port}", url.host_str().unwrap_or("")),
        None => url.host_str().unwrap_or("").to_string(),
    }
}
