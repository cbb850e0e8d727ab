//! Chromium dies with `wachet check --dynamic`, however that ends: the real binary is killed with
//! SIGINT, SIGTERM or SIGKILL in the middle of a render, and afterwards no process of its
//! browser is left. On SIGINT and SIGTERM it removes its profile before it exits; the profile
//! a SIGKILL leaves is gone after the next run, which also leaves none of its own.
//!
//! These tests need Chromium. Without it they fail when `CI` is set and are skipped, loudly,
//! on a developer machine.

use nix::sys::signal::Signal;
use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use wachet::testing::{FixtureServer, Reply};

/// One browser at a time: the machine is small, and each test watches process trees.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A process as `/proc/PID/stat` describes it.
#[derive(Debug, Clone, Copy)]
struct Proc {
    ppid: i32,
    state: char,
    /// Start time in clock ticks since boot: with the pid, names one process even if the pid is
    /// reused later.
    start: u64,
}

fn stat(pid: i32) -> Option<Proc> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses; the fields follow the last ')'.
    let rest = &text[text.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    Some(Proc {
        state: fields.first()?.chars().next()?,
        ppid: fields.get(1)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
    })
}

fn all_processes() -> HashMap<i32, Proc> {
    std::fs::read_dir("/proc")
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
                .filter_map(|pid| Some((pid, stat(pid)?)))
                .collect()
        })
        .unwrap_or_default()
}

/// The processes below `root` (not `root` itself).
fn descendants(root: i32) -> Vec<(i32, Proc)> {
    let procs = all_processes();
    let mut found = Vec::new();
    let mut frontier = vec![root];
    while let Some(parent) = frontier.pop() {
        for (&pid, p) in &procs {
            if p.ppid == parent {
                found.push((pid, *p));
                frontier.push(pid);
            }
        }
    }
    found
}

fn cmdline(pid: i32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
        .unwrap_or_default()
}

/// Whether the process `pid` started at `start` still runs (a zombie has ended).
fn still_running(pid: i32, start: u64) -> bool {
    stat(pid).is_some_and(|p| p.start == start && p.state != 'Z')
}

fn profiles(tmp: &Path) -> Vec<String> {
    std::fs::read_dir(tmp)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.file_name().to_str().map(str::to_string))
                .filter(|n| n.starts_with("wachet-chromium-"))
                .collect()
        })
        .unwrap_or_default()
}

/// A page whose script never arrives: the render is underway until the check is killed.
async fn slow_site() -> FixtureServer {
    FixtureServer::builder()
        .page(
            "/slow",
            r#"<!doctype html><p>slow</p><script src="/slow.js"></script>"#,
        )
        .reply(
            "/slow.js",
            Reply::new(200)
                .header("content-type", "text/javascript")
                .body("document.body.append('late')")
                .delay(Duration::from_secs(120)),
        )
        .page("/fast", "<!doctype html><p id=v>fast</p>")
        .start()
        .await
        .unwrap()
}

fn wachet(tmp: &Path, url: &str) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_wachet"));
    command
        .args(["check", "--dynamic", "--timeout", "60", url])
        .env("TMPDIR", tmp)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

async fn killed_mid_render_leaves_nothing(signal: Signal) {
    let _serial = SERIAL.lock().await;
    if !wachet::testing::chromium_or_skip() {
        return;
    }
    let server = slow_site().await;
    let tmp = tempfile::tempdir().unwrap();
    let mut child = wachet(tmp.path(), &server.url("/slow")).spawn().unwrap();
    let root = i32::try_from(child.id()).unwrap();

    // Every process of the check's tree, gathered until the kill (renderers come and go).
    let mut seen: HashMap<i32, u64> = HashMap::new();
    let began = Instant::now();
    loop {
        for (pid, p) in descendants(root) {
            seen.insert(pid, p.start);
        }
        let rendering = server.hits("/slow.js") > 0
            && seen
                .keys()
                .any(|&pid| cmdline(pid).contains("--type=renderer"));
        if rendering {
            break;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "wachet ended before the render began"
        );
        assert!(
            began.elapsed() < Duration::from_secs(60),
            "the render did not begin within 60 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for (pid, p) in descendants(root) {
        seen.insert(pid, p.start);
    }
    assert!(
        seen.keys().any(|&pid| cmdline(pid).contains("chromium")),
        "no Chromium among {seen:?}"
    );
    assert_eq!(
        profiles(tmp.path()).len(),
        1,
        "the running check has one profile"
    );

    nix::sys::signal::kill(nix::unistd::Pid::from_raw(root), signal).unwrap();
    let status = child.wait().unwrap();
    assert!(!status.success(), "{status:?}");
    // SIGINT and SIGTERM are caught: the browser is shut down and its profile removed before
    // wachet exits, with the shell's code for the signal. SIGKILL cannot be caught.
    match signal {
        Signal::SIGINT | Signal::SIGTERM => {
            assert_eq!(status.code(), Some(128 + signal as i32), "{status:?}");
            assert_eq!(
                profiles(tmp.path()),
                Vec::<String>::new(),
                "the profile outlived wachet ({signal})"
            );
        }
        _ => assert_eq!(profiles(tmp.path()).len(), 1, "SIGKILL leaves the profile"),
    }

    let deadline = Instant::now() + Duration::from_secs(15);
    let mut left: Vec<(i32, String)> = Vec::new();
    while Instant::now() < deadline {
        left = seen
            .iter()
            .filter(|(pid, start)| still_running(**pid, **start))
            .map(|(pid, _)| (*pid, cmdline(*pid)))
            .collect();
        if left.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    if !left.is_empty() {
        // Do not leave them running for the next test; they were started by this test's child.
        for (pid, _) in &left {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(*pid), Signal::SIGKILL);
        }
    }
    assert!(
        left.is_empty(),
        "Chromium processes outlived wachet ({signal}): {left:?}"
    );

    // The next run removes the profile the killed one left, and leaves none of its own.
    let out = wachet(tmp.path(), &server.url("/fast"))
        .stdout(Stdio::piped())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "fast\n");
    assert_eq!(
        profiles(tmp.path()),
        Vec::<String>::new(),
        "profiles left in {}",
        tmp.path().display()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_mid_render_leaves_no_browser() {
    killed_mid_render_leaves_nothing(Signal::SIGINT).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_mid_render_leaves_no_browser() {
    killed_mid_render_leaves_nothing(Signal::SIGTERM).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_render_leaves_no_browser() {
    killed_mid_render_leaves_nothing(Signal::SIGKILL).await;
}
