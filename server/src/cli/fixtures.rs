//! `wachet fixtures`: fixture regression suites from the command line, over the library's
//! `wachet::testing::Suite`. `run` prints one line a case and a diff for each failure (and
//! JUnit XML with `--junit`), exiting 1 when any case failed; `record` turns a live page into a
//! new case: the page as fetched (or as rendered), the monitor, and the outcome as expected.
//! `record` allows private networks, as `check` does: it fetches what its user asks for. `run`
//! may run a stranger's suite (a pull request in CI): each case reads only inside the suite
//! directory and reaches only its own fixture server, unless `--allow-network` and the case
//! both allow more.
//! Exit codes: 0 all passed (or recorded), 1 a case failed or the recorded check failed,
//! 2 invalid input.

use super::page::{PageArgs, report_invalid};
use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;
use wachet::testing::{
    CASE_FILE, Case, CaseReport, CaseResult, DEFAULT_PAGE, EXPECTED_FILE, Expected, ResponseSpec,
    Suite, SuiteReport,
};
use wachet::{Checker, EngineBuilder, Monitor};

#[derive(Debug, Args)]
pub struct FixturesArgs {
    #[command(subcommand)]
    command: FixturesCommand,
}

#[derive(Debug, Subcommand)]
enum FixturesCommand {
    /// Runs every case of a suite directory; exits 1 when any case fails.
    Run(RunArgs),
    /// Records a live page as a new case: the page, the monitor, the outcome as expected.
    Record(RecordArgs),
}

#[derive(Debug, Args)]
struct RunArgs {
    /// The suite directory: one folder a case (folders starting with . or _ are not cases).
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    /// Write each case's outcome to its expected.json where it differs.
    #[arg(long)]
    update: bool,
    /// Also write the results as JUnit XML to this file.
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Let cases whose case.json sets engine.allowNetwork reach beyond their fixture server
    /// (any address, private networks included). Without it such a case is an error, and
    /// every other case reaches only its own fixture server. Only for suites you trust.
    #[arg(long)]
    allow_network: bool,
}

#[derive(Debug, Args)]
struct RecordArgs {
    /// The page to record (http or https).
    url: String,
    /// The new case folder, DIR/NAME (DIR is the suite directory).
    #[arg(value_name = "DIR/NAME")]
    case: PathBuf,
    #[command(flatten)]
    page: PageArgs,
    /// Record a failing check (HTTP status >= 400, nothing matched, ...) with its error as the
    /// expected outcome.
    #[arg(long)]
    allow_error: bool,
    /// Replace DIR/NAME when it exists.
    #[arg(long)]
    force: bool,
}

pub async fn run(args: FixturesArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        FixturesCommand::Run(args) => run_suite(args).await,
        FixturesCommand::Record(args) => record(args).await,
    }
}

