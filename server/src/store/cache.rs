//! The answers a store keeps in memory for its hottest reads: the owner of a bearer token
//! (every authenticated request asks), a monitor by id and a folder's page (dashboards poll
//! them). A store holds one [`Caches`] and uses it in its own methods: the read looks here
//! first, and each write that changes a cached answer invalidates it (or moves a
//! [`Generations`] on) right after its commit, in the method that writes. Any backend can hold
//! one; nothing here knows about a database.
//!
//! Within one process a read after a write therefore sees the write. Entries also expire after
//! [`TTL`], which bounds how long a write made by another process (another instance on the same
//! database) can go unseen. Each cache is bounded; when one is full of answers still in use, new
//! answers are not kept.

use super::Millis;
use super::folders::FolderKey;
use dashmap::DashMap;
use serde_json::value::RawValue;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use wachet::model::{Folder, Monitor};

/// How long a cached answer is used before the store is asked again.
pub const TTL: Duration = Duration::from_secs(5);
/// Most tokens cached.
const MAX_TOKENS: usize = 50_000;
/// Most monitors cached.
const MAX_TASKS: usize = 10_000;
/// Most folder pages cached (each a few kilobytes: 50 ids and the folders' names).
const MAX_LISTINGS: usize = 2_000;

struct Cached<T> {
    value: T,
    at: Instant,
}

/// Answers by key, each used for [`TTL`] at most, `max` of them at most.
pub struct Cache<T> {
    entries: DashMap<String, Cached<T>>,
    max: usize,
    ttl: Duration,
    /// When a full cache last dropped its expired answers: at most once a `ttl`, so a cache
    /// full of fresh answers is not walked on every put.
    swept: std::sync::Mutex<Instant>,
}

impl<T: Clone> Cache<T> {
    /// An empty cache of at most `max` answers.
    pub fn new(max: usize) -> Self {
        Cache::with_ttl(max, TTL)
    }

    fn with_ttl(max: usize, ttl: Duration) -> Self {
        Cache {
            entries: DashMap::new(),
            max,
            ttl,
            swept: std::sync::Mutex::new(Instant::now()),
        }
    }

    /// The answer kept for `key`, unless it is older than [`TTL`].
    pub fn get(&self, key: &str) -> Option<T> {
        self.entries
            .get(key)
            .filter(|e| e.at.elapsed() < self.ttl)
            .map(|e| e.value.clone())
    }

    /// Keeps `value` as the answer for `key` (replacing the one kept). A full cache first drops
    /// its expired answers (their slots are otherwise held for ever: `get` only skips them);
    /// still full, it keeps no new key.
    pub fn put(&self, key: &str, value: T) {
        if self.entries.len() >= self.max && !self.entries.contains_key(key) {
            self.sweep();
            if self.entries.len() >= self.max {
                return;
            }
        }
        self.entries.insert(
            key.to_string(),
            Cached {
                value,
                at: Instant::now(),
            },
        );
    }

    /// Drops the expired answers, unless another caller is at it or did it within a `ttl`.
    fn sweep(&self) {
        let Ok(mut swept) = self.swept.try_lock() else {
            return;
        };
        if swept.elapsed() < self.ttl {
            return;
        }
        *swept = Instant::now();
        drop(swept);
        self.entries.retain(|_, e| e.at.elapsed() < self.ttl);
    }

    /// Drops the answer for `key`.
    pub fn invalidate(&self, key: &str) {
        self.entries.remove(key);
    }

    /// Drops every answer for which `stale(key, value)` holds.
    pub fn invalidate_where(&self, stale: impl Fn(&str, &T) -> bool) {
        self.entries
            .retain(|key, cached| !stale(key, &cached.value));
    }

    /// Drops every answer.
    pub fn clear(&self) {
        self.entries.clear();
    }
}

/// A monitor as the store answers it (with its latest data) and its owner, shared by the cache
/// and every reader: cloning one copies a pointer. Its JSON is written the first time it is
/// asked for and kept with it, so a listing that shows it again copies those bytes instead of
/// serializing the monitor anew.
#[derive(Clone)]
pub struct SharedMonitor(Arc<Shared>);

struct Shared {
    owner: String,
    monitor: Monitor,
    json: OnceLock<Option<Box<RawValue>>>,
}

impl SharedMonitor {
    /// `monitor`, owned by `owner`.
    pub fn new(owner: &str, monitor: Monitor) -> Self {
        SharedMonitor(Arc::new(Shared {
            owner: owner.to_string(),
            monitor,
            json: OnceLock::new(),
        }))
    }

    /// The id of its owner.
    pub fn owner(&self) -> &str {
        &self.0.owner
    }

    /// The monitor.
    pub fn monitor(&self) -> &Monitor {
        &self.0.monitor
    }

    /// A copy of the monitor, to change or to hand on.
    pub fn to_monitor(&self) -> Monitor {
        self.0.monitor.clone()
    }

    /// The monitor as JSON, exactly as `serde_json` writes [`Monitor`]; `None` only if it
    /// cannot be written (then neither can the monitor itself).
    pub fn json(&self) -> Option<&RawValue> {
        self.0
            .json
            .get_or_init(|| {
                serde_json::to_string(&self.0.monitor)
                    .ok()
                    .and_then(|json| RawValue::from_string(json).ok())
            })
            .as_deref()
    }
}

