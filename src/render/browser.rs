//! The Chromium process: found, launched on first use with a fresh temporary profile, attached
//! through chromiumoxide, watched, relaunched when it dies, closed when idle, and killed with its
//! whole process group (renderers and zygotes included) when dropped, so no process or profile
//! outlives the engine. When the engine's process ends without dropping it (a signal, SIGKILL),
//! the kernel kills the browser (a parent-death signal), its other processes follow it, and the
//! profile's watcher removes the profile ([`super::profile`]).

use super::devtools;
use super::profile::{self, Profile};
use super::tab::COMMAND_TIMEOUT;
use super::{RenderError, RenderSettings, mib};
use chromiumoxide::Browser;
use chromiumoxide::handler::HandlerConfig;
use futures::StreamExt;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::task::JoinHandle;

/// Where Debian and others install Chromium. The headless shell (Debian's
/// `chromium-headless-shell`, Chromium without its browser UI layer) comes first: on the same
/// pages it renders about 1.4x as many pages a second in about two thirds of the memory. The
/// `/usr/bin` names are wrapper scripts; the binaries behind them are preferred.
const KNOWN_PATHS: &[&str] = &[
    "/usr/lib/chromium/chromium-headless-shell",
    "/usr/bin/chromium-headless-shell",
    "/usr/lib/chromium/chromium",
    "/usr/bin/chromium",
    "/usr/bin/chromium-browser",
    "/usr/bin/google-chrome",
    "/usr/bin/google-chrome-stable",
];

/// The profile's preferences: WebRTC may use UDP only through a proxy (the engine's egress is
/// an HTTP proxy, so none at all).
const PREFERENCES: &str = r#"{"webrtc": {"ip_handling_policy": "disable_non_proxied_udp", "multiple_routes_enabled": false, "nonproxied_udp_enabled": false}}"#;

/// How long Chromium may take to start and answer on its DevTools pipe.
const LAUNCH_TIMEOUT: Duration = Duration::from_secs(20);

/// The browser executable: the configured path, else `CHROME_PATH`, else a known location.
pub(crate) fn find_chrome(configured: Option<&PathBuf>) -> Result<PathBuf, RenderError> {
    if let Some(path) = configured {
        return if path.is_file() {
            Ok(path.clone())
        } else {
            Err(RenderError::NoBrowser(format!(
                "the configured Chromium {} does not exist",
                path.display()
            )))
        };
    }
    if let Some(path) = std::env::var_os("CHROME_PATH").map(PathBuf::from) {
        return if path.is_file() {
            Ok(path)
        } else {
            Err(RenderError::NoBrowser(format!(
                "CHROME_PATH names {}, which does not exist",
                path.display()
            )))
        };
    }
    KNOWN_PATHS
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .ok_or_else(|| {
            RenderError::NoBrowser(
                "no Chromium found: install it (Debian/Ubuntu: apt-get install chromium-headless-shell, or chromium) or set CHROME_PATH"
                    .into(),
            )
        })
}

/// How often the memory watchdog samples the renderers.
const MEMORY_SAMPLE: Duration = Duration::from_millis(200);

/// Memory crashes remembered (the latest ones are what renders ask about).
const MAX_MEMORY_EVENTS: usize = 16;

/// Renderers the browser lost to a memory limit, and when.
#[derive(Default)]
struct MemoryEvents {
    /// Killed by the watchdog for their resident memory.
    killed: Vec<Instant>,
    /// Ended by V8 for the heap limit (Chromium says so on stderr).
    heap: Vec<Instant>,
}

fn remember(events: &mut Vec<Instant>) {
    if events.len() >= MAX_MEMORY_EVENTS {
        events.remove(0);
    }
    events.push(Instant::now());
}

