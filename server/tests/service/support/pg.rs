//! A private PostgreSQL cluster for the tests, started once per test binary from the
//! `postgresql` package's `initdb` and `postgres` (as the `postgres` user when the tests run as
//! root), on a Unix socket in a temporary directory and no TCP port, with a fresh database per
//! test ([`database`]). It is stopped by its PID when the binary exits (`atexit`), and told to
//! quit by the kernel if the binary dies without exiting (`PR_SET_PDEATHSIG`), so no test run
//! leaves a server behind. Without the package a test is skipped with a printed reason, or fails
//! when `CI` is set: CI must run every backend.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// How long initdb and the server's start may take (about 1 s here).
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the server may take to stop before it is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// Why no cluster runs.
#[derive(Debug, Clone)]
enum Unavailable {
    /// The package is not installed: skip, unless `CI` is set.
    Missing(String),
    /// It is installed but could not start: always a failure.
    Failed(String),
}

struct Cluster {
    /// Holds the data directory and the socket.
    dir: PathBuf,
}

static CLUSTER: OnceLock<Result<Cluster, Unavailable>> = OnceLock::new();
/// The server's PID, for the exit handler (0: none).
static SERVER_PID: AtomicI32 = AtomicI32::new(0);
/// The directory the exit handler removes, once the server is stopped.
static CLUSTER_DIR: OnceLock<PathBuf> = OnceLock::new();
static DATABASES: AtomicU32 = AtomicU32::new(0);
/// How the cluster directories are named in the temporary directory.
const PREFIX: &str = "wachet-pg-";

/// A URL of a fresh, empty database on the test cluster; `None` when PostgreSQL is not
/// installed and `CI` is not set (the reason is printed and the test should return).
///
/// # Panics
/// When the cluster cannot start, or PostgreSQL is missing and `CI` is set.
pub async fn database() -> Option<String> {
    let cluster = cluster()?;
    let name = format!("t_{}", DATABASES.fetch_add(1, Ordering::Relaxed));
    let admin = url(&cluster.dir, "postgres");
    use sqlx::Connection;
    let mut conn = tokio::time::timeout(START_TIMEOUT, sqlx::PgConnection::connect(&admin))
        .await
        .expect("connecting to the test PostgreSQL timed out")
        .expect("cannot connect to the test PostgreSQL");
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&mut conn)
        .await
        .expect("cannot create a test database");
    let _ = conn.close().await;
    Some(url(&cluster.dir, &name))
}

/// Whether the cluster runs, started on the first call; `false` when PostgreSQL is not
/// installed and `CI` is not set (the reason is printed and the test should return).
///
/// # Panics
/// As [`database`].
pub fn available() -> bool {
    cluster().is_some()
}

fn cluster() -> Option<&'static Cluster> {
    match CLUSTER.get_or_init(start) {
        Ok(cluster) => Some(cluster),
        Err(unavailable) => match verdict(unavailable, std::env::var_os("CI").is_some()) {
            Ok(skip) => {
                eprintln!("{skip}");
                None
            }
            Err(failure) => panic!("{failure}"),
        },
    }
}

/// What a test does without a cluster: `Ok` a reason to skip, `Err` why it fails. Only a
/// missing package outside CI is a skip.
fn verdict(unavailable: &Unavailable, ci: bool) -> Result<String, String> {
    match unavailable {
        Unavailable::Missing(reason) if !ci => {
            Ok(format!("skipped: PostgreSQL is not installed ({reason})"))
        }
        Unavailable::Missing(reason) => Err(format!(
            "PostgreSQL is needed when CI is set, and it is not installed: {reason}"
        )),
        Unavailable::Failed(reason) => Err(format!("the test PostgreSQL cannot start: {reason}")),
    }
}

fn url(dir: &Path, database: &str) -> String {
    format!(
        "postgres://postgres@localhost/{database}?host={}",
        dir.display()
    )
}

