//! Rate limits: a token bucket per user for every authenticated request, and limits on failed
//! logins per account and per client address (so a password cannot be guessed quickly, from
//! one address or from many). Login attempts are judged one at a time, so parallel guesses
//! cannot all slip in before the first failure is counted (and only one password hash is
//! computed at once). The limiters hold only recent keys: memory stays bounded.

use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter, clock::Clock};
use std::collections::HashMap;
use std::hash::Hash;
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tokio::sync::{Semaphore, SemaphorePermit};

/// How long a login attempt waits for its turn before it is told to come back.
const LOGIN_TURN_WAIT: Duration = Duration::from_secs(10);

/// Keys kept before stale ones are dropped.
const PRUNE_AT: usize = 10_000;

/// The settings of the limits.
#[derive(Debug, Clone, Copy)]
pub struct LimitSettings {
    /// Requests per second per user (0: no limit).
    pub requests_per_second: u32,
    /// Requests a user may send at once above the rate.
    pub burst: u32,
    /// Failed logins per minute per account and per client address (0: no limit).
    pub login_failures_per_minute: u32,
}

impl Default for LimitSettings {
    fn default() -> Self {
        LimitSettings {
            requests_per_second: 50,
            burst: 200,
            login_failures_per_minute: 10,
        }
    }
}

/// The service's rate limiters.
pub struct Limits {
    per_user: Option<DefaultKeyedRateLimiter<String>>,
    account_failures: Option<FailureLimit<String>>,
    address_failures: Option<FailureLimit<IpAddr>>,
    login_turn: Semaphore,
}

impl Limits {
    /// Limiters with these settings.
    pub fn new(settings: LimitSettings) -> Self {
        let per_user = NonZeroU32::new(settings.requests_per_second).map(|rate| {
            let burst = NonZeroU32::new(settings.burst).unwrap_or(rate);
            RateLimiter::keyed(Quota::per_second(rate).allow_burst(burst))
        });
        let failures = NonZeroU32::new(settings.login_failures_per_minute);
        Limits {
            per_user,
            account_failures: failures.map(FailureLimit::new),
            address_failures: failures.map(FailureLimit::new),
            login_turn: Semaphore::new(1),
        }
    }

    /// Takes one request of `user` from its bucket; `Err(seconds)` to wait when it is empty.
    pub fn request(&self, user: &str) -> Result<(), u64> {
        let Some(limiter) = &self.per_user else {
            return Ok(());
        };
        if limiter.len() > PRUNE_AT {
            limiter.retain_recent();
        }
        limiter.check_key(&user.to_string()).map_err(|not_until| {
            let wait = not_until.wait_time_from(governor::clock::DefaultClock::default().now());
            seconds(wait)
        })
    }

    /// Waits for the turn of one login attempt; `Err(seconds)` when the queue is too long.
    /// Hold the permit while checking, verifying and counting the attempt.
    pub async fn login_turn(&self) -> Result<SemaphorePermit<'_>, u64> {
        match tokio::time::timeout(LOGIN_TURN_WAIT, self.login_turn.acquire()).await {
            Ok(Ok(permit)) => Ok(permit),
            _ => Err(1),
        }
    }

    /// Whether a login for `account` (when the request names a well-formed one) from `address`
    /// may be tried now; `Err(seconds)` if either has failed too often lately.
    pub fn login_allowed(&self, account: Option<&str>, address: IpAddr) -> Result<(), u64> {
        if let (Some(limit), Some(account)) = (&self.account_failures, account) {
            limit.allowed(&account.to_string())?;
        }
        if let Some(limit) = &self.address_failures {
            limit.allowed(&address)?;
        }
        Ok(())
    }

    /// Counts a failed login against `account` and `address`.
    pub fn login_failed(&self, account: Option<&str>, address: IpAddr) {
        if let (Some(limit), Some(account)) = (&self.account_failures, account) {
            limit.failed(account.to_string());
        }
        if let Some(limit) = &self.address_failures {
            limit.failed(address);
        }
    }
}

fn seconds(wait: Duration) -> u64 {
    wait.as_secs() + u64::from(wait.subsec_nanos() > 0)
}

/// Failures per minute for each key (a burst of the quota, then one every 60/quota seconds); a
/// key over its quota is blocked until its next failure would be allowed.
struct FailureLimit<K: Hash + Eq + Clone> {
    limiter: DefaultKeyedRateLimiter<K>,
    blocked: Mutex<HashMap<K, Instant>>,
}

impl<K: Hash + Eq + Clone> FailureLimit<K> {
    fn new(per_minute: NonZeroU32) -> Self {
        FailureLimit {
            limiter: RateLimiter::keyed(Quota::per_minute(per_minute)),
            blocked: Mutex::new(HashMap::new()),
        }
    }

    fn allowed(&self, key: &K) -> Result<(), u64> {
        let blocked = self.blocked.lock().unwrap_or_else(|e| e.into_inner());
        match blocked.get(key) {
            Some(until) if *until > Instant::now() => Err(seconds(*until - Instant::now())),
            _ => Ok(()),
        }
    }

    fn failed(&self, key: K) {
        if self.limiter.len() > PRUNE_AT {
            self.limiter.retain_recent();
        }
        if let Err(not_until) = self.limiter.check_key(&key) {
            let wait = not_until.wait_time_from(governor::clock::DefaultClock::default().now());
            let now = Instant::now();
            let mut blocked = self.blocked.lock().unwrap_or_else(|e| e.into_inner());
            if blocked.len() > PRUNE_AT {
                blocked.retain(|_, until| *until > now);
            }
            blocked.insert(key, now + wait);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_block_after_the_quota_and_successes_do_not_count() {
        let limits = Limits::new(LimitSettings {
            login_failures_per_minute: 3,
            ..LimitSettings::default()
        });
        let here: IpAddr = "127.0.0.1".parse().unwrap();
        let there: IpAddr = "127.0.0.2".parse().unwrap();
        for _ in 0..3 {
            assert!(limits.login_allowed(Some("a@x"), here).is_ok());
            limits.login_failed(Some("a@x"), here);
        }
        // The fourth failure is over the quota: the account is blocked from every address.
        limits.login_failed(Some("a@x"), there);
        let wait = limits.login_allowed(Some("a@x"), there).unwrap_err();
        assert!((1..=60).contains(&wait), "{wait}");
        assert!(limits.login_allowed(Some("b@x"), there).is_ok());
    }

    #[test]
    fn each_user_has_a_bucket() {
        let limits = Limits::new(LimitSettings {
            requests_per_second: 1,
            burst: 2,
            login_failures_per_minute: 0,
        });
        assert!(limits.request("u1").is_ok());
        assert!(limits.request("u1").is_ok());
        assert!(limits.request("u1").is_err());
        assert!(limits.request("u2").is_ok());
    }
}
