//! `noise`: false and missed alerts on a corpus of noisy pages, wachet beside
//! changedetection.io.
//!
//! The bench serves a corpus (the first, [`pages`], or the second, [`pages2`], written apart from
//! the first and from wachet's alert rules; each generated from a seed and each monitor's
//! request count by [`corpus`]), runs the release `wachet serve` ([`wachet`]) and changedetection.io
//! 0.60.10 ([`cdio`]) against it at once, each with two monitors a page (wachet: the whole page
//! and the page's natural xPath; changedetection.io: its defaults and an expert's settings),
//! lets every monitor make `--checks` requests, then scores each alert against the pages'
//! declared real changes ([`score`]) and prints one table a mode, the two tools side by side.

pub mod cdio;
pub mod corpus;
pub mod pages;
pub mod pages2;
pub mod score;
pub mod wachet;

use crate::api::{busy_builds, load_average, wachet_exe};
use crate::harness::TempDir;
use corpus::{Log, Page};
use score::Score;
use serde_json::json;
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The two monitors of a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// wachet without xPath; changedetection.io at its defaults.
    Whole,
    /// wachet with the page's natural xPath (or regex); changedetection.io with an expert's
    /// per-page settings.
    Natural,
}

/// Both modes, in table order.
pub const MODES: [Mode; 2] = [Mode::Whole, Mode::Natural];

impl Mode {
    /// The path segment of a tool's monitor (`w-whole`, `c-natural`), so each monitor has its
    /// own request counter.
    pub fn key(self, tool: &str) -> String {
        match self {
            Mode::Whole => format!("{tool}-whole"),
            Mode::Natural => format!("{tool}-natural"),
        }
    }

    /// In words.
    pub fn label(self) -> &'static str {
        match self {
            Mode::Whole => "whole page",
            Mode::Natural => "natural selection",
        }
    }
}

/// Which corpus a run serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Corpus {
    /// The first corpus ([`pages::PAGES`]).
    First,
    /// The second corpus ([`pages2::PAGES2`]).
    Second,
    /// The first, then the second, each with its own tables.
    Both,
}

impl Corpus {
    /// The corpora a run serves, in order, with their names.
    fn runs(self) -> Vec<(&'static str, &'static [Page])> {
        let first: (&'static str, &'static [Page]) = ("first", &pages::PAGES);
        let second: (&'static str, &'static [Page]) = ("second", &pages2::PAGES2);
        match self {
            Corpus::First => vec![first],
            Corpus::Second => vec![second],
            Corpus::Both => vec![first, second],
        }
    }
}

/// Options of `noise`.
#[derive(Debug, Clone)]
pub struct NoiseOptions {
    /// Requests (checks) per monitor scored.
    pub checks: u32,
    /// Seed of the corpus.
    pub seed: u64,
    /// The corpus (or corpora) served.
    pub corpus: Corpus,
    /// Checks after a real change within which an alert is true.
    pub window: u32,
    /// changedetection.io's recheck interval, seconds.
    pub cdio_recheck: u32,
    /// Run changedetection.io beside wachet.
    pub cdio: bool,
    /// Run wachet.
    pub wachet: bool,
    /// The `wachet` binary (default: beside this one).
    pub wachet_exe: Option<PathBuf>,
    /// Longest run, all tools together.
    pub timeout: Duration,
    /// Where to keep wachet's database and a list of its scored alerts (`alerts.tsv`: page,
    /// mode, monitor, request, error) for a look at what raised them.
    pub keep: Option<PathBuf>,
}

impl Default for NoiseOptions {
    fn default() -> Self {
        NoiseOptions {
            checks: 80,
            seed: 19,
            corpus: Corpus::First,
            window: 3,
            cdio_recheck: 2,
            cdio: true,
            wachet: true,
            wachet_exe: None,
            timeout: Duration::from_secs(25 * 60),
            keep: None,
        }
    }
}

