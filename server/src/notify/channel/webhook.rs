//! Webhooks: the notification's JSON with `alertDefinition`, an absolute `alertUrl`
//! ([`Links`]), the names a receiver written for Wachete reads (`alertId`, `name`, `previous`,
//! `userId`), what fired in words (`syntheticExpression`), every time in milliseconds, and, when
//! known, `firstSeen` and `change` (what was
//! removed and added, noise masked), signed (`X-Wachet-Signature: sha256=<hex HMAC-SHA256 of the
//! body>`, keyed with the user's webhook secret as the API shows it, its UTF-8 bytes) and named
//! (`X-Wachet-Delivery: <id>`, so receivers can drop the duplicates a crash may cause).

use super::{Channel, Context, Outgoing, http_url, post};
use crate::notify::SendError;
use crate::store::Delivery;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use wachet::model::MessagingServiceType;

/// An HTTP POST of the notification's JSON, signed.
pub struct Webhook;

impl Channel for Webhook {
    fn kind(&self) -> MessagingServiceType {
        MessagingServiceType::Webhook
    }

    fn validate(&self, value: &str) -> Result<(), String> {
        http_url(value)
    }

    fn prepare(&self, delivery: &Delivery, context: &Context<'_>) -> Result<Outgoing, SendError> {
        let url = wachet::validate::parse_url(&delivery.target)?;
        let body = serde_json::to_string(&webhook(delivery, context.links)?)
            .map_err(|e| SendError::from(e.to_string()))?;
        let signed = signature(&delivery.secret, &body)?;
        let mut request = post(url, body, "application/json", delivery)?;
        super::header(&mut request, "x-wachet-signature", &signed)?;
        Ok(Outgoing::Http(request))
    }
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
        self.at(
            delivery,
            &format!("/notifications/{id}"),
            &format!("/thirdparty/v1/notification/{id}"),
        )
    }

    /// The absolute URL of the user's notifications (a digest's link to them all).
    pub fn list_url(&self, delivery: &Delivery) -> String {
        self.at(
            delivery,
            "/notifications",
            "/thirdparty/v1/notification/list",
        )
    }

    /// The absolute URL of the monitor `id` for the user of `delivery`: its web page at the
    /// public address, else the API's URL of the monitor.
    pub fn monitor_url(&self, delivery: &Delivery, id: &str) -> String {
        self.at(
            delivery,
            &format!("/monitors/{id}"),
            &format!("/thirdparty/v1/task/{id}"),
        )
    }

    /// `web` at the public address when there is one, else `api` at the address the user last
    /// logged in to or the service listens on.
    fn at(&self, delivery: &Delivery, web: &str, api: &str) -> String {
        if let Some(public) = &self.public_url {
            return format!("{}{web}", public.trim_end_matches('/'));
        }
        let base = delivery
            .login_base
            .as_deref()
            .or(self.listen.as_deref())
            .unwrap_or("");
        format!("{}{api}", base.trim_end_matches('/'))
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
/// `comparand`, `userId`); `syntheticExpression`; when known, `firstSeen` and `change`. Every
/// time in milliseconds.
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
    // Extensions: what fired in words (a reminder reads "still failing after 3 h" where its
    // other fields equal the Error notification's), when what it reports was first seen, and
    // the change in key form with noise masked (`{"removed": [...], "added": [...]}`).
    object.insert(
        "syntheticExpression".into(),
        delivery.synthetic_expression.clone().into(),
    );
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
    // Extension: the notifications a digest lists, oldest first, and how many it carries in
    // all (more than it lists past the first ones; the notifications page has them all).
    if !delivery.digest.is_empty() {
        object.insert("digestTotal".into(), delivery.digest_total.into());
        let items: Vec<serde_json::Value> = delivery
            .digest
            .iter()
            .map(|item| {
                serde_json::json!({
                    "id": item.notification,
                    "taskName": item.name,
                    "syntheticExpression": item.expression,
                    "timestamp": chrono::DateTime::from_timestamp_millis(item.at)
                        .map(|at| millis(&at)),
                    "alertUrl": links.alert_url(delivery, &item.notification),
                })
            })
            .collect();
        object.insert("digest".into(), items.into());
    }
    // Extension: what the endpoint's templates made of it.
    if let Some(rendered) = &delivery.rendered {
        if let Some(title) = &rendered.title {
            object.insert("title".into(), title.clone().into());
        }
        if let Some(body) = &rendered.body {
            object.insert("body".into(), body.clone().into());
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
                remind_every_seconds: None,
            },
            secret: "s".into(),
            user: "u1".into(),
            login_base: login_base.map(str::to_string),
            html: String::new(),
            synthetic_expression: "content changed".into(),
            explanation: None,
            template: None,
            time_zone: "UTC".into(),
            folder: None,
            rendered: None,
            digest: Vec::new(),
            digest_total: 0,
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
