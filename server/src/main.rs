//! The `wachet` binary: the command line over the wachet engine, and the REST service.

use clap::Parser;
use std::process::ExitCode;
use wachet_server::cli;

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,chromiumoxide=off")),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = cli::Cli::parse();
    match cli::run(args).await {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(2)
        }
    }
}
