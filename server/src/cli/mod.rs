//! Command-line parsing and dispatch. Each subcommand has its own module.

mod backup;
mod check;
mod crawl;
mod fixtures;
mod keys;
mod migrate;
mod page;
mod restore;
mod serve;
mod transfer;
mod user;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Watches web pages: checks, crawls and diffs them.
#[derive(Debug, Parser)]
#[command(name = "wachet", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Log lines (on stderr) as text or as one JSON object a line. No log line carries a
    /// token, API key, password or webhook secret.
    #[arg(long, global = true, env = "WACHET_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

impl Cli {
    /// Which log lines are written when `RUST_LOG` does not say. The one-shot commands print
    /// their own result and errors, so only wachet's own warnings reach the terminal there:
    /// libraries' warnings about a page (html5ever's parse notes, say) are noise to a user who
    /// asked for a value. The service logs libraries' warnings too, except those of the HTML
    /// parser and the browser driver, which any user's page can trigger without end.
    pub fn default_log_filter(&self) -> &'static str {
        match self.command {
            Command::Serve(_) => "warn,html5ever=off,chromiumoxide=off",
            _ => "off,wachet=warn,wachet_server=warn",
        }
    }
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object a line.
    Json,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Backs up the service's SQLite database while it runs (a consistent, checked copy).
    Backup(backup::BackupArgs),
    /// Checks one page once and prints its value.
    Check(check::CheckArgs),
    /// Crawls a site from a start page (a Portal check) and prints each page.
    Crawl(crawl::CrawlArgs),
    /// Writes a user's folders, monitors and endpoints (and history) as one JSON document.
    Export(transfer::ExportArgs),
    /// Runs fixture regression suites and records new cases from live pages.
    Fixtures(fixtures::FixturesArgs),
    /// Brings in monitors from a file: a wachet export, a changedetection.io backup, an
    /// urlwatch or webchanges jobs file, a Wachete XLSX export.
    Import(transfer::ImportArgs),
    /// Moves the service from its SQLite file to an empty PostgreSQL database: every table,
    /// checked by its counts.
    Migrate(migrate::MigrateArgs),
    /// Puts a backup in place of a SQLite database no wachet process is using.
    Restore(restore::RestoreArgs),
    /// Replaces the service's secret key with a new one, sealing every stored secret again
    /// with it (stop the service first).
    RotateKey(keys::RotateKeyArgs),
    /// Runs the REST service (API under /thirdparty/v1) on a SQLite file.
    Serve(Box<serve::ServeArgs>),
    /// Manages the service's users.
    User(user::UserArgs),
}

/// Runs the command; the exit code says how it went.
pub async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Check(args) => until_interrupted(check::run(args)).await,
        Command::Crawl(args) => until_interrupted(crawl::run(args)).await,
        Command::Export(args) => transfer::run_export(args).await,
        Command::Fixtures(args) => until_interrupted(fixtures::run(args)).await,
        Command::Import(args) => transfer::run_import(args).await,
        // The service shuts down gracefully on these signals itself.
        Command::Serve(args) => serve::run(*args).await,
        Command::User(args) => user::run(args).await,
        Command::Backup(args) => backup::run(args).await,
        Command::Restore(args) => restore::run(args).await,
        Command::RotateKey(args) => keys::run(args).await,
        Command::Migrate(args) => migrate::run(args).await,
    }
}

/// Runs a one-shot command until it ends or the process is asked to stop (SIGINT, SIGTERM).
/// Then the command is dropped, engine and all, so its browser is shut down and the browser's
/// profile removed before the process exits, with the shell's code for the signal (130, 143).
/// Without this the default action of the signal would end the process at once: the browser
/// still dies with it (a parent-death signal), but its profile stays until the next run.
async fn until_interrupted(
    command: impl std::future::Future<Output = anyhow::Result<ExitCode>>,
) -> anyhow::Result<ExitCode> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    tokio::select! {
        done = command => done,
        _ = interrupt.recv() => Ok(ExitCode::from(130)),
        _ = terminate.recv() => Ok(ExitCode::from(143)),
    }
}
