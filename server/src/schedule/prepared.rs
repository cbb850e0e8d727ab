//! The scheduler's cache of prepared monitors: a monitor whose compilation takes long (a regex,
//! URL filters, a long XPath) is compiled ([`Checker::prepare`]) once per version of its
//! definition, not at every check. A monitor that compiles in a few microseconds (a URL and an
//! XPath, which the engine shares between monitors with the same one) is compiled again at each
//! check instead: kept, 100,000 of them would hold 135 MB (1.35 KB each) to save 0.5% of a
//! check's CPU. Bounded: past its capacity the least recently used tenth is dropped (and
//! compiled again when next checked).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use wachet::{Checker, InvalidMonitor, Monitor, PreparedMonitor};

/// Compiled at each check when it took less than this (a URL and a shared XPath take 2 to 6
/// µs); kept when longer.
const WORTH_KEEPING: Duration = Duration::from_micros(25);

/// The most characters of patterns (XPaths, regex, URL filters) compiled on the async thread
/// itself: more may take long enough to hold other checks up, and is compiled on the blocking
/// pool.
const SMALL_PATTERNS: usize = 512;

/// Prepared monitors kept by default: above the 100,000 monitors a minute one process is built
/// to check, since a cache smaller than the monitors cycling through it misses on every
/// check (each then compiled again on the blocking pool, and a tenth of the cache sorted out
/// every so often). Only monitors slow to compile take a place.
pub const DEFAULT_CAPACITY: usize = 120_000;

struct Entry {
    version: i64,
    prepared: PreparedMonitor,
    used: u64,
}

/// Prepared monitors by id, each for one version of its definition.
pub struct PreparedCache {
    capacity: usize,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    entries: HashMap<String, Entry>,
    clock: u64,
}

impl PreparedCache {
    /// A cache of at most `capacity` monitors (at least one).
    pub fn new(capacity: usize) -> Self {
        PreparedCache {
            capacity: capacity.max(1),
            inner: Mutex::new(Inner::default()),
        }
    }

    /// The prepared form of `monitor` (id `task`, definition `version`): the cached one when
    /// the version matches, else prepared now and cached. Invalid monitors are not cached.
    pub fn get(
        &self,
        checker: &dyn Checker,
        task: &str,
        version: i64,
        monitor: &Monitor,
    ) -> Result<PreparedMonitor, InvalidMonitor> {
        if let Some(prepared) = self.cached(task, version) {
            return Ok(prepared);
        }
        // Compiled outside the lock: other checks go on meanwhile.
        let prepared = checker.prepare(monitor)?;
        self.keep(task, version, &prepared);
        Ok(prepared)
    }

    /// Keeps `prepared` as `task`'s at `version`, making room past the capacity.
    fn keep(&self, task: &str, version: i64, prepared: &PreparedMonitor) {
        if let Ok(mut inner) = self.inner.lock() {
            if inner.entries.len() >= self.capacity && !inner.entries.contains_key(task) {
                let mut uses: Vec<u64> = inner.entries.values().map(|e| e.used).collect();
                uses.sort_unstable();
                let cut = uses[(uses.len() / 10).min(uses.len() - 1)];
                inner.entries.retain(|_, e| e.used > cut);
            }
            let used = inner.clock;
            inner.entries.insert(
                task.to_string(),
                Entry {
                    version,
                    prepared: prepared.clone(),
                    used,
                },
            );
        }
    }

    /// The cached prepared form of `task` at `version`, marked as just used.
    fn cached(&self, task: &str, version: i64) -> Option<PreparedMonitor> {
        let mut inner = self.inner.lock().ok()?;
        inner.clock += 1;
        let now = inner.clock;
        let entry = inner.entries.get_mut(task)?;
        if entry.version != version {
            return None;
        }
        entry.used = now;
        Some(entry.prepared.clone())
    }

