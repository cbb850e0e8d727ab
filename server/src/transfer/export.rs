//! A user's export: one JSON document, written as it is read from the store so that memory
//! stays bounded whatever the user has (a page of folders, monitors or history entries at a
//! time, sent on in chunks of [`CHUNK_BYTES`]):
//!
//! ```json
//! {"format":"wachet-export","version":1,"exportedAt":"2026-01-01T00:00:00Z",
//!  "folders":[{"id":"…","name":"News","parentId":null,
//!              "notificationEndpoints":[{"type":"Email","value":"news@example.com"}]}],
//!  "monitors":[{…the API's monitor…}],
//!  "notificationEndpoints":[{"type":"Email","value":"me@example.com"}],
//!  "history":[{"monitorId":"…","entries":[{…the API's history entry…}]}],
//!  "complete":true}
//! ```
//!
//! Folders come parents first, with the endpoints a folder names for its monitors (as
//! `GET /folder/list` shows them); monitors are in the API's monitor shape (`GET /task/{id}`);
//! `history` (only when asked for) holds each monitor's own entries, newest first, as
//! `GET /data` gives them (a Portal monitor's crawled pages are left out). Secrets stay out:
//! no password, API key or webhook secret, and a notification endpoint that is a URL (a
//! webhook, a chat's incoming hook, an ntfy topic) keeps its type but not its value, which is
//! itself a credential, as a secret browser step keeps `"secret": true` without its value.
//! Asked for explicitly ([`ExportOptions::secrets`]), a monitor's secret step values and its
//! endpoints' values are written encrypted to a passphrase instead ([`super::passphrase`]), and
//! the document says how in its `secrets`, written before the lists; the account's own
//! endpoints stay without their values (an import leaves them out either way). `complete`
//! comes last, so a reader can tell a cut document from a whole one.

use super::passphrase::ExportKey;
use crate::store::{FolderKey, Store, StoreError, TimeKey, TimePage};
use async_trait::async_trait;
use serde::Serialize;
use std::sync::Arc;
use wachet::model::{MessagingServiceType, Monitor, NotificationEndpoint};

/// What the document's `format` says.
pub const FORMAT: &str = "wachet-export";
/// The version this wachet writes and the newest it reads.
pub const VERSION: u32 = 1;
/// Bytes gathered before they are handed to the sink.
pub const CHUNK_BYTES: usize = 64 * 1024;
/// Items read from the store at a time.
const PAGE: u32 = 500;

/// Where an export goes: a file, a response body.
#[async_trait]
pub trait Sink: Send {
    /// Takes the next chunk of the document.
    async fn write(&mut self, chunk: Vec<u8>) -> std::io::Result<()>;
}

/// What an export asks for.
#[derive(Debug, Clone, Default)]
pub struct ExportOptions {
    /// Write each monitor's history too.
    pub history: bool,
    /// Write the monitors' secrets, encrypted to a passphrase; left out when `None`.
    pub secrets: Option<Arc<WithSecrets>>,
}

/// Opens what the service sealed with its own key, for an export that carries secrets: given
/// by the operations, which hold the key ([`crate::ops::transfer`]).
pub trait Reveal: Send + Sync {
    /// A secret step's value as stored for `user`, opened.
    fn step(&self, user: &str, stored: &str) -> Option<String>;
    /// The value of `user`'s notification endpoint as stored, whole (its sealed parts opened).
    fn endpoint(&self, user: &str, endpoint: &NotificationEndpoint) -> Option<String>;
}

/// How an export carries secrets: opened with the service's key, encrypted to the passphrase's.
pub struct WithSecrets {
    /// The passphrase's key.
    pub key: ExportKey,
    /// What opens the stored values.
    pub reveal: Box<dyn Reveal>,
}

impl std::fmt::Debug for WithSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WithSecrets").finish_non_exhaustive()
    }
}

/// What was written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Written {
    /// Folders.
    pub folders: usize,
    /// Monitors.
    pub monitors: usize,
    /// History entries.
    pub entries: usize,
    /// Secrets written encrypted to the passphrase.
    pub secrets: usize,
    /// Secrets that did not open with the service's key (written without their value).
    pub unopened: usize,
}

/// Why an export stopped (what was written so far lacks its `complete`).
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The sink failed (a full disk, a client gone).
    #[error("writing the export: {0}")]
    Io(#[from] std::io::Error),
    /// A value could not be written as JSON.
    #[error("writing the export: {0}")]
    Json(#[from] serde_json::Error),
    /// A secret could not be encrypted.
    #[error("encrypting the export's secrets: {0}")]
    Seal(String),
}

/// A folder as exported.
#[derive(Debug, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExportedFolder {
    /// Its id in the exporting service.
    pub id: String,
    /// Its name.
    pub name: String,
    /// Its parent's id (root when null).
    pub parent_id: Option<String>,
    /// The endpoints it names for its monitors and subfolders, without their secrets
    /// ([`without_secret`]); absent when it names none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notification_endpoints: Vec<NotificationEndpoint>,
}

