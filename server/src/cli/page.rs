//! Options both `check` and `crawl` take: how each page's value is made (XPath, exclusion,
//! regex, rendering), the headers sent, and the fetch timeout; plus the engine they imply and
//! how invalid input is reported.

use anyhow::Context;
use clap::Args;
use std::process::ExitCode;
use std::time::Duration;
use wachet::fetch::http::HttpSettings;
use wachet::model::HeaderPair;
use wachet::{Engine, EngineBuilder, InvalidMonitor, Monitor};

#[derive(Debug, Args)]
pub struct PageArgs {
    /// XPath 1.0 expression selecting the watched content.
    #[arg(long)]
    xpath: Option<String>,
    /// XPath 1.0 expression selecting content to leave out.
    #[arg(long)]
    exclude_xpath: Option<String>,
    /// Regular expression applied to the content (the first group, when it has one).
    #[arg(long)]
    regex: Option<String>,
    /// A request header, 'Name: value'; repeatable.
    #[arg(long = "header", value_name = "NAME: VALUE")]
    headers: Vec<String>,
    /// Seconds a fetch may take, body included.
    #[arg(long, default_value_t = HttpSettings::default().total_timeout.as_secs_f64())]
    timeout: f64,
    /// Render with headless Chromium first (dynamicContent).
    #[arg(long)]
    dynamic: bool,
    /// With --dynamic: scroll to the bottom until the page stops growing (scrollPage).
    #[arg(long, requires = "dynamic")]
    scroll: bool,
    /// A PEM file of certificate authorities to trust for https besides the system's (an
    /// internal CA); repeatable.
    #[arg(long = "root-certificate", value_name = "FILE")]
    root_certificates: Vec<std::path::PathBuf>,
}

impl PageArgs {
    /// Sets these options on `monitor`.
    pub fn apply(&self, monitor: &mut Monitor) -> anyhow::Result<()> {
        monitor.x_path = self.xpath.clone();
        monitor.exclude_x_path = self.exclude_xpath.clone();
        monitor.regex = self.regex.clone();
        monitor.dynamic_content = self.dynamic;
        monitor.scroll_page = self.scroll;
        monitor.headers = Some(parse_headers(&self.headers)?);
        Ok(())
    }

    /// The engine settings for local use: private networks allowed, the given timeout.
    pub fn engine(&self) -> anyhow::Result<EngineBuilder> {
        let timeout = Duration::try_from_secs_f64(self.timeout)
            .ok()
            .filter(|t| !t.is_zero())
            .with_context(|| {
                format!(
                    "--timeout must be a positive number of seconds, not {}",
                    self.timeout
                )
            })?;
        let builder = Engine::builder()
            .allow_private_networks(true)
            .total_timeout(timeout)
            .connect_timeout(timeout.min(HttpSettings::default().connect_timeout));
        trust_root_certificates(builder, &self.root_certificates)
    }
}

/// `builder` trusting the certificate authorities in each PEM file of `files`; a file that
/// cannot be read is an error naming it (one that is not PEM fails the engine's build).
pub fn trust_root_certificates(
    mut builder: EngineBuilder,
    files: &[std::path::PathBuf],
) -> anyhow::Result<EngineBuilder> {
    for file in files {
        let pem = std::fs::read(file)
            .with_context(|| format!("--root-certificate {}: cannot read it", file.display()))?;
        builder = builder.root_certificate(pem);
    }
    Ok(builder)
}

/// Prints each problem of an invalid monitor; exit code 2.
pub fn report_invalid(invalid: &InvalidMonitor) -> ExitCode {
    for e in &invalid.errors {
        eprintln!("error: {}: {}", e.field, e.message);
    }
    ExitCode::from(2)
}

fn parse_headers(raw: &[String]) -> anyhow::Result<Vec<HeaderPair>> {
    raw.iter()
        .map(|h| {
            let (name, value) = h
                .split_once(':')
                .with_context(|| format!("--header \"{h}\" must look like 'Name: value'"))?;
            Ok(HeaderPair::new(name.trim(), value.trim()))
        })
        .collect()
}
