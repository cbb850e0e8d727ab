//! The memory of a browser's process tree, read from `/proc` (Linux): for tests and benchmarks
//! that bound or report what rendering costs. [`PeakPss`] samples the tree of an engine's
//! Chromium in a thread of its own while the caller checks pages, and keeps the peak.

use crate::render::Renderer;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// `pid` and every process below it (from each task's `children`); empty of nothing but `pid`
/// when `/proc` cannot be read.
pub fn process_tree(pid: u32) -> Vec<u32> {
    let mut found = vec![pid];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        i += 1;
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{parent}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let children =
                std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            found.extend(
                children
                    .split_whitespace()
                    .filter_map(|c| c.parse::<u32>().ok()),
            );
        }
    }
    found
}

/// The proportional set size of `pid` in bytes (`Pss:` of `smaps_rollup`); 0 when it has
/// ended or cannot be read. Shared pages count once across a tree, so a tree's sum is what
/// it costs the machine.
pub fn pss_bytes(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Pss:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kib| kib * 1024)
}

/// Samples the PSS summed over a renderer's Chromium tree every 50 ms, from [`PeakPss::watch`]
/// until [`PeakPss::finish`] (or drop), and keeps the peak. Reading `smaps_rollup` costs the
/// browser a little: watch what is measured, not a whole benchmark.
pub struct PeakPss {
    peak: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl PeakPss {
    /// Starts sampling the tree of `renderer`'s browser (whichever runs at each sample).
    pub fn watch(renderer: &Renderer) -> PeakPss {
        let renderer = renderer.clone();
        let peak = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (p, s) = (peak.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Acquire) {
                if let Some(pid) = renderer.browser_pid() {
                    let total: u64 = process_tree(pid).into_iter().map(pss_bytes).sum();
                    p.fetch_max(total, Ordering::AcqRel);
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        PeakPss {
            peak,
            stop,
            thread: Some(thread),
        }
    }

    /// Stops sampling; the peak in bytes.
    pub fn finish(mut self) -> u64 {
        self.stop_thread();
        self.peak.load(Ordering::Acquire)
    }

    fn stop_thread(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for PeakPss {
    fn drop(&mut self) {
        self.stop_thread();
    }
}
