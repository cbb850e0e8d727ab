//! `steps`: what browser steps and a kept session cost. A fixture site behind a sign-in
//! ([`wachet::testing::SignInSite`]) served by this process; the engine in this process too, with
//! the service's renderer tabs for its default browser checks in flight. Three monitors of its
//! page `/`: rendered without steps; with a login (3 steps: user, password, the button) and 3
//! steps (an optional banner click, a region chosen, a wait for the price) whose session is
//! kept between checks ([`wachet::steps::MemorySessions`]); and the same without a kept
//! session, signing in on every check. Each is checked `--checks` times one after another
//! (time a check: median and p90; peak PSS of all Chromium processes, sampled every 100 ms;
//! sign-ins the site saw), then `--checks` times with `--slots` checks at once (the service's
//! browser checks in flight, each its own monitor with its own session): checks a minute and
//! the peak PSS again. A session lasts as long as the bench, so a kept one signs in once.

use crate::harness;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use wachet::model::{Login, Step, StepAction};
use wachet::testing::SignInSite;
use wachet::{Checker, PreparedMonitor};

/// The bench's settings.
#[derive(Debug, Clone)]
pub struct StepsOptions {
    /// Checks of each monitor, one after another, and again at once.
    pub checks: usize,
    /// Checks at once for the throughput (the service's browser checks in flight).
    pub slots: usize,
}

impl StepsOptions {
    /// `--checks N --slots S`.
    pub fn parse(args: &[String]) -> Option<StepsOptions> {
        let mut options = StepsOptions {
            checks: 20,
            slots: 4,
        };
        let mut args = args.iter();
        while let Some(flag) = args.next() {
            let value: usize = args.next()?.parse().ok()?;
            match flag.as_str() {
                "--checks" if value > 0 => options.checks = value,
                "--slots" if value > 0 => options.slots = value,
                _ => return None,
            }
        }
        Some(options)
    }
}

/// One kind of monitor measured.
struct Variant {
    name: &'static str,
    steps: bool,
    kept: bool,
}

const VARIANTS: [Variant; 3] = [
    Variant {
        name: "rendered, no steps",
        steps: false,
        kept: false,
    },
    Variant {
        name: "login + 3 steps, session kept",
        steps: true,
        kept: true,
    },
    Variant {
        name: "login + 3 steps, no session kept",
        steps: true,
        kept: false,
    },
];

fn monitor(site: &SignInSite, steps: bool) -> wachet::Monitor {
    let mut monitor = wachet::Monitor::new(site.url("/"));
    monitor.dynamic_content = true;
    if steps {
        monitor.x_path = Some("//*[@id='price']".into());
        monitor.login = Some(Login {
            steps: vec![
                Step::new(StepAction::Click).on("#signin"),
                Step::new(StepAction::Type).on("#user").with("tea"),
                {
                    let mut password = Step::new(StepAction::Type)
                        .on("#password")
                        .with(SignInSite::PASSWORD);
                    password.secret = true;
                    password
                },
                Step::new(StepAction::Click).on("#login"),
            ],
            logged_in_when: Some("#account".into()),
        });
        monitor.steps = Some(vec![
            {
                let mut banner = Step::new(StepAction::Click).on("#accept");
                banner.optional = true;
                banner
            },
            Step::new(StepAction::Select).on("#region").with("eu"),
            Step::new(StepAction::WaitForText).with("12 EUR"),
        ]);
    }
    monitor
}

/// Samples the PSS of every Chromium process under this one until stopped; the peak (KiB).
fn sample_pss(stop: Arc<AtomicBool>, peak: Arc<AtomicU64>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let me = std::process::id();
        while !stop.load(Ordering::Acquire) {
            let (pss, _) = crate::render::chromium_pss_kib(me);
            peak.fetch_max(pss, Ordering::AcqRel);
            std::thread::sleep(Duration::from_millis(100));
        }
    })
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let at = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[at.min(sorted.len() - 1)]
}

