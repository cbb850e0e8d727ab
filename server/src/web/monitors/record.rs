//! Recording browser steps: the monitor form's "Record steps" button opens the form's page in
//! the browser on the server ([`wachet::Checker::record`]: the check's request, network policy
//! and limits, its renders in the user's own browser tabs), kept in the [`RecordStore`]. The
//! page `/monitors/record/{token}` shows it as a screenshot that is an image button of a form:
//! a click on it posts the point, where the server finds the element and proposes its XPath
//! with the picker's own proposer ([`crate::web::assets::PROPOSE_JS`]). A click on a button or
//! a link runs a `click` step at once; on a field it asks for the text (a `type` step, secret
//! for a password field), on a list for the option (a `select` step). Every step runs with the
//! code a check runs. The steps can be edited, reordered, marked optional, removed, replayed
//! from the start, and used in the form, which shows them in its lists with the recording's
//! token, so a secret typed while recording is taken from the recording when the form is saved
//! and never sent back to the browser. Every action is a form with the CSRF token; another
//! user's recording is the same 404 as an unknown one. The page is drawn by
//! [`crate::web::monitors::record_page`].

use crate::ops::Ctx;
use crate::tabs::Use;
use crate::web::assets::PROPOSE_JS;
use crate::web::monitors::form::{Fields, Problems};
use crate::web::monitors::page::{Choices, form_page};
use crate::web::monitors::record_page::{gone, record_page};
use crate::web::monitors::record_store::{MAX_STEPS, Pending, Record, RecordStore, Recorded};
use crate::web::shared::extract::{signed_in, signed_in_form};
use crate::web::shared::form::Form;
use crate::web::shared::pages;
use crate::web::shared::session::Session;
use axum::Extension;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use maud::html;
use std::sync::Arc;
use wachet::model::{ClientJobType, Step, StepAction};

/// Finds the element at a point of the page (scrolled into view first, since the screenshot
/// shows more than the window), and says what a person's click on it means: the proposed
/// XPath, and whether it is a field to type into, a list to choose from, or something to
/// click. A click on a label means its field.
const POINT: &str = r#"function (x, y) {
  window.scrollTo(0, Math.max(0, y - innerHeight / 2));
  var el = document.elementFromPoint(x, y - window.scrollY);
  if (!el) return null;
  if (el.localName === "label" && el.control) el = el.control;
  var tag = el.localName, type = (el.getAttribute("type") || "text").toLowerCase();
  var action = "click";
  if (tag === "select") action = "select";
  else if (tag === "textarea" || el.isContentEditable) action = "type";
  else if (tag === "input" && ["checkbox", "radio", "submit", "button", "reset", "image",
    "file", "hidden", "range", "color"].indexOf(type) < 0) action = "type";
  var label = (el.labels && el.labels[0] && el.labels[0].textContent) ||
    el.getAttribute("aria-label") || el.getAttribute("placeholder") || el.getAttribute("name") || "";
  var options = action === "select" ? Array.prototype.slice.call(el.options, 0, 200)
    .map(function (o) { return [o.value, (o.label || o.text || o.value).trim()]; }) : [];
  return { selector: wachetPropose(el, document), action: action,
           secret: tag === "input" && type === "password",
           label: label.trim().slice(0, 80), options: options };
}"#;

fn point_script(x: f64, y: f64) -> String {
    format!("(() => {{ {PROPOSE_JS}\nreturn ({POINT})({x}, {y}); }})()")
}

