//! ntfy topics (the endpoint's value is the topic's URL): the line naming the monitor, what
//! fired and the page as the plain-text body, the monitor's name as the `Title` header. An
//! `ntfy://` notification URL ([`super::url`]) publishes JSON with the change.

use super::{Channel, Context, Message, Outgoing, header, http_url, post};
use crate::notify::SendError;
use crate::store::Delivery;
use wachet::model::MessagingServiceType;

/// An ntfy topic URL.
pub struct Ntfy;

impl Channel for Ntfy {
    fn kind(&self) -> MessagingServiceType {
        MessagingServiceType::Ntfy
    }

    fn validate(&self, value: &str) -> Result<(), String> {
        http_url(value)
    }

    fn prepare(&self, delivery: &Delivery, _: &Context<'_>) -> Result<Outgoing, SendError> {
        let url = wachet::validate::parse_url(&delivery.target)?;
        let line = Message::line(delivery);
        let mut request = post(url, line, "text/plain; charset=utf-8", delivery)?;
        let title = delivery
            .notification
            .task_name
            .as_deref()
            .unwrap_or("wachet");
        header(&mut request, "title", &title.replace(['\r', '\n'], " "))?;
        Ok(Outgoing::Http(request))
    }
}
