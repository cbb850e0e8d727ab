//! Moving in and out on the settings page: a file uploaded (`POST /settings/import`) is read
//! dry and its report shown (what comes in, what is not carried over and why) with a button to
//! confirm, which sends the same file back (`POST /settings/import/confirm`, the file in the
//! form, so no upload waits on the server between the two); `GET /settings/export` downloads
//! the export. Each is [`crate::ops::transfer`]'s operation, as the API calls it.

use crate::ops::Ctx;
use crate::ops::transfer::{self, ImportRequest, Report};
use crate::web::shared::extract::SignedIn;
use crate::web::shared::extract::SignedInForm;
use crate::web::shared::extract::signed_in_form;
use crate::web::shared::layout::page;
use crate::web::shared::pages;
use crate::web::shared::session::Session;
use axum::extract::{Multipart, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use maud::{Markup, html};
use serde::Deserialize;

/// Largest file the page takes (the API and the command line take larger ones).
pub const MAX_WEB_FILE_BYTES: usize = 16 * 1024 * 1024;
/// The largest form of either step: the file, as base64 in the confirmation.
pub const MAX_WEB_FORM_BYTES: usize = MAX_WEB_FILE_BYTES / 3 * 4 + 64 * 1024;
/// Monitors a report lists; the count of the rest follows.
const LISTED: usize = 500;

/// The section of the settings page.
pub fn section(session: &Session) -> Markup {
    html! {
        section #transfer aria-labelledby="transfer-title" {
            h2 #transfer-title { "Move in and out" }
            div.card {
                p { "Bring monitors in from a changedetection.io backup (.zip), an urlwatch "
                    code { "urls.yaml" } " or webchanges " code { "jobs.yaml" }
                    ", a Wachete export (.xlsx) or a wachet export (.json). You see what comes in "
                    "and what cannot before anything is stored." }
                form method="post" action="/settings/import" enctype="multipart/form-data" {
                    input type="hidden" name="csrf" value=(session.csrf);
                    label for="import-file" { "File" }
                    input #import-file type="file" name="file" required
                        accept=".zip,.yaml,.yml,.xlsx,.json";
                    label.check { input type="checkbox" name="history" value="true"; " Bring the history too" }
                    button.button type="submit" { "Read the file" }
                }
                p.hint { "Up to " (MAX_WEB_FILE_BYTES / 1024 / 1024) " MiB here; larger files through "
                    code { "wachet import" } " or " code { "POST /thirdparty/v1/import" } "." }
                p { "Take everything with you: "
                    a href="/settings/export" download { "download an export" } " or "
                    a href="/settings/export?history=true" download { "with history" } "." }
            }
        }
    }
}

/// The upload's fields.
struct Upload {
    csrf: Option<String>,
    file: Vec<u8>,
    history: bool,
}

async fn upload_fields(mut multipart: Multipart) -> Result<Upload, Response> {
    let unreadable = || pages::bad_input(StatusCode::BAD_REQUEST, "The upload could not be read.");
    let mut upload = Upload {
        csrf: None,
        file: Vec::new(),
        history: false,
    };
    while let Some(field) = multipart.next_field().await.map_err(|err| {
        if err.status() == StatusCode::PAYLOAD_TOO_LARGE {
            pages::bad_input(
                StatusCode::PAYLOAD_TOO_LARGE,
                &format!(
                    "The file is larger than {} MiB; import it with wachet import or the API.",
                    MAX_WEB_FILE_BYTES / 1024 / 1024
                ),
            )
        } else {
            unreadable()
        }
    })? {
        match field.name() {
            Some("csrf") => upload.csrf = Some(field.text().await.map_err(|_| unreadable())?),
            Some("history") => upload.history = field.text().await.is_ok_and(|v| v == "true"),
            Some("file") => upload.file = field.bytes().await.map_err(|_| unreadable())?.to_vec(),
            _ => {}
        }
    }
    Ok(upload)
}

