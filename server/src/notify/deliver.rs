//! Delivery: sends the outbox's pending deliveries to their endpoints and stores how each
//! ended. Webhooks get the notification's JSON with `alertDefinition`, an absolute `alertUrl`
//! ([`Links`]), the names a receiver written for Wachete reads (`alertId`, `name`, `previous`,
//! `userId`), every time in milliseconds, and, when known, `firstSeen` and `change` (what was
//! removed and added, noise masked), signed
//! (`X-Wachet-Signature: sha256=<hex HMAC-SHA256 of the body>`, keyed with the user's webhook
//! secret as the API shows it, its UTF-8 bytes) and named (`X-Wachet-Delivery: <id>`, so
//! receivers can drop the duplicates a crash may cause). Slack, Discord, Teams and ntfy get
//! their own shapes. A 2xx is delivered; anything else is tried again after 30 s, doubling,
//! 8 tries in all, then failed; what no retry can change (an address the private-network policy
//! refuses, a recipient the SMTP server rejects for good) fails at once. Requests go through the
//! engine's fetcher, so the private-network policy of the checks applies to webhooks too; every
//! delivery runs in its own task under a time limit, so one dead or hanging endpoint never
//! delays the others. The same loop mails the confirmation codes of e-mail addresses (an
//! address other than the account's own gets notifications only once confirmed; the outbox
//! fails its deliveries until then), retried alike; and the store releases at most so many
//! first tries per user and hour, holding the rest pending.

use super::email::{Mailer, SmtpSettings};
use crate::store::{Delivery, DeliveryOutcome, OutboxStore, now_millis};
use crate::worker::Worker;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Semaphore, watch};
use wachet::fetch::{FetchError, FetchRequest, Fetcher};
use wachet::model::MessagingServiceType;

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
    /// How long one try may take (connecting, redirects, the answer) before it counts as
    /// failed and is retried.
    pub attempt_timeout: Duration,
    /// The SMTP server for e-mail endpoints; without one they fail at once.
    pub smtp: Option<SmtpSettings>,
    /// Where the links in webhook payloads point (set by [`crate::service::start`]).
    pub links: Links,
}

/// The addresses a webhook's `alertUrl` is built on, best first: the web page of the
/// notification at the service's public address (`--public-url`); else the API's URL of the
/// notification at the scheme and host the user last logged in to (the delivery's
/// [`Delivery::login_base`]); else at the address the service listens on.
#[derive(Debug, Clone, Default)]
pub struct Links {
    /// The service's public address, such as `https://wachet.example`.
    pub public_url: Option<String>,
    /// The address it listens on, as a URL (`http://127.0.0.1:8080`).
    pub listen: Option<String>,
}

impl Links {
    /// The absolute URL of the notification `id` for the user of `delivery`.
    pub fn alert_url(&self, delivery: &Delivery, id: &str) -> String {
        if let Some(public) = &self.public_url {
            return format!("{}/notifications/{id}", public.trim_end_matches('/'));
        }
        let base = delivery
            .login_base
            .as_deref()
            .or(self.listen.as_deref())
            .unwrap_or("");
        format!(
            "{}/thirdparty/v1/notification/{id}",
            base.trim_end_matches('/')
        )
    }
}

impl Default for DeliverySettings {
    fn default() -> Self {
        DeliverySettings {
            first_retry: Duration::from_secs(30),
            tries: 8,
            in_flight: 16,
            attempt_timeout: Duration::from_secs(60),
            smtp: None,
            links: Links::default(),
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
            match store.claim_deliveries(now, until, free as u32).await {
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
            let outcome = outcome(sent, mail.attempts, &settings);
            if let Err(err) = store.finish_confirmation_mail(&mail, &outcome).await {
                tracing::error!(%err, "cannot store a confirmation message");
            }
            drop(holding);
            drop(slot);
        });
    }
}

/// Why a try failed, and whether another try could go better.
#[derive(Debug)]
pub struct SendError {
    /// What went wrong.
    pub message: String,
    /// No retry can change it (a refused address, a rejected recipient).
    pub permanent: bool,
}

impl From<String> for SendError {
    fn from(message: String) -> Self {
        SendError {
            message,
            permanent: false,
        }
    }
}

