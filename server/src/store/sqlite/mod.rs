//! The [`Store`] on one SQLite file: WAL journal, one writer connection (SQLite takes one writer
//! at a time anyway, and a single connection keeps writers from waiting on each other's locks)
//! and a small pool of readers that never block on it. Migrations are embedded in the binary and
//! each runs in a transaction. Other processes (`wachet user add`) may open the same file while
//! the service runs: a busy database is waited for, not failed.
//!
//! The SQL is standard where it can be (row-value keyset comparisons, recursive common table
//! expressions, `ON CONFLICT`), so a PostgreSQL store can follow it closely.

mod deliveries;
mod feeds;
mod folders;
mod history;
mod notifications;
mod schedule;
mod tasks;
mod users;

use super::{
    AlertStates, CheckRecord, Claim, ConfirmationMail, Delivery, DeliveryOutcome, DeliveryRecord,
    DueCheck, EmailAddress, FeedChange, FeedRecord, FeedScope, FolderKey, FolderListing, Millis,
    NewNotification, Quotas, Series, StorageUse, Store, StoreError, TimeKey, TimePage, TokenRecord,
    UserRecord,
};
use async_trait::async_trait;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use std::path::Path;
use std::time::Duration;
use wachet::model::{
    ClientAlertContentResponse, ClientData, ClientNotification, ClientPage, Folder, Monitor,
    MoveRequest, NotificationEndpoint,
};

/// How long a call waits for another connection's (or process's) write lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);
/// Reader connections.
const READERS: u32 = 4;

/// The migrations, embedded at build time.
static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// Opening the database failed.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The file could not be opened or created.
    #[error("cannot open the database {path}: {reason}")]
    Open {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
    /// The database was written by a newer wachet.
    #[error(
        "the database {path} has schema version {found}, newer than this wachet knows (up to \
         {known}): run a newer wachet on it"
    )]
    TooNew {
        /// The file.
        path: String,
        /// The version found.
        found: i64,
        /// The newest version this binary has.
        known: i64,
    },
    /// A migration failed; the database is as it was before it.
    #[error("cannot migrate the database {path}: {reason}")]
    Migrate {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
}

/// How many entries each series keeps unless told otherwise.
pub const DEFAULT_HISTORY_RETENTION: u32 = 10_000;

/// Deliveries per user and hour unless told otherwise: more than a personal server sends.
pub const DEFAULT_DELIVERIES_PER_HOUR: u32 = 1_000;

/// Settings of a [`SqliteStore`].
#[derive(Debug, Clone)]
pub struct StoreSettings {
    /// Entries kept in each series (a monitor's own history, each crawled page's): a check
    /// beyond it prunes the oldest. At least 1.
    pub history_retention: u32,
    /// Notification deliveries released per user in any hour; more wait, pending, until the
    /// hour has room (0: no limit).
    pub deliveries_per_hour: u32,
    /// What one user may keep.
    pub quotas: Quotas,
}

impl Default for StoreSettings {
    fn default() -> Self {
        StoreSettings {
            history_retention: DEFAULT_HISTORY_RETENTION,
            deliveries_per_hour: DEFAULT_DELIVERIES_PER_HOUR,
            quotas: Quotas::default(),
        }
    }
}

/// The SQLite store. Cheap to clone (the pools are shared).
#[derive(Clone, Debug)]
pub struct SqliteStore {
    writer: SqlitePool,
    reader: SqlitePool,
    history_retention: u32,
    deliveries_per_hour: Option<std::num::NonZeroU32>,
    quotas: Quotas,
}

impl SqliteStore {
    /// Opens (creating if needed) and migrates the database at `path`, with the default
    /// settings.
    pub async fn open(path: &Path) -> Result<SqliteStore, OpenError> {
        SqliteStore::open_with(path, &StoreSettings::default()).await
    }

