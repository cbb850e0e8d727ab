//! Command-line parsing and dispatch. Each subcommand has its own module.

mod check;
mod crawl;
mod page;
mod serve;
mod user;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Watches web pages: checks, crawls and diffs them.
#[derive(Debug, Parser)]
#[command(name = "wachet", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Checks one page once and prints its value.
    Check(check::CheckArgs),
    /// Crawls a site from a start page (a Portal check) and prints each page.
    Crawl(crawl::CrawlArgs),
    /// Runs the REST service (API under /thirdparty/v1) on a SQLite file.
    Serve(serve::ServeArgs),
    /// Manages the service's users.
    User(user::UserArgs),
}

/// Runs the command; the exit code says how it went.
pub async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Check(args) => check::run(args).await,
        Command::Crawl(args) => crawl::run(args).await,
        Command::Serve(args) => serve::run(args).await,
        Command::User(args) => user::run(args).await,
    }
}
