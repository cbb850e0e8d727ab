//! The crawl's scheduler: which pending page goes out next. Pages wait in one queue per host;
//! a page is dispatched when one of the crawl's slots is free and its host has fewer than the
//! engine's per-host limit of this crawl's pages out. Hosts take turns, so one slow host never
//! takes all of the crawl's slots and holds up the others.
//!
//! The politeness limits themselves (in flight and requests per second per host, across every
//! check of the engine) are enforced by the downloader's host slots
//! ([`crate::fetch::hosts`]), which a dispatched page waits for. This scheduler never holds
//! more of one host's pages out than the downloader would let through, so a crawl waiting on a
//! host busy with other checks ties up at most that many of its own slots, never all of them,
//! and every wait ends with the fetch's timeout: no deadlock, whoever holds the host.

use super::page::Pending;
use crate::fetch::hosts::with_host_key;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// Limits on this crawl's requests in flight, in all and per host.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub concurrency: usize,
    /// 0 = unlimited.
    pub per_host_concurrency: usize,
}

struct Host {
    queue: VecDeque<Pending>,
    in_flight: usize,
}

pub(crate) struct Scheduler {
    limits: Limits,
    /// Keyed by [`crate::fetch::hosts::host_key`]; the key is shared by the host's turns and
    /// its dispatched pages, so a page costs no copy of it.
    hosts: HashMap<Arc<str>, Host>,
    /// Hosts with queued pages, in turn order.
    turns: VecDeque<Arc<str>>,
    in_flight: usize,
    queued: usize,
}

impl Scheduler {
    pub fn new(limits: Limits) -> Self {
        Scheduler {
            limits,
            hosts: HashMap::new(),
            turns: VecDeque::new(),
            in_flight: 0,
            queued: 0,
        }
    }

    pub fn push(&mut self, pending: Pending) {
        let key = with_host_key(&pending.fetch_url, |key| {
            match self.hosts.get_key_value(key) {
                Some((known, _)) => known.clone(),
                None => Arc::from(key),
            }
        });
        let host = self.hosts.entry(key.clone()).or_insert_with(|| Host {
            queue: VecDeque::new(),
            in_flight: 0,
        });
        if host.queue.is_empty() {
            self.turns.push_back(key);
        }
        host.queue.push_back(pending);
        self.queued += 1;
    }

    /// The next page to dispatch, with its host's key, or `None` when nothing may go out until
    /// a page finishes.
    pub fn next(&mut self) -> Option<(Arc<str>, Pending)> {
        if self.in_flight >= self.limits.concurrency {
            return None;
        }
        for _ in 0..self.turns.len() {
            let key = self.turns.pop_front()?;
            let Some(host) = self.hosts.get_mut(&key) else {
                continue;
            };
            let per_host = self.limits.per_host_concurrency;
            if per_host > 0 && host.in_flight >= per_host {
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
            return Some((key, pending));
        }
        None
    }

    pub fn finished(&mut self, key: &str) {
        self.in_flight = self.in_flight.saturating_sub(1);
        if let Some(host) = self.hosts.get_mut(key) {
            host.in_flight = host.in_flight.saturating_sub(1);
            if host.in_flight == 0 && host.queue.is_empty() {
                // Bounded by the hosts with work, not by every host the crawl ever met.
                self.hosts.remove(key);
            }
        }
    }

    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    pub fn queued(&self) -> usize {
        self.queued
    }
}
