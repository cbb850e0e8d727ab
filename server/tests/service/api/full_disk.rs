//! A SQLite database on a disk that fills up while checks run, then is freed: reads go on,
//! the probes and metrics say writes fail, and writing resumes by itself, the checks that
//! could not be stored run again. The disk is a small tmpfs the test mounts (as root: CI runs
//! as root; elsewhere the test is skipped, saying so, unless `CI` is set).

use crate::support::disk::{SmallDisk, fill};
use crate::{Api, Backend, Database, Setup, id, monitor};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use wachet::testing::{FixtureServer, Reply};

/// Keeps the disk of `dir` full to its last byte with a file until `stop` turns true, taking
/// again whatever SQLite frees (a rolled-back WAL's tail), then removes the file.
fn keep_full(dir: &Path, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    let path = dir.join("filler");
    let mut file = std::fs::File::create(&path).unwrap();
    fill(&mut file);
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            fill(&mut file);
            std::thread::sleep(Duration::from_millis(10));
        }
        drop(file);
        std::fs::remove_file(path).unwrap();
    })
}

/// Text a compressor cannot shrink: each check finds a new value that needs new pages.
fn noise(seed: usize, bytes: usize) -> String {
    let mut x = seed as u64 ^ 0x9e37_79b9_7f4a_7c15;
    (0..bytes / 16)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            format!("{x:016x}")
        })
        .collect()
}

/// Polls `probe` every 100 ms until it holds, for `bound` at most.
async fn until<F, Fut>(bound: Duration, what: &str, mut probe: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let start = Instant::now();
    while !probe().await {
        assert!(start.elapsed() < bound, "not within {bound:?}: {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_heals_by_itself_and_unstored_checks_run_again() {
    let Some(disk) = SmallDisk::mount(12 << 20) else {
        return;
    };
    let site = FixtureServer::builder()
        .counted("/busy", |n| {
            Reply::html(format!("<pre>{}</pre>", noise(n, 24 * 1024)))
        })
        // The slow page's check ends while the disk is full.
        .counted("/slow", |n| {
            Reply::html(format!("<p>slow {n}</p>")).delay(if n == 1 {
                Duration::from_secs(3)
            } else {
                Duration::ZERO
            })
        })
        .start()
        .await
        .unwrap();
    let mut setup = Setup::checking();
    setup.backend = Backend::Sqlite;
    setup.service.schedule.noise_samples = 0;
    setup.service.heartbeat = Duration::from_millis(300);
    // A check whose record failed is claimed again once its lease lapses.
    setup.service.schedule.lease = Duration::from_secs(3);
    let database = Database::Sqlite(tempfile::tempdir_in(disk.path()).unwrap());
    let api = Api::start_in(database, setup).await;
    let user = api.user("ann@example.com").await;
    for i in 0..4 {
        let mut busy = monitor(&format!("busy {i}"), &site.url(&format!("/busy?{i}")));
        busy["recurrenceInSeconds"] = 1.into();
        api.task(&user, busy).await;
    }
    let readyz = || async { api.raw(api.client().get(api.url("/readyz"))).await.status };
    until(Duration::from_secs(20), "checks stored", || async {
        readyz().await == 200 && site.hits("/busy") >= 8
    })
    .await;

    // An hourly monitor whose first check ends once the disk is full.
    let slow = id(&api.task(&user, monitor("slow", &site.url("/slow"))).await);
    let created = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let filler = keep_full(disk.path(), stop.clone());
    until(
        Duration::from_secs(30),
        "readiness says writes fail",
        || async { readyz().await == 503 },
    )
    .await;
    let ready = api.raw(api.client().get(api.url("/readyz"))).await;
    assert!(
        ready.body["reason"]
            .as_str()
            .unwrap()
            .contains("cannot be written"),
        "{}",
        ready.text
    );
    let metrics = api.raw(api.client().get(api.url("/metrics"))).await;
    let failures = metrics
        .text
        .lines()
        .find_map(|l| l.strip_prefix("wachet_database_write_failures_total "))
        .and_then(|n| n.parse::<u64>().ok());
    assert!(failures.is_some_and(|n| n > 0), "{}", metrics.text);
    // Reads go on; a write is refused as unavailable, not as the server's fault.
    api.get(&user, "/thirdparty/v1/task/search").await.ok();
    let refused = api
        .put(
            &user,
            "/thirdparty/v1/task",
            monitor("new", &site.url("/busy?9")),
        )
        .await;
    refused.problem(503);
    assert!(refused.headers.contains_key("retry-after"));
    // Full until well past the slow page's answer.
    until(
        Duration::from_secs(10),
        "the slow page answered",
        || async { site.hits("/slow") >= 1 && created.elapsed() > Duration::from_secs(5) },
    )
    .await;
    let slow_seen = api.get(&user, &format!("/thirdparty/v1/task/{slow}")).await;
    assert_eq!(
        slow_seen.body["data"]["lastCheckTimestamp"], "0001-01-01T00:00:00Z",
        "the slow check was not stored: {}",
        slow_seen.text
    );

    // Space comes back: writing resumes without a restart, and the hourly monitor's check
    // that could not be stored runs again at once, not an hour later.
    stop.store(true, Ordering::Relaxed);
    filler.join().unwrap();
    let freed = chrono::Utc::now();
    until(Duration::from_secs(30), "ready again", || async {
        readyz().await == 200
    })
    .await;
    until(
        Duration::from_secs(45),
        "a check stored after the disk was freed",
        || async {
            let task = api.get(&user, &format!("/thirdparty/v1/task/{slow}")).await;
            task.body["data"]["lastCheckTimestamp"]
                .as_str()
                .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
                .is_some_and(|t| t > freed)
        },
    )
    .await;
    api.put(
        &user,
        "/thirdparty/v1/task",
        monitor("new", &site.url("/busy?9")),
    )
    .await
    .ok();
    let metrics = api.raw(api.client().get(api.url("/metrics"))).await;
    assert!(metrics.text.contains("wachet_database_writes_failing 0"));
    drop(api);
}
