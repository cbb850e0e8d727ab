//! Delivery: sends the outbox's pending deliveries to their endpoints through their channels
//! ([`super::channel`], which say what each kind sends and how its answer is judged) and stores
//! how each ended. A delivery the channel calls delivered is done; one worth another try is
//! tried again after the time the endpoint asked for (Retry-After) or after 30 s, doubling,
//! 8 tries in all, then failed; what no retry can change (an address the private-network policy
//! refuses, a recipient the SMTP server rejects for good, a token the service refuses) fails at
//! once.
//!
//! The deliverer has [`DeliverySettings::in_flight`] slots, and every delivery runs in one of
//! them, in its own task, under a time limit ([`DeliverySettings::attempt_timeout`]). A slot is
//! held from the claim to the end of the try, waits included (the engine's per-host limits, a
//! receiver that never answers, redirects), so the claim itself shares them out: it leaves at
//! most [`DeliverySettings::per_host`] deliveries in flight to one receiving host (host and
//! port, as the engine's per-host limits count; one endpoint where the target names no host)
//! and skips the hosts at that cap for the due deliveries of others. Endpoints that hang or
//! redirect in a loop then hold a few slots each until their time limit, and the others'
//! deliveries go on in the rest; nothing is dropped, a skipped delivery is only taken later.
//!
//! The same loop mails the confirmation codes of e-mail addresses (an address other than the
//! account's own gets notifications only once confirmed; the outbox fails its deliveries until
//! then), retried alike; and the store releases at most so many first tries per user and hour,
//! holding the rest pending.

use super::SendError;
use super::channel::{self, Context, Verdict};
pub use super::channel::{Links, signature};
use super::email::{Mailer, SmtpSettings};
use super::template;
use crate::store::{Delivery, DeliveryOutcome, OutboxStore, now_millis};
use crate::worker::Worker;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Semaphore, watch};
use wachet::fetch::{Fetcher, NetworkPolicy};

/// Longest wait an endpoint's Retry-After is followed for.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(6 * 3600);

/// How often pending deliveries are looked for.
const POLL: Duration = Duration::from_millis(250);

/// Settings of delivery.
#[derive(Debug, Clone)]
pub struct DeliverySettings {
    /// Wait before the second try; it doubles for each try after.
    pub first_retry: Duration,
    /// Tries in all before a delivery fails.
    pub tries: u32,
    /// Deliveries in flight at once.
    pub in_flight: usize,
    /// Deliveries in flight at once to one receiving host (or one endpoint where the target
    /// names no host), at most `in_flight`; 0: no cap but `in_flight`. `wachet serve` sets the
    /// engine's per-host concurrency, so a delivery never holds a slot waiting for one of the
    /// engine's host slots that its own host's other deliveries hold.
    pub per_host: usize,
    /// How long one try may take (connecting, redirects, the answer) before it counts as
    /// failed and is retried.
    pub attempt_timeout: Duration,
    /// The SMTP server for e-mail endpoints; without one they fail at once.
    pub smtp: Option<SmtpSettings>,
    /// Where the links in webhook payloads point (set by [`crate::service::start`]).
    pub links: Links,
    /// Other base addresses of services whose notification URLs name no host
    /// (`--channel-base`).
    pub bases: channel::url::Bases,
    /// Opens the sealed parts of notification URLs (set by [`crate::service::start`] with the
    /// store's key); without it those deliveries fail.
    pub sealer: Option<Arc<crate::secrets::Sealer>>,
    /// The engine's private-network policy, for connections that do not go through its
    /// fetcher (set by [`crate::service::start`]).
    pub network: Arc<NetworkPolicy>,
}

impl Default for DeliverySettings {
    fn default() -> Self {
        DeliverySettings {
            first_retry: Duration::from_secs(30),
            tries: 8,
            in_flight: 16,
            per_host: 4,
            attempt_timeout: Duration::from_secs(60),
            smtp: None,
            links: Links::default(),
            bases: channel::url::Bases::default(),
            sealer: None,
            network: Arc::new(NetworkPolicy::public_only()),
        }
    }
}

