//! Sessions kept between checks: after a monitor's `login` ran, the browser's cookies and the
//! local storage of the page's origin are handed to a [`SessionStore`], and given back to the
//! next check's browser before it loads the page, so a login runs again only when the site
//! forgot the session. The frontend decides where a session lives (the service keeps it per
//! monitor, sealed with its key); [`MemorySessions`] keeps it in memory.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::sync::Mutex;

/// Most bytes a saved session takes as JSON; a larger one is refused, not cut.
pub const MAX_SESSION_BYTES: usize = 128 * 1024;

/// One cookie of a saved session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SavedCookie {
    /// Name.
    pub name: String,
    /// Value.
    pub value: String,
    /// Domain (a leading dot for a domain cookie).
    pub domain: String,
    /// Path.
    pub path: String,
    /// Expiry, seconds since the Unix epoch; `None` for a cookie of the browser's session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires: Option<f64>,
    /// HttpOnly.
    #[serde(default)]
    pub http_only: bool,
    /// Secure.
    #[serde(default)]
    pub secure: bool,
    /// SameSite (`Strict`, `Lax`, `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub same_site: Option<String>,
}

/// The local storage of one origin.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OriginStorage {
    /// The origin (`https://example.com`).
    pub origin: String,
    /// Its keys and values.
    pub items: Vec<(String, String)>,
}

/// What a signed-in browser keeps: its cookies and the local storage of the page's origin.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SavedSession {
    /// Cookies.
    pub cookies: Vec<SavedCookie>,
    /// Local storage, by origin.
    #[serde(default)]
    pub storage: Vec<OriginStorage>,
}

impl SavedSession {
    /// The session as JSON, refused past [`MAX_SESSION_BYTES`].
    pub fn to_json(&self) -> Result<String, SessionError> {
        let json =
            serde_json::to_string(self).map_err(|e| SessionError::Unreadable(e.to_string()))?;
        if json.len() > MAX_SESSION_BYTES {
            return Err(SessionError::TooLarge {
                bytes: json.len(),
                limit: MAX_SESSION_BYTES,
            });
        }
        Ok(json)
    }

    /// A session from its JSON.
    pub fn from_json(json: &str) -> Result<SavedSession, SessionError> {
        serde_json::from_str(json).map_err(|e| SessionError::Unreadable(e.to_string()))
    }

    /// This session without the cookies expired at `now` (seconds since the epoch); `None`
    /// when no cookie is left: the site has forgotten it, a login is due.
    pub fn live_at(mut self, now: f64) -> Option<SavedSession> {
        self.cookies.retain(|c| c.expires.is_none_or(|e| e > now));
        (!self.cookies.is_empty() || !self.storage.is_empty()).then_some(self)
    }
}

/// Why a session could not be kept or read back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SessionError {
    /// The session is larger than the store keeps.
    #[error("the signed-in session is {bytes} bytes, more than the {limit} bytes kept")]
    TooLarge {
        /// Its size as JSON.
        bytes: usize,
        /// The most kept.
        limit: usize,
    },
    /// A stored session could not be read (another key, a damaged row).
    #[error("the stored session cannot be read: {0}")]
    Unreadable(String),
    /// The store failed.
    #[error("the session store failed: {0}")]
    Store(String),
}

/// Where one monitor's session is kept between checks. Attach it to a prepared monitor
/// ([`crate::PreparedMonitor::with_sessions`]).
///
/// - [`SessionStore::load`] is asked before each rendered check of a monitor with a `login`:
///   `Ok(None)` means no session (the login runs), an error fails nothing (the login runs).
/// - [`SessionStore::save`] is given the session after each check that ended signed in.
/// - [`SessionStore::clear`] is called when a restored session did not sign the page in.
#[async_trait]
pub trait SessionStore: Send + Sync {
    /// The kept session, if any.
    async fn load(&self) -> Result<Option<SavedSession>, SessionError>;
    /// Keeps `session`, replacing the one kept.
    async fn save(&self, session: &SavedSession) -> Result<(), SessionError>;
    /// Forgets the kept session.
    async fn clear(&self) -> Result<(), SessionError>;
}

/// A session store in memory, for one monitor (tests, the command line, embedders).
#[derive(Debug, Default)]
pub struct MemorySessions {
    kept: Mutex<Option<SavedSession>>,
}

#[async_trait]
impl SessionStore for MemorySessions {
    async fn load(&self) -> Result<Option<SavedSession>, SessionError> {
        Ok(self.kept.lock().map(|k| k.clone()).unwrap_or(None))
    }

    async fn save(&self, session: &SavedSession) -> Result<(), SessionError> {
        session.to_json()?;
        if let Ok(mut kept) = self.kept.lock() {
            *kept = Some(session.clone());
        }
        Ok(())
    }

    async fn clear(&self) -> Result<(), SessionError> {
        if let Ok(mut kept) = self.kept.lock() {
            *kept = None;
        }
        Ok(())
    }
}

impl std::fmt::Debug for dyn SessionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionStore")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_larger_than_kept_is_refused_and_expired_cookies_go() {
        let cookie = |name: &str, value: String, expires: Option<f64>| SavedCookie {
            name: name.into(),
            value,
            domain: "example.com".into(),
            path: "/".into(),
            expires,
            http_only: true,
            secure: false,
            same_site: None,
        };
        let huge = SavedSession {
            cookies: vec![cookie("sid", "x".repeat(MAX_SESSION_BYTES), None)],
            storage: Vec::new(),
        };
        assert!(matches!(huge.to_json(), Err(SessionError::TooLarge { .. })));
        let session = SavedSession {
            cookies: vec![
                cookie("old", "1".into(), Some(100.0)),
                cookie("sid", "2".into(), Some(300.0)),
            ],
            storage: Vec::new(),
        };
        let live = session.clone().live_at(200.0).unwrap();
        assert_eq!(live.cookies.len(), 1);
        assert_eq!(live.cookies[0].name, "sid");
        assert_eq!(session.live_at(400.0), None);
        let json = live.to_json().unwrap();
        assert_eq!(SavedSession::from_json(&json).unwrap(), live);
    }
}
