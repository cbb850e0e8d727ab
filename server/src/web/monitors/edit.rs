//! Creating and editing a monitor with every field: `/monitors/new` and `/monitors/{id}/edit`
//! show the form ([`crate::web::monitors::form`]), prefilled from the query (`url`, `xPath`,
//! `excludeXPath`, `folder`, as the point-and-click page links back), and their posts store
//! the monitor through the API's own `PUT /task` code, so validation is the API's and the
//! engine's; its messages come back at their fields with everything typed kept. A new
//! monitor's form carries a one-time token: submitting it twice (a double click, a reload)
//! stores one monitor and takes both to it. Another user's monitor is the 404 page. The
//! form's "Pick with the mouse" button posts the form like Save (so it carries what was typed,
//! with or without scripts, and the CSRF token stays out of addresses) and is answered with
//! the point-and-click page for the URL typed.

use crate::ops::Ctx;
use crate::web::monitors::form::{self as monitor_form, Fields, Posted, Problems};
use crate::web::monitors::page::{Choices, form_page};
use crate::web::monitors::record_store::RecordStore;
use crate::web::monitors::steps_form::RECORD_BUTTON;
use crate::web::shared::error::PageError;
use crate::web::shared::extract::SignedIn;
use crate::web::shared::extract::{own_monitor, signed_in};
use crate::web::shared::form::Form;
use crate::web::shared::once;
use crate::web::shared::pages;
use crate::web::shared::session::{self, Session};
use axum::Extension;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use maud::html;
use serde::Deserialize;
use std::sync::Arc;
use wachet::model::{Monitor, MoveRequest};

/// The query of `/monitors/new` and `/monitors/{id}/edit`: values to prefill.
#[derive(Debug, Default, Deserialize)]
pub struct Prefill {
    url: Option<String>,
    #[serde(rename = "xPath")]
    x_path: Option<String>,
    #[serde(rename = "excludeXPath")]
    exclude_x_path: Option<String>,
    folder: Option<String>,
}

impl Prefill {
    fn apply(self, fields: &mut Fields) {
        if let Some(url) = self.url {
            fields.url = url;
        }
        if let Some(x_path) = self.x_path {
            fields.x_path = x_path;
        }
        if let Some(exclude) = self.exclude_x_path {
            fields.exclude_x_path = exclude;
        }
        if let Some(folder) = self.folder.filter(|f| crate::store::is_id(f)) {
            fields.folder = folder;
        }
    }
}

async fn respond(
    state: &Ctx,
    session: &Session,
    fields: &Fields,
    problems: &Problems,
    token: Option<&str>,
    status: StatusCode,
) -> Response {
    match Choices::load(state, session, &fields.folder).await {
        Ok(choices) => (
            status,
            form_page(state, session, &choices, fields, problems, token, html! {}),
        )
            .into_response(),
        Err(err) => pages::from_error(err, Some(session)),
    }
}

/// `GET /monitors/new`: the form with a new monitor's defaults and a fresh one-time token.
pub async fn new_monitor(
    State(state): State<Ctx>,
    SignedIn(session): SignedIn,
    Query(prefill): Query<Prefill>,
) -> Response {
    let mut fields = Fields::new_monitor(state.settings().min_recurrence);
    prefill.apply(&mut fields);
    let token = once::fresh();
    respond(
        &state,
        &session,
        &fields,
        &Problems::default(),
        Some(&token),
        StatusCode::OK,
    )
    .await
}

/// `GET /monitors/{id}/edit`: the form of the user's monitor.
pub async fn edit(
    State(state): State<Ctx>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(prefill): Query<Prefill>,
) -> Response {
    let (session, monitor) = match own_monitor(&state, &headers, &id).await {
        Ok(found) => found,
        Err(response) => return response,
    };
    let mut fields = Fields::from_monitor(&monitor);
    // The folder is moved here only when the form names another one.
    Prefill {
        folder: None,
        ..prefill
    }
    .apply(&mut fields);
    respond(
        &state,
        &session,
        &fields,
        &Problems::default(),
        None,
        StatusCode::OK,
    )
    .await
}