/// Opens a recording of the page the form names; its token, or the problems to show at the
/// form.
pub(crate) async fn open(
    state: &Ctx,
    store: &Arc<RecordStore>,
    session: &Session,
    fields: &Fields,
) -> Result<String, Problems> {
    let problem = |message: String| {
        let mut problems = Problems::default();
        problems.add("steps", message);
        problems
    };
    let mut monitor = fields.to_monitor()?;
    // The page as its check loads it, without the steps: those are what is recorded.
    monitor.job_type = ClientJobType::SinglePage;
    monitor.data = None;
    monitor.steps = None;
    monitor.login = None;
    monitor.dynamic_content = true;
    monitor.scroll_page = false;
    let turn = store
        .open_turn(&session.user)
        .map_err(|e| problem(e.to_string()))?;
    let checker = state.checker().clone();
    let prepared = tokio::task::spawn_blocking(move || checker.prepare(&monitor))
        .await
        .map_err(|_| problem("The page could not be opened.".into()))?
        .map_err(|invalid| {
            problem(
                invalid
                    .errors
                    .iter()
                    .map(|e| format!("{}: {}", e.field, e.message))
                    .collect::<Vec<_>>()
                    .join("; "),
            )
        })?;
    let gate = state
        .browser_tabs()
        .open(&session.user, Use::Record)
        .await
        .map_err(|refused| problem(refused.to_string()))?;
    let recording = state
        .checker()
        .record(&prepared.with_tabs(gate))
        .await
        .map_err(|e| problem(format!("The page could not be opened for recording: {e}.")))?;
    let record = Record::new(
        session.user.clone(),
        recording,
        Recorded {
            fields: fields.clone(),
            ..Recorded::default()
        },
    );
    {
        let mut recorded = record.state.lock().await;
        look(&record, &mut recorded).await;
    }
    Ok(store.insert(turn, record))
}

/// Takes a new screenshot and the page's whereabouts after an action.
async fn look(record: &Record, recorded: &mut Recorded) {
    match record.recording.screenshot().await {
        Ok(shot) => {
            recorded.shot = Some(shot.jpeg.into());
            recorded.shot_size = (shot.width, shot.height);
            recorded.shot_number += 1;
        }
        Err(e) => recorded.error = Some(format!("No screenshot: {e}.")),
    }
    if let Ok((url, title)) = record.recording.whereabouts().await {
        recorded.url = url;
        recorded.title = title;
    }
}

/// `GET /monitors/record/{token}`.
pub async fn show(
    State(state): State<Ctx>,
    Extension(store): Extension<Arc<RecordStore>>,
    headers: HeaderMap,
    Path(token): Path<String>,
) -> Response {
    let session = match signed_in(&state, &headers).await {
        Ok(session) => session,
        Err(response) => return response,
    };
    // Another user's recording is as unknown as a made-up token.
    let Some(record) = store.get(&session.user, &token) else {
        return gone(&session);
    };
    let recorded = record.state.lock().await;
    record_page(&session, &token, &recorded)
}

