//! Storing a [`Plan`] for a user, all or nothing, through the store's traits: each monitor is
//! first checked as `PUT /task` checks one (the service's [`Rules`]), then the folders
//! the plan needs and the user lacks are created, then every monitor in one call of
//! [`TaskStore::create_tasks`](crate::store::TaskStore::create_tasks), one transaction that
//! also holds the monitor quota. When that fails (the quota, a folder deleted meanwhile, the
//! database), the folders this import created are deleted again (a compensating delete: the
//! store has no transaction spanning folders and monitors), so nothing of it stays; monitors
//! someone put into such a folder in the moment between would go with it, which an import
//! accepts for not holding a lock across calls. History brought in goes last, in one
//! transaction of [`HistoryStore::import_entries`](crate::store::HistoryStore::import_entries);
//! when that fails the new monitors are deleted again too.

use super::{Plan, Report, ReportFolder, ReportMonitor, Rules, same_thing};
use crate::store::{FolderKey, Store, StoreError};
use serde::Serialize;
use std::collections::HashMap;
use wachet::model::{ClientData, Folder, LocationCode, Monitor};

/// Most problems an invalid import names; the count of the rest follows.
const MAX_PROBLEMS: usize = 100;
/// Folders or monitors listed from the store at a time.
const PAGE: u32 = 500;

/// One reason a monitor of the file is invalid.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// The item of the file (as the report names it).
    pub item: String,
    /// The monitor's field, as the API names it.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

/// Fits the plan to the server and to what the user has: an interval shorter than the server
/// allows becomes the shortest it allows, and a monitor watching what one of the user's
/// monitors already watches is left out (so importing a file twice adds nothing).
pub async fn prepare(
    store: &dyn Store,
    user: &str,
    plan: &mut Plan,
    min_recurrence: i32,
) -> Result<(), StoreError> {
    let mut fitted = Vec::new();
    for planned in &mut plan.monitors {
        if let Some(every) = planned.monitor.recurrence_in_seconds
            && every > 0
            && every < min_recurrence
        {
            planned.monitor.recurrence_in_seconds = Some(min_recurrence);
            fitted.push((planned.item.clone(), every));
        }
    }
    for (item, every) in fitted {
        plan.leave_out(
            &item,
            format!("interval of {every} s"),
            format!("checked every {min_recurrence} s instead, the shortest this server allows"),
        );
    }
    let have = store.search_tasks(user, &[], u32::MAX).await?;
    let watched: HashMap<String, String> = have
        .iter()
        .map(|m| (same_thing(m), m.name.clone().unwrap_or_default()))
        .collect();
    let mut kept = Vec::with_capacity(plan.monitors.len());
    for planned in std::mem::take(&mut plan.monitors) {
        match watched.get(&same_thing(&planned.monitor)) {
            Some(name) => plan.leave_out(
                &planned.item,
                "the whole item",
                format!("your monitor \"{name}\" already watches the same"),
            ),
            None => kept.push(planned),
        }
    }
    plan.monitors = kept;
    Ok(())
}

/// Every problem of every monitor and folder of the plan under `rules`, as the API would name
/// them.
pub fn validate(plan: &Plan, rules: &dyn Rules) -> Vec<Problem> {
    let mut problems = Vec::new();
    let mut more = 0usize;
    let mut add = |problems: &mut Vec<Problem>, item: &str, field: String, message: String| {
        if problems.len() < MAX_PROBLEMS {
            problems.push(Problem {
                item: item.to_string(),
                field,
                message,
            });
        } else {
            more += 1;
        }
    };
    for (i, folder) in plan.folders.iter().enumerate() {
        let candidate = Folder {
            name: Some(folder.name.clone()),
            notification_endpoints: Some(folder.notification_endpoints.clone()),
            ..Folder::default()
        };
        if folder.name.trim().is_empty() {
            add(
                &mut problems,
                &format!("folder {}", i + 1),
                "name".into(),
                "must not be empty".into(),
            );
        }
        for (field, message) in rules.folder(&candidate) {
            add(
                &mut problems,
                &format!("folder \"{}\"", plan.folder_path(i)),
                field,
                message,
            );
        }
    }
    for planned in &plan.monitors {
        // A location is judged as the API judges it where a worker checks from there: this
        // process cannot know the service's workers, so the engine's proxies are not asked.
        let judged = match planned.monitor.location {
            LocationCode::Default => std::borrow::Cow::Borrowed(&planned.monitor),
            _ => std::borrow::Cow::Owned(Monitor {
                location: LocationCode::Default,
                ..planned.monitor.clone()
            }),
        };
        for (field, message) in rules.monitor(&judged) {
            add(&mut problems, &planned.item, field, message);
        }
    }
    if more > 0 {
        problems.push(Problem {
            item: "the file".into(),
            field: String::new(),
            message: format!("and {more} more problem(s)"),
        });
    }
    problems
}