/// One try of one delivery.
async fn attempt(
    fetcher: &dyn Fetcher,
    mailer: Option<&Mailer>,
    delivery: &Delivery,
    settings: &DeliverySettings,
) -> DeliveryOutcome {
    let sending = async {
        match (delivery.kind, mailer) {
            (MessagingServiceType::Email, Some(mailer)) => mailer.send(delivery).await,
            (MessagingServiceType::Email, None) => Err(SendError {
                message: "e-mail delivery is not configured on this server (--smtp-host)".into(),
                permanent: true,
            }),
            _ => send(fetcher, delivery, &settings.links).await,
        }
    };
    let sent = match tokio::time::timeout(settings.attempt_timeout, sending).await {
        Ok(sent) => sent,
        Err(_) => Err(SendError::from(format!(
            "no answer within {} s",
            settings.attempt_timeout.as_secs_f64()
        ))),
    };
    outcome(sent, delivery.attempts, settings)
}

/// How a try that ended with `sent` leaves its delivery, after `attempts` earlier tries.
fn outcome(
    sent: Result<(), SendError>,
    attempts: u32,
    settings: &DeliverySettings,
) -> DeliveryOutcome {
    let error = match sent {
        Ok(()) => return DeliveryOutcome::Delivered,
        Err(SendError {
            message,
            permanent: true,
        }) => return DeliveryOutcome::Failed { error: message },
        Err(SendError { message, .. }) => message,
    };
    let tried = attempts + 1;
    if tried >= settings.tries {
        return DeliveryOutcome::Failed { error };
    }
    let wait = settings
        .first_retry
        .saturating_mul(1 << (tried - 1).min(20));
    DeliveryOutcome::Retry {
        at: now_millis() + wait.as_millis() as i64,
        error,
    }
}

async fn send(fetcher: &dyn Fetcher, delivery: &Delivery, links: &Links) -> Result<(), SendError> {
    let url = wachet::validate::parse_url(&delivery.target)?;
    let (body, content_type) = body(delivery, links)?;
    let mut request = FetchRequest::get(url);
    request.method = wachet::fetch::Method::POST;
    let headers = &mut request.headers;
    let header = |v: &str| v.parse().map_err(|_| format!("bad header value {v:?}"));
    headers.insert("content-type", header(content_type)?);
    headers.insert("x-wachet-delivery", header(&delivery.id)?);
    if delivery.kind == MessagingServiceType::Webhook {
        headers.insert(
            "x-wachet-signature",
            header(&signature(&delivery.secret, &body)?)?,
        );
    }
    if delivery.kind == MessagingServiceType::Ntfy {
        let title = delivery
            .notification
            .task_name
            .as_deref()
            .unwrap_or("wachet");
        headers.insert("title", header(&title.replace(['\r', '\n'], " "))?);
    }
    request.body = Some(body);
    let response = fetcher.fetch(&request).await.map_err(|err| SendError {
        permanent: matches!(err, FetchError::Refused(_)),
        message: err.to_string(),
    })?;
    if (200..300).contains(&response.status) {
        Ok(())
    } else {
        Err(format!("the endpoint answered HTTP {}", response.status).into())
    }
}

/// `sha256=<hex HMAC-SHA256 of body>`, keyed with the secret's UTF-8 bytes (as GitHub does).
pub fn signature(secret: &str, body: &str) -> Result<String, String> {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes())
        .map_err(|err| format!("webhook secret: {err}"))?;
    mac.update(body.as_bytes());
    let tag = mac.finalize().into_bytes();
    let hex: String = tag.iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("sha256={hex}"))
}