/// The document being written, with what waits to go to the sink.
struct Out<'a> {
    sink: &'a mut dyn Sink,
    buffer: Vec<u8>,
    /// Whether the current list has an item yet (a comma goes before the next).
    listed: bool,
}

impl Out<'_> {
    async fn raw(&mut self, text: &str) -> Result<(), ExportError> {
        self.buffer.extend_from_slice(text.as_bytes());
        self.spill().await
    }

    async fn item(&mut self, value: &impl Serialize) -> Result<(), ExportError> {
        if self.listed {
            self.buffer.push(b',');
        }
        self.listed = true;
        serde_json::to_writer(&mut self.buffer, value)?;
        self.spill().await
    }

    async fn open_list(&mut self, key: &str) -> Result<(), ExportError> {
        self.listed = false;
        self.raw(&format!(",\"{key}\":[")).await
    }

    async fn spill(&mut self) -> Result<(), ExportError> {
        if self.buffer.len() >= CHUNK_BYTES {
            let chunk = std::mem::replace(&mut self.buffer, Vec::with_capacity(CHUNK_BYTES));
            self.sink.write(chunk).await?;
        }
        Ok(())
    }

    async fn finish(mut self) -> Result<(), ExportError> {
        let chunk = std::mem::take(&mut self.buffer);
        if !chunk.is_empty() {
            self.sink.write(chunk).await?;
        }
        Ok(())
    }
}

/// An endpoint without its secret: a URL endpoint keeps its type (and its templates) only.
pub fn without_secret(endpoint: &NotificationEndpoint) -> NotificationEndpoint {
    let value = match endpoint.kind {
        MessagingServiceType::Email => endpoint.value.clone(),
        _ => None,
    };
    // Templates, digests and quiet hours are no secret: they travel with the endpoint.
    NotificationEndpoint {
        value,
        confirmed: None,
        ..endpoint.clone()
    }
}

/// `monitor` as exported: without its secrets, or with them encrypted to the passphrase.
fn exported_monitor(
    monitor: &Monitor,
    user: &str,
    secrets: Option<&WithSecrets>,
    written: &mut Written,
) -> Result<Monitor, ExportError> {
    let mut monitor = monitor.clone();
    monitor.location_notice = None;
    if let Some(endpoints) = monitor.notification_endpoints.as_mut() {
        for endpoint in endpoints.iter_mut() {
            *endpoint = exported_endpoint(endpoint, user, secrets, written)?;
        }
    }
    let Some(secrets) = secrets else {
        // A secret step's value (sealed with this server's key) stays here.
        monitor.hide_secret_steps();
        return Ok(monitor);
    };
    for (_, list) in monitor.step_lists_mut() {
        for step in list.into_iter().flatten().filter(|s| s.secret) {
            if let Some(stored) = step.value.take() {
                step.value = encrypted(secrets, secrets.reveal.step(user, &stored), written)?;
            }
        }
    }
    Ok(monitor)
}

/// An endpoint (a monitor's or a folder's) as exported: without its secret, or with its value
/// encrypted to the passphrase.
fn exported_endpoint(
    endpoint: &NotificationEndpoint,
    user: &str,
    secrets: Option<&WithSecrets>,
    written: &mut Written,
) -> Result<NotificationEndpoint, ExportError> {
    let Some(secrets) = secrets
        .filter(|_| endpoint.kind != MessagingServiceType::Email && endpoint.value.is_some())
    else {
        return Ok(without_secret(endpoint));
    };
    let value = encrypted(secrets, secrets.reveal.endpoint(user, endpoint), written)?;
    Ok(NotificationEndpoint {
        value,
        ..without_secret(endpoint)
    })
}

/// A secret `opened` with the service's key, encrypted to the passphrase; `None` (counted as
/// not opened) when the service's key did not open it.
fn encrypted(
    secrets: &WithSecrets,
    opened: Option<String>,
    written: &mut Written,
) -> Result<Option<String>, ExportError> {
    match opened {
        Some(value) => {
            written.secrets += 1;
            secrets
                .key
                .seal(&value)
                .map(Some)
                .map_err(ExportError::Seal)
        }
        None => {
            written.unopened += 1;
            Ok(None)
        }
    }
}

