//! Managing folders: create one in the current folder (`/folders/new?parent=`), rename
//! (`/folders/{id}/rename`), move into another folder or to the top (`/folders/{id}/move`)
//! and delete (`/folders/{id}/delete`, after a page stating the subfolders, monitors, history
//! entries and notifications that go with it), each a page with its form, storing through the
//! API's own folder code (`POST /folder`, `POST /folder/move`, `DELETE /folder/{id}`): the same
//! validation, and a move into the folder's own subtree refused with the message at the field
//! and nothing changed. Another user's folder is the same 404 page as an unknown id.

use crate::ops::Ctx;
use crate::web::monitors::delete::{Count, what_goes};
use crate::web::shared::error::PageError;
use crate::web::shared::extract::SignedIn;
use crate::web::shared::extract::SignedInForm;
use crate::web::shared::layout::page;
use crate::web::shared::once;
use crate::web::shared::pages;
use crate::web::shared::session::Session;
use crate::web::shared::tree::{self, name_of};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use serde::Deserialize;
use wachet::model::{Folder, MoveRequest};

/// The folder `id` of the signed-in user, with its path from the top (for breadcrumbs and
/// counts), or the response to give instead.
async fn own_folder(
    state: &Ctx,
    session: &Session,
    id: &str,
) -> Result<(Folder, Vec<Folder>), Response> {
    match crate::ops::folders::contents(state, &session.user, Some(id), None, 1).await {
        Ok(listing) => match listing.path.last().cloned() {
            Some(folder) => Ok((folder, listing.path)),
            None => Err(pages::not_found(Some(session))),
        },
        Err(err) => Err(pages::from_error(err.into(), Some(session))),
    }
}

fn folder_href(id: Option<&str>) -> String {
    id.map_or_else(|| "/".to_string(), |id| format!("/folders/{id}"))
}

/// The field of a form with its message: `aria-invalid` and `aria-describedby` when wrong.
fn name_field(value: &str, error: Option<&str>) -> Markup {
    let invalid = error.is_some();
    html! {
        div.field {
            label for="folder-name" { "Name" }
            input #folder-name type="text" name="name" value=(value) required maxlength="1000"
                autocomplete="off"
                aria-invalid=[invalid.then_some("true")]
                aria-describedby=[invalid.then_some("folder-name-error")];
            @if let Some(error) = error {
                p.field-error #folder-name-error { (error) }
            }
        }
    }
}

fn form_page(title: &str, session: &Session, status: StatusCode, body: Markup) -> Response {
    let main = html! {
        section.card.message.folder-form {
            h1 { (title) }
            (body)
        }
    };
    (status, page(title, Some(session), main)).into_response()
}

/// The message of a refused name, from the API's validation.
fn name_error(err: &PageError) -> Option<String> {
    match err {
        PageError::BadRequest { detail, errors } => Some(
            errors
                .get("name")
                .and_then(|m| m.first())
                .map(|m| format!("The name {m}."))
                .unwrap_or_else(|| detail.clone()),
        ),
        _ => None,
    }
}

// --- create

/// The query of `/folders/new`.
#[derive(Debug, Default, Deserialize)]
pub struct NewQuery {
    parent: Option<String>,
}

/// The fields of the create and rename forms.
#[derive(Debug, Default, Deserialize)]
pub struct NameForm {
    name: Option<String>,
    parent: Option<String>,
    /// The new-folder form's one-time token ([`once`]).
    once: Option<String>,
}

fn new_form(
    session: &Session,
    parent: Option<&str>,
    name: &str,
    error: Option<&str>,
    status: StatusCode,
) -> Response {
    form_page(
        "New folder",
        session,
        status,
        html! {
            form method="post" action="/folders/new" {
                input type="hidden" name="csrf" value=(session.csrf);
                input type="hidden" name=(once::FIELD) value=(once::fresh());
                @if let Some(parent) = parent { input type="hidden" name="parent" value=(parent); }
                (name_field(name, error))
                div.actions {
                    button.button.primary type="submit" { "Create the folder" }
                    a.button href=(folder_href(parent)) { "Cancel" }
                }
            }
        },
    )
}

/// `GET /folders/new`: the form, for a folder in `parent` (the top when none).
pub async fn new_folder(
    State(state): State<Ctx>,
    SignedIn(session): SignedIn,
    Query(query): Query<NewQuery>,
) -> Response {
    let parent = query.parent.filter(|p| !p.is_empty());
    if let Some(parent) = &parent
        && let Err(response) = own_folder(&state, &session, parent).await
    {
        return response;
    }
    new_form(&session, parent.as_deref(), "", None, StatusCode::OK)
}

