//! `discord://[botname@]webhook_id/webhook_token`: Discord's execute-webhook
//! (`POST /api/webhooks/{id}/{token}`), an embed with the title (256 characters at most), the
//! change as its description (4,096 at most) and the link to the whole change; `username` when
//! the URL names a bot.

use super::{NotifyUrl, Part, Sending, Service, json_post, needs};
use crate::notify::SendError;
use crate::notify::channel::{Outgoing, Verdict, judge_api};
use serde_json::json;
use std::time::Duration;
use wachet::fetch::FetchedPage;

/// Discord's limits: an embed's title and description.
const TITLE_CHARS: usize = 256;
const DESCRIPTION_CHARS: usize = 4096;

/// Discord.
pub struct Discord;

impl Service for Discord {
    fn schemes(&self) -> &'static [&'static str] {
        &["discord"]
    }

    fn based(&self) -> Option<&'static str> {
        Some("discord")
    }

    fn check(&self, url: &NotifyUrl) -> Result<(), String> {
        needs(
            !url.host.is_empty() && url.host.chars().all(|c| c.is_ascii_digit()),
            "a numeric webhook id (discord://webhook_id/webhook_token)",
        )?;
        needs(
            !url.segments.is_empty(),
            "a webhook token (discord://webhook_id/webhook_token)",
        )
    }

    fn secrets(&self, _: &NotifyUrl) -> Vec<Part> {
        vec![Part::Segment(0)]
    }

    fn prepare(&self, sending: &Sending<'_>) -> Result<Vec<Outgoing>, SendError> {
        let url = &sending.url;
        let target = sending.context.bases.at(
            "discord",
            "https://discord.com",
            &format!("/api/webhooks/{}/{}", url.host, url.segments[0]),
        )?;
        let message = &sending.message;
        let title: String = message.title.chars().take(TITLE_CHARS).collect();
        let mut embed = json!({
            "title": title,
            "description": message.markdown(DESCRIPTION_CHARS),
        });
        if let Some(link) = &message.link {
            embed["url"] = link.as_str().into();
        }
        let mut body = json!({"embeds": [embed]});
        if let Some(bot) = &url.user {
            body["username"] = bot.as_str().into();
        }
        Ok(vec![Outgoing::Http(json_post(target, &body, sending)?)])
    }

    /// As a documented API; a 429 waits the `retry_after` (seconds) Discord gives.
    fn judge(&self, answer: &FetchedPage) -> Verdict {
        match judge_api(answer) {
            Verdict::Retry { after: None, error } if answer.status == 429 => {
                let after = serde_json::from_slice::<serde_json::Value>(&answer.body)
                    .ok()
                    .and_then(|v| v["retry_after"].as_f64())
                    .map(|s| Duration::from_secs_f64(s.clamp(0.0, 3600.0)));
                Verdict::Retry { after, error }
            }
            other => other,
        }
    }
}
