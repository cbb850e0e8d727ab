//! The notifications page (`/notifications`): the user's notifications, newest first, 50 a page
//! with the API's own continuation tokens (endpoint 4's code), each with its time, monitor,
//! alert type and content, and each delivery's state from the code of
//! `GET /notification/{alertId}/deliveries`; a failed delivery has a "Retry now" form, which
//! makes it due now through the outbox (the code of the retry extension), never sends inline.
//! A notification's HTML is ours but quotes page content: it is shown sanitised by ammonia
//! (no script, no style, no event attribute, only http, https and mailto links, only the
//! classes of our own content), never raw. Its change shows removed and added text marked and
//! the monitor's noise dimmed, with the legend the content carries.

use crate::ops::Ctx;
use crate::ops::OpError;
use crate::ops::notifications::{self as ops, DeliveryState};
use crate::ops::paging::PageQuery;
use crate::web::shared::clock::Now;
use crate::web::shared::error::PageError;
use crate::web::shared::extract::ActionForm;
use crate::web::shared::extract::SignedIn;
use crate::web::shared::extract::SignedInForm;
use crate::web::shared::layout::page;
use crate::web::shared::pages;
use crate::web::shared::session::Session;
use crate::web::shared::words::delivery_badge;
use crate::web::shared::words::tries;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, PreEscaped, html};
use serde::Deserialize;
use wachet::model::ClientNotification;

/// Notifications on one page, as the API's default.
const PAGE_SIZE: i64 = 50;

/// The query of the page.
#[derive(Debug, Default, Deserialize)]
pub struct ListQuery {
    /// The API's continuation token of the page.
    page: Option<String>,
}

/// `GET /notifications`.
pub async fn list(
    State(state): State<Ctx>,
    SignedIn(session): SignedIn,
    Query(query): Query<ListQuery>,
) -> Response {
    let first = query.page.is_none();
    let token = query.page.filter(|p| !p.is_empty());
    let page_query = PageQuery {
        count: Some(PAGE_SIZE),
        token: token.as_deref(),
        ..PageQuery::default()
    };
    let range = match ops::page(&state, &session.user, None, page_query, true).await {
        Ok(range) => range,
        Err(OpError::Invalid { .. }) => {
            return pages::bad_input(
                StatusCode::BAD_REQUEST,
                "The page of notifications asked for does not exist (the link is damaged or from another list).",
            );
        }
        Err(err) => return pages::from_op(err, Some(&session)),
    };
    let notifications = range.data.unwrap_or_default();
    let mut items = Vec::with_capacity(notifications.len());
    for notification in &notifications {
        let id = notification.id.as_deref().unwrap_or("");
        let deliveries = match ops::deliveries(&state, &session.user, id).await {
            Ok(deliveries) => deliveries,
            // Deleted with its monitor between the two reads: show it without deliveries.
            Err(OpError::NotFound) => Vec::new(),
            Err(err) => return pages::from_op(err, Some(&session)),
        };
        // Sanitising parses HTML: off the async threads, as values may be large.
        let html = notification.html.clone().unwrap_or_default();
        let clean = match tokio::task::spawn_blocking(move || sanitise(&html)).await {
            Ok(clean) => clean,
            Err(err) => {
                return pages::from_error(
                    PageError::Internal(format!("sanitise: {err}")),
                    Some(&session),
                );
            }
        };
        items.push(item(&session, notification, &clean, &deliveries));
    }
    let main = html! {
        div.page-head {
            h1 { "Notifications" }
            a.button href="/settings#endpoints" { "Where they go" }
        }
        @if notifications.is_empty() {
            p.empty {
                @if first { "No notifications yet. When a monitor's alert fires, it shows here with how each delivery went." }
                @else { "No older notifications." }
            }
        } @else {
            ol.notifications { @for item in &items { (item) } }
        }
        nav.pager aria-label="Pages" {
            @if !first { a.button href="/notifications" { "Newest" } " " }
            @if let Some(next) = &range.continuation_token {
                a.button href={ "/notifications?page=" (urlencode(next)) } rel="next" { "Older notifications" }
            }
        }
    };
    page("Notifications", Some(&session), main).into_response()
}

