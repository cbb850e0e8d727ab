//! Moving in and out: a user's folders and monitors written out as one versioned JSON document
//! ([`export`]), and files of other tools (and of wachet itself) read into a [`Plan`] of folders
//! and monitors, with every item or setting that cannot be carried over named with its reason,
//! then stored all or nothing ([`apply`]). Each source format is one file: [`wachet`] (an
//! export), [`changedetection`] (a changedetection.io backup zip, either layout), [`urlwatch`]
//! (urlwatch's `urls.yaml`, webchanges' `jobs.yaml`), [`wachete_xlsx`] (Wachete's XLSX export);
//! [`Format`] lists them once, and [`read`] picks one by media type or by the file's first
//! bytes. [`import`] is the one operation the command line, the API and the web interface
//! call. What a zip may hold (size, entries, paths) is bounded in [`archive`]; CSS selectors
//! become XPath in [`css`].

pub mod apply;
mod archive;
mod changedetection;
mod css;
pub mod export;
pub mod passphrase;
mod urlwatch;
mod wachet;
mod wachete_xlsx;

use crate::store::{Store, StoreError};
use ::wachet::model::{ClientData, Folder, Monitor};
use serde::Serialize;
use std::sync::Arc;

/// Largest file an import reads (the API's body, the command line's file).
pub const MAX_FILE_BYTES: usize = 64 * 1024 * 1024;

/// How often a monitor from a file that does not say is checked: hourly.
pub const DEFAULT_RECURRENCE: i32 = 3600;

/// The formats an import reads, one file each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Format {
    /// A wachet export ([`export`]).
    Wachet,
    /// A changedetection.io backup zip.
    Changedetection,
    /// An urlwatch `urls.yaml` or a webchanges `jobs.yaml`.
    Urlwatch,
    /// A Wachete XLSX export.
    WacheteXlsx,
}

impl Format {
    /// Every format, in the order the sniffing tries them.
    pub const ALL: [Format; 4] = [
        Format::Wachet,
        Format::Changedetection,
        Format::Urlwatch,
        Format::WacheteXlsx,
    ];

    /// The name a person reads.
    pub fn label(self) -> &'static str {
        match self {
            Format::Wachet => "wachet export",
            Format::Changedetection => "changedetection.io backup",
            Format::Urlwatch => "urlwatch / webchanges jobs",
            Format::WacheteXlsx => "Wachete XLSX export",
        }
    }

    /// The media types that name this format.
    pub fn media_types(self) -> &'static [&'static str] {
        match self {
            Format::Wachet => &["application/json", "application/vnd.wachet.export+json"],
            Format::Changedetection => &["application/zip", "application/x-zip-compressed"],
            Format::Urlwatch => &[
                "application/yaml",
                "application/x-yaml",
                "text/yaml",
                "text/x-yaml",
            ],
            Format::WacheteXlsx => {
                &["application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"]
            }
        }
    }

    /// Whether `bytes` look like this format.
    fn sniff(self, bytes: &[u8]) -> bool {
        match self {
            Format::Wachet => wachet::sniff(bytes),
            Format::Changedetection => changedetection::sniff(bytes),
            Format::Urlwatch => urlwatch::sniff(bytes),
            Format::WacheteXlsx => wachete_xlsx::sniff(bytes),
        }
    }

    fn read(self, bytes: &[u8], options: &ReadOptions) -> Result<Plan, ReadError> {
        match self {
            Format::Wachet => wachet::read(bytes, options),
            Format::Changedetection => changedetection::read(bytes, options),
            Format::Urlwatch => urlwatch::read(bytes),
            Format::WacheteXlsx => wachete_xlsx::read(bytes),
        }
    }
}

/// What a reader is asked for.
#[derive(Clone, Copy, Default)]
pub struct ReadOptions<'a> {
    /// Bring the history too (changedetection.io's snapshots, a wachet export's entries).
    pub history: bool,
    /// The passphrase a wachet export's secrets are encrypted to ([`passphrase`]).
    pub passphrase: Option<&'a str>,
}

impl std::fmt::Debug for ReadOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadOptions")
            .field("history", &self.history)
            .field("passphrase", &self.passphrase.map(|_| "(given)"))
            .finish()
    }
}

