//! The checks this process has in flight per host ([`crate::store::host_hash`]), so a claim
//! takes no more of a host's monitors than the engine's host slots let through at once
//! ([`BusyHosts`]). Past that, a check would only wait for its host's slot while holding a check
//! slot, and a slow host with thousands of monitors would soon hold every check slot and delay
//! every other host's monitors; it would also fail its own checks as timeouts the host never
//! caused. A check counts on its host while it holds its check slot, and so does each fetch of
//! a first check's quick samples, which waits for its host to have room
//! ([`Hosts::enter_with_room`]) before it takes one of the samplers' permits.

use crate::store::BusyHosts;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

/// The count of checks in flight per host, shared by the scheduler's pools.
#[derive(Debug, Default)]
pub struct Hosts {
    in_flight: Mutex<HashMap<i64, OnOneHost>>,
}

/// What one host has in flight, and the wake-up of those waiting for it to have room.
#[derive(Debug, Default)]
struct OnOneHost {
    n: u32,
    freed: Arc<Notify>,
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
            .map(|counts| counts.iter().map(|(host, on)| (*host, on.n)).collect())
            .unwrap_or_default();
        BusyHosts {
            per_host: u32::try_from(per_host).unwrap_or(u32::MAX),
            in_flight,
        }
    }

    /// Whether `host` has `per_host` checks in flight or more (never, when `per_host` is 0).
    pub fn full(&self, host: i64, per_host: usize) -> bool {
        self.in_flight
            .lock()
            .is_ok_and(|counts| is_full(counts.get(&host), per_host))
    }

    /// Counts one more check on `host` until the returned guard is dropped.
    pub fn enter(self: &Arc<Self>, host: i64) -> OnHost {
        if let Ok(mut counts) = self.in_flight.lock() {
            counts.entry(host).or_default().n += 1;
        }
        OnHost {
            hosts: self.clone(),
            host,
        }
    }

    /// Waits until `host` has fewer than `per_host` checks in flight (0: no limit), then counts
    /// one more on it until the returned guard is dropped. Waiters are woken one per check that
    /// ends on the host (all of them when it has none left), so a host's backlog wakes nobody
    /// else. Cancel-safe: a waiter dropped before it entered counts nothing, and one dropped
    /// after it was woken hands its wake-up on to the next (tokio's `Notified` does).
    pub async fn enter_with_room(self: &Arc<Self>, host: i64, per_host: usize) -> OnHost {
        loop {
            let freed = {
                let Ok(mut counts) = self.in_flight.lock() else {
                    return self.enter(host);
                };
                let on = counts.entry(host).or_default();
                if !is_full(Some(on), per_host) {
                    on.n += 1;
                    return OnHost {
                        hosts: self.clone(),
                        host,
                    };
                }
                // Made under the lock, so a check that ends between this look and the wait
                // still wakes it.
                on.freed.clone().notified_owned()
            };
            freed.await;
        }
    }
}

fn is_full(on: Option<&OnOneHost>, per_host: usize) -> bool {
    per_host > 0 && on.is_some_and(|on| usize::try_from(on.n).unwrap_or(usize::MAX) >= per_host)
}

impl Drop for OnHost {
    fn drop(&mut self) {
        if let Ok(mut counts) = self.hosts.in_flight.lock()
            && let Some(on) = counts.get_mut(&self.host)
        {
            on.n = on.n.saturating_sub(1);
            if on.n == 0 {
                // Room for every waiter: each looks again, at a new entry.
                on.freed.notify_waiters();
                counts.remove(&self.host);
            } else {
                on.freed.notify_one();
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

    #[tokio::test]
    async fn a_check_waiting_for_room_on_its_host_enters_when_one_there_ends() {
        let hosts = Arc::new(Hosts::default());
        let (a, b) = (hosts.enter(7), hosts.enter(7));
        let waiting = tokio::spawn({
            let hosts = hosts.clone();
            async move { hosts.enter_with_room(7, 2).await }
        });
        // Another host has room at once, and a host without a limit always has.
        let other = hosts.enter_with_room(8, 2).await;
        let unlimited = hosts.enter_with_room(7, 0).await;
        drop(unlimited);
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "host 7 has no room");
        drop(a);
        let entered = tokio::time::timeout(std::time::Duration::from_secs(10), waiting)
            .await
            .expect("woken when a check on its host ends")
            .unwrap();
        assert!(hosts.full(7, 2));
        drop((b, entered, other));
        assert!(hosts.busy(4).in_flight.is_empty(), "no entry is kept");
    }
}
