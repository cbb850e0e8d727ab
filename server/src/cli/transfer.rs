//! `wachet export`: writes a user's folders, monitors and notification endpoints (and with
//! `--history`, their history) as one JSON document to a file or stdout, streamed.
//! `wachet import FILE`: reads a wachet export, a changedetection.io backup, an urlwatch or
//! webchanges jobs file or a Wachete XLSX export, prints what comes in and what is not carried
//! over, and stores it all or nothing (`--dry-run`: nothing). Both work while the service runs
//! on the same database (the service sees imported monitors within its cache's few seconds).
//! `wachet export --secrets` writes the monitors' secrets encrypted to a passphrase, which both
//! commands read from `--passphrase-file` or the `WACHET_PASSPHRASE` environment variable (never
//! from an argument, which other users of the machine see, and never echoed).
//! Exit codes: 0 done, 1 the file was refused (nothing stored), 2 any other failure.

use super::serve::DbArg;
use crate::store::sqlite::StoreSettings;
use crate::store::{Quotas, Store};
use crate::transfer::{self, ImportError, ImportRequest, Report, export};
use anyhow::Context;
use clap::Args;
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

/// The user a command acts for.
#[derive(Debug, Args)]
pub struct UserArg {
    /// The user's e-mail address (by default the user `wachet serve` made first).
    #[arg(
        long = "user",
        env = "WACHET_ADMIN_EMAIL",
        default_value = "admin@localhost"
    )]
    user: String,
}

impl UserArg {
    async fn id(&self, store: &dyn Store) -> anyhow::Result<String> {
        let email = self.user.trim().to_lowercase();
        let user = store
            .user_by_email(&email)
            .await?
            .with_context(|| format!("no user has the e-mail address {email}"))?;
        Ok(user.id)
    }
}

/// Settings of `wachet export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    #[command(flatten)]
    db: DbArg,
    #[command(flatten)]
    user: UserArg,
    /// Write each monitor's history too.
    #[arg(long)]
    history: bool,
    /// The file to write (stdout when omitted or `-`).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<std::path::PathBuf>,
    /// Write the monitors' secrets too (secret step values, notification endpoints' values),
    /// encrypted to the passphrase of --passphrase-file or WACHET_PASSPHRASE.
    #[arg(long)]
    secrets: bool,
    #[command(flatten)]
    passphrase: PassphraseArg,
}

/// Where the passphrase of an export's secrets comes from.
#[derive(Debug, Args)]
pub struct PassphraseArg {
    /// A file whose first line is the passphrase of the export's secrets (else the
    /// WACHET_PASSPHRASE environment variable).
    #[arg(long, value_name = "FILE")]
    passphrase_file: Option<std::path::PathBuf>,
}

/// The environment variable a passphrase may come from.
const PASSPHRASE_ENV: &str = "WACHET_PASSPHRASE";
/// The largest passphrase file read.
const MAX_PASSPHRASE_FILE: u64 = 4096;

impl PassphraseArg {
    /// The passphrase: the file's first line (without its line end), else the environment's;
    /// `None` when neither gives one. Errors name the file, never what it holds.
    fn read(&self) -> anyhow::Result<Option<String>> {
        let Some(path) = &self.passphrase_file else {
            return Ok(std::env::var(PASSPHRASE_ENV).ok().filter(|p| !p.is_empty()));
        };
        let size = std::fs::metadata(path)
            .with_context(|| format!("cannot read {}", path.display()))?
            .len();
        anyhow::ensure!(
            size <= MAX_PASSPHRASE_FILE,
            "{} is larger than a passphrase file ({MAX_PASSPHRASE_FILE} bytes at most)",
            path.display()
        );
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {} as text", path.display()))?;
        let line = text.lines().next().unwrap_or_default();
        anyhow::ensure!(!line.is_empty(), "{} holds no passphrase", path.display());
        Ok(Some(line.to_string()))
    }
}

