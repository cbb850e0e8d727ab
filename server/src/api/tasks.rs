//! Monitors: endpoints 11 to 15 (create or update, read, delete, search, a Portal monitor's
//! pages), over [`crate::ops::monitors`].

use super::auth::CurrentUser;
use super::body::{ApiJson, ApiJsonList, ApiQuery};
use super::problem::{ApiError, Problem};
use crate::ops::Ctx;
use crate::ops::monitors;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;
use wachet::model::{ClientPage, Monitor};

/// Endpoint 11: creates a monitor (no `id`) or replaces one (`id`). An update with a null
/// `folderId` keeps the monitor's folder; moving is `POST /folder/move`.
#[utoipa::path(put, path = "/thirdparty/v1/task", tag = "task",
    security(("bearer" = [])),
    request_body(content = Monitor, content_type = "application/json"),
    responses(
        (status = 200, description = "The stored monitor", body = Monitor),
        (status = 400, description = "A field fails validation", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "No valid token", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such monitor (update)", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "Validation took too long", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn put_task(
    State(state): State<Ctx>,
    CurrentUser(user): CurrentUser,
    ApiJson(monitor): ApiJson<Monitor>,
) -> Result<ApiJson<Monitor>, ApiError> {
    Ok(ApiJson(monitors::save(&state, &user, monitor).await?))
}

/// Creates several monitors at once, all of them or none (extension).
#[utoipa::path(put, path = "/thirdparty/v1/tasks", tag = "task",
    description = "Extension: creates several monitors at once, all of them or none (one \
                   transaction; the quota counts them together). Each is validated as PUT /task \
                   validates one, and a problem is named [i].field for the i-th; the form only \
                   creates (an id is refused: update with PUT /task). At most 1,000 a request \
                   (and a body of 1 MiB).",
    security(("bearer" = [])),
    request_body(content = Vec<Monitor>, content_type = "application/json"),
    responses(
        (status = 200, description = "The stored monitors, in order, with their ids", body = Vec<Monitor>),
        (status = 400, description = "A monitor fails validation (`[i].field`), none or too many were given, or they would pass the quota: none was created", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "No valid token", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "Validation took too long", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn put_tasks(
    State(state): State<Ctx>,
    CurrentUser(user): CurrentUser,
    ApiJsonList(list): ApiJsonList<Monitor>,
) -> Result<ApiJson<Vec<Monitor>>, ApiError> {
    Ok(ApiJson(monitors::create_many(&state, &user, list).await?))
}

/// Endpoint 12: a monitor with its latest data.
#[utoipa::path(get, path = "/thirdparty/v1/task/{id}", tag = "task",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "Monitor id")),
    responses(
        (status = 200, description = "The monitor", body = Monitor),
        (status = 401, description = "No valid token", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such monitor", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn get_task(
    State(state): State<Ctx>,
    CurrentUser(user): CurrentUser,
    Path(id): Path<String>,
) -> Result<ApiJson<Monitor>, ApiError> {
    Ok(ApiJson(monitors::get(&state, &user, &id).await?))
}

/// Endpoint 13: deletes a monitor with its pages, history and notifications.
#[utoipa::path(delete, path = "/thirdparty/v1/task/{id}", tag = "task",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "Monitor id")),
    responses(
        (status = 200, description = "Deleted"),
        (status = 401, description = "No valid token", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such monitor", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn delete_task(
    State(state): State<Ctx>,
    CurrentUser(user): CurrentUser,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    monitors::delete(&state, &user, &id).await?;
    Ok(StatusCode::OK)
}

/// The search query.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SearchQuery {
    /// White-space separated terms; a monitor matches when every term is a case-insensitive
    /// substring of its name, URL or note. Empty: every monitor.
    pub(crate) query: Option<String>,
}

/// Endpoint 14: monitors matching every term, by name, at most 500.
#[utoipa::path(get, path = "/thirdparty/v1/task/search", tag = "task",
    security(("bearer" = [])),
    params(SearchQuery),
    responses(
        (status = 200, description = "Matching monitors, by name", body = [Monitor]),
        (status = 400, description = "The query is too long", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "No valid token", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn search_tasks(
    State(state): State<Ctx>,
    CurrentUser(user): CurrentUser,
    ApiQuery(query): ApiQuery<SearchQuery>,
) -> Result<ApiJson<Vec<Monitor>>, ApiError> {
    let query = query.query.unwrap_or_default();
    Ok(ApiJson(monitors::search(&state, &user, &query).await?))
}

/// Endpoint 15: the pages a Portal monitor crawled, each with its latest data.
#[utoipa::path(get, path = "/thirdparty/v1/task/{id}/pages", tag = "task",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "Portal monitor id")),
    responses(
        (status = 200, description = "Crawled pages, by URL; empty until the first crawl", body = [ClientPage]),
        (status = 400, description = "The monitor is not a Portal monitor", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "No valid token", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such monitor", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn task_pages(
    State(state): State<Ctx>,
    CurrentUser(user): CurrentUser,
    Path(id): Path<String>,
) -> Result<ApiJson<Vec<ClientPage>>, ApiError> {
    Ok(ApiJson(monitors::pages(&state, &user, &id).await?))
}