/// Writes `user`'s export to `sink` ([the module's document](self)).
pub async fn export(
    store: &dyn Store,
    user: &str,
    options: ExportOptions,
    sink: &mut dyn Sink,
) -> Result<Written, ExportError> {
    let mut out = Out {
        sink,
        buffer: Vec::with_capacity(CHUNK_BYTES),
        listed: false,
    };
    let mut written = Written::default();
    // The format first, so a reader knows the document from its first bytes; the lists
    // follow.
    let exported_at = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    out.raw(&format!(
        "{{\"format\":\"{FORMAT}\",\"version\":{VERSION},\"exportedAt\":\"{exported_at}\""
    ))
    .await?;
    if let Some(secrets) = &options.secrets {
        let header = serde_json::to_string(secrets.key.header())?;
        out.raw(&format!(",\"secrets\":{header}")).await?;
    }

    let secrets = options.secrets.as_deref();

    // Folders, breadth first so parents come before their children.
    out.open_list("folders").await?;
    let mut folders: Vec<Option<String>> = vec![None];
    let mut at = 0;
    while let Some(parent) = folders.get(at).cloned() {
        at += 1;
        let mut after: Option<FolderKey> = None;
        loop {
            let page = store
                .list_folder(user, parent.as_deref(), after.as_ref(), PAGE)
                .await?;
            let ids: Vec<String> = page
                .subfolders
                .iter()
                .filter_map(|f| f.id.clone())
                .collect();
            let named = store.folder_endpoints(user, &ids).await?;
            for folder in &page.subfolders {
                let Some(id) = folder.id.clone() else {
                    continue;
                };
                let endpoints = named
                    .iter()
                    .find(|(of, _)| *of == id)
                    .map(|(_, list)| {
                        list.iter()
                            .map(|e| exported_endpoint(e, user, secrets, &mut written))
                            .collect::<Result<Vec<_>, _>>()
                    })
                    .transpose()?
                    .unwrap_or_default();
                out.item(&ExportedFolder {
                    id: id.clone(),
                    name: folder.name.clone().unwrap_or_default(),
                    parent_id: parent.clone(),
                    notification_endpoints: endpoints,
                })
                .await?;
                written.folders += 1;
                folders.push(Some(id));
            }
            // Subfolders are listed before monitors: once the listing reached them, the
            // folder's subfolders are all written.
            match page.next {
                Some(next) if !next.in_tasks => after = Some(next),
                _ => break,
            }
        }
    }
    out.raw("]").await?;

    // Monitors, folder by folder; their ids are kept for the history (36 bytes each).
    out.open_list("monitors").await?;
    let mut monitors: Vec<String> = Vec::new();
    for folder in &folders {
        let mut after: Option<FolderKey> = None;
        loop {
            let page = store
                .list_folder(user, folder.as_deref(), after.as_ref(), PAGE)
                .await?;
            for shared in &page.tasks {
                let monitor = shared.monitor();
                out.item(&exported_monitor(monitor, user, secrets, &mut written)?)
                    .await?;
                written.monitors += 1;
                if options.history
                    && let Some(id) = &monitor.id
                {
                    monitors.push(id.clone());
                }
            }
            match page.next {
                Some(next) => after = Some(next),
                None => break,
            }
        }
    }
    out.raw("]").await?;

    out.open_list("notificationEndpoints").await?;
    let endpoints = store
        .user_by_id(user)
        .await?
        .map(|u| u.notification_endpoints)
        .unwrap_or_default();
    for endpoint in &endpoints {
        out.item(&without_secret(endpoint)).await?;
    }
    out.raw("]").await?;

    if options.history {
        out.open_list("history").await?;
        for (i, id) in monitors.iter().enumerate() {
            let open = serde_json::json!({ "monitorId": id }).to_string();
            let comma = if i > 0 { "," } else { "" };
            out.raw(&format!(
                "{comma}{},\"entries\":[",
                open.trim_end_matches('}')
            ))
            .await?;
            out.listed = false;
            let mut after: Option<TimeKey> = None;
            loop {
                let page = TimePage {
                    after: after.clone(),
                    limit: PAGE,
                    ..TimePage::default()
                };
                let entries = match store.entries(user, id, &page).await {
                    Ok(entries) => entries,
                    // Deleted while the export ran: its entries are gone with it.
                    Err(StoreError::NotFound) => Vec::new(),
                    Err(other) => return Err(other.into()),
                };
                let more = entries.len() > PAGE as usize;
                for (key, data) in entries.into_iter().take(PAGE as usize) {
                    out.item(&data).await?;
                    written.entries += 1;
                    after = Some(key);
                }
                if !more {
                    break;
                }
            }
            out.raw("]}").await?;
        }
        out.raw("]").await?;
    }
    out.raw(",\"complete\":true}").await?;
    out.finish().await?;
    Ok(written)
}
