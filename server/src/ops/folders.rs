//! Folders: a page of a folder (subfolders with their counts, then monitors, with the path
//! from the root), create or rename and re-parent, move monitors and folders, delete with
//! everything inside, and the notification endpoints a folder names for its monitors (an
//! extension: the monitors and subfolders inside inherit them; the outbox follows the tree as
//! it is when a notification is raised, so a folder moved passes its endpoints on from its
//! new place, and one deleted takes its monitors with it).

use super::{Ctx, OpError, UserId, endpoints, locations, rules, steps};
use crate::store::cache::SharedMonitor;
use crate::store::{FolderKey, FolderListing};
use serde::Serialize;
use wachet::model::{Folder, MessagingServiceType, Monitor, MoveRequest};

/// Most ids one move may name.
pub const MAX_MOVED: usize = 1000;

/// One page of the user's folder `parent` (the root when `None`), at most `limit` items, from
/// the continuation `token` of the previous page; with the token of the next page.
pub async fn list(
    ctx: &Ctx,
    user: &UserId,
    parent: Option<&str>,
    limit: u32,
    token: Option<&str>,
) -> Result<Listing, OpError> {
    let parent = parent.filter(|p| !p.is_empty());
    let scope = format!("folder:{user}:{}", parent.unwrap_or(""));
    let after: Option<FolderKey> = token
        .map(|token| ctx.cursors().open(&scope, token))
        .transpose()?;
    let listing = ctx
        .store()
        .list_folder(user, parent, after.as_ref(), limit)
        .await?;
    // Only a monitor with an e-mail endpoint (`confirmed`) or at a location nobody serves
    // (`locationNotice`) is told more than the store keeps; every other one is written as kept.
    let checker = ctx.checker();
    let annotated = |monitor: &Monitor| {
        // A secret step's sealed value is never written out: such a monitor is written anew.
        steps::has_secrets(monitor)
            || !checker.serves(monitor.location)
            || monitor
                .notification_endpoints
                .iter()
                .flatten()
                .any(|endpoint| endpoint.kind == MessagingServiceType::Email)
    };
    let mut fresh: Vec<Monitor> = listing
        .tasks
        .iter()
        .filter(|shared| annotated(shared.monitor()))
        .map(SharedMonitor::to_monitor)
        .collect();
    endpoints::mark_confirmed(ctx, user, endpoints::of_monitors(&mut fresh)).await?;
    locations::annotate(ctx, &mut fresh).await?;
    fresh.iter_mut().for_each(steps::hide);
    let mut fresh = fresh.into_iter();
    let tasks = listing
        .tasks
        .into_iter()
        .map(|shared| match annotated(shared.monitor()) {
            true => fresh
                .next()
                .map_or(Listed::Kept(shared), |m| Listed::Annotated(Box::new(m))),
            false => Listed::Kept(shared),
        })
        .collect();
    let (mut subfolders, mut path) = (listing.subfolders, listing.path);
    with_endpoints(ctx, user, &mut subfolders).await?;
    with_endpoints(ctx, user, &mut path).await?;
    Ok(Listing {
        subfolders,
        tasks,
        path,
        continuation_token: listing.next.map(|key| ctx.cursors().seal(&scope, &key)),
    })
}

/// The first `limit` items of the user's folder `folder` (the root when `None`) as the store
/// keeps them, with the key of the next page: for pages that show a folder's contents, walk
/// the tree or only need the path to a folder.
pub async fn contents(
    ctx: &Ctx,
    user: &UserId,
    folder: Option<&str>,
    after: Option<&FolderKey>,
    limit: u32,
) -> Result<FolderListing, OpError> {
    Ok(ctx.store().list_folder(user, folder, after, limit).await?)
}

/// Deletes the user's folder `id` with its subfolders and their monitors, history and
/// notifications.
pub async fn delete(ctx: &Ctx, user: &UserId, id: &str) -> Result<(), OpError> {
    Ok(ctx.store().delete_folder(user, id).await?)
}

/// Creates `folder` (no `id`) or renames and re-parents the user's folder of its `id`, once
/// valid; the stored folder with its counts.
///
/// Its `notificationEndpoints` (an extension), when given, replace those it names for its
/// monitors and subfolders (checked and sealed as a monitor's are; `[]` names none); left
/// out, they stay as they were, so a client that only renames keeps them.
pub async fn save(ctx: &Ctx, user: &UserId, folder: &Folder) -> Result<Folder, OpError> {
    rules::folder(folder)?;
    let mut named = folder.notification_endpoints.clone();
    if let Some(list) = named.as_mut() {
        endpoints::seal(ctx, user, "notificationEndpoints", list.iter_mut())?;
    }
    let mut saved = ctx.store().save_folder(user, folder).await?;
    let id = saved.id.clone().unwrap_or_default();
    if let Some(list) = &named {
        ctx.store().set_folder_endpoints(user, &id, list).await?;
    }
    with_endpoints(ctx, user, std::slice::from_mut(&mut saved)).await?;
    Ok(saved)
}

/// Fills in the endpoints each of `folders` names for its monitors (none: left out).
async fn with_endpoints(ctx: &Ctx, user: &UserId, folders: &mut [Folder]) -> Result<(), OpError> {
    let ids: Vec<String> = folders.iter().filter_map(|f| f.id.clone()).collect();
    let named = ctx.store().folder_endpoints(user, &ids).await?;
    for folder in folders.iter_mut() {
        folder.notification_endpoints = named
            .iter()
            .find(|(id, _)| folder.id.as_ref() == Some(id))
            .map(|(_, list)| list.clone());
    }
    Ok(())
}

