//! `form://` and `forms://`: any HTTP endpoint, sent Apprise's fields form-encoded
//! (`version`, `title`, `message`, `type`), with the same URL options as `json://`.

use super::json::{check_custom, custom, payload};
use super::{NotifyUrl, Part, Sending, Service};
use crate::notify::SendError;
use crate::notify::channel::Outgoing;
use serde_json::Value;

/// Generic form.
pub struct Form;

impl Service for Form {
    fn schemes(&self) -> &'static [&'static str] {
        &["form", "forms"]
    }

    fn check(&self, url: &NotifyUrl) -> Result<(), String> {
        check_custom(url)
    }

    fn secrets(&self, _: &NotifyUrl) -> Vec<Part> {
        vec![Part::Password, Part::QueryPrefix("+")]
    }

    fn prepare(&self, sending: &Sending<'_>) -> Result<Vec<Outgoing>, SendError> {
        let mut fields = payload(sending);
        fields.remove("attachments");
        let pairs: Vec<(String, String)> = fields
            .into_iter()
            .map(|(name, value)| match value {
                Value::String(text) => (name, text),
                other => (name, other.to_string()),
            })
            .collect();
        let body =
            serde_urlencoded::to_string(&pairs).map_err(|e| SendError::from(e.to_string()))?;
        Ok(vec![custom(
            sending,
            body,
            "application/x-www-form-urlencoded",
        )?])
    }
}
