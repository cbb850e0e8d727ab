//! Storage of everything the service keeps: users and their tokens, monitors, folders, history
//! and notifications. The [`Store`] trait is the only way the rest of the service reaches the
//! database, so a PostgreSQL implementation can stand beside [`sqlite::SqliteStore`] without
//! touching the API handlers.
//!
//! Every method that takes a `user` answers only with that user's data: another user's id is
//! [`StoreError::NotFound`], exactly like an id that does not exist, and lists leave other
//! users' rows out. Ids are made by the service ([`new_id`]); times are UTC milliseconds.

pub mod cache;
pub mod gc;
pub mod noise;
pub mod sqlite;

use async_trait::async_trait;
use wachet::model::{
    Alert, ClientAlertContentResponse, ClientData, ClientNotification, ClientPage, Folder, JobType,
    Monitor, MoveRequest, NotificationEndpoint,
};

/// UTC milliseconds since the Unix epoch.
pub type Millis = i64;

/// The current time in UTC milliseconds.
pub fn now_millis() -> Millis {
    chrono::Utc::now().timestamp_millis()
}

/// A new id: a UUIDv7, so ids made later sort later and land at the end of indexes.
pub fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// Whether `id` could be an id this service made. Anything else cannot name a stored row, so
/// callers answer "not found" without asking the database (and a 10,000-character id costs
/// nothing).
pub fn is_id(id: &str) -> bool {
    id.len() == 36 && uuid::Uuid::parse_str(id).is_ok()
}

/// Why a store call failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The id does not exist, or belongs to another user.
    #[error("not found")]
    NotFound,
    /// The request names something that does not fit: a parent folder that does not exist, a
    /// move into a folder's own subtree, an e-mail address already taken. `field` is the JSON
    /// field to blame.
    #[error("{field}: {message}")]
    Invalid {
        /// The request field, such as `parentId`.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// The user has reached one of the server's quotas ([`Quotas`]); `limit` names it (such
    /// as `maxMonitorsPerUser`) and `message` says where the user stands.
    #[error("{limit}: {message}")]
    QuotaExceeded {
        /// The quota, as the setting's name in camelCase.
        limit: String,
        /// What the user has and what the server allows.
        message: String,
    },
    /// The database failed (I/O, corruption, a lock held too long). Not the client's fault.
    #[error("database: {0}")]
    Backend(String),
}

impl StoreError {
    /// An [`StoreError::Invalid`] for `field`.
    pub fn invalid(field: &str, message: impl Into<String>) -> Self {
        StoreError::Invalid {
            field: field.to_string(),
            message: message.into(),
        }
    }
}

/// What one user may keep: limits a personal server never reaches by default, so that on a
/// shared server one user cannot fill the disk or flood the outbox for everyone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quotas {
    /// Monitors a user may have (paused ones count).
    pub monitors: u64,
    /// Bytes a user's history may take: each distinct value of a monitor at its stored size,
    /// plus 160 bytes and the error text of each entry. A new value that would pass it is not
    /// kept: the entry records an error saying so.
    pub stored_bytes: u64,
    /// Notifications a user's monitors may raise in any hour. Beyond it one notification says
    /// how many alerts were not sent; the rest of that hour's alerts are left out.
    pub notifications_per_hour: u32,
}

impl Default for Quotas {
    fn default() -> Self {
        Quotas {
            monitors: 10_000,
            stored_bytes: 1 << 30,
            notifications_per_hour: 1_000,
        }
    }
}

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

/// A confirmation message to send, claimed by [`Store::claim_confirmation_mails`]. Its `Debug`
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

impl std::fmt::Debug for ConfirmationMail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConfirmationMail")
            .field("user_id", &self.user_id)
            .field("address", &self.address)
            .finish_non_exhaustive()
    }
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

/// The position of an entry in a time-ordered list (history, notifications): lists run newest
/// first, and the next page starts after the last key returned.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TimeKey {
    /// The entry's time.
    pub at: Millis,
    /// The entry's id, which orders entries of the same time.
    pub id: String,
}

