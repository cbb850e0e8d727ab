//! `wachet migrate --from sqlite:FILE --to postgres://...`: moves a service from its SQLite
//! file to an empty PostgreSQL database ([`crate::store::to_postgres`]). The file is checked to
//! be a wachet database before anything opens it (a file of something else is never given
//! wachet's tables), then both are opened as the service opens them, so each is brought to
//! this binary's schema first. The service started on the new database goes on where the old
//! one stopped: the same users, keys and sessions, monitors due when they were.

use crate::store::postgres::{self, PgStore};
use crate::store::sqlite::{SqliteStore, backup};
use crate::store::{StoreSettings, to_postgres};
use anyhow::{Context, bail};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

/// Settings of `wachet migrate`.
#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// The SQLite database to move from: `sqlite:FILE` (or the file's path). Stop the service
    /// on it first: what it writes during the move would not be moved.
    #[arg(long)]
    from: String,
    /// The empty PostgreSQL database to move to (`postgres://user:password@host/database`).
    #[arg(long)]
    to: String,
}

/// The file `--from` names.
fn sqlite_file(from: &str) -> anyhow::Result<PathBuf> {
    if postgres::is_url(from) {
        bail!(
            "--from must be a SQLite file (sqlite:FILE), not a PostgreSQL database: wachet \
             migrate moves from SQLite to PostgreSQL"
        );
    }
    let file = from
        .strip_prefix("sqlite://")
        .or_else(|| from.strip_prefix("sqlite:"))
        .unwrap_or(from);
    if file.is_empty() {
        bail!("--from names no file: give sqlite:FILE");
    }
    Ok(PathBuf::from(file))
}

pub async fn run(args: MigrateArgs) -> anyhow::Result<ExitCode> {
    let file = sqlite_file(&args.from)?;
    if !postgres::is_url(&args.to) {
        bail!(
            "--to must be a PostgreSQL URL (postgres://user:password@host/database), not {:?}",
            args.to
        );
    }
    let shown = postgres::redact(&args.to);
    backup::check(&file).await?;
    // What a running service stores after the copy would be left behind in the old database.
    if backup::Lock::in_use(&file)? {
        bail!(
            "{} is in use by a running wachet (a service or a command): stop it first, so that \
             nothing it stores after the copy is left behind",
            file.display()
        );
    }
    let settings = StoreSettings::default();
    let from = SqliteStore::open_with(&file, &settings).await?;
    let to = PgStore::connect(&args.to, &settings).await?;
    let moved = to_postgres::sqlite_to_postgres(&from, &to)
        .await
        .with_context(|| format!("nothing was written to {shown}"));
    to.close().await;
    from.close().await;
    let moved = moved?;
    println!("moved {} to {shown}:", file.display());
    for table in &moved {
        println!("  {:<16} {:>10} rows", table.table, table.rows);
    }
    println!(
        "row counts checked, every table equal. The service's secret key (which signs \
         continuation tokens and seals feed keys and webhook secrets) is kept in the database \
         and moved with it. Start the service with --db '{shown}'."
    );
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::sqlite_file;

    #[test]
    fn from_names_a_sqlite_file_only() {
        assert_eq!(
            sqlite_file("sqlite:/var/lib/wachet.db").unwrap(),
            std::path::Path::new("/var/lib/wachet.db")
        );
        assert_eq!(
            sqlite_file("wachet.db").unwrap(),
            std::path::Path::new("wachet.db")
        );
        assert!(sqlite_file("postgres://h/db").is_err());
        assert!(sqlite_file("sqlite:").is_err());
    }
}
