//! Discord webhooks (the endpoint's value is the webhook's URL): `{"content": ...}`, one line
//! naming the monitor, what fired and the page. A `discord://` notification URL
//! ([`super::url`]) sends an embed with the change.

use super::{Channel, Context, Message, Outgoing, http_url, post_json};
use crate::notify::SendError;
use crate::store::Delivery;
use wachet::model::MessagingServiceType;

/// A Discord webhook.
pub struct Discord;

impl Channel for Discord {
    fn kind(&self) -> MessagingServiceType {
        MessagingServiceType::Discord
    }

    fn format(&self, _: &str) -> wachet::model::MessageFormat {
        wachet::model::MessageFormat::Markdown
    }

    fn validate(&self, value: &str) -> Result<(), String> {
        http_url(value)
    }

    fn prepare(&self, delivery: &Delivery, _: &Context<'_>) -> Result<Outgoing, SendError> {
        let url = wachet::validate::parse_url(&delivery.target)?;
        let body = serde_json::json!({"content": Message::line(delivery)});
        Ok(Outgoing::Http(post_json(url, &body, delivery)?))
    }
}
