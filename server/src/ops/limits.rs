//! Rate limits and the order of logins: a token bucket per user for every authenticated
//! request; failed logins counted per (account, client network) and per client network, each
//! with a backoff that doubles while the failures go on; password checks of one account judged
//! one at a time; and a bound on the argon2 hashes computed at once.
//!
//! Failures are never counted per account alone: whoever guesses a victim's password from their
//! own network slows only their own guesses, and the victim's correct password or API key from
//! another network still works. A client network is an IPv4 address, or the /64 of an IPv6
//! address (one subscriber gets a whole /64, so counting addresses would give an attacker
//! millions of fresh keys). API-key logins compare SHA-256 hashes and never wait for a password
//! hash. Every map here is bounded: memory stays bounded however many keys an attacker makes.

use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter, clock::Clock};
use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, RandomState};
use std::net::{IpAddr, Ipv6Addr};
use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tokio::sync::{MutexGuard, OwnedSemaphorePermit, Semaphore};

/// How long a login waits for its account's turn or for a free hash slot before it is told to
/// come back.
const LOGIN_TURN_WAIT: Duration = Duration::from_secs(10);
/// Keys kept before stale ones are dropped.
const PRUNE_AT: usize = 10_000;
/// Most keys a failure counter holds; past it only keys blocked now are kept.
const MAX_KEYS: usize = 100_000;
/// The window failures are counted in.
const WINDOW: Duration = Duration::from_secs(60);
/// The longest block; also how long a key's record of blocks is kept after its last failure.
const MAX_BLOCK: Duration = Duration::from_secs(3600);
/// Per-account locks: accounts are spread over this many, so the locks take fixed memory.
const ACCOUNT_STRIPES: usize = 1024;

/// The settings of the limits.
#[derive(Debug, Clone, Copy)]
pub struct LimitSettings {
    /// Requests per second per user (0: no limit).
    pub requests_per_second: u32,
    /// Requests a user may send at once above the rate.
    pub burst: u32,
    /// Failed logins per minute for one account from one client network, before that pair is
    /// blocked, for longer each time (0: no limit).
    pub login_failures_per_minute: u32,
    /// Failed logins per minute from one client network, whatever the accounts (0: no limit).
    pub network_login_failures_per_minute: u32,
    /// Password hashes (argon2) computed at once; 0: as many as the machine has cores.
    pub password_checks: usize,
}

impl Default for LimitSettings {
    fn default() -> Self {
        LimitSettings {
            requests_per_second: 50,
            burst: 200,
            login_failures_per_minute: 10,
            network_login_failures_per_minute: 30,
            password_checks: 0,
        }
    }
}

/// The client network `address` belongs to: an IPv4 address itself (also when written as an
/// IPv4-mapped IPv6 address), the /64 of an IPv6 address.
pub fn client_network(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let prefix = u128::from(v6) & !((1u128 << 64) - 1);
                IpAddr::V6(Ipv6Addr::from(prefix))
            }
        },
    }
}

/// The service's rate limiters.
pub struct Limits {
    per_user: Option<DefaultKeyedRateLimiter<String>>,
    account_failures: Option<FailureLimit<(String, IpAddr)>>,
    network_failures: Option<FailureLimit<IpAddr>>,
    accounts: AccountLocks,
    hash_slots: Arc<Semaphore>,
}