impl NoiseOptions {
    /// Parses `--checks N --seed S --corpus first|second|both --window W --cdio-recheck S --no-cdio 1 --no-wachet 1
    /// --wachet PATH --timeout-minutes M --keep DIR`.
    pub fn parse(args: &[String]) -> Option<NoiseOptions> {
        let mut o = NoiseOptions::default();
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            let value = it.next()?;
            match flag.as_str() {
                "--checks" => o.checks = value.parse().ok()?,
                "--seed" => o.seed = value.parse().ok()?,
                "--corpus" => {
                    o.corpus = match value.as_str() {
                        "first" => Corpus::First,
                        "second" => Corpus::Second,
                        "both" => Corpus::Both,
                        _ => return None,
                    }
                }
                "--window" => o.window = value.parse().ok()?,
                "--cdio-recheck" => o.cdio_recheck = value.parse().ok()?,
                "--no-cdio" => o.cdio = !matches!(value.as_str(), "1" | "true"),
                "--no-wachet" => o.wachet = !matches!(value.as_str(), "1" | "true"),
                "--wachet" => o.wachet_exe = Some(PathBuf::from(value)),
                "--keep" => o.keep = Some(PathBuf::from(value)),
                "--timeout-minutes" => {
                    o.timeout = Duration::from_secs(value.parse::<u64>().ok()? * 60)
                }
                _ => return None,
            }
        }
        (o.checks > 0 && o.cdio_recheck > 0 && (o.cdio || o.wachet)).then_some(o)
    }
}

/// One tool's scores, by (page, mode), with the requests each monitor made.
type Scores = HashMap<(&'static str, Mode), (Score, u32)>;

/// The fewest requests any of a tool's monitors made so far.
fn fewest(log: &Log, pages: &[Page], tool: &str) -> u32 {
    pages
        .iter()
        .flat_map(|p| MODES.map(|m| log.count(p.name, &m.key(tool))))
        .min()
        .unwrap_or(0)
}

/// The checks scored for a monitor that made `made` requests: `checks`, or fewer when the run
/// ended before it made them (its last request's alert may still have been on its way).
fn scored_checks(checks: u32, made: u32) -> u32 {
    if made > checks {
        checks
    } else {
        made.saturating_sub(1)
    }
}

/// Copies wachet's database to `dir` and writes the scored alerts beside it.
fn keep(dir: &std::path::Path, work: &std::path::Path, alerts: &str) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for name in ["wachet.db", "wachet.db-wal", "wachet.db-shm", "wachet.log"] {
        let from = work.join(name);
        if from.exists() {
            std::fs::copy(&from, dir.join(name))?;
        }
    }
    std::fs::write(dir.join("alerts.tsv"), alerts)
}

/// `noise`: run both tools against the chosen corpus (or each corpus in turn), print the tables
/// and one JSON line a corpus.
pub fn run(options: &NoiseOptions) -> Result<(), String> {
    for (name, pages) in options.corpus.runs() {
        run_corpus(name, pages, options)?;
    }
    Ok(())
}

