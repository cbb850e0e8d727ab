//! The service's metrics in the Prometheus text format (`GET /metrics`): checks by outcome,
//! check duration and lateness (actual minus planned start) histograms, how long claims take and
//! how long a finished check waits for its group's commit, browser checks in flight, the
//! transactions that stored checks and how many they stored, and deliveries by state with the
//! outbox depth. Counts only: no label or value ever carries a monitor's
//! content, a URL or a secret.

use std::fmt::Write;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

/// Upper bounds of the histogram buckets, in seconds.
const BUCKETS: [f64; 14] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// A histogram of durations.
pub struct Histogram {
    counts: [AtomicU64; BUCKETS.len()],
    sum_micros: AtomicU64,
    count: AtomicU64,
}

impl Histogram {
    const fn new() -> Self {
        Histogram {
            counts: [const { AtomicU64::new(0) }; BUCKETS.len()],
            sum_micros: AtomicU64::new(0),
            count: AtomicU64::new(0),
        }
    }

    /// Records one observation.
    pub fn observe(&self, value: Duration) {
        let seconds = value.as_secs_f64();
        for (bound, count) in BUCKETS.iter().zip(&self.counts) {
            if seconds <= *bound {
                count.fetch_add(1, Ordering::Relaxed);
            }
        }
        let micros = u64::try_from(value.as_micros()).unwrap_or(u64::MAX);
        self.sum_micros.fetch_add(micros, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    fn render(&self, out: &mut String, name: &str, help: &str) {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
        for (bound, count) in BUCKETS.iter().zip(&self.counts) {
            let _ = writeln!(
                out,
                "{name}_bucket{{le=\"{bound}\"}} {}",
                count.load(Ordering::Relaxed)
            );
        }
        let count = self.count.load(Ordering::Relaxed);
        let sum = self.sum_micros.load(Ordering::Relaxed) as f64 / 1e6;
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {count}");
        let _ = writeln!(out, "{name}_sum {sum}\n{name}_count {count}");
    }
}

/// The process's metrics.
pub struct Metrics {
    /// Checks that found a value.
    pub checks_ok: AtomicU64,
    /// Checks that failed.
    pub checks_failed: AtomicU64,
    /// How long checks took.
    pub check_duration: Histogram,
    /// How late checks started.
    pub check_lateness: Histogram,
    /// How long claims of due monitors took (the store's statement).
    pub claim_duration: Histogram,
    /// How long a finished check waited for its group to be committed.
    pub store_wait: Histogram,
    /// How long a claim held the store's writer (SQLite), from its lock to its commit.
    pub claim_held: Histogram,
    /// How long a group of checks held the store's writer (SQLite).
    pub group_held: Histogram,
    /// Checks rendering in Chromium now.
    pub browser_in_flight: AtomicI64,
    /// Transactions that stored checks ([`crate::schedule::group`]).
    pub check_groups: AtomicU64,
    /// Checks those transactions stored (or found fenced, edited or deleted).
    pub checks_grouped: AtomicU64,
}

/// The metrics of this process (one registry, as Prometheus clients keep).
pub static METRICS: Metrics = Metrics {
    checks_ok: AtomicU64::new(0),
    checks_failed: AtomicU64::new(0),
    check_duration: Histogram::new(),
    check_lateness: Histogram::new(),
    claim_duration: Histogram::new(),
    store_wait: Histogram::new(),
    claim_held: Histogram::new(),
    group_held: Histogram::new(),
    browser_in_flight: AtomicI64::new(0),
    check_groups: AtomicU64::new(0),
    checks_grouped: AtomicU64::new(0),
};

impl Metrics {
    /// The text exposition, with the deliveries by state read from the store. The database's
    /// failing writes are the store's to say and follow it (`ops::notifications::metrics`):
    /// this module imports nothing of the service, which records into it from everywhere.
    pub fn render(&self, deliveries: &[(String, u64)]) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# HELP wachet_checks_total Checks run, by outcome.\n# TYPE wachet_checks_total counter\n\
             wachet_checks_total{{outcome=\"ok\"}} {}\nwachet_checks_total{{outcome=\"failed\"}} {}",
            self.checks_ok.load(Ordering::Relaxed),
            self.checks_failed.load(Ordering::Relaxed),
        );
        self.check_duration.render(
            &mut out,
            "wachet_check_duration_seconds",
            "How long checks took.",
        );
        self.check_lateness.render(
            &mut out,
            "wachet_check_lateness_seconds",
            "How much later than planned checks started.",
        );
        self.claim_duration.render(
            &mut out,
            "wachet_claim_duration_seconds",
            "How long claims of due monitors took.",
        );
        self.store_wait.render(
            &mut out,
            "wachet_check_store_wait_seconds",
            "How long a finished check waited for its group of checks to be committed.",
        );
        self.claim_held.render(
            &mut out,
            "wachet_claim_writer_held_seconds",
            "How long a claim held the database's writer, from its lock to its commit.",
        );
        self.group_held.render(
            &mut out,
            "wachet_group_writer_held_seconds",
            "How long a group of checks held the database's writer, from its lock to its commit.",
        );
        let _ = writeln!(
            out,
            "# HELP wachet_browser_checks_in_flight Checks rendering in Chromium now.\n\
             # TYPE wachet_browser_checks_in_flight gauge\nwachet_browser_checks_in_flight {}",
            self.browser_in_flight.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            out,
            "# HELP wachet_check_groups_total Transactions that stored checks, each a group of \
             the checks that ended together.\n# TYPE wachet_check_groups_total counter\n\
             wachet_check_groups_total {}\n\
             # HELP wachet_checks_grouped_total Checks written by those transactions.\n\
             # TYPE wachet_checks_grouped_total counter\nwachet_checks_grouped_total {}",
            self.check_groups.load(Ordering::Relaxed),
            self.checks_grouped.load(Ordering::Relaxed),
        );
        let _ = writeln!(
            out,
            "# HELP wachet_deliveries Notification deliveries, by state (pending is the outbox \
             depth).\n# TYPE wachet_deliveries gauge"
        );
        for state in ["pending", "delivered", "failed"] {
            let n = deliveries
                .iter()
                .find(|(s, _)| s == state)
                .map_or(0, |(_, n)| *n);
            let _ = writeln!(out, "wachet_deliveries{{state=\"{state}\"}} {n}");
        }
        out
    }
}
