//! Point-and-click selection: the picker page (`/monitors/pick?url=…`, or `/monitors/{id}/pick`
//! for a monitor, fetching with its request and rendering settings) fetches the page through
//! the engine exactly as a check would ([`wachet::Checker::page_source`], under the network
//! policy), keeps it in the bounded [`PickStore`], and shows it made inert
//! ([`wachet::extract::inert::inert_html`]) in a frame sandboxed without scripts
//! (`/monitors/pick/frame/{token}`, served with a Content-Security-Policy of its own). The
//! value of an xPath and excludeXPath is always the engine's, computed on the kept page
//! ([`wachet::PreparedMonitor::evaluate`]): the "Try" form without scripts, and
//! `/monitors/pick/value` for `picker.js`, which proposes XPaths for clicked elements. "Use
//! this" leads to the monitor form with the chosen XPaths in its address. The pages themselves
//! are drawn by [`crate::web::monitors::picker_page`].

use crate::ops::Ctx;
use crate::tabs::Use;
use crate::web::monitors::pick_store::{MAX_PAGE_BYTES, Pick, PickStore};
use crate::web::monitors::picker_page::Failed;
use crate::web::monitors::picker_page::PickQuery;
use crate::web::monitors::picker_page::Tried;
use crate::web::monitors::picker_page::{
    address_page, count_text, gone, gone_text, picker_page, retry_page, use_link,
};
use crate::web::shared::extract::SignedIn;
use crate::web::shared::extract::own_monitor;
use crate::web::shared::pages;
use crate::web::shared::session::{self, Session};
use axum::Extension;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use std::sync::Arc;
use std::time::Duration;
use wachet::Monitor;
use wachet::extract::Deadline;
use wachet::model::ClientJobType;

/// The frame's policy: sandboxed without scripts (also when opened on its own), nothing loaded
/// from anywhere but inline styles and `data:` images, no forms, no `<base>`, framed only by
/// the interface.
const FRAME_CSP: &str = "sandbox allow-same-origin; default-src 'none'; style-src 'unsafe-inline'; \
                         img-src data:; form-action 'none'; base-uri 'none'; frame-ancestors 'self'";
/// How long making a page inert, or evaluating XPaths on it, may take.
const WORK_TIME: Duration = Duration::from_secs(10);
/// Characters of a value shown (a value without xPath is the whole page's text).
const SHOWN_VALUE_CHARS: usize = 10_000;

/// `GET /monitors/pick`: with `token`, the kept page with the xPath tried; with `url`, fetches
/// the page and leads to it; without either, a field for the address.
pub async fn pick(
    State(state): State<Ctx>,
    Extension(store): Extension<Arc<PickStore>>,
    headers: HeaderMap,
    SignedIn(session): SignedIn,
    RawQuery(query): RawQuery,
) -> Response {
    let Some(query) = PickQuery::read(query.as_deref()) else {
        return crate::web::shared::pages::bad_request(
            &session,
            "The address of this page is malformed.",
        );
    };
    if let Some(token) = query.token.as_deref() {
        let Some(pick) = store.get(&session.user, token) else {
            return gone(&session);
        };
        let tried = evaluate(&state, &store, &pick, &query).await;
        return picker_page(&session, token, &pick, &query, &tried);
    }
    let Some(url) = query
        .url
        .as_deref()
        .map(str::trim)
        .filter(|u| !u.is_empty())
    else {
        return address_page(&session, "", None, StatusCode::OK);
    };
    // A link from another site must not make the server fetch on the user's behalf unasked.
    if !session::same_origin(&headers, &state.settings().web) {
        return address_page(&session, url, None, StatusCode::OK);
    }
    let monitor = Monitor::new(url.to_string());
    match fetch_and_keep(&state, &store, &session, monitor, false).await {
        Ok(token) => Redirect::to(&picker_address(&token, &query)).into_response(),
        Err(failed) => address_page(&session, url, Some(&failed), failed.status),
    }
}

/// `GET /monitors/{id}/pick`: fetches the monitor's page with its own request and rendering
/// settings, then leads to the picker with its xPath and excludeXPath.
pub async fn pick_monitor(
    State(state): State<Ctx>,
    Extension(store): Extension<Arc<PickStore>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let (session, monitor) = match own_monitor(&state, &headers, &id).await {
        Ok(found) => found,
        Err(response) => return response,
    };
    let query = PickQuery {
        x_path: monitor.x_path.clone(),
        exclude_x_path: monitor.exclude_x_path.clone(),
        ..PickQuery::default()
    };
    if !session::same_origin(&headers, &state.settings().web) {
        return retry_page(&session, &monitor, None, StatusCode::OK);
    }
    match fetch_and_keep(&state, &store, &session, monitor.clone(), true).await {
        Ok(token) => Redirect::to(&picker_address(&token, &query)).into_response(),
        Err(failed) => retry_page(&session, &monitor, Some(&failed), failed.status),
    }
}