/// Delivers until `stop` turns true (or its sender is gone), then returns once the deliveries
/// in flight have ended and stored how; a caller that cannot wait that long drops the future,
/// and the deliveries still running are left to their lease. Each claimed delivery is held by
/// `worker`, whose beats renew its lease while it is sent; one another worker took over
/// meanwhile (this process was paused past its lease) records nothing.
pub async fn run(
    store: Arc<dyn OutboxStore>,
    fetcher: Arc<dyn Fetcher>,
    settings: DeliverySettings,
    worker: Arc<Worker>,
    mut stop: watch::Receiver<bool>,
) {
    let slots = Arc::new(Semaphore::new(settings.in_flight.max(1)));
    let per_host = match settings.per_host {
        0 => settings.in_flight.max(1),
        n => n.min(settings.in_flight.max(1)),
    };
    let per_host = u32::try_from(per_host).unwrap_or(u32::MAX);
    let mailer = match settings.smtp.as_ref().map(Mailer::new).transpose() {
        Ok(mailer) => mailer.map(Arc::new),
        Err(err) => {
            tracing::error!(%err, "e-mail cannot be sent");
            None
        }
    };
    loop {
        let free = slots.available_permits();
        if free > 0 {
            let now = now_millis();
            let until = now + worker.lease().as_millis() as i64;
            match store
                .claim_deliveries(now, until, free as u32, per_host)
                .await
            {
                Ok(due) => {
                    for delivery in due {
                        let Ok(slot) = slots.clone().try_acquire_owned() else {
                            break;
                        };
                        let (store, fetcher, settings, mailer) = (
                            store.clone(),
                            fetcher.clone(),
                            settings.clone(),
                            mailer.clone(),
                        );
                        let holding = worker.hold_delivery(&delivery.id, delivery.token);
                        tokio::spawn(async move {
                            let outcome =
                                attempt(fetcher.as_ref(), mailer.as_deref(), &delivery, &settings)
                                    .await;
                            match store
                                .finish_delivery(&delivery.id, delivery.token, &outcome)
                                .await
                            {
                                Ok(true) => {}
                                Ok(false) => {
                                    tracing::warn!(delivery = %delivery.id, "the delivery outlived its lease and another worker took it; its outcome not stored")
                                }
                                Err(err) => {
                                    tracing::error!(%err, delivery = %delivery.id, "cannot store a delivery")
                                }
                            }
                            drop(holding);
                            drop(slot);
                        });
                    }
                }
                Err(err) => tracing::error!(%err, "cannot claim deliveries"),
            }
        }
        if let Some(mailer) = &mailer {
            confirmations(&store, mailer, &slots, &settings, &worker).await;
        }
        tokio::select! {
            _ = tokio::time::sleep(POLL) => {}
            _ = stop.wait_for(|stop| *stop) => break,
        }
    }
    let all = u32::try_from(settings.in_flight.max(1)).unwrap_or(u32::MAX);
    let _ = slots.acquire_many(all).await;
}

/// Sends the confirmation messages that are due, each in its own task and slot as deliveries
/// are, retried as deliveries are.
async fn confirmations(
    store: &Arc<dyn OutboxStore>,
    mailer: &Arc<Mailer>,
    slots: &Arc<Semaphore>,
    settings: &DeliverySettings,
    worker: &Arc<Worker>,
) {
    let free = slots.available_permits();
    if free == 0 {
        return;
    }
    let now = now_millis();
    let until = now + worker.lease().as_millis() as i64;
    let due = match store
        .claim_confirmation_mails(now, until, free as u32)
        .await
    {
        Ok(due) => due,
        Err(err) => {
            tracing::error!(%err, "cannot claim confirmation messages");
            return;
        }
    };
    for mail in due {
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            break;
        };
        let (store, mailer, settings) = (store.clone(), mailer.clone(), settings.clone());
        let holding = worker.hold_mail(&mail.claim());
        tokio::spawn(async move {
            let sent = match tokio::time::timeout(
                settings.attempt_timeout,
                mailer.send_confirmation(&mail),
            )
            .await
            {
                Ok(sent) => sent,
                Err(_) => Err(SendError::from(format!(
                    "no answer within {} s",
                    settings.attempt_timeout.as_secs_f64()
                ))),
            };
            let verdict = match sent {
                Ok(()) => Verdict::Delivered,
                Err(err) => err.into(),
            };
            let outcome = outcome(verdict, mail.attempts, &settings);
            if let Err(err) = store.finish_confirmation_mail(&mail, &outcome).await {
                tracing::error!(%err, "cannot store a confirmation message");
            }
            drop(holding);
            drop(slot);
        });
    }
}