/// `POST /folders/new`: creates through [`crate::ops::folders::save`], then to the
/// folder it was made in.
pub async fn create(
    State(state): State<Ctx>,
    SignedInForm { session, form }: SignedInForm<NameForm>,
) -> Response {
    // A second submit of the same form (a double click) answers as the first did.
    let mut turn = match once::go_on(&session, form.once.as_deref()).await {
        Ok(turn) => turn,
        Err(response) => return response,
    };
    let parent = form.parent.filter(|p| !p.is_empty());
    let folder = Folder {
        parent_id: parent.clone(),
        ..Folder::default()
    };
    let done = folder_href(parent.as_deref());
    let response = save_name(&state, &session, folder, form.name, &done, |name, error| {
        new_form(
            &session,
            parent.as_deref(),
            name,
            error,
            StatusCode::BAD_REQUEST,
        )
    })
    .await;
    if response.status().is_redirection() {
        turn.done(&done);
    }
    response
}

/// Stores `folder` with the name posted through [`crate::ops::folders::save`], then to
/// `done`; a name it refuses is shown at the field by `refused` (with the name and message).
async fn save_name(
    state: &Ctx,
    session: &Session,
    folder: Folder,
    name: Option<String>,
    done: &str,
    refused: impl Fn(&str, Option<&str>) -> Response,
) -> Response {
    let name = name.unwrap_or_default().trim().to_string();
    if name.is_empty() {
        return refused("", Some("Give the folder a name."));
    }
    let saved = crate::ops::folders::save(
        state,
        &session.user,
        &Folder {
            name: Some(name.clone()),
            ..folder
        },
    )
    .await
    .map_err(PageError::from);
    match saved {
        Ok(_) => Redirect::to(done).into_response(),
        // The parent is not the user's (or was deleted meanwhile): as for an unknown folder.
        Err(PageError::BadRequest { errors, .. }) if errors.contains_key("parentId") => {
            pages::not_found(Some(session))
        }
        Err(err) => match name_error(&err) {
            Some(message) => refused(&name, Some(&message)),
            None => pages::from_error(err, Some(session)),
        },
    }
}

// --- rename

fn rename_form(
    session: &Session,
    id: &str,
    name: &str,
    error: Option<&str>,
    status: StatusCode,
) -> Response {
    form_page(
        "Rename the folder",
        session,
        status,
        html! {
            form method="post" action={ "/folders/" (id) "/rename" } {
                input type="hidden" name="csrf" value=(session.csrf);
                (name_field(name, error))
                div.actions {
                    button.button.primary type="submit" { "Rename" }
                    a.button href=(folder_href(Some(id))) { "Cancel" }
                }
            }
        },
    )
}

/// `GET /folders/{id}/rename`.
pub async fn rename_page(
    State(state): State<Ctx>,
    SignedIn(session): SignedIn,
    Path(id): Path<String>,
) -> Response {
    match own_folder(&state, &session, &id).await {
        Ok((folder, _)) => rename_form(&session, &id, name_of(&folder), None, StatusCode::OK),
        Err(response) => response,
    }
}

/// `POST /folders/{id}/rename`: stores the name through [`crate::ops::folders::save`]
/// (a null parent keeps the folder where it is).
pub async fn rename(
    State(state): State<Ctx>,
    Path(id): Path<String>,
    SignedInForm { session, form }: SignedInForm<NameForm>,
) -> Response {
    let folder = Folder {
        id: Some(id.clone()),
        ..Folder::default()
    };
    let done = folder_href(Some(&id));
    save_name(&state, &session, folder, form.name, &done, |name, error| {
        rename_form(&session, &id, name, error, StatusCode::BAD_REQUEST)
    })
    .await
}

// --- move

/// The fields of the move form.
#[derive(Debug, Default, Deserialize)]
pub struct MoveForm {
    into: Option<String>,
}

/// The move form: every folder outside this one's subtree (moving there is refused anyway).
async fn move_form(
    state: &Ctx,
    session: &Session,
    id: &str,
    chosen: Option<&str>,
    error: Option<&str>,
    status: StatusCode,
) -> Response {
    let (folder, path) = match own_folder(state, session, id).await {
        Ok(found) => found,
        Err(response) => return response,
    };
    let (everything, below) = match (
        tree::walk(state, &session.user, None, false).await,
        tree::walk(state, &session.user, Some(id), false).await,
    ) {
        (Ok(everything), Ok(below)) => (everything, below),
        (Err(err), _) | (_, Err(err)) => return pages::from_error(err.into(), Some(session)),
    };
    let parent = path.len().checked_sub(2).and_then(|i| path[i].id.clone());
    let invalid = error.is_some();
    let title = format!("Move {}", name_of(&folder));
    form_page(
        &title,
        session,
        status,
        html! {
            p.lead { "The folder moves with its subfolders and monitors." }
            form method="post" action={ "/folders/" (id) "/move" } {
                input type="hidden" name="csrf" value=(session.csrf);
                div.field {
                    label for="move-into" { "Into the folder" }
                    select #move-into name="into"
                        aria-invalid=[invalid.then_some("true")]
                        aria-describedby=[invalid.then_some("move-into-error")] {
                        option value="" selected[chosen.is_none() && parent.is_none()] { "All monitors (top level)" }
                        @for f in &everything.folders {
                            @if f.id != id && (!below.contains(&f.id) || chosen == Some(f.id.as_str())) {
                                @let selected = chosen.map_or(parent.as_deref() == Some(f.id.as_str()), |c| c == f.id);
                                option value=(f.id) selected[selected] { (f.path) }
                            }
                        }
                    }
                    @if let Some(error) = error {
                        p.field-error #move-into-error { (error) }
                    }
                }
                div.actions {
                    button.button.primary type="submit" { "Move" }
                    a.button href=(folder_href(Some(id))) { "Cancel" }
                }
            }
        },
    )
}