/// `GET /monitors/pick/frame/{token}`: the kept page, inert, with the frame's own headers.
pub async fn frame(
    State(_state): State<Ctx>,
    Extension(store): Extension<Arc<PickStore>>,
    _headers: HeaderMap,
    SignedIn(session): SignedIn,
    Path(token): Path<String>,
) -> Response {
    let Some(pick) = store.get(&session.user, &token) else {
        return gone(&session);
    };
    let mut response = (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        )],
        pick.inert.clone(),
    )
        .into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(FRAME_CSP),
    );
    headers.insert(
        header::X_FRAME_OPTIONS,
        HeaderValue::from_static("SAMEORIGIN"),
    );
    response
}

/// `GET /monitors/pick/value?token=…&xPath=…&excludeXPath=…`: the engine's value and counts
/// as JSON, for `picker.js`.
pub async fn value(
    State(state): State<Ctx>,
    Extension(store): Extension<Arc<PickStore>>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Response {
    let json = |status: StatusCode, body: serde_json::Value| {
        (
            status,
            [(header::CONTENT_TYPE, "application/json")],
            body.to_string(),
        )
            .into_response()
    };
    let session = match session::current(&state, &headers).await {
        Ok(Some(session)) => session,
        Ok(None) => {
            return json(
                StatusCode::UNAUTHORIZED,
                serde_json::json!({"error": "Signed out: sign in again."}),
            );
        }
        Err(err) => return pages::from_error(err, None),
    };
    let Some(query) = PickQuery::read(query.as_deref()) else {
        return json(
            StatusCode::BAD_REQUEST,
            serde_json::json!({"error": "The address is malformed."}),
        );
    };
    let Some(pick) = query
        .token
        .as_deref()
        .and_then(|token| store.get(&session.user, token))
    else {
        return json(
            StatusCode::NOT_FOUND,
            serde_json::json!({"error": gone_text()}),
        );
    };
    let tried = evaluate(&state, &store, &pick, &query).await;
    json(
        StatusCode::OK,
        serde_json::json!({
            "value": tried.value,
            "error": tried.error,
            "matched": tried.matched,
            "excluded": tried.excluded,
            "fieldErrors": tried.field_errors.iter().map(|(f, m)| (f.clone(), m.clone())).collect::<std::collections::BTreeMap<_, _>>(),
            "useThis": use_link(&pick, &query),
            "summary": count_text(&tried),
        }),
    )
}

/// Fetches `monitor`'s page through the engine, makes it inert and keeps it; its token.
async fn fetch_and_keep(
    state: &Ctx,
    store: &Arc<PickStore>,
    session: &Session,
    mut monitor: Monitor,
    of_monitor: bool,
) -> Result<String, Failed> {
    let Some(_turn) = store.fetch_turn(&session.user) else {
        return Err(Failed::new(
            StatusCode::TOO_MANY_REQUESTS,
            "A page is already being fetched for you. Wait for it, then try again.",
        ));
    };
    // A Portal monitor is picked on its start page, fetched as its crawl fetches it.
    monitor.job_type = ClientJobType::SinglePage;
    monitor.data = None;
    let url = monitor.url.clone().unwrap_or_default();
    let checker = state.checker().clone();
    let for_prepare = monitor.clone();
    let prepared = tokio::task::spawn_blocking(move || checker.prepare(&for_prepare))
        .await
        .map_err(|_| Failed::new(StatusCode::INTERNAL_SERVER_ERROR, "The check failed."))?
        .map_err(|invalid| {
            // The field under the message is the URL: its problems need no field name.
            let words: Vec<String> = invalid
                .errors
                .iter()
                .map(|e| match e.field.as_str() {
                    "url" => e.message.clone(),
                    field => format!("{field}: {}", e.message),
                })
                .collect();
            Failed::new(StatusCode::BAD_REQUEST, words.join("; "))
        })?;
    // A rendered page renders in one of the user's own tabs, counted with their checks'.
    let prepared = match monitor.dynamic_content {
        true => match state.browser_tabs().open(&session.user, Use::Pick).await {
            Ok(gate) => prepared.with_tabs(gate),
            Err(refused) => {
                return Err(Failed::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    refused.to_string(),
                ));
            }
        },
        false => prepared,
    };
    let source = state
        .checker()
        .page_source(&prepared)
        .await
        .map_err(|err| Failed::new(StatusCode::BAD_GATEWAY, err.message))?;
    if source.html.len() > MAX_PAGE_BYTES {
        return Err(Failed::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "The page is {} large; the picker shows pages up to {}. It can still be watched: write its xPath in the monitor's form.",
                size(source.html.len()),
                size(MAX_PAGE_BYTES)
            ),
        ));
    }
    let html = source.html;
    let (html, inert) = tokio::task::spawn_blocking(move || {
        let inert = wachet::extract::inert::inert_html(&html, Deadline::after(WORK_TIME));
        (html, inert)
    })
    .await
    .map_err(|_| Failed::new(StatusCode::INTERNAL_SERVER_ERROR, "The check failed."))?;
    let inert = inert.map_err(|err| {
        Failed::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("The page cannot be shown: {err}."),
        )
    })?;
    // Written back, escapes can make a page longer; the bound holds for what is kept too.
    if inert.len() > 2 * MAX_PAGE_BYTES {
        return Err(Failed::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "The page is {} large once made safe to show; the picker shows pages up to {}.",
                size(inert.len()),
                size(2 * MAX_PAGE_BYTES)
            ),
        ));
    }
    let pick = Pick::new(
        session.user.clone(),
        of_monitor.then_some(monitor),
        url,
        source.final_url,
        html,
        inert,
    );
    Ok(store.insert(pick))
}