    /// [`PreparedCache::get`] for a check on the async runtime. A monitor with small patterns
    /// is compiled here and kept only if that took long ([`WORTH_KEEPING`]); any other on the
    /// blocking pool, as compiling is CPU work (bounded by the engine's limits) that would hold
    /// an async thread meanwhile, and kept.
    pub async fn get_off_thread(
        self: &Arc<Self>,
        checker: &Arc<dyn Checker>,
        task: &str,
        version: i64,
        monitor: &Monitor,
    ) -> Result<PreparedMonitor, InvalidMonitor> {
        if let Some(prepared) = self.cached(task, version) {
            return Ok(prepared);
        }
        if patterns_len(monitor) <= SMALL_PATTERNS {
            let started = Instant::now();
            let prepared = checker.prepare(monitor)?;
            if started.elapsed() >= WORTH_KEEPING {
                self.keep(task, version, &prepared);
            }
            return Ok(prepared);
        }
        let (cache, checker) = (self.clone(), checker.clone());
        let (task, monitor) = (task.to_string(), monitor.clone());
        tokio::task::spawn_blocking(move || cache.get(checker.as_ref(), &task, version, &monitor))
            .await
            .unwrap_or_else(|err| {
                Err(InvalidMonitor {
                    errors: vec![wachet::FieldError {
                        field: ".".into(),
                        message: format!("preparing the monitor failed: {err}"),
                    }],
                })
            })
    }

    /// Monitors cached.
    pub fn len(&self) -> usize {
        self.inner.lock().map_or(0, |i| i.entries.len())
    }

    /// Whether none is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The characters of what compiling `monitor` parses beyond its URL: XPaths, regex, URL filters.
fn patterns_len(monitor: &Monitor) -> usize {
    let filters = monitor.url_filter.iter().flat_map(|f| {
        f.include
            .iter()
            .flatten()
            .chain(f.exclude.iter().flatten())
            .map(|v| v.filter.as_deref().map_or(0, str::len))
    });
    [&monitor.x_path, &monitor.exclude_x_path, &monitor.regex]
        .iter()
        .map(|p| p.as_deref().map_or(0, str::len))
        .chain(filters)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn monitor(x_path: &str) -> Monitor {
        let mut m = Monitor::new("https://example.com/");
        m.x_path = Some(x_path.into());
        m
    }

    #[test]
    fn a_version_is_prepared_once_and_the_cache_stays_bounded() {
        let engine = wachet::Engine::builder().build().unwrap();
        let cache = PreparedCache::new(10);
        let first = cache.get(&engine, "a", 1, &monitor("//p")).unwrap();
        // The same version is served from the cache, even if handed another definition.
        let again = cache.get(&engine, "a", 1, &monitor("//h1")).unwrap();
        assert_eq!(again.monitor().x_path, first.monitor().x_path);
        // A new version is prepared anew.
        let newer = cache.get(&engine, "a", 2, &monitor("//h1")).unwrap();
        assert_eq!(newer.monitor().x_path.as_deref(), Some("//h1"));
        assert_eq!(cache.len(), 1);
        assert!(cache.get(&engine, "bad", 1, &monitor("//[")).is_err());
        assert_eq!(cache.len(), 1, "invalid monitors are not cached");
        for i in 0..100 {
            cache
                .get(&engine, &format!("m{i}"), 1, &monitor("//p"))
                .unwrap();
            assert!(cache.len() <= 10);
        }
    }

    #[tokio::test]
    async fn a_monitor_quick_to_compile_is_compiled_at_each_check_and_a_slow_one_is_kept() {
        let engine: Arc<dyn Checker> = Arc::new(wachet::Engine::builder().build().unwrap());
        let cache = Arc::new(PreparedCache::new(1_000));
        for i in 0..100 {
            let prepared = cache
                .get_off_thread(
                    &engine,
                    &format!("m{i}"),
                    1,
                    &monitor("//p[@class='price']"),
                )
                .await
                .unwrap();
            assert_eq!(
                prepared.monitor().x_path.as_deref(),
                Some("//p[@class='price']")
            );
        }
        // A compilation the machine happened to interrupt past the threshold is kept; most
        // are not.
        assert!(cache.len() <= 10, "{} of 100 kept", cache.len());
        // Long patterns are compiled on the blocking pool and kept, whatever it took.
        let long = format!("//p[@class='{}']", "x".repeat(SMALL_PATTERNS));
        let before = cache.len();
        cache
            .get_off_thread(&engine, "long", 1, &monitor(&long))
            .await
            .unwrap();
        assert_eq!(cache.len(), before + 1);
        let again = cache
            .get_off_thread(&engine, "long", 1, &monitor("//h1"))
            .await
            .unwrap();
        assert_eq!(
            again.monitor().x_path.as_deref(),
            Some(long.as_str()),
            "served kept"
        );
    }
}
