//! `apprise(s)://[user:password@]host[:port][/path]/token`: a self-hosted Apprise API, which
//! forwards to everything else: `POST /notify/{token}` (the key of a configuration stored
//! there) with JSON `title`, `body`, `type` (`info`) and `format` (`text`), and `tag` when
//! `?tags=` names some.

use super::{NotifyUrl, Part, Sending, Service, at, basic, json_post, needs};
use crate::notify::SendError;
use crate::notify::channel::{Outgoing, header};
use serde_json::json;

/// How long a message the Apprise API gets (it cuts for each service itself).
const TEXT_CHARS: usize = 32_000;

/// The Apprise API.
pub struct Apprise;

impl Service for Apprise {
    fn schemes(&self) -> &'static [&'static str] {
        &["apprise", "apprises"]
    }

    fn check(&self, url: &NotifyUrl) -> Result<(), String> {
        needs(!url.host.is_empty(), "a host")?;
        needs(
            !url.segments.is_empty(),
            "the configuration's key (apprises://host/key)",
        )
    }

    fn secrets(&self, url: &NotifyUrl) -> Vec<Part> {
        vec![
            Part::Password,
            Part::Segment(url.segments.len().saturating_sub(1)),
        ]
    }

    fn prepare(&self, sending: &Sending<'_>) -> Result<Vec<Outgoing>, SendError> {
        let url = &sending.url;
        let Some((token, prefix)) = url.segments.split_last() else {
            return Err("no key".into());
        };
        let message = &sending.message;
        let mut body = json!({
            "title": message.title,
            "body": message.plain(TEXT_CHARS),
            "type": "info",
            "format": "text",
        });
        if let Some(tags) = url.param("tags").or(url.param("tag")) {
            body["tag"] = tags.into();
        }
        let target = at(&url.origin(), prefix, &format!("/notify/{token}"))?;
        let mut request = json_post(target, &body, sending)?;
        header(&mut request, "accept", "application/json")?;
        if let Some(user) = &url.user {
            let authorization = basic(user, url.password.as_deref().unwrap_or(""));
            header(&mut request, "authorization", &authorization)?;
        }
        Ok(vec![Outgoing::Http(request)])
    }
}
