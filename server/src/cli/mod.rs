//! Command-line parsing and dispatch. Each subcommand has its own module.

mod check;
mod crawl;
mod page;

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
}

/// Runs the command; the exit code says how it went.
pub async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Check(args) => check::run(args).await,
        Command::Crawl(args) => crawl::run(args).await,
    }
}