/// The session of a posted form whose CSRF token and origin are right, and the form read;
/// otherwise the page to answer with.
pub(crate) async fn posted(
    state: &Ctx,
    headers: &HeaderMap,
    pairs: Vec<(String, String)>,
) -> Result<(Session, Posted), Response> {
    let session = signed_in(state, headers).await?;
    let posted = monitor_form::parse(pairs).map_err(|err| {
        pages::bad_input(
            StatusCode::BAD_REQUEST,
            &format!("{}.", capitalized(&err.to_string())),
        )
    })?;
    if !session::same_origin(headers, &state.settings().web)
        || !session::csrf_matches(&session, posted.csrf.as_deref())
    {
        return Err(pages::form_refused(Some(&session)));
    }
    Ok((session, posted))
}

fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_uppercase().chain(chars).collect()
    })
}

/// `POST /monitors/new`: stores a new monitor, or shows the form again with its problems.
pub async fn create(
    State(state): State<Ctx>,
    Extension(records): Extension<Arc<RecordStore>>,
    headers: HeaderMap,
    Form(pairs): Form<Vec<(String, String)>>,
) -> Response {
    let pick = wants_pick(&pairs);
    let record = wants(&pairs, RECORD_BUTTON);
    let (session, posted) = match posted(&state, &headers, pairs).await {
        Ok(found) => found,
        Err(response) => return response,
    };
    let mut fields = posted.fields;
    fields.id = None;
    if pick {
        return to_picker(&fields);
    }
    let token = posted
        .token
        .filter(|t| t.len() == 32 && t.bytes().all(|b| b.is_ascii_hexdigit()));
    if record {
        return to_recorder(&state, &records, &session, fields, token).await;
    }
    fill_secrets(&records, &session, &mut fields);
    save(&state, &session, fields, (posted.add, posted.remove), token).await
}

/// `POST /monitors/{id}/edit`: stores the user's monitor, or shows the form again.
pub async fn update(
    State(state): State<Ctx>,
    Extension(records): Extension<Arc<RecordStore>>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Form(pairs): Form<Vec<(String, String)>>,
) -> Response {
    let pick = wants_pick(&pairs);
    let record = wants(&pairs, RECORD_BUTTON);
    let (session, posted) = match posted(&state, &headers, pairs).await {
        Ok(found) => found,
        Err(response) => return response,
    };
    // Another user's id is the same 404 as an unknown one, before anything is read.
    if let Err(err) = crate::ops::monitors::stored(&state, &session.user, &id).await {
        return pages::from_error(err.into(), Some(&session));
    }
    if pick {
        // The saved monitor's page, fetched with its own request settings; the picker leads
        // back to this form.
        return Redirect::to(&format!("/monitors/{id}/pick")).into_response();
    }
    let mut fields = posted.fields;
    fields.id = Some(id);
    if record {
        return to_recorder(&state, &records, &session, fields, None).await;
    }
    fill_secrets(&records, &session, &mut fields);
    save(&state, &session, fields, (posted.add, posted.remove), None).await
}

/// Whether the form was posted with its "Pick with the mouse" button.
fn wants_pick(pairs: &[(String, String)]) -> bool {
    wants(pairs, monitor_form::PICK_BUTTON)
}

/// Whether the form was posted with the button named `button`.
fn wants(pairs: &[(String, String)], button: &str) -> bool {
    pairs.iter().any(|(name, _)| name == button)
}

/// Opens a recording of the form's page and leads to it; or the form again, saying why not.
async fn to_recorder(
    state: &Ctx,
    records: &Arc<RecordStore>,
    session: &Session,
    mut fields: Fields,
    token: Option<String>,
) -> Response {
    fields.compact();
    match crate::web::monitors::record::open(state, records, session, &fields).await {
        Ok(recording) => Redirect::to(&format!("/monitors/record/{recording}")).into_response(),
        Err(problems) => {
            respond(
                state,
                session,
                &fields,
                &problems,
                token.as_deref(),
                StatusCode::BAD_REQUEST,
            )
            .await
        }
    }
}

/// Secret rows left empty in a form that came from a recording take the values typed while
/// recording (which never went back to the browser).
fn fill_secrets(records: &RecordStore, session: &Session, fields: &mut Fields) {
    let recording = std::mem::take(&mut fields.steps.recording);
    if !recording.is_empty() {
        let secrets = crate::web::monitors::record::recorded_secrets(records, session, &recording);
        fields.steps.fill_secrets(&secrets);
        // Kept for a form shown again with problems: the secrets are still to be filled.
        fields.steps.recording = recording;
    }
}

