//! Memory readings from /proc, shared by the rendered-crawl benchmarks (std only, so the root
//! crate's `benches/render.rs` can include this file by path).

/// Proportional set size of process `pid` in KiB, from `/proc/PID/smaps_rollup`.
pub fn pss_kib(pid: u32) -> Option<u64> {
    let rollup = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok()?;
    rollup
        .lines()
        .find(|l| l.starts_with("Pss:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
}