/// A folder to have: found by name under its parent, or created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedFolder {
    /// Its name.
    pub name: String,
    /// Its parent, an index into [`Plan::folders`] that comes before it (root when `None`).
    pub parent: Option<usize>,
    /// The endpoints it names for its monitors, when the file gives some (a wachet export):
    /// set on the folder when the import creates it.
    pub notification_endpoints: Vec<::wachet::model::NotificationEndpoint>,
}

/// A monitor to create.
#[derive(Debug, Clone)]
pub struct PlannedMonitor {
    /// Which item of the file it comes from, as a person finds it there (a job's number and
    /// name, a watch's title, a row).
    pub item: String,
    /// The monitor, without id; its `folder_id` is set when stored.
    pub monitor: Monitor,
    /// Its folder, an index into [`Plan::folders`] (root when `None`).
    pub folder: Option<usize>,
    /// Its history, oldest first (with the history asked for).
    pub history: Vec<ClientData>,
}

/// Something of the file that is not carried over, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LeftOut {
    /// The item it belongs to (as [`PlannedMonitor::item`]), or the file.
    pub item: String,
    /// What is left out: the whole item, or one of its settings.
    pub what: String,
    /// Why.
    pub reason: String,
}

/// What an import would bring in.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The format read.
    pub format: Format,
    /// Folders, parents before children.
    pub folders: Vec<PlannedFolder>,
    /// Monitors, in the file's order.
    pub monitors: Vec<PlannedMonitor>,
    /// What is not carried over.
    pub left_out: Vec<LeftOut>,
}

impl Plan {
    fn new(format: Format) -> Plan {
        Plan {
            format,
            folders: Vec::new(),
            monitors: Vec::new(),
            left_out: Vec::new(),
        }
    }

    /// Notes that `what` of `item` is not carried over.
    fn leave_out(&mut self, item: &str, what: impl Into<String>, reason: impl Into<String>) {
        self.left_out.push(LeftOut {
            item: item.to_string(),
            what: what.into(),
            reason: reason.into(),
        });
    }

    /// The index of the root folder named `name`, added when new.
    fn root_folder(&mut self, name: &str) -> usize {
        self.folder(name, None)
    }

    /// The index of the folder named `name` under `parent`, added when new.
    fn folder(&mut self, name: &str, parent: Option<usize>) -> usize {
        let name = name.trim();
        match self
            .folders
            .iter()
            .position(|f| f.name == name && f.parent == parent)
        {
            Some(i) => i,
            None => {
                self.folders.push(PlannedFolder {
                    name: name.to_string(),
                    parent,
                    notification_endpoints: Vec::new(),
                });
                self.folders.len() - 1
            }
        }
    }

    /// The path of folder `i` for a person: `News / Local`.
    pub fn folder_path(&self, i: usize) -> String {
        let mut names = Vec::new();
        let mut at = Some(i);
        // Parents come before children, so the walk ends; the bound guards a bad plan.
        while let Some(i) = at.filter(|_| names.len() <= self.folders.len()) {
            let Some(folder) = self.folders.get(i) else {
                break;
            };
            names.push(folder.name.as_str());
            at = folder.parent;
        }
        names.reverse();
        names.join(" / ")
    }

    /// Leaves out the later of two monitors that watch the same thing (URL, method, body and
    /// selection), naming the first.
    fn drop_duplicates(&mut self) {
        let mut seen: std::collections::HashMap<String, String> = Default::default();
        let mut kept = Vec::with_capacity(self.monitors.len());
        for planned in std::mem::take(&mut self.monitors) {
            let key = same_thing(&planned.monitor);
            match seen.get(&key) {
                Some(first) => {
                    let reason = format!("it watches the same as {first}");
                    self.leave_out(&planned.item, "the whole item", reason);
                }
                None => {
                    seen.insert(key, planned.item.clone());
                    kept.push(planned);
                }
            }
        }
        self.monitors = kept;
    }
}

/// What two monitors watching the same thing share.
pub(crate) fn same_thing(monitor: &Monitor) -> String {
    serde_json::json!([
        monitor.url.as_deref().unwrap_or("").trim(),
        monitor
            .method
            .as_deref()
            .unwrap_or("GET")
            .to_ascii_uppercase(),
        monitor.body,
        monitor.x_path,
        monitor.exclude_x_path,
        monitor.regex,
        monitor.job_type,
    ])
    .to_string()
}

