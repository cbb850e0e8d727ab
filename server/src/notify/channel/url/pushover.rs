//! `pover://user_key@app_token[/device...]`: Pushover's `POST /1/messages.json`, form fields
//! `token`, `user`, `title` (250 characters at most), `message` (1,024), `url` (512) and
//! `url_title`, `device` (comma-separated), `priority` (`?priority=-2` to `2`), `sound`.

use super::{NotifyUrl, Part, Sending, Service, needs, sealed};
use crate::notify::SendError;
use crate::notify::channel::{Outgoing, post};

/// Pushover's limits.
const TITLE_CHARS: usize = 250;
const MESSAGE_CHARS: usize = 1024;
const URL_CHARS: usize = 512;

/// Pushover.
pub struct Pushover;

/// A user, group or application key as Pushover issues them: 30 letters and digits.
fn key(text: &str) -> bool {
    sealed(text) || (text.len() == 30 && text.chars().all(|c| c.is_ascii_alphanumeric()))
}

impl Service for Pushover {
    fn schemes(&self) -> &'static [&'static str] {
        &["pover"]
    }

    fn based(&self) -> Option<&'static str> {
        Some("pover")
    }

    fn check(&self, url: &NotifyUrl) -> Result<(), String> {
        needs(
            url.user.as_deref().is_some_and(key),
            "a user key of 30 letters and digits (pover://user_key@app_token)",
        )?;
        needs(
            key(&url.host),
            "an application token of 30 letters and digits (pover://user_key@app_token)",
        )?;
        if let Some(priority) = url.param("priority")
            && !matches!(priority, "-2" | "-1" | "0" | "1" | "2")
        {
            return Err(format!("priority {priority} is not -2 to 2"));
        }
        Ok(())
    }

    fn secrets(&self, _: &NotifyUrl) -> Vec<Part> {
        vec![Part::User, Part::Host]
    }

    fn prepare(&self, sending: &Sending<'_>) -> Result<Vec<Outgoing>, SendError> {
        let url = &sending.url;
        let message = &sending.message;
        let mut fields: Vec<(&str, String)> = vec![
            ("token", url.host.clone()),
            ("user", url.user.clone().unwrap_or_default()),
            ("title", message.title.chars().take(TITLE_CHARS).collect()),
            ("message", message.text_within(MESSAGE_CHARS)),
        ];
        if let Some(link) = message.link.as_ref().filter(|l| l.len() <= URL_CHARS) {
            fields.push(("url", link.clone()));
            fields.push(("url_title", "Whole change".into()));
        }
        if !url.segments.is_empty() {
            fields.push(("device", url.segments.join(",")));
        }
        for name in ["priority", "sound"] {
            if let Some(value) = url.param(name) {
                fields.push((name, value.to_string()));
            }
        }
        let target =
            sending
                .context
                .bases
                .at("pover", "https://api.pushover.net", "/1/messages.json")?;
        let body =
            serde_urlencoded::to_string(&fields).map_err(|e| SendError::from(e.to_string()))?;
        Ok(vec![Outgoing::Http(post(
            target,
            body,
            "application/x-www-form-urlencoded",
            sending.delivery,
        )?)])
    }
}