/// The point-and-click page for the URL typed in a new monitor's form, with its XPaths.
fn to_picker(fields: &Fields) -> Response {
    let mut query = vec![("url", fields.url.trim())];
    if !fields.x_path.trim().is_empty() {
        query.push(("xPath", fields.x_path.trim()));
    }
    if !fields.exclude_x_path.trim().is_empty() {
        query.push(("excludeXPath", fields.exclude_x_path.trim()));
    }
    let query = serde_urlencoded::to_string(query).unwrap_or_default();
    Redirect::to(&format!("/monitors/pick?{query}")).into_response()
}

/// Stores the monitor the fields describe; or, for an "Add another" or "Remove" button
/// (`rows`: the list to grow, the row to drop), shows the form again with the rows changed.
async fn save(
    state: &Ctx,
    session: &Session,
    mut fields: Fields,
    rows: (Option<String>, Option<String>),
    token: Option<String>,
) -> Response {
    fields.compact();
    let (add, remove) = rows;
    if add.is_some() || remove.is_some() {
        if let Some(list) = add {
            fields.add_row(&list);
        }
        if let Some(row) = remove {
            fields.remove_row(&row);
        }
        return respond(
            state,
            session,
            &fields,
            &Problems::default(),
            token.as_deref(),
            StatusCode::OK,
        )
        .await;
    }
    let monitor = match fields.to_monitor() {
        Ok(monitor) => named(monitor),
        Err(problems) => {
            return respond(
                state,
                session,
                &fields,
                &problems,
                token.as_deref(),
                StatusCode::BAD_REQUEST,
            )
            .await;
        }
    };
    // One submit of a token at a time; a later one answers as the first did.
    let mut turn = match once::go_on(session, token.as_deref()).await {
        Ok(turn) => turn,
        Err(response) => return response,
    };
    let mut monitor = monitor;
    let existing_folder = match monitor.id.clone() {
        Some(id) => match crate::ops::monitors::stored(state, &session.user, &id).await {
            Ok(current) => {
                // The form edits an endpoint's kind, value and schedule; the templates the API
                // gave it stay.
                if let (Some(list), Some(old)) = (
                    monitor.notification_endpoints.as_mut(),
                    current.notification_endpoints.as_deref(),
                ) {
                    crate::ops::endpoints::keep_extensions(list, old);
                }
                current.folder_id
            }
            Err(err) => return pages::from_error(err.into(), Some(session)),
        },
        None => None,
    };
    let to_root = monitor.id.is_some() && monitor.folder_id.is_none() && existing_folder.is_some();
    let stored = crate::ops::monitors::save(state, &session.user, monitor)
        .await
        .map_err(PageError::from);
    match stored {
        Ok(stored) => {
            let id = stored.id.unwrap_or_default();
            if to_root {
                // An update keeps the folder when it names none; the top level is a move,
                // as `POST /folder/move` makes it.
                let request = MoveRequest {
                    folder_id: None,
                    task_ids: Some(vec![id.clone()]),
                    folder_ids: None,
                };
                if let Err(err) =
                    crate::ops::folders::move_items(state, &session.user, &request).await
                {
                    return pages::from_op(err, Some(session));
                }
            }
            let location = format!("/monitors/{id}");
            turn.done(&location);
            Redirect::to(&location).into_response()
        }
        Err(PageError::BadRequest { detail, errors }) => {
            let mut problems = monitor_form::from_error(errors, &fields);
            if problems.is_empty() {
                problems.add("form", detail);
            }
            respond(
                state,
                session,
                &fields,
                &problems,
                token.as_deref(),
                StatusCode::BAD_REQUEST,
            )
            .await
        }
        Err(other) => pages::from_error(other, Some(session)),
    }
}

/// A monitor without a name is named after its URL's host, as the quick-add names it.
fn named(mut monitor: Monitor) -> Monitor {
    if monitor.name.is_none() {
        let url = monitor.url.clone().unwrap_or_default();
        monitor.name = url
            .parse::<axum::http::Uri>()
            .ok()
            .and_then(|uri| uri.host().map(str::to_string))
            .or(Some(url).filter(|u| !u.is_empty()));
    }
    monitor
}
