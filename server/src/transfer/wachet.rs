//! wachet's own export ([`super::export`]) read back: its folders (nested as they were), its
//! monitors as the API shapes them, and with the history asked for, their entries. A document
//! of a newer version than [`super::export::VERSION`] is refused; one without `complete` was
//! cut short and is refused too. The user's own notification endpoints are not imported (they
//! are the account's settings, and URL endpoints come without their value); a folder's and a
//! monitor's endpoints come with their templates, digests and quiet hours, and one without its
//! value is named as not carried over. A document whose secrets are encrypted to a passphrase
//! ([`super::passphrase`]) is read only with that passphrase, every secret opened: without it,
//! or with another, the whole file is refused (a monitor never comes in without the secrets its
//! file carried).

use super::export::{ExportedFolder, FORMAT, VERSION};
use super::passphrase::{self, ExportKey};
use super::{Format, Plan, PlannedMonitor, ReadError, ReadOptions};
use serde::Deserialize;
use std::collections::HashMap;
use wachet::model::{ClientData, Monitor, NotificationEndpoint};

/// Whether `bytes` look like a wachet export.
pub fn sniff(bytes: &[u8]) -> bool {
    let start = String::from_utf8_lossy(&bytes[..bytes.len().min(4096)]).into_owned();
    start.trim_start().starts_with('{') && start.contains(FORMAT)
}