/// One page of a time-ordered list: entries in `[from, to]`, older than `after`, at most
/// `limit` of them. Implementations return up to `limit + 1` entries so the caller knows
/// whether more exist.
#[derive(Debug, Clone, Default)]
pub struct TimePage {
    /// Oldest time included.
    pub from: Option<Millis>,
    /// Newest time included.
    pub to: Option<Millis>,
    /// The last key of the previous page.
    pub after: Option<TimeKey>,
    /// Entries asked for.
    pub limit: u32,
}

/// The position in a folder listing: subfolders by name, then monitors by name.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FolderKey {
    /// Whether the position is among the monitors (all subfolders were listed).
    pub in_tasks: bool,
    /// The lower-cased name of the last item listed.
    pub sort_key: String,
    /// Its id.
    pub id: String,
}

/// One page of a folder listing.
#[derive(Debug, Clone, Default)]
pub struct FolderListing {
    /// Subfolders with their recursive counts.
    pub subfolders: Vec<Folder>,
    /// Monitors with their latest data.
    pub tasks: Vec<Monitor>,
    /// From the root's child down to the listed folder (empty for the root).
    pub path: Vec<Folder>,
    /// Where the next page starts, when more items exist.
    pub next: Option<FolderKey>,
}

/// Where a history entry belongs.
#[derive(Debug, Clone)]
pub enum Series {
    /// A monitor's own history.
    Task(String),
    /// A page crawled by a Portal monitor, named by its URL (created on first use).
    Page {
        /// The Portal monitor.
        task_id: String,
        /// The page's URL.
        url: String,
        /// The page's title, when it has one.
        name: Option<String>,
    },
}

/// A notification to store.
#[derive(Debug, Clone)]
pub struct NewNotification {
    /// The monitor whose alert fired.
    pub task_id: String,
    /// The page it speaks of (JobType PortalPage), by URL.
    pub page_url: Option<String>,
    /// Monitor, Portal or page.
    pub job_type: JobType,
    /// The alert that fired.
    pub alert: Alert,
    /// When it was raised.
    pub created_at: Millis,
    /// The current value.
    pub current: Option<String>,
    /// The previous value or the comparison value.
    pub comparand: Option<String>,
    /// The check's error.
    pub error: Option<String>,
    /// The page's URL.
    pub url: Option<String>,
    /// One-line description, such as `content changed`.
    pub synthetic_expression: String,
    /// The content as HTML (endpoint 5, the e-mail body).
    pub html: String,
    /// Where it goes: the monitor's endpoints, or (when empty) every endpoint of the user.
    pub endpoints: Vec<NotificationEndpoint>,
    /// What its deliveries carry beside it (first seen, the change as data, plain text).
    pub explanation: Option<crate::notify::Explanation>,
}

impl NewNotification {
    /// The notification that stands for `held` alerts left out because the user's monitors
    /// reached `limit` notifications in an hour: it goes where this one would have gone, so
    /// the user learns that alerts are missing instead of missing them silently.
    pub fn held(mut self, held: usize, limit: u32) -> NewNotification {
        let expression = format!(
            "{held} alert(s) not sent: your monitors raised {limit} notifications in the last \
             hour, the most this server sends a user in an hour"
        );
        self.html = format!(
            "<p>{expression}. Further alerts are left out until the hour has passed; every \
             check is still recorded in the monitors' history.</p>"
        );
        self.synthetic_expression = expression;
        self.current = None;
        self.comparand = None;
        self.error = None;
        self.explanation = None;
        self
    }
}

/// A delivery of a notification to one endpoint, claimed by [`Store::claim_deliveries`].
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
    /// The notification.
    pub notification: ClientNotification,
    /// The alert that fired.
    pub alert: Alert,
    /// The key of the webhook signature: the user's webhook secret.
    pub secret: String,
    /// The notification's content as HTML (the e-mail body).
    pub html: String,
    /// What fired, such as `content changed` (the e-mail subject).
    pub synthetic_expression: String,
    /// What the notification carries beside it: the webhook's `firstSeen` and `change`, the
    /// e-mail's plain text. `None` for test notifications and those stored before it existed.
    pub explanation: Option<crate::notify::Explanation>,
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