    /// Opens (creating if needed) and migrates the database at `path`.
    pub async fn open_with(
        path: &Path,
        settings: &StoreSettings,
    ) -> Result<SqliteStore, OpenError> {
        let shown = path.display().to_string();
        private_file(path).map_err(|err| OpenError::Open {
            path: shown.clone(),
            reason: err.to_string(),
        })?;
        let open_err = |err: sqlx::Error| OpenError::Open {
            path: shown.clone(),
            reason: err.to_string(),
        };
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // With WAL, NORMAL loses nothing when the process dies; only a power cut can take
            // the last transactions.
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            .busy_timeout(BUSY_TIMEOUT);
        let writer = SqlitePoolOptions::new()
            .max_connections(1)
            .acquire_timeout(BUSY_TIMEOUT * 3)
            .connect_with(options.clone())
            .await
            .map_err(open_err)?;
        migrate(&writer, &shown).await?;
        let reader = SqlitePoolOptions::new()
            .max_connections(READERS)
            .acquire_timeout(BUSY_TIMEOUT * 3)
            .connect_with(options.read_only(true))
            .await
            .map_err(open_err)?;
        Ok(SqliteStore {
            writer,
            reader,
            history_retention: settings.history_retention.max(1),
            deliveries_per_hour: std::num::NonZeroU32::new(settings.deliveries_per_hour),
            quotas: settings.quotas,
        })
    }

    /// A write transaction that takes the write lock at once (`BEGIN IMMEDIATE`): a deferred
    /// one that reads first can find its snapshot stale when another process (`wachet user
    /// add`) wrote meanwhile, and SQLite fails it instead of waiting.
    async fn write(&self) -> Result<sqlx::Transaction<'static, sqlx::Sqlite>, sqlx::Error> {
        self.writer.begin_with("BEGIN IMMEDIATE").await
    }

    /// Applies the retention to the series of `task` after a write to them. A failure is logged,
    /// not returned: the write itself is stored, and the next one prunes again.
    async fn prune(&self, task: &str) {
        if let Err(err) = history::prune(self, task, self.history_retention).await {
            tracing::warn!(%task, %err, "cannot prune the history");
        }
    }

    /// Closes the pools, checkpointing the WAL.
    pub async fn close(&self) {
        self.reader.close().await;
        self.writer.close().await;
    }
}

/// Makes the database file readable by its owner only (0600), creating it so when it is new,
/// whatever the umask: SQLite gives its -wal and -shm files the mode of the database file, so
/// they follow. An existing file open to others is narrowed, with its -wal and -shm.
fn private_file(path: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
        {
            Ok(_) => return Ok(()),
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(err) => return Err(err),
        }
        for suffix in ["", "-wal", "-shm"] {
            let mut file = path.as_os_str().to_owned();
            file.push(suffix);
            let file = Path::new(&file);
            let Ok(metadata) = std::fs::metadata(file) else {
                continue;
            };
            let open_to_others = metadata.permissions().mode() & 0o077 != 0;
            if open_to_others
                && let Err(err) =
                    std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o600))
            {
                tracing::warn!(file = %file.display(), %err, "cannot make the database private");
            }
        }
    }
    Ok(())
}

async fn migrate(writer: &SqlitePool, path: &str) -> Result<(), OpenError> {
    let known = MIGRATOR.iter().map(|m| m.version).max().unwrap_or(0);
    match MIGRATOR.run(writer).await {
        Ok(()) => Ok(()),
        Err(sqlx::migrate::MigrateError::VersionMissing(found))
        | Err(sqlx::migrate::MigrateError::VersionTooNew(found, _))
            if found > known =>
        {
            Err(OpenError::TooNew {
                path: path.to_string(),
                found,
                known,
            })
        }
        Err(err) => Err(OpenError::Migrate {
            path: path.to_string(),
            reason: err.to_string(),
        }),
    }
}

impl From<sqlx::Error> for StoreError {
    fn from(err: sqlx::Error) -> Self {
        match err {
            sqlx::Error::RowNotFound => StoreError::NotFound,
            other => StoreError::Backend(other.to_string()),
        }
    }
}

