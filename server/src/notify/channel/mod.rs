//! Channels: one module per kind of endpoint, each saying how its target is validated, what a
//! delivery becomes (an HTTP request or an e-mail) and how the answer is judged (delivered, try
//! again, failed for good). [`CHANNELS`] lists them; every list of offered kinds (API
//! validation, the web forms, the OpenAPI description) is derived from it, so a new channel is
//! one file and one line there. [`super::deliver`] only runs the loop and the retry policy.

mod discord;
mod email;
pub mod message;
mod ntfy;
mod slack;
mod teams;
mod telegram;
pub mod url;
mod webhook;

pub use email::{MailParts, is_email};
pub use message::Message;
pub use webhook::{Links, signature};

use super::SendError;
use crate::store::Delivery;
use async_trait::async_trait;
use std::time::Duration;
use wachet::fetch::{FetchError, FetchRequest, FetchedPage, Fetcher};
use wachet::model::{MessageFormat, MessagingServiceType};

/// Every channel this server delivers to, in the order the forms offer them.
pub static CHANNELS: &[&dyn Channel] = &[
    &webhook::Webhook,
    &email::Email,
    &slack::Slack,
    &discord::Discord,
    &teams::Teams,
    &telegram::Telegram,
    &ntfy::Ntfy,
    &url::NotificationUrl,
];

/// The channel of `kind`, if this server delivers to it.
pub fn of(kind: MessagingServiceType) -> Option<&'static dyn Channel> {
    CHANNELS.iter().copied().find(|c| c.kind() == kind)
}

/// The kinds this server delivers to, in the order the forms offer them.
pub fn offered() -> impl Iterator<Item = MessagingServiceType> {
    CHANNELS.iter().map(|c| c.kind())
}

/// The offered kinds as a sentence for descriptions: `Webhook (1), Email (0), ...`.
pub fn offered_list() -> String {
    offered()
        .map(|k| format!("{} ({})", k.name(), k.code()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Checks `value` as a target of `kind`: the message for the `type` field (a kind this server
/// does not deliver to) or the `value` field.
pub fn check(kind: MessagingServiceType, value: &str) -> Result<(), Refusal> {
    match of(kind) {
        None => Err(Refusal::Kind(format!(
            "{kind} is not supported by this server"
        ))),
        Some(channel) => channel.validate(value).map_err(Refusal::Value),
    }
}

/// Why an endpoint cannot be stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The kind is not delivered here (the `type` field).
    Kind(String),
    /// The target is not one (the `value` field).
    Value(String),
}

/// What a delivery becomes.
pub enum Outgoing {
    /// An HTTP request.
    Http(FetchRequest),
    /// An e-mail through the service's SMTP server (`--smtp-host`).
    Mail(MailParts),
    /// An e-mail through the SMTP server the endpoint names.
    MailVia(super::email::SmtpSettings, MailParts),
}

/// How a try ended, as a channel judges it; [`super::deliver`] turns it into the stored outcome
/// with its retry policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The endpoint took it.
    Delivered,
    /// Worth another try: after `after` when the endpoint said when (Retry-After), else by the
    /// retry policy.
    Retry {
        /// When the endpoint asked to be tried again.
        after: Option<Duration>,
        /// What went wrong.
        error: String,
    },
    /// No retry can change it (refused address, bad token, a message the endpoint will never
    /// take).
    Failed(String),
}

impl From<SendError> for Verdict {
    fn from(err: SendError) -> Self {
        match err.permanent {
            true => Verdict::Failed(err.message),
            false => Verdict::Retry {
                after: None,
                error: err.message,
            },
        }
    }
}

/// What channels send with: the engine's fetcher, the SMTP server, the links, the key that opens
/// sealed secrets and where host-less services are reached.
pub struct Context<'a> {
    /// Requests go through it, under the private-network policy of the checks.
    pub fetcher: &'a dyn Fetcher,
    /// The service's SMTP server, when it has one.
    pub mailer: Option<&'a super::email::Mailer>,
    /// Where links to a notification point.
    pub links: &'a Links,
    /// Opens the sealed parts of notification URLs.
    pub sealer: Option<&'a crate::secrets::Sealer>,
    /// Other addresses for services whose URL names no host (`--channel-base`).
    pub bases: &'a url::Bases,
    /// Which addresses connections that do not go through the fetcher (SMTP servers a
    /// notification URL names) may reach: the engine's policy.
    pub network: &'a wachet::fetch::NetworkPolicy,
}

impl Context<'_> {
    /// Sends `outgoing` and judges the answer with `judge` (an e-mail taken is delivered).
    pub async fn transmit(
        &self,
        outgoing: Outgoing,
        judge: impl FnOnce(&FetchedPage) -> Verdict,
    ) -> Verdict {
        match outgoing {
            Outgoing::Http(request) => match self.fetch(&request).await {
                Ok(answer) => judge(&answer),
                Err(err) => err.into(),
            },
            Outgoing::Mail(parts) => match self.mailer {
                Some(mailer) => match mailer.send(&parts).await {
                    Ok(()) => Verdict::Delivered,
                    Err(err) => err.into(),
                },
                None => Verdict::Failed("no SMTP server is configured (--smtp-host)".into()),
            },
            Outgoing::MailVia(settings, parts) => {
                let sent = match super::email::Mailer::new(&settings) {
                    Ok(mailer) => mailer.send(&parts).await,
                    Err(err) => Err(SendError {
                        message: err,
                        permanent: true,
                    }),
                };
                match sent {
                    Ok(()) => Verdict::Delivered,
                    Err(err) => err.into(),
                }
            }
        }
    }

    /// Fetches `request`; an address the private-network policy refuses is a permanent error.
    pub async fn fetch(&self, request: &FetchRequest) -> Result<FetchedPage, SendError> {
        self.fetcher.fetch(request).await.map_err(|err| SendError {
            permanent: matches!(err, FetchError::Refused(_)),
            message: err.to_string(),
        })
    }
}

