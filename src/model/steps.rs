//! Browser steps of a monitor (extension): what the browser does on the page after it loads
//! and before the value is taken (`steps`), and how it signs in when it has to (`login`).
//! These are the types as the API writes them; what each action means, its bounds and how it
//! runs are in `wachet::steps`.

use serde::{Deserialize, Serialize};

/// One browser step: an action, and the element (`selector`) and text (`value`) it needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Step {
    /// What the browser does.
    pub action: StepAction,
    /// The element: XPath when it starts with `/` or `(`, else a CSS selector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
    /// The text typed, the URL opened, the key pressed, the option chosen, the seconds waited,
    /// the text waited for or the script run. Never written for a `secret` step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// Skipped, not failed, when its element does not appear (a banner shown only sometimes).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub optional: bool,
    /// The value is a secret (a password): stored sealed, never shown, logged or exported.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub secret: bool,
}

impl Step {
    /// A step of `action` with neither selector nor value.
    pub fn new(action: StepAction) -> Self {
        Step {
            action,
            selector: None,
            value: None,
            optional: false,
            secret: false,
        }
    }

    /// This step with `selector`.
    pub fn on(mut self, selector: impl Into<String>) -> Self {
        self.selector = Some(selector.into());
        self
    }

    /// This step with `value`.
    pub fn with(mut self, value: impl Into<String>) -> Self {
        self.value = Some(value.into());
        self
    }
}

/// What a step does. The names are the API's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub enum StepAction {
    /// Opens the URL in `value` (http or https, under the network policy).
    Goto,
    /// Clicks the element.
    Click,
    /// Types `value` into the field (replacing what it held).
    Type,
    /// Chooses the option of the list whose label or value is `value`.
    Select,
    /// Ticks a checkbox or radio button.
    Check,
    /// Unticks a checkbox.
    Uncheck,
    /// Presses the key in `value` (`Enter`, `Tab`, `Escape`, an arrow, a character), in the
    /// element when there is one.
    Press,
    /// Waits for the element to appear (`value`: seconds, 10 by default, at most 30).
    WaitFor,
    /// Waits for the text in `value` to appear (in the element, or the page).
    WaitForText,
    /// Waits `value` seconds (at most 10).
    Wait,
    /// Scrolls to the element, or to the bottom of the page without one.
    Scroll,
    /// Removes every element the selector matches (an overlay).
    Remove,
    /// Runs the JavaScript expression in `value` (awaited, at most 5 s).
    Script,
}

/// How the browser signs in (extension): steps run only when needed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", default)]
pub struct Login {
    /// The sign-in steps, run from the monitor's page when there is no session or the page
    /// does not show `loggedInWhen`.
    pub steps: Vec<Step>,
    /// An element present only when signed in. Without it, the steps run on every check.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logged_in_when: Option<String>,
}

impl super::Monitor {
    /// Whether a step of the monitor (its login's included) holds a value marked secret.
    pub fn has_secret_steps(&self) -> bool {
        let login = self.login.as_ref().map(|l| l.steps.as_slice());
        self.steps
            .as_deref()
            .into_iter()
            .chain(login)
            .flatten()
            .any(|s| s.secret)
    }

    /// The monitor's step lists, each with the field it is under: its own steps, then its
    /// login's.
    pub fn step_lists_mut(&mut self) -> [(&'static str, Option<&mut Vec<Step>>); 2] {
        [
            ("steps", self.steps.as_mut()),
            ("login.steps", self.login.as_mut().map(|l| &mut l.steps)),
        ]
    }

    /// Drops the values of the secret steps: how a monitor is shown and exported.
    pub fn hide_secret_steps(&mut self) {
        for (_, list) in self.step_lists_mut() {
            for step in list.into_iter().flatten().filter(|s| s.secret) {
                step.value = None;
            }
        }
    }
}
