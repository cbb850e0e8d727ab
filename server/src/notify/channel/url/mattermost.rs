//! `mmost(s)://[botname@]host[:port][/path]/token`: a Mattermost incoming webhook,
//! `POST /hooks/{token}` with JSON `text` (Markdown, cut to 16,000 characters), `username`
//! (the bot name) and `channel` (`?channel=`, several comma-separated: one post each).

use super::{NotifyUrl, Part, Sending, Service, at, json_post, needs};
use crate::notify::SendError;
use crate::notify::channel::Outgoing;
use serde_json::json;

/// Mattermost's limit on a post (16,383 characters).
const TEXT_CHARS: usize = 16_000;

/// Mattermost.
pub struct Mattermost;

impl Service for Mattermost {
    fn schemes(&self) -> &'static [&'static str] {
        &["mmost", "mmosts"]
    }

    fn check(&self, url: &NotifyUrl) -> Result<(), String> {
        needs(!url.host.is_empty(), "a host")?;
        needs(
            !url.segments.is_empty(),
            "the webhook's token (mmosts://host/token)",
        )
    }

    fn secrets(&self, url: &NotifyUrl) -> Vec<Part> {
        vec![Part::Segment(url.segments.len().saturating_sub(1))]
    }

    fn prepare(&self, sending: &Sending<'_>) -> Result<Vec<Outgoing>, SendError> {
        let url = &sending.url;
        let Some((token, prefix)) = url.segments.split_last() else {
            return Err("no token".into());
        };
        let target = at(&url.origin(), prefix, &format!("/hooks/{token}"))?;
        let mut body = json!({"text": sending.message.markdown(TEXT_CHARS)});
        if let Some(bot) = &url.user {
            body["username"] = bot.as_str().into();
        }
        let channels: Vec<&str> = url
            .param("channel")
            .or(url.param("channels"))
            .map(|c| {
                c.split(',')
                    .map(|c| c.trim().trim_start_matches('#'))
                    .filter(|c| !c.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        if channels.is_empty() {
            return Ok(vec![Outgoing::Http(json_post(target, &body, sending)?)]);
        }
        let mut all = Vec::new();
        for channel in channels {
            body["channel"] = channel.into();
            all.push(Outgoing::Http(json_post(target.clone(), &body, sending)?));
        }
        Ok(all)
    }
}