/// Why a file cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// No reader knows it.
    #[error("{0}")]
    Unknown(String),
    /// Made by a newer version of its tool than this reader knows.
    #[error("{0}")]
    Newer(String),
    /// The archive is refused: unsafe paths or links, too large, too many entries.
    #[error("{0}")]
    Refused(String),
    /// The file is of a known format but broken.
    #[error("{0}")]
    Invalid(String),
}

/// Reads `bytes` as the format `media_type` names, or as the one whose first bytes they look
/// like when it names none (or a generic type such as `application/octet-stream`).
pub fn read(
    bytes: &[u8],
    media_type: Option<&str>,
    options: &ReadOptions,
) -> Result<Plan, ReadError> {
    if bytes.len() > MAX_FILE_BYTES {
        return Err(ReadError::Refused(format!(
            "the file is {} bytes, more than the {} MiB an import reads",
            bytes.len(),
            MAX_FILE_BYTES / 1024 / 1024
        )));
    }
    let essence = media_type
        .map(|t| {
            t.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .unwrap_or_default();
    let named = Format::ALL
        .into_iter()
        .find(|f| f.media_types().contains(&essence.as_str()));
    // A zip named as such may still be an XLSX workbook (both are zips), and JSON may be a
    // bare url-watches.json: the first bytes decide between those.
    let format = match named {
        Some(Format::Changedetection) if wachete_xlsx::sniff(bytes) => Format::WacheteXlsx,
        Some(Format::Wachet) if changedetection::sniff(bytes) => Format::Changedetection,
        Some(format) => format,
        None => Format::ALL
            .into_iter()
            .find(|f| f.sniff(bytes))
            .ok_or_else(|| {
                ReadError::Unknown(
                    "the file is none of the formats wachet imports (a wachet export, a \
                     changedetection.io backup zip, an urlwatch urls.yaml or webchanges \
                     jobs.yaml, a Wachete XLSX export)"
                        .into(),
                )
            })?,
    };
    let mut plan = format.read(bytes, options)?;
    // A restore of wachet's own export keeps what the user had, twice or not.
    if format != Format::Wachet {
        plan.drop_duplicates();
    }
    Ok(plan)
}

/// One import, as every frontend asks for it.
#[derive(Clone, Copy)]
pub struct ImportRequest<'a> {
    /// The file.
    pub bytes: &'a [u8],
    /// Its media type, when the frontend knows one.
    pub media_type: Option<&'a str>,
    /// Bring the history too.
    pub history: bool,
    /// Only say what would be stored.
    pub dry_run: bool,
    /// The passphrase a wachet export's secrets are encrypted to, when it carries them.
    pub passphrase: Option<&'a str>,
}

impl std::fmt::Debug for ImportRequest<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ImportRequest")
            .field("bytes", &self.bytes.len())
            .field("media_type", &self.media_type)
            .field("history", &self.history)
            .field("dry_run", &self.dry_run)
            .field("passphrase", &self.passphrase.map(|_| "(given)"))
            .finish()
    }
}

/// The rules each folder and monitor of a file must pass before anything is stored: the
/// service's own, as saving one checks it. The operations give them
/// ([`crate::ops::transfer::SaveRules`]); this module imports neither them nor a frontend.
pub trait Rules: Send + Sync {
    /// What is wrong with `folder`, each as its field (as the API names it) and a message.
    fn folder(&self, folder: &Folder) -> Vec<(String, String)>;
    /// What is wrong with `monitor`, each as its field (as the API names it) and a message.
    fn monitor(&self, monitor: &Monitor) -> Vec<(String, String)>;
    /// Seals the secrets of `monitor`'s notification URLs for `user` as saving it seals them;
    /// what cannot be sealed, as [`Rules::monitor`] names it.
    fn seal(&self, user: &str, monitor: &mut Monitor) -> Vec<(String, String)>;
    /// Seals the secrets of a folder's notification URLs for `user` as saving the folder seals
    /// them; what cannot be sealed, as [`Rules::folder`] names it.
    fn seal_folder(
        &self,
        user: &str,
        endpoints: &mut [::wachet::model::NotificationEndpoint],
    ) -> Vec<(String, String)>;
}