#[derive(Deserialize)]
struct Header {
    format: Option<String>,
    version: Option<u32>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Document {
    #[serde(default)]
    folders: Vec<ExportedFolder>,
    #[serde(default)]
    monitors: Vec<serde_json::Value>,
    #[serde(default)]
    notification_endpoints: Vec<NotificationEndpoint>,
    #[serde(default)]
    history: Vec<Series>,
    #[serde(default)]
    complete: bool,
    #[serde(default)]
    secrets: Option<passphrase::Header>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Series {
    monitor_id: String,
    #[serde(default)]
    entries: Vec<ClientData>,
}

pub fn read(bytes: &[u8], options: &ReadOptions) -> Result<Plan, ReadError> {
    let header: Header = serde_json::from_slice(bytes)
        .map_err(|err| ReadError::Invalid(format!("the export is not valid JSON: {err}")))?;
    if header.format.as_deref() != Some(FORMAT) {
        return Err(ReadError::Unknown(format!(
            "the JSON is not a wachet export (its \"format\" is not \"{FORMAT}\")"
        )));
    }
    match header.version {
        Some(v) if v > VERSION => {
            return Err(ReadError::Newer(format!(
                "the export is of version {v}, made by a newer wachet than this one (which \
                 reads up to version {VERSION}); nothing was imported"
            )));
        }
        None => return Err(ReadError::Invalid("the export has no version".into())),
        _ => {}
    }
    let document: Document = serde_json::from_slice(bytes)
        .map_err(|err| ReadError::Invalid(format!("the export is damaged: {err}")))?;
    if !document.complete {
        return Err(ReadError::Invalid(
            "the export was cut short (it does not end with \"complete\": true)".into(),
        ));
    }
    let key = match (&document.secrets, options.passphrase) {
        (None, _) => None,
        (Some(header), Some(given)) => Some(ExportKey::open(header, given)?),
        (Some(_), None) => {
            return Err(ReadError::Refused(
                "the export carries secrets encrypted to a passphrase: import it with its \
                 passphrase (wachet import --passphrase-file, or the X-Wachet-Passphrase header \
                 of POST /thirdparty/v1/import); nothing was imported"
                    .into(),
            ));
        }
    };
    let mut plan = Plan::new(Format::Wachet);
    // Parents first: the export writes them so, but a document edited by hand may not.
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut waiting: Vec<&ExportedFolder> = document.folders.iter().collect();
    // The folders' endpoints, their values opened where the export encrypted them.
    let mut named: HashMap<&str, Vec<NotificationEndpoint>> = HashMap::new();
    for folder in &document.folders {
        let mut endpoints = folder.notification_endpoints.clone();
        let item = format!("folder \"{}\"", folder.name);
        for endpoint in &mut endpoints {
            open_value(&mut endpoint.value, key.as_ref(), &item)?;
        }
        named.insert(folder.id.as_str(), endpoints);
    }
    // Folders whose URL endpoints came without their value (a secret): how many.
    let mut dropped: Vec<(usize, usize)> = Vec::new();
    while !waiting.is_empty() {
        let before = waiting.len();
        waiting.retain(|folder| {
            let parent = match &folder.parent_id {
                None => None,
                Some(id) => match index.get(id) {
                    Some(&i) => Some(i),
                    None => return true,
                },
            };
            let at = plan.folder(&folder.name, parent);
            index.insert(folder.id.clone(), at);
            let mut endpoints = named.remove(folder.id.as_str()).unwrap_or_default();
            let before = endpoints.len();
            endpoints.retain(|e| e.value.as_deref().is_some_and(|v| !v.is_empty()));
            if before > endpoints.len() {
                dropped.push((at, before - endpoints.len()));
            }
            plan.folders[at].notification_endpoints.extend(endpoints);
            false
        });
        if waiting.len() == before {
            return Err(ReadError::Invalid(format!(
                "folder \"{}\" names a parent the export does not have",
                waiting[0].name
            )));
        }
    }
    for (at, count) in dropped {
        let item = format!("folder \"{}\"", plan.folder_path(at));
        plan.leave_out(
            &item,
            format!("{count} notification endpoint(s)"),
            "an export leaves the URL of a webhook or chat out (it is a secret): add it again",
        );
    }
    let mut history: HashMap<String, Vec<ClientData>> = match options.history {
        true => document
            .history
            .into_iter()
            .map(|s| (s.monitor_id, s.entries))
            .collect(),
        false => HashMap::new(),
    };
    for (i, value) in document.monitors.into_iter().enumerate() {
        let mut monitor: Monitor = serde_json::from_value(value)
            .map_err(|err| ReadError::Invalid(format!("monitor {} of the export: {err}", i + 1)))?;
        let item = match monitor.name.as_deref() {
            Some(name) => format!("monitor {} \"{name}\"", i + 1),
            None => format!("monitor {}", i + 1),
        };
        open_secrets(&mut monitor, key.as_ref(), &item)?;
        let folder = match monitor.folder_id.take() {
            None => None,
            Some(id) => match index.get(&id) {
                Some(&at) => Some(at),
                None => {
                    plan.leave_out(
                        &item,
                        "its folder",
                        "the export does not have it: it goes to the root",
                    );
                    None
                }
            },
        };
        if let Some(endpoints) = monitor.notification_endpoints.as_mut() {
            let before = endpoints.len();
            endpoints.retain(|e| e.value.as_deref().is_some_and(|v| !v.is_empty()));
            let dropped = before - endpoints.len();
            if dropped > 0 {
                plan.leave_out(
                    &item,
                    format!("{dropped} notification endpoint(s)"),
                    "an export leaves the URL of a webhook or chat out (it is a secret): add it again",
                );
            }
        }
        let id = monitor.id.take();
        monitor.data = None;
        monitor.noise_notice = None;
        monitor.location_notice = None;
        let mut entries = id.and_then(|id| history.remove(&id)).unwrap_or_default();
        entries.sort_by_key(|e| e.last_check_timestamp);
        plan.monitors.push(PlannedMonitor {
            item,
            monitor,
            folder,
            history: entries,
        });
    }
    if !document.notification_endpoints.is_empty() {
        plan.leave_out(
            "the export",
            format!(
                "{} notification endpoint(s) of the account",
                document.notification_endpoints.len()
            ),
            "they are the account's settings: set them on the settings page",
        );
    }
    Ok(plan)
}

/// Opens the values of `monitor` that the export encrypted to its passphrase (its secret
/// steps' and its endpoints'), with `key` ([`open_value`]).
fn open_secrets(
    monitor: &mut Monitor,
    key: Option<&ExportKey>,
    item: &str,
) -> Result<(), ReadError> {
    for endpoint in monitor.notification_endpoints.iter_mut().flatten() {
        open_value(&mut endpoint.value, key, item)?;
    }
    for (_, list) in monitor.step_lists_mut() {
        for step in list.into_iter().flatten().filter(|s| s.secret) {
            open_value(&mut step.value, key, item)?;
        }
    }
    Ok(())
}

/// Opens `value` where the export encrypted it to its passphrase, with `key`; a value that
/// does not open (or one encrypted in a document that says of no passphrase) refuses the file.
fn open_value(
    value: &mut Option<String>,
    key: Option<&ExportKey>,
    item: &str,
) -> Result<(), ReadError> {
    let Some(sealed) = value.as_deref().filter(|v| passphrase::is_sealed(v)) else {
        return Ok(());
    };
    let opened = key.and_then(|key| key.open_value(sealed)).ok_or_else(|| {
        ReadError::Invalid(format!(
            "{item}: a secret of the export does not open with its passphrase (the file \
             was altered); nothing was imported"
        ))
    })?;
    *value = Some(opened);
    Ok(())
}