/// Seals the secrets of the notification URLs of every folder and monitor of the plan for
/// `user` ([`Rules::seal_folder`], [`Rules::seal`]); the problems of those that cannot be
/// sealed.
pub fn seal(plan: &mut Plan, rules: &dyn Rules, user: &str) -> Vec<Problem> {
    let mut problems = Vec::new();
    let mut more = 0usize;
    for i in 0..plan.folders.len() {
        let item = format!("folder \"{}\"", plan.folder_path(i));
        let endpoints = &mut plan.folders[i].notification_endpoints;
        for (field, message) in rules.seal_folder(user, endpoints) {
            match problems.len() < MAX_PROBLEMS {
                true => problems.push(Problem {
                    item: item.clone(),
                    field,
                    message,
                }),
                false => more += 1,
            }
        }
    }
    for planned in &mut plan.monitors {
        for (field, message) in rules.seal(user, &mut planned.monitor) {
            match problems.len() < MAX_PROBLEMS {
                true => problems.push(Problem {
                    item: planned.item.clone(),
                    field,
                    message,
                }),
                false => more += 1,
            }
        }
    }
    if more > 0 {
        problems.push(Problem {
            item: "the file".into(),
            field: String::new(),
            message: format!("and {more} more problem(s)"),
        });
    }
    problems
}

/// A folder of the plan the user has already keeps the endpoints it names: those the file
/// gives it are named as not carried over.
pub fn keep_existing_endpoints(plan: &mut Plan, existing: &[Option<String>]) {
    for i in 0..plan.folders.len() {
        if existing.get(i).is_some_and(Option::is_some)
            && !plan.folders[i].notification_endpoints.is_empty()
        {
            let gone = std::mem::take(&mut plan.folders[i].notification_endpoints);
            let item = format!("folder \"{}\"", plan.folder_path(i));
            plan.leave_out(
                &item,
                format!("{} notification endpoint(s)", gone.len()),
                "you have this folder already: it keeps the endpoints it names",
            );
        }
    }
}

/// For each folder of the plan, the id of the user's folder of that name under the same
/// parent, if there is one (else the import creates it).
pub async fn existing_folders(
    store: &dyn Store,
    user: &str,
    plan: &Plan,
) -> Result<Vec<Option<String>>, StoreError> {
    let mut listed: HashMap<Option<String>, Vec<Folder>> = HashMap::new();
    let mut found: Vec<Option<String>> = Vec::with_capacity(plan.folders.len());
    for folder in &plan.folders {
        let parent = match folder.parent {
            None => None,
            Some(p) => match found.get(p).cloned().flatten() {
                Some(id) => Some(id),
                // Under a folder the import creates, every folder is new.
                None => {
                    found.push(None);
                    continue;
                }
            },
        };
        if !listed.contains_key(&parent) {
            let subfolders = subfolders(store, user, parent.as_deref()).await?;
            listed.insert(parent.clone(), subfolders);
        }
        let id = listed[&parent]
            .iter()
            .find(|f| f.name.as_deref() == Some(folder.name.as_str()))
            .and_then(|f| f.id.clone());
        found.push(id);
    }
    Ok(found)
}

async fn subfolders(
    store: &dyn Store,
    user: &str,
    parent: Option<&str>,
) -> Result<Vec<Folder>, StoreError> {
    let mut all = Vec::new();
    let mut after: Option<FolderKey> = None;
    loop {
        let page = store
            .list_folder(user, parent, after.as_ref(), PAGE)
            .await?;
        all.extend(page.subfolders);
        match page.next {
            Some(next) if !next.in_tasks => after = Some(next),
            _ => return Ok(all),
        }
    }
}