impl Limits {
    /// Limiters with these settings.
    pub fn new(settings: LimitSettings) -> Self {
        let per_user = NonZeroU32::new(settings.requests_per_second).map(|rate| {
            let burst = NonZeroU32::new(settings.burst).unwrap_or(rate);
            RateLimiter::keyed(Quota::per_second(rate).allow_burst(burst))
        });
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let slots = match settings.password_checks {
            0 => cores,
            n => n,
        };
        Limits {
            per_user,
            account_failures: NonZeroU32::new(settings.login_failures_per_minute)
                .map(FailureLimit::new),
            network_failures: NonZeroU32::new(settings.network_login_failures_per_minute)
                .map(FailureLimit::new),
            accounts: AccountLocks::new(),
            hash_slots: Arc::new(Semaphore::new(slots)),
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

    /// Waits for the turn of `account`'s password check (the account's checks run one after
    /// another, so parallel guesses cannot all slip in before the first failure is counted,
    /// while other accounts' logins go on); `Err(seconds)` when the wait is too long. Hold the
    /// guard while checking, verifying and counting the attempt.
    pub async fn account_turn(&self, account: &str) -> Result<MutexGuard<'_, ()>, u64> {
        tokio::time::timeout(LOGIN_TURN_WAIT, self.accounts.lock(account))
            .await
            .map_err(|_| 1)
    }

    /// Waits for a free slot to compute a password hash in; `Err(seconds)` when every slot
    /// stays taken too long. Move the permit into the blocking task that hashes: a client that
    /// hangs up must not free the slot of a hash still being computed.
    pub async fn hash_slot(&self) -> Result<OwnedSemaphorePermit, u64> {
        let slots = self.hash_slots.clone();
        match tokio::time::timeout(LOGIN_TURN_WAIT, slots.acquire_owned()).await {
            Ok(Ok(permit)) => Ok(permit),
            _ => Err(1),
        }
    }

    /// Whether a login for `account` (when the request names a well-formed one) from `address`
    /// may be tried now; `Err(seconds)` if that account from that network, or that network, has
    /// failed too often lately.
    pub fn login_allowed(&self, account: Option<&str>, address: IpAddr) -> Result<(), u64> {
        let network = client_network(address);
        if let (Some(limit), Some(account)) = (&self.account_failures, account) {
            limit.allowed(&(account.to_string(), network))?;
        }
        if let Some(limit) = &self.network_failures {
            limit.allowed(&network)?;
        }
        Ok(())
    }

    /// Counts a failed login against `account` from `address`'s network, and that network.
    pub fn login_failed(&self, account: Option<&str>, address: IpAddr) {
        let network = client_network(address);
        if let (Some(limit), Some(account)) = (&self.account_failures, account) {
            limit.failed((account.to_string(), network));
        }
        if let Some(limit) = &self.network_failures {
            limit.failed(network);
        }
    }

    /// Forgets the failures of `account` from `address`'s network after a successful login.
    pub fn login_succeeded(&self, account: &str, address: IpAddr) {
        if let Some(limit) = &self.account_failures {
            limit.forget(&(account.to_string(), client_network(address)));
        }
    }
}

fn seconds(wait: Duration) -> u64 {
    wait.as_secs() + u64::from(wait.subsec_nanos() > 0)
}

/// One lock per stripe of accounts, chosen by a hash keyed at random (so nobody can pick
/// accounts that share a lock with a victim's).
struct AccountLocks {
    stripes: Box<[tokio::sync::Mutex<()>]>,
    hasher: RandomState,
}

impl AccountLocks {
    fn new() -> Self {
        AccountLocks {
            stripes: (0..ACCOUNT_STRIPES)
                .map(|_| tokio::sync::Mutex::new(()))
                .collect(),
            hasher: RandomState::new(),
        }
    }

    async fn lock(&self, account: &str) -> MutexGuard<'_, ()> {
        let stripe = self.hasher.hash_one(account) as usize % self.stripes.len();
        self.stripes[stripe].lock().await
    }
}

/// A key's failures: those of the current window, and how often it was blocked lately.
struct Record {
    window_start: Instant,
    failures: u32,
    strikes: u32,
    blocked_until: Option<Instant>,
    last_failure: Instant,
}

/// Failures per minute for each key: past the quota, the key is blocked for a minute divided
/// by the quota, doubled with each block (at most an hour), and gets the quota again after.
/// A key forgets its blocks an hour after its last failure.
struct FailureLimit<K: Hash + Eq + Clone> {
    quota: u32,
    records: Mutex<Records<K>>,
}

