//! `wachet backup FILE`: a consistent copy of a SQLite database, taken while the service runs
//! on it and checked before it is reported ([`crate::store::sqlite::backup`]). A PostgreSQL
//! database is backed up with PostgreSQL's own tools: the command says how.

use super::serve::DbArg;
use crate::store::postgres;
use crate::store::sqlite::backup;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

/// Settings of `wachet backup`.
#[derive(Debug, Args)]
pub struct BackupArgs {
    /// The file to write the backup to; it must not exist.
    file: PathBuf,
    #[command(flatten)]
    db: DbArg,
}

/// How to back a PostgreSQL database up, and put it back.
pub(super) fn pg_dump_advice(url: &str) -> String {
    let shown = postgres::redact(url);
    format!(
        "wachet does not copy a PostgreSQL database itself; use PostgreSQL's tools, which take \
         a consistent snapshot while the service runs:\n\
         \n  pg_dump --format=custom --file=wachet.dump '{shown}'\n\
         \nand to put it back, into an empty database, with every wachet process stopped:\n\
         \n  pg_restore --no-owner --dbname='{shown}' wachet.dump\n"
    )
}

pub async fn run(args: BackupArgs) -> anyhow::Result<ExitCode> {
    if postgres::is_url(&args.db.db) {
        eprint!("{}", pg_dump_advice(&args.db.db));
        return Ok(ExitCode::from(1));
    }
    let db = PathBuf::from(&args.db.db);
    let done = backup::backup(&db, &args.file).await?;
    println!(
        "backed up {} to {}: {} bytes, {} monitors, {} history entries; integrity check ok",
        db.display(),
        args.file.display(),
        done.bytes,
        done.monitors,
        done.entries
    );
    Ok(ExitCode::SUCCESS)
}
