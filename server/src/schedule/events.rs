//! "A check of monitor X of user U was stored": announced by the scheduler after each check it
//! stores, for whoever listens (the web interface's live updates). A bounded broadcast: the
//! scheduler never waits for a listener, and a listener that falls behind loses the oldest
//! announcements and is told how many (it then refreshes everything it shows).

use tokio::sync::broadcast;

/// Announcements kept for a listener that has not read them yet.
pub const CAPACITY: usize = 1024;

/// One stored check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckFinished {
    /// The monitor's owner.
    pub user: String,
    /// The monitor.
    pub task: String,
}

/// The announcements of stored checks; clones announce to the same listeners.
#[derive(Debug, Clone)]
pub struct CheckEvents(broadcast::Sender<CheckFinished>);

impl CheckEvents {
    /// A broadcast nobody listens to yet.
    pub fn new() -> Self {
        CheckEvents(broadcast::channel(CAPACITY).0)
    }

    /// Tells every listener; nobody listening is no error.
    pub fn announce(&self, event: CheckFinished) {
        let _ = self.0.send(event);
    }

    /// A new listener, hearing what is announced from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<CheckFinished> {
        self.0.subscribe()
    }
}

impl Default for CheckEvents {
    fn default() -> Self {
        CheckEvents::new()
    }
}
