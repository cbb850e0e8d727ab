//! `wachet check`: one check of one page, the value on stdout (or one ClientData JSON object
//! with `--json`). Private networks are allowed: this is a local tool run by its user.
//! Exit codes: 0 the check succeeded, 1 the check failed, 2 the input was invalid.

use anyhow::Context;
use clap::Args;
use std::process::ExitCode;
use std::time::Duration;
use wachet::model::HeaderPair;
use wachet::{Checker, Engine, EngineBuilder, Monitor};

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The page to check (http or https).
    url: String,
    /// XPath 1.0 expression selecting the watched content.
    #[arg(long)]
    xpath: Option<String>,
    /// XPath 1.0 expression selecting content to leave out.
    #[arg(long)]
    exclude_xpath: Option<String>,
    /// Regular expression applied to the content (the first group, when it has one).
    #[arg(long)]
    regex: Option<String>,
    /// HTTP method.
    #[arg(long, default_value = "GET")]
    method: String,
    /// A request header, 'Name: value'; repeatable.
    #[arg(long = "header", value_name = "NAME: VALUE")]
    headers: Vec<String>,
    /// Request body.
    #[arg(long)]
    body: Option<String>,
    /// Seconds the fetch may take, body included.
    #[arg(long, default_value_t = 30.0)]
    timeout: f64,
    /// Render the page with headless Chromium first (dynamicContent).
    #[arg(long)]
    dynamic: bool,
    /// With --dynamic: scroll to the bottom until the page stops growing (scrollPage).
    #[arg(long, requires = "dynamic")]
    scroll: bool,
    /// Print one ClientData JSON object instead of the value.
    #[arg(long)]
    json: bool,
}

pub async fn run(args: CheckArgs) -> anyhow::Result<ExitCode> {
    let engine = local_engine(args.timeout)?.build()?;
    let mut monitor = Monitor::new(args.url);
    monitor.x_path = args.xpath;
    monitor.exclude_x_path = args.exclude_xpath;
    monitor.regex = args.regex;
    monitor.dynamic_content = args.dynamic;
    monitor.scroll_page = args.scroll;
    monitor.method = Some(args.method);
    monitor.body = args.body;
    monitor.headers = Some(parse_headers(&args.headers)?);
    let outcome = match engine.check(&monitor).await {
        Ok(outcome) => outcome,
        Err(invalid) => {
            for e in &invalid.errors {
                eprintln!("error: {}: {}", e.field, e.message);
            }
            return Ok(ExitCode::from(2));
        }
    };
    if args.json {
        println!("{}", serde_json::to_string(&outcome.data)?);
    } else if let Some(value) = outcome.value() {
        println!("{value}");
    }
    match outcome.error() {
        Some(err) => {
            eprintln!("error: {err}");
            Ok(ExitCode::from(1))
        }
        None => Ok(ExitCode::SUCCESS),
    }
}

/// The engine settings for local use: private networks allowed, the given timeout.
pub(crate) fn local_engine(timeout_secs: f64) -> anyhow::Result<EngineBuilder> {
    let timeout = Duration::try_from_secs_f64(timeout_secs)
        .ok()
        .filter(|t| !t.is_zero())
        .with_context(|| {
            format!("--timeout must be a positive number of seconds, not {timeout_secs}")
        })?;
    Ok(Engine::builder()
        .allow_private_networks(true)
        .total_timeout(timeout)
        .connect_timeout(timeout.min(Duration::from_secs(10))))
}

pub(crate) fn parse_headers(raw: &[String]) -> anyhow::Result<Vec<HeaderPair>> {
    raw.iter()
        .map(|h| {
            let (name, value) = h
                .split_once(':')
                .with_context(|| format!("--header \"{h}\" must look like 'Name: value'"))?;
            Ok(HeaderPair::new(name.trim(), value.trim()))
        })
        .collect()
}