/// `GET /folders/{id}/move`.
pub async fn move_page(
    State(state): State<Ctx>,
    SignedIn(session): SignedIn,
    Path(id): Path<String>,
) -> Response {
    move_form(&state, &session, &id, None, None, StatusCode::OK).await
}

/// `POST /folders/{id}/move`: moves through [`crate::ops::folders::move_items`], all or
/// nothing; into its own subtree it is refused with the message at the field.
pub async fn move_folder(
    State(state): State<Ctx>,
    Path(id): Path<String>,
    SignedInForm { session, form }: SignedInForm<MoveForm>,
) -> Response {
    if let Err(response) = own_folder(&state, &session, &id).await {
        return response;
    }
    let into = form.into.filter(|f| !f.is_empty());
    let moved = crate::ops::folders::move_items(
        &state,
        &session.user,
        &MoveRequest {
            task_ids: None,
            folder_ids: Some(vec![id.clone()]),
            folder_id: into.clone(),
        },
    )
    .await
    .map_err(PageError::from);
    let message = match moved {
        Ok(_) => return Redirect::to(&folder_href(Some(&id))).into_response(),
        Err(PageError::BadRequest { .. }) => {
            "A folder cannot move into itself or into one of its own subfolders. Nothing was moved."
        }
        // The folder itself exists (just checked): the one chosen was deleted meanwhile.
        Err(PageError::NotFound) => {
            "That folder no longer exists; choose another. Nothing was moved."
        }
        Err(err) => return pages::from_error(err, Some(&session)),
    };
    move_form(
        &state,
        &session,
        &id,
        into.as_deref(),
        Some(message),
        StatusCode::BAD_REQUEST,
    )
    .await
}

// --- delete

/// The fields of the delete form.
#[derive(Debug, Default, Deserialize)]
pub struct DeleteForm {}

/// `GET /folders/{id}/delete`: what goes with the folder, and the button.
pub async fn delete_page(
    State(state): State<Ctx>,
    SignedIn(session): SignedIn,
    Path(id): Path<String>,
) -> Response {
    let (folder, _) = match own_folder(&state, &session, &id).await {
        Ok(found) => found,
        Err(response) => return response,
    };
    let below = match tree::walk(&state, &session.user, Some(&id), true).await {
        Ok(below) => below,
        Err(err) => return pages::from_error(err.into(), Some(&session)),
    };
    let (mut entries, mut notifications) = (Count::default(), Count::default());
    for task in &below.monitors {
        if entries.capped && notifications.capped {
            break;
        }
        match what_goes(&state, &session.user, task).await {
            Ok((e, n)) => {
                entries.add(e);
                notifications.add(n);
            }
            Err(err) => return pages::from_error(err.into(), Some(&session)),
        }
    }
    let count = |n: usize| Count {
        n: n as u64,
        capped: below.capped,
    };
    let name = name_of(&folder);
    let title = format!("Delete {name}?");
    let main = html! {
        section.card.message {
            h1 { (title) }
            p.what-goes {
                "This deletes the folder with "
                strong.subfolder-count { (count(below.folders.len()).words("subfolder", "subfolders")) } ", "
                strong.monitor-count { (count(below.monitors.len()).words("monitor", "monitors")) } ", "
                strong.history-count { (entries.words("history entry", "history entries")) } " and "
                strong.notification-count { (notifications.words("notification", "notifications")) }
                ". It cannot be undone."
            }
            div.actions {
                form method="post" action={ "/folders/" (id) "/delete" } {
                    input type="hidden" name="csrf" value=(session.csrf);
                    button.button.danger type="submit" { "Delete the folder" }
                }
                a.button href=(folder_href(Some(&id))) { "Keep it" }
            }
        }
    };
    page(&title, Some(&session), main).into_response()
}

/// `POST /folders/{id}/delete`: deletes through [`crate::ops::folders::delete`], then to
/// the folder it was in.
pub async fn delete(
    State(state): State<Ctx>,
    Path(id): Path<String>,
    SignedInForm { session, form: _ }: SignedInForm<DeleteForm>,
) -> Response {
    let (_, path) = match own_folder(&state, &session, &id).await {
        Ok(found) => found,
        Err(response) => return response,
    };
    let parent = path.len().checked_sub(2).and_then(|i| path[i].id.clone());
    let deleted = crate::ops::folders::delete(&state, &session.user, &id)
        .await
        .map_err(PageError::from);
    match deleted {
        Ok(_) => Redirect::to(&folder_href(parent.as_deref())).into_response(),
        Err(err) => pages::from_error(err, Some(&session)),
    }
}
