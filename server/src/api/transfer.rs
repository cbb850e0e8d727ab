//! Moving in and out (extensions): `POST /import` takes a file (a wachet export, a
//! changedetection.io backup, an urlwatch or webchanges jobs file, a Wachete XLSX export; its
//! media type names its format, or its first bytes do) and answers what came in and what was
//! not carried over; `GET /export` streams the user's export. Both are
//! [`crate::ops::transfer`]'s operations, as the web interface calls them. An export asked
//! for with `secrets=true` carries the monitors' secrets encrypted to the passphrase of the
//! `X-Wachet-Passphrase` header, and an import of such a file needs the same header: a header,
//! not the query, so the passphrase stays out of access logs and browser histories.

use super::auth::CurrentUser;
use super::body::{ApiJson, ApiQuery};
use super::problem::{ApiError, Problem};
use crate::ops::Ctx;
use crate::ops::transfer::{self, ImportRequest, Report};
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::response::Response;
use serde::Deserialize;

/// The import's query.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
pub struct ImportQuery {
    /// Only answer what would come in; store nothing.
    #[serde(default, deserialize_with = "crate::ops::query::deserialize_boolean")]
    dry_run: bool,
    /// Bring the history too (changedetection.io's snapshots, an export's entries).
    #[serde(default, deserialize_with = "crate::ops::query::deserialize_boolean")]
    history: bool,
}

/// The export's query.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ExportQuery {
    /// Write each monitor's history too.
    #[serde(default, deserialize_with = "crate::ops::query::deserialize_boolean")]
    history: bool,
    /// Write the monitors' secrets (secret step values, notification endpoints' values),
    /// encrypted to the passphrase of the `X-Wachet-Passphrase` header.
    #[serde(default, deserialize_with = "crate::ops::query::deserialize_boolean")]
    secrets: bool,
}

/// The header that carries the passphrase of an export's secrets.
pub const PASSPHRASE_HEADER: &str = "x-wachet-passphrase";

/// The passphrase of the request's header, if any; a header that is not text is an invalid
/// `passphrase` (its value is never repeated).
fn passphrase(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    headers
        .get(PASSPHRASE_HEADER)
        .map(|value| {
            value.to_str().map(str::to_string).map_err(|_| {
                ApiError::from(crate::ops::OpError::field(
                    "passphrase",
                    "the X-Wachet-Passphrase header is not visible ASCII text",
                ))
            })
        })
        .transpose()
}

/// A file's bytes, read up to [`transfer::MAX_FILE_BYTES`] (the API's 1 MiB body limit is for
/// JSON requests, not for a backup).
async fn file_bytes(body: Body) -> Result<Bytes, ApiError> {
    axum::body::to_bytes(body, transfer::MAX_FILE_BYTES)
        .await
        .map_err(|_| ApiError::PayloadTooLarge)
}

/// Imports a file (extension).
#[utoipa::path(post, path = "/thirdparty/v1/import", tag = "task",
    description = "Extension: brings monitors in from a file, all of them or none: a wachet \
                   export (application/json), a changedetection.io backup zip, either layout \
                   (application/zip), an urlwatch urls.yaml or webchanges jobs.yaml \
                   (application/yaml), a Wachete XLSX export (application/vnd.openxmlformats-\
                   officedocument.spreadsheetml.sheet); another media type (such as \
                   application/octet-stream) has the format read from the file's first bytes. \
                   At most 64 MiB. Each monitor is validated as PUT /task validates one, the \
                   quota counts them together, and one already watched (same URL, method, body \
                   and selection) or twice in the file is left out. The answer names what came \
                   in and, item by item, what was not carried over and why. A wachet export that \
                   carries secrets (GET /export?secrets=true) needs their passphrase in the \
                   X-Wachet-Passphrase header: without it, or with another, nothing is imported.",
    security(("bearer" = [])),
    params(ImportQuery),
    request_body(content = Vec<u8>, description = "The file", content_type = "application/octet-stream"),
    responses(
        (status = 200, description = "What came in (or, with dryRun, would come in) and what was not carried over", body = Object),
        (status = 400, description = "The file cannot be read, is refused (unsafe or too large archive, newer tool version), or monitors of it are invalid (each named by its item); nothing was stored", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "No valid token", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "The file is over 64 MiB", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn import(
    State(state): State<Ctx>,
    CurrentUser(user): CurrentUser,
    ApiQuery(query): ApiQuery<ImportQuery>,
    headers: HeaderMap,
    body: Body,
) -> Result<ApiJson<Report>, ApiError> {
    let bytes = file_bytes(body).await?;
    let media_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    let passphrase = passphrase(&headers)?;
    let request = ImportRequest {
        bytes: &bytes,
        media_type,
        history: query.history,
        dry_run: query.dry_run,
        passphrase: passphrase.as_deref(),
    };
    Ok(ApiJson(transfer::import(&state, &user, request).await?))
}

/// The user's export as an attachment, streamed.
fn export_response(
    state: &Ctx,
    user: &str,
    history: bool,
    secrets: Option<std::sync::Arc<crate::transfer::export::WithSecrets>>,
) -> Response {
    crate::download::attachment(
        "application/json",
        transfer::EXPORT_FILE_NAME,
        transfer::export(state, user, history, secrets),
    )
}

/// Exports the user's folders, monitors and endpoints (extension).
#[utoipa::path(get, path = "/thirdparty/v1/export", tag = "task",
    description = "Extension: the user's folders, monitors (as GET /task gives them) and \
                   notification endpoints (a URL endpoint without its value, which is a secret), \
                   and with history=true each monitor's history, as one JSON document \
                   {\"format\":\"wachet-export\",\"version\":1,...,\"complete\":true}, streamed. \
                   With secrets=true the monitors' secret step values and endpoint values are \
                   written encrypted to the passphrase of the X-Wachet-Passphrase header (at \
                   least 8 characters; argon2id and AES-256-GCM). POST /import reads it back \
                   (with the same header when it carries secrets).",
    security(("bearer" = [])),
    params(ExportQuery),
    responses(
        (status = 200, description = "The export", body = Object),
        (status = 400, description = "secrets=true without a passphrase, or one shorter than 8 characters", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "No valid token", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn export(
    State(state): State<Ctx>,
    CurrentUser(user): CurrentUser,
    ApiQuery(query): ApiQuery<ExportQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let secrets = match (query.secrets, passphrase(&headers)?) {
        (false, _) => None,
        (true, Some(given)) => Some(transfer::export_secrets(&state, given).await?),
        (true, None) => {
            return Err(ApiError::from(crate::ops::OpError::field(
                "passphrase",
                "secrets=true needs the passphrase they are encrypted to, in the \
                 X-Wachet-Passphrase header",
            )));
        }
    };
    Ok(export_response(&state, &user, query.history, secrets))
}
