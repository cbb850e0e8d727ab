//! The monitor form's browser steps: two lists of rows (the steps, the login's steps) and the
//! login's `loggedInWhen`, read from the posted form, turned into the monitor's `steps` and
//! `login`, and shown with the step the latest check failed at highlighted. A secret step's
//! value is never shown: its field stays empty, and an empty secret value keeps the stored one
//! (the operations layer's rule).

use super::form::{Problems, id_of};

/// The name of the monitor form's button that opens a recording.
pub const RECORD_BUTTON: &str = "record";
use maud::{Markup, html};
use wachet::model::{Login, Monitor, Step, StepAction};

/// The two lists, by the name their controls and their API errors share.
pub const LISTS: [&str; 2] = ["steps", "login.steps"];

/// One step as typed.
#[derive(Debug, Clone, Default)]
pub struct StepRow {
    /// An action's API name (`click`, ...).
    pub action: String,
    pub selector: String,
    pub value: String,
    pub optional: bool,
    pub secret: bool,
}

/// The steps part of the form.
#[derive(Debug, Clone, Default)]
pub struct StepFields {
    pub steps: Vec<StepRow>,
    pub login: Vec<StepRow>,
    pub logged_in_when: String,
    /// The row the latest check failed at: the list's name and the row's index.
    pub failed: Option<(&'static str, usize)>,
    /// The recording the rows came from: its secret values fill the secret rows left empty.
    pub recording: String,
}

fn rows(steps: Option<&[Step]>) -> Vec<StepRow> {
    steps
        .unwrap_or_default()
        .iter()
        .map(|s| StepRow {
            action: wachet::steps::action_name(s.action).into(),
            selector: s.selector.clone().unwrap_or_default(),
            value: if s.secret {
                String::new()
            } else {
                s.value.clone().unwrap_or_default()
            },
            optional: s.optional,
            secret: s.secret,
        })
        .collect()
}

/// Which row a check's error names: "step 3 of 5 (...)" or "login step 2 of 4 (...)".
fn failed_row(error: &str) -> Option<(&'static str, usize)> {
    let (list, rest) = match error.strip_prefix("login step ") {
        Some(rest) => ("login.steps", rest),
        None => ("steps", error.strip_prefix("step ")?),
    };
    let n: usize = rest.split(' ').next()?.parse().ok()?;
    Some((list, n.checked_sub(1)?))
}

impl StepFields {
    /// The fields of `monitor` (secret values left out).
    pub fn of(monitor: &Monitor) -> Self {
        let error = monitor.data.as_ref().and_then(|d| d.error.as_deref());
        StepFields {
            steps: rows(monitor.steps.as_deref()),
            login: rows(monitor.login.as_ref().map(|l| l.steps.as_slice())),
            logged_in_when: monitor
                .login
                .as_ref()
                .and_then(|l| l.logged_in_when.clone())
                .unwrap_or_default(),
            failed: error.and_then(failed_row),
            recording: String::new(),
        }
    }

    fn list_mut(&mut self, list: &str) -> Option<&mut Vec<StepRow>> {
        match list {
            "steps" => Some(&mut self.steps),
            "login.steps" => Some(&mut self.login),
            _ => None,
        }
    }

    /// Takes the posted control `part` of row `index` of `list` (`steps[2].selector`).
    pub fn read(&mut self, list: &str, index: usize, part: &str, value: String) {
        let Some(rows) = self.list_mut(list) else {
            return;
        };
        if rows.len() <= index {
            rows.resize(index + 1, StepRow::default());
        }
        let row = &mut rows[index];
        match part {
            "action" => row.action = value,
            "selector" => row.selector = value,
            "value" => row.value = value,
            "optional" => row.optional = true,
            "secret" => row.secret = true,
            _ => {}
        }
    }

    /// Drops rows without an action (left empty, or gaps in the posted indexes).
    pub fn compact(&mut self) {
        self.steps.retain(|r| !r.action.trim().is_empty());
        self.login.retain(|r| !r.action.trim().is_empty());
    }

    /// Adds an empty row to `list` ("Add a step"); whether `list` is one of these.
    pub fn add_row(&mut self, list: &str) -> bool {
        let Some(rows) = self.list_mut(list) else {
            return false;
        };
        rows.push(StepRow {
            action: "click".into(),
            ..StepRow::default()
        });
        true
    }

