//! Users and what hangs on them: accounts, bearer tokens and browser sessions, the secrets a
//! user rotates (API key, webhook secret, password), notification endpoints and the
//! confirmation of e-mail addresses; and the service's paging secret, kept beside them.

use super::{Millis, StoreError};
use async_trait::async_trait;
use wachet::model::NotificationEndpoint;

/// A user as stored. The secrets are hashes; the webhook secret is kept as issued because
/// webhook signatures are keyed with it. Its `Debug` shows none of them.
#[derive(Clone)]
pub struct UserRecord {
    /// User id.
    pub id: String,
    /// E-mail address, lower-cased.
    pub email: String,
    /// argon2 PHC string of the password.
    pub password_hash: String,
    /// SHA-256 of the API key, hex.
    pub api_key_hash: String,
    /// Key of the webhook signatures.
    pub webhook_secret: String,
    /// Where notifications of monitors with no endpoints of their own go.
    pub notification_endpoints: Vec<NotificationEndpoint>,
    /// When the user was created.
    pub created_at: Millis,
    /// The IANA name of the time zone the user's times are shown in (`UTC` by default).
    pub time_zone: String,
}

impl std::fmt::Debug for UserRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserRecord")
            .field("id", &self.id)
            .field("email", &self.email)
            .finish_non_exhaustive()
    }
}

/// An e-mail address a user asked notifications to go to (other than the account's own), and
/// whether its owner confirmed it.
#[derive(Debug, Clone)]
pub struct EmailAddress {
    /// The address, lower-cased.
    pub address: String,
    /// Whether the code mailed to it was entered.
    pub confirmed: bool,
    /// Why the last confirmation message could not be sent, if it could not.
    pub last_error: Option<String>,
}

/// A bearer token as stored.
#[derive(Debug, Clone)]
pub struct TokenRecord {
    /// SHA-256 of the token, hex.
    pub hash: String,
    /// Whose token it is.
    pub user_id: String,
    /// When it was issued.
    pub issued_at: Millis,
    /// When it stops working.
    pub expires_at: Millis,
}

/// Where a sealed value of the store is kept, for a rotation of the service's secret to seal it
/// again under the context it was sealed for.
#[derive(Debug, Clone, Copy)]
pub enum SealedIn<'a> {
    /// Text of `user`'s holding `sealed~` parts: a monitor's definition (its steps' secrets,
    /// its notification URLs), a folder's or the account's endpoints, a delivery's URL.
    Text {
        /// The owner.
        user: &'a str,
    },
    /// A feed's sealed key.
    Feed {
        /// The owner.
        user: &'a str,
        /// Which feed.
        scope: &'a super::FeedScope,
    },
    /// The browser session kept for monitor `task`.
    Session {
        /// The monitor.
        task: &'a str,
    },
}

/// Seals a stored value again under a new key: what a rotation of the service's secret asks of
/// each value ([`UserStore::rotate_secret`]), given by the operations, which know the keys.
pub trait Reseal: Send + Sync {
    /// `text`, kept as `place` says, sealed again.
    fn reseal(&self, place: SealedIn<'_>, text: &str) -> crate::secrets::Resealed;
}

/// What a rotation of the service's secret did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rotation {
    /// Sealed values sealed again with the new key.
    pub resealed: u64,
    /// Sealed values that did not open with the old key either, left as they were.
    pub unopened: u64,
}

impl Rotation {
    /// Counts what `done` did to one value.
    pub fn add(&mut self, done: &crate::secrets::Resealed) {
        self.resealed += done.resealed;
        self.unopened += done.unopened;
    }
}

/// Rows read at a time while a rotation walks a table.
pub const ROTATION_PAGE: i64 = 500;

/// The text columns that hold `sealed~` parts, as a rotation walks them: (table, key column,
/// owner column, text column). The feeds' keys and the monitors' sessions are sealed whole and
/// walked apart.
pub(in crate::store) const SEALED_TEXTS: [(&str, &str, &str, &str); 4] = [
    ("tasks", "id", "user_id", "definition"),
    ("folders", "id", "user_id", "notification_endpoints"),
    ("users", "id", "id", "notification_endpoints"),
    ("deliveries", "id", "user_id", "target"),
];

/// What a rotation says when the secret it was asked to replace is no longer the stored one.
pub(in crate::store) fn secret_changed() -> StoreError {
    StoreError::Conflict(
        "the service's secret changed while the rotation ran (another rotation?): run it again"
            .into(),
    )
}

