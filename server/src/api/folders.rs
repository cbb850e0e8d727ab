//! Folders: endpoints 7 to 10 (list, delete, create or update, move), over
//! [`crate::ops::folders`].

use super::auth::CurrentUser;
use super::body::{ApiJson, ApiQuery};
use super::problem::{ApiError, Problem};
use crate::ops::Ctx;
use crate::ops::folders::{self, Listing};
use crate::ops::paging::page_size;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;
use wachet::model::{ClientFolderContent, Folder, MoveRequest};

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
    State(state): State<Ctx>,
    CurrentUser(user): CurrentUser,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> Result<ApiJson<Listing>, ApiError> {
    let limit = page_size(query.count)?;
    Ok(ApiJson(
        folders::list(
            &state,
            &user,
            query.parent_id.as_deref(),
            limit,
            query.continuation_token.as_deref(),
        )
        .await?,
    ))
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
    State(state): State<Ctx>,
    CurrentUser(user): CurrentUser,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    folders::delete(&state, &user, &id).await?;
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
    State(state): State<Ctx>,
    CurrentUser(user): CurrentUser,
    ApiJson(folder): ApiJson<Folder>,
) -> Result<ApiJson<Folder>, ApiError> {
    Ok(ApiJson(folders::save(&state, &user, &folder).await?))
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
    State(state): State<Ctx>,
    CurrentUser(user): CurrentUser,
    ApiJson(request): ApiJson<MoveRequest>,
) -> Result<StatusCode, ApiError> {
    folders::move_items(&state, &user, &request).await?;
    Ok(StatusCode::OK)
}
