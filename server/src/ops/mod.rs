//! What the service does for a user, once for every frontend: the REST API ([`crate::api`]),
//! the web interface ([`crate::web`]) and the command line ([`crate::cli`]) turn their input
//! into calls of these operations and their results into JSON, pages or lines. An operation
//! knows nothing of HTTP, HTML or JSON framing: it takes the shared [`Ctx`], the user it acts
//! for and a typed input, validates it ([`rules`], [`limits`]), calls the store, and answers
//! with a value or an [`OpError`] that names what went wrong. Each frontend maps that error to
//! its own answer (problem+json, a page, a message and an exit code).
//!
//! One module a resource: [`monitors`], [`folders`], [`account`], [`endpoints`], [`feeds`],
//! [`notifications`], [`history`], the user's own settings ([`user_settings`]), and moving a user's monitors in and out ([`transfer`]). The rule the layering test below checks: the frontends never
//! import each other and never call the store; only these operations do.

pub mod account;
pub mod endpoints;
pub mod feeds;
pub mod folders;
pub mod history;
pub mod keys;
pub mod limits;
pub(crate) mod locations;
pub mod monitors;
pub mod notifications;
pub mod paging;
pub mod query;
pub mod rules;
pub mod settings;
pub mod steps;
pub mod transfer;
pub mod user_settings;

use crate::store::{Store, StoreError};
use std::collections::BTreeMap;
use std::sync::Arc;
use wachet::Checker;
use wachet::validate::FieldError;

pub use settings::{Settings, WebSettings};

/// The id of the user an operation acts for; every operation answers only with that user's
/// data, and another user's id is [`OpError::NotFound`] as an unknown one is.
pub type UserId = str;

/// What went wrong in an operation, for each frontend to answer in its own way.
#[derive(Debug, thiserror::Error)]
pub enum OpError {
    /// The input fails validation: a summary, and each bad field's path with its messages.
    #[error("{detail}")]
    Invalid {
        /// Summary.
        detail: String,
        /// Field path -> messages.
        errors: BTreeMap<String, Vec<String>>,
    },
    /// No such thing for this user (also what belongs to someone else).
    #[error("no such resource")]
    NotFound,
    /// Storing it would pass the user's quota `limit`.
    #[error("{message}")]
    Quota {
        /// The limit passed (the field the API names).
        limit: String,
        /// What the user is told.
        message: String,
    },
    /// Over a rate limit; retry after this many seconds.
    #[error("too many attempts; retry in {0} s")]
    TooMany(u64),
    /// The credentials given do not sign in (the reason is for the log and the API's detail).
    #[error("{0}")]
    Unauthorized(&'static str),
    /// The work could not be done now; retry after `retry_after` seconds.
    #[error("{detail}")]
    Unavailable {
        /// What the user is told.
        detail: String,
        /// Seconds to wait.
        retry_after: u64,
    },
    /// Something failed on the server; the detail is for the log, never for the user.
    #[error("internal error: {0}")]
    Internal(String),
}

impl OpError {
    /// Invalid input in one field.
    pub fn field(field: impl Into<String>, message: impl Into<String>) -> Self {
        let mut errors = BTreeMap::new();
        errors.insert(field.into(), vec![message.into()]);
        OpError::Invalid {
            detail: "the request has invalid fields".into(),
            errors,
        }
    }

    /// Invalid input in several fields.
    pub fn fields(list: Vec<FieldError>) -> Self {
        let mut errors: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for e in list {
            errors.entry(e.field).or_default().push(e.message);
        }
        OpError::Invalid {
            detail: "the request has invalid fields".into(),
            errors,
        }
    }

