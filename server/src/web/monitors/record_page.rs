//! The step recorder's page as markup ([`crate::web::monitors::record`] decides what it
//! shows): the page's screenshot as the image button of one form, the question a click on a
//! field or a list asks, the recorded steps with their fields and buttons, and the buttons
//! that replay them, use them in the monitor form or close the recording. Everything is a
//! form that works without scripts; `record.js` only scales the clicked point.

use crate::web::assets::RECORD_JS;
use crate::web::monitors::record_store::{IDLE, Recorded};
use crate::web::shared::layout::page_with_scripts;
use crate::web::shared::session::Session;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use maud::html;

/// The page for a token that is unknown, closed or another user's: all alike.
pub(crate) fn gone(session: &Session) -> Response {
    let main = html! {
        section.card.message {
            h1 { "Not found" }
            p { "No such recording of steps is open: recordings close after " (IDLE.as_secs() / 60) " minutes without use. Open the monitor's form and record again." }
            p { a.button href="/" { "All monitors" } }
        }
    };
    (
        StatusCode::NOT_FOUND,
        page_with_scripts("Not found", Some(session), &[], main),
    )
        .into_response()
}

/// The recorder.
pub(crate) fn record_page(session: &Session, token: &str, recorded: &Recorded) -> Response {
    let action = format!("/monitors/record/{token}");
    let main = html! {
        div.page-head {
            div.grow {
                h1 { "Record steps" }
                p.record-where #record-where {
                    (if recorded.title.trim().is_empty() { "Untitled page" } else { recorded.title.trim() })
                    " — " (recorded.url)
                }
            }
        }
        form #record-form method="post" action=(action) {
            input type="hidden" name="csrf" value=(session.csrf);
            input #record-x type="hidden" name="x" value="";
            input #record-y type="hidden" name="y" value="";
            // Enter in a field answers the question asked, else keeps the rows' changes.
            @let default = recorded.pending.as_ref().map_or("edit", |p| p.action);
            button.visually-hidden type="submit" name="do" value=(default) tabindex="-1" aria-hidden="true" { "Go" }
            @if let Some(error) = &recorded.error {
                p.alert #record-error role="alert" { (error) }
            }
            @if let Some(notice) = &recorded.notice {
                p.notice #record-notice role="status" { (notice) }
            }
            div.record-layout {
                div.record-controls {
                    @if let Some(pending) = &recorded.pending {
                        section.card.record-panel #record-pending aria-labelledby="record-pending-title" {
                            @if pending.action == "select" {
                                h2 #record-pending-title { "Choose an option" }
                                p.hint { "In the list " code { (pending.selector) } }
                                div.field {
                                    label for="record-chosen" { (if pending.label.is_empty() { "Option" } else { &pending.label }) }
                                    select #record-chosen name="chosen" {
                                        @for (value, label) in &pending.options {
                                            option value=(value) { (label) }
                                        }
                                    }
                                }
                                div.record-actions {
                                    button.button.primary #record-choose type="submit" name="do" value="select" { "Choose" }
                                    button.button type="submit" name="do" value="cancel" { "Cancel" }
                                }
                            } @else {
                                h2 #record-pending-title { "Type into the field" }
                                p.hint { "The field " code { (pending.selector) } }
                                div.field {
                                    label for="record-typed" { (if pending.label.is_empty() { "Text" } else { &pending.label }) }
                                    input #record-typed type=(if pending.secret { "password" } else { "text" }) name="typed" autocomplete="off" autofocus;
                                }
                                label.check {
                                    input type="checkbox" name="secret" value="true" checked[pending.secret];
                                    " Secret (a password): stored sealed, never shown again"
                                }
                                div.record-actions {
                                    button.button.primary #record-type-it type="submit" name="do" value="type" { "Type it" }
                                    button.button type="submit" name="do" value="cancel" { "Cancel" }
                                }
                            }
                        }
                    }
                    section.card.record-steps #record-steps aria-labelledby="record-steps-title" {
                        h2 #record-steps-title { "Steps (" (recorded.steps.len()) ")" }
                        @if recorded.steps.is_empty() {
                            p.empty { "None yet. Click in the page: a button or link is clicked, a field asks for its text, a list for its option." }
                        } @else {
                            ol {
                                @for (i, step) in recorded.steps.iter().enumerate() {
                                    @let failed = recorded.failed_row == Some(i);
                                    @let name = |part: &str| format!("rows[{i}].{part}");
                                    li.failed[failed] aria-current=[failed.then_some("step")] {
                                        div.row-head {
                                            label.visually-hidden for=(format!("record-row-{i}")) { "Step " (i + 1) }
                                            span { (i + 1) "." }
                                            select id=(format!("record-row-{i}")) name=(name("action")) {
                                                @for a in wachet::steps::ACTIONS {
                                                    @let a = wachet::steps::action_name(*a);
                                                    option value=(a) selected[wachet::steps::action_name(step.action) == a] { (a) }
                                                }
                                            }
                                        }
                                        input type="text" name=(name("selector")) value=(step.selector.as_deref().unwrap_or("")) aria-label={ "Selector of step " (i + 1) } spellcheck="false" autocomplete="off";
                                        @if step.secret {
                                            input type="password" name=(name("value")) value="" placeholder="secret, kept" aria-label={ "Value of step " (i + 1) } autocomplete="off";
                                        } @else {
                                            input type="text" name=(name("value")) value=(step.value.as_deref().unwrap_or("")) placeholder="value" aria-label={ "Value of step " (i + 1) } autocomplete="off";
                                        }
                                        div.row-buttons {
                                            label.check {
                                                input type="checkbox" name=(name("optional")) value="true" checked[step.optional];
                                                " Optional"
                                            }
                                            @if step.secret { span.badge { "secret" } }
                                            button.button.quiet type="submit" name="do" value=(format!("up:{i}")) disabled[i == 0] { "↑" span.visually-hidden { " Move step " (i + 1) " up" } }
                                            button.button.quiet type="submit" name="do" value=(format!("down:{i}")) disabled[i + 1 == recorded.steps.len()] { "↓" span.visually-hidden { " Move step " (i + 1) " down" } }
                                            button.button.quiet type="submit" name="do" value=(format!("remove:{i}")) { "Remove" span.visually-hidden { " step " (i + 1) } }
                                        }
                                    }
                                }
                            }
                        }
                        div.field.record-goto {
                            label for="record-address" { "Go to an address" }
                            div.record-actions {
                                input #record-address type="text" inputmode="url" name="address" placeholder="https://" autocomplete="off" spellcheck="false";
                                button.button #record-go type="submit" name="do" value="goto" { "Go" }
                            }
                        }
                        div.record-actions {
                            button.button type="submit" name="do" value="edit" { "Keep changes" }
                            button.button type="submit" name="do" value="press" { "Press Enter" }
                            button.button #record-replay type="submit" name="do" value="replay" { "Replay from the start" }
                        }
                    }
                    section.card.record-panel {
                        div.record-actions {
                            button.button.primary #record-use type="submit" name="do" value="use-steps" { "Use as the steps" }
                            button.button #record-use-login type="submit" name="do" value="use-login" { "Use as the sign-in" }
                            button.button.quiet type="submit" name="do" value="close" formnovalidate { "Close" }
                        }
                        p.hint { "Back to the monitor form with these steps in it; save the form to keep them." }
                    }
                }
                div.record-view {
                    p.hint { "The page in the browser on the server, as a check sees it (without images). Click where a person would." }
                    div.record-shot-box {
                        @if recorded.shot.is_some() {
                            input #record-shot.record-shot type="image" name="at"
                                src={ "/monitors/record/" (token) "/shot?n=" (recorded.shot_number) }
                                width=(recorded.shot_size.0) height=(recorded.shot_size.1)
                                data-width=(recorded.shot_size.0) data-height=(recorded.shot_size.1)
                                alt="The page: click an element to record a step on it";
                        } @else {
                            p.empty { "No screenshot could be taken." }
                        }
                    }
                }
            }
        }
    };
    (
        StatusCode::OK,
        page_with_scripts("Record steps", Some(session), &[&RECORD_JS], main),
    )
        .into_response()
}