async fn run_suite(args: RunArgs) -> anyhow::Result<ExitCode> {
    let report = Suite::builder(&args.dir)
        .update(args.update)
        .allow_network(args.allow_network)
        .build()
        .run()
        .await?;
    let mut out = String::new();
    for case in &report.cases {
        print_case(&mut out, case);
    }
    let count = |f: fn(&CaseResult) -> bool| report.cases.iter().filter(|c| f(&c.result)).count();
    let _ = writeln!(
        out,
        "{} cases: {} passed, {} updated, {} failed, {} errors",
        report.cases.len(),
        count(|r| matches!(r, CaseResult::Passed)),
        count(|r| matches!(r, CaseResult::Updated { .. })),
        count(|r| matches!(r, CaseResult::Failed { .. })),
        count(|r| matches!(r, CaseResult::Error(_))),
    );
    print!("{out}");
    if let Some(file) = &args.junit {
        let suite_name = args.dir.file_name().map_or_else(
            || args.dir.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        write_file(file, junit(&suite_name, &report).as_bytes())
            .with_context(|| format!("cannot write {}", file.display()))?;
    }
    Ok(if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn print_case(out: &mut String, case: &CaseReport) {
    let secs = case.elapsed.as_secs_f64();
    let _ = match &case.result {
        CaseResult::Passed => writeln!(out, "ok      {} ({secs:.2} s)", case.name),
        CaseResult::Updated { diff: None } => {
            writeln!(out, "written {} ({secs:.2} s)", case.name)
        }
        CaseResult::Updated { diff: Some(diff) } => {
            writeln!(out, "updated {} ({secs:.2} s)\n{}", case.name, indent(diff))
        }
        CaseResult::Failed { diff } => {
            writeln!(out, "FAILED  {} ({secs:.2} s)\n{}", case.name, indent(diff))
        }
        CaseResult::Error(err) => writeln!(out, "ERROR   {}: {err}", case.name),
    };
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("    {l}\n")).collect()
}

/// The report as JUnit XML: one `<testsuite>` named after the suite directory, one
/// `<testcase>` a case, with `<failure>` (the diff) or `<error>` (why it could not run).
fn junit(suite: &str, report: &SuiteReport) -> String {
    let failures = report
        .cases
        .iter()
        .filter(|c| matches!(c.result, CaseResult::Failed { .. }))
        .count();
    let errors = report
        .cases
        .iter()
        .filter(|c| matches!(c.result, CaseResult::Error(_)))
        .count();
    let total: Duration = report.cases.iter().map(|c| c.elapsed).sum();
    let suite = xml_escape(suite);
    let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        xml,
        "<testsuites name=\"wachet fixtures\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\" time=\"{:.3}\">",
        report.cases.len(),
        total.as_secs_f64()
    );
    let _ = writeln!(
        xml,
        "  <testsuite name=\"{suite}\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"0\" time=\"{:.3}\">",
        report.cases.len(),
        total.as_secs_f64()
    );
    for case in &report.cases {
        let _ = write!(
            xml,
            "    <testcase classname=\"{suite}\" name=\"{}\" time=\"{:.3}\"",
            xml_escape(&case.name),
            case.elapsed.as_secs_f64()
        );
        match &case.result {
            CaseResult::Passed | CaseResult::Updated { .. } => xml.push_str("/>\n"),
            CaseResult::Failed { diff } => {
                let _ = writeln!(
                    xml,
                    ">\n      <failure message=\"the outcome differs from {EXPECTED_FILE}\" type=\"diff\">{}</failure>\n    </testcase>",
                    xml_text(diff)
                );
            }
            CaseResult::Error(err) => {
                let message = err.to_string();
                let _ = writeln!(
                    xml,
                    ">\n      <error message=\"{}\" type=\"case\">{}</error>\n    </testcase>",
                    xml_escape(&message),
                    xml_text(&message)
                );
            }
        }
    }
    xml.push_str("  </testsuite>\n</testsuites>\n");
    xml
}

/// Text for XML attribute values. Characters XML 1.0 cannot carry at all (most C0 controls)
/// become U+FFFD rather than making the file unparsable.
fn xml_escape(text: &str) -> String {
    escape(text, true)
}

/// Text for XML element content, where line breaks can stay as they are.
fn xml_text(text: &str) -> String {
    escape(text, false)
}

fn escape(text: &str, attribute: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // Attribute values normalize raw white space; character references keep it. A raw
            // carriage return would become a line feed even in content.
            '\n' if attribute => out.push_str("&#10;"),
            '\t' if attribute => out.push_str("&#9;"),
            '\n' | '\t' => out.push(c),
            '\r' => out.push_str("&#13;"),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// Writes `file` through a sibling temporary file, so a reader never sees half of it.
fn write_file(file: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut tmp = file.as_os_str().to_owned();
    tmp.push(format!(".{}.tmp", std::process::id()));
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, file).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

async fn record(args: RecordArgs) -> anyhow::Result<ExitCode> {
    let case_dir = args.case.clone();
    let name = case_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .with_context(|| format!("{} does not end in a case name", case_dir.display()))?;
    if name.starts_with('.') || name.starts_with('_') {
        bail!("a case name cannot start with '.' or '_' (the suite skips such folders): {name}");
    }
    let suite_dir = match case_dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let exists = case_dir.symlink_metadata().is_ok();
    if exists && !args.force {
        bail!("{} already exists; --force replaces it", case_dir.display());
    }

    let engine = args.page.engine()?;
    let mut monitor = Monitor::new(args.url.clone());
    args.page.apply(&mut monitor)?;
    if monitor.headers.as_ref().is_some_and(Vec::is_empty) {
        monitor.headers = None;
    }
    let mut live = monitor.clone();
    live.collect_raw_html = true;
    let outcome = match engine.clone().build()?.check(&live).await {
        Ok(outcome) => outcome,
        Err(invalid) => return Ok(report_invalid(&invalid)),
    };
    if let Some(err) = outcome.error()
        && !args.allow_error
    {
        eprintln!(
            "error: the check failed: {err}\nnothing recorded (--allow-error records the error as the expected outcome)"
        );
        return Ok(ExitCode::from(1));
    }
    let Some(html) = &outcome.raw_html else {
        eprintln!(
            "error: no page arrived ({}); a fixture server cannot replay that, so nothing was recorded",
            outcome.error().unwrap_or("no response")
        );
        return Ok(ExitCode::from(1));
    };

    // The case replays the page as it was decoded (or rendered), so it is stored as UTF-8 and
    // served with that charset whatever the page declared; a rendered page is checked as it is,
    // without rendering it again.
    let mime = outcome
        .content_type
        .as_deref()
        .and_then(|t| t.split(';').next())
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .unwrap_or("text/html");
    let rendered = monitor.dynamic_content;
    monitor.dynamic_content = false;
    monitor.scroll_page = false;
    let case = Case {
        description: Some(format!(
            "recorded from {} on {}{}",
            args.url,
            chrono::Utc::now().format("%Y-%m-%d %H:%M UTC"),
            if rendered {
                " (the DOM as rendered by Chromium)"
            } else {
                ""
            }
        )),
        monitor,
        page: None,
        site: None,
        response: Some(ResponseSpec {
            status: outcome.status.unwrap_or(200),
            headers: [("content-type".to_string(), format!("{mime}; charset=utf-8"))].into(),
        }),
        engine: None,
    };
    let expected = Expected::from_outcome(&outcome, "");

    // A suite folder made for this case goes again if the case does not come about.
    let made_suite_dir = !suite_dir.exists();
    std::fs::create_dir_all(&suite_dir)
        .with_context(|| format!("cannot create {}", suite_dir.display()))?;
    let staging = suite_dir.join(format!(".{name}.recording-{}", std::process::id()));
    let placed = place_case(&staging, &case_dir, exists, engine, html, &case, &expected).await;
    if !matches!(placed, Ok(Ok(()))) {
        let _ = std::fs::remove_dir_all(&staging);
        if made_suite_dir {
            let _ = std::fs::remove_dir(&suite_dir);
        }
    }
    if let Err(why) = placed? {
        eprintln!("error: {why}\nnothing recorded");
        return Ok(ExitCode::from(1));
    }
    println!("recorded {}", case_dir.display());
    match (&expected.raw, &expected.error) {
        (_, Some(err)) => println!("expected error: {err}"),
        (Some(raw), None) => println!("expected value: {raw}"),
        (None, None) => {}
    }
    Ok(ExitCode::SUCCESS)
}

/// Stages the case, replays it, and moves it into place: `Ok(Err(why))` when the replay does not
/// give the live outcome.
async fn place_case(
    staging: &Path,
    case_dir: &Path,
    exists: bool,
    engine: EngineBuilder,
    html: &str,
    case: &Case,
    expected: &Expected,
) -> anyhow::Result<Result<(), String>> {
    stage(staging, html, case, expected)?;
    let suite_dir = staging.parent().unwrap_or(Path::new("."));
    let verdict = Suite::builder(suite_dir)
        .engine(engine)
        .build()
        .run_case(staging)
        .await;
    match verdict.result {
        CaseResult::Passed => {}
        CaseResult::Failed { diff } => {
            return Ok(Err(format!(
                "the recorded page does not give the live outcome when replayed:\n{}",
                indent(&diff)
            )));
        }
        CaseResult::Error(err) => return Ok(Err(format!("the recorded case does not run: {err}"))),
        CaseResult::Updated { .. } => return Ok(Err("the recorded case was rewritten".into())),
    }
    put_in_place(staging, case_dir, exists)?;
    Ok(Ok(()))
}

/// Writes the case's three files into `staging`, a new folder.
fn stage(staging: &Path, html: &str, case: &Case, expected: &Expected) -> anyhow::Result<()> {
    std::fs::create_dir(staging).with_context(|| format!("cannot create {}", staging.display()))?;
    for (file, text) in [
        (DEFAULT_PAGE, html.to_string()),
        (CASE_FILE, case.to_json()),
        (EXPECTED_FILE, expected.to_json()),
    ] {
        let path = staging.join(file);
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

/// Renames the staged case into place; an existing case (with `--force`) is moved aside first
/// and deleted only once the new one is there.
fn put_in_place(staging: &Path, case_dir: &Path, exists: bool) -> anyhow::Result<()> {
    let aside = exists.then(|| {
        let mut path = staging.as_os_str().to_owned();
        path.push(".old");
        PathBuf::from(path)
    });
    if let Some(aside) = &aside {
        std::fs::rename(case_dir, aside)
            .with_context(|| format!("cannot move {} aside", case_dir.display()))?;
    }
    if let Err(err) = std::fs::rename(staging, case_dir) {
        if let Some(aside) = &aside {
            let _ = std::fs::rename(aside, case_dir);
        }
        return Err(err).with_context(|| format!("cannot create {}", case_dir.display()));
    }
    if let Some(aside) = &aside {
        let removed = if aside.is_dir() {
            std::fs::remove_dir_all(aside)
        } else {
            std::fs::remove_file(aside)
        };
        removed.with_context(|| format!("cannot remove the old case at {}", aside.display()))?;
    }
    Ok(())
}
