//! The browser's temporary profile directory, which must not outlive the engine however the
//! engine ends. The engine removes it when it drops the browser; when the engine's process is
//! killed instead (SIGKILL, the OOM killer), a watcher removes it: a tiny `/bin/sh` started with
//! the profile, in a process group of its own, that reads the browser's pid and then waits for
//! the end of a pipe whose other end only the engine holds. The pipe ends when the engine drops
//! the browser or its process dies, whichever comes first; the watcher then waits (10 s at most)
//! for the browser's process group to die, which the parent-death signal makes quick, removes
//! the profile and exits. A shell rather than a fork of the engine: it holds none of the
//! engine's memory or descriptors, and works the same for every program embedding the library.
//! Where no shell runs, profiles that dead engines left are removed by the next launch.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use tokio::io::AsyncWriteExt;

/// Profiles are named `wachet-chromium-<pid of the engine>-<random>`, so a later launch can tell
/// a profile whose engine is gone.
pub(crate) const PROFILE_PREFIX: &str = "wachet-chromium-";

/// The watcher: `$1` is the profile. The first line on stdin is the browser's pid (none when
/// the launch failed); end of input means the engine let go. `kill -0 -PID` asks whether any
/// process of the group is left. Fractional sleeps are GNU's and busybox's; elsewhere whole
/// seconds, with the same bound of 100 rounds.
const WATCHER: &str = r#"read -r pid
while read -r _; do :; done
i=0
while [ -n "$pid" ] && [ "$i" -lt 100 ] && kill -0 "-$pid" 2>/dev/null; do
  sleep 0.1 2>/dev/null || sleep 1
  i=$((i+1))
done
rm -rf -- "$1"
"#;

/// A profile directory, removed when dropped, and by its watcher if the process dies first.
pub(crate) struct Profile {
    dir: tempfile::TempDir,
    /// The engine's end of the watcher's pipe: closing it (drop, or the process dying) lets the
    /// watcher go. Dropped after `dir`, so a watcher that wakes finds the profile removed.
    watcher: Option<tokio::process::ChildStdin>,
    /// Reaped in the background once dropped (tokio reaps children dropped before they end).
    _watcher_process: Option<tokio::process::Child>,
}

impl Profile {
    /// Creates a fresh profile in the temporary directory, with its watcher.
    pub(crate) fn create() -> std::io::Result<Profile> {
        let dir = tempfile::Builder::new()
            .prefix(&format!("{PROFILE_PREFIX}{}-", std::process::id()))
            .tempdir()?;
        let (watcher, process) = match spawn_watcher(dir.path()) {
            Ok((stdin, child)) => (Some(stdin), Some(child)),
            Err(e) => {
                tracing::debug!(
                    target: "wachet::render",
                    "no watcher for the profile (it stays if the process is killed): {e}"
                );
                (None, None)
            }
        };
        Ok(Profile {
            dir,
            watcher,
            _watcher_process: process,
        })
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Tells the watcher which browser writes to the profile, so it waits for its end.
    pub(crate) async fn browser_started(&mut self, pid: u32) {
        if let Some(watcher) = self.watcher.as_mut()
            && let Err(e) = watcher.write_all(format!("{pid}\n").as_bytes()).await
        {
            tracing::debug!(target: "wachet::render", "the profile's watcher is gone: {e}");
        }
    }
}

fn spawn_watcher(
    profile: &Path,
) -> std::io::Result<(tokio::process::ChildStdin, tokio::process::Child)> {
    let mut child = tokio::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(WATCHER)
        .arg("wachet-profile-watcher")
        .arg(profile)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        // Not in the engine's group: Ctrl-C in a terminal signals the whole foreground group,
        // and the watcher must outlive the engine to do its work.
        .process_group(0)
        .kill_on_drop(false)
        .spawn()?;
    let stdin = child
        .stdin
        .take()
        .ok_or_else(|| std::io::Error::other("no pipe to the watcher"))?;
    Ok((stdin, child))
}

/// Removes the profiles in `dir` that engines no longer running left behind (killed where no
/// watcher could run). Profiles of live processes and anything not named like ours stay.
pub(crate) fn remove_stale(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(owner) = name
            .to_str()
            .and_then(|n| n.strip_prefix(PROFILE_PREFIX))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        let gone = !PathBuf::from(format!("/proc/{owner}")).exists();
        if gone
            && entry.file_type().is_ok_and(|t| t.is_dir())
            && let Err(e) = std::fs::remove_dir_all(entry.path())
        {
            tracing::debug!(
                target: "wachet::render",
                "cannot remove the stale profile {}: {e}",
                entry.path().display()
            );
        }
    }
}
