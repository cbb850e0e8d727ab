//! The outbox: messages the service owes someone, sent by [`crate::notify::deliver`] under a
//! lease and retried until they go or fail for good. The deliveries of notifications (and of
//! test notifications) to endpoints, and the confirmation codes of e-mail addresses.

use super::{Explanation, Millis, StoreError};
use async_trait::async_trait;
use wachet::model::{Alert, ClientNotification};

/// A delivery of a notification to one endpoint, claimed by [`OutboxStore::claim_deliveries`].
#[derive(Debug, Clone)]
pub struct Delivery {
    /// The delivery's id (the `X-Wachet-Delivery` header: receivers drop duplicates by it).
    pub id: String,
    /// The kind of endpoint.
    pub kind: wachet::model::MessagingServiceType,
    /// Its URL (or e-mail address).
    pub target: String,
    /// Tries made before this one.
    pub attempts: u32,
    /// The claim's fencing token: each claim raises it, so a try that outlived its lease
    /// (another worker claimed the delivery since) records nothing.
    pub token: i64,
    /// The notification.
    pub notification: ClientNotification,
    /// The alert that fired.
    pub alert: Alert,
    /// The key of the webhook signature: the user's webhook secret.
    pub secret: String,
    /// The user the notification is for.
    pub user: String,
    /// Where the user last logged in to the API from (`https://host[:port]`), when known: the
    /// base of the webhook's `alertUrl` when the service has no public address.
    pub login_base: Option<String>,
    /// The notification's content as HTML (the e-mail body).
    pub html: String,
    /// What fired, such as `content changed` (the e-mail subject).
    pub synthetic_expression: String,
    /// What the notification carries beside it: the webhook's `firstSeen` and `change`, the
    /// e-mail's plain text. `None` for test notifications and those stored before it existed.
    pub explanation: Option<Explanation>,
    /// The endpoint's templates, when it has some.
    pub template: Option<Template>,
    /// The user's time zone (an IANA name), for the times a template writes.
    pub time_zone: String,
    /// The name of the monitor's folder, when it is in one.
    pub folder: Option<String>,
    /// The title and body the templates made of this delivery, set by
    /// [`crate::notify::deliver`] before it is sent; a channel shows them instead of its own.
    pub rendered: Option<Rendered>,
    /// When the delivery is a digest: the first of the notifications it carries (this one
    /// among them), oldest first, at most [`DIGEST_ITEMS`]; empty otherwise.
    pub digest: Vec<DigestItem>,
    /// When the delivery is a digest: how many notifications it carries in all, those beyond
    /// [`Delivery::digest`] included (they end as it ends, and the notifications page lists
    /// them); 0 otherwise.
    pub digest_total: u64,
}

/// Notifications of a digest read for its message, at most: a digest of 10,000 changes costs
/// the same to send as one of 50, and names how many more there are with a link to them all.
pub const DIGEST_ITEMS: usize = 50;

/// Characters of a notification's current value and error a digest reads.
pub const DIGEST_VALUE_CHARS: usize = 5_000;

/// One notification of a digest, with what the endpoint's templates say of it.
#[derive(Debug, Clone, PartialEq)]
pub struct DigestItem {
    /// The notification's id.
    pub notification: String,
    /// The monitor's name, else its page's address.
    pub name: String,
    /// What fired, in words.
    pub expression: String,
    /// When.
    pub at: Millis,
    /// The change as text (or the notification's text).
    pub text: String,
    /// The monitor's id.
    pub monitor: Option<String>,
    /// The page's address.
    pub url: Option<String>,
    /// The type of alert that fired.
    pub alert: wachet::model::AlertType,
    /// The current value, cut to [`DIGEST_VALUE_CHARS`].
    pub current: Option<String>,
    /// The check's error, cut alike.
    pub error: Option<String>,
    /// What the notification carries beside it (the change's facts for templates).
    pub explanation: Option<Explanation>,
    /// The name of the monitor's folder.
    pub folder: Option<String>,
}

/// An endpoint's templates as a delivery keeps them (extension fields of the endpoint).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Template {
    /// The title's template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The body's template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// The format they write; none: the channel's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<wachet::model::MessageFormat>,
}

impl Template {
    /// The templates of `endpoint`, when it has any.
    pub fn of(endpoint: &wachet::model::NotificationEndpoint) -> Option<Template> {
        let template = Template {
            title: endpoint.title.clone().filter(|t| !t.trim().is_empty()),
            body: endpoint.body.clone().filter(|t| !t.trim().is_empty()),
            format: endpoint.format,
        };
        (template != Template::default()).then_some(template)
    }
}

/// What an endpoint's templates made of a delivery.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rendered {
    /// The title, when the endpoint has a title template.
    pub title: Option<String>,
    /// The body, when it has a body template.
    pub body: Option<String>,
    /// The format the body is written in.
    pub format: Option<wachet::model::MessageFormat>,
}

/// How a delivery attempt ended.
#[derive(Debug, Clone)]
pub enum DeliveryOutcome {
    /// The endpoint took it.
    Delivered,
    /// It failed and is tried again at this time.
    Retry {
        /// When.
        at: Millis,
        /// What went wrong.
        error: String,
    },
    /// It failed for good.
    Failed {
        /// What went wrong last.
        error: String,
    },
}