/// One run of both tools against `pages`.
fn run_corpus(
    corpus_name: &str,
    pages: &'static [Page],
    options: &NoiseOptions,
) -> Result<(), String> {
    let work = TempDir::new("wachet-bench-noise").map_err(|e| e.to_string())?;
    let wachet_exe = match options.wachet {
        true => Some(wachet_exe(options.wachet_exe.as_deref())?),
        false => None,
    };
    // Installing is slow only the first time; a failure leaves the wachet half running.
    let cdio_exe = match options.cdio {
        true => match cdio::install(work.path()) {
            Ok(exe) => Some(exe),
            Err(err) => {
                eprintln!("changedetection.io is left out: {err}");
                None
            }
        },
        false => None,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let (corpus, log) = corpus::serve(options.seed, pages).await?;
        let (hook, received) = wachet::receiver().await?;
        eprintln!("corpus of {} pages on http://{corpus}/, webhook receiver on {hook}", pages.len());
        let began = Instant::now();
        let mut service = match &wachet_exe {
            Some(exe) => {
                let db = work.path().join("wachet.db");
                let w = wachet::start(exe, &db, &work.path().join("wachet.log"), pages, corpus, hook).await?;
                eprintln!("wachet serve (pid {}) watches {} monitors every 1 s", w.service.pid(), w.ids.len());
                Some(w)
            }
            None => None,
        };
        let mut cdio_run = match &cdio_exe {
            Some(exe) => {
                let data = work.path().join("cdio-data");
                let (exe, log_path) = (exe.clone(), work.path().join("cdio.log"));
                let started = tokio::task::spawn_blocking(move || cdio::Cdio::start(&exe, &data, &log_path))
                    .await
                    .map_err(|e| e.to_string())?;
                match started {
                    Ok(mut c) => match c.watch(pages, corpus, options.cdio_recheck).await {
                        Ok(()) => {
                            eprintln!("changedetection.io watches {} pages every {} s", c.ids.len(), options.cdio_recheck);
                            Some(c)
                        }
                        Err(err) => {
                            eprintln!("changedetection.io is left out: {err}: {}", c.log_tail());
                            None
                        }
                    },
                    Err(err) => {
                        eprintln!("changedetection.io is left out: {err}");
                        None
                    }
                }
            }
            None => None,
        };

        let mut wachet_scores: Option<Scores> = None;
        let mut cdio_scores: Option<Scores> = None;
        let deadline = began + options.timeout;
        let mut last_report = Instant::now();
        loop {
            tokio::time::sleep(Duration::from_secs(1)).await;
            let out_of_time = Instant::now() > deadline;
            if service.is_some() && (fewest(&log, pages, "w") > options.checks || out_of_time) {
                // Deliveries leave through the outbox at once; a few seconds let the last ones in.
                tokio::time::sleep(Duration::from_secs(5)).await;
                let w = service.take().ok_or("no service")?;
                let mut scores = Scores::new();
                let mut kept = String::new();
                for page in pages {
                    for mode in MODES {
                        let hits = log.hits(page.name, &mode.key("w"));
                        let made = hits.len() as u32;
                        let id = &w.ids[&(page.name, mode)];
                        let alerts = received.of(id);
                        for a in &alerts {
                            let n = hits.iter().rev().find(|h| h.at_ms <= a.at_ms).map_or(0, |h| h.n);
                            kept.push_str(&format!("{}\t{}\t{id}\t{n}\t{}\n", page.name, mode.label(), a.error));
                        }
                        let s = score::score(page.changes, &hits, &alerts, scored_checks(options.checks, made), options.window);
                        scores.insert((page.name, mode), (s, made));
                    }
                }
                eprintln!("wachet done after {:.0} s", began.elapsed().as_secs_f64());
                let _ = tokio::task::spawn_blocking(move || drop(w)).await;
                if let Some(dir) = &options.keep {
                    keep(dir, work.path(), &kept).map_err(|e| format!("--keep {}: {e}", dir.display()))?;
                }
                wachet_scores = Some(scores);
            }
            if cdio_run.is_some() && (fewest(&log, pages, "c") > options.checks || out_of_time) {
                // Its last check may still be saving its snapshot.
                tokio::time::sleep(Duration::from_secs(3)).await;
                let c = cdio_run.take().ok_or("no changedetection.io")?;
                let mut scores = Scores::new();
                for page in pages {
                    for mode in MODES {
                        let hits = log.hits(page.name, &mode.key("c"));
                        let made = hits.len() as u32;
                        let alerts = match c.alerts(&c.ids[&(page.name, mode)], &hits).await {
                            Ok(a) => a,
                            Err(err) => {
                                eprintln!("{} ({}): {err}", page.name, mode.label());
                                Vec::new()
                            }
                        };
                        let s = score::score(page.changes, &hits, &alerts, scored_checks(options.checks, made), options.window);
                        scores.insert((page.name, mode), (s, made));
                    }
                }
                eprintln!("changedetection.io done after {:.0} s", began.elapsed().as_secs_f64());
                let _ = tokio::task::spawn_blocking(move || drop(c)).await;
                cdio_scores = Some(scores);
            }
            if service.is_none() && cdio_run.is_none() {
                break;
            }
            if last_report.elapsed() > Duration::from_secs(30) {
                last_report = Instant::now();
                eprintln!(
                    "{:.0} s: fewest requests of a monitor: wachet {}, changedetection.io {} (of {})",
                    began.elapsed().as_secs_f64(),
                    fewest(&log, pages, "w"),
                    fewest(&log, pages, "c"),
                    options.checks
                );
            }
        }
        print_tables(corpus_name, pages, options, wachet_scores.as_ref(), cdio_scores.as_ref());
        let builds = busy_builds();
        println!(
            "run took {:.0} s; load {}{}",
            began.elapsed().as_secs_f64(),
            load_average(),
            if builds.is_empty() { String::new() } else { format!("; builds beside it: {}", builds.len()) }
        );
        Ok(())
    })
}

fn cell(scores: Option<&Scores>, page: &str, mode: Mode, checks: u32) -> String {
    match scores.and_then(|s| s.get(&(page, mode))) {
        None => format!("{:>5} {:>6} {:>4}", "-", "-", "-"),
        Some((s, made)) => {
            let short = if *made <= checks { "*" } else { "" };
            format!(
                "{:>5} {:>6} {:>4}{short}",
                s.false_alerts(),
                s.missed,
                s.true_alerts
            )
        }
    }
}

