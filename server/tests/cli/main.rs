//! The command line as a user runs it: the real `wachet` binary, as a child process, against
//! real servers on loopback. `check` and `crawl` in [`check`], `fixtures` in [`fixtures`],
//! `import` and `export` in [`transfer`].

use std::process::{Command, Output};

// Backups taken while the service runs, and restores.
mod backup;
mod check;
// A small disk that fills, shared with the service's tests.
#[path = "../service/support/disk.rs"]
mod disk;
mod fixtures;
// The container image built with podman and run with a read-only root.
mod image;
// What the service logs of a failed request.
mod logs;
// Moving a service from SQLite to PostgreSQL.
mod migrate;
// The Containerfile, compose.yaml and systemd units against `wachet serve --help`.
mod packaging;
// Browser steps from a file.
mod steps;
// The private PostgreSQL cluster of the API tests.
#[allow(dead_code)]
#[path = "../service/support/pg.rs"]
mod pg;
// Moving in from other tools and out again.
mod transfer;

/// Runs the real binary with `args` and waits for it.
fn wachet(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wachet"))
        .args(args)
        .output()
        .expect("run wachet")
}

/// What it printed on stdout.
fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// What it printed on stderr.
fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
