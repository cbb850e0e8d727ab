//! What a page handler fails with ([`PageError`]): an operation's error as the interface
//! answers it, and the one sentence a page shows of a refusal.

use crate::ops::OpError;
use std::collections::BTreeMap;

/// What a page handler fails with: an operation's error as the interface answers it.
#[derive(Debug)]
pub enum PageError {
    /// 400: a field fails validation (or a quota would be passed).
    BadRequest {
        /// Summary.
        detail: String,
        /// Field path -> messages.
        errors: BTreeMap<String, Vec<String>>,
    },
    /// Not signed in (any more), or credentials that do not sign in.
    Unauthorized,
    /// 404: nothing of this user under that address.
    NotFound,
    /// 503: the work could not be done now (what to tell the user).
    Unavailable(String),
    /// 429: over a rate limit; retry after this many seconds.
    TooManyRequests(u64),
    /// 500: the detail goes to the log.
    Internal(String),
}

/// What a 400 says first, for a page that shows one sentence: its first field message, else
/// its summary.
pub fn first_message(detail: String, errors: &BTreeMap<String, Vec<String>>) -> String {
    errors.values().flatten().next().cloned().unwrap_or(detail)
}

impl From<OpError> for PageError {
    fn from(err: OpError) -> Self {
        match err {
            OpError::Invalid { detail, errors } => PageError::BadRequest { detail, errors },
            OpError::NotFound => PageError::NotFound,
            OpError::Quota { limit, message } => PageError::BadRequest {
                detail: message.clone(),
                errors: BTreeMap::from([(limit, vec![message])]),
            },
            OpError::TooMany(seconds) => PageError::TooManyRequests(seconds),
            OpError::Unauthorized(_) => PageError::Unauthorized,
            OpError::Unavailable { detail, .. } => PageError::Unavailable(detail),
            OpError::Internal(detail) => PageError::Internal(detail),
        }
    }
}
