//! Folders: endpoints 7 to 10 (list, delete, create or update, move).

use super::auth::CurrentUser;
use super::body::{ApiJson, ApiQuery};
use super::paging::page_size;
use super::problem::{ApiError, Problem};
use super::{AppState, rules};
use crate::store::FolderKey;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;
use wachet::model::{ClientFolderContent, Folder, MoveRequest};

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
) -> Result<ApiJson<ClientFolderContent>, ApiError> {
    let limit = page_size(query.count)?;
    let parent = query.parent_id.as_deref().filter(|p| !p.is_empty());
    let scope = format!("folder:{user}:{}", parent.unwrap_or(""));
    let after: Option<FolderKey> = query
        .continuation_token
        .as_deref()
        .map(|token| state.inner.cursors.open(&scope, token))
        .transpose()?;
    let mut listing = state
        .store()
        .list_folder(&user, parent, after.as_ref(), limit)
        .await?;
    super::user::mark_confirmed(&state, &user, super::tasks::endpoints(&mut listing.tasks)).await?;
    super::locations::annotate(&state, &mut listing.tasks).await?;
    Ok(ApiJson(ClientFolderContent {
        subfolders: Some(listing.subfolders),
        tasks: Some(listing.tasks),
        path: Some(listing.path),
        continuation_token: listing
            .next
            .map(|key| state.inner.cursors.seal(&scope, &key)),
    }))
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
