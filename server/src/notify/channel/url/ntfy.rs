//! `ntfy://topic` (ntfy.sh) and `ntfy(s)://[user:password@|token@]host[:port]/topic[/topic...]`:
//! ntfy's JSON publishing (`POST /` with `topic`, `title`, `message`, `click`, `priority`,
//! `tags`), Basic authorization for a user and password, `Bearer` for an access token (given
//! as the user, or `?token=`). Options: `priority` (1 to 5 or min ... max), `tags`
//! (comma-separated).

use super::{NotifyUrl, Part, Sending, Service, basic, json_post, needs};
use crate::notify::SendError;
use crate::notify::channel::{Outgoing, header};
use serde_json::json;

/// ntfy takes messages of 4,096 bytes before turning them into attachments; the text is cut
/// below that.
const TEXT_CHARS: usize = 4000;

/// ntfy.
pub struct Ntfy;

/// The topics and whether they go to ntfy.sh (the URL names only a topic).
fn topics(url: &NotifyUrl) -> (Vec<&str>, bool) {
    match url.segments.is_empty() {
        true => (vec![url.host.as_str()], true),
        false => (url.segments.iter().map(String::as_str).collect(), false),
    }
}

impl Service for Ntfy {
    fn schemes(&self) -> &'static [&'static str] {
        &["ntfy", "ntfys"]
    }

    fn based(&self) -> Option<&'static str> {
        Some("ntfy")
    }

    fn host<'u>(&self, url: &'u NotifyUrl) -> Option<&'u str> {
        (!topics(url).1).then_some(url.host.as_str())
    }

    fn check(&self, url: &NotifyUrl) -> Result<(), String> {
        needs(
            !url.host.is_empty(),
            "a topic (ntfys://topic or ntfys://host/topic)",
        )?;
        for topic in topics(url).0 {
            if topic.len() > 64
                || !topic
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            {
                return Err(format!(
                    "{topic} is not a topic (letters, digits, _ and -, at most 64)"
                ));
            }
        }
        if let Some(priority) = url.param("priority")
            && !matches!(
                priority,
                "1" | "2" | "3" | "4" | "5" | "min" | "low" | "default" | "high" | "max" | "urgent"
            )
        {
            return Err(format!("priority {priority} is not 1 to 5 nor min ... max"));
        }
        Ok(())
    }

    fn secrets(&self, url: &NotifyUrl) -> Vec<Part> {
        let mut parts = vec![Part::Password, Part::Query("token")];
        if url.password.is_none() {
            parts.push(Part::User);
        }
        parts
    }

    fn prepare(&self, sending: &Sending<'_>) -> Result<Vec<Outgoing>, SendError> {
        let url = &sending.url;
        let (topics, cloud) = topics(url);
        let target = match cloud {
            true => sending.context.bases.at("ntfy", "https://ntfy.sh", "/")?,
            false => super::at(&url.origin(), &[], "/")?,
        };
        let message = &sending.message;
        let mut all = Vec::new();
        for topic in topics {
            let mut body = json!({
                "topic": topic,
                "title": message.title,
                "message": message.text_within(TEXT_CHARS),
            });
            if let Some(link) = &message.link {
                body["click"] = link.as_str().into();
            }
            if let Some(priority) = url.param("priority") {
                let level = match priority {
                    "min" => 1,
                    "low" => 2,
                    "high" => 4,
                    "max" | "urgent" => 5,
                    other => other.parse().unwrap_or(3),
                };
                body["priority"] = level.into();
            }
            if let Some(tags) = url.param("tags") {
                body["tags"] = tags.split(',').map(str::trim).collect::<Vec<_>>().into();
            }
            let mut request = json_post(target.clone(), &body, sending)?;
            let token = url
                .param("token")
                .or(url.user.as_deref().filter(|_| url.password.is_none()));
            match (&url.user, &url.password, token) {
                (Some(user), Some(password), _) => {
                    header(&mut request, "authorization", &basic(user, password))?
                }
                (_, _, Some(token)) => {
                    header(&mut request, "authorization", &format!("Bearer {token}"))?
                }
                _ => {}
            }
            all.push(Outgoing::Http(request));
        }
        Ok(all)
    }
}