    /// What an invalid input says first, for a frontend that shows one sentence: its first
    /// field message, else its summary.
    pub fn first_message(&self) -> String {
        match self {
            OpError::Invalid { detail, errors } => errors
                .values()
                .flatten()
                .next()
                .cloned()
                .unwrap_or_else(|| detail.clone()),
            other => other.to_string(),
        }
    }
}

impl From<StoreError> for OpError {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::NotFound => OpError::NotFound,
            StoreError::Invalid { field, message } => OpError::field(field, message),
            StoreError::QuotaExceeded { limit, message } => OpError::Quota { limit, message },
            StoreError::Conflict(detail) => {
                tracing::warn!(%detail, "a write kept meeting concurrent writes");
                OpError::Unavailable {
                    detail: "other changes were being saved at the same moment; try again".into(),
                    retry_after: 1,
                }
            }
            StoreError::Backend(detail) => OpError::Internal(detail),
            unavailable @ StoreError::Unavailable(_) => {
                crate::store::health::outage(&unavailable, "a request");
                OpError::Unavailable {
                    detail: "the database cannot be written or reached now; try again later".into(),
                    retry_after: 30,
                }
            }
        }
    }
}

/// What every operation shares: the store, the engine, the settings and the service's running
/// parts the operations reach (limits, paging tokens, sealed secrets, check announcements, the
/// browser's tabs). Cheap to clone.
#[derive(Clone)]
pub struct Ctx {
    inner: Arc<Inner>,
}

struct Inner {
    store: Arc<dyn Store>,
    checker: Arc<dyn Checker>,
    settings: Settings,
    cursors: paging::Cursors,
    /// Seals the secrets shown again (feed keys, notification URLs) with a key derived from the
    /// same secret.
    sealer: Arc<crate::secrets::Sealer>,
    limits: limits::Limits,
    /// Turns to compile monitors on the blocking pool: half the cores, so validations never
    /// take every core from the requests of others.
    validations: Arc<tokio::sync::Semaphore>,
    /// The scheduler's announcements of stored checks (the web interface's live updates).
    checks: crate::schedule::events::CheckEvents,
    /// Turns true when the service stops: long-lived responses end then.
    stopping: tokio::sync::watch::Receiver<bool>,
    /// The browser tabs rendering for each user (the scheduler's checks and the interface's
    /// previews and picks).
    tabs: Arc<crate::tabs::BrowserTabs>,
}

/// The running parts of the service a [`Ctx`] reaches.
pub struct Shared {
    /// Where the scheduler announces the checks it stores.
    pub checks: crate::schedule::events::CheckEvents,
    /// Turns true when the service stops.
    pub stopping: tokio::sync::watch::Receiver<bool>,
    /// The browser tabs rendering for each user, which the interface's renders take too.
    pub tabs: Arc<crate::tabs::BrowserTabs>,
}

impl Ctx {
    /// The context over `store` and `checker`; fails when the store cannot give the paging
    /// secret (or it makes no key).
    pub async fn new(
        store: Arc<dyn Store>,
        checker: Arc<dyn Checker>,
        settings: Settings,
        shared: Shared,
    ) -> Result<Self, String> {
        let secret = store.paging_secret().await.map_err(|err| err.to_string())?;
        let cursors = paging::Cursors::new(&secret)?;
        let sealer = Arc::new(crate::secrets::Sealer::new(&secret)?);
        Ok(Ctx {
            inner: Arc::new(Inner {
                store,
                checker,
                limits: limits::Limits::new(settings.limits),
                settings,
                cursors,
                sealer,
                validations: Arc::new(tokio::sync::Semaphore::new(
                    std::thread::available_parallelism().map_or(1, |n| (n.get() / 2).max(1)),
                )),
                checks: shared.checks,
                stopping: shared.stopping,
                tabs: shared.tabs,
            }),
        })
    }

    /// The store. Only operations call it; the frontends reach data through them.
    pub(crate) fn store(&self) -> &dyn Store {
        self.inner.store.as_ref()
    }

    /// The rate limits and login turns.
    pub(crate) fn limits(&self) -> &limits::Limits {
        &self.inner.limits
    }

    /// The settings of the service's frontends.
    pub(crate) fn settings(&self) -> &Settings {
        &self.inner.settings
    }

    /// The engine (validation; the web interface's preview and picker run it too).
    pub(crate) fn checker(&self) -> &Arc<dyn Checker> {
        &self.inner.checker
    }

    /// The continuation tokens of lists.
    pub(crate) fn cursors(&self) -> &paging::Cursors {
        &self.inner.cursors
    }

    /// Seals and opens the secrets the service shows again (feed keys) and the secret parts of
    /// notification URLs (the key delivery opens them with is made from the same secret).
    pub(crate) fn sealer(&self) -> &Arc<crate::secrets::Sealer> {
        &self.inner.sealer
    }

