//! Storage of everything the service keeps, split by resource: users and their tokens
//! ([`UserStore`]), monitors ([`TaskStore`]), folders ([`FolderStore`]), history
//! ([`HistoryStore`]), notifications ([`NotificationStore`]), the scheduler's state
//! ([`ScheduleStore`]), the outbox of deliveries ([`OutboxStore`]), feeds ([`FeedStore`]) and
//! the processes that check and deliver, with the leases they hold ([`WorkerStore`]).
//! Each trait lives with its types in a module of its own; [`Store`] is all of them, for the
//! parts of the service (the API) that reach every resource, while a part that needs one takes
//! only that one (delivery an [`OutboxStore`], garbage collection a [`HistoryStore`]). These
//! traits are the only way the rest of the service reaches the database, so two backends stand
//! behind them without their callers knowing which: [`sqlite::SqliteStore`] (one file, the
//! default) and [`postgres::PgStore`] (a database shared by any number of processes); the
//! contract tests (`tests/service/store/`) run every store test on both.
//! A backend keeps its hot reads in a [`cache::Caches`] of its own, invalidated by its own
//! writes, so no layer wraps it; what only tests write (history and notifications put straight
//! in) is [`testing::Seed`], outside these traits.
//!
//! Every method that takes a `user` answers only with that user's data: another user's id is
//! [`StoreError::NotFound`], exactly like an id that does not exist, and lists leave other
//! users' rows out. Each method that writes does so in one transaction, so no caller ever sees
//! half of a write and a crash loses at most the call in flight; `Err(StoreError::Backend)`
//! means the database failed and nothing was changed. Ids are made by the service
//! ([`new_id`]); times are UTC milliseconds.
//!
//! What both backends share that is not SQL lives once, outside them: the settings they open
//! with and how opening fails ([`settings`]); the columns derived from a request, the mapping
//! of rows to the API's types, quotas and hourly limits, refusals and what each write
//! invalidates in the cache (`shape`); and the Rust around the statements, each trait's
//! implementation written once as a macro both backends instantiate (`both`). A backend's own
//! module holds its connections, transactions and the statements it spells its own way.
//!
//! ## A new backend
//!
//! 1. A module beside `sqlite/` and `postgres/` whose store type implements each resource's
//!    trait ([`UserStore`], [`TaskStore`], [`FolderStore`], [`HistoryStore`],
//!    [`NotificationStore`], [`ScheduleStore`], [`OutboxStore`], [`FeedStore`],
//!    [`WorkerStore`]; [`Store`] then follows), and [`testing::Seed`] for the tests. A SQL
//!    database sqlx speaks instantiates `both`'s macros (its store type offering `reads`,
//!    `writes` and `write`, as `both` says) with the statements it spells its own way; any
//!    other calls `shape` for its derived columns, row mapping, limits, refusals and cache
//!    invalidation, so only the queries are new.
//! 2. An opening function taking [`StoreSettings`] and returning [`OpenError`], which runs
//!    the embedded migrations of a folder of its own (`server/migrations/<backend>/`, one
//!    schema equal to the others') through [`settings::migrate`].
//! 3. An arm for it in the tests' `both!` macro (`tests/service/main.rs`), in the test
//!    support's `Database::open` and in the store tests' `store::on`, so every contract and
//!    API test runs on it too, and in `wachet serve`'s choice of store by `--db`.

pub(crate) mod both;
pub mod cache;
pub mod codec;
pub mod feeds;
pub mod folders;
pub mod gc;
pub mod health;
pub mod history;
pub mod noise;
pub mod notifications;
pub mod outbox;
pub mod postgres;
pub mod schedule;
pub mod settings;
pub(crate) mod shape;
pub mod sqlite;
pub mod tasks;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod to_postgres;
pub mod users;
pub mod workers;

