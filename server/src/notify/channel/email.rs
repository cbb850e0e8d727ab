//! E-mail: the subject names the monitor and what fired, the body is the notification's HTML
//! content with a plain-text alternative (the same change, marked `[-removed-]`, `{+added+}`,
//! noise between `⟨` and `⟩`), sent through the service's SMTP server
//! ([`crate::notify::email::Mailer`]).

use super::message::{monitor_name, title};
use super::{Channel, Context, Outgoing};
use crate::notify::SendError;
use crate::notify::content::escape;
use crate::store::Delivery;
use wachet::model::{MessageFormat, MessagingServiceType};

/// An e-mail to the endpoint's address.
pub struct Email;

/// An e-mail as channels make it; the mailer adds the sender.
#[derive(Debug, Clone)]
pub struct MailParts {
    /// The recipient.
    pub to: String,
    /// The subject, one line.
    pub subject: String,
    /// The plain-text part.
    pub plain: String,
    /// The HTML part.
    pub html: String,
}

impl MailParts {
    /// The e-mail of `delivery` to `to`.
    pub fn of(delivery: &Delivery, to: &str) -> MailParts {
        let n = &delivery.notification;
        let name = monitor_name(delivery);
        let subject = title(delivery);
        // The plain text made with the HTML; notifications stored before it get the current
        // value whole.
        let plain = match &delivery.explanation {
            Some(explanation) if !explanation.text.is_empty() => explanation.text.clone(),
            _ => format!(
                "{name}\n{}\n{}\n\n{}{}",
                n.url.as_deref().unwrap_or(""),
                delivery.synthetic_expression,
                n.current.as_deref().unwrap_or(""),
                n.error
                    .as_deref()
                    .map(|e| format!("error: {e}"))
                    .unwrap_or_default(),
            ),
        };
        let mut parts = MailParts {
            to: to.to_string(),
            subject,
            plain,
            html: delivery.html.clone(),
        };
        // The endpoint's templates: the title is the subject; a body written in HTML is the
        // HTML part (its values escaped by the template), any other is the plain part and shown
        // preformatted in the HTML one.
        if let Some(rendered) = &delivery.rendered {
            if let Some(title) = &rendered.title {
                parts.subject = title.clone();
            }
            if let Some(body) = &rendered.body {
                match rendered.format {
                    Some(MessageFormat::Html) => parts.html = body.clone(),
                    _ => {
                        parts.plain = body.clone();
                        parts.html = format!("<pre>{}</pre>", escape(body));
                    }
                }
            }
        }
        parts
    }
}

impl Channel for Email {
    fn kind(&self) -> MessagingServiceType {
        MessagingServiceType::Email
    }

    fn validate(&self, value: &str) -> Result<(), String> {
        match is_email(value) {
            true => Ok(()),
            false => Err("must be an e-mail address".into()),
        }
    }

    fn format(&self, _: &str) -> MessageFormat {
        MessageFormat::Html
    }

    fn prepare(&self, delivery: &Delivery, context: &Context<'_>) -> Result<Outgoing, SendError> {
        if context.mailer.is_none() {
            return Err(SendError {
                message: "e-mail delivery is not configured on this server (--smtp-host)".into(),
                permanent: true,
            });
        }
        Ok(Outgoing::Mail(MailParts::of(delivery, &delivery.target)))
    }
}

/// A plausible e-mail address: one `@` with text on both sides, no white space or control
/// characters, at most 254 characters. Delivery tells the rest.
pub fn is_email(value: &str) -> bool {
    let Some((local, domain)) = value.split_once('@') else {
        return false;
    };
    !local.is_empty()
        && !domain.is_empty()
        && !domain.contains('@')
        && value.len() <= 254
        && !value.chars().any(|c| c.is_whitespace() || c.is_control())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn email_addresses() {
        assert!(is_email("a@b"));
        assert!(is_email("first.last+tag@example.com"));
        for bad in ["", "a", "@b", "a@", "a@b@c", "a b@c", "a@b\r\nBcc: x@y"] {
            assert!(!is_email(bad), "{bad}");
        }
    }
}