    /// Drops the row a "Remove" button names (`steps[2]`); whether it named one of these.
    pub fn remove_row(&mut self, row: &str) -> bool {
        for list in LISTS {
            let index = row
                .strip_prefix(list)
                .and_then(|r| r.strip_prefix('['))
                .and_then(|r| r.strip_suffix(']'))
                .and_then(|n| n.parse::<usize>().ok());
            if let Some(i) = index
                && let Some(rows) = self.list_mut(list)
            {
                if i < rows.len() {
                    rows.remove(i);
                }
                return true;
            }
        }
        false
    }

    /// Gives the secret rows left empty the value typed while recording (by selector).
    pub fn fill_secrets(&mut self, recorded: &[(String, String)]) {
        for row in self.steps.iter_mut().chain(self.login.iter_mut()) {
            if row.secret
                && row.value.is_empty()
                && let Some((_, value)) = recorded.iter().find(|(s, _)| *s == row.selector.trim())
            {
                row.value = value.clone();
            }
        }
    }

    /// Sets the monitor's `steps` and `login` from the rows; an unknown action is a problem at
    /// its row.
    pub fn apply(&self, monitor: &mut Monitor, problems: &mut Problems) {
        let to_steps = |list: &str, rows: &[StepRow], problems: &mut Problems| -> Vec<Step> {
            let mut out = Vec::new();
            for (i, row) in rows.iter().enumerate() {
                let action: Option<StepAction> =
                    serde_json::from_value(serde_json::Value::String(row.action.trim().into()))
                        .ok();
                let Some(action) = action else {
                    problems.add(format!("{list}[{i}].action"), "choose an action");
                    continue;
                };
                let text = |s: &str| Some(s.trim().to_string()).filter(|s| !s.is_empty());
                out.push(Step {
                    action,
                    selector: text(&row.selector),
                    // An empty secret keeps the stored one; other values are taken as typed.
                    value: match row.secret {
                        true => Some(row.value.clone()).filter(|v| !v.is_empty()),
                        false => text(&row.value).map(|_| row.value.clone()),
                    },
                    optional: row.optional,
                    secret: row.secret,
                });
            }
            out
        };
        let steps = to_steps("steps", &self.steps, problems);
        monitor.steps = (!steps.is_empty()).then_some(steps);
        let login = to_steps("login.steps", &self.login, problems);
        let when = self.logged_in_when.trim();
        monitor.login = (!login.is_empty() || !when.is_empty()).then(|| Login {
            steps: login,
            logged_in_when: (!when.is_empty()).then(|| when.to_string()),
        });
    }

    /// The slots of the rows' controls, for the form's order of problems.
    pub fn slots(&self) -> Vec<String> {
        let mut all = vec!["steps".to_string()];
        for i in 0..self.steps.len() {
            all.extend(["action", "selector", "value"].map(|p| format!("steps[{i}].{p}")));
        }
        all.push("login".into());
        all.push("login.steps".into());
        for i in 0..self.login.len() {
            all.extend(["action", "selector", "value"].map(|p| format!("login.steps[{i}].{p}")));
        }
        all.push("login.loggedInWhen".into());
        all
    }

    /// The Browser steps section.
    pub fn render(&self, problems: &Problems) -> Markup {
        html! {
            fieldset.group.steps id=(id_of("steps")) {
                legend { "Browser steps" }
                p.hint { "Run in the browser after the page loads, before the value is taken: accept a cookie wall, choose a region, open a tab. A selector starting with / or ( is XPath, any other CSS. Steps make the check a rendered one." }
                (message("steps", problems))
                @if !self.recording.is_empty() {
                    input type="hidden" name="recording" value=(self.recording);
                    p.notice role="status" { "Recorded steps: save the form to keep them." }
                }
                (self.list("steps", &self.steps, problems))
                div.step-actions {
                    button.button.quiet type="submit" name="add" value="steps" formnovalidate { "Add a step" }
                    button.button #record-steps type="submit" name=(RECORD_BUTTON) value="1" formnovalidate { "Record steps" }
                }
                p.hint { "Record steps opens the page in a browser on the server: click in it as a person would, and each click, text and choice becomes a step." }
            }
            fieldset.group.steps id=(id_of("login")) {
                legend { "Sign-in" }
                p.hint { "Run only when the page does not show the element below (signed-in pages only). The browser's session is kept between checks, so sign-ins are rare. A secret value (a password) is never shown again; leave it empty to keep it." }
                (message("login", problems))
                (message("login.steps", problems))
                (self.list("login.steps", &self.login, problems))
                button.button.quiet type="submit" name="add" value="login.steps" formnovalidate { "Add a sign-in step" }
                (field("login.loggedInWhen", "loggedInWhen", "Signed in when the page shows", &self.logged_in_when, "text", problems))
            }
        }
    }

