//! `gchat://workspace/key/token[/thread_key]`: a Google Chat incoming webhook,
//! `POST https://chat.googleapis.com/v1/spaces/{workspace}/messages?key=&token=` with JSON
//! `text` (4,096 characters at most, `*bold*` and code blocks), in a thread when a thread key
//! is given.

use super::{NotifyUrl, Part, Sending, Service, json_post, needs};
use crate::notify::SendError;
use crate::notify::channel::Outgoing;
use serde_json::json;

/// Google Chat's limit on a message's text.
const TEXT_CHARS: usize = 4096;

/// Google Chat.
pub struct GoogleChat;

impl Service for GoogleChat {
    fn schemes(&self) -> &'static [&'static str] {
        &["gchat"]
    }

    fn based(&self) -> Option<&'static str> {
        Some("gchat")
    }

    fn check(&self, url: &NotifyUrl) -> Result<(), String> {
        needs(
            !url.host.is_empty() && url.segments.len() >= 2,
            "the webhook's workspace, key and token (gchat://workspace/key/token)",
        )
    }

    fn secrets(&self, _: &NotifyUrl) -> Vec<Part> {
        vec![Part::Segment(0), Part::Segment(1)]
    }

    fn prepare(&self, sending: &Sending<'_>) -> Result<Vec<Outgoing>, SendError> {
        let url = &sending.url;
        let mut target = sending.context.bases.at(
            "gchat",
            "https://chat.googleapis.com",
            &format!("/v1/spaces/{}/messages", url.host),
        )?;
        target
            .query_pairs_mut()
            .append_pair("key", &url.segments[0])
            .append_pair("token", &url.segments[1]);
        let mut body = json!({"text": sending.message.markdown(TEXT_CHARS).replace("**", "*")});
        if let Some(thread) = url.segments.get(2) {
            target
                .query_pairs_mut()
                .append_pair("messageReplyOption", "REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD");
            body["thread"] = json!({"threadKey": thread});
        }
        Ok(vec![Outgoing::Http(json_post(target, &body, sending)?)])
    }
}