/// Runs the bench and prints one table.
pub fn run(options: &StepsOptions) -> Result<(), String> {
    let rt = harness::runtime().map_err(|e| e.to_string())?;
    rt.block_on(async {
        let tabs = wachet_server::tabs::renderer_tabs(options.slots);
        println!(
            "steps: {} checks of each, then {} at once ({} renderer tabs); page `/` of a local sign-in site",
            options.checks, options.slots, tabs
        );
        println!(
            "| monitor | median / p90 a check (one at a time) | peak Chromium PSS (one / {} at once) | sign-ins | checks a minute ({} at once) | failed |",
            options.slots, options.slots
        );
        println!("|---|---|---|---|---|---|");
        for variant in &VARIANTS {
            let site = SignInSite::start(1_000_000).await.map_err(|e| e.to_string())?;
            // A fresh engine (so a fresh Chromium) for each, so the peaks are each its own.
            let engine = wachet::Engine::builder()
                .allow_private_networks(true)
                .per_host_concurrency(0)
                .per_host_rps(0)
                .render_settings(wachet::render::RenderSettings {
                    tabs,
                    ..wachet::render::RenderSettings::default()
                })
                .build()
                .map_err(|e| e.to_string())?;
            let prepared = engine
                .prepare(&monitor(&site, variant.steps))
                .map_err(|e| format!("{e:?}"))?;
            let prepared: PreparedMonitor = match variant.kept {
                true => prepared.with_sessions(Arc::new(wachet::steps::MemorySessions::default())),
                false => prepared,
            };
            // One check to start the browser, not counted.
            let _ = engine.check_prepared(&prepared).await;
            let stop = Arc::new(AtomicBool::new(false));
            let peak = Arc::new(AtomicU64::new(0));
            let sampler = sample_pss(stop.clone(), peak.clone());
            let sign_ins_before = site.sign_ins();
            let mut times = Vec::with_capacity(options.checks);
            let mut failed = 0;
            for _ in 0..options.checks {
                let began = Instant::now();
                let outcome = engine.check_prepared(&prepared).await;
                times.push(began.elapsed().as_secs_f64() * 1000.0);
                if let Some(error) = &outcome.data.error {
                    failed += 1;
                    if failed <= 3 {
                        eprintln!("{}: {error}", variant.name);
                    }
                }
            }
            let sign_ins = site.sign_ins() - sign_ins_before;
            let serial_peak = peak.swap(0, Ordering::AcqRel);
            // At once: `slots` checks in flight, each monitor with its own session (a service
            // checks different monitors at once, never one monitor twice).
            let per_slot: Vec<PreparedMonitor> = (0..options.slots)
                .map(|_| match variant.kept {
                    true => prepared
                        .with_sessions(Arc::new(wachet::steps::MemorySessions::default())),
                    false => prepared.clone(),
                })
                .collect();
            let engine = Arc::new(engine);
            let left = Arc::new(std::sync::atomic::AtomicUsize::new(options.checks));
            let began = Instant::now();
            let mut tasks = Vec::new();
            for one in per_slot {
                let (engine, left) = (engine.clone(), left.clone());
                tasks.push(tokio::spawn(async move {
                    let mut failed = 0;
                    while left
                        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
                        .is_ok()
                    {
                        if engine.check_prepared(&one).await.data.error.is_some() {
                            failed += 1;
                        }
                    }
                    failed
                }));
            }
            for task in tasks {
                failed += task.await.map_err(|e| e.to_string())?;
            }
            #[allow(clippy::cast_precision_loss)]
            let per_minute = options.checks as f64 / began.elapsed().as_secs_f64() * 60.0;
            stop.store(true, Ordering::Release);
            let _ = sampler.join();
            engine.renderer().shutdown().await;
            times.sort_by(f64::total_cmp);
            #[allow(clippy::cast_precision_loss)]
            let mib = |kib: u64| kib as f64 / 1024.0;
            println!(
                "| {} | {:.0} / {:.0} ms | {:.0} / {:.0} MiB | {} of {} | {:.0} | {} |",
                variant.name,
                percentile(&times, 0.5),
                percentile(&times, 0.9),
                mib(serial_peak),
                mib(peak.load(Ordering::Acquire)),
                sign_ins,
                options.checks,
                per_minute,
                failed
            );
        }
        Ok(())
    })
}
