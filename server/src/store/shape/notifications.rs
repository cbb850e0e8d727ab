//! Notifications as stored: the hourly limit on what a user's monitors raise, the JSON columns
//! of a new notification, and the rows read back as the API's notifications.

use crate::store::{Millis, NewNotification, StoreError, TimeKey};
use std::borrow::Cow;
use wachet::model::{AlertType, ClientAlertContentResponse, ClientNotification, JobType};

/// The window of the notifications limit.
const HOUR: Millis = 3_600_000;

/// The start of the hour, before `now`, whose notifications count against the limit.
pub(crate) fn hour_before(now: Millis) -> Millis {
    now - HOUR
}

/// How many of the user's recent notifications a count needs to read to apply `limit`.
pub(crate) fn counted_up_to(limit: u32) -> i64 {
    i64::from(limit) + 1
}

/// The notifications of a check of `task` to store, given `recent` notifications of the user
/// in the last hour: those the user's hourly `limit` lets through and, when some are left out,
/// the first of them saying how many, stored only when it is the one that fills the hour (so
/// an hour never sends more than `limit + 1`).
pub(crate) fn within_hourly_limit<'a>(
    task: &str,
    recent: i64,
    limit: u32,
    raised: &'a [NewNotification],
) -> Vec<Cow<'a, NewNotification>> {
    let recent = usize::try_from(recent).unwrap_or(usize::MAX);
    let room = (limit as usize).saturating_sub(recent).min(raised.len());
    let (sent, left) = raised.split_at(room);
    let mut stored: Vec<_> = sent.iter().map(Cow::Borrowed).collect();
    if let Some(first) = left.first()
        && recent + room == limit as usize
    {
        let held = left.len();
        tracing::warn!(%task, held, limit, "alerts over the hourly limit not sent");
        stored.push(Cow::Owned(first.clone().held(held, limit)));
    }
    stored
}

/// The JSON columns of a new notification: its alert and its explanation.
pub(crate) fn json_columns(n: &NewNotification) -> Result<(String, Option<String>), StoreError> {
    let alert =
        serde_json::to_string(&n.alert).map_err(|err| StoreError::Backend(err.to_string()))?;
    let explanation = n
        .explanation
        .as_ref()
        .map(serde_json::to_string)
        .transpose()
        .map_err(|err| StoreError::Backend(err.to_string()))?;
    Ok((alert, explanation))
}

/// A notification in a list (`I`: the width of the schema's small integers).
#[derive(sqlx::FromRow)]
pub(crate) struct Row<I> {
    id: String,
    alert_type: I,
    current_value: Option<String>,
    comparand: Option<String>,
    html: Option<String>,
    error: Option<String>,
    created_at: i64,
    task_id: String,
    task_name: Option<String>,
    url: Option<String>,
}

/// The columns of [`Row`], with `html` as given (the column or `NULL AS html`).
pub(crate) fn row_columns(html: &str) -> String {
    format!(
        "id, alert_type, current_value, comparand, {html}, error, created_at, task_id, task_name, \
         url"
    )
}

/// The API's notification of `row`, with its key in the list, as the server saw it at
/// `server_time`.
pub(crate) fn listed<I: Into<i64>>(
    row: Row<I>,
    server_time: chrono::DateTime<chrono::Utc>,
) -> Result<(TimeKey, ClientNotification), StoreError> {
    let code = row.alert_type.into();
    let key = TimeKey {
        at: row.created_at,
        id: row.id.clone(),
    };
    let notification = ClientNotification {
        id: Some(row.id),
        kind: AlertType::from_code(code)
            .ok_or_else(|| StoreError::Backend(format!("stored alert type {code}")))?,
        current: row.current_value,
        comparand: row.comparand,
        html: row.html,
        error: row.error,
        timestamp: super::time(row.created_at),
        server_time,
        task_id: Some(row.task_id),
        task_name: row.task_name,
        url: row.url,
    };
    Ok((key, notification))
}

/// A notification's content.
#[derive(sqlx::FromRow)]
pub(crate) struct ContentRow<I> {
    job_type: I,
    synthetic_expression: Option<String>,
    url: Option<String>,
    task_name: Option<String>,
    html: Option<String>,
    created_at: i64,
}

/// The API's content of a notification from its row.
pub(crate) fn content<I: Into<i64>>(
    row: ContentRow<I>,
) -> Result<ClientAlertContentResponse, StoreError> {
    let code = row.job_type.into();
    Ok(ClientAlertContentResponse {
        job_type: JobType::from_code(code)
            .ok_or_else(|| StoreError::Backend(format!("stored job type {code}")))?,
        synthetic_expression: row.synthetic_expression,
        url: row.url,
        name: row.task_name,
        html: row.html,
        timestamp_utc: super::time(row.created_at),
    })
}
