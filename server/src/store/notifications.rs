//! Notifications: what a check's alerts raised, as stored with the check and as the owner
//! reads them back, with what their deliveries carry beside the API's form ([`Explanation`]).
//! They are made in [`crate::notify`], which imports these types; the store imports nothing
//! of it.

use super::{Millis, StoreError, TimeKey, TimePage};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use wachet::model::{
    Alert, ClientAlertContentResponse, ClientNotification, JobType, NotificationEndpoint,
};

/// A notification to store.
#[derive(Debug, Clone)]
pub struct NewNotification {
    /// The monitor whose alert fired.
    pub task_id: String,
    /// The page it speaks of (JobType PortalPage), by URL.
    pub page_url: Option<String>,
    /// Monitor, Portal or page.
    pub job_type: JobType,
    /// The alert that fired.
    pub alert: Alert,
    /// When it was raised.
    pub created_at: Millis,
    /// The current value.
    pub current: Option<String>,
    /// The previous value or the comparison value.
    pub comparand: Option<String>,
    /// The check's error.
    pub error: Option<String>,
    /// The page's URL.
    pub url: Option<String>,
    /// One-line description, such as `content changed`.
    pub synthetic_expression: String,
    /// The content as HTML (endpoint 5, the e-mail body).
    pub html: String,
    /// Where it goes: the monitor's endpoints, or (when empty) every endpoint of the user.
    pub endpoints: Vec<NotificationEndpoint>,
    /// What its deliveries carry beside it (first seen, the change as data, plain text).
    pub explanation: Option<Explanation>,
}

/// What a notification carries beside the API's ClientNotification, for its deliveries: the
/// webhook payload's `firstSeen` and `change`, and the e-mail's plain-text part.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Explanation {
    /// When what it reports was first seen, when earlier than the notification (a change or a
    /// failure confirmed by later checks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_seen: Option<chrono::DateTime<chrono::Utc>>,
    /// The change, in key form with noise masked, when the check had a value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<ChangeData>,
    /// The content as plain text (the e-mail's alternative to the HTML).
    #[serde(default)]
    pub text: String,
    /// What the endpoints' templates may say beside the notification's own fields; none for
    /// notifications stored before templates existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub facts: Option<Facts>,
}

/// What a notification's templates may say that the notification does not hold itself: the
/// change in each format, its added and removed lines, the previous value and the numbers
/// before and after, why the rules doubted, each bounded as the change is.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Facts {
    /// The change as plain text (`[-removed-]`, `{+added+}`).
    pub diff_text: String,
    /// The change as Markdown (removed struck through, added in bold).
    pub diff_markdown: String,
    /// The change as HTML (`<del>`, `<ins>`).
    pub diff_html: String,
    /// The lines the current value has and the previous one had not.
    pub added_lines: Vec<String>,
    /// The lines the previous value had and the current one has not.
    pub removed_lines: Vec<String>,
    /// The previous value, cut as the change is.
    pub previous: Option<String>,
    /// The first number of the previous value, when it has one.
    pub before: Option<f64>,
    /// The first number of the current value, when it has one.
    pub after: Option<f64>,
    /// Why the rules doubted the change, when they did.
    pub doubt: Option<String>,
    /// Whether some of the change is masked noise.
    pub noise: bool,
}

/// The change as data, for the webhook payload: the removed and added pieces in key form, each
/// masked span written as [`PLACEHOLDER`], at most [`MAX_PIECES`] of each, listed until they
/// hold about 64 KiB, each at most [`MAX_CHANGE_CHARS`] characters.
///
/// [`PLACEHOLDER`]: wachet::alerts::compare::PLACEHOLDER
/// [`MAX_PIECES`]: crate::notify::change::MAX_PIECES
/// [`MAX_CHANGE_CHARS`]: crate::notify::change::MAX_CHANGE_CHARS
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChangeData {
    /// Text the previous value had and the current one has not.
    pub removed: Vec<String>,
    /// Text the current value has and the previous one had not.
    pub added: Vec<String>,
}

impl NewNotification {
    /// The notification that stands for `held` alerts left out because the user's monitors
    /// reached `limit` notifications in an hour: it goes where this one would have gone, so
    /// the user learns that alerts are missing instead of missing them silently.
    pub fn held(mut self, held: usize, limit: u32) -> NewNotification {
        let expression = format!(
            "{held} alert(s) not sent: your monitors raised {limit} notifications in the last \
             hour, the most this server sends a user in an hour"
        );
        self.html = format!(
            "<p>{expression}. Further alerts are left out until the hour has passed; every \
             check is still recorded in the monitors' history.</p>"
        );
        self.synthetic_expression = expression;
        self.current = None;
        self.comparand = None;
        self.error = None;
        self.explanation = None;
        self
    }
}

/// The notifications of a user.
///
/// Every method keeps to [the store's rules](super): only the user's own data, each write one
/// transaction.
#[async_trait]
pub trait NotificationStore: Send + Sync + 'static {
    /// One page of the user's notifications (of one monitor, when `task` is given), newest
    /// first; `html` only when `with_html`. `NotFound` when `task` is not the user's.
    async fn notifications(
        &self,
        user: &str,
        task: Option<&str>,
        page: &TimePage,
        with_html: bool,
    ) -> Result<Vec<(TimeKey, ClientNotification)>, StoreError>;
    /// The content of one notification. `NotFound` when it is not the user's.
    async fn notification(
        &self,
        user: &str,
        id: &str,
    ) -> Result<ClientAlertContentResponse, StoreError>;
}