/// `POST /settings/import`: the file read dry, its report and the confirmation.
pub async fn upload(
    State(state): State<Ctx>,
    headers: HeaderMap,
    multipart: Multipart,
) -> Response {
    let upload = match upload_fields(multipart).await {
        Ok(upload) => upload,
        Err(response) => return response,
    };
    let session = match signed_in_form(&state, &headers, upload.csrf.as_deref()).await {
        Ok(session) => session,
        Err(response) => return response,
    };
    if upload.file.is_empty() {
        return pages::bad_input(StatusCode::BAD_REQUEST, "Choose a file to import.");
    }
    // A browser names a .yaml or .json file by guesses of its own: the file's bytes decide.
    let request = ImportRequest {
        bytes: &upload.file,
        media_type: None,
        history: upload.history,
        dry_run: true,
        // The page takes no passphrase: a file carrying secrets is refused, saying where to
        // bring it in.
        passphrase: None,
    };
    match transfer::import(&state, &session.user, request).await {
        Ok(report) => {
            let confirm = Confirm {
                csrf: Some(session.csrf.clone()),
                file: base64::engine::general_purpose::STANDARD.encode(&upload.file),
                history: upload.history.then(|| "true".to_string()),
            };
            report_page(&session, &report, Some(&confirm)).into_response()
        }
        Err(err) => pages::from_op(err, Some(&session)),
    }
}

/// The confirmation's form: the same file again.
#[derive(Debug, Deserialize)]
pub struct Confirm {
    csrf: Option<String>,
    file: String,
    history: Option<String>,
}

/// `POST /settings/import/confirm`: the file stored, all or nothing.
pub async fn confirm(
    State(state): State<Ctx>,
    SignedInForm { session, form }: SignedInForm<Confirm>,
) -> Response {
    let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(form.file.as_bytes()) else {
        return pages::bad_input(StatusCode::BAD_REQUEST, "The file could not be read back.");
    };
    let request = ImportRequest {
        bytes: &bytes,
        media_type: None,
        history: form.history.as_deref() == Some("true"),
        dry_run: false,
        passphrase: None,
    };
    match transfer::import(&state, &session.user, request).await {
        Ok(report) => report_page(&session, &report, None).into_response(),
        Err(err) => pages::from_op(err, Some(&session)),
    }
}

/// The export's query.
#[derive(Debug, Deserialize)]
pub struct ExportQuery {
    history: Option<String>,
}

/// `GET /settings/export`: the export, downloaded.
pub async fn download(
    State(state): State<Ctx>,
    SignedIn(session): SignedIn,
    Query(query): Query<ExportQuery>,
) -> Response {
    let history = query.history.as_deref() == Some("true");
    crate::download::attachment(
        "application/json",
        transfer::EXPORT_FILE_NAME,
        transfer::export(&state, &session.user, history, None),
    )
}

fn report_page(session: &Session, report: &Report, confirm: Option<&Confirm>) -> Markup {
    let count = report.monitors.len();
    let new_folders = report.folders.iter().filter(|f| f.created).count();
    let title = match confirm {
        Some(_) => "Import: what comes in",
        None => "Imported",
    };
    page(
        title,
        Some(session),
        html! {
            h1 { (title) }
            section.card aria-labelledby="summary-title" {
                h2 #summary-title { (report.format.label()) }
                p.summary {
                    @if confirm.is_some() { (count) " monitor(s) will come in" } @else { (count) " monitor(s) came in" }
                    ", " (new_folders) " new folder(s)"
                    @if report.history_entries > 0 { ", " (report.history_entries) " history entries" }
                    "; " (report.left_out.len()) " item(s) or setting(s) not carried over."
                }
                @if let Some(confirm) = confirm {
                    form method="post" action="/settings/import/confirm" {
                        input type="hidden" name="csrf" value=[confirm.csrf.as_deref()];
                        input type="hidden" name="file" value=(confirm.file);
                        @if let Some(history) = &confirm.history {
                            input type="hidden" name="history" value=(history);
                        }
                        button.button type="submit" disabled[count == 0] { "Import " (count) " monitor(s)" }
                        " "
                        a href="/settings#transfer" { "Cancel" }
                    }
                } @else {
                    p { a href="/" { "See your monitors" } }
                }
            }
            @if !report.left_out.is_empty() {
                section.card aria-labelledby="left-title" {
                    h2 #left-title { "Not carried over" }
                    ul.import-list {
                        @for left in &report.left_out {
                            li { strong { (left.item) } ": " (left.what) " — " (left.reason) }
                        }
                    }
                }
            }
            @if count > 0 {
                section.card aria-labelledby="monitors-title" {
                    h2 #monitors-title { "Monitors" }
                    ul.import-list {
                        @for monitor in report.monitors.iter().take(LISTED) {
                            li {
                                strong { (monitor.name.as_deref().unwrap_or(&monitor.url)) }
                                span.hint { " in " (monitor.folder.as_deref().unwrap_or("the top level")) }
                                br;
                                span.import-url { (monitor.url) }
                                " "
                                span.hint { "(" (monitor.item) ")" }
                            }
                        }
                    }
                    @if count > LISTED { p.hint { "and " (count - LISTED) " more" } }
                }
            }
        },
    )
}