/// `GET /notifications/{id}`: one notification, where a webhook's `alertUrl` points when the
/// service has a public address: what fired, when, its content and its deliveries.
pub async fn show(
    State(state): State<Ctx>,
    SignedIn(session): SignedIn,
    Path(id): Path<String>,
) -> Response {
    let content = match ops::get(&state, &session.user, &id).await {
        Ok(content) => content,
        Err(err) => return pages::from_op(err, Some(&session)),
    };
    let deliveries = match ops::deliveries(&state, &session.user, &id).await {
        Ok(deliveries) => deliveries,
        Err(err) => return pages::from_op(err, Some(&session)),
    };
    let html = content.html.clone().unwrap_or_default();
    let clean = match tokio::task::spawn_blocking(move || sanitise(&html)).await {
        Ok(clean) => clean,
        Err(err) => {
            return pages::from_error(
                PageError::Internal(format!("sanitise: {err}")),
                Some(&session),
            );
        }
    };
    let name = content
        .name
        .as_deref()
        .filter(|n| !n.is_empty())
        .or(content.url.as_deref())
        .unwrap_or("(unnamed monitor)")
        .to_string();
    let main = html! {
        div.page-head {
            h1 { (name) }
            a.button href="/notifications" { "All notifications" }
        }
        article.card.notification {
            p.notification-meta {
                span.alert-type { (content.synthetic_expression.as_deref().unwrap_or("")) }
                " · "
                (Now::of(&session).when(Some(content.timestamp_utc)))
            }
            // Sanitised above by ammonia: only inert markup and web links remain.
            div.notification-content { (PreEscaped(clean)) }
            @if !deliveries.is_empty() {
                h2.visually-hidden { "Deliveries" }
                ul.deliveries aria-label="Deliveries" {
                    @for delivery in &deliveries { (delivery_row(&session, &id, delivery)) }
                }
            }
        }
    };
    page(&name, Some(&session), main).into_response()
}

fn urlencode(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

/// The notification's HTML with everything that could run, restyle or leave the page removed.
/// Only the classes our content uses survive (dimmed noise, folded context, the legend, the
/// rules' doubt), so the page's own styles show them; inline styles (for mail readers) are
/// dropped.
fn sanitise(html: &str) -> String {
    ammonia::Builder::default()
        .url_schemes(["http", "https", "mailto"].into_iter().collect())
        .add_allowed_classes("span", &["noise", "folded"])
        .add_allowed_classes("p", &["noise-legend", "first-seen", "error", "doubt"])
        .add_allowed_classes("pre", &["change"])
        .link_rel(Some("noopener noreferrer nofollow"))
        .clean(html)
        .to_string()
}

fn item(
    session: &Session,
    notification: &ClientNotification,
    clean_html: &str,
    deliveries: &[DeliveryState],
) -> Markup {
    let id = notification.id.as_deref().unwrap_or("");
    let name = notification
        .task_name
        .as_deref()
        .filter(|n| !n.is_empty())
        .or(notification.url.as_deref())
        .unwrap_or("(unnamed monitor)");
    let now = Now::of(session);
    html! {
        li.card.notification id={ "n-" (id) } {
            div.notification-head {
                div.grow {
                    @if let Some(task) = notification.task_id.as_deref() {
                        a.monitor-name href={ "/monitors/" (task) } { (name) }
                    } @else {
                        span.monitor-name { (name) }
                    }
                    p.notification-meta {
                        span.alert-type { (notification.kind.to_string()) }
                        " · "
                        (now.when(Some(notification.timestamp)))
                    }
                }
            }
            // Sanitised above by ammonia: only inert markup and web links remain.
            div.notification-content { (PreEscaped(clean_html)) }
            @if deliveries.is_empty() {
                p.hint { "No endpoint to deliver to: add one in Settings." }
            } @else {
                h2.visually-hidden { "Deliveries" }
                ul.deliveries aria-label="Deliveries" {
                    @for delivery in deliveries { (delivery_row(session, id, delivery)) }
                }
            }
        }
    }
}

fn delivery_row(session: &Session, notification: &str, delivery: &DeliveryState) -> Markup {
    let (class, label) = delivery_badge(&delivery.state);
    html! {
        li.delivery {
            span class=(class) { (label) }
            div.delivery-main {
                span.delivery-target { (delivery.target) }
                span.delivery-tries { (tries(delivery.attempts)) }
                @if let Some(error) = &delivery.last_error {
                    span.delivery-error { (error) }
                }
            }
            @if delivery.state == "failed" {
                form method="post" action={ "/notifications/" (notification) "/deliveries/" (delivery.id) "/retry" } {
                    input type="hidden" name="csrf" value=(session.csrf);
                    button.button.quiet type="submit" aria-label={ "Retry now: " (delivery.target) } { "Retry now" }
                }
            }
        }
    }
}

/// `POST /notifications/{id}/deliveries/{delivery}/retry`: the delivery is due now; back to the
/// list at the notification (post, redirect, get).
pub async fn retry(
    State(state): State<Ctx>,
    Path((id, delivery)): Path<(String, String)>,
    SignedInForm { session, form: _ }: SignedInForm<ActionForm>,
) -> Response {
    match ops::retry(&state, &session.user, &id, &delivery).await {
        Ok(()) => Redirect::to(&format!("/notifications#n-{id}")).into_response(),
        Err(err) => pages::from_op(err, Some(&session)),
    }
}
