//! The step recordings open in the interface: each a page open in the browser on the server
//! ([`wachet::render::Recording`]) with the steps recorded so far and the monitor form they
//! came from. Bounded every way: [`PER_USER`] recordings a user may have open (one more is
//! refused, with words saying to close one), [`TOTAL`] in all, each closed after [`IDLE`]
//! without an action (by a sweep every [`SWEEP`], and on every opening), one opening per user
//! at a time. A recording is found only by its random token together with its owner, so
//! another user's token is as unknown as a made-up one. Nothing is written to the database: a
//! restart closes them all.

use crate::web::monitors::form::Fields;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};
use wachet::model::Step;

/// Recordings one user may have open at once.
pub const PER_USER: usize = 2;
/// Recordings open at once in all.
pub const TOTAL: usize = 16;
/// A recording without an action for this long is closed.
pub const IDLE: Duration = Duration::from_secs(10 * 60);
/// How often idle recordings are looked for.
const SWEEP: Duration = Duration::from_secs(30);
/// Most steps a recording holds (as many as a monitor's list takes).
pub const MAX_STEPS: usize = wachet::steps::MAX_STEPS;

/// What a click on the page found and waits for the person to finish: text for a field, an
/// option of a list.
#[derive(Debug, Clone)]
pub struct Pending {
    pub selector: String,
    /// `type` or `select`.
    pub action: &'static str,
    /// A password field: its step is marked secret.
    pub secret: bool,
    /// The field's label, name or placeholder, for the question.
    pub label: String,
    /// A list's options: value and label.
    pub options: Vec<(String, String)>,
}

/// What a recording holds besides its browser tab; changed by one action at a time.
#[derive(Debug, Default)]
pub struct Recorded {
    /// The monitor form the recording was opened from, as posted.
    pub fields: Fields,
    pub steps: Vec<Step>,
    pub pending: Option<Pending>,
    /// The latest screenshot (JPEG) and its number, which changes with every new one.
    pub shot: Option<axum::body::Bytes>,
    /// Its size, the page's pixels.
    pub shot_size: (u32, u32),
    pub shot_number: u64,
    /// The page's address and title when the screenshot was taken.
    pub url: String,
    pub title: String,
    /// What the latest action did, or why it failed.
    pub notice: Option<String>,
    pub error: Option<String>,
    /// The row the latest replay failed at.
    pub failed_row: Option<usize>,
}

/// One open recording.
#[derive(Debug)]
pub struct Record {
    pub user: String,
    pub recording: wachet::render::Recording,
    /// Held while an action runs: a user's second click waits for the first.
    pub state: tokio::sync::Mutex<Recorded>,
    last_used: Mutex<Instant>,
}

impl Record {
    pub fn new(user: String, recording: wachet::render::Recording, recorded: Recorded) -> Record {
        Record {
            user,
            recording,
            state: tokio::sync::Mutex::new(recorded),
            last_used: Mutex::new(Instant::now()),
        }
    }

    fn idle_for(&self) -> Duration {
        self.last_used
            .lock()
            .map(|t| t.elapsed())
            .unwrap_or_default()
    }

    fn touch(&self) {
        if let Ok(mut t) = self.last_used.lock() {
            *t = Instant::now();
        }
    }
}

/// Why no recording could be opened.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RecordRefused {
    #[error(
        "You already have {PER_USER} recordings of steps open. Close one (or wait 10 minutes \
         without using it), then try again."
    )]
    PerUser,
    #[error("Too many recordings of steps are open on this server; try again in a few minutes.")]
    Total,
    #[error("A recording is already being opened for you. Wait for it, then try again.")]
    Opening,
}

/// The open recordings.
#[derive(Debug, Default)]
pub struct RecordStore {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    records: HashMap<String, Arc<Record>>,
    opening: HashSet<String>,
    sweeping: bool,
}

/// A user's turn to open a recording: while it lives, that user's other openings are refused.
#[derive(Debug)]
pub struct OpenTurn {
    store: Arc<RecordStore>,
    user: String,
}

impl Drop for OpenTurn {
    fn drop(&mut self) {
        self.store.lock().opening.remove(&self.user);
    }
}

impl RecordStore {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves only a map behind: still usable.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The user's turn to open a recording, or why they may not open one now.
    pub fn open_turn(self: &Arc<Self>, user: &str) -> Result<OpenTurn, RecordRefused> {
        let closed = self.sweep();
        drop(closed);
        let mut inner = self.lock();
        if inner.records.values().filter(|r| r.user == user).count() >= PER_USER {
            return Err(RecordRefused::PerUser);
        }
        if inner.records.len() >= TOTAL {
            return Err(RecordRefused::Total);
        }
        if !inner.opening.insert(user.to_string()) {
            return Err(RecordRefused::Opening);
        }
        Ok(OpenTurn {
            store: self.clone(),
            user: user.to_string(),
        })
    }

    /// Keeps `record` (opened in `turn`); its token.
    pub fn insert(self: &Arc<Self>, turn: OpenTurn, record: Record) -> String {
        let token = crate::secrets::random_hex(16);
        let mut inner = self.lock();
        inner.records.insert(token.clone(), Arc::new(record));
        if !inner.sweeping {
            inner.sweeping = true;
            let weak = Arc::downgrade(self);
            tokio::spawn(sweep_every(weak));
        }
        drop(inner);
        drop(turn);
        token
    }

    /// The recording of `token` if it is `user`'s and still open; counts as its use.
    pub fn get(&self, user: &str, token: &str) -> Option<Arc<Record>> {
        let found = self
            .lock()
            .records
            .get(token)
            .filter(|r| r.user == user && r.idle_for() < IDLE)
            .cloned();
        if let Some(record) = &found {
            record.touch();
        }
        found
    }

    /// Closes the recording of `token` if it is `user`'s.
    pub fn remove(&self, user: &str, token: &str) -> Option<Arc<Record>> {
        let mut inner = self.lock();
        if inner.records.get(token).is_some_and(|r| r.user == user) {
            return inner.records.remove(token);
        }
        None
    }

    /// Drops the idle recordings; they are returned so their browser contexts are released
    /// outside the lock.
    fn sweep(&self) -> Vec<Arc<Record>> {
        let mut inner = self.lock();
        let idle: Vec<String> = inner
            .records
            .iter()
            .filter(|(_, r)| r.idle_for() >= IDLE)
            .map(|(token, _)| token.clone())
            .collect();
        idle.iter()
            .filter_map(|token| inner.records.remove(token))
            .collect()
    }
}

async fn sweep_every(store: Weak<RecordStore>) {
    loop {
        tokio::time::sleep(SWEEP).await;
        let Some(store) = store.upgrade() else { return };
        drop(store.sweep());
    }
}
