//! The browser sessions and step secrets of the checks the scheduler runs: a monitor's secret
//! step values are opened for its check only, and the session its login leaves is kept per
//! monitor in the store, sealed with the service's key ([`TaskSessions`], the service's
//! [`wachet::steps::SessionStore`]).

use crate::secrets::Sealer;
use crate::store::ScheduleStore;
use async_trait::async_trait;
use std::sync::Arc;
use wachet::steps::{SavedSession, SessionError, SessionStore};
use wachet::{Monitor, PreparedMonitor};

/// What a monitor's session is sealed for ([`crate::secrets::session_context`]).
fn context(task: &str) -> String {
    crate::secrets::session_context(task)
}

/// One monitor's kept session in the store, sealed.
pub(super) struct TaskSessions {
    store: Arc<dyn ScheduleStore>,
    sealer: Arc<Sealer>,
    task: String,
}

#[async_trait]
impl SessionStore for TaskSessions {
    async fn load(&self) -> Result<Option<SavedSession>, SessionError> {
        let sealed = self
            .store
            .task_session(&self.task)
            .await
            .map_err(|e| SessionError::Store(e.to_string()))?;
        let Some(sealed) = sealed else {
            return Ok(None);
        };
        let json = self
            .sealer
            .open(&sealed, &context(&self.task))
            .ok_or_else(|| SessionError::Unreadable("it does not open with this key".into()))?;
        SavedSession::from_json(&json).map(Some)
    }

    async fn save(&self, session: &SavedSession) -> Result<(), SessionError> {
        let json = session.to_json()?;
        let sealed = self
            .sealer
            .seal(&json, &context(&self.task))
            .map_err(SessionError::Store)?;
        self.store
            .keep_task_session(&self.task, &sealed)
            .await
            .map_err(|e| SessionError::Store(e.to_string()))
    }

    async fn clear(&self) -> Result<(), SessionError> {
        self.store
            .forget_task_session(&self.task)
            .await
            .map_err(|e| SessionError::Store(e.to_string()))
    }
}

/// `monitor` as its check runs it: its secret step values opened for `user` (without a key,
/// or for a value that does not open, left out, so the step fails naming itself).
pub(super) fn opened(sealer: Option<&Sealer>, user: &str, monitor: &Monitor) -> Option<Monitor> {
    if !monitor.has_secret_steps() {
        return None;
    }
    let mut opened = monitor.clone();
    match sealer {
        Some(sealer) => crate::secrets::open_steps(sealer, user, &mut opened),
        None => opened.hide_secret_steps(),
    }
    Some(opened)
}

/// `prepared` with its session kept in the store, when its monitor signs in.
pub(super) fn with_sessions(
    prepared: PreparedMonitor,
    store: &Arc<dyn ScheduleStore>,
    sealer: Option<&Arc<Sealer>>,
    task: &str,
) -> PreparedMonitor {
    match sealer {
        Some(sealer) if prepared.monitor().login.is_some() => {
            prepared.with_sessions(Arc::new(TaskSessions {
                store: store.clone(),
                sealer: sealer.clone(),
                task: task.to_string(),
            }))
        }
        _ => prepared,
    }
}