/// A running browser.
pub(crate) struct Live {
    pub browser: Browser,
    alive: Arc<AtomicBool>,
    pid: Option<u32>,
    child: std::sync::Mutex<Option<tokio::process::Child>>,
    handler: JoinHandle<()>,
    /// Carries DevTools between chromiumoxide and the browser's pipes.
    bridge: JoinHandle<()>,
    watchdog: Option<JoinHandle<()>>,
    memory: Arc<std::sync::Mutex<MemoryEvents>>,
    /// The limits behind the memory errors, in MiB: resident memory, JavaScript heap.
    limits_mib: (u64, u64),
    /// Removed when dropped, after the processes are killed.
    _profile: Profile,
}

impl Live {
    /// Whether the browser still answers (its websocket is up).
    pub fn is_alive(&self) -> bool {
        self.alive.load(Ordering::Acquire)
    }

    /// Marks the browser dead so the next use relaunches it.
    pub fn mark_dead(&self) {
        self.alive.store(false, Ordering::Release);
    }

    /// The browser's process id.
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// Why a tab that crashed during a render begun at `since` crashed, when it was a memory
    /// limit: "the page used more than N MB of memory".
    pub fn memory_crash_since(&self, since: Instant) -> Option<String> {
        let events = self.memory.lock().ok()?;
        let limit = if events.killed.iter().any(|t| *t >= since) {
            self.limits_mib.0
        } else if events.heap.iter().any(|t| *t >= since) {
            self.limits_mib.1
        } else {
            return None;
        };
        Some(format!("the page used more than {limit} MB of memory"))
    }

    /// Kills the browser's whole process group at once.
    fn kill(&self) {
        self.mark_dead();
        if let Some(pid) = self.pid.and_then(|p| i32::try_from(p).ok()) {
            // The group was created at spawn with the browser as leader.
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        if let Ok(mut child) = self.child.lock()
            && let Some(child) = child.as_mut()
        {
            let _ = child.start_kill();
            // Reap now if it is already gone; otherwise tokio reaps it in the background.
            let _ = child.try_wait();
        }
    }

    /// Closes the browser politely, then makes sure.
    pub async fn shutdown(&self) {
        let close = self
            .browser
            .execute(chromiumoxide::cdp::browser_protocol::browser::CloseParams::default());
        let _ = tokio::time::timeout(Duration::from_secs(2), close).await;
        let child = self.child.lock().ok().and_then(|mut c| c.take());
        if let Some(mut child) = child
            && tokio::time::timeout(Duration::from_secs(3), child.wait())
                .await
                .is_err()
        {
            self.kill();
            let _ = child.wait().await;
        }
        self.kill();
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.kill();
        self.handler.abort();
        self.bridge.abort();
        if let Some(watchdog) = &self.watchdog {
            watchdog.abort();
        }
    }
}

/// The processes below `pid`, read from `/proc` (each thread's list of children).
fn descendants(pid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    let mut frontier = vec![pid];
    while let Some(parent) = frontier.pop() {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{parent}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let Ok(children) = std::fs::read_to_string(task.path().join("children")) else {
                continue;
            };
            for child in children.split_whitespace().filter_map(|c| c.parse().ok()) {
                if found.len() < 4096 {
                    found.push(child);
                    frontier.push(child);
                }
            }
        }
    }
    found
}

/// A process's resident memory in bytes.
fn resident_bytes(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse::<u64>()
        .ok()?;
    Some(kib * 1024)
}

/// Whether `pid` is a renderer. Processes forked from the zygote rewrite their command line
/// into one string, so the flag is looked for anywhere in it.
fn is_renderer(pid: u32) -> bool {
    const FLAG: &[u8] = b"--type=renderer";
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .is_ok_and(|c| c.windows(FLAG.len()).any(|w| w == FLAG))
}

