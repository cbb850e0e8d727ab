//! Monitors as stored: the columns derived from a monitor's definition (its sort key, search
//! text, host and the scheduler's flags), the row read back as the API's monitor, and the
//! rules of a monitor's noise and search.

use super::history::{DataColumns, data_of};
use crate::store::StoreError;
use crate::store::cache::{Caches, SharedMonitor};
use wachet::alerts::confirm::ConfirmState;
use wachet::model::{ClientJobType, Monitor};

/// A monitor's row with its latest data: `t.id, t.folder_id, t.definition, t.noise_notice`
/// and [`DataColumns`].
#[derive(sqlx::FromRow)]
pub(crate) struct TaskRow<C> {
    id: String,
    folder_id: Option<String>,
    definition: String,
    noise_notice: Option<String>,
    #[sqlx(flatten)]
    data: DataColumns<C>,
}

/// Rebuilds the API's monitor from its row.
pub(crate) fn monitor<C: Into<i64>>(row: TaskRow<C>) -> Result<Monitor, StoreError> {
    let mut monitor: Monitor = serde_json::from_str(&row.definition)
        .map_err(|err| StoreError::Backend(format!("stored monitor {}: {err}", row.id)))?;
    monitor.id = Some(row.id);
    monitor.folder_id = row.folder_id;
    monitor.noise_notice = row.noise_notice;
    monitor.data = data_of(row.data)?;
    Ok(monitor)
}

/// The columns a monitor's definition fills.
pub(crate) struct Columns {
    pub definition: String,
    pub name: Option<String>,
    pub sort_key: String,
    pub url: String,
    pub note: Option<String>,
    pub search_text: String,
    pub paused: bool,
    pub dynamic: bool,
    pub location: i16,
    pub host_bucket: i16,
    pub host: i64,
}

impl Columns {
    /// A new or changed active monitor is checked at once; a paused one never.
    pub fn first_check(&self, now: i64) -> Option<i64> {
        (!self.paused).then_some(now)
    }
}

/// The columns of `monitor`; `Invalid` naming the field when its name, URL or note holds a
/// NUL.
pub(crate) fn columns(monitor: &Monitor) -> Result<Columns, StoreError> {
    super::refuse_nul("name", monitor.name.as_deref())?;
    super::refuse_nul("url", monitor.url.as_deref())?;
    super::refuse_nul("note", monitor.note.as_deref())?;
    // What the service fills in when it reads the monitor is not part of its definition.
    let stored = Monitor {
        id: None,
        folder_id: None,
        data: None,
        noise_notice: None,
        location_notice: None,
        ..monitor.clone()
    };
    let definition =
        serde_json::to_string(&stored).map_err(|err| StoreError::Backend(err.to_string()))?;
    let url = monitor.url.clone().unwrap_or_default();
    let search_text = [
        monitor.name.as_deref().unwrap_or(""),
        &url,
        monitor.note.as_deref().unwrap_or(""),
    ]
    .join("\n")
    .to_lowercase();
    Ok(Columns {
        definition,
        name: monitor.name.clone(),
        sort_key: super::sort_key(monitor.name.as_deref()),
        host_bucket: crate::store::host_bucket(&url),
        host: crate::store::host_hash(&url),
        url,
        note: monitor.note.clone(),
        search_text,
        paused: monitor.recurrence_in_seconds.unwrap_or(0) <= 0,
        dynamic: monitor.dynamic_content,
        location: i16::try_from(monitor.location.code()).unwrap_or(0),
    })
}

/// The definition stored as `definition` of the monitor `id`.
pub(crate) fn stored_definition(id: &str, definition: &str) -> Result<Monitor, StoreError> {
    serde_json::from_str(definition)
        .map_err(|err| StoreError::Backend(format!("stored monitor {id}: {err}")))
}

/// Whether a monitor's first check (after it is created or what it watches changed) takes
/// quick samples to learn its noise: SinglePage monitors only (a Portal's pages are not
/// sampled; a person's masks apply to every page).
pub(crate) fn samples_noise(monitor: &Monitor) -> bool {
    monitor.job_type == ClientJobType::SinglePage
}

/// A stored confirmation state (`ConfirmState` as JSON) without what learning remembered.
pub(crate) fn forget_learning(json: String) -> Result<String, StoreError> {
    let mut state: ConfirmState =
        serde_json::from_str(&json).map_err(|err| StoreError::Backend(err.to_string()))?;
    state.noise = Default::default();
    serde_json::to_string(&state).map_err(|err| StoreError::Backend(err.to_string()))
}

/// `term` as a LIKE pattern (with `\` as its escape) that matches it literally anywhere.
pub(crate) fn contains_pattern(term: &str) -> String {
    let mut pattern = String::with_capacity(term.len() + 2);
    pattern.push('%');
    for ch in term.to_lowercase().chars() {
        if matches!(ch, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(ch);
    }
    pattern.push('%');
    pattern
}

/// Refuses to create `adding` monitors for a user who has `have` when that passes `max`.
pub(crate) fn within_quota(have: i64, adding: usize, max: u64) -> Result<(), StoreError> {
    match crate::store::over_quota(have, adding, max) {
        Some(message) => Err(StoreError::QuotaExceeded {
            limit: "maxMonitorsPerUser".into(),
            message,
        }),
        None => Ok(()),
    }
}

/// The monitor `id` as cached for `user`: `Some` when the cache knows it (another user's is
/// `NotFound`), `None` when the database is to be asked.
pub(crate) fn cached_task(
    caches: &Caches,
    user: &str,
    id: &str,
) -> Option<Result<Monitor, StoreError>> {
    caches.tasks.get(id).map(|shared| {
        if shared.owner() == user {
            Ok(shared.to_monitor())
        } else {
            Err(StoreError::NotFound)
        }
    })
}

/// Keeps `monitor`, `user`'s, as read from the database.
pub(crate) fn cache_task(caches: &Caches, user: &str, id: &str, monitor: &Monitor) {
    caches
        .tasks
        .put(id, SharedMonitor::new(user, monitor.clone()));
}
