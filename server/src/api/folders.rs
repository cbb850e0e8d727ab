//! Folders: endpoints 7 to 10 (list, delete, create or update, move).

use super::auth::CurrentUser;
use super::body::{ApiJson, ApiQuery};
use super::paging::page_size;
use super::problem::{ApiError, Problem};
use super::{AppState, rules};
use crate::store::FolderKey;
use crate::store::cache::SharedMonitor;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use wachet::model::{ClientFolderContent, Folder, MessagingServiceType, Monitor, MoveRequest};

/// Most ids one move may name.
const MAX_MOVED: usize = 1000;

/// Query of the folder listing.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
pub struct ListQuery {
    /// The folder to list; the root when omitted.
    parent_id: Option<String>,
    /// Items per page, 1 to 500, default 50 (an extension of the specification).
    count: Option<i64>,
    /// Where the next page starts, from the previous page.
    continuation_token: Option<String>,
}

/// Endpoint 7: a folder's subfolders (with recursive counts), then its monitors, each by name,
/// with the path from the root's child down to the folder.
#[utoipa::path(get, path = "/thirdparty/v1/folder/list", tag = "folder",
    security(("bearer" = [])),
    params(ListQuery),
    responses(
        (status = 200, description = "One page of the folder", body = ClientFolderContent),
        (status = 400, description = "Bad count or continuation token", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "No valid token", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such folder", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_folder(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> Result<ApiJson<Listing>, ApiError> {
    let limit = page_size(query.count)?;
    let parent = query.parent_id.as_deref().filter(|p| !p.is_empty());
    let scope = format!("folder:{user}:{}", parent.unwrap_or(""));
    let after: Option<FolderKey> = query
        .continuation_token
        .as_deref()
        .map(|token| state.inner.cursors.open(&scope, token))
        .transpose()?;
    let listing = state
        .store()
        .list_folder(&user, parent, after.as_ref(), limit)
        .await?;
    // Only a monitor with an e-mail endpoint (`confirmed`) or at a location nobody serves
    // (`locationNotice`) is told more than the store keeps; every other one is written as kept.
    let checker = state.checker();
    let annotated = |monitor: &Monitor| {
        !checker.serves(monitor.location)
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
    super::user::mark_confirmed(&state, &user, super::tasks::endpoints(&mut fresh)).await?;
    super::locations::annotate(&state, &mut fresh).await?;
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
    Ok(ApiJson(Listing {
        subfolders: listing.subfolders,
        tasks,
        path: listing.path,
        continuation_token: listing
            .next
            .map(|key| state.inner.cursors.seal(&scope, &key)),
    }))
}

/// A page of a folder as written: the JSON of [`ClientFolderContent`], with each monitor the
/// store's cache already wrote copied in rather than written again (a page of 50 is 38 KB).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Listing {
    subfolders: Vec<Folder>,
    tasks: Vec<Listed>,
    path: Vec<Folder>,
    continuation_token: Option<String>,
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

/// Endpoint 8: deletes a folder with its subfolders and their monitors, history and
/// notifications.
#[utoipa::path(delete, path = "/thirdparty/v1/folder/{id}", tag = "folder",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "Folder id")),
    responses(
        (status = 200, description = "Deleted"),
        (status = 401, description = "No valid token", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such folder", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn delete_folder(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    state.store().delete_folder(&user, &id).await?;
    Ok(StatusCode::OK)
}

/// Endpoint 9: creates a folder (no `id`) or renames and re-parents one (`id`).
#[utoipa::path(post, path = "/thirdparty/v1/folder", tag = "folder",
    security(("bearer" = [])),
    request_body(content = Folder, content_type = "application/json"),
    responses(
        (status = 200, description = "The stored folder with its counts", body = Folder),
        (status = 400, description = "A field fails validation, or the parent is the folder itself or inside it", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "No valid token", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such folder (update)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn save_folder(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    ApiJson(folder): ApiJson<Folder>,
) -> Result<ApiJson<Folder>, ApiError> {
    rules::folder(&folder)?;
    Ok(ApiJson(state.store().save_folder(&user, &folder).await?))
}

/// Endpoint 10: moves monitors and folders into a folder (the root when `folderId` is null),
/// all or nothing.
#[utoipa::path(post, path = "/thirdparty/v1/folder/move", tag = "folder",
    security(("bearer" = [])),
    request_body(content = MoveRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "Moved"),
        (status = 400, description = "A folder would move into itself or its own subfolders", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "No valid token", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "The target or a moved item does not exist", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn move_items(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    ApiJson(request): ApiJson<MoveRequest>,
) -> Result<StatusCode, ApiError> {
    let moved = request.task_ids.as_ref().map_or(0, Vec::len)
        + request.folder_ids.as_ref().map_or(0, Vec::len);
    if moved > MAX_MOVED {
        return Err(ApiError::field(
            "taskIds",
            format!("at most {MAX_MOVED} monitors and folders in one move"),
        ));
    }
    state.store().move_items(&user, &request).await?;
    Ok(StatusCode::OK)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wachet::model::{ClientData, NotificationEndpoint};

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
                    kind: MessagingServiceType::Email,
                    value: Some(format!("u{i}@example.com")),
                    confirmed: Some(i.is_multiple_of(2)),
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