    /// The scheduler's announcements of stored checks.
    pub(crate) fn checks(&self) -> &crate::schedule::events::CheckEvents {
        &self.inner.checks
    }

    /// Turns true when the service stops.
    pub(crate) fn stopping(&self) -> tokio::sync::watch::Receiver<bool> {
        self.inner.stopping.clone()
    }

    /// The browser tabs rendering for each user.
    pub(crate) fn browser_tabs(&self) -> &Arc<crate::tabs::BrowserTabs> {
        &self.inner.tabs
    }

    /// Turns to validate monitors on the blocking pool.
    fn validations(&self) -> &Arc<tokio::sync::Semaphore> {
        &self.inner.validations
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    /// The Rust files under `dir` of this crate's `src/`, with their code lines before their
    /// tests (comments dropped: a doc may name what the code must not call).
    fn code_of(dir: &str) -> Vec<(PathBuf, Vec<String>)> {
        fn walk(dir: &Path, found: &mut Vec<PathBuf>) {
            let Ok(entries) = std::fs::read_dir(dir) else {
                return;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                if path.is_dir() {
                    walk(&path, found);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    found.push(path);
                }
            }
        }
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(dir);
        let mut files = Vec::new();
        walk(&root, &mut files);
        assert!(!files.is_empty(), "no Rust files under {}", root.display());
        files
            .into_iter()
            .map(|path| {
                let text = std::fs::read_to_string(&path).unwrap();
                // A file's tests may reach anything: read up to them.
                let lines = text
                    .lines()
                    .take_while(|line| !line.starts_with("#[cfg(test)]"))
                    .map(|line| line.split("//").next().unwrap_or("").to_string())
                    .collect();
                (path, lines)
            })
            .collect()
    }

    /// Where any of `needles` stands in the code of the files under `dir`.
    fn uses(dir: &str, needles: &[&str]) -> Vec<String> {
        let mut found = Vec::new();
        for (path, lines) in code_of(dir) {
            for (n, line) in lines.iter().enumerate() {
                if let Some(needle) = needles.iter().find(|needle| line.contains(*needle)) {
                    found.push(format!("{}:{}: {needle}", path.display(), n + 1));
                }
            }
        }
        found
    }

    /// The frontends are adapters over the operations: the API and the web interface never
    /// import each other, never reach the store themselves (only the operations call it), the
    /// operations know neither frontend nor HTTP, and only `http.rs` composes the two.
    #[test]
    fn frontends_reach_data_only_through_the_operations() {
        let store_calls = [
            ".store()",
            "dyn Store",
            "StoreError",
            "UserStore",
            "TaskStore",
            "FolderStore",
            "HistoryStore",
            "NotificationStore",
            "OutboxStore",
            "FeedStore",
            "ScheduleStore",
        ];
        let mut wrong = uses("web", &["crate::api", "super::api", "wachet_server::api"]);
        wrong.extend(uses(
            "api",
            &["crate::web", "super::web", "wachet_server::web"],
        ));
        wrong.extend(uses("web", &store_calls));
        wrong.extend(uses("api", &store_calls));
        // The operations know no frontend.
        wrong.extend(uses(
            "ops",
            &["crate::api", "crate::web", "crate::http", "axum::"],
        ));
        assert!(
            wrong.is_empty(),
            "against the layering:\n{}",
            wrong.join("\n")
        );
        // Only the router's module knows both frontends.
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut both = Vec::new();
        for dir in ["cli", "ops", "notify", "schedule", "store"] {
            for (path, lines) in code_of(dir) {
                let text = lines.join("\n");
                if text.contains("crate::api") && text.contains("crate::web") {
                    both.push(path.display().to_string());
                }
            }
        }
        for entry in std::fs::read_dir(&root).unwrap().flatten() {
            let path = entry.path();
            if path.is_file() && path.file_name().is_some_and(|n| n != "http.rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                if text.contains("crate::api::") && text.contains("crate::web::") {
                    both.push(path.display().to_string());
                }
            }
        }
        assert!(
            both.is_empty(),
            "only http.rs imports both frontends: {both:?}"
        );
    }
}