/// Deletes the row `id` of `table` if it is the user's (what hangs on it cascades, in this one
/// statement); `NotFound` otherwise.
async fn delete_owned(
    store: &SqliteStore,
    table: &'static str,
    user: &str,
    id: &str,
) -> Result<(), StoreError> {
    if !super::is_id(id) {
        return Err(StoreError::NotFound);
    }
    let deleted = sqlx::query(sqlx::AssertSqlSafe(format!(
        "DELETE FROM {table} WHERE id = ? AND user_id = ?"
    )))
    .bind(id)
    .bind(user)
    .execute(&store.writer)
    .await?;
    if deleted.rows_affected() == 0 {
        return Err(StoreError::NotFound);
    }
    Ok(())
}

/// `true`/`false` as stored.
fn flag(value: bool) -> i64 {
    i64::from(value)
}

/// Lower-cased name for sorting by name; unnamed items sort first, by id (creation order).
fn sort_key(name: Option<&str>) -> String {
    name.unwrap_or("").to_lowercase()
}

fn time(millis: Millis) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::from_timestamp_millis(millis).unwrap_or_default()
}

#[async_trait]
impl Store for SqliteStore {
    async fn paging_secret(&self) -> Result<Vec<u8>, StoreError> {
        users::paging_secret(self).await
    }

    async fn user_count(&self) -> Result<u64, StoreError> {
        users::count(self).await
    }

    async fn create_user(&self, user: &UserRecord) -> Result<(), StoreError> {
        users::create(self, user).await
    }

    async fn user_by_email(&self, email: &str) -> Result<Option<UserRecord>, StoreError> {
        users::by_email(self, email).await
    }

    async fn user_by_id(&self, id: &str) -> Result<Option<UserRecord>, StoreError> {
        users::by_id(self, id).await
    }

    async fn insert_token(&self, token: &TokenRecord) -> Result<(), StoreError> {
        users::insert_token(self, token).await
    }

    async fn token_owner(
        &self,
        hash: &str,
        now: Millis,
    ) -> Result<Option<(String, Millis)>, StoreError> {
        users::token_owner(self, hash, now).await
    }

    async fn session_seen(
        &self,
        hash: &str,
        now: Millis,
    ) -> Result<Option<Option<Millis>>, StoreError> {
        users::session_seen(self, hash, now).await
    }

    async fn touch_session(&self, hash: &str, at: Millis) -> Result<(), StoreError> {
        users::touch_session(self, hash, at).await
    }

    async fn invalidate_tokens(&self, user: &str) -> Result<(), StoreError> {
        users::invalidate_tokens(self, user).await
    }

    async fn delete_token(&self, hash: &str) -> Result<(), StoreError> {
        users::delete_token(self, hash).await
    }

    async fn set_notification_endpoints(
        &self,
        user: &str,
        endpoints: &[NotificationEndpoint],
    ) -> Result<(), StoreError> {
        users::set_notification_endpoints(self, user, endpoints).await
    }

    async fn set_api_key(&self, user: &str, api_key_hash: &str) -> Result<(), StoreError> {
        users::set_api_key(self, user, api_key_hash).await
    }

    async fn set_webhook_secret(&self, user: &str, secret: &str) -> Result<(), StoreError> {
        users::set_webhook_secret(self, user, secret).await
    }

    async fn set_password(
        &self,
        user: &str,
        password_hash: &str,
        keep_token: &str,
    ) -> Result<(), StoreError> {
        users::set_password(self, user, password_hash, keep_token).await
    }

    async fn email_addresses(&self, user: &str) -> Result<Vec<EmailAddress>, StoreError> {
        users::email_addresses(self, user).await
    }

    async fn request_email_confirmation(
        &self,
        user: &str,
        address: &str,
        resend: bool,
    ) -> Result<(), StoreError> {
        users::request_confirmation(self, user, address, resend).await
    }

    async fn confirm_email(
        &self,
        user: &str,
        code_hash: &str,
    ) -> Result<Option<String>, StoreError> {
        users::confirm(self, user, code_hash).await
    }