/// The directory of `initdb` and `postgres`: on `PATH`, else Debian's newest
/// `/usr/lib/postgresql/<version>/bin`.
fn binaries() -> Result<PathBuf, Unavailable> {
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            if dir.join("initdb").is_file() && dir.join("postgres").is_file() {
                return Ok(dir);
            }
        }
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .map_err(|_| Unavailable::Missing("no initdb on PATH or in /usr/lib/postgresql".into()))?
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let version = entry.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").is_file().then_some((version, bin))
        })
        .collect();
    found.sort();
    found
        .pop()
        .map(|(_, bin)| bin)
        .ok_or_else(|| Unavailable::Missing("no /usr/lib/postgresql/*/bin/initdb".into()))
}

/// Starts the cluster from a thread that lives as long as the binary: the kernel's "parent
/// died" signal follows the thread that started the child, and a test's thread ends with it.
fn start() -> Result<Cluster, Unavailable> {
    let bin = binaries()?;
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("postgres-owner".into())
        .spawn(move || {
            let _ = sender.send(start_in_this_thread(&bin));
            loop {
                std::thread::park();
            }
        })
        .map_err(|err| Unavailable::Failed(format!("cannot start a thread: {err}")))?;
    receiver
        .recv_timeout(START_TIMEOUT * 2)
        .map_err(|_| Unavailable::Failed("the cluster did not start in time".into()))?
}