/// A time as every time of a webhook payload is written: RFC 3339 in UTC with exactly three
/// fractional digits (`2026-12-06T02:00:00.000Z`).
fn millis(time: &chrono::DateTime<chrono::Utc>) -> String {
    time.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// A webhook's JSON: the notification's fields (ClientNotification) with `alertDefinition`
/// (the alert that fired) and an absolute `alertUrl`; the names a receiver written for
/// Wachete reads beside them (`alertId` = `id`, `name` = `taskName`, `previous` =
/// `comparand`, `userId`); when known, `firstSeen` and `change`. Every time in milliseconds.
fn webhook(delivery: &Delivery, links: &Links) -> Result<serde_json::Value, String> {
    let n = &delivery.notification;
    let mut value = serde_json::to_value(n).map_err(|e| e.to_string())?;
    let Some(object) = value.as_object_mut() else {
        return Err("a notification is not a JSON object".into());
    };
    object.remove("html");
    object.insert("timestamp".into(), millis(&n.timestamp).into());
    object.insert("serverTime".into(), millis(&n.server_time).into());
    object.insert(
        "alertDefinition".into(),
        serde_json::to_value(&delivery.alert).map_err(|e| e.to_string())?,
    );
    object.insert("alertId".into(), n.id.clone().into());
    object.insert("name".into(), n.task_name.clone().into());
    object.insert("previous".into(), n.comparand.clone().into());
    object.insert("userId".into(), delivery.user.clone().into());
    // Extensions: when what it reports was first seen, and the change in key form with noise
    // masked (`{"removed": [...], "added": [...]}`).
    if let Some(explanation) = &delivery.explanation {
        if let Some(first_seen) = &explanation.first_seen {
            object.insert("firstSeen".into(), millis(first_seen).into());
        }
        if let Some(change) = &explanation.change {
            object.insert(
                "change".into(),
                serde_json::to_value(change).map_err(|e| e.to_string())?,
            );
        }
    }
    match n.id.as_deref() {
        Some(id) => {
            object.insert("alertUrl".into(), links.alert_url(delivery, id).into());
        }
        // A test notification: no notification behind it to fetch.
        None => {
            object.insert("test".into(), true.into());
        }
    }
    Ok(value)
}

/// The body for the endpoint's kind, and its media type.
fn body(delivery: &Delivery, links: &Links) -> Result<(String, &'static str), String> {
    let n = &delivery.notification;
    let line = format!(
        "{}: {} {}",
        n.task_name
            .as_deref()
            .or(n.url.as_deref())
            .unwrap_or("monitor"),
        n.kind,
        n.url.as_deref().unwrap_or("")
    );
    let json = |value: serde_json::Value| {
        serde_json::to_string(&value)
            .map(|s| (s, "application/json"))
            .map_err(|e| e.to_string())
    };
    match delivery.kind {
        MessagingServiceType::Webhook => json(webhook(delivery, links)?),
        MessagingServiceType::Slack | MessagingServiceType::Teams => {
            json(serde_json::json!({"text": line}))
        }
        MessagingServiceType::Discord => json(serde_json::json!({"content": line})),
        MessagingServiceType::Ntfy => Ok((line, "text/plain; charset=utf-8")),
        other => Err(format!("{other} is not delivered by this server")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wachet::model::{Alert, AlertType, ClientNotification};

    fn delivery(login_base: Option<&str>) -> Delivery {
        let at = chrono::DateTime::from_timestamp(1_796_522_400, 123_456_789).unwrap_or_default();
        Delivery {
            id: "d1".into(),
            kind: MessagingServiceType::Webhook,
            target: "https://hooks.example/w".into(),
            attempts: 0,
            token: 1,
            notification: ClientNotification {
                id: Some("n1".into()),
                kind: AlertType::NotEq,
                current: Some("3.90 EUR".into()),
                comparand: Some("3.50 EUR".into()),
                html: Some("<p>x</p>".into()),
                error: None,
                timestamp: at,
                server_time: at,
                task_id: Some("t1".into()),
                task_name: Some("Tea".into()),
                url: Some("https://shop.example/tea".into()),
            },
            alert: Alert {
                kind: AlertType::NotEq,
                value: None,
                parameters: None,
            },
            secret: "s".into(),
            user: "u1".into(),
            login_base: login_base.map(str::to_string),
            html: String::new(),
            synthetic_expression: "content changed".into(),
            explanation: None,
        }
    }

    #[test]
    fn alert_urls_are_absolute_best_address_first() {
        let public = Links {
            public_url: Some("https://wachet.example/".into()),
            listen: Some("http://127.0.0.1:8080".into()),
        };
        let private = Links {
            public_url: None,
            ..public.clone()
        };
        let logged_in = delivery(Some("https://api.example:8443"));
        assert_eq!(
            public.alert_url(&logged_in, "n1"),
            "https://wachet.example/notifications/n1"
        );
        assert_eq!(
            private.alert_url(&logged_in, "n1"),
            "https://api.example:8443/thirdparty/v1/notification/n1"
        );
        assert_eq!(
            private.alert_url(&delivery(None), "n1"),
            "http://127.0.0.1:8080/thirdparty/v1/notification/n1"
        );
    }

    #[test]
    fn a_webhook_carries_wachetes_names_and_times_in_milliseconds() {
        let payload = webhook(&delivery(None), &Links::default()).unwrap();
        assert_eq!(payload["alertId"], "n1");
        assert_eq!(payload["id"], "n1");
        assert_eq!(payload["name"], "Tea");
        assert_eq!(payload["previous"], "3.50 EUR");
        assert_eq!(payload["userId"], "u1");
        assert_eq!(payload["timestamp"], "2026-12-06T02:00:00.123Z");
        assert_eq!(payload["serverTime"], "2026-12-06T02:00:00.123Z");
        assert_eq!(payload.get("html"), None);
    }
}