/// Settings of `wachet import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The file: a wachet export (.json), a changedetection.io backup (.zip), an urlwatch
    /// urls.yaml or webchanges jobs.yaml, a Wachete export (.xlsx). Its kind is read from its
    /// content.
    file: std::path::PathBuf,
    #[command(flatten)]
    db: DbArg,
    #[command(flatten)]
    user: UserArg,
    /// Print what would come in; store nothing.
    #[arg(long)]
    dry_run: bool,
    /// Bring the history too (changedetection.io's snapshots, an export's entries).
    #[arg(long)]
    history: bool,
    #[command(flatten)]
    passphrase: PassphraseArg,
    /// Shortest interval of an active monitor, in seconds, as `wachet serve` has it.
    #[arg(long, env = "WACHET_MIN_RECURRENCE", default_value_t = 60,
          value_parser = clap::value_parser!(i32).range(1..))]
    min_recurrence: i32,
    /// Monitors one user may have, as `wachet serve` has it.
    #[arg(long, env = "WACHET_MAX_MONITORS_PER_USER", default_value_t = Quotas::default().monitors,
          value_parser = clap::value_parser!(u64).range(1..))]
    max_monitors_per_user: u64,
}

/// Writes chunks to a file or stdout as they come.
struct WriteSink(Box<dyn Write + Send>);

#[async_trait::async_trait]
impl export::Sink for WriteSink {
    async fn write(&mut self, chunk: Vec<u8>) -> std::io::Result<()> {
        self.0.write_all(&chunk)
    }
}

pub async fn run_export(args: ExportArgs) -> anyhow::Result<ExitCode> {
    let passphrase = match args.secrets {
        true => Some(args.passphrase.read()?.with_context(|| {
            format!("--secrets needs a passphrase: --passphrase-file FILE or {PASSPHRASE_ENV}")
        })?),
        false => None,
    };
    let store = args.db.open().await?;
    let result = async {
        let user = args.user.id(store.store()).await?;
        let secrets = match passphrase {
            Some(passphrase) => {
                // The key of the stored secrets, made from the store's secret as the service's.
                let secret = store.store().paging_secret().await?;
                let sealer = crate::secrets::Sealer::new(&secret).map_err(anyhow::Error::msg)?;
                let made = crate::ops::transfer::with_secrets(Arc::new(sealer), &passphrase);
                Some(Arc::new(made.map_err(anyhow::Error::msg)?))
            }
            None => None,
        };
        let to_file = args.output.as_ref().filter(|p| p.as_os_str() != "-");
        let writer: Box<dyn Write + Send> = match to_file {
            Some(path) => {
                let mut options = std::fs::OpenOptions::new();
                options.write(true).create(true).truncate(true);
                // A file that carries secrets is its owner's alone, however well encrypted.
                #[cfg(unix)]
                {
                    use std::os::unix::fs::OpenOptionsExt;
                    if args.secrets {
                        options.mode(0o600);
                    }
                }
                Box::new(std::io::BufWriter::new(
                    options
                        .open(path)
                        .with_context(|| format!("cannot create {}", path.display()))?,
                ))
            }
            None => Box::new(std::io::stdout()),
        };
        let mut sink = WriteSink(writer);
        let options = export::ExportOptions {
            history: args.history,
            secrets,
        };
        let written = export::export(store.store(), &user, options, &mut sink).await?;
        sink.0.flush().context("writing the export")?;
        if let Some(path) = to_file {
            // Whole on disk before it is called done.
            std::fs::File::open(path).and_then(|f| f.sync_all()).ok();
        }
        eprintln!(
            "exported {} folder(s), {} monitor(s), {} history entries",
            written.folders, written.monitors, written.entries
        );
        if args.secrets {
            eprintln!("{} secret(s) encrypted to the passphrase", written.secrets);
        }
        if written.unopened > 0 {
            eprintln!(
                "warning: {} secret(s) did not open with the service's key and were left out",
                written.unopened
            );
        }
        anyhow::Ok(())
    }
    .await;
    store.close().await;
    result.map(|()| ExitCode::SUCCESS)
}