/// Where notifications of a monitor in the user's folder `folder` go when it names no
/// endpoints of its own: the nearest folder up the tree naming some, with its name; `None`
/// for the user's own endpoints.
pub async fn inherited_endpoints(
    ctx: &Ctx,
    user: &UserId,
    folder: Option<&str>,
) -> Result<Option<(String, Vec<wachet::model::NotificationEndpoint>)>, OpError> {
    let Some(folder) = folder.filter(|f| !f.is_empty()) else {
        return Ok(None);
    };
    let mut path = ctx
        .store()
        .list_folder(user, Some(folder), None, 1)
        .await?
        .path;
    with_endpoints(ctx, user, &mut path).await?;
    Ok(path.into_iter().rev().find_map(|f| {
        let list = f.notification_endpoints.filter(|l| !l.is_empty())?;
        Some((f.name.unwrap_or_default(), list))
    }))
}

/// Moves the user's monitors and folders of `request` into its folder (the root when null),
/// all or nothing; at most [`MAX_MOVED`] ids.
pub async fn move_items(ctx: &Ctx, user: &UserId, request: &MoveRequest) -> Result<(), OpError> {
    let moved = request.task_ids.as_ref().map_or(0, Vec::len)
        + request.folder_ids.as_ref().map_or(0, Vec::len);
    if moved > MAX_MOVED {
        return Err(OpError::field(
            "taskIds",
            format!("at most {MAX_MOVED} monitors and folders in one move"),
        ));
    }
    Ok(ctx.store().move_items(user, request).await?)
}

/// A page of a folder as written: the JSON of [`ClientFolderContent`], with each monitor the
/// store's cache already wrote copied in rather than written again (a page of 50 is 38 KB).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Listing {
    /// Subfolders with their recursive counts.
    pub subfolders: Vec<Folder>,
    /// Monitors with their latest data.
    pub tasks: Vec<Listed>,
    /// From the root's child down to the folder.
    pub path: Vec<Folder>,
    /// Where the next page starts.
    pub continuation_token: Option<String>,
}

/// A monitor of a [`Listing`]: as the store keeps it, or annotated for this answer.
pub enum Listed {
    Kept(SharedMonitor),
    Annotated(Box<Monitor>),
}

impl Serialize for Listed {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Listed::Kept(shared) => match shared.json() {
                Some(json) => json.serialize(serializer),
                None => shared.monitor().serialize(serializer),
            },
            Listed::Annotated(monitor) => monitor.serialize(serializer),
        }
    }
}

/// The name of the user's folder `id`, none when it has none or is gone.
pub async fn name_of(ctx: &Ctx, user: &UserId, id: &str) -> Result<Option<String>, OpError> {
    match ctx.store().list_folder(user, Some(id), None, 0).await {
        Ok(listing) => Ok(listing.path.last().and_then(|folder| folder.name.clone())),
        Err(crate::store::StoreError::NotFound) => Ok(None),
        Err(err) => Err(err.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wachet::model::{ClientData, ClientFolderContent, NotificationEndpoint};

    /// A page is written exactly as `ClientFolderContent`'s own `Serialize` writes it, whether
    /// its monitors are copied from the cache or annotated for the answer.
    #[test]
    fn a_listing_is_written_as_the_model_writes_it() {
        let monitor = |i: usize| Monitor {
            id: Some(format!("task-{i}")),
            name: Some(format!("Monitor \"{i}\" </script> é\u{7f}")),
            url: Some(format!("https://example.com/{i}?a=1&b=2")),
            folder_id: Some("folder-1".into()),
            data: i.is_multiple_of(2).then(|| {
                let at = chrono::DateTime::from_timestamp_millis(1_735_674_726_520 + i as i64);
                ClientData::value(at.unwrap_or_default(), format!("price {i}\n"))
            }),
            notification_endpoints: i.is_multiple_of(3).then(|| {
                vec![NotificationEndpoint {
                    confirmed: Some(i.is_multiple_of(2)),
                    ..NotificationEndpoint::new(
                        MessagingServiceType::Email,
                        Some(format!("u{i}@example.com")),
                    )
                }]
            }),
            location_notice: i
                .is_multiple_of(4)
                .then(|| "no worker runs there".to_string()),
            ..Monitor::default()
        };
        let folder = |i: usize| Folder {
            id: Some(format!("folder-{i}")),
            name: Some(format!("Folder {i}")),
            count: i as i32,
            ..Folder::default()
        };
        for token in [None, Some("next\"page".to_string())] {
            let monitors: Vec<Monitor> = (0..7).map(monitor).collect();
            let model = ClientFolderContent {
                subfolders: Some(vec![folder(1), folder(2)]),
                tasks: Some(monitors.clone()),
                path: Some(vec![folder(0)]),
                continuation_token: token.clone(),
            };
            let ours = Listing {
                subfolders: vec![folder(1), folder(2)],
                tasks: monitors
                    .into_iter()
                    .enumerate()
                    .map(|(i, m)| match i % 2 {
                        0 => Listed::Kept(SharedMonitor::new("user", m)),
                        _ => Listed::Annotated(Box::new(m)),
                    })
                    .collect(),
                path: vec![folder(0)],
                continuation_token: token,
            };
            assert_eq!(
                serde_json::to_string(&ours).unwrap(),
                serde_json::to_string(&model).unwrap()
            );
        }
    }
}