/// Users, their tokens and sessions, their secrets and endpoints, and the confirmation of
/// their e-mail addresses.
///
/// Every method keeps to [the store's rules](super): only the user's own data, each write one
/// transaction.
#[async_trait]
pub trait UserStore: Send + Sync + 'static {
    /// The secret that signs continuation tokens, made on first use and kept in the database so
    /// every process of the service signs alike.
    async fn paging_secret(&self) -> Result<Vec<u8>, StoreError>;
    /// Replaces the service's secret (the paging secret, which the sealing key is made from)
    /// with `new_secret` and every sealed value with what `reseal` makes of it, in one
    /// transaction: a crash or a failure half way leaves the old secret and every value as
    /// sealed with it. `Conflict` (nothing changed) when the secret is no longer `old_secret`
    /// (another rotation ran meanwhile). The values are read a page at a time.
    async fn rotate_secret(
        &self,
        old_secret: &[u8],
        new_secret: &str,
        reseal: &dyn Reseal,
    ) -> Result<Rotation, StoreError>;
    /// How many users exist (the first start creates one when none does).
    async fn user_count(&self) -> Result<u64, StoreError>;
    /// Adds a user. `Invalid { field: "email" }` when the address is taken.
    async fn create_user(&self, user: &UserRecord) -> Result<(), StoreError>;
    /// The user with this (lower-cased) e-mail address, if any.
    async fn user_by_email(&self, email: &str) -> Result<Option<UserRecord>, StoreError>;
    /// The user with this id, if any.
    async fn user_by_id(&self, id: &str) -> Result<Option<UserRecord>, StoreError>;
    /// Stores an issued token (and drops expired ones).
    async fn insert_token(&self, token: &TokenRecord) -> Result<(), StoreError>;
    /// The owner of the token with this hash and when the token expires, if it exists and has
    /// not expired at `now`.
    async fn token_owner(
        &self,
        hash: &str,
        now: Millis,
    ) -> Result<Option<(String, Millis)>, StoreError>;
    /// When the token with this hash was last used by a browser session (`None` inside: never
    /// marked), if it exists and has not expired at `now`.
    async fn session_seen(
        &self,
        hash: &str,
        now: Millis,
    ) -> Result<Option<Option<Millis>>, StoreError>;
    /// Marks the token with this hash as used by a browser session at `at`.
    async fn touch_session(&self, hash: &str, at: Millis) -> Result<(), StoreError>;
    /// Invalidates every token of `user` issued so far.
    async fn invalidate_tokens(&self, user: &str) -> Result<(), StoreError>;
    /// Ends the one token with this hash (a web session's sign-out); nothing if there is none.
    async fn delete_token(&self, hash: &str) -> Result<(), StoreError>;
    /// Replaces the user's own notification endpoints.
    async fn set_notification_endpoints(
        &self,
        user: &str,
        endpoints: &[NotificationEndpoint],
    ) -> Result<(), StoreError>;
    /// Replaces the user's time zone (an IANA name the caller validated).
    async fn set_time_zone(&self, user: &str, time_zone: &str) -> Result<(), StoreError>;
    /// Replaces the SHA-256 of the user's API key; the old key stops working at once.
    async fn set_api_key(&self, user: &str, api_key_hash: &str) -> Result<(), StoreError>;
    /// Replaces the key of the user's webhook signatures (pending deliveries are signed with
    /// the new one).
    async fn set_webhook_secret(&self, user: &str, secret: &str) -> Result<(), StoreError>;
    /// Keeps where the user last logged in to the API from (`https://host[:port]`), the base of
    /// the links in the user's webhook payloads.
    async fn set_login_base(&self, user: &str, base: &str) -> Result<(), StoreError>;
    /// Replaces the user's password hash and ends every token of the user but the one whose
    /// hash is `keep_token`, in one transaction.
    async fn set_password(
        &self,
        user: &str,
        password_hash: &str,
        keep_token: &str,
    ) -> Result<(), StoreError>;
    /// The e-mail addresses the user asked notifications to go to, with their state.
    async fn email_addresses(&self, user: &str) -> Result<Vec<EmailAddress>, StoreError>;
    /// Asks for a confirmation message to `address` (lower-cased) unless it is confirmed or
    /// one went out within the hour (`resend`: then that is an `Invalid { field: "address" }`).
    /// `Invalid { field: "notificationEndpoints" }` when too many addresses of the user wait.
    async fn request_email_confirmation(
        &self,
        user: &str,
        address: &str,
        resend: bool,
    ) -> Result<(), StoreError>;
    /// Confirms the user's address whose last mailed code hashes to `code_hash`; the address,
    /// or `None` when no waiting address has that code.
    async fn confirm_email(
        &self,
        user: &str,
        code_hash: &str,
    ) -> Result<Option<String>, StoreError>;
}
