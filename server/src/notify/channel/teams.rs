//! Microsoft Teams through a Power Automate workflow ("Post to a channel when a webhook request
//! is received"; the endpoint's value is the workflow's URL): a message whose `attachments`
//! hold one Adaptive Card with the title, the change and a button to the whole change, the
//! shape Teams' workflows read since its incoming webhooks were retired.

use super::{Channel, Context, Message, Outgoing, http_url, post_json};
use crate::notify::SendError;
use crate::store::Delivery;
use serde_json::{Value, json};
use wachet::model::MessagingServiceType;

/// How much text a card carries (Teams takes messages of about 28 KB).
const CARD_TEXT_CHARS: usize = 20_000;

/// A Teams workflow.
pub struct Teams;

impl Channel for Teams {
    fn kind(&self) -> MessagingServiceType {
        MessagingServiceType::Teams
    }

    fn format(&self, _: &str) -> wachet::model::MessageFormat {
        wachet::model::MessageFormat::Markdown
    }

    fn validate(&self, value: &str) -> Result<(), String> {
        http_url(value)
    }

    fn prepare(&self, delivery: &Delivery, context: &Context<'_>) -> Result<Outgoing, SendError> {
        let url = wachet::validate::parse_url(&delivery.target)?;
        let body = adaptive_card(&Message::of(delivery, context.links));
        Ok(Outgoing::Http(post_json(url, &body, delivery)?))
    }
}

/// A message carrying `message` as an Adaptive Card (schema 1.4) in `attachments`.
pub(super) fn adaptive_card(message: &Message) -> Value {
    let mut body = vec![
        json!({"type": "TextBlock", "text": message.title, "weight": "Bolder", "size": "Medium",
               "wrap": true}),
        json!({"type": "TextBlock", "text": message.text_within(CARD_TEXT_CHARS), "wrap": true,
               "fontType": "Monospace"}),
    ];
    if let Some(page) = &message.page {
        body.push(json!({"type": "TextBlock", "text": page, "wrap": true, "isSubtle": true}));
    }
    let mut content = json!({
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "type": "AdaptiveCard",
        "version": "1.4",
        "body": body,
    });
    if let Some(link) = &message.link {
        content["actions"] =
            json!([{"type": "Action.OpenUrl", "title": "Whole change", "url": link}]);
    }
    json!({
        "type": "message",
        "attachments": [{
            "contentType": "application/vnd.microsoft.card.adaptive",
            "contentUrl": null,
            "content": content,
        }],
    })
}
