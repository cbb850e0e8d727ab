//! Chromium dies with wachet, however that ends: the real binary is killed with SIGINT, SIGTERM
//! or SIGKILL in the middle of a render, and afterwards no process of its browser is left, nor
//! its profile. On SIGINT and SIGTERM wachet removes the profile before it exits; after SIGKILL
//! the profile's watcher does, within a bounded wait, and then ends too. The same for each
//! command that renders: `check --dynamic`, `crawl --dynamic`, `fixtures run` with a dynamic
//! case, and `serve` checking a dynamicContent monitor. Each run has a TMPDIR of its own, so the
//! tests see only their own profiles.
//!
//! These tests need Chromium. Without it they fail when `CI` is set and are skipped, loudly,
//! on a developer machine.

use nix::sys::signal::Signal;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::BufRead;
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
        .page(
            "/crawl",
            r#"<!doctype html><a href="/slow">slow</a><a href="/fast">fast</a>"#,
        )
        .start()
        .await
        .unwrap()
}

fn wachet(tmp: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_wachet"));
    command
        .env("TMPDIR", tmp)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

fn check(tmp: &Path, url: &str) -> Command {
    let mut command = wachet(tmp);
    command.args(["check", "--dynamic", "--timeout", "60", url]);
    command
}

/// Whether one of the processes seen is a Chromium renderer: a render is under way.
fn renders(seen: &HashMap<i32, u64>) -> bool {
    seen.keys()
        .any(|&pid| cmdline(pid).contains("--type=renderer"))
}

/// Starts `command` (its TMPDIR being `tmp`), waits until it renders and `ready` says so, kills
/// it with `signal`, and asserts that no process of its tree and no profile is left within a
/// bounded wait. The child must be a direct child of this process.
fn killed_mid_render_leaves_nothing(
    signal: Signal,
    mut command: Command,
    tmp: &Path,
    ready: impl Fn() -> bool,
) {
    let mut child = command.spawn().unwrap();
    let root = i32::try_from(child.id()).unwrap();
    kill_when_rendering(signal, &mut child, root, tmp, ready);
}

fn kill_when_rendering(
    signal: Signal,
    child: &mut std::process::Child,
    root: i32,
    tmp: &Path,
    ready: impl Fn() -> bool,
) {
    // Every process of the tree, gathered until the kill (renderers come and go).
    let mut seen: HashMap<i32, u64> = HashMap::new();
    let began = Instant::now();
    loop {
        for (pid, p) in descendants(root) {
            seen.insert(pid, p.start);
        }
        if ready() && renders(&seen) {
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
        std::thread::sleep(Duration::from_millis(50));
    }
    for (pid, p) in descendants(root) {
        seen.insert(pid, p.start);
    }
    assert!(
        seen.keys().any(|&pid| cmdline(pid).contains("chromium")),
        "no Chromium among {seen:?}"
    );
    assert_eq!(
        profiles(tmp).len(),
        1,
        "the running command has one profile"
    );

    nix::sys::signal::kill(nix::unistd::Pid::from_raw(root), signal).unwrap();
    let status = child.wait().unwrap();
    assert!(!status.success(), "{status:?}");
    // SIGINT and SIGTERM are caught: the browser is shut down and its profile removed before
    // wachet exits, with the shell's code for the signal. SIGKILL cannot be caught.
    if matches!(signal, Signal::SIGINT | Signal::SIGTERM) {
        assert_eq!(status.code(), Some(128 + signal as i32), "{status:?}");
        assert_eq!(
            profiles(tmp),
            Vec::<String>::new(),
            "the profile outlived wachet ({signal})"
        );
    }

    // The browser's processes, and the profile's watcher once its work is done, end; the
    // profile goes.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut left: Vec<(i32, String)> = Vec::new();
    let mut profiles_left = profiles(tmp);
    while Instant::now() < deadline {
        left = seen
            .iter()
            .filter(|(pid, start)| still_running(**pid, **start))
            .map(|(pid, _)| (*pid, cmdline(*pid)))
            .collect();
        profiles_left = profiles(tmp);
        if left.is_empty() && profiles_left.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    if !left.is_empty() {
        // Do not leave them running for the next test; they were started by this test's child.
        for (pid, _) in &left {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(*pid), Signal::SIGKILL);
        }
    }
    assert!(
        left.is_empty(),
        "processes outlived wachet ({signal}): {left:?}"
    );
    assert_eq!(
        profiles_left,
        Vec::<String>::new(),
        "profiles left in {} after {signal}",
        tmp.display()
    );
}

async fn check_killed_mid_render_leaves_nothing(signal: Signal) {
    let _serial = SERIAL.lock().await;
    if !wachet::testing::chromium_or_skip() {
        return;
    }
    let server = std::sync::Arc::new(slow_site().await);
    let tmp = tempfile::tempdir().unwrap();
    let command = check(tmp.path(), &server.url("/slow"));
    let (path, hits) = (tmp.path().to_path_buf(), server.clone());
    tokio::task::spawn_blocking(move || {
        killed_mid_render_leaves_nothing(signal, command, &path, || hits.hits("/slow.js") > 0)
    })
    .await
    .unwrap();

    // The next run works, and leaves nothing either.
    let out = check(tmp.path(), &server.url("/fast"))
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
    check_killed_mid_render_leaves_nothing(Signal::SIGINT).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_mid_render_leaves_no_browser() {
    check_killed_mid_render_leaves_nothing(Signal::SIGTERM).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_render_leaves_no_browser_and_no_profile() {
    check_killed_mid_render_leaves_nothing(Signal::SIGKILL).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_crawl_leaves_no_browser_and_no_profile() {
    let _serial = SERIAL.lock().await;
    if !wachet::testing::chromium_or_skip() {
        return;
    }
    let server = std::sync::Arc::new(slow_site().await);
    let tmp = tempfile::tempdir().unwrap();
    let mut command = wachet(tmp.path());
    command.args(["crawl", "--dynamic", "--depth", "1", &server.url("/crawl")]);
    let (path, hits) = (tmp.path().to_path_buf(), server.clone());
    tokio::task::spawn_blocking(move || {
        killed_mid_render_leaves_nothing(Signal::SIGKILL, command, &path, || {
            hits.hits("/slow.js") > 0
        })
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_fixtures_run_leaves_no_browser_and_no_profile() {
    let _serial = SERIAL.lock().await;
    if !wachet::testing::chromium_or_skip() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let case = tmp.path().join("suite").join("busy");
    std::fs::create_dir_all(&case).unwrap();
    // A timer of under a second, again and again, counts as pending: the render goes on for
    // the longest settle (10 s), with nothing fetched from outside the case.
    std::fs::write(
        case.join("page.html"),
        "<!doctype html><p>busy</p><script>\
         const tick = () => { document.body.append('.'); setTimeout(tick, 900); }; tick();</script>",
    )
    .unwrap();
    std::fs::write(case.join("expected.json"), r#"{"raw": "busy"}"#).unwrap();
    std::fs::write(
        case.join("case.json"),
        r#"{"monitor": {"dynamicContent": true}}"#,
    )
    .unwrap();
    let suite = tmp.path().join("suite");
    let mut command = wachet(tmp.path());
    command.arg("fixtures").arg("run").arg(&suite);
    let path = tmp.path().to_path_buf();
    tokio::task::spawn_blocking(move || {
        killed_mid_render_leaves_nothing(Signal::SIGKILL, command, &path, || true)
    })
    .await
    .unwrap();
}

/// Reads what `wachet serve` prints until it listens: the first user's lines, then the address.
fn listening(child: &mut std::process::Child) -> (HashMap<String, String>, String) {
    let stdout = child.stdout.take().unwrap();
    let mut printed = HashMap::new();
    for line in std::io::BufReader::new(stdout).lines() {
        let line = line.unwrap();
        if let Some(addr) = line.strip_prefix("listening on ") {
            return (printed, addr.to_string());
        }
        if let Some((name, value)) = line.split_once(": ") {
            printed.insert(name.to_string(), value.to_string());
        }
    }
    panic!("wachet serve ended before listening: {printed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_of_serve_mid_render_leaves_no_browser_and_no_profile() {
    let _serial = SERIAL.lock().await;
    if !wachet::testing::chromium_or_skip() {
        return;
    }
    let server = std::sync::Arc::new(slow_site().await);
    let tmp = tempfile::tempdir().unwrap();
    let mut child = wachet(tmp.path())
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--allow-private-networks",
            "--db",
        ])
        .arg(tmp.path().join("wachet.db"))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let root = i32::try_from(child.id()).unwrap();
    let (mut child, (user, base)) = tokio::time::timeout(
        Duration::from_secs(30),
        tokio::task::spawn_blocking(move || {
            let found = listening(&mut child);
            (child, found)
        }),
    )
    .await
    .expect("wachet serve listens within 30 s")
    .unwrap();
    let api = format!("{base}/thirdparty/v1");
    let http = reqwest::Client::new();
    let login: Value = http
        .post(format!("{api}/user/apilogin"))
        .json(&json!({"userId": user["user id"], "apiKey": user["api key"]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let token = login["token"].as_str().unwrap().to_string();
    let created = http
        .put(format!("{api}/task"))
        .bearer_auth(&token)
        .json(
            &json!({"name": "slow", "url": server.url("/slow"), "dynamicContent": true,
                      "recurrenceInSeconds": 3600}),
        )
        .send()
        .await
        .unwrap();
    assert!(created.status().is_success(), "{created:?}");

    let path = tmp.path().to_path_buf();
    tokio::task::spawn_blocking(move || {
        kill_when_rendering(Signal::SIGKILL, &mut child, root, &path, || {
            server.hits("/slow.js") > 0
        })
    })
    .await
    .unwrap();
}