/// What the service's settings give an import.
#[derive(Clone)]
pub struct ImportContext {
    /// The rules each monitor and folder is checked against.
    pub rules: Arc<dyn Rules>,
    /// Shortest recurrence of an active monitor, in seconds (a shorter one is raised to it).
    pub min_recurrence: i32,
}

/// Why an import stored nothing.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The file could not be read.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// Monitors fail the API's validation; each problem names its item.
    #[error("{} monitor(s) of the file are invalid; nothing was imported", .0.len())]
    Invalid(Vec<apply::Problem>),
    /// The store refused or failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What an import brought in (or, dry, would bring in).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// The format read.
    pub format: Format,
    /// Whether nothing was stored (asked so).
    pub dry_run: bool,
    /// The folders the monitors go to, as paths; `created` says which are new.
    pub folders: Vec<ReportFolder>,
    /// The monitors, in the file's order.
    pub monitors: Vec<ReportMonitor>,
    /// History entries brought in with them.
    pub history_entries: usize,
    /// What is not carried over, item by item.
    pub left_out: Vec<LeftOut>,
}

/// A folder of a [`Report`].
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReportFolder {
    /// `News / Local`.
    pub path: String,
    /// Whether the import makes it (else the user has it already).
    pub created: bool,
}

/// A monitor of a [`Report`].
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReportMonitor {
    /// The item it comes from.
    pub item: String,
    /// Its name, when it has one.
    pub name: Option<String>,
    /// Its URL.
    pub url: String,
    /// Its folder's path (root when `None`).
    pub folder: Option<String>,
    /// Its id, once stored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

/// Reads the file, checks every monitor as the API checks one and seals the secrets of its
/// notification URLs, and (unless dry) stores the folders and monitors all or nothing
/// ([`apply::store`]).
pub async fn import(
    store: &dyn Store,
    context: &ImportContext,
    user: &str,
    request: ImportRequest<'_>,
) -> Result<Report, ImportError> {
    let options = ReadOptions {
        history: request.history,
        passphrase: request.passphrase,
    };
    let mut plan = read(request.bytes, request.media_type, &options)?;
    apply::prepare(store, user, &mut plan, context.min_recurrence).await?;
    // Compiling tens of thousands of XPaths and patterns is CPU work: off the async threads.
    let rules = context.rules.clone();
    let (plan, problems) = tokio::task::spawn_blocking(move || {
        let problems = apply::validate(&plan, rules.as_ref());
        (plan, problems)
    })
    .await
    .map_err(|err| StoreError::Backend(format!("validating the monitors: {err}")))?;
    if !problems.is_empty() {
        return Err(ImportError::Invalid(problems));
    }
    let mut plan = plan;
    let problems = apply::seal(&mut plan, context.rules.as_ref(), user);
    if !problems.is_empty() {
        return Err(ImportError::Invalid(problems));
    }
    let existing = apply::existing_folders(store, user, &plan).await?;
    apply::keep_existing_endpoints(&mut plan, &existing);
    if request.dry_run {
        return Ok(apply::report(&plan, &existing, None, true));
    }
    let ids = apply::store(store, user, &plan, &existing).await?;
    Ok(apply::report(&plan, &existing, Some(&ids), false))
}

/// A monitor of `url` as another tool's watch becomes one: alerted on any change of its value
/// (what those tools do), named after its URL until given a name.
fn watch_of(url: &str) -> Monitor {
    use ::wachet::model::{Alert, AlertType};
    Monitor {
        name: Some(crate::schedule::naming::name_from_url(url)),
        recurrence_in_seconds: Some(DEFAULT_RECURRENCE),
        alerts: Some(vec![Alert {
            kind: AlertType::NotEq,
            value: None,
            parameters: None,
            remind_every_seconds: None,
        }]),
        ..Monitor::new(url.trim())
    }
}

/// The name a person gave, when not blank.
fn given_name(name: Option<&str>) -> Option<String> {
    name.map(str::trim)
        .filter(|n| !n.is_empty())
        .map(str::to_string)
}
