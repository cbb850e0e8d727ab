//! `hassio(s)://host[:port][/path]/access_token`: a Home Assistant persistent
//! notification, `POST /api/services/persistent_notification/create` with
//! `Authorization: Bearer <long-lived access token>` and JSON `title`, `message`,
//! `notification_id` (`?nid=`, else one per notification, so a retry replaces it).

use super::{NotifyUrl, Part, Sending, Service, at, json_post, needs};
use crate::notify::SendError;
use crate::notify::channel::{Outgoing, header};
use serde_json::json;

/// How long a message Home Assistant gets.
const TEXT_CHARS: usize = 16_000;

/// Home Assistant.
pub struct HomeAssistant;

impl Service for HomeAssistant {
    fn schemes(&self) -> &'static [&'static str] {
        &["hassio", "hassios"]
    }

    fn check(&self, url: &NotifyUrl) -> Result<(), String> {
        needs(!url.host.is_empty(), "a host")?;
        needs(
            !url.segments.is_empty(),
            "a long-lived access token (hassios://host/access_token)",
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
            return Err("no access token".into());
        };
        let n = &sending.delivery.notification;
        let id = url
            .param("nid")
            .map(str::to_string)
            .unwrap_or_else(|| format!("wachet-{}", n.id.as_deref().unwrap_or("test")));
        let message = &sending.message;
        let body = json!({
            "title": message.title,
            "message": message.markdown(TEXT_CHARS),
            "notification_id": id,
        });
        let target = at(
            &url.origin(),
            prefix,
            "/api/services/persistent_notification/create",
        )?;
        let mut request = json_post(target, &body, sending)?;
        header(&mut request, "authorization", &format!("Bearer {token}"))?;
        Ok(vec![Outgoing::Http(request)])
    }
}
