//! When a monitor is next due. Monitors with the same recurrence are spread over it by a stable
//! per-monitor offset (a hash of the id), so 10,000 monitors of one interval never fire at once,
//! and every process that computes a slot computes the same one.

use crate::store::Millis;
use sha2::{Digest, Sha256};

/// The monitor's offset within its period, in milliseconds.
fn offset(task: &str, period: Millis) -> Millis {
    let digest = Sha256::digest(task.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    (u64::from_be_bytes(first) % period.unsigned_abs()) as Millis
}

/// The first slot of `task` strictly after `now`: slots lie at `offset + k * recurrence`.
pub fn next_slot(task: &str, recurrence_seconds: i32, now: Millis) -> Millis {
    let period = Millis::from(recurrence_seconds.max(1)) * 1000;
    let offset = offset(task, period);
    let k = (now - offset).div_euclid(period) + 1;
    offset + k * period
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_stable_ahead_and_spread() {
        let now = 1_800_000_000_000;
        for id in ["a", "b", "0192b5d4-0000-7000-8000-000000000000"] {
            let next = next_slot(id, 60, now);
            assert!(next > now && next <= now + 60_000, "{id}: {next}");
            assert_eq!(next_slot(id, 60, now), next, "stable");
            assert_eq!(next_slot(id, 60, next), next + 60_000, "one period on");
            assert_eq!(next_slot(id, 60, next - 1), next);
        }
        // 10,000 monitors of one minute land on many different seconds of it.
        let seconds: std::collections::HashSet<Millis> = (0..10_000)
            .map(|i| (next_slot(&format!("monitor {i}"), 60, now) - now) / 1000)
            .collect();
        assert_eq!(seconds.len(), 60, "every second of the minute is used");
    }
}