/// One try of one delivery, through its kind's channel.
async fn attempt(
    fetcher: &dyn Fetcher,
    mailer: Option<&Mailer>,
    delivery: &Delivery,
    settings: &DeliverySettings,
) -> DeliveryOutcome {
    let context = Context {
        fetcher,
        mailer,
        links: &settings.links,
        sealer: settings.sealer.as_deref(),
        bases: &settings.bases,
        network: &settings.network,
    };
    let sending = async {
        match channel::of(delivery.kind) {
            Some(channel) => {
                let templated = templated(channel, delivery, &settings.links);
                channel
                    .send(templated.as_ref().unwrap_or(delivery), &context)
                    .await
            }
            None => Verdict::Failed(format!("{} is not delivered by this server", delivery.kind)),
        }
    };
    let verdict = match tokio::time::timeout(settings.attempt_timeout, sending).await {
        Ok(verdict) => verdict,
        Err(_) => Verdict::Retry {
            after: None,
            error: format!(
                "no answer within {} s",
                settings.attempt_timeout.as_secs_f64()
            ),
        },
    };
    outcome(verdict, delivery.attempts, settings)
}

/// `delivery` with what its endpoint's templates make of it, when it has templates. The
/// templates were checked when the endpoint was saved; one that still fails here (a value far
/// larger than the sample's) leaves the channel's own message, logged, and never fails the
/// delivery.
fn templated(
    channel: &dyn channel::Channel,
    delivery: &Delivery,
    links: &channel::Links,
) -> Option<Delivery> {
    if delivery.digest_total > 1 {
        return Some(digest(channel, delivery, links));
    }
    let template = delivery.template.as_ref()?;
    let facts = delivery
        .explanation
        .as_ref()
        .and_then(|e| e.facts.clone())
        .unwrap_or_default();
    let subject = template::subject(delivery, links, &facts);
    match template::render(template, channel.format(&delivery.target), &subject) {
        Ok(rendered) => Some(Delivery {
            rendered: Some(rendered),
            ..delivery.clone()
        }),
        Err(err) => {
            tracing::warn!(delivery = %delivery.id, field = err.field, error = %err.message,
                "the endpoint's template failed: the channel's own message goes instead");
            None
        }
    }
}

/// Characters of each notification's change (or templated text) a digest shows; the
/// notification's page has it whole.
const DIGEST_ITEM_CHARS: usize = 1_000;

/// `delivery` as the digest of the notifications it carries, titled "N notifications": each
/// listed one in order (at most [`crate::store::DIGEST_ITEMS`]), written as the endpoint's
/// templates write a message when it has some (its title template as the item's heading, its
/// body template as the item's text, each rendered with that notification's tokens, in the
/// templates' format), else as what fired, when (in the user's time zone) and its change; each
/// item's text cut to [`DIGEST_ITEM_CHARS`], with its link. When it carries more than it lists,
/// it says how many more with a link to the notifications page; a channel cuts the whole to its
/// limit with the same link. So the work and the message are bounded and nothing is lost.
fn digest(channel: &dyn channel::Channel, delivery: &Delivery, links: &channel::Links) -> Delivery {
    use wachet::model::MessageFormat;
    let zone = template::zone_of(delivery);
    // A digest without templates is plain text, as it always was; with them, the templates'
    // format (the channel's own by default), so the items' rendered bodies show as written.
    let format = match &delivery.template {
        Some(t) => t.format.unwrap_or_else(|| channel.format(&delivery.target)),
        None => MessageFormat::Text,
    };
    let mut body = String::new();
    for item in &delivery.digest {
        let link = links.alert_url(delivery, &item.notification);
        let rendered = delivery
            .template
            .as_ref()
            .and_then(|t| item_rendered(t, format, delivery, item, links));
        let heading = rendered
            .as_ref()
            .and_then(|r| r.title.clone())
            .unwrap_or_else(|| {
                let at = chrono::DateTime::from_timestamp_millis(item.at)
                    .map(|at| template::minute(at, zone))
                    .unwrap_or_default();
                format!("{}: {} ({at})", item.name, item.expression)
            });
        let templated = rendered
            .and_then(|r| r.body)
            // An HTML body cut anywhere could end inside a tag: one too long shows the change
            // as text instead.
            .filter(|b| format != MessageFormat::Html || b.chars().count() <= DIGEST_ITEM_CHARS);
        let text = match &templated {
            Some(body) => channel::message::cut(body, DIGEST_ITEM_CHARS, Some(&link)),
            None => channel::message::cut(item.text.trim(), DIGEST_ITEM_CHARS, None),
        };
        body.push_str(&digest_item(
            format,
            &heading,
            &text,
            templated.is_some(),
            &link,
        ));
    }
    let listed = delivery.digest.len() as u64;
    if delivery.digest_total > listed {
        let more = delivery.digest_total - listed;
        let list = links.list_url(delivery);
        body.push_str(&match format {
            MessageFormat::Html => format!(
                "<p>{more} more notifications in this digest: <a href=\"{0}\">{0}</a></p>",
                crate::notify::content::escape(&list)
            ),
            _ => format!("{more} more notifications in this digest: {list}\n"),
        });
    }
    Delivery {
        rendered: Some(crate::store::Rendered {
            title: Some(format!("{} notifications", delivery.digest_total)),
            body: Some(body.trim_end().to_string()),
            format: Some(format),
        }),
        ..delivery.clone()
    }
}

