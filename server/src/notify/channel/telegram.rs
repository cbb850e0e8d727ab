//! Telegram, as its own kind: the endpoint's value is a `tgram://` notification URL, sent as
//! [`super::url`] sends it (the Bot API's `sendMessage`).

use super::url::NotificationUrl;
use super::{Channel, Context, Outgoing, Verdict};
use crate::notify::SendError;
use crate::store::Delivery;
use async_trait::async_trait;
use wachet::model::MessagingServiceType;

/// A Telegram chat, named by a `tgram://` URL.
pub struct Telegram;

#[async_trait]
impl Channel for Telegram {
    fn kind(&self) -> MessagingServiceType {
        MessagingServiceType::Telegram
    }

    fn format(&self, _: &str) -> wachet::model::MessageFormat {
        wachet::model::MessageFormat::Html
    }

    fn validate(&self, value: &str) -> Result<(), String> {
        if !value
            .trim_start()
            .to_ascii_lowercase()
            .starts_with("tgram://")
        {
            return Err("must be a tgram:// URL (tgram://bottoken/chat_id)".into());
        }
        NotificationUrl.validate(value)
    }

    fn prepare(&self, delivery: &Delivery, context: &Context<'_>) -> Result<Outgoing, SendError> {
        NotificationUrl.prepare(delivery, context)
    }

    async fn send(&self, delivery: &Delivery, context: &Context<'_>) -> Verdict {
        NotificationUrl.send(delivery, context).await
    }
}
