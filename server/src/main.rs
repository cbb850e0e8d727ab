//! The `wachet` binary: the command line over the wachet engine, and the REST service.

use clap::Parser;
use std::io::IsTerminal;
use std::process::ExitCode;
use wachet_server::cli;

#[tokio::main]
async fn main() -> ExitCode {
    let args = cli::Cli::parse();
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(args.default_log_filter()));
    // Colour only for a person at a terminal: escape codes corrupt log files and collectors.
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    match args.log_format {
        cli::LogFormat::Text => logs.init(),
        cli::LogFormat::Json => logs.json().init(),
    }
    match cli::run(args).await {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(2)
        }
    }
}
