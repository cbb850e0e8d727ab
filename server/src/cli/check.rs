//! `wachet check`: one check of one page, the value on stdout (or one ClientData JSON object
//! with `--json`). Private networks are allowed: this is a local tool run by its user.
//! Exit codes: 0 the check succeeded, 1 the check failed, 2 the input was invalid.

use super::page::{PageArgs, report_invalid};
use clap::Args;
use std::process::ExitCode;
use wachet::{Checker, Monitor};

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The page to check (http or https).
    url: String,
    #[command(flatten)]
    page: PageArgs,
    /// HTTP method.
    #[arg(long, default_value = "GET")]
    method: String,
    /// Request body.
    #[arg(long)]
    body: Option<String>,
    /// Print one ClientData JSON object instead of the value.
    #[arg(long)]
    json: bool,
    /// Browser steps to run on the page before its value is taken (the check is then
    /// rendered): a JSON file holding a list of steps, or an object with `steps` and `login`
    /// as a monitor has them.
    #[arg(long, value_name = "FILE")]
    steps: Option<std::path::PathBuf>,
}

/// A `--steps` file: a list of steps, or a monitor's `steps` and `login`.
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum StepsFile {
    List(Vec<wachet::model::Step>),
    Monitor {
        #[serde(default)]
        steps: Option<Vec<wachet::model::Step>>,
        #[serde(default)]
        login: Option<wachet::model::Login>,
    },
}

pub async fn run(args: CheckArgs) -> anyhow::Result<ExitCode> {
    let engine = args.page.engine()?.build()?;
    let mut monitor = Monitor::new(args.url);
    args.page.apply(&mut monitor)?;
    monitor.method = Some(args.method);
    monitor.body = args.body;
    if let Some(path) = &args.steps {
        let text = std::fs::read(path)
            .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
        match wachet::model::from_json::<StepsFile>(&text) {
            Ok(StepsFile::List(steps)) => monitor.steps = Some(steps),
            Ok(StepsFile::Monitor { steps, login }) => {
                monitor.steps = steps;
                monitor.login = login;
            }
            Err(e) => {
                eprintln!(
                    "error: {}: not a list of steps nor an object with steps and login ({})",
                    path.display(),
                    e.message
                );
                return Ok(ExitCode::from(2));
            }
        }
    }
    let outcome = match engine.check(&monitor).await {
        Ok(outcome) => outcome,
        Err(invalid) => return Ok(report_invalid(&invalid)),
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
