//! Monitors: endpoints 11 to 15 (create or update, read, delete, search, a Portal monitor's
//! pages).

use super::auth::CurrentUser;
use super::body::{ApiJson, ApiJsonList, ApiQuery};
use super::problem::{ApiError, Problem};
use super::user::mark_confirmed;
use super::{AppState, rules};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;
use wachet::model::{ClientJobType, ClientPage, LocationCode, Monitor};

/// Most monitors a search returns.
pub const MAX_SEARCH_RESULTS: u32 = 500;
/// Longest search expression.
const MAX_QUERY_CHARS: usize = 1000;

/// Longest a monitor's validation may take, waiting for its turn included.
const VALIDATION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Validates `monitor` for storing ([`rules::monitor`]). Compiling its regexes and XPaths is
/// CPU work (bounded by the engine's limits, tens of milliseconds at worst), so it runs on the
/// blocking pool, a few at a time ([`super::Inner::validations`]), while the async threads go on
/// serving everyone's other requests. Past [`VALIDATION_TIMEOUT`] the answer is 503; the
/// compilation then finishes on its own, still holding its turn.
pub(crate) async fn validate(state: &AppState, monitor: Monitor) -> Result<Monitor, ApiError> {
    let busy = || {
        ApiError::Unavailable(
            format!(
                "validating the monitor took longer than {} s; try again",
                VALIDATION_TIMEOUT.as_secs()
            ),
            VALIDATION_TIMEOUT.as_secs(),
        )
    };
    let served = super::locations::served_by_workers(state, monitor.location).await?;
    let work = async {
        let permit = state
            .inner
            .validations
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| ApiError::Internal("the validation queue is closed".into()))?;
        let checker = state.inner.checker.clone();
        let min_recurrence = state.inner.settings.min_recurrence;
        tokio::task::spawn_blocking(move || {
            // A location live workers check from needs no proxy here: the engine judges the rest.
            let judged = match served {
                true => std::borrow::Cow::Owned(Monitor {
                    location: LocationCode::Default,
                    ..monitor.clone()
                }),
                false => std::borrow::Cow::Borrowed(&monitor),
            };
            let result = rules::monitor(checker.as_ref(), &judged, min_recurrence);
            drop(judged);
            drop(permit);
            result.map(|()| monitor)
        })
        .await
        .map_err(|err| ApiError::Internal(format!("validating a monitor: {err}")))?
    };
    tokio::time::timeout(VALIDATION_TIMEOUT, work)
        .await
        .map_err(|_| busy())?
}

/// `monitor` with the secrets of its notification URLs sealed for `user`.
fn sealed(state: &AppState, user: &str, mut monitor: Monitor) -> Result<Monitor, ApiError> {
    super::user::seal(
        state,
        user,
        "notificationEndpoints",
        monitor.notification_endpoints.iter_mut().flatten(),
    )?;
    Ok(monitor)
}

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
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    ApiJson(monitor): ApiJson<Monitor>,
) -> Result<ApiJson<Monitor>, ApiError> {
    let monitor = validate(&state, monitor).await?;
    let monitor = sealed(&state, &user, monitor)?;
    let mut stored = match monitor.id {
        None => state.store().create_task(&user, &monitor).await?,
        Some(_) => state.store().update_task(&user, &monitor).await?,
    };
    mark_confirmed(&state, &user, endpoints(std::slice::from_mut(&mut stored))).await?;
    super::locations::annotate(&state, std::slice::from_mut(&mut stored)).await?;
    Ok(ApiJson(stored))
}

/// Most monitors one bulk creation takes ([`put_tasks`]).
pub const MAX_BULK: usize = 1_000;

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
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    ApiJsonList(monitors): ApiJsonList<Monitor>,
) -> Result<ApiJson<Vec<Monitor>>, ApiError> {
    if monitors.is_empty() || monitors.len() > MAX_BULK {
        return Err(ApiError::field(
            "body",
            format!("give 1 to {MAX_BULK} monitors, not {}", monitors.len()),
        ));
    }
    let mut errors = std::collections::BTreeMap::new();
    let mut valid = Vec::with_capacity(monitors.len());
    for (i, monitor) in monitors.into_iter().enumerate() {
        if monitor.id.is_some() {
            errors.insert(
                format!("[{i}].id"),
                vec!["the bulk form only creates monitors; update one with PUT /task".into()],
            );
            continue;
        }
        match validate(&state, monitor)
            .await
            .and_then(|monitor| sealed(&state, &user, monitor))
        {
            Ok(monitor) => valid.push(monitor),
            Err(ApiError::BadRequest { errors: found, .. }) => {
                for (field, messages) in found {
                    errors.insert(format!("[{i}].{field}"), messages);
                }
            }
            Err(other) => return Err(other),
        }
    }
    if !errors.is_empty() {
        return Err(ApiError::BadRequest {
            detail: "the request has invalid fields; no monitor was created".into(),
            errors,
        });
    }
    let mut stored = state.store().create_tasks(&user, &valid).await?;
    mark_confirmed(&state, &user, endpoints(&mut stored)).await?;
    super::locations::annotate(&state, &mut stored).await?;
    Ok(ApiJson(stored))
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
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path(id): Path<String>,
) -> Result<ApiJson<Monitor>, ApiError> {
    let mut monitor = state.store().task(&user, &id).await?;
    mark_confirmed(&state, &user, endpoints(std::slice::from_mut(&mut monitor))).await?;
    super::locations::annotate(&state, std::slice::from_mut(&mut monitor)).await?;
    Ok(ApiJson(monitor))
}

/// The notification endpoints of `monitors`, for [`mark_confirmed`].
pub(crate) fn endpoints(
    monitors: &mut [Monitor],
) -> impl Iterator<Item = &mut wachet::model::NotificationEndpoint> {
    monitors
        .iter_mut()
        .flat_map(|monitor| monitor.notification_endpoints.iter_mut().flatten())
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
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    state.store().delete_task(&user, &id).await?;
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
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    ApiQuery(query): ApiQuery<SearchQuery>,
) -> Result<ApiJson<Vec<Monitor>>, ApiError> {
    let query = query.query.unwrap_or_default();
    if query.chars().count() > MAX_QUERY_CHARS {
        return Err(ApiError::field(
            "query",
            format!("must be at most {MAX_QUERY_CHARS} characters"),
        ));
    }
    let terms: Vec<String> = query.split_whitespace().map(str::to_string).collect();
    let mut found = state
        .store()
        .search_tasks(&user, &terms, MAX_SEARCH_RESULTS)
        .await?;
    mark_confirmed(&state, &user, endpoints(&mut found)).await?;
    super::locations::annotate(&state, &mut found).await?;
    Ok(ApiJson(found))
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
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path(id): Path<String>,
) -> Result<ApiJson<Vec<ClientPage>>, ApiError> {
    let monitor = state.store().task(&user, &id).await?;
    if monitor.job_type != ClientJobType::Portal {
        return Err(ApiError::field(
            "id",
            "the monitor is a SinglePage monitor; only Portal monitors have pages",
        ));
    }
    Ok(ApiJson(state.store().task_pages(&user, &id).await?))
}