/// Stores the plan (folders the user lacks, then every monitor in one transaction) and
/// returns the monitors' new ids in the plan's order; on failure nothing of it stays
/// ([the module's rules](self)).
pub async fn store(
    store: &dyn Store,
    user: &str,
    plan: &Plan,
    existing: &[Option<String>],
) -> Result<Vec<String>, StoreError> {
    let mut ids: Vec<String> = Vec::with_capacity(plan.folders.len());
    let mut created: Vec<String> = Vec::new();
    for (i, folder) in plan.folders.iter().enumerate() {
        if let Some(id) = existing.get(i).cloned().flatten() {
            ids.push(id);
            continue;
        }
        let parent_id = folder.parent.and_then(|p| ids.get(p).cloned());
        let saved = store
            .save_folder(
                user,
                &Folder {
                    name: Some(folder.name.clone()),
                    parent_id,
                    ..Folder::default()
                },
            )
            .await;
        match saved.map(|f| f.id) {
            Ok(Some(id)) => {
                created.push(id.clone());
                ids.push(id.clone());
                if !folder.notification_endpoints.is_empty()
                    && let Err(err) = store
                        .set_folder_endpoints(user, &id, &folder.notification_endpoints)
                        .await
                {
                    undo(store, user, &created).await;
                    return Err(err);
                }
            }
            Ok(None) => {
                undo(store, user, &created).await;
                return Err(StoreError::Backend(
                    "a new folder came back without its id".into(),
                ));
            }
            Err(err) => {
                undo(store, user, &created).await;
                return Err(err);
            }
        }
    }
    let monitors: Vec<Monitor> = plan
        .monitors
        .iter()
        .map(|planned| Monitor {
            id: None,
            folder_id: planned.folder.and_then(|f| ids.get(f).cloned()),
            ..planned.monitor.clone()
        })
        .collect();
    if monitors.is_empty() {
        return Ok(Vec::new());
    }
    let stored: Vec<String> = match store.create_tasks(user, &monitors).await {
        Ok(stored) => stored.into_iter().filter_map(|m| m.id).collect(),
        Err(err) => {
            undo(store, user, &created).await;
            return Err(err);
        }
    };
    let series: Vec<(String, Vec<ClientData>)> = plan
        .monitors
        .iter()
        .zip(&stored)
        .filter(|(planned, _)| !planned.history.is_empty())
        .map(|(planned, id)| (id.clone(), planned.history.clone()))
        .collect();
    if !series.is_empty()
        && let Err(err) = store.import_entries(user, &series).await
    {
        for id in &stored {
            match store.delete_task(user, id).await {
                Ok(()) | Err(StoreError::NotFound) => {}
                Err(err) => {
                    tracing::warn!(monitor = %id, "an import could not remove a monitor it created: {err}")
                }
            }
        }
        undo(store, user, &created).await;
        return Err(err);
    }
    Ok(stored)
}

/// Deletes the folders an import created, children first.
async fn undo(store: &dyn Store, user: &str, created: &[String]) {
    for id in created.iter().rev() {
        match store.delete_folder(user, id).await {
            Ok(()) | Err(StoreError::NotFound) => {}
            Err(err) => {
                tracing::warn!(folder = %id, "an import could not remove a folder it created: {err}")
            }
        }
    }
}

/// The report of an import: what comes in, what is left out.
pub fn report(
    plan: &Plan,
    existing: &[Option<String>],
    ids: Option<&[String]>,
    dry_run: bool,
) -> Report {
    let folders = (0..plan.folders.len())
        .map(|i| ReportFolder {
            path: plan.folder_path(i),
            created: existing.get(i).is_none_or(Option::is_none),
        })
        .collect::<Vec<_>>();
    let monitors = plan
        .monitors
        .iter()
        .enumerate()
        .map(|(i, planned)| ReportMonitor {
            item: planned.item.clone(),
            name: planned.monitor.name.clone(),
            url: planned.monitor.url.clone().unwrap_or_default(),
            folder: planned.folder.map(|f| plan.folder_path(f)),
            id: ids.and_then(|ids| ids.get(i).cloned()),
        })
        .collect();
    Report {
        format: plan.format,
        dry_run,
        folders,
        monitors,
        history_entries: plan.monitors.iter().map(|m| m.history.len()).sum(),
        left_out: plan.left_out.clone(),
    }
}