/// A delivery as the owner sees it: where it goes and how it went.
#[derive(Debug, Clone)]
pub struct DeliveryRecord {
    /// The delivery's id.
    pub id: String,
    /// Its notification; `None` for a test notification.
    pub notification: Option<String>,
    /// The kind of endpoint.
    pub kind: wachet::model::MessagingServiceType,
    /// Its URL (or e-mail address).
    pub target: String,
    /// `pending` (not yet tried, or to be tried again), `delivered` or `failed` (for good).
    pub state: String,
    /// Tries so far.
    pub attempts: u32,
    /// The error of the last try, if it failed.
    pub last_error: Option<String>,
    /// When its state last changed (for a pending one: when it was written or last tried).
    pub updated_at: Millis,
}

/// A confirmation message to send, claimed by [`OutboxStore::claim_confirmation_mails`]. Its `Debug`
/// leaves the code out.
#[derive(Clone)]
pub struct ConfirmationMail {
    /// Who asked.
    pub user_id: String,
    /// The e-mail address of that account (the message names it).
    pub account_email: String,
    /// Where the message goes.
    pub address: String,
    /// The code that confirms the address; only its hash is stored.
    pub code: String,
    /// Tries made before this one.
    pub attempts: u32,
}

impl ConfirmationMail {
    /// What stands for this claim of the message in the store: the hash of its code, new with
    /// each claim, so it fences as a token does (a try that outlived its lease records nothing)
    /// and names the claim the worker's beats renew ([`super::Holdings::mails`]).
    pub fn claim(&self) -> String {
        crate::secrets::sha256_hex(&self.code)
    }
}

impl std::fmt::Debug for ConfirmationMail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConfirmationMail")
            .field("user_id", &self.user_id)
            .field("address", &self.address)
            .finish_non_exhaustive()
    }
}

/// Deliveries and confirmation mails waiting to be sent, and how those sent went.
///
/// Every method keeps to [the store's rules](super): only the user's own data, each write one
/// transaction.
#[async_trait]
pub trait OutboxStore: Send + Sync + 'static {
    /// Claims up to `limit` pending deliveries due at `now` under a lease until `lease_until`
    /// (a delivery in flight when the process dies is tried again after restart), oldest due
    /// first, leaving at most `per_lane` (at least one) in flight in any one lane: to one
    /// receiving host, or one endpoint where the target names no host (see
    /// `store/shape/outbox.rs`). A lane already at its cap, through this process's claims or
    /// another's, is skipped and the due deliveries of other lanes are taken instead, so a
    /// receiver that hangs never holds more than `per_lane` of the caller's slots. On PostgreSQL
    /// the lease is `lease_until - now` long on the database's clock, and concurrent claims skip
    /// each other's rows, as in [`super::ScheduleStore::claim_due`], and each other's lanes
    /// while one of them counts a lane.
    async fn claim_deliveries(
        &self,
        now: Millis,
        lease_until: Millis,
        limit: u32,
        per_lane: u32,
    ) -> Result<Vec<Delivery>, StoreError>;
    /// Stores how an attempt ended and frees the delivery, when the claim holding `token` still
    /// holds it; a delivery claimed again since (this try outlived its lease) is left to that
    /// claim, and `Ok(false)` says so.
    async fn finish_delivery(
        &self,
        id: &str,
        token: i64,
        outcome: &DeliveryOutcome,
    ) -> Result<bool, StoreError>;
    /// How many deliveries are in each state (`pending`, `delivered`, `failed`), for metrics.
    async fn delivery_counts(&self) -> Result<Vec<(String, u64)>, StoreError>;
    /// The deliveries of a notification, by target.
    async fn delivery_records(&self, notification: &str)
    -> Result<Vec<DeliveryRecord>, StoreError>;
    /// Makes the delivery `delivery` of the user's notification `notification` (`None`: a
    /// test notification) due at `now` again, one more try through the outbox, its tries so far
    /// kept. `NotFound` when it is not the user's; `Invalid { field: "deliveryId" }` when it
    /// was delivered, is in flight, or goes to an e-mail address nobody confirmed.
    async fn retry_delivery(
        &self,
        user: &str,
        notification: Option<&str>,
        delivery: &str,
        now: Millis,
    ) -> Result<(), StoreError>;
    /// Puts a test notification to `target` (an endpoint of kind `kind`) in the outbox, due at
    /// `now` and held like any first try by the hourly bound; its delivery's id.
    /// `Invalid { field: "endpoint" }` when `waiting` of the user's tests are already pending.
    async fn queue_test_delivery(
        &self,
        user: &str,
        kind: wachet::model::MessagingServiceType,
        target: &str,
        now: Millis,
        waiting: u32,
    ) -> Result<String, StoreError>;
    /// The user's latest test deliveries, newest first, `limit` at most.
    async fn test_deliveries(
        &self,
        user: &str,
        limit: u32,
    ) -> Result<Vec<DeliveryRecord>, StoreError>;
    /// Claims up to `limit` confirmation messages due at `now` under a lease until
    /// `lease_until`, each with a new code.
    async fn claim_confirmation_mails(
        &self,
        now: Millis,
        lease_until: Millis,
        limit: u32,
    ) -> Result<Vec<ConfirmationMail>, StoreError>;
    /// Stores how sending a confirmation message ended, when this claim still holds it (another
    /// claim since, or a code confirmed meanwhile, leaves it to them).
    async fn finish_confirmation_mail(
        &self,
        mail: &ConfirmationMail,
        outcome: &DeliveryOutcome,
    ) -> Result<(), StoreError>;
}