/// What a feed follows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FeedScope {
    /// Every monitor of the user.
    All,
    /// The monitors of a folder and of its subfolders.
    Folder(String),
    /// One monitor.
    Monitor(String),
}

/// A feed as stored (its secret only as a hash).
#[derive(Debug, Clone)]
pub struct FeedRecord {
    /// The feed's id.
    pub id: String,
    /// Whose changes it shows.
    pub user_id: String,
    /// What it follows.
    pub scope: FeedScope,
    /// The folder's or monitor's name (`None` for [`FeedScope::All`] or an unnamed one).
    pub name: Option<String>,
    /// When its secret was made.
    pub created_at: Millis,
}

/// One change of a monitor's value, for a feed: the entry that changed it and the value before.
#[derive(Debug, Clone)]
pub struct FeedChange {
    /// The monitor.
    pub task_id: String,
    /// Its name, if it has one.
    pub task_name: Option<String>,
    /// Its URL.
    pub url: String,
    /// The entry's key (check time and id), as the history names it.
    pub key: TimeKey,
    /// The value before the change.
    pub previous: String,
    /// The value after it.
    pub current: String,
}

/// What [`Store::claim_due`] may take.
#[derive(Debug, Clone, Copy)]
pub struct Claim {
    /// Monitors to claim at most (the caller's free slots).
    pub limit: u32,
    /// The slots shared out among the users: each user may hold `max(1, share / active
    /// users)` checks in flight.
    pub share: u32,
    /// Monitors with dynamicContent (rendered in Chromium), else the others.
    pub browser: bool,
}

/// A monitor claimed for a check by [`Store::claim_due`].
#[derive(Debug, Clone)]
pub struct DueCheck {
    /// The monitor as it is now (id, folder and definition; no latest data).
    pub monitor: Monitor,
    /// Its owner.
    pub user: String,
    /// When it was due.
    pub due_at: Millis,
    /// The version of its definition (the time it was last written); a check of an older
    /// version does not move the schedule of the newer one.
    pub version: Millis,
    /// Whether this check also takes quick samples of the value to learn its noise (a new
    /// SinglePage monitor, or one whose selection changed: [`noise`]), until one succeeds.
    pub sample_noise: bool,
}

/// Everything one check of a claimed monitor leaves, stored by [`Store::record_check`].
#[derive(Debug, Clone)]
pub struct CheckRecord {
    /// The monitor.
    pub task: String,
    /// The version of the definition that was checked ([`DueCheck::version`]).
    pub version: Millis,
    /// The monitor's own result.
    pub own: ClientData,
    /// For a Portal check: each crawled page's URL, name (its title, when it has one) and
    /// result.
    pub pages: Vec<(String, Option<String>, ClientData)>,
    /// The notifications its alerts raised.
    pub notifications: Vec<NewNotification>,
    /// The alert states that changed with this check: the monitor's own (`None`) or a crawled
    /// page's (its URL), each the state to keep or `None` to forget it (a monitor without
    /// alerts keeps none: should it get alerts later, they start from its history).
    pub alert_states: Vec<(
        Option<String>,
        Option<wachet::alerts::confirm::ConfirmState>,
    )>,
    /// When it is next due.
    pub next_check_at: Millis,
    /// Noise masks learned with this check (from its quick samples or from the checks before
    /// it), appended to the monitor's `noise` by [`noise::with_learned`].
    pub learned: Vec<wachet::model::NoiseMask>,
    /// A line order learned from the quick samples (their lines were the same, shuffled),
    /// stored as the monitor's `compareLines` when it has none.
    pub learned_order: Option<wachet::model::LineOrder>,
    /// Whether the quick samples [`DueCheck::sample_noise`] asked for were taken: no more are.
    pub sampled: bool,
    /// What the monitor's noise has to tell a person after this check (its `noiseNotice`):
    /// masks that cover the whole value, or a value with no stable part.
    pub noise_notice: Option<String>,
}

