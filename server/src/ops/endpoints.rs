//! A user's own notification endpoints (used by monitors with none of their own), the webhook
//! secret that signs webhook deliveries, the confirmation of e-mail addresses other than the
//! account's own, and test notifications to an endpoint.

use super::notifications::DeliveryState;
use super::{Ctx, OpError, UserId, rules};
use crate::secrets;
use crate::store::{UserRecord, now_millis};
use wachet::model::{MessagingServiceType, Monitor, NotificationEndpoint};

/// Test notifications of a user that may wait in the outbox at once.
pub const MAX_WAITING_TESTS: u32 = 5;
/// Test deliveries listed.
const TESTS_LISTED: u32 = 20;

/// The user's notification settings.
#[derive(Debug, Clone)]
pub struct Endpoints {
    /// Where notifications of monitors without endpoints of their own go, each e-mail endpoint
    /// with `confirmed`.
    pub notification_endpoints: Vec<NotificationEndpoint>,
    /// The key of the `X-Wachet-Signature` HMAC of webhook deliveries (its UTF-8 bytes).
    pub webhook_secret: String,
}

/// What a confirmation asks: a code mailed to an address, or a (new) code for an address.
#[derive(Debug, Clone, Copy)]
pub enum Confirm<'a> {
    /// The code a confirmation message brought: confirms its address.
    Code(&'a str),
    /// An address to mail a code to.
    Address(&'a str),
}

/// The user's endpoints and webhook secret.
pub async fn get(ctx: &Ctx, user: &UserId) -> Result<Endpoints, OpError> {
    let record = account(ctx, user).await?;
    let mut endpoints = record.notification_endpoints;
    mark_confirmed(ctx, user, endpoints.iter_mut()).await?;
    Ok(Endpoints {
        notification_endpoints: endpoints,
        webhook_secret: record.webhook_secret,
    })
}

/// Replaces the user's endpoints with `list`, once valid, the secrets of its notification URLs
/// sealed ([`seal`]). An e-mail address other than the account's own is mailed a confirmation
/// code first.
pub async fn replace(
    ctx: &Ctx,
    user: &UserId,
    list: &[NotificationEndpoint],
) -> Result<Endpoints, OpError> {
    rules::endpoint_list(list)?;
    let mut list = list.to_vec();
    seal(ctx, user, "notificationEndpoints", list.iter_mut())?;
    let list = list.as_slice();
    let own = account(ctx, user).await?.email;
    for endpoint in list {
        if endpoint.kind == MessagingServiceType::Email && normalized(endpoint) != own {
            ctx.store()
                .request_email_confirmation(user, &normalized(endpoint), false)
                .await?;
        }
    }
    ctx.store().set_notification_endpoints(user, list).await?;
    get(ctx, user).await
}

/// Seals the secret parts of the notification URLs among `endpoints` (the list `field`) for
/// `user`, as they are stored and shown from then on; a URL whose host the service may not
/// reach, or with a sealed part that is not this user's, is refused at `field[i].value`.
pub fn seal<'a>(
    ctx: &Ctx,
    user: &UserId,
    field: &str,
    endpoints: impl IntoIterator<Item = &'a mut NotificationEndpoint>,
) -> Result<(), OpError> {
    seal_with(ctx.sealer(), ctx.checker().as_ref(), user, field, endpoints)
}

/// [`seal`] with this sealer, and the network policy of this engine.
pub fn seal_with<'a>(
    sealer: &crate::secrets::Sealer,
    checker: &dyn wachet::Checker,
    user: &UserId,
    field: &str,
    endpoints: impl IntoIterator<Item = &'a mut NotificationEndpoint>,
) -> Result<(), OpError> {
    let policy = checker.network_policy();
    crate::notify::channel::url::seal_endpoints(sealer, &policy, user, endpoints)
        .map_err(|(i, message)| OpError::field(format!("{field}[{i}].value"), message))
}

/// Confirms an address with its code, or mails a (new) code to an address.
pub async fn confirm(ctx: &Ctx, user: &UserId, what: Confirm<'_>) -> Result<Endpoints, OpError> {
    match what {
        Confirm::Code(code) => {
            ctx.store()
                .confirm_email(user, &secrets::sha256_hex(code.trim()))
                .await?
                .ok_or_else(|| OpError::field("code", "no address waits for this code"))?;
        }
        Confirm::Address(address) => {
            let address = address.trim().to_lowercase();
            if !rules::is_email(&address) {
                return Err(OpError::field("address", "not an e-mail address"));
            }
            if address != account(ctx, user).await?.email {
                ctx.store()
                    .request_email_confirmation(user, &address, true)
                    .await?;
            }
        }
    }
    get(ctx, user).await
}