/// Samples the resident memory of the browser's renderers while it lives and kills one that
/// passes `limit` (its tab then reports a crash, which the render explains with the limit).
fn start_watchdog(
    pid: u32,
    limit: u64,
    alive: Arc<AtomicBool>,
    memory: Arc<std::sync::Mutex<MemoryEvents>>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut renderers: std::collections::HashMap<u32, bool> = Default::default();
        while alive.load(Ordering::Acquire) {
            tokio::time::sleep(MEMORY_SAMPLE).await;
            let (over, seen) = tokio::task::spawn_blocking({
                let mut known = std::mem::take(&mut renderers);
                move || {
                    let processes = descendants(pid);
                    known.retain(|p, _| processes.contains(p));
                    let mut over = Vec::new();
                    for p in processes {
                        // A renderer forked from the zygote shows its own command line only a
                        // moment later: only the answer yes is kept.
                        let renderer = known.contains_key(&p) || is_renderer(p);
                        if renderer {
                            known.insert(p, true);
                        }
                        if renderer && resident_bytes(p).is_some_and(|rss| rss > limit) {
                            over.push(p);
                        }
                    }
                    (over, known)
                }
            })
            .await
            .unwrap_or_default();
            renderers = seen;
            for p in over {
                let Ok(raw) = i32::try_from(p) else { continue };
                tracing::debug!(target: "wachet::render", pid = p, "renderer over its memory limit: killed");
                if let Ok(mut events) = memory.lock() {
                    remember(&mut events.killed);
                }
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(raw),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        }
    })
}

/// Closes the tabs Chromium opens by itself: each keeps a renderer process alive for nothing.
async fn close_initial_tabs(browser: &Browser) {
    use chromiumoxide::cdp::browser_protocol::target::{CloseTargetParams, GetTargetsParams};
    let Ok(Ok(targets)) = tokio::time::timeout(
        COMMAND_TIMEOUT,
        browser.execute(GetTargetsParams::default()),
    )
    .await
    else {
        return;
    };
    for info in &targets.result.target_infos {
        if info.r#type == "page" {
            let close = browser.execute(CloseTargetParams::new(info.target_id.clone()));
            let _ = tokio::time::timeout(COMMAND_TIMEOUT, close).await;
        }
    }
}

/// A request to the launcher thread: a command to spawn in a runtime, and where to answer.
type SpawnJob = (
    tokio::process::Command,
    tokio::runtime::Handle,
    tokio::sync::oneshot::Sender<std::io::Result<tokio::process::Child>>,
);

/// Spawns `command` from a thread that lives as long as the process. The parent-death signal set
/// in the child fires when the thread that forked it ends, not the process: forked from a
/// runtime's worker (which may end with its runtime, or a blocking thread after its idle time)
/// the browser would be killed while the engine still uses it.
async fn spawn_from_launcher(
    command: tokio::process::Command,
) -> std::io::Result<tokio::process::Child> {
    static LAUNCHER: std::sync::OnceLock<Option<std::sync::mpsc::Sender<SpawnJob>>> =
        std::sync::OnceLock::new();
    let launcher = LAUNCHER.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<SpawnJob>();
        std::thread::Builder::new()
            .name("wachet-chromium-launcher".into())
            .spawn(move || {
                while let Ok((mut command, runtime, reply)) = rx.recv() {
                    // The child's pipes and reaping belong to the caller's runtime.
                    let _entered = runtime.enter();
                    let _ = reply.send(command.spawn());
                }
            })
            .ok()
            .map(|_| tx)
    });
    let Some(launcher) = launcher else {
        return Err(std::io::Error::other("cannot start the launcher thread"));
    };
    let (reply, answer) = tokio::sync::oneshot::channel();
    launcher
        .send((command, tokio::runtime::Handle::current(), reply))
        .map_err(|_| std::io::Error::other("the launcher thread is gone"))?;
    answer
        .await
        .map_err(|_| std::io::Error::other("the launcher thread is gone"))?
}

