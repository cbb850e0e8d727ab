//! The scheduler's cache of prepared monitors: each monitor is compiled ([`Checker::prepare`])
//! once per version of its definition, not at every check, so 10,000 monitors do not compile
//! their XPath and regex again every minute. Bounded: past its capacity the least recently used
//! tenth is dropped (and compiled again when next checked).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use wachet::{Checker, InvalidMonitor, Monitor, PreparedMonitor};

/// Prepared monitors kept by default: above the 100,000 monitors a minute one process checks
/// (issue 21), since a cache smaller than the monitors cycling through it misses on every
/// check (each then compiled again on the blocking pool, and a tenth of the cache sorted out
/// every so often).
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
        Ok(prepared)
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

    /// [`PreparedCache::get`] with the compilation on the blocking pool: compiling is CPU
    /// work (bounded by the engine's limits) that would hold an async thread meanwhile.
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
}