pub use feeds::{FeedChange, FeedRecord, FeedScope, FeedSecret, FeedStore};
pub use folders::{FolderKey, FolderListing, FolderStore};
pub use health::{HealthStore, NotReady};
pub use history::{HistoryStore, Series};
pub use notifications::{ChangeData, Explanation, Facts, NewNotification, NotificationStore};
/// `HH:MM` as a time of day, as digests and quiet hours read it.
pub fn shape_clock(text: &str) -> Option<chrono::NaiveTime> {
    shape::outbox::clock(text)
}

pub use outbox::{
    ConfirmationMail, DIGEST_ITEMS, DIGEST_VALUE_CHARS, Delivery, DeliveryOutcome, DeliveryRecord,
    DigestItem, OutboxStore, Rendered, Template,
};
pub use schedule::{
    AlertStates, BusyHosts, CheckRecord, Claim, DueCheck, Known, Locations, Recorded,
    ScheduleStore, StorageUse,
};
pub use settings::{OpenError, StoreSettings};
pub use tasks::TaskStore;
pub use users::{
    EmailAddress, ROTATION_PAGE, Reseal, Rotation, SealedIn, TokenRecord, UserRecord, UserStore,
};
pub use workers::{
    Beat, HOST_BUCKETS, Held, Holdings, HostBuckets, LiveWorker, Lost, WorkerInfo, WorkerStore,
    host_bucket, host_hash,
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
    /// A write that ran at the same moment on the same rows made the database end this one
    /// (a deadlock or a serialization failure, PostgreSQL's `40P01` and `40001`); nothing of
    /// it was stored, and the same call made again may succeed. PostgreSQL's writes of a
    /// user's monitors and folders are run again a few times before they return this; a group
    /// of checks is stored check by check instead.
    #[error("database conflict: {0}")]
    Conflict(String),
    /// The database failed (I/O, corruption, a lock held too long). Not the client's fault.
    #[error("database: {0}")]
    Backend(String),
    /// The database cannot be written or reached for now (a full disk, an I/O error, a lock
    /// held past the busy timeout, a lost connection: [`health::unavailable`]); nothing of the
    /// call was stored, and it will fail the same until the cause goes away.
    #[error("database unavailable: {0}")]
    Unavailable(String),
}

impl From<sqlx::Error> for StoreError {
    fn from(err: sqlx::Error) -> Self {
        const DEADLOCK: &str = "40P01";
        const SERIALIZATION: &str = "40001";
        let code = err.as_database_error().and_then(|db| db.code());
        match err {
            sqlx::Error::RowNotFound => StoreError::NotFound,
            _ if matches!(code.as_deref(), Some(DEADLOCK | SERIALIZATION)) => {
                StoreError::Conflict(err.to_string())
            }
            _ if health::unavailable(&err) => StoreError::Unavailable(err.to_string()),
            other => StoreError::Backend(other.to_string()),
        }
    }
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

/// Why `adding` more monitors to a user who has `have` would pass the quota of `max`, if so.
pub(crate) fn over_quota(have: i64, adding: usize, max: u64) -> Option<String> {
    let have = have.unsigned_abs();
    let adding = u64::try_from(adding).unwrap_or(u64::MAX);
    (have.saturating_add(adding) > max).then(|| match adding {
        1 => format!(
            "you have {have} monitors, the most this server allows a user ({max}); delete one to \
             create another"
        ),
        _ => format!(
            "you have {have} monitors and {adding} more would pass the most this server allows a \
             user ({max})"
        ),
    })
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

/// The whole store: every resource. Whatever implements each resource's trait is a `Store`,
/// so a backend implements the parts and gets the whole.
pub trait Store:
    UserStore
    + TaskStore
    + FolderStore
    + HistoryStore
    + NotificationStore
    + ScheduleStore
    + OutboxStore
    + FeedStore
    + WorkerStore
    + HealthStore
{
}

impl<S> Store for S where
    S: UserStore
        + TaskStore
        + FolderStore
        + HistoryStore
        + NotificationStore
        + ScheduleStore
        + OutboxStore
        + FeedStore
        + WorkerStore
        + HealthStore
{
}