    async fn claim_confirmation_mails(
        &self,
        now: Millis,
        lease_until: Millis,
        limit: u32,
    ) -> Result<Vec<ConfirmationMail>, StoreError> {
        users::claim_confirmations(self, now, lease_until, limit).await
    }

    async fn finish_confirmation_mail(
        &self,
        mail: &ConfirmationMail,
        outcome: &DeliveryOutcome,
    ) -> Result<(), StoreError> {
        users::finish_confirmation(self, mail, outcome).await
    }

    async fn create_task(&self, user: &str, monitor: &Monitor) -> Result<Monitor, StoreError> {
        tasks::create(self, user, monitor).await
    }

    async fn update_task(&self, user: &str, monitor: &Monitor) -> Result<Monitor, StoreError> {
        tasks::update(self, user, monitor).await
    }

    async fn task(&self, user: &str, id: &str) -> Result<Monitor, StoreError> {
        tasks::get(self, user, id).await
    }

    async fn delete_task(&self, user: &str, id: &str) -> Result<(), StoreError> {
        tasks::delete(self, user, id).await
    }

    async fn search_tasks(
        &self,
        user: &str,
        terms: &[String],
        limit: u32,
    ) -> Result<Vec<Monitor>, StoreError> {
        tasks::search(self, user, terms, limit).await
    }

    async fn task_pages(&self, user: &str, id: &str) -> Result<Vec<ClientPage>, StoreError> {
        tasks::pages(self, user, id).await
    }

    async fn save_folder(&self, user: &str, folder: &Folder) -> Result<Folder, StoreError> {
        folders::save(self, user, folder).await
    }

    async fn delete_folder(&self, user: &str, id: &str) -> Result<(), StoreError> {
        folders::delete(self, user, id).await
    }

    async fn list_folder(
        &self,
        user: &str,
        folder: Option<&str>,
        after: Option<&FolderKey>,
        limit: u32,
    ) -> Result<FolderListing, StoreError> {
        folders::list(self, user, folder, after, limit).await
    }

    async fn move_items(&self, user: &str, request: &MoveRequest) -> Result<(), StoreError> {
        folders::move_items(self, user, request).await
    }

    async fn claim_due(
        &self,
        now: Millis,
        lease_until: Millis,
        claim: &Claim,
    ) -> Result<Vec<DueCheck>, StoreError> {
        schedule::claim_due(self, now, lease_until, claim).await
    }

    async fn renew_lease(&self, task: &str, lease_until: Millis) -> Result<(), StoreError> {
        schedule::renew_lease(self, task, lease_until).await
    }

    async fn finish_check(
        &self,
        task: &str,
        version: Millis,
        next_check_at: Millis,
    ) -> Result<(), StoreError> {
        schedule::finish_check(self, task, version, next_check_at).await
    }

    async fn claim_deliveries(
        &self,
        now: Millis,
        lease_until: Millis,
        limit: u32,
    ) -> Result<Vec<Delivery>, StoreError> {
        deliveries::claim(self, now, lease_until, limit).await
    }

    async fn finish_delivery(&self, id: &str, outcome: &DeliveryOutcome) -> Result<(), StoreError> {
        deliveries::finish(self, id, outcome).await
    }

    async fn delivery_counts(&self) -> Result<Vec<(String, u64)>, StoreError> {
        deliveries::counts(self).await
    }

    async fn delivery_records(
        &self,
        notification: &str,
    ) -> Result<Vec<DeliveryRecord>, StoreError> {
        deliveries::of_notification(self, notification).await
    }

    async fn retry_delivery(
        &self,
        user: &str,
        notification: Option<&str>,
        delivery: &str,
        now: Millis,
    ) -> Result<(), StoreError> {
        deliveries::retry(self, user, notification, delivery, now).await
    }

    async fn queue_test_delivery(
        &self,
        user: &str,
        kind: wachet::model::MessagingServiceType,
        target: &str,
        now: Millis,
        waiting: u32,
    ) -> Result<String, StoreError> {
        deliveries::queue_test(self, user, kind, target, now, waiting).await
    }