/// What a user's history takes, against the quota ([`Store::stored_bytes`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StorageUse {
    /// Bytes it takes now.
    pub used: u64,
    /// Bytes it may take.
    pub max: u64,
}

impl StorageUse {
    /// Why a new value of `size` bytes is not kept, when it would pass the quota.
    pub fn refuses(&self, size: u64) -> Option<String> {
        (self.used.saturating_add(size) > self.max).then(|| {
            format!(
                "the value ({size} bytes) was not stored: your history holds {} bytes of the \
                 {} bytes this server keeps per user; delete monitors to make room",
                self.used, self.max
            )
        })
    }
}

/// The alert states of a monitor and of its crawled pages (see [`Store::alert_states`]).
#[derive(Debug, Clone, Default)]
pub struct AlertStates {
    /// The monitor's own value.
    pub own: wachet::alerts::confirm::ConfirmState,
    /// Each crawled page, by URL.
    pub pages: std::collections::HashMap<String, wachet::alerts::confirm::ConfirmState>,
}

/// The service's storage. See the module docs for the rules every method follows.
///
/// Each method that writes does so in one transaction, so no caller ever sees half of a write and
/// a crash loses at most the call in flight. `Err(StoreError::Backend)` means the database
/// failed and nothing was changed.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// The secret that signs continuation tokens, made on first use and kept in the database so
    /// every process of the service signs alike.
    async fn paging_secret(&self) -> Result<Vec<u8>, StoreError>;

    // --- users and tokens

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

    // --- account secrets and e-mail addresses

    /// Replaces the SHA-256 of the user's API key; the old key stops working at once.
    async fn set_api_key(&self, user: &str, api_key_hash: &str) -> Result<(), StoreError>;
    /// Replaces the key of the user's webhook signatures (pending deliveries are signed with
    /// the new one).
    async fn set_webhook_secret(&self, user: &str, secret: &str) -> Result<(), StoreError>;
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
    /// Claims up to `limit` confirmation messages due at `now` under a lease until
    /// `lease_until`, each with a new code.
    async fn claim_confirmation_mails(
        &self,
        now: Millis,
        lease_until: Millis,
        limit: u32,
    ) -> Result<Vec<ConfirmationMail>, StoreError>;
    /// Stores how sending a confirmation message ended.
    async fn finish_confirmation_mail(
        &self,
        mail: &ConfirmationMail,
        outcome: &DeliveryOutcome,
    ) -> Result<(), StoreError>;

    // --- monitors

    /// Stores a new monitor (`monitor.id`, `data` and `noiseNotice` are ignored; its noise
    /// masks are the person's: [`noise::on_create`]) in `monitor.folder_id` and returns it with
    /// its new id. `Invalid { field: "folderId" }` when that folder is not the user's.
    async fn create_task(&self, user: &str, monitor: &Monitor) -> Result<Monitor, StoreError>;
    /// Replaces the definition of the monitor `monitor.id`, keeping its history; a null
    /// `folder_id` keeps the folder, and its noise masks follow [`noise::after_edit`] (read and
    /// written in one transaction, so masks learned meanwhile are not lost); when what it
    /// watches changed, its learned masks and what learning remembered go and its next check
    /// takes quick samples again. `NotFound` when the id is not the user's; `Invalid { field:
    /// "noise" }` when the masks kept and given are too many.
    async fn update_task(&self, user: &str, monitor: &Monitor) -> Result<Monitor, StoreError>;
    /// The monitor with its latest data.
    async fn task(&self, user: &str, id: &str) -> Result<Monitor, StoreError>;
    /// Deletes the monitor with its pages, history and notifications.
    async fn delete_task(&self, user: &str, id: &str) -> Result<(), StoreError>;
    /// Monitors where every term is a case-insensitive substring of the name, URL or note; by
    /// name, at most `limit`.
    async fn search_tasks(
        &self,
        user: &str,
        terms: &[String],
        limit: u32,
    ) -> Result<Vec<Monitor>, StoreError>;
    /// The pages of a monitor with their latest data, by URL.
    async fn task_pages(&self, user: &str, id: &str) -> Result<Vec<ClientPage>, StoreError>;

    // --- folders

    /// Creates (no id) or renames and re-parents (id) a folder; counts are ignored on input and
    /// filled on output. `NotFound` for an unknown id; `Invalid { field: "parentId" }` for a
    /// parent that is not the user's or lies inside the folder itself.
    async fn save_folder(&self, user: &str, folder: &Folder) -> Result<Folder, StoreError>;
    /// Deletes the folder, its subfolders and their monitors with all their history and
    /// notifications, in one transaction.
    async fn delete_folder(&self, user: &str, id: &str) -> Result<(), StoreError>;
    /// One page of a folder (`None`: the root): subfolders with recursive counts, then
    /// monitors, each by name, `limit` items at most.
    async fn list_folder(
        &self,
        user: &str,
        folder: Option<&str>,
        after: Option<&FolderKey>,
        limit: u32,
    ) -> Result<FolderListing, StoreError>;
    /// Moves monitors and folders into `request.folder_id` (root when null), all or nothing.
    /// `NotFound` when the target or a moved id is not the user's; `Invalid { field:
    /// "folderIds" }` when a folder would move into itself or its own subtree.
    async fn move_items(&self, user: &str, request: &MoveRequest) -> Result<(), StoreError>;

    // --- schedule

    /// Claims up to `claim.limit` active monitors due at `now` (their next check time has come
    /// and no check holds them) of one kind (`claim.browser`: those with dynamicContent, else
    /// the others), and holds each with a lease until `lease_until`: a check that never
    /// finishes (the process died) frees its monitor when the lease ends. Fair share: no user
    /// is given more than `max(1, claim.share / users with checks due or in flight)` checks in
    /// flight, and users take turns, earliest due first within each user.
    async fn claim_due(
        &self,
        now: Millis,
        lease_until: Millis,
        claim: &Claim,
    ) -> Result<Vec<DueCheck>, StoreError>;
    /// Extends the lease of a check still running, to `lease_until`.
    async fn renew_lease(&self, task: &str, lease_until: Millis) -> Result<(), StoreError>;
    /// Ends the check of a claimed monitor: frees it and, unless its definition changed since
    /// `version` (an update schedules its own first check), sets its next check time.
    /// A monitor deleted meanwhile is no error.
    async fn finish_check(
        &self,
        task: &str,
        version: Millis,
        next_check_at: Millis,
    ) -> Result<(), StoreError>;

    /// Stores a check in one transaction: the pages' entries, the monitor's entry, the
    /// notifications, the next check time, and the lease freed; so a crash leaves all of it or
    /// none, and a notification is never stored twice nor lost. When the definition changed
    /// since `record.version` (an edit during the check), the result belongs to a definition
    /// that no longer exists: nothing is stored but the lease freed, and `Ok(false)` says so.
    /// The oldest entries beyond the store's retention go afterwards, in a transaction of
    /// their own.
    /// `NotFound` when the monitor was deleted.
    async fn record_check(&self, record: &CheckRecord) -> Result<bool, StoreError>;

    /// Claims up to `limit` pending deliveries due at `now` under a lease until `lease_until`
    /// (a delivery in flight when the process dies is tried again after restart).
    async fn claim_deliveries(
        &self,
        now: Millis,
        lease_until: Millis,
        limit: u32,
    ) -> Result<Vec<Delivery>, StoreError>;
    /// Stores how an attempt ended and frees the delivery.
    async fn finish_delivery(&self, id: &str, outcome: &DeliveryOutcome) -> Result<(), StoreError>;
    /// How many deliveries are in each state (`pending`, `delivered`, `failed`), for metrics.
    async fn delivery_counts(&self) -> Result<Vec<(String, u64)>, StoreError>;
    /// The deliveries of a notification, by target.
    async fn delivery_records(&self, notification: &str)
    -> Result<Vec<DeliveryRecord>, StoreError>;
    /// The deliveries of a notification, by target: (target, state, attempts, last error), the
    /// state being `pending`, `delivered` or `failed`.
    async fn deliveries_of(
        &self,
        notification: &str,
    ) -> Result<Vec<(String, String, u32, Option<String>)>, StoreError> {
        Ok(self
            .delivery_records(notification)
            .await?
            .into_iter()
            .map(|d| (d.target, d.state, d.attempts, d.last_error))
            .collect())
    }
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

    /// What the alerts of a monitor know from before its next check, for the monitor itself and
    /// for each page it crawled (by URL): the state the last check stored
    /// ([`CheckRecord::alert_states`]), or where none was stored, the state its history gives
    /// (how its last check ended and its last successful value, taken as confirmed).
    async fn alert_states(&self, task: &str) -> Result<AlertStates, StoreError>;

    /// What the history of the owner of `task` takes and may take ([`Quotas::stored_bytes`]),
    /// read from the counter the writes keep.
    async fn stored_bytes(&self, task: &str) -> Result<StorageUse, StoreError>;

    // --- history

    /// Deletes up to `limit` stored values that no history entry names any more (pruned by the
    /// retention, or left by a deleted monitor or folder), in one transaction, and returns how
    /// many went: fewer than `limit` means none is left for now. Called in a loop by
    /// [`gc::run`], so no transaction grows with the amount of garbage.
    async fn collect_garbage(&self, limit: u32) -> Result<u64, StoreError>;

    /// Appends one check result to a series and, when it is the newest, makes it the monitor's
    /// (or page's) latest data; the oldest entries beyond the store's retention go. The value-changed time is worked out here: the check time when
    /// the value differs from the previous value, else the previous entry's. Returns the
    /// entry's id. `NotFound` when the monitor does not exist (it was deleted meanwhile).
    async fn append_entry(&self, series: &Series, data: &ClientData) -> Result<String, StoreError>;
    /// One page of the history of a monitor or of a crawled page (`id` may be either), newest
    /// first.
    async fn entries(
        &self,
        user: &str,
        id: &str,
        page: &TimePage,
    ) -> Result<Vec<(TimeKey, ClientData)>, StoreError>;

    // --- notifications

    /// Stores a raised notification and returns its id.
    async fn insert_notification(&self, n: &NewNotification) -> Result<String, StoreError>;
    /// One page of the user's notifications (of one monitor, when `task` is given), newest
    /// first; `html` only when `with_html`. `NotFound` when `task` is not the user's.
    async fn notifications(
        &self,
        user: &str,
        task: Option<&str>,
        page: &TimePage,
        with_html: bool,
    ) -> Result<Vec<(TimeKey, ClientNotification)>, StoreError>;
    /// The content of one notification.
    async fn notification(
        &self,
        user: &str,
        id: &str,
    ) -> Result<ClientAlertContentResponse, StoreError>;

    // --- feeds

    /// The user's feeds, the one of all monitors first, then by name.
    async fn feeds(&self, user: &str) -> Result<Vec<FeedRecord>, StoreError>;
    /// Gives the user's feed of `scope` the secret hashing to `secret_hash`, creating the feed
    /// or replacing its old secret (which stops working). `NotFound` when the folder or monitor
    /// is not the user's.
    async fn renew_feed(
        &self,
        user: &str,
        scope: &FeedScope,
        secret_hash: &str,
        now: Millis,
    ) -> Result<FeedRecord, StoreError>;
    /// Deletes the user's feed `id`. `NotFound` when it is not the user's.
    async fn delete_feed(&self, user: &str, id: &str) -> Result<(), StoreError>;
    /// The feed whose secret hashes to `secret_hash`, if any.
    async fn feed_by_secret(&self, secret_hash: &str) -> Result<Option<FeedRecord>, StoreError>;
    /// The latest changes of the monitors `scope` covers, newest first, `limit` at most: the
    /// monitors' own entries whose value differs from the value before (a monitor's first
    /// value is no change).
    async fn feed_changes(
        &self,
        user: &str,
        scope: &FeedScope,
        limit: u32,
    ) -> Result<Vec<FeedChange>, StoreError>;
}
