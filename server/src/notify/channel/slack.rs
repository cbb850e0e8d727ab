//! Slack incoming webhooks (the endpoint's value is the hook's URL): `{"text": ...}`, one line
//! naming the monitor, what fired and the page. A `slack://` notification URL
//! ([`super::url`]) sends richer blocks.

use super::{Channel, Context, Message, Outgoing, http_url, post_json};
use crate::notify::SendError;
use crate::store::Delivery;
use wachet::model::MessagingServiceType;

/// A Slack incoming webhook.
pub struct Slack;

impl Channel for Slack {
    fn kind(&self) -> MessagingServiceType {
        MessagingServiceType::Slack
    }

    fn format(&self, _: &str) -> wachet::model::MessageFormat {
        wachet::model::MessageFormat::Markdown
    }

    fn validate(&self, value: &str) -> Result<(), String> {
        http_url(value)
    }

    fn prepare(&self, delivery: &Delivery, _: &Context<'_>) -> Result<Outgoing, SendError> {
        let url = wachet::validate::parse_url(&delivery.target)?;
        let body = serde_json::json!({"text": Message::line(delivery)});
        Ok(Outgoing::Http(post_json(url, &body, delivery)?))
    }
}
