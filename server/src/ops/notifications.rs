//! Notifications: a page of a user's notifications (newest first), one notification's
//! content, how each of its deliveries went, a retry of one delivery now, and the counts of
//! deliveries by state for the metrics.

use super::paging::PageQuery;
use super::{Ctx, OpError, UserId};
use crate::store::{DeliveryRecord, now_millis};
use serde::Serialize;
use wachet::model::{ClientAlertContentResponse, ClientNotificationRange};

/// How one delivery of a notification went.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryState {
    /// The delivery's id (the `X-Wachet-Delivery` header of webhooks; names it for a retry).
    pub id: String,
    /// Where it goes: the endpoint's address or URL.
    pub target: String,
    /// `pending` (not yet tried, or to be tried again), `delivered` or `failed` (for good).
    pub state: String,
    /// Tries so far.
    pub attempts: u32,
    /// The error of the last try, if it failed.
    pub last_error: Option<String>,
}

impl From<DeliveryRecord> for DeliveryState {
    fn from(record: DeliveryRecord) -> Self {
        DeliveryState {
            id: record.id,
            target: record.target,
            state: record.state,
            attempts: record.attempts,
            last_error: record.last_error,
        }
    }
}

/// One page of the user's notifications, newest first: of monitor `task` only when given,
/// with their HTML content when `html`.
pub async fn page(
    ctx: &Ctx,
    user: &UserId,
    task: Option<&str>,
    query: PageQuery<'_>,
    html: bool,
) -> Result<ClientNotificationRange, OpError> {
    let cursors = ctx.cursors();
    let task = task.filter(|t| !t.is_empty());
    let scope = format!("notification:{user}:{}", task.unwrap_or(""));
    let page = cursors.time_page(&scope, query.from, query.to, query.count, query.token)?;
    let mut rows = ctx.store().notifications(user, task, &page, html).await?;
    let (_, next) = cursors.page_end(&scope, &mut rows, page.limit);
    Ok(ClientNotificationRange {
        data: Some(rows.into_iter().map(|(_, n)| n).collect()),
        continuation_token: next,
    })
}

/// The user's notification `id` with its HTML content.
pub async fn get(
    ctx: &Ctx,
    user: &UserId,
    id: &str,
) -> Result<ClientAlertContentResponse, OpError> {
    Ok(ctx.store().notification(user, id).await?)
}

/// The deliveries of the user's notification `id` (the same [`OpError::NotFound`] for another
/// user's as for an unknown one).
pub async fn deliveries(ctx: &Ctx, user: &UserId, id: &str) -> Result<Vec<DeliveryState>, OpError> {
    // The owner is checked by reading the notification: the deliveries themselves are stored
    // by notification only.
    ctx.store().notification(user, id).await?;
    let deliveries = ctx.store().delivery_records(id).await?;
    Ok(deliveries.into_iter().map(DeliveryState::from).collect())
}

/// Makes the user's delivery `delivery` of notification `id` due now.
pub async fn retry(ctx: &Ctx, user: &UserId, id: &str, delivery: &str) -> Result<(), OpError> {
    ctx.store().notification(user, id).await?;
    ctx.store()
        .retry_delivery(user, Some(id), delivery, now_millis())
        .await?;
    Ok(())
}

/// The service's metrics in the Prometheus text format: the process's own
/// ([`crate::metrics`]), the deliveries of every user by state, and the database's failing
/// writes, which the store keeps ([`crate::store::health`]).
pub async fn metrics(ctx: &Ctx) -> Result<String, OpError> {
    metrics_of(ctx.store()).await
}

/// [`metrics`] of a process that has the database but no API (a worker's or a deliverer's
/// `--health-listen`).
pub async fn metrics_of(store: &dyn crate::store::Store) -> Result<String, OpError> {
    let deliveries = store.delivery_counts().await?;
    let mut text = crate::metrics::METRICS.render(&deliveries);
    crate::store::health::render_metrics(&mut text);
    Ok(text)
}