/// The records, and the size at which they are pruned next: twice what a pruning left, so a
/// flood of fresh keys costs amortized constant time per failure, not a scan each.
struct Records<K> {
    map: HashMap<K, Record>,
    prune_at: usize,
}

impl<K: Hash + Eq + Clone> FailureLimit<K> {
    fn new(per_minute: NonZeroU32) -> Self {
        FailureLimit {
            quota: per_minute.get(),
            records: Mutex::new(Records {
                map: HashMap::new(),
                prune_at: PRUNE_AT,
            }),
        }
    }

    fn allowed(&self, key: &K) -> Result<(), u64> {
        let records = self.records.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        match records.map.get(key).and_then(|r| r.blocked_until) {
            Some(until) if until > now => Err(seconds(until - now)),
            _ => Ok(()),
        }
    }

    fn failed(&self, key: K) {
        let now = Instant::now();
        let mut records = self.records.lock().unwrap_or_else(|e| e.into_inner());
        if records.map.len() >= records.prune_at && !records.map.contains_key(&key) {
            prune(&mut records.map, now);
            records.prune_at = (records.map.len() * 2).clamp(PRUNE_AT, MAX_KEYS);
        }
        let record = records.map.entry(key).or_insert(Record {
            window_start: now,
            failures: 0,
            strikes: 0,
            blocked_until: None,
            last_failure: now,
        });
        if now.duration_since(record.last_failure) > MAX_BLOCK {
            record.strikes = 0;
        }
        if now.duration_since(record.window_start) >= WINDOW {
            record.window_start = now;
            record.failures = 0;
        }
        record.last_failure = now;
        record.failures += 1;
        if record.failures > self.quota {
            record.strikes = record.strikes.saturating_add(1);
            let base = WINDOW / self.quota;
            let block = base
                .saturating_mul(1 << (record.strikes - 1).min(20))
                .min(MAX_BLOCK);
            record.blocked_until = Some(now + block);
            record.window_start = now + block;
            record.failures = 0;
        }
    }

    fn forget(&self, key: &K) {
        let mut records = self.records.lock().unwrap_or_else(|e| e.into_inner());
        records.map.remove(key);
    }
}