/// What the endpoint's `template` makes of one notification of a digest, in `format`; one
/// that fails here is logged and the item is written as without templates.
fn item_rendered(
    template: &crate::store::Template,
    format: wachet::model::MessageFormat,
    delivery: &Delivery,
    item: &crate::store::DigestItem,
    links: &channel::Links,
) -> Option<crate::store::Rendered> {
    let facts = item
        .explanation
        .as_ref()
        .and_then(|e| e.facts.clone())
        .unwrap_or_default();
    let subject = template::item_subject(delivery, item, links, &facts);
    match template::render(template, format, &subject) {
        Ok(rendered) => Some(rendered),
        Err(err) => {
            tracing::warn!(delivery = %delivery.id, notification = %item.notification,
                field = err.field, error = %err.message,
                "the endpoint's template failed on a notification of a digest: it is listed as without templates");
            None
        }
    }
}

/// One item of a digest in `format`: its heading, its text (`templated`: as the template wrote
/// it in that format; else plain text) and its link.
fn digest_item(
    format: wachet::model::MessageFormat,
    heading: &str,
    text: &str,
    templated: bool,
    link: &str,
) -> String {
    use crate::notify::content::escape;
    use wachet::model::MessageFormat;
    let text = text.trim();
    match format {
        MessageFormat::Text => {
            let text = if text.is_empty() {
                String::new()
            } else {
                format!("{text}\n")
            };
            format!("{heading}\n{text}{link}\n\n")
        }
        MessageFormat::Markdown => {
            let text = if text.is_empty() {
                String::new()
            } else {
                format!("{text}\n")
            };
            format!("**{}**\n{text}{link}\n\n", heading.replace('*', "\\*"))
        }
        MessageFormat::Html => {
            let text = match (templated, text.is_empty()) {
                (_, true) => String::new(),
                (true, false) => format!("{text}\n"),
                (false, false) => format!("<pre>{}</pre>\n", escape(text)),
            };
            format!(
                "<h3>{}</h3>\n{text}<p><a href=\"{1}\">{1}</a></p>\n",
                escape(heading),
                escape(link)
            )
        }
    }
}

/// How a try judged `verdict` leaves its delivery, after `attempts` earlier tries: the retry
/// policy. A retry waits what the endpoint asked (at most [`MAX_RETRY_AFTER`]) or the policy's
/// doubling wait, whichever is longer.
fn outcome(verdict: Verdict, attempts: u32, settings: &DeliverySettings) -> DeliveryOutcome {
    let (after, error) = match verdict {
        Verdict::Delivered => return DeliveryOutcome::Delivered,
        Verdict::Failed(error) => return DeliveryOutcome::Failed { error },
        Verdict::Retry { after, error } => (after, error),
    };
    let tried = attempts + 1;
    if tried >= settings.tries {
        return DeliveryOutcome::Failed { error };
    }
    let backoff = settings
        .first_retry
        .saturating_mul(1 << (tried - 1).min(20));
    let wait = after.map_or(backoff, |asked| asked.min(MAX_RETRY_AFTER).max(backoff));
    DeliveryOutcome::Retry {
        at: now_millis() + wait.as_millis() as i64,
        error,
    }
}
