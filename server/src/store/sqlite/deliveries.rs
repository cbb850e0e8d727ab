//! The outbox: deliveries of notifications to endpoints, claimed under a lease and retried.

use super::{SqliteStore, time};
use crate::store::{Delivery, DeliveryOutcome, Millis, StoreError, new_id, now_millis};
use sqlx::{Sqlite, Transaction};
use wachet::model::{AlertType, ClientNotification, MessagingServiceType, NotificationEndpoint};

/// Why a delivery to an address nobody confirmed is not sent.
pub const UNCONFIRMED: &str = "the address has not confirmed that it wants notifications: a \
                               confirmation code was mailed to it, to enter with POST \
                               /thirdparty/v1/user/notificationEndpoints/confirm";

/// Writes a notification's deliveries, in the transaction that stores it: to `endpoints`, or
/// (when empty) to every endpoint of the monitor's owner. An e-mail address other than the
/// owner's own that is not confirmed gets no message: its delivery is failed at once with
/// [`UNCONFIRMED`], and a confirmation message is asked for (when the owner may have one more
/// address waiting).
pub(super) async fn create_in(
    tx: &mut Transaction<'_, Sqlite>,
    notification: &str,
    task: &str,
    endpoints: &[NotificationEndpoint],
    now: Millis,
) -> Result<(), StoreError> {
    let (user, email, json): (String, String, String) = sqlx::query_as(
        "SELECT u.id, u.email, u.notification_endpoints FROM users u \
         JOIN tasks t ON t.user_id = u.id WHERE t.id = ?",
    )
    .bind(task)
    .fetch_one(&mut **tx)
    .await?;
    let owned;
    let endpoints = if endpoints.is_empty() {
        owned = serde_json::from_str::<Vec<NotificationEndpoint>>(&json)
            .map_err(|err| StoreError::Backend(format!("stored endpoints: {err}")))?;
        &owned[..]
    } else {
        endpoints
    };
    for endpoint in endpoints {
        let target = endpoint.value.as_deref().unwrap_or("");
        let unconfirmed = endpoint.kind == MessagingServiceType::Email
            && !confirmed(tx, &user, &email, target).await?;
        if unconfirmed {
            let address = target.trim().to_lowercase();
            match super::users::request_in(tx, &user, &address, now, false).await {
                Ok(()) | Err(StoreError::Invalid { .. }) => {}
                Err(err) => return Err(err),
            }
        }
        sqlx::query(
            "INSERT INTO deliveries (id, notification_id, kind, target, state, next_attempt_at, \
             updated_at, user_id, last_error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(new_id())
        .bind(notification)
        .bind(endpoint.kind.code())
        .bind(target)
        .bind(if unconfirmed { "failed" } else { "pending" })
        .bind(now)
        .bind(now)
        .bind(&user)
        .bind(unconfirmed.then_some(UNCONFIRMED))
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}

/// Whether `user` (whose own address is `own`) may get e-mail at `address`.
async fn confirmed(
    tx: &mut Transaction<'_, Sqlite>,
    user: &str,
    own: &str,
    address: &str,
) -> Result<bool, StoreError> {
    let address = address.trim().to_lowercase();
    if address == own {
        return Ok(true);
    }
    let found: Option<(i64,)> = sqlx::query_as(
        "SELECT 1 FROM email_addresses WHERE user_id = ? AND address = ? \
         AND confirmed_at IS NOT NULL",
    )
    .bind(user)
    .bind(&address)
    .fetch_optional(&mut **tx)
    .await?;
    Ok(found.is_some())
}

#[derive(sqlx::FromRow)]
struct DueRow {
    id: String,
    kind: i64,
    target: String,
    attempts: i64,
    notification_id: String,
    alert_type: i64,
    alert: String,
    current_value: Option<String>,
    comparand: Option<String>,
    error: Option<String>,
    created_at: i64,
    task_id: String,
    task_name: Option<String>,
    url: Option<String>,
    webhook_secret: String,
    html: Option<String>,
    synthetic_expression: Option<String>,
    user_id: Option<String>,
    released_at: Option<i64>,
}

pub(super) async fn claim(
    store: &SqliteStore,
    now: Millis,
    lease_until: Millis,
    limit: u32,
) -> Result<Vec<Delivery>, StoreError> {
    let mut tx = store.write().await?;
    let rows: Vec<DueRow> = sqlx::query_as(
        "SELECT d.id, d.kind, d.target, d.attempts, n.id AS notification_id, n.alert_type, \
         n.alert, n.current_value, n.comparand, n.error, n.created_at, n.task_id, n.task_name, \
         n.url, u.webhook_secret, n.html, n.synthetic_expression, d.user_id, d.released_at \
         FROM deliveries d \
         JOIN notifications n ON n.id = d.notification_id \
         JOIN users u ON u.id = n.user_id \
         WHERE d.state = 'pending' AND d.next_attempt_at <= ? \
         AND (d.lease_until IS NULL OR d.lease_until < ?) \
         ORDER BY d.next_attempt_at LIMIT ?",
    )
    .bind(now)
    .bind(now)
    .bind(i64::from(limit))
    .fetch_all(&mut *tx)
    .await?;
    let mut claimed = Vec::with_capacity(rows.len());
    for row in rows {
        // A first try is released only when the user's deliveries of the last hour leave room;
        // otherwise it waits (pending, its time moved) until they do. Retries were counted.
        let held = match (row.released_at, &row.user_id, store.deliveries_per_hour) {
            (None, Some(user), Some(per_hour)) => {
                hour_full_until(&mut tx, user, per_hour, now).await?
            }
            _ => None,
        };
        if let Some(free_at) = held {
            sqlx::query("UPDATE deliveries SET next_attempt_at = ? WHERE id = ?")
                .bind(free_at)
                .bind(&row.id)
                .execute(&mut *tx)
                .await?;
            continue;
        }
        sqlx::query(
            "UPDATE deliveries SET lease_until = ?, released_at = COALESCE(released_at, ?) \
             WHERE id = ?",
        )
        .bind(lease_until)
        .bind(now)
        .bind(&row.id)
        .execute(&mut *tx)
        .await?;
        let broken = |what: &str| StoreError::Backend(format!("delivery {}: {what}", row.id));
        let kind = MessagingServiceType::from_code(row.kind).ok_or_else(|| broken("kind"))?;
        let alert_type = AlertType::from_code(row.alert_type).ok_or_else(|| broken("type"))?;
        let alert = serde_json::from_str(&row.alert).map_err(|_| broken("alert"))?;
        claimed.push(Delivery {
            id: row.id,
            kind,
            target: row.target,
            attempts: u32::try_from(row.attempts).unwrap_or(0),
            notification: ClientNotification {
                id: Some(row.notification_id),
                kind: alert_type,
                current: row.current_value,
                comparand: row.comparand,
                html: None,
                error: row.error,
                timestamp: time(row.created_at),
                server_time: time(now),
                task_id: Some(row.task_id),
                task_name: row.task_name,
                url: row.url,
            },
            alert,
            secret: row.webhook_secret,
            html: row.html.unwrap_or_default(),
            synthetic_expression: row.synthetic_expression.unwrap_or_default(),
        });
    }
    tx.commit().await?;
    Ok(claimed)
}

/// When `user` may have another delivery released, if the last hour already holds `per_hour`
/// of theirs: an hour after the `per_hour`-th newest.
async fn hour_full_until(
    tx: &mut Transaction<'_, Sqlite>,
    user: &str,
    per_hour: std::num::NonZeroU32,
    now: Millis,
) -> Result<Option<Millis>, StoreError> {
    const HOUR: Millis = 3_600_000;
    let nth: Option<(Millis,)> = sqlx::query_as(
        "SELECT released_at FROM deliveries WHERE user_id = ? AND released_at IS NOT NULL \
         ORDER BY released_at DESC LIMIT 1 OFFSET ?",
    )
    .bind(user)
    .bind(i64::from(per_hour.get()) - 1)
    .fetch_optional(&mut **tx)
    .await?;
    Ok(nth.map(|(at,)| at + HOUR).filter(|free_at| *free_at > now))
}

pub(super) async fn finish(
    store: &SqliteStore,
    id: &str,
    outcome: &DeliveryOutcome,
) -> Result<(), StoreError> {
    let (state, next, error) = match outcome {
        DeliveryOutcome::Delivered => ("delivered", None, None),
        DeliveryOutcome::Retry { at, error } => ("pending", Some(*at), Some(error.as_str())),
        DeliveryOutcome::Failed { error } => ("failed", None, Some(error.as_str())),
    };
    sqlx::query(
        "UPDATE deliveries SET state = ?, attempts = attempts + 1, \
         next_attempt_at = COALESCE(?, next_attempt_at), last_error = ?, lease_until = NULL, \
         updated_at = ? WHERE id = ?",
    )
    .bind(state)
    .bind(next)
    .bind(error)
    .bind(now_millis())
    .bind(id)
    .execute(&store.writer)
    .await?;
    Ok(())
}

pub(super) async fn of_notification(
    store: &SqliteStore,
    notification: &str,
) -> Result<Vec<(String, String, u32, Option<String>)>, StoreError> {
    let rows: Vec<(String, String, i64, Option<String>)> = sqlx::query_as(
        "SELECT target, state, attempts, last_error FROM deliveries \
         WHERE notification_id = ? ORDER BY target",
    )
    .bind(notification)
    .fetch_all(&store.reader)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(target, state, attempts, error)| {
            (target, state, u32::try_from(attempts).unwrap_or(0), error)
        })
        .collect())
}

pub(super) async fn counts(store: &SqliteStore) -> Result<Vec<(String, u64)>, StoreError> {
    let rows: Vec<(String, i64)> =
        sqlx::query_as("SELECT state, COUNT(*) FROM deliveries GROUP BY state")
            .fetch_all(&store.reader)
            .await?;
    Ok(rows
        .into_iter()
        .map(|(state, n)| (state, u64::try_from(n).unwrap_or(0)))
        .collect())
}
