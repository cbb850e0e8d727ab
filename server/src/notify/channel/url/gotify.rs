//! `gotify(s)://host[:port][/path]/token`: Gotify's `POST /message` with the application token
//! in `X-Gotify-Key`, JSON `title`, `message`, `priority` (`?priority=`, 5 by default) and the
//! link to the whole change as `extras.client::notification.click.url`.

use super::{NotifyUrl, Part, Sending, Service, at, json_post, needs};
use crate::notify::SendError;
use crate::notify::channel::{Outgoing, header};
use serde_json::json;

/// How long a message Gotify gets.
const TEXT_CHARS: usize = 32_000;

/// Gotify.
pub struct Gotify;

impl Service for Gotify {
    fn schemes(&self) -> &'static [&'static str] {
        &["gotify", "gotifys"]
    }

    fn check(&self, url: &NotifyUrl) -> Result<(), String> {
        needs(!url.host.is_empty(), "a host")?;
        needs(
            !url.segments.is_empty(),
            "an application token (gotifys://host/token)",
        )?;
        if let Some(priority) = url.param("priority")
            && !priority.parse::<u8>().is_ok_and(|p| p <= 10)
        {
            return Err(format!("priority {priority} is not 0 to 10"));
        }
        Ok(())
    }

    fn secrets(&self, url: &NotifyUrl) -> Vec<Part> {
        vec![Part::Segment(url.segments.len().saturating_sub(1))]
    }

    fn prepare(&self, sending: &Sending<'_>) -> Result<Vec<Outgoing>, SendError> {
        let url = &sending.url;
        let Some((token, prefix)) = url.segments.split_last() else {
            return Err("no token".into());
        };
        let message = &sending.message;
        let priority: u8 = url
            .param("priority")
            .and_then(|p| p.parse().ok())
            .unwrap_or(5);
        let mut body = json!({
            "title": message.title,
            "message": message.text_within(TEXT_CHARS),
            "priority": priority,
        });
        if let Some(link) = &message.link {
            body["extras"] = json!({"client::notification": {"click": {"url": link}}});
        }
        let mut request = json_post(at(&url.origin(), prefix, "/message")?, &body, sending)?;
        header(&mut request, "x-gotify-key", token)?;
        Ok(vec![Outgoing::Http(request)])
    }
}
