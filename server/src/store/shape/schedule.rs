//! The scheduler's state as stored: a claimed monitor's definition read back, and the
//! confirmation state of a monitor or page, from its stored state or, when that is missing or
//! unreadable, from its history.

use super::history::decode;
use crate::store::{Millis, StoreError};
use wachet::Monitor;
use wachet::alerts::confirm::ConfirmState;
use wachet::alerts::{AlertState, LastCheck};

/// How long a monitor whose stored definition cannot be read waits before it is tried again.
const UNREADABLE_RETRY: Millis = 3_600_000;

/// The monitor of a claimed row (`id`, `folder_id`, `definition`); `None`, logged, when the
/// definition cannot be read: one unreadable row must not stop every other monitor's checks,
/// and the caller puts it off until [`retry_unreadable`].
pub(crate) fn claimed_monitor(
    id: &str,
    folder_id: Option<String>,
    definition: &str,
) -> Option<Monitor> {
    match serde_json::from_str::<Monitor>(definition) {
        Ok(mut monitor) => {
            monitor.id = Some(id.to_string());
            monitor.folder_id = folder_id;
            Some(monitor)
        }
        Err(err) => {
            tracing::error!(task = %id, %err, "stored monitor cannot be read; skipped");
            None
        }
    }
}

/// When a monitor whose definition could not be read at `now` is tried again.
pub(crate) fn retry_unreadable(now: Millis) -> Millis {
    now + UNREADABLE_RETRY
}

/// A column that says yes or no: a boolean, or SQLite's integer.
pub(crate) trait Flag {
    /// Whether it says yes.
    fn is_set(&self) -> bool;
}

impl Flag for bool {
    fn is_set(&self) -> bool {
        *self
    }
}

impl Flag for i64 {
    fn is_set(&self) -> bool {
        *self != 0
    }
}

/// The state of a monitor (`url` NULL) or page: `checked` says whether it has an entry,
/// `error` and `codec`/`body` are its latest and last successful value's, read only when no
/// `alert_state` was stored.
#[derive(sqlx::FromRow)]
pub(crate) struct StateRow<F, C> {
    url: Option<String>,
    checked: F,
    error: Option<String>,
    codec: Option<C>,
    body: Option<Vec<u8>>,
    alert_state: Option<String>,
}

impl<F: Flag, C: Into<i64>> StateRow<F, C> {
    /// The page's URL (none for the monitor's own) and its confirmation state.
    pub(crate) fn state(self) -> Result<(Option<String>, ConfirmState), StoreError> {
        if let Some(stored) = &self.alert_state {
            match serde_json::from_str::<ConfirmState>(stored) {
                Ok(state) => return Ok((self.url, state)),
                // The history still tells what was confirmed last; only a pending
                // confirmation is lost.
                Err(err) => {
                    tracing::error!(%err, "stored alert state cannot be read; history used")
                }
            }
        }
        let last_check = match (self.checked.is_set(), &self.error) {
            (false, _) => None,
            (true, Some(_)) => Some(LastCheck::Failed),
            (true, None) => Some(LastCheck::Succeeded),
        };
        let state = AlertState {
            last_check,
            last_value: decode(self.codec, self.body)?,
        };
        Ok((self.url, ConfirmState::from(state)))
    }
}

/// What writing one record of a group of checks did: how it ended, and whether a series of its
/// monitor may now hold more entries than the retention keeps (so it is pruned once the group
/// committed). A backend that does not tell prunes after every stored check.
pub(crate) struct Written {
    /// How the record ended.
    pub recorded: crate::store::Recorded,
    /// Whether its monitor's history is to be pruned.
    pub prune: bool,
}

impl From<crate::store::Recorded> for Written {
    fn from(recorded: crate::store::Recorded) -> Self {
        Written {
            recorded,
            prune: recorded == crate::store::Recorded::Stored,
        }
    }
}

/// `outcome` of a record as a [`Written`], whichever a backend's group reports.
pub(crate) fn written<W: Into<Written>>(outcome: W) -> Written {
    outcome.into()
}