    fn list(&self, list: &'static str, rows: &[StepRow], problems: &Problems) -> Markup {
        html! {
            @if rows.is_empty() {
                p.empty { "No steps." }
            } @else {
                ol.step-list {
                    @for (i, row) in rows.iter().enumerate() {
                        @let failed = self.failed == Some((list, i));
                        @let name = |part: &str| format!("{list}[{i}].{part}");
                        li.step.failed[failed] aria-current=[failed.then_some("step")] {
                            @if failed {
                                p.notice role="status" { "The latest check failed at this step." }
                            }
                            div.field {
                                label for=(id_of(&name("action"))) { "Step " (i + 1) }
                                select id=(id_of(&name("action"))) name=(name("action")) {
                                    @for action in wachet::steps::ACTIONS {
                                        @let action = wachet::steps::action_name(*action);
                                        option value=(action) selected[row.action == action] { (action) }
                                    }
                                }
                                (message(&name("action"), problems))
                            }
                            (field(&name("selector"), &name("selector"), "Selector", &row.selector, "text", problems))
                            @let kind = if row.secret { "password" } else { "text" };
                            (field(&name("value"), &name("value"), "Value", &row.value, kind, problems))
                            div.step-actions {
                                label.check {
                                    input type="checkbox" name=(name("optional")) value="true" checked[row.optional];
                                    " Optional"
                                }
                                label.check {
                                    input type="checkbox" name=(name("secret")) value="true" checked[row.secret];
                                    " Secret"
                                }
                                button.button.quiet type="submit" name="remove" value=(format!("{list}[{i}]")) formnovalidate {
                                    "Remove" span.visually-hidden { " step " (i + 1) }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn message(slot: &str, problems: &Problems) -> Markup {
    html! {
        @if let Some(messages) = problems.0.get(slot) {
            p.field-error id=(format!("{}-error", id_of(slot))) {
                @for (i, m) in messages.iter().enumerate() {
                    @if i > 0 { br; }
                    (m)
                }
            }
        }
    }
}

fn field(
    slot: &str,
    name: &str,
    label: &str,
    value: &str,
    kind: &str,
    problems: &Problems,
) -> Markup {
    let id = id_of(slot);
    let invalid = problems.0.contains_key(slot).then_some("true");
    html! {
        div.field {
            label for=(id) { (label) }
            input id=(id) name=(name) type=(kind) value=(value) aria-invalid=[invalid] autocomplete="off";
            (message(slot, problems))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_failing_row_is_found_from_the_error() {
        assert_eq!(
            failed_row("step 3 of 5 (click `#go`): no element matched within 10 s"),
            Some(("steps", 2))
        );
        assert_eq!(
            failed_row("login step 1 of 4 (click `#signin`): ..."),
            Some(("login.steps", 0))
        );
        assert_eq!(failed_row("login: the login steps ran, but ..."), None);
        assert_eq!(failed_row("HTTP 500"), None);
    }

    #[test]
    fn the_step_the_latest_check_failed_at_is_highlighted() {
        let mut m = Monitor::new("https://example.com/");
        m.steps = Some(vec![
            Step::new(StepAction::Click).on("#a"),
            Step::new(StepAction::Click).on("#b"),
        ]);
        let error = "step 2 of 2 (click `#b`): no element matched within 10 s".to_string();
        m.data = Some(wachet::model::ClientData::failure(
            chrono::Utc::now(),
            error,
        ));
        let html = StepFields::of(&m)
            .render(&Problems::default())
            .into_string();
        let at = html.find("failed at this step").expect("highlighted");
        assert!(html[..at].contains("value=\"#a\""));
        assert!(html[at..].contains("value=\"#b\""));
        assert_eq!(html.matches("class=\"step failed\"").count(), 1, "{html}");
    }
}