/// A kind of endpoint.
#[async_trait]
pub trait Channel: Send + Sync {
    /// The kind it delivers.
    fn kind(&self) -> MessagingServiceType;

    /// Checks a target given for this kind: the message for the `value` field when it cannot be
    /// one.
    fn validate(&self, value: &str) -> Result<(), String>;

    /// The format a message to `target` is written in by default: the format of the
    /// `change.diff` token and of an endpoint's templates that name none.
    fn format(&self, _target: &str) -> MessageFormat {
        MessageFormat::Text
    }

    /// What `delivery` becomes; an error that no retry can change is permanent.
    fn prepare(&self, delivery: &Delivery, context: &Context<'_>) -> Result<Outgoing, SendError>;

    /// How an HTTP answer ends the try; by default [`judge`].
    fn judge(&self, answer: &FetchedPage) -> Verdict {
        judge(answer)
    }

    /// Sends `delivery`: [`Channel::prepare`], then [`Context::transmit`] judged by
    /// [`Channel::judge`]. A channel that needs more than one request overrides it.
    async fn send(&self, delivery: &Delivery, context: &Context<'_>) -> Verdict {
        match self.prepare(delivery, context) {
            Ok(outgoing) => context.transmit(outgoing, |a| self.judge(a)).await,
            Err(err) => err.into(),
        }
    }
}

/// The judgement of webhooks and chat hooks: a 2xx is delivered; anything else is tried again,
/// after the answer's Retry-After when it gives one.
pub fn judge(answer: &FetchedPage) -> Verdict {
    if (200..300).contains(&answer.status) {
        return Verdict::Delivered;
    }
    Verdict::Retry {
        after: retry_after(answer),
        error: format!("the endpoint answered HTTP {}", answer.status),
    }
}

/// The judgement of a service's documented API: a 2xx is delivered; 408, 429 and 5xx are tried
/// again (after Retry-After when given); any other answer (a bad token, a message too large, an
/// unknown chat) fails for good, with what the service said.
pub fn judge_api(answer: &FetchedPage) -> Verdict {
    let status = answer.status;
    if (200..300).contains(&status) {
        return Verdict::Delivered;
    }
    let said: String = answer.text().chars().take(300).collect();
    let error = format!("the service answered HTTP {status}: {}", said.trim());
    if status == 408 || status == 429 || status >= 500 {
        Verdict::Retry {
            after: retry_after(answer),
            error,
        }
    } else {
        Verdict::Failed(error)
    }
}

/// The Retry-After of an answer in seconds, when it gives one (an HTTP date is left to the
/// retry policy).
fn retry_after(answer: &FetchedPage) -> Option<Duration> {
    answer
        .headers
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs)
}

/// A JSON POST of `body` to `url` with the delivery's id (`X-Wachet-Delivery`).
pub fn post_json(
    url: ::url::Url,
    body: &serde_json::Value,
    delivery: &Delivery,
) -> Result<FetchRequest, SendError> {
    let body = serde_json::to_string(body).map_err(|e| SendError::from(e.to_string()))?;
    post(url, body, "application/json", delivery)
}

/// A POST of `body` (of media type `content_type`) to `url` with the delivery's id.
pub fn post(
    url: ::url::Url,
    body: String,
    content_type: &str,
    delivery: &Delivery,
) -> Result<FetchRequest, SendError> {
    let mut request = FetchRequest::get(url);
    request.method = wachet::fetch::Method::POST;
    header(&mut request, "content-type", content_type)?;
    header(&mut request, "x-wachet-delivery", &delivery.id)?;
    request.body = Some(body);
    Ok(request)
}

/// Sets a header of `request`; a value that cannot be one is a permanent error.
pub fn header(request: &mut FetchRequest, name: &str, value: &str) -> Result<(), SendError> {
    let name: axum::http::HeaderName = name.parse().map_err(|_| SendError {
        message: format!("bad header name {name:?}"),
        permanent: true,
    })?;
    let value = value.parse().map_err(|_| SendError {
        message: format!("bad value for header {name}"),
        permanent: true,
    })?;
    request.headers.insert(name, value);
    Ok(())
}

/// A target that must be an http(s) URL.
fn http_url(value: &str) -> Result<(), String> {
    wachet::validate::parse_url(value)
        .map(drop)
        .map_err(|err| format!("must be an http(s) URL: {err}"))
}