fn start_in_this_thread(bin: &Path) -> Result<Cluster, Unavailable> {
    let failed =
        |what: &str, err: &dyn std::fmt::Display| Unavailable::Failed(format!("{what}: {err}"));
    sweep_leftovers();
    let dir = tempfile::Builder::new()
        .prefix(PREFIX)
        .tempdir()
        .map_err(|err| failed("cannot make a temporary directory", &err))?
        .keep();
    let _ = CLUSTER_DIR.set(dir.clone());
    // SAFETY: registering a plain function with no captured state.
    unsafe { libc::atexit(stop_at_exit) };
    // PostgreSQL refuses to run as root: run it as the package's `postgres` user then.
    let owner = if nix::unistd::geteuid().is_root() {
        let user = nix::unistd::User::from_name("postgres")
            .ok()
            .flatten()
            .ok_or_else(|| Unavailable::Missing("running as root and no user postgres".into()))?;
        nix::unistd::chown(&dir, Some(user.uid), Some(user.gid))
            .map_err(|err| failed("cannot give the directory to postgres", &err))?;
        Some((user.uid.as_raw(), user.gid.as_raw()))
    } else {
        None
    };
    let as_owner = |command: &mut Command| {
        if let Some((uid, gid)) = owner {
            command.uid(uid).gid(gid);
        }
    };
    let data = dir.join("data");
    let log = dir.join("server.log");

    let mut initdb = Command::new(bin.join("initdb"));
    initdb
        .arg("-D")
        .arg(&data)
        .args([
            "-A",
            "trust",
            "-U",
            "postgres",
            "--no-sync",
            "-E",
            "UTF8",
            "--locale=C",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    as_owner(&mut initdb);
    let mut child = initdb
        .spawn()
        .map_err(|err| failed("cannot run initdb", &err))?;
    let deadline = Instant::now() + START_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(Unavailable::Failed("initdb did not finish in time".into()));
            }
            Err(err) => return Err(failed("cannot wait for initdb", &err)),
        }
    };
    if !status.success() {
        let mut stderr = String::new();
        if let Some(mut pipe) = child.stderr.take() {
            let _ = pipe.read_to_string(&mut stderr);
        }
        return Err(Unavailable::Failed(format!(
            "initdb failed ({status}): {stderr}"
        )));
    }

    let log_file =
        std::fs::File::create(&log).map_err(|err| failed("cannot create the server log", &err))?;
    let log_err = log_file
        .try_clone()
        .map_err(|err| failed("cannot create the server log", &err))?;
    let mut postgres = Command::new(bin.join("postgres"));
    postgres
        .arg("-D")
        .arg(&data)
        .arg("-k")
        .arg(&dir)
        // A Unix socket only; durability is of no use to a test's database.
        .args([
            "-c",
            "listen_addresses=",
            "-c",
            "fsync=off",
            "-c",
            "synchronous_commit=off",
        ])
        .args(["-c", "full_page_writes=off", "-c", "max_connections=300"])
        .stdin(Stdio::null())
        .stdout(log_file)
        .stderr(log_err);
    as_owner(&mut postgres);
    // SAFETY: prctl is async-signal-safe; run in the child between fork and exec, after the
    // change of user (which would clear it).
    unsafe {
        postgres.pre_exec(|| {
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGQUIT)
                .map_err(std::io::Error::from)
        });
    }
    let mut server = postgres
        .spawn()
        .map_err(|err| failed("cannot run postgres", &err))?;
    SERVER_PID.store(server.id() as i32, Ordering::SeqCst);
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        // Line 8 of postmaster.pid says "ready" once connections are accepted.
        let ready = std::fs::read_to_string(data.join("postmaster.pid"))
            .ok()
            .is_some_and(|pid| pid.lines().nth(7).is_some_and(|s| s.trim() == "ready"));
        if ready {
            return Ok(Cluster { dir });
        }
        if let Ok(Some(status)) = server.try_wait() {
            SERVER_PID.store(0, Ordering::SeqCst);
            let log = std::fs::read_to_string(&log).unwrap_or_default();
            return Err(Unavailable::Failed(format!(
                "postgres exited ({status}): {log}"
            )));
        }
        if Instant::now() > deadline {
            return Err(Unavailable::Failed("postgres was not ready in time".into()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Removes the directories of clusters whose test binary was killed (the server quit with it,
/// by the parent-death signal, and removed its `postmaster.pid`, but nobody removed the
/// directory). One without `postmaster.pid` for a minute belongs to no running binary: another
/// binary's initdb, the only time a live cluster has none, takes about a second.
fn sweep_leftovers() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let ours = entry
            .file_name()
            .to_str()
            .is_some_and(|name| name.starts_with(PREFIX));
        let stale = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|modified| modified.elapsed().ok())
            .is_some_and(|age| age > Duration::from_secs(60));
        if ours && stale && !path.join("data/postmaster.pid").exists() {
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}

/// Stops the server by its PID (a fast shutdown: sessions are ended), waits for it, and removes
/// its directory.
extern "C" fn stop_at_exit() {
    use nix::sys::signal::{Signal, kill};
    use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
    use nix::unistd::Pid;
    let pid = SERVER_PID.swap(0, Ordering::SeqCst);
    if pid > 0 {
        let pid = Pid::from_raw(pid);
        let _ = kill(pid, Signal::SIGINT);
        let deadline = Instant::now() + STOP_TIMEOUT;
        loop {
            match waitpid(pid, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::StillAlive) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Ok(WaitStatus::StillAlive) => {
                    let _ = kill(pid, Signal::SIGKILL);
                    let _ = waitpid(pid, None);
                    break;
                }
                _ => break,
            }
        }
    }
    if let Some(dir) = CLUSTER_DIR.get() {
        let _ = std::fs::remove_dir_all(dir);
    }
}

#[test]
fn without_postgresql_a_test_skips_only_outside_ci() {
    let missing = Unavailable::Missing("no initdb".into());
    assert!(verdict(&missing, false).is_ok_and(|skip| skip.contains("no initdb")));
    assert!(verdict(&missing, true).is_err_and(|failure| failure.contains("CI is set")));
    let broken = Unavailable::Failed("initdb failed".into());
    assert!(verdict(&broken, false).is_err());
    assert!(verdict(&broken, true).is_err());
}
