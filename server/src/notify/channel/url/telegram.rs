//! `tgram://bottoken/chat_id[/chat_id...]`: the Telegram Bot API's `sendMessage`
//! (`POST /bot<token>/sendMessage`, JSON `chat_id`, `text` of at most 4,096 characters,
//! `parse_mode`). A chat is an id (`-100...` for groups and channels, `chat:thread` for a
//! forum topic) or `@channelname`. Options: `format=html` (default), `markdown` (MarkdownV2)
//! or `text`; `silent=yes` (`disable_notification`); `preview=no`
//! (`link_preview_options.is_disabled`).

use super::{NotifyUrl, Part, Sending, Service, json_post, needs, sealed};
use crate::notify::SendError;
use crate::notify::channel::{Message, Outgoing, Verdict, judge_api};
use serde_json::json;
use std::time::Duration;
use wachet::fetch::FetchedPage;

/// The Bot API's limit on a message's text.
const TEXT_CHARS: usize = 4096;

/// Telegram.
pub struct Telegram;

impl Service for Telegram {
    fn schemes(&self) -> &'static [&'static str] {
        &["tgram"]
    }

    fn based(&self) -> Option<&'static str> {
        Some("tgram")
    }

    fn check(&self, url: &NotifyUrl) -> Result<(), String> {
        let token = &url.host;
        if !sealed(token) {
            let well_formed = token.split_once(':').is_some_and(|(bot, secret)| {
                !bot.is_empty()
                    && bot.chars().all(|c| c.is_ascii_digit())
                    && !secret.is_empty()
                    && secret
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            });
            if !well_formed {
                return Err(
                    "the bot token must be <digits>:<letters> as @BotFather gives it \
                     (tgram://123456789:AAE.../chat_id)"
                        .into(),
                );
            }
        }
        needs(
            !url.segments.is_empty(),
            "a chat id (tgram://bottoken/chat_id)",
        )?;
        for chat in &url.segments {
            let (id, thread) = chat.split_once(':').unwrap_or((chat, "0"));
            let numeric = id.strip_prefix('-').unwrap_or(id);
            let valid = (id.starts_with('@') && id.len() > 1)
                || (!numeric.is_empty() && numeric.chars().all(|c| c.is_ascii_digit()));
            if !valid || !thread.chars().all(|c| c.is_ascii_digit()) {
                return Err(format!(
                    "{chat} is not a chat (a numeric id, -100... or @channel)"
                ));
            }
        }
        if let Some(format) = url.param("format")
            && !matches!(format, "html" | "markdown" | "text")
        {
            return Err(format!("format {format} is not html, markdown or text"));
        }
        Ok(())
    }

    fn secrets(&self, _: &NotifyUrl) -> Vec<Part> {
        vec![Part::Host]
    }

    fn prepare(&self, sending: &Sending<'_>) -> Result<Vec<Outgoing>, SendError> {
        let url = &sending.url;
        let target = sending.context.bases.at(
            "tgram",
            "https://api.telegram.org",
            &format!("/bot{}/sendMessage", url.host),
        )?;
        let (text, mode) = match url.param("format").unwrap_or("html") {
            "markdown" => (markdown_v2(&sending.message), Some("MarkdownV2")),
            "text" => (sending.message.plain(TEXT_CHARS), None),
            _ => (sending.message.html(TEXT_CHARS), Some("HTML")),
        };
        let mut all = Vec::new();
        for chat in &url.segments {
            let (id, thread) = match chat.split_once(':') {
                Some((id, thread)) => (id, thread.parse::<i64>().ok()),
                None => (chat.as_str(), None),
            };
            let mut body = json!({
                "chat_id": id.parse::<i64>().map(serde_json::Value::from).unwrap_or_else(|_| id.into()),
                "text": text,
                "disable_notification": url.flag("silent", false),
                "link_preview_options": {"is_disabled": !url.flag("preview", false)},
            });
            if let Some(mode) = mode {
                body["parse_mode"] = mode.into();
            }
            if let Some(thread) = thread {
                body["message_thread_id"] = thread.into();
            }
            all.push(Outgoing::Http(json_post(target.clone(), &body, sending)?));
        }
        Ok(all)
    }

    /// As a documented API; a 429 waits the `parameters.retry_after` the Bot API gives.
    fn judge(&self, answer: &FetchedPage) -> Verdict {
        match judge_api(answer) {
            Verdict::Retry { after: None, error } if answer.status == 429 => {
                let after = serde_json::from_slice::<serde_json::Value>(&answer.body)
                    .ok()
                    .and_then(|v| v["parameters"]["retry_after"].as_u64())
                    .map(Duration::from_secs);
                Verdict::Retry { after, error }
            }
            other => other,
        }
    }
}

/// MarkdownV2: the title in bold, the text in a code block, the link, each escaped as the Bot
/// API requires, within the limit.
fn markdown_v2(message: &Message) -> String {
    let escape = |text: &str, set: &str| {
        let mut out = String::with_capacity(text.len());
        for c in text.chars() {
            if set.contains(c) {
                out.push('\\');
            }
            out.push(c);
        }
        out
    };
    const OUTSIDE: &str = "_*[]()~`>#+-=|{}.!\\";
    let head = format!("*{}*\n", escape(&message.title, OUTSIDE));
    let tail = message
        .link
        .as_deref()
        .map(|l| format!("\n[Whole change]({})", escape(l, ")\\")))
        .unwrap_or_default();
    let room = TEXT_CHARS.saturating_sub(head.chars().count() + tail.chars().count() + 8);
    // Escaping may double the text: cut it to half the room first, then to the room.
    let text = super::super::message::cut(&message.text, room / 2, None);
    let code: String = escape(&text, "`\\").chars().take(room).collect();
    let code = code.trim_end_matches('\\');
    format!("{head}```\n{code}\n```{tail}")
}