/// "2.0 MiB", "640 KiB".
fn size(bytes: usize) -> String {
    #[allow(clippy::cast_precision_loss)] // a page size, shown to one decimal
    let mib = bytes as f64 / (1024.0 * 1024.0);
    if mib >= 1.0 {
        format!("{mib:.1} MiB")
    } else {
        format!("{} KiB", bytes.div_ceil(1024))
    }
}

/// Evaluates the query's xPath and excludeXPath on the kept page with the engine, as a check
/// of the picked monitor (or of a new one) would.
async fn evaluate(
    state: &Ctx,
    store: &Arc<PickStore>,
    pick: &Arc<Pick>,
    query: &PickQuery,
) -> Tried {
    let blank = |v: &Option<String>| v.as_deref().is_none_or(|v| v.trim().is_empty());
    if blank(&query.x_path) && blank(&query.exclude_x_path) {
        return Tried::default();
    }
    let mut tried = Tried {
        asked: true,
        whole_page: blank(&query.x_path),
        ..Tried::default()
    };
    let mut monitor = pick
        .monitor
        .clone()
        .unwrap_or_else(|| Monitor::new(pick.url.clone()));
    monitor.job_type = ClientJobType::SinglePage;
    monitor.x_path = query.x_path.clone();
    monitor.exclude_x_path = query.exclude_x_path.clone();
    // A user's evaluations wait only for that user's own (and, under heavy load, for a turn
    // of all); another user's slow expressions never hold them.
    let Some(_turn) = store.evaluations.take(&pick.user, WORK_TIME).await else {
        tried.error =
            Some("Your earlier tries are still being evaluated; try again in a moment.".into());
        return tried;
    };
    let checker = state.checker().clone();
    let html = pick.html.clone();
    let done = tokio::task::spawn_blocking(move || {
        checker
            .prepare(&monitor)
            .map(|prepared| prepared.evaluate(&html, Deadline::after(WORK_TIME)))
    })
    .await;
    match done {
        Err(_) => tried.error = Some("The evaluation failed on the server.".into()),
        Ok(Err(invalid)) => {
            for error in invalid.errors {
                match error.field.as_str() {
                    "xPath" | "excludeXPath" => {
                        tried.field_errors.push((error.field, error.message))
                    }
                    other => tried.error = Some(format!("{other}: {}", error.message)),
                }
            }
        }
        Ok(Ok(evaluation)) => {
            tried.matched = evaluation.matched;
            tried.excluded = evaluation.excluded;
            match evaluation.value {
                Ok(value) => tried.value = Some(shown(value)),
                Err(err) => tried.error = Some(err.to_string()),
            }
        }
    }
    tried
}

fn shown(value: String) -> String {
    match value.char_indices().nth(SHOWN_VALUE_CHARS) {
        Some((cut, _)) => {
            let rest = value[cut..].chars().count();
            format!("{}\n… ({rest} more characters)", &value[..cut])
        }
        None => value,
    }
}

/// The picker's address for a kept page, with the XPaths to try.
fn picker_address(token: &str, query: &PickQuery) -> String {
    let mut pairs = vec![("token", token)];
    if let Some(x) = query.x_path.as_deref().filter(|x| !x.is_empty()) {
        pairs.push(("xPath", x));
    }
    if let Some(x) = query.exclude_x_path.as_deref().filter(|x| !x.is_empty()) {
        pairs.push(("excludeXPath", x));
    }
    format!(
        "/monitors/pick?{}",
        serde_urlencoded::to_string(pairs).unwrap_or_default()
    )
}
