//! A disk that fills: a small tmpfs mounted for a test (as root, as CI runs; elsewhere the test
//! is skipped, saying so, unless `CI` is set), and a file that takes its last free byte.

use std::io::Write;
use std::path::Path;

/// A tmpfs of a few megabytes mounted on a temporary directory, unmounted when dropped.
pub struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    /// Mounts one of `bytes`; `None` when it cannot be mounted and `CI` is unset.
    pub fn mount(bytes: u64) -> Option<SmallDisk> {
        let dir = tempfile::tempdir().unwrap();
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={bytes}"), "tmpfs"])
            .arg(dir.path())
            .output();
        match mounted {
            Ok(output) if output.status.success() => Some(SmallDisk { dir }),
            other => {
                let why = match other {
                    Ok(output) => String::from_utf8_lossy(&output.stderr).into_owned(),
                    Err(err) => err.to_string(),
                };
                assert!(
                    std::env::var_os("CI").is_none(),
                    "CI must mount a tmpfs (run as root): {why}"
                );
                eprintln!("skipped: cannot mount a tmpfs (not root?): {why}");
                None
            }
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

/// Writes to `file` until its disk has no byte left (in halving chunks down to 512 bytes).
pub fn fill(file: &mut std::fs::File) {
    let mut chunk = 1 << 20;
    while chunk >= 512 {
        if file.write_all(&vec![7u8; chunk]).is_err() {
            chunk /= 2;
        }
    }
}
