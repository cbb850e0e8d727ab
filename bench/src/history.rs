//! `wachet-bench history`: what delta history costs, beside what the same
//! history cost before it, in one run. A ~100 KB page and 1,000 one-word changes of it are
//! written through the SQLite store's own write path (`append_in`, which a check takes) into a
//! temporary database; then each entry is read alone through the store's history read, as a
//! page of one, and each page of 50 entries, all checked against what was written. The peer is
//! the previous codec: every value of the same history rewritten whole (zstd, as each was
//! stored before deltas) in the same database, and read again the same way. Printed: bytes a
//! change, read times (median and max, best of `--reads` each), a check's write time, and the
//! ratios.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use sqlx::sqlite::{SqliteConnectOptions, SqlitePool};
use wachet::model::{ClientData, Monitor};
use wachet_server::store::sqlite::{SqliteStore, StoreSettings};
use wachet_server::store::testing::Seed;
use wachet_server::store::{
    HistoryStore, Series, TaskStore, TimePage, UserRecord, UserStore, codec, new_id, now_millis,
};

/// Options of `wachet-bench history`.
#[derive(Debug, Clone)]
pub struct HistoryOptions {
    /// One-word changes written after the first value.
    pub changes: usize,
    /// Reads of each entry; the best one counts (the machine is shared, a read's best is what
    /// the code costs).
    pub reads: usize,
}

impl HistoryOptions {
    /// `--changes N --reads R`; `None` on anything else.
    pub fn parse(args: &[String]) -> Option<HistoryOptions> {
        let mut options = HistoryOptions {
            changes: 1_000,
            reads: 3,
        };
        let mut args = args.iter();
        while let Some(flag) = args.next() {
            let value: usize = args.next()?.parse().ok()?;
            match flag.as_str() {
                "--changes" if value > 0 => options.changes = value,
                "--reads" if value > 0 => options.reads = value,
                _ => return None,
            }
        }
        Some(options)
    }
}

/// The first value and `changes` one-word changes of it: a page of 15,500 made-up words
/// (about 100 KB), one word replaced by another at a random place each version.
pub fn versions(changes: usize) -> Vec<String> {
    let mut x: u64 = 21;
    let mut next = move || {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        x >> 33
    };
    let word = |n: u64| -> String {
        let mut y = (n % 4_000).wrapping_mul(2_654_435_761) ^ 0x5bd1_e995;
        (0..3 + (n % 6) as usize)
            .map(|_| {
                y = y.wrapping_mul(48_271) % 2_147_483_647;
                char::from(b'a' + (y % 26) as u8)
            })
            .collect()
    };
    let mut words: Vec<String> = (0..15_500).map(|i| word(i * 7_919 + 13)).collect();
    (0..=changes)
        .map(|i| {
            let at = (next() as usize) % words.len();
            words[at] = format!("{}{}", word(next()), i % 100);
            words.join(" ")
        })
        .collect()
}

/// Median and max of `times`.
fn spread(mut times: Vec<Duration>) -> (Duration, Duration) {
    times.sort();
    let median = times.get(times.len() / 2).copied().unwrap_or_default();
    let max = times.last().copied().unwrap_or_default();
    (median, max)
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Runs the bench and prints its table.
pub fn run(options: &HistoryOptions) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(measure(options))
}

