//! The checks this process has in flight per host ([`crate::store::host_hash`]), so a claim
//! takes no more of a host's monitors than the engine's host slots let through at once
//! ([`BusyHosts`]). Past that, a check would only wait for its host's slot while holding a check
//! slot, and a slow host with thousands of monitors would soon hold every check slot and delay
//! every other host's monitors; it would also fail its own checks as timeouts the host never
//! caused. A check counts on its host while it holds its check slot.

use crate::store::BusyHosts;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The count of checks in flight per host, shared by the scheduler's pools.
#[derive(Debug, Default)]
pub struct Hosts {
    in_flight: Mutex<HashMap<i64, u32>>,
}

/// One check counted on its host until dropped.
#[derive(Debug)]
pub struct OnHost {
    hosts: Arc<Hosts>,
    host: i64,
}

impl Hosts {
    /// The hosts with checks in flight, as a claim takes them, each allowed `per_host`.
    pub fn busy(&self, per_host: usize) -> BusyHosts {
        let in_flight = self
            .in_flight
            .lock()
            .map(|counts| counts.iter().map(|(host, n)| (*host, *n)).collect())
            .unwrap_or_default();
        BusyHosts {
            per_host: u32::try_from(per_host).unwrap_or(u32::MAX),
            in_flight,
        }
    }

    /// Whether `host` has `per_host` checks in flight or more (never, when `per_host` is 0).
    pub fn full(&self, host: i64, per_host: usize) -> bool {
        per_host > 0
            && self.in_flight.lock().is_ok_and(|counts| {
                counts
                    .get(&host)
                    .is_some_and(|n| usize::try_from(*n).unwrap_or(usize::MAX) >= per_host)
            })
    }

    /// Counts one more check on `host` until the returned guard is dropped.
    pub fn enter(self: &Arc<Self>, host: i64) -> OnHost {
        if let Ok(mut counts) = self.in_flight.lock() {
            *counts.entry(host).or_insert(0) += 1;
        }
        OnHost {
            hosts: self.clone(),
            host,
        }
    }
}

impl Drop for OnHost {
    fn drop(&mut self) {
        if let Ok(mut counts) = self.hosts.in_flight.lock()
            && let Some(n) = counts.get_mut(&self.host)
        {
            *n = n.saturating_sub(1);
            if *n == 0 {
                counts.remove(&self.host);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_counts_its_checks_until_they_end_and_is_then_forgotten() {
        let hosts = Arc::new(Hosts::default());
        let a = hosts.enter(7);
        let b = hosts.enter(7);
        let c = hosts.enter(-3);
        let mut busy = hosts.busy(4).in_flight;
        busy.sort();
        assert_eq!(busy, vec![(-3, 1), (7, 2)]);
        assert!(hosts.full(7, 2) && !hosts.full(7, 3) && !hosts.full(7, 0));
        drop((a, c));
        assert_eq!(hosts.busy(4).in_flight, vec![(7, 1)]);
        drop(b);
        assert!(hosts.busy(4).in_flight.is_empty(), "no entry is kept");
        assert_eq!(hosts.busy(0).limit(), i64::from(u32::MAX), "0 is no limit");
    }
}