    async fn test_deliveries(
        &self,
        user: &str,
        limit: u32,
    ) -> Result<Vec<DeliveryRecord>, StoreError> {
        deliveries::tests_of(self, user, limit).await
    }

    async fn record_check(&self, record: &CheckRecord) -> Result<bool, StoreError> {
        let stored = schedule::record_check(self, record).await?;
        if stored {
            self.prune(&record.task).await;
        }
        Ok(stored)
    }

    async fn collect_garbage(&self, limit: u32) -> Result<u64, StoreError> {
        history::collect_garbage(self, limit).await
    }

    async fn alert_states(&self, task: &str) -> Result<AlertStates, StoreError> {
        history::alert_states(self, task).await
    }

    async fn stored_bytes(&self, task: &str) -> Result<StorageUse, StoreError> {
        let (used,): (i64,) = sqlx::query_as(
            "SELECT u.stored_bytes FROM users u JOIN tasks t ON t.user_id = u.id WHERE t.id = ?",
        )
        .bind(task)
        .fetch_optional(&self.reader)
        .await?
        .ok_or(StoreError::NotFound)?;
        Ok(StorageUse {
            used: used.max(0).unsigned_abs(),
            max: self.quotas.stored_bytes,
        })
    }

    async fn append_entry(&self, series: &Series, data: &ClientData) -> Result<String, StoreError> {
        let id = history::append(self, series, data, self.quotas.stored_bytes).await?;
        let (Series::Task(task) | Series::Page { task_id: task, .. }) = series;
        self.prune(task).await;
        Ok(id)
    }

    async fn entries(
        &self,
        user: &str,
        id: &str,
        page: &TimePage,
    ) -> Result<Vec<(TimeKey, ClientData)>, StoreError> {
        history::list(self, user, id, page).await
    }

    async fn insert_notification(&self, n: &NewNotification) -> Result<String, StoreError> {
        notifications::insert(self, n).await
    }

    async fn notifications(
        &self,
        user: &str,
        task: Option<&str>,
        page: &TimePage,
        with_html: bool,
    ) -> Result<Vec<(TimeKey, ClientNotification)>, StoreError> {
        notifications::list(self, user, task, page, with_html).await
    }

    async fn notification(
        &self,
        user: &str,
        id: &str,
    ) -> Result<ClientAlertContentResponse, StoreError> {
        notifications::get(self, user, id).await
    }

    async fn feeds(&self, user: &str) -> Result<Vec<FeedRecord>, StoreError> {
        feeds::list(self, user).await
    }

    async fn renew_feed(
        &self,
        user: &str,
        scope: &FeedScope,
        secret_hash: &str,
        now: Millis,
    ) -> Result<FeedRecord, StoreError> {
        feeds::renew(self, user, scope, secret_hash, now).await
    }

    async fn delete_feed(&self, user: &str, id: &str) -> Result<(), StoreError> {
        feeds::delete(self, user, id).await
    }

    async fn feed_by_secret(&self, secret_hash: &str) -> Result<Option<FeedRecord>, StoreError> {
        feeds::by_secret(self, secret_hash).await
    }

    async fn feed_changes(
        &self,
        user: &str,
        scope: &FeedScope,
        limit: u32,
    ) -> Result<Vec<FeedChange>, StoreError> {
        feeds::changes(self, user, scope, limit).await
    }
}

/// The upper keyset bound of a newest-first page: rows strictly before `after`, and no later
/// than `to`. One row-value bound (rather than a separate `<= to`) lets the index range start
/// at the page, so a page deep in a long history costs what the first page costs.
fn before_key(page: &TimePage) -> (Millis, String) {
    // Above every stored (time, id) of that time: notification ids are UUIDs, whose characters
    // sort below '~', and entry ids are integers, which SQLite sorts below any text.
    let to = (page.to.unwrap_or(Millis::MAX), "~".to_string());
    match &page.after {
        Some(key) if (key.at, key.id.as_str()) < (to.0, to.1.as_str()) => (key.at, key.id.clone()),
        _ => to,
    }
}