async fn measure(options: &HistoryOptions) -> Result<(), String> {
    let dir = std::env::temp_dir().join(format!("wachet-bench-history-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let result = measure_in(&dir, options).await;
    let _ = std::fs::remove_dir_all(&dir);
    result
}

async fn measure_in(dir: &std::path::Path, options: &HistoryOptions) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let path = dir.join("history.db");
    let settings = StoreSettings {
        history_retention: u32::try_from(options.changes + 1).unwrap_or(u32::MAX),
        ..Default::default()
    };
    let store = SqliteStore::open_with(&path, &settings)
        .await
        .map_err(|e| err(&e))?;
    let user = UserRecord {
        id: new_id(),
        email: "bench@example.com".into(),
        password_hash: "-".into(),
        api_key_hash: "-".into(),
        webhook_secret: "-".into(),
        notification_endpoints: Vec::new(),
        created_at: now_millis(),
        time_zone: "UTC".into(),
    };
    store.create_user(&user).await.map_err(|e| err(&e))?;
    let monitor = Monitor {
        name: Some("large".into()),
        url: Some("https://example.com/".into()),
        recurrence_in_seconds: Some(3_600),
        ..Default::default()
    };
    let task = store
        .create_task(&user.id, &monitor)
        .await
        .map_err(|e| err(&e))?
        .id
        .ok_or("a created monitor without an id")?;
    // The bench's own connection, for the sizes of what is stored and for the rewrite.
    let db = SqlitePool::connect_with(SqliteConnectOptions::new().filename(&path))
        .await
        .map_err(|e| err(&e))?;
    let stored_bytes = || async {
        sqlx::query_as::<_, (i64,)>("SELECT coalesce(sum(length(body)), 0) FROM contents")
            .fetch_one(&db)
            .await
            .map(|(bytes,)| bytes)
            .map_err(|e| e.to_string())
    };

    let versions = versions(options.changes);
    let start = chrono::Utc::now() - chrono::Duration::days(1);
    let mut times = Vec::with_capacity(versions.len());
    let mut writes = Vec::with_capacity(versions.len());
    let mut first = 0;
    for (i, value) in versions.iter().enumerate() {
        let at = start + chrono::Duration::seconds(i64::try_from(i).unwrap_or(i64::MAX));
        times.push(at.timestamp_millis());
        let began = Instant::now();
        store
            .append_entry(
                &Series::Task(task.clone()),
                &ClientData::value(at, value.clone()),
            )
            .await
            .map_err(|e| err(&e))?;
        if i > 0 {
            writes.push(began.elapsed());
        }
        if i == 0 {
            first = stored_bytes().await?;
        }
    }
    let changes = i64::try_from(options.changes).unwrap_or(i64::MAX);
    let delta_bytes = (stored_bytes().await? - first) / changes;
    let (deltas,): (i64,) = sqlx::query_as("SELECT count(*) FROM contents WHERE codec = ?")
        .bind(codec::DELTA)
        .fetch_one(&db)
        .await
        .map_err(|e| err(&e))?;
    let delta_reads = read_each(&store, &user.id, &task, &times, &versions, options.reads).await?;

    // The peer: the same values as the previous codec stored them, each whole.
    let by_hash: HashMap<Vec<u8>, &str> = versions
        .iter()
        .map(|v| (Sha256::digest(v.as_bytes()).to_vec(), v.as_str()))
        .collect();
    let hashes: Vec<(Vec<u8>,)> = sqlx::query_as("SELECT hash FROM contents")
        .fetch_all(&db)
        .await
        .map_err(|e| err(&e))?;
    let mut tx = db.begin().await.map_err(|e| err(&e))?;
    for (hash,) in &hashes {
        let text = by_hash
            .get(hash)
            .ok_or("a stored value that was never written")?;
        let (codec, body) = codec::encode(text);
        sqlx::query("UPDATE contents SET codec = ?, body = ?, base_hash = NULL WHERE hash = ?")
            .bind(codec)
            .bind(body.as_ref())
            .bind(hash)
            .execute(&mut *tx)
            .await
            .map_err(|e| err(&e))?;
    }
    tx.commit().await.map_err(|e| err(&e))?;
    let whole_bytes = (stored_bytes().await? - first) / changes;
    let whole_reads = read_each(&store, &user.id, &task, &times, &versions, options.reads).await?;
    db.close().await;
    store.close().await;

    let (write_median, write_max) = spread(writes);
    let (delta_median, delta_max) = spread(delta_reads.entry);
    let (whole_median, whole_max) = spread(whole_reads.entry);
    let (delta_page, delta_page_max) = spread(delta_reads.page);
    let (whole_page, whole_page_max) = spread(whole_reads.page);
    println!(
        "history of one monitor: a {} byte page, {} one-word changes, stored whole first \
         ({first} bytes); {deltas} values stored as deltas",
        versions.first().map_or(0, String::len),
        options.changes
    );
    println!(
        "| codec | bytes a change | one entry read, median | max | page of {PAGE}, median | max |"
    );
    println!("|---|---|---|---|---|---|");
    let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { f64::NAN };
    for (name, bytes, (median, max), (page, page_max)) in [
        (
            "whole, zstd (previous codec, peer)",
            whole_bytes,
            (whole_median, whole_max),
            (whole_page, whole_page_max),
        ),
        (
            "delta (now)",
            delta_bytes,
            (delta_median, delta_max),
            (delta_page, delta_page_max),
        ),
    ] {
        println!(
            "| {name} | {bytes} | {:.0} µs | {:.0} µs | {:.0} µs | {:.0} µs |",
            micros(median),
            micros(max),
            micros(page),
            micros(page_max)
        );
    }
    println!(
        "delta / whole: {:.3}x bytes a change, {:.2}x median entry read, {:.2}x max entry \
         read, {:.2}x median page read",
        ratio(delta_bytes as f64, whole_bytes as f64),
        ratio(micros(delta_median), micros(whole_median)),
        ratio(micros(delta_max), micros(whole_max)),
        ratio(micros(delta_page), micros(whole_page)),
    );
    println!(
        "writing a changed check (delta codec): median {:.0} µs, max {:.0} µs",
        micros(write_median),
        micros(write_max)
    );
    println!(
        "{{\"bytes_a_change\":{delta_bytes},\"whole_bytes_a_change\":{whole_bytes},\
         \"read_median_us\":{:.0},\"read_max_us\":{:.0},\"whole_read_median_us\":{:.0},\
         \"whole_read_max_us\":{:.0},\"page_median_us\":{:.0},\"whole_page_median_us\":{:.0},\
         \"write_median_us\":{:.0}}}",
        micros(delta_median),
        micros(delta_max),
        micros(whole_median),
        micros(whole_max),
        micros(delta_page),
        micros(whole_page),
        micros(write_median)
    );
    Ok(())
}

/// Read times through the store's history read, best of `reads` each: of every entry alone (a
/// page of one ending at its check time), and of the page of [`PAGE`] entries ending at every
/// [`PAGE`]th. An entry that does not read back as written ends the bench.
async fn read_each(
    store: &SqliteStore,
    user: &str,
    task: &str,
    times: &[i64],
    versions: &[String],
    reads: usize,
) -> Result<Reads, String> {
    let mut each = Reads::default();
    for (i, (at, value)) in times.iter().zip(versions).enumerate() {
        let page = |limit| TimePage {
            from: None,
            to: Some(*at),
            after: None,
            limit,
        };
        let mut best = Duration::MAX;
        for _ in 0..reads {
            let began = Instant::now();
            let got = store
                .entries(user, task, &page(1))
                .await
                .map_err(|e| e.to_string())?;
            best = best.min(began.elapsed());
            if got.first().and_then(|(_, d)| d.raw.as_deref()) != Some(value.as_str()) {
                return Err(format!("the entry of {at} does not read back as written"));
            }
        }
        each.entry.push(best);
        if i % PAGE as usize == PAGE as usize - 1 {
            let mut best = Duration::MAX;
            for _ in 0..reads {
                let began = Instant::now();
                let got = store
                    .entries(user, task, &page(PAGE))
                    .await
                    .map_err(|e| e.to_string())?;
                best = best.min(began.elapsed());
                // A store answers one entry past the page, for the next page's token.
                let read = got.iter().take(PAGE as usize).rev();
                let read = read.map(|(_, d)| d.raw.as_deref());
                if !read.eq(versions[i + 1 - PAGE as usize..=i]
                    .iter()
                    .map(|v| Some(v.as_str())))
                {
                    return Err(format!(
                        "the page ending at {at} does not read back as written"
                    ));
                }
            }
            each.page.push(best);
        }
    }
    Ok(each)
}

/// Entries in a page of history, as the API lists them by default.
const PAGE: u32 = 50;

/// The best read time of each entry alone and of each page.
#[derive(Default)]
struct Reads {
    entry: Vec<Duration>,
    page: Vec<Duration>,
}