/// Launches Chromium headless with a fresh profile and attaches to it.
pub(crate) async fn launch(
    executable: &PathBuf,
    settings: &RenderSettings,
) -> Result<Live, RenderError> {
    let tmp = std::env::temp_dir();
    let _ = tokio::task::spawn_blocking(move || profile::remove_stale(&tmp)).await;
    let mut profile = Profile::create()
        .map_err(|e| RenderError::Launch(format!("cannot create a profile directory: {e}")))?;
    // The full Chromium takes its WebRTC policy from the profile's preferences, not the flag
    // below (which the headless shell obeys).
    let preferences = profile.path().join("Default");
    std::fs::create_dir_all(&preferences)
        .and_then(|()| std::fs::write(preferences.join("Preferences"), PREFERENCES))
        .map_err(|e| RenderError::Launch(format!("cannot write the profile's preferences: {e}")))?;
    let pipes = devtools::Pipes::new()
        .map_err(|e| RenderError::Launch(format!("cannot make the DevTools pipes: {e}")))?;
    let browser_fds = pipes.browser_fds();
    let mut command = tokio::process::Command::new(executable);
    command
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            "--disable-default-apps",
            "--disable-breakpad",
            "--disable-dev-shm-usage",
            "--disable-quic",
            "--disable-background-timer-throttling",
            "--disable-backgrounding-occluded-windows",
            "--disable-renderer-backgrounding",
            // The back-forward cache and the spare renderer keep processes and pages alive that
            // a reused tab never goes back to. RenderDocument makes a new frame host for every
            // navigation, which a reused tab going from page to page pays each time: without it
            // the 300-page crawl takes 35 instead of 45 ms of CPU a page, and 20 MB less.
            "--disable-features=Translate,MediaRouter,OptimizationHints,DialMediaRouteProvider,\
             BackForwardCache,SpareRendererForSitePerProcess,RenderDocument",
            // One process less (about 17 MB of PSS).
            "--enable-features=NetworkServiceInProcess2",
            // Past four renderers in all, a new tab shares a renderer of its own session on the
            // same site rather than starting another: a process's own memory is paid once for
            // several tabs (the 300-page crawl at 8 tabs: 262 instead of 305 MB of PSS, and no
            // slower; a limit of 2 gave 243 MB but 5% fewer pages a second, the tabs then
            // waiting for each other's main thread). Sessions never share one: Chromium reuses
            // a renderer only within its browser context, so a check's pages never run beside
            // another check's.
            "--renderer-process-limit=4",
            "--metrics-recording-only",
            "--password-store=basic",
            "--use-mock-keychain",
            "--mute-audio",
            "--hide-scrollbars",
            // DevTools on fds 3 and 4 rather than a port any local user could connect to.
            "--remote-debugging-pipe",
            // WebRTC would send UDP (STUN, TURN, media) straight to any address, around the
            // egress proxy and its network policy; only UDP through a proxy is allowed, and the
            // egress is an HTTP proxy, so none at all.
            "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
            // The headless shell blocks no popups by itself: a page calling window.open in a
            // loop would open every one (the full Chromium blocks them by itself).
            "--block-new-web-contents",
        ])
        .arg(format!(
            "--js-flags=--max-old-space-size={}",
            mib(settings.max_js_heap_bytes).max(16)
        ))
        // Every https connection of a page ends at the engine's egress proxy, which presents
        // certificates of its own key and verifies the real server itself; the browser trusts
        // that key and nothing else unusual (the flag needs the --user-data-dir below).
        .arg(format!(
            "--ignore-certificate-errors-spki-list={}",
            super::intercept::authority()
                .map_err(RenderError::Launch)?
                .spki_sha256()
        ))
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("about:blank")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .process_group(0);
    let engine_pid = std::process::id();
    // SAFETY: the closure runs in the forked child before exec and only makes system calls (no
    // allocation, no lock), which is async-signal-safe.
    unsafe {
        command.pre_exec(move || {
            devtools::install_in_child(browser_fds)?;
            // Chromium is killed when the engine's process ends, however it ends; its zygotes
            // and renderers exit when they lose the browser.
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
                .map_err(std::io::Error::from)?;
            // The engine may have died between the fork and the call above.
            if u32::try_from(nix::unistd::getppid().as_raw()).ok() != Some(engine_pid) {
                return Err(std::io::Error::from(nix::errno::Errno::ESRCH));
            }
            Ok(())
        });
    }
    let mut child = spawn_from_launcher(command)
        .await
        .map_err(|e| RenderError::Launch(format!("cannot start {}: {e}", executable.display())))?;
    let pid = child.id();
    if let Some(pid) = pid {
        profile.browser_started(pid).await;
    }
    let stderr = child
        .stderr
        .take()
        .ok_or_else(|| RenderError::Launch("no stderr from Chromium".into()))?;
    let (ws, bridge) = match pipes.serve().await {
        Ok(pair) => pair,
        Err(e) => {
            let _ = child.start_kill();
            return Err(RenderError::Launch(format!(
                "cannot serve the DevTools pipe: {e}"
            )));
        }
    };
    let mut lines = BufReader::new(stderr).lines();
    // Keep draining stderr so Chromium never blocks on a full pipe; V8 says there when a
    // renderer reached its heap limit.
    let memory = Arc::new(std::sync::Mutex::new(MemoryEvents::default()));
    let heap_events = memory.clone();
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            if (line.contains("JavaScript out of memory") || line.contains("Reached heap limit"))
                && let Ok(mut events) = heap_events.lock()
            {
                remember(&mut events.heap);
            }
            tracing::trace!(target: "wachet::chromium", "{line}");
        }
    });
    let config = HandlerConfig {
        ignore_https_errors: false,
        // Every call is bounded by its own timeout; this only keeps chromiumoxide from ending
        // a navigation allowed to take longer than its default.
        request_timeout: settings.navigation_timeout.max(Duration::from_secs(30))
            + Duration::from_secs(5),
        ..HandlerConfig::default()
    };
    let (browser, mut handler) = match tokio::time::timeout(
        LAUNCH_TIMEOUT,
        Browser::connect_with_config(ws, config),
    )
    .await
    {
        Ok(Ok(pair)) => pair,
        Ok(Err(e)) => {
            let _ = child.start_kill();
            bridge.abort();
            return Err(RenderError::Launch(format!(
                "cannot attach to Chromium: {e}"
            )));
        }
        Err(_) => {
            let _ = child.start_kill();
            bridge.abort();
            return Err(RenderError::Launch(
                "attaching to Chromium timed out".into(),
            ));
        }
    };
    let alive = Arc::new(AtomicBool::new(true));
    let alive_flag = alive.clone();
    let handler = tokio::spawn(async move {
        while let Some(event) = handler.next().await {
            if let Err(err) = event {
                // Messages this Chromium sends that chromiumoxide cannot parse (a renamed field
                // in Network.requestWillBeSentExtraInfo) are harmless; a broken connection is not.
                if matches!(
                    err,
                    chromiumoxide::error::CdpError::Ws(_)
                        | chromiumoxide::error::CdpError::Io(_)
                        | chromiumoxide::error::CdpError::ChannelSendError(_)
                ) {
                    break;
                }
            }
        }
        alive_flag.store(false, Ordering::Release);
    });
    // The pipe announces nothing: the first answer says Chromium is up.
    let version =
        browser.execute(chromiumoxide::cdp::browser_protocol::browser::GetVersionParams::default());
    if !matches!(
        tokio::time::timeout(LAUNCH_TIMEOUT, version).await,
        Ok(Ok(_))
    ) {
        let exited = matches!(child.try_wait(), Ok(Some(_)));
        let _ = child.start_kill();
        bridge.abort();
        handler.abort();
        return Err(RenderError::Launch(if exited {
            "Chromium exited as it started".into()
        } else {
            format!(
                "Chromium did not answer within {} s",
                LAUNCH_TIMEOUT.as_secs()
            )
        }));
    }
    close_initial_tabs(&browser).await;
    let watchdog = pid.map(|pid| {
        start_watchdog(
            pid,
            settings.max_renderer_memory_bytes,
            alive.clone(),
            memory.clone(),
        )
    });
    Ok(Live {
        browser,
        alive,
        pid,
        child: std::sync::Mutex::new(Some(child)),
        handler,
        bridge,
        watchdog,
        memory,
        limits_mib: (
            mib(settings.max_renderer_memory_bytes),
            mib(settings.max_js_heap_bytes),
        ),
        _profile: profile,
    })
}