fn total(scores: Option<&Scores>, mode: Mode) -> Option<Score> {
    scores.map(|s| {
        let mut t = Score::default();
        for ((_, m), (score, _)) in s {
            if *m == mode {
                t.add(score);
            }
        }
        t
    })
}

fn print_tables(
    corpus_name: &str,
    pages: &[Page],
    options: &NoiseOptions,
    wachet: Option<&Scores>,
    cdio: Option<&Scores>,
) {
    println!(
        "noise{}: {} pages, {} checks a monitor, seed {}, an alert is true within {} checks of a real change",
        match corpus_name {
            "first" => String::new(),
            name => format!(" ({name} corpus)"),
        },
        pages.len(),
        options.checks,
        options.seed,
        options.window
    );
    let mut summary = Vec::new();
    for (mode, wachet_label, cdio_label) in [
        (
            Mode::Whole,
            "wachet, whole page",
            "changedetection.io 0.60.10, defaults",
        ),
        (
            Mode::Natural,
            "wachet, natural xPath",
            "changedetection.io 0.60.10, expert settings",
        ),
    ] {
        println!();
        println!(
            "| {:<16} | {:>7} | {:<44} | {:<44} |",
            "", "", wachet_label, cdio_label
        );
        println!(
            "| {:<16} | {:>7} | {:<44} | {:<44} |",
            "page", "changes", "false missed true", "false missed true"
        );
        println!(
            "|{}|{}|{}|{}|",
            "-".repeat(18),
            "-".repeat(9),
            "-".repeat(46),
            "-".repeat(46)
        );
        for page in pages {
            let changes = page
                .changes
                .iter()
                .filter(|c| c.at + options.window <= options.checks)
                .count();
            println!(
                "| {:<16} | {:>7} | {:<44} | {:<44} |",
                page.name,
                changes,
                cell(wachet, page.name, mode, options.checks),
                cell(cdio, page.name, mode, options.checks)
            );
        }
        let fmt = |t: Option<Score>| match t {
            Some(t) => format!(
                "{:>5} {:>6} {:>4} ",
                t.false_alerts(),
                t.missed,
                t.true_alerts
            ),
            None => format!("{:>5} {:>6} {:>4} ", "-", "-", "-"),
        };
        let (tw, tc) = (total(wachet, mode), total(cdio, mode));
        let changes: usize = pages
            .iter()
            .map(|p| {
                p.changes
                    .iter()
                    .filter(|c| c.at + options.window <= options.checks)
                    .count()
            })
            .sum();
        println!(
            "| {:<16} | {:>7} | {:<44} | {:<44} |",
            "total",
            changes,
            fmt(tw.clone()),
            fmt(tc.clone())
        );
        if let Some(t) = &tw {
            println!(
                "  wachet's false alerts: {} on changes (NotEq), {} Error alerts and recoveries",
                t.false_changes, t.false_errors
            );
        }
        summary.push(json!({
            "mode": mode.label(),
            "wachet": tw.map(|t| json!({"false": t.false_alerts(), "falseNotEq": t.false_changes, "falseError": t.false_errors, "missed": t.missed, "true": t.true_alerts, "late": t.late})),
            "cdio": tc.map(|t| json!({"false": t.false_alerts(), "missed": t.missed, "true": t.true_alerts, "late": t.late})),
        }));
    }
    println!();
    println!(
        "* the monitor made fewer requests than --checks before the run ended: scored over those it made"
    );
    println!(
        "{}",
        json!({"bench": "noise", "corpus": corpus_name, "checks": options.checks, "seed": options.seed, "window": options.window, "modes": summary})
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Option<NoiseOptions> {
        NoiseOptions::parse(&args.iter().map(|a| a.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn the_corpus_is_the_first_unless_asked_and_an_unknown_one_is_refused() {
        let names = |o: Option<NoiseOptions>| {
            o.map(|o| {
                o.corpus
                    .runs()
                    .iter()
                    .map(|(name, pages)| (*name, pages.len()))
                    .collect::<Vec<_>>()
            })
        };
        assert_eq!(names(parse(&[])), Some(vec![("first", 17)]));
        assert_eq!(
            names(parse(&["--corpus", "second", "--seed", "3"])),
            Some(vec![("second", 15)])
        );
        assert_eq!(
            names(parse(&["--corpus", "both"])),
            Some(vec![("first", 17), ("second", 15)])
        );
        assert!(parse(&["--corpus", "third"]).is_none());
    }
}