/// Drops records that no longer matter; when too many still do, keeps only the blocked ones
/// (past [`MAX_KEYS`], a key that failed without being blocked is forgotten early).
fn prune<K: Hash + Eq>(records: &mut HashMap<K, Record>, now: Instant) {
    let blocked = |r: &Record| r.blocked_until.is_some_and(|until| until > now);
    records.retain(|_, r| blocked(r) || now.duration_since(r.last_failure) <= MAX_BLOCK);
    if records.len() >= MAX_KEYS {
        records.retain(|_, r| blocked(r));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(per_account: u32, per_network: u32) -> Limits {
        Limits::new(LimitSettings {
            login_failures_per_minute: per_account,
            network_login_failures_per_minute: per_network,
            ..LimitSettings::default()
        })
    }

    #[test]
    fn failures_block_one_account_from_one_network_only() {
        let limits = limits(3, 100);
        let here: IpAddr = "127.0.0.1".parse().unwrap();
        let there: IpAddr = "127.0.0.2".parse().unwrap();
        for _ in 0..3 {
            assert!(limits.login_allowed(Some("a@x"), there).is_ok());
            limits.login_failed(Some("a@x"), there);
        }
        // The fourth failure is over the quota: the account is blocked from that network only.
        limits.login_failed(Some("a@x"), there);
        let wait = limits.login_allowed(Some("a@x"), there).unwrap_err();
        assert!((1..=20).contains(&wait), "{wait}");
        assert!(limits.login_allowed(Some("a@x"), here).is_ok());
        assert!(limits.login_allowed(Some("b@x"), there).is_ok());
    }

    #[test]
    fn each_block_is_longer_than_the_one_before() {
        let limit = FailureLimit::new(NonZeroU32::new(2).unwrap());
        let mut waits = Vec::new();
        for _ in 0..4 {
            for _ in 0..3 {
                limit.failed("k");
            }
            waits.push(limit.allowed(&"k").unwrap_err());
            // As if the block had run out: the next failures come after it.
            let mut records = limit.records.lock().unwrap();
            let record = records.map.get_mut("k").unwrap();
            record.blocked_until = None;
            record.window_start = Instant::now();
        }
        assert_eq!(waits, vec![30, 60, 120, 240]);
    }

    #[test]
    fn a_network_is_limited_across_accounts() {
        let limits = limits(100, 3);
        let there: IpAddr = "127.0.0.2".parse().unwrap();
        for i in 0..4 {
            limits.login_failed(Some(&format!("user{i}@x")), there);
        }
        assert!(limits.login_allowed(Some("new@x"), there).is_err());
        assert!(limits.login_allowed(None, there).is_err());
        assert!(
            limits
                .login_allowed(Some("new@x"), "127.0.0.1".parse().unwrap())
                .is_ok()
        );
    }

    #[test]
    fn an_ipv6_slash_64_is_one_network_and_mapped_ipv4_is_ipv4() {
        let limits = limits(3, 1_000_000);
        let base = u128::from("2001:db8:1:2::".parse::<Ipv6Addr>().unwrap());
        // 10,000 addresses of one /64, each failing once: one network, blocked after three.
        for i in 0..10_000u128 {
            let address = IpAddr::V6(Ipv6Addr::from(base | (i * 7_919 + 1)));
            limits.login_failed(Some("victim@x"), address);
        }
        let inside = IpAddr::V6(Ipv6Addr::from(base | 0xdead_beef));
        assert!(limits.login_allowed(Some("victim@x"), inside).is_err());
        let next_64 = IpAddr::V6(Ipv6Addr::from(base + (1u128 << 64)));
        assert!(limits.login_allowed(Some("victim@x"), next_64).is_ok());
        assert_eq!(
            limits
                .account_failures
                .as_ref()
                .unwrap()
                .records
                .lock()
                .unwrap()
                .map
                .len(),
            1
        );
        assert_eq!(
            client_network("::ffff:127.0.0.2".parse().unwrap()),
            "127.0.0.2".parse::<IpAddr>().unwrap()
        );
        assert_eq!(
            client_network("2001:db8::1:2:3:4".parse().unwrap()),
            "2001:db8::".parse::<IpAddr>().unwrap()
        );
    }

    #[test]
    fn a_success_forgets_that_networks_failures() {
        let limits = limits(2, 100);
        let here: IpAddr = "127.0.0.1".parse().unwrap();
        limits.login_failed(Some("a@x"), here);
        limits.login_failed(Some("a@x"), here);
        limits.login_succeeded("a@x", here);
        limits.login_failed(Some("a@x"), here);
        limits.login_failed(Some("a@x"), here);
        assert!(limits.login_allowed(Some("a@x"), here).is_ok());
    }

    #[test]
    fn the_records_stay_bounded() {
        let limit = FailureLimit::new(NonZeroU32::new(1).unwrap());
        // A flood of fresh keys, one failure each (none blocked): the map is pruned only when it
        // doubled, so each failure stays cheap, and never holds more than MAX_KEYS.
        for i in 0..(MAX_KEYS as u32 + 10) {
            limit.failed(i);
        }
        let mut records = limit.records.lock().unwrap();
        assert!(records.map.len() <= MAX_KEYS, "{}", records.map.len());
        // An hour later, none is worth keeping.
        let later = Instant::now() + MAX_BLOCK + Duration::from_secs(1);
        prune(&mut records.map, later);
        assert!(records.map.is_empty());
    }

    #[test]
    fn each_user_has_a_bucket() {
        let limits = Limits::new(LimitSettings {
            requests_per_second: 1,
            burst: 2,
            ..LimitSettings::default()
        });
        assert!(limits.request("u1").is_ok());
        assert!(limits.request("u1").is_ok());
        assert!(limits.request("u1").is_err());
        assert!(limits.request("u2").is_ok());
    }
}