pub async fn run_import(args: ImportArgs) -> anyhow::Result<ExitCode> {
    let bytes = read_file(&args.file)?;
    let passphrase = args.passphrase.read()?;
    let store = args
        .db
        .open_with(&StoreSettings {
            quotas: Quotas {
                monitors: args.max_monitors_per_user,
                ..Quotas::default()
            },
            ..StoreSettings::default()
        })
        .await?;
    let result = async {
        let user = args.user.id(store.store()).await?;
        let checker: Arc<dyn wachet::Checker> = Arc::new(wachet::Engine::builder().build()?);
        // The rules the service's saves pass, and its key for notification URLs' secrets.
        let secret = store.store().paging_secret().await?;
        let sealer = crate::secrets::Sealer::new(&secret).map_err(anyhow::Error::msg)?;
        let context =
            crate::ops::transfer::import_context(checker, args.min_recurrence, Arc::new(sealer));
        let request = ImportRequest {
            bytes: &bytes,
            media_type: None,
            history: args.history,
            dry_run: args.dry_run,
            passphrase: passphrase.as_deref(),
        };
        anyhow::Ok(transfer::import(store.store(), &context, &user, request).await)
    }
    .await;
    store.close().await;
    match result? {
        Ok(report) => {
            print_report(&report);
            Ok(ExitCode::SUCCESS)
        }
        Err(ImportError::Invalid(problems)) => {
            eprintln!("error: the file's monitors are invalid; nothing was imported:");
            for p in &problems {
                match p.field.is_empty() {
                    true => eprintln!("  {}: {}", p.item, p.message),
                    false => eprintln!("  {}: {}: {}", p.item, p.field, p.message),
                }
            }
            Ok(ExitCode::from(1))
        }
        Err(ImportError::Read(err)) => {
            eprintln!("error: {err}");
            Ok(ExitCode::from(1))
        }
        Err(ImportError::Store(crate::store::StoreError::QuotaExceeded { limit, message })) => {
            eprintln!("error: {limit}: {message}; nothing was imported");
            Ok(ExitCode::from(1))
        }
        Err(ImportError::Store(err)) => Err(anyhow::anyhow!("{err}; nothing was imported")),
    }
}

/// The file, refused unread when larger than an import reads.
fn read_file(path: &std::path::Path) -> anyhow::Result<Vec<u8>> {
    let size = std::fs::metadata(path)
        .with_context(|| format!("cannot read {}", path.display()))?
        .len();
    if size > transfer::MAX_FILE_BYTES as u64 {
        anyhow::bail!(
            "{} is {size} bytes, more than the {} MiB an import reads",
            path.display(),
            transfer::MAX_FILE_BYTES / 1024 / 1024
        );
    }
    std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))
}

fn print_report(report: &Report) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "format: {}", report.format.label());
    for folder in &report.folders {
        let state = if folder.created { "new" } else { "existing" };
        let _ = writeln!(out, "folder: {} ({state})", folder.path);
    }
    for monitor in &report.monitors {
        let folder = monitor.folder.as_deref().unwrap_or("(root)");
        let _ = writeln!(
            out,
            "monitor: {} -> {} in {folder}",
            monitor.item, monitor.url
        );
    }
    for left in &report.left_out {
        let _ = writeln!(
            out,
            "not carried over: {}: {}: {}",
            left.item, left.what, left.reason
        );
    }
    let verb = if report.dry_run {
        "would import"
    } else {
        "imported"
    };
    let _ = writeln!(
        out,
        "{verb} {} monitor(s), {} new folder(s), {} history entries; {} item(s) or setting(s) not carried over",
        report.monitors.len(),
        report.folders.iter().filter(|f| f.created).count(),
        report.history_entries,
        report.left_out.len()
    );
}
