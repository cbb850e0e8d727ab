//! `slack://[botname@]TokenA/TokenB/TokenC[/#channel...]` (an incoming webhook,
//! `POST https://hooks.slack.com/services/A/B/C`) and `slack://xoxb-token/#channel[/...]` (a
//! bot, `POST https://slack.com/api/chat.postMessage` with `Authorization: Bearer`): `text`
//! (the fallback) and `blocks` (the title, the change in a code block cut to a section's 3,000
//! characters, the link). A bot's answer is 200 with `"ok": false` when it fails.

use super::{NotifyUrl, Part, Sending, Service, json_post, needs, sealed};
use crate::notify::SendError;
use crate::notify::channel::{Outgoing, Verdict, header, judge_api};
use serde_json::{Value, json};
use wachet::fetch::FetchedPage;

/// Slack's limit on a section's text.
const SECTION_CHARS: usize = 3000;

/// Slack.
pub struct Slack;

/// Whether the URL names a bot (its token is `xox...`, or sealed: only bot tokens are).
fn bot(url: &NotifyUrl) -> bool {
    url.host.starts_with("xox") || sealed(&url.host)
}

/// The channels a URL names after its tokens.
fn channels(url: &NotifyUrl) -> &[String] {
    match bot(url) {
        true => &url.segments,
        false => url.segments.get(2..).unwrap_or_default(),
    }
}

impl Service for Slack {
    fn schemes(&self) -> &'static [&'static str] {
        &["slack"]
    }

    fn based(&self) -> Option<&'static str> {
        Some("slack")
    }

    fn check(&self, url: &NotifyUrl) -> Result<(), String> {
        needs(!url.host.is_empty(), "a token")?;
        match bot(url) {
            true => needs(
                !url.segments.is_empty(),
                "a channel for the bot (slack://xoxb-token/#channel)",
            ),
            false => needs(
                url.segments.len() >= 2,
                "the webhook's three tokens (slack://TokenA/TokenB/TokenC)",
            ),
        }
    }

    fn secrets(&self, url: &NotifyUrl) -> Vec<Part> {
        match bot(url) {
            true => vec![Part::Host],
            false => vec![Part::Segment(1)],
        }
    }

    fn prepare(&self, sending: &Sending<'_>) -> Result<Vec<Outgoing>, SendError> {
        let url = &sending.url;
        let message = &sending.message;
        let code_room = SECTION_CHARS - 8;
        let code = crate::notify::channel::message::cut(
            &escape(&message.text.replace("```", "'''")),
            code_room,
            message.link.as_deref(),
        );
        let mut blocks = vec![
            json!({"type": "section", "text": {"type": "mrkdwn", "text": format!("*{}*", escape(&message.title))}}),
            json!({"type": "section", "text": {"type": "mrkdwn", "text": format!("```{code}```")}}),
        ];
        if let Some(link) = &message.link {
            blocks.push(json!({"type": "section", "text": {"type": "mrkdwn", "text": format!("<{link}|Whole change>")}}));
        }
        let base = |path: &str, default: &str| sending.context.bases.at("slack", default, path);
        let mut body = json!({"text": message.title, "blocks": blocks});
        let mut all = Vec::new();
        if bot(url) {
            let target = base("/api/chat.postMessage", "https://slack.com")?;
            for channel in channels(url) {
                body["channel"] = Value::from(channel.as_str());
                let mut request = json_post(target.clone(), &body, sending)?;
                header(
                    &mut request,
                    "authorization",
                    &format!("Bearer {}", url.host),
                )?;
                all.push(Outgoing::Http(request));
            }
        } else {
            let path = format!(
                "/services/{}/{}/{}",
                url.host, url.segments[0], url.segments[1]
            );
            let target = base(&path, "https://hooks.slack.com")?;
            if let Some(bot) = &url.user {
                body["username"] = bot.as_str().into();
            }
            let channels = channels(url);
            if channels.is_empty() {
                all.push(Outgoing::Http(json_post(target.clone(), &body, sending)?));
            }
            for channel in channels {
                body["channel"] = Value::from(channel.as_str());
                all.push(Outgoing::Http(json_post(target.clone(), &body, sending)?));
            }
        }
        Ok(all)
    }

    /// As a documented API, and a bot's `"ok": false` fails (but `ratelimited` waits).
    fn judge(&self, answer: &FetchedPage) -> Verdict {
        let verdict = judge_api(answer);
        if verdict != Verdict::Delivered {
            return verdict;
        }
        let Ok(said) = serde_json::from_slice::<Value>(&answer.body) else {
            return verdict;
        };
        match said.get("ok").and_then(Value::as_bool) {
            Some(false) => {
                let error = said["error"].as_str().unwrap_or("unknown error");
                let message = format!("Slack answered ok: false, {error}");
                match error {
                    "ratelimited" => Verdict::Retry {
                        after: None,
                        error: message,
                    },
                    _ => Verdict::Failed(message),
                }
            }
            _ => verdict,
        }
    }
}

/// Escapes what Slack's mrkdwn reads as markup.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