/// `GET /monitors/record/{token}/shot`: the latest screenshot.
pub async fn shot(
    State(state): State<Ctx>,
    Extension(store): Extension<Arc<RecordStore>>,
    headers: HeaderMap,
    Path(token): Path<String>,
) -> Response {
    let session = match signed_in(&state, &headers).await {
        Ok(session) => session,
        Err(response) => return response,
    };
    // Another user's recording is as unknown as a made-up token.
    let Some(record) = store.get(&session.user, &token) else {
        return gone(&session);
    };
    let recorded = record.state.lock().await;
    match recorded.shot.clone() {
        Some(jpeg) => (
            [
                (header::CONTENT_TYPE, HeaderValue::from_static("image/jpeg")),
                (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
            ],
            jpeg,
        )
            .into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// `POST /monitors/record/{token}`: one action, named by the `do` field (a click on the
/// screenshot posts `x` and `y` instead); the rows' edits posted with it are taken first.
pub async fn act(
    State(state): State<Ctx>,
    Extension(store): Extension<Arc<RecordStore>>,
    headers: HeaderMap,
    Path(token): Path<String>,
    Form(pairs): Form<Vec<(String, String)>>,
) -> Response {
    let field = |name: &str| {
        pairs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    };
    let session = match signed_in_form(&state, &headers, field("csrf")).await {
        Ok(session) => session,
        Err(response) => return response,
    };
    // Another user's recording is as unknown as a made-up token.
    let Some(record) = store.get(&session.user, &token) else {
        return gone(&session);
    };
    let number = |name: &str| {
        field(name)
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|v| v.is_finite() && *v >= 0.0 && *v <= 100_000.0)
    };
    let at = number("x")
        .zip(number("y"))
        .or_else(|| number("at.x").zip(number("at.y")));
    let action = match (at, field("do")) {
        (Some(point), _) => Action::Click(point),
        (None, Some(name)) => Action::named(name),
        (None, None) => Action::Edit,
    };
    if action == Action::Close {
        drop(store.remove(&session.user, &token));
        return Redirect::to("/").into_response();
    }
    let mut recorded = record.state.lock().await;
    edit_rows(&mut recorded.steps, &pairs);
    recorded.notice = None;
    recorded.error = None;
    match action {
        Action::Use(list) => {
            drop(recorded);
            return use_steps(&state, &session, &record, &token, list).await;
        }
        Action::Click((x, y)) => click(&record, &mut recorded, x, y).await,
        Action::Type => {
            let secret = field("secret").is_some();
            let value = field("typed").unwrap_or("").to_string();
            finish_pending(&record, &mut recorded, "type", value, secret).await;
        }
        Action::Select => {
            let value = field("chosen").unwrap_or("").to_string();
            finish_pending(&record, &mut recorded, "select", value, false).await;
        }
        Action::Goto => {
            let address = field("address").unwrap_or("").trim().to_string();
            if address.is_empty() {
                recorded.error = Some("Write the address to go to.".into());
            } else {
                let step = Step::new(StepAction::Goto).with(address);
                run_and_keep(&record, &mut recorded, step).await;
            }
        }
        Action::Press => {
            let step = Step::new(StepAction::Press).with("Enter");
            run_and_keep(&record, &mut recorded, step).await;
        }
        Action::Cancel => recorded.pending = None,
        Action::Move(from, up) => {
            let to = if up {
                from.checked_sub(1)
            } else {
                Some(from + 1)
            };
            if let Some(to) = to.filter(|to| *to < recorded.steps.len())
                && from < recorded.steps.len()
            {
                recorded.steps.swap(from, to);
            }
        }
        Action::Remove(i) => {
            if i < recorded.steps.len() {
                recorded.steps.remove(i);
            }
        }
        Action::Replay => {
            recorded.pending = None;
            let steps = recorded.steps.clone();
            match record.recording.replay(&steps).await {
                Ok(()) => {
                    recorded.failed_row = None;
                    recorded.notice = Some(format!(
                        "Replayed {} from the start: every step worked.",
                        plural(steps.len())
                    ));
                }
                Err(message) => {
                    recorded.failed_row = failed_row(&message);
                    recorded.error = Some(message);
                }
            }
            look(&record, &mut recorded).await;
        }
        Action::Edit => recorded.notice = Some("Changes kept.".into()),
        Action::Close => {}
    }
    Redirect::to(&format!("/monitors/record/{token}")).into_response()
}

fn plural(n: usize) -> String {
    if n == 1 {
        "1 step".into()
    } else {
        format!("{n} steps")
    }
}

/// The row a replay's error names ("step 3 of 5 (...)").
fn failed_row(message: &str) -> Option<usize> {
    let rest = message.strip_prefix("step ")?;
    rest.split(' ')
        .next()?
        .parse::<usize>()
        .ok()?
        .checked_sub(1)
}

/// What a posted action asks.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Action {
    Click((f64, f64)),
    Type,
    Select,
    Press,
    Goto,
    Cancel,
    Move(usize, bool),
    Remove(usize),
    Replay,
    Edit,
    Close,
    /// Into the form's steps, or its sign-in steps.
    Use(&'static str),
}

impl Action {
    fn named(name: &str) -> Action {
        let row = |prefix: &str| name.strip_prefix(prefix).and_then(|n| n.parse().ok());
        match name {
            "type" => Action::Type,
            "select" => Action::Select,
            "press" => Action::Press,
            "goto" => Action::Goto,
            "cancel" => Action::Cancel,
            "replay" => Action::Replay,
            "close" => Action::Close,
            "use-steps" => Action::Use("steps"),
            "use-login" => Action::Use("login.steps"),
            _ => match (row("up:"), row("down:"), row("remove:")) {
                (Some(i), _, _) => Action::Move(i, true),
                (_, Some(i), _) => Action::Move(i, false),
                (_, _, Some(i)) => Action::Remove(i),
                _ => Action::Edit,
            },
        }
    }
}

/// Takes the rows' fields as posted (`rows[2].selector`): a row's action, selector, value and
/// optional mark. A secret row's empty value keeps the recorded one.
fn edit_rows(steps: &mut [Step], pairs: &[(String, String)]) {
    let mut optional = vec![false; steps.len()];
    let mut seen = false;
    for (name, value) in pairs {
        let Some((i, part)) = name
            .strip_prefix("rows[")
            .and_then(|r| r.split_once("]."))
            .and_then(|(i, part)| Some((i.parse::<usize>().ok()?, part)))
        else {
            continue;
        };
        let Some(step) = steps.get_mut(i) else {
            continue;
        };
        seen = true;
        match part {
            "action" => {
                if let Ok(action) =
                    serde_json::from_value(serde_json::Value::String(value.trim().into()))
                {
                    step.action = action;
                }
            }
            "selector" => step.selector = Some(value.trim().to_string()).filter(|s| !s.is_empty()),
            "value" if step.secret && value.is_empty() => {}
            "value" => step.value = Some(value.clone()).filter(|v| !v.is_empty()),
            "optional" => optional[i] = true,
            _ => {}
        }
    }
    // A checkbox left unticked is not posted: the marks are read only from a form with rows.
    if seen {
        for (step, optional) in steps.iter_mut().zip(optional) {
            step.optional = optional;
        }
    }
}

/// A click on the screenshot at (`x`, `y`) in the page's pixels.
async fn click(record: &Record, recorded: &mut Recorded, x: f64, y: f64) {
    recorded.pending = None;
    let found = match record.recording.evaluate(&point_script(x, y)).await {
        Ok(found) => found,
        Err(e) => {
            recorded.error = Some(format!("The page did not answer: {e}."));
            return;
        }
    };
    let text = |name: &str| {
        found
            .get(name)
            .and_then(|v| v.as_str())
            .unwrap_or("")
            .to_string()
    };
    let selector = text("selector");
    if selector.is_empty() {
        recorded.error = Some("Nothing was found at that point of the page.".into());
        return;
    }
    let pending = |action: &'static str| Pending {
        selector: selector.clone(),
        action,
        secret: found
            .get("secret")
            .and_then(|v| v.as_bool())
            .unwrap_or(false),
        label: text("label"),
        options: found
            .get("options")
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default(),
    };
    match text("action").as_str() {
        "type" => recorded.pending = Some(pending("type")),
        "select" => recorded.pending = Some(pending("select")),
        _ => {
            let step = Step::new(StepAction::Click).on(selector);
            run_and_keep(record, recorded, step).await;
        }
    }
}

/// Ends the question a click on a field or list asked, with the person's answer.
async fn finish_pending(
    record: &Record,
    recorded: &mut Recorded,
    action: &str,
    value: String,
    secret: bool,
) {
    let Some(pending) = recorded.pending.take().filter(|p| p.action == action) else {
        recorded.error = Some("Click the field in the page first.".into());
        return;
    };
    let kind = match action {
        "select" => StepAction::Select,
        _ => StepAction::Type,
    };
    let mut step = Step::new(kind).on(pending.selector).with(value);
    step.secret = secret;
    run_and_keep(record, recorded, step).await;
}

/// Runs `step` on the page as it is; kept when it worked (the step that failed is said, and
/// left out).
async fn run_and_keep(record: &Record, recorded: &mut Recorded, step: Step) {
    if recorded.steps.len() >= MAX_STEPS {
        recorded.error = Some(format!(
            "A monitor takes at most {MAX_STEPS} steps; remove one first."
        ));
        return;
    }
    let described = wachet::steps::describe(&step);
    match record.recording.run(std::slice::from_ref(&step)).await {
        Ok(()) => {
            recorded.notice = Some(format!("Recorded: {described}."));
            recorded.steps.push(step);
        }
        Err(message) => {
            // "step 1 of 1 (click ...): why" is said as the step it was.
            let why = message
                .split_once("): ")
                .map_or(message.as_str(), |(_, why)| why);
            recorded.error = Some(format!("{described} did not work: {why}. Not recorded."));
        }
    }
    look(record, recorded).await;
}

/// The monitor form the recording was opened from, its `list` now the recorded steps, with
/// the recording's token so their secrets are taken from it when the form is saved.
async fn use_steps(
    state: &Ctx,
    session: &Session,
    record: &Record,
    token: &str,
    list: &'static str,
) -> Response {
    let recorded = record.state.lock().await;
    let mut fields = recorded.fields.clone();
    let mut probe = wachet::model::Monitor::new("");
    match list {
        "login.steps" => {
            probe.login = Some(wachet::model::Login {
                steps: recorded.steps.clone(),
                logged_in_when: None,
            });
            fields.steps.login = crate::web::monitors::steps_form::StepFields::of(&probe).login;
        }
        _ => {
            probe.steps = Some(recorded.steps.clone());
            fields.steps.steps = crate::web::monitors::steps_form::StepFields::of(&probe).steps;
        }
    }
    fields.steps.recording = token.to_string();
    fields.dynamic_content = true;
    drop(recorded);
    let choices = match Choices::load(state, session, &fields.folder).await {
        Ok(choices) => choices,
        Err(err) => return pages::from_error(err, Some(session)),
    };
    let token = fields.id.is_none().then(crate::web::shared::once::fresh);
    let below = html! {};
    (
        StatusCode::OK,
        form_page(
            state,
            session,
            &choices,
            &fields,
            &Problems::default(),
            token.as_deref(),
            below,
        ),
    )
        .into_response()
}

/// The secret values of a recording's steps, for the form's secret rows left empty (a secret
/// typed while recording never goes back to the browser): by selector.
pub(crate) fn recorded_secrets(
    store: &RecordStore,
    session: &Session,
    token: &str,
) -> Vec<(String, String)> {
    let Some(record) = store.get(&session.user, token) else {
        return Vec::new();
    };
    let Ok(recorded) = record.state.try_lock() else {
        return Vec::new();
    };
    recorded
        .steps
        .iter()
        .filter(|s| s.secret)
        .filter_map(|s| Some((s.selector.clone()?, s.value.clone()?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn rows_are_edited_and_a_secret_left_empty_is_kept() {
        let mut password = Step::new(StepAction::Type).on("#password").with("hunter2");
        password.secret = true;
        let mut steps = vec![Step::new(StepAction::Click).on("#a"), password];
        edit_rows(
            &mut steps,
            &pairs(&[
                ("rows[0].action", "click"),
                ("rows[0].selector", "#b"),
                ("rows[0].optional", "true"),
                ("rows[1].action", "type"),
                ("rows[1].selector", "#password"),
                ("rows[1].value", ""),
                ("rows[9].selector", "#nowhere"),
            ]),
        );
        assert_eq!(steps[0].selector.as_deref(), Some("#b"));
        assert!(steps[0].optional && !steps[1].optional);
        assert_eq!(steps[1].value.as_deref(), Some("hunter2"));
        // A form without rows (a click on the picture) changes no mark.
        edit_rows(&mut steps, &pairs(&[("x", "3")]));
        assert!(steps[0].optional);
    }

    #[test]
    fn actions_are_read_from_their_buttons() {
        assert_eq!(Action::named("up:2"), Action::Move(2, true));
        assert_eq!(Action::named("down:0"), Action::Move(0, false));
        assert_eq!(Action::named("remove:1"), Action::Remove(1));
        assert_eq!(Action::named("use-login"), Action::Use("login.steps"));
        assert_eq!(Action::named("up:x"), Action::Edit);
        assert_eq!(failed_row("step 3 of 5 (click `#go`): no element"), Some(2));
        assert_eq!(failed_row("the browser failed"), None);
    }
}