/// Replaces the webhook secret with a new random one; the new secret.
pub async fn rotate_webhook_secret(ctx: &Ctx, user: &UserId) -> Result<String, OpError> {
    let secret = secrets::new_webhook_secret();
    ctx.store().set_webhook_secret(user, &secret).await?;
    Ok(secret)
}

/// Puts a test notification to the user's endpoint of value `value` in the outbox; the test
/// delivery's id.
pub async fn send_test(ctx: &Ctx, user: &UserId, value: &str) -> Result<String, OpError> {
    let settings = get(ctx, user).await?;
    let endpoint = settings
        .notification_endpoints
        .iter()
        .find(|endpoint| endpoint.value.as_deref().map(str::trim) == Some(value))
        .ok_or_else(|| OpError::field("value", "is none of your notification endpoints"))?;
    if endpoint.confirmed == Some(false) {
        return Err(OpError::field(
            "value",
            "has not confirmed it wants notifications: enter the code mailed to it first",
        ));
    }
    Ok(ctx
        .store()
        .queue_test_delivery(user, endpoint.kind, value, now_millis(), MAX_WAITING_TESTS)
        .await?)
}

/// The user's latest test deliveries, newest first.
pub async fn tests(ctx: &Ctx, user: &UserId) -> Result<Vec<DeliveryState>, OpError> {
    Ok(ctx
        .store()
        .test_deliveries(user, TESTS_LISTED)
        .await?
        .into_iter()
        .map(Into::into)
        .collect())
}

/// Sets `confirmed` on each e-mail endpoint of `user` (their own address always is); reads
/// nothing when there is no e-mail endpoint, so monitors without one cost nothing more.
pub async fn mark_confirmed<'a>(
    ctx: &Ctx,
    user: &UserId,
    endpoints: impl Iterator<Item = &'a mut NotificationEndpoint>,
) -> Result<(), OpError> {
    let mut emails: Vec<&mut NotificationEndpoint> = endpoints
        .filter(|endpoint| endpoint.kind == MessagingServiceType::Email)
        .collect();
    if emails.is_empty() {
        return Ok(());
    }
    let own = account(ctx, user).await?.email;
    let addresses = ctx.store().email_addresses(user).await?;
    for endpoint in &mut emails {
        let address = normalized(endpoint);
        endpoint.confirmed = Some(
            address == own
                || addresses
                    .iter()
                    .any(|a| a.confirmed && a.address == address),
        );
    }
    Ok(())
}

/// The notification endpoints of `monitors`, for [`mark_confirmed`].
pub fn of_monitors(monitors: &mut [Monitor]) -> impl Iterator<Item = &mut NotificationEndpoint> {
    monitors
        .iter_mut()
        .flat_map(|monitor| monitor.notification_endpoints.iter_mut().flatten())
}

async fn account(ctx: &Ctx, user: &UserId) -> Result<UserRecord, OpError> {
    ctx.store().user_by_id(user).await?.ok_or(OpError::NotFound)
}

/// An e-mail endpoint's address as addresses are kept: trimmed, lower-cased.
fn normalized(endpoint: &NotificationEndpoint) -> String {
    endpoint
        .value
        .as_deref()
        .unwrap_or("")
        .trim()
        .to_lowercase()
}

/// How many of a monitor's newest checks a preview looks through for its last change.
const PREVIEW_LOOKBACK: u32 = 100;

/// What an endpoint's templates make of a monitor's last change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preview {
    /// The title: the title template's, else the channel's own (the monitor's name and what
    /// fired).
    pub title: String,
    /// The body: the body template's, else the change as text.
    pub body: String,
    /// The format the body is written in.
    pub format: wachet::model::MessageFormat,
}

