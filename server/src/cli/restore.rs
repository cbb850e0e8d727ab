//! `wachet restore FILE`: puts a backup made by `wachet backup` in place of a SQLite database,
//! refusing while any wachet process uses the database and refusing a file that is not a
//! whole wachet database, changing nothing then ([`crate::store::sqlite::backup`]).

use super::serve::DbArg;
use crate::store::postgres;
use crate::store::sqlite::backup;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

/// Settings of `wachet restore`.
#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// The backup to restore.
    file: PathBuf,
    #[command(flatten)]
    db: DbArg,
}

pub async fn run(args: RestoreArgs) -> anyhow::Result<ExitCode> {
    if postgres::is_url(&args.db.db) {
        eprint!("{}", super::backup::pg_dump_advice(&args.db.db));
        return Ok(ExitCode::from(1));
    }
    let db = PathBuf::from(&args.db.db);
    let done = backup::restore(&args.file, &db).await?;
    println!(
        "restored {} to {}: {} monitors, {} history entries",
        args.file.display(),
        db.display(),
        done.monitors,
        done.entries
    );
    if let Some(replaced) = done.replaced {
        println!("the database it replaced is kept as {}", replaced.display());
    }
    Ok(ExitCode::SUCCESS)
}