impl std::fmt::Debug for SharedMonitor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedMonitor")
            .field("owner", &self.0.owner)
            .field("monitor", &self.0.monitor)
            .finish()
    }
}

/// Answers that many kinds of write can change, so that no write names the answers it
/// changes: each is kept with the generation it was read at, and every such write moves the
/// generation on once it has committed. A reader takes the generation *before* it reads the
/// database, so an answer read before a commit is never used after that commit's move; a
/// write that finished before a read began is always seen by it. Expiry and bounds are
/// [`Cache`]'s.
pub struct Generations<T> {
    answers: Cache<(u64, T)>,
    generation: AtomicU64,
}

impl<T: Clone> Generations<T> {
    /// An empty cache of at most `max` answers.
    pub fn new(max: usize) -> Self {
        Generations {
            answers: Cache::new(max),
            generation: AtomicU64::new(0),
        }
    }

    /// The generation to read at (and to [`put`](Self::put) the answer with).
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// The answer kept for `key`, when it was read at generation `now`.
    pub fn get(&self, key: &str, now: u64) -> Option<T> {
        self.answers
            .get(key)
            .and_then(|(at, value)| (at == now).then_some(value))
    }

    /// Keeps `value`, read at generation `at`, as the answer for `key`.
    pub fn put(&self, key: &str, at: u64, value: T) {
        if at == self.generation() {
            self.answers.put(key, (at, value));
        }
    }

    /// A write that may change any answer has committed: none kept so far is used again.
    pub fn moved_on(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
    }
}

/// The caches of one store.
pub struct Caches {
    /// Token hash -> (owner, expiry); the expiry is checked on every hit.
    pub tokens: Cache<(String, Millis)>,
    /// Monitor id -> the monitor with its latest data, and its owner.
    pub tasks: Cache<SharedMonitor>,
    /// A folder page's shape (its path and subfolders with their counts, its monitors' ids,
    /// where the next page starts), by owner, folder and position; moved on by every write
    /// to a folder, to a monitor's name, place or pause, and by checks that change a folder's
    /// count of failing monitors. The monitors themselves come from `tasks`.
    pub listings: Generations<Arc<ListedPage>>,
}

/// One page of a folder listing without its monitors, as [`Caches::listings`] keeps it.
#[derive(Debug, Default)]
pub struct ListedPage {
    /// From the root's child down to the folder, with counts.
    pub path: Vec<Folder>,
    /// The page's subfolders, with counts.
    pub subfolders: Vec<Folder>,
    /// The page's monitors, in order.
    pub tasks: Vec<String>,
    /// Where the next page starts.
    pub next: Option<FolderKey>,
}

impl Default for Caches {
    fn default() -> Self {
        Caches {
            tokens: Cache::new(MAX_TOKENS),
            tasks: Cache::new(MAX_TASKS),
            listings: Generations::new(MAX_LISTINGS),
        }
    }
}

impl std::fmt::Debug for Caches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Caches")
            .field("tokens", &self.tokens.entries.len())
            .field("tasks", &self.tasks.entries.len())
            .field("listings", &self.listings.answers.entries.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_kept_until_invalidated_and_a_full_cache_keeps_no_more() {
        let cache = Cache::new(2);
        cache.put("a", ("ann".to_string(), 1));
        cache.put("b", ("bob".to_string(), 2));
        cache.put("c", ("cid".to_string(), 3));
        assert_eq!(cache.get("a"), Some(("ann".to_string(), 1)));
        assert_eq!(cache.get("c"), None, "full: not kept");

        cache.invalidate("a");
        assert_eq!(cache.get("a"), None);
        cache.put("c", ("cid".to_string(), 3));
        assert_eq!(cache.get("c"), Some(("cid".to_string(), 3)), "room again");

        cache.invalidate_where(|key, (owner, _)| key == "b" || owner == "nobody");
        assert_eq!(cache.get("b"), None);
        assert!(cache.get("c").is_some());
        cache.clear();
        assert_eq!(cache.get("c"), None);
    }

    #[test]
    fn an_answer_read_before_a_write_is_not_used_after_it() {
        let pages = Generations::new(10);
        let before = pages.generation();
        pages.put("root", before, "old");
        assert_eq!(pages.get("root", pages.generation()), Some("old"));

        // A read that began before a write committed and finished after it.
        let during = pages.generation();
        pages.moved_on();
        pages.put("root", during, "read during the write");
        assert_eq!(pages.get("root", pages.generation()), None);

        let after = pages.generation();
        pages.put("root", after, "new");
        assert_eq!(pages.get("root", after), Some("new"));
        assert_eq!(
            pages.get("root", before),
            None,
            "asked at another generation"
        );
    }

    #[test]
    fn a_full_cache_replaces_a_kept_answer_and_makes_room_once_answers_expire() {
        let ttl = Duration::from_millis(200);
        let cache = Cache::with_ttl(2, ttl);
        cache.put("a", 1);
        cache.put("b", 2);
        cache.put("a", 10);
        assert_eq!(
            cache.get("a"),
            Some(10),
            "a kept key is refreshed when full"
        );
        cache.put("c", 3);
        assert_eq!(cache.get("c"), None, "full of fresh answers: not kept");
        std::thread::sleep(ttl + Duration::from_millis(50));
        assert_eq!(cache.get("a"), None, "expired");
        cache.put("c", 3);
        assert_eq!(cache.get("c"), Some(3), "the expired answers made room");
    }
}