/// Renders `endpoint`'s templates against the last change of the user's monitor `monitor`
/// (the newest check whose value differs from the one before), as a delivery would, in the
/// user's time zone. A template that cannot be saved is refused as saving refuses it, at
/// `endpoint.title` or `endpoint.body`; a monitor that is not the user's is `NotFound`; one
/// without a change yet is refused at `monitorId`.
pub async fn preview(
    ctx: &Ctx,
    user: &UserId,
    endpoint: &NotificationEndpoint,
    monitor: &str,
) -> Result<Preview, OpError> {
    use crate::notify::{change::VisibleChange, channel, template};
    use wachet::alerts::compare::Comparator;
    if let Err(err) = template::check(endpoint) {
        return Err(OpError::field(
            format!("endpoint.{}", err.field),
            err.message,
        ));
    }
    let stored = super::monitors::stored(ctx, user, monitor).await?;
    let page = crate::store::TimePage {
        limit: PREVIEW_LOOKBACK,
        ..crate::store::TimePage::default()
    };
    let entries = ctx.store().entries(user, monitor, &page).await?;
    let values: Vec<_> = entries
        .iter()
        .filter_map(|(_, data)| data.raw.as_deref().map(|raw| (data, raw)))
        .collect();
    let change = values
        .windows(2)
        .find(|pair| pair[0].1 != pair[1].1)
        .map(|pair| (pair[0].0, pair[0].1, Some(pair[1].1)))
        .or(match values.as_slice() {
            // One value only: its first check is the change.
            [(data, raw)] => Some((*data, *raw, None)),
            _ => None,
        });
    let Some((data, current, previous)) = change else {
        return Err(OpError::field(
            "monitorId",
            "has no change to preview yet: it needs a check with a value",
        ));
    };
    let order = stored.compare_lines.unwrap_or_default();
    let shown = VisibleChange::with_order(&Comparator::lenient(&stored), order, previous, current);
    let facts = template::facts(previous, Some(current), Some(&shown), None);
    let settings = super::user_settings::get(ctx, user).await?;
    let public = ctx.settings().web.public_url.as_deref().unwrap_or("");
    let public = public.trim_end_matches('/');
    let name = stored
        .name
        .clone()
        .or_else(|| stored.url.clone())
        .unwrap_or_else(|| monitor.to_string());
    let url = stored.url.clone().unwrap_or_default();
    let folder = match stored.folder_id.as_deref() {
        Some(id) => super::folders::name_of(ctx, user, id).await?,
        None => None,
    };
    let subject = template::Subject {
        monitor_id: monitor,
        name: &name,
        url: &url,
        folder: folder.as_deref(),
        alert: wachet::model::AlertType::NotEq,
        expression: "content changed",
        current: Some(current),
        error: None,
        first_seen: None,
        at: data.last_check_timestamp,
        facts: &facts,
        change_link: Some(format!("{public}/monitors/{monitor}/history")),
        monitor_link: Some(format!("{public}/monitors/{monitor}")),
        time_zone: settings.time_zone,
    };
    let value = endpoint.value.as_deref().unwrap_or("");
    let format = channel::of(endpoint.kind)
        .map(|c| c.format(value))
        .unwrap_or(wachet::model::MessageFormat::Text);
    let template = crate::store::Template::of(endpoint).unwrap_or_default();
    let rendered = template::render(&template, format, &subject)
        .map_err(|err| OpError::field(format!("endpoint.{}", err.field), err.message))?;
    Ok(Preview {
        title: rendered
            .title
            .unwrap_or_else(|| format!("{name}: content changed")),
        body: rendered.body.unwrap_or(facts.diff_text),
        format: rendered.format.unwrap_or(format),
    })
}

/// Gives each endpoint of `list` the templates (title, body, format) of the endpoint of
/// `stored` with its kind and value, when it has none of its own: for the web forms, which
/// edit an endpoint's kind, value and schedule (digest, quiet hours) but not its templates,
/// and must not lose what the API set.
pub fn keep_extensions(list: &mut [NotificationEndpoint], stored: &[NotificationEndpoint]) {
    for endpoint in list.iter_mut() {
        let unset =
            endpoint.title.is_none() && endpoint.body.is_none() && endpoint.format.is_none();
        let Some(old) = stored
            .iter()
            .find(|old| old.kind == endpoint.kind && old.value == endpoint.value)
        else {
            continue;
        };
        if unset {
            endpoint.title = old.title.clone();
            endpoint.body = old.body.clone();
            endpoint.format = old.format;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_form_that_edits_kind_and_value_keeps_what_the_api_set() {
        let hook = |value: &str| {
            NotificationEndpoint::new(MessagingServiceType::Webhook, Some(value.to_string()))
        };
        let stored = vec![NotificationEndpoint {
            body: Some("{{ change.diff }}".into()),
            digest: Some(wachet::model::Digest {
                every_minutes: Some(30),
                daily_at: None,
            }),
            ..hook("https://a.example/")
        }];
        let mut list = vec![hook("https://a.example/"), hook("https://b.example/")];
        keep_extensions(&mut list, &stored);
        assert_eq!(list[0].body.as_deref(), Some("{{ change.diff }}"));
        // The forms show the schedule: one they send at once is the person's choice.
        assert_eq!(list[0].digest, None);
        assert_eq!(list[1], hook("https://b.example/"));
    }
}
