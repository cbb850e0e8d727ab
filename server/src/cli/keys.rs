//! `wachet rotate-key`: replaces the service's secret key (made by the service on its first
//! start and kept in the database) with a new random one, sealing every sealed value again
//! with it in one transaction ([`crate::ops::keys::rotate`]). Refused while any process of the
//! service uses the database. Exit codes: 0 rotated, 1 refused (nothing changed), 2 any other
//! failure (nothing changed either).

use super::serve::DbArg;
use crate::ops::keys::{RotateError, rotate};
use crate::store::postgres;
use crate::store::sqlite::backup::Lock;
use clap::Args;
use std::process::ExitCode;

/// Settings of `wachet rotate-key`.
#[derive(Debug, Args)]
pub struct RotateKeyArgs {
    #[command(flatten)]
    db: DbArg,
}

pub async fn run(args: RotateKeyArgs) -> anyhow::Result<ExitCode> {
    if !postgres::is_url(&args.db.db) {
        let path = std::path::Path::new(&args.db.db);
        if !path.exists() {
            eprintln!("error: {} does not exist", path.display());
            return Ok(ExitCode::from(1));
        }
        // A process serving only the API holds the file without beating as a worker.
        if Lock::in_use(path)? {
            eprintln!(
                "error: {} is in use by a running wachet (a service or a command): stop it \
                 first; nothing was changed",
                path.display()
            );
            return Ok(ExitCode::from(1));
        }
    }
    let store = args.db.open().await?;
    let result = rotate(store.store()).await;
    store.close().await;
    match result {
        Ok(done) => {
            println!(
                "rotated the service's key: {} sealed value(s) sealed again with the new key",
                done.resealed
            );
            if done.unopened > 0 {
                println!(
                    "{} sealed value(s) did not open with the old key either and were left as \
                     they were (type those secrets again)",
                    done.unopened
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(err @ RotateError::Running(..)) => {
            eprintln!("error: {err}; nothing was changed");
            Ok(ExitCode::from(1))
        }
        Err(err) => Err(err.into()),
    }
}
