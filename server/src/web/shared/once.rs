//! One-time tokens of the forms that create something (the quick-add bar, the new-folder
//! form, the new-monitor form): each rendering of the form carries a fresh
//! token, and a second submit of it (a double click, a reload, a browser without scripts whose
//! button was not disabled) waits for the first and answers as it did instead of creating a
//! second one. Tokens are kept per user for an hour, at most [`MAX_TOKENS`] in all.

use crate::web::shared::error::PageError;
use crate::web::shared::pages;
use crate::web::shared::session::Session;
use axum::response::{IntoResponse, Redirect, Response};
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::OwnedMutexGuard;

/// The hidden field carrying the token.
pub const FIELD: &str = "once";
/// Longest a second submit waits for the first to finish.
const SUBMIT_WAIT: Duration = Duration::from_secs(30);
/// How long a token is remembered, and how many are at most.
const TOKEN_LIFE: Duration = Duration::from_secs(3600);
const MAX_TOKENS: usize = 10_000;
/// Longest token looked at; ours are 32 characters.
const MAX_TOKEN_LEN: usize = 64;

/// Where the first submit of a token led (the redirect's location), once it succeeded.
type Slot = Arc<tokio::sync::Mutex<Option<String>>>;
type Submissions = HashMap<(String, String), (Instant, Slot)>;

static SUBMISSIONS: LazyLock<Mutex<Submissions>> = LazyLock::new(|| Mutex::new(HashMap::new()));

/// A fresh token for a form.
pub fn fresh() -> String {
    crate::secrets::random_hex(16)
}

/// What a submit of a form with a token is to do.
pub enum Turn {
    /// No token (an old page, a script): go on as without this guard.
    Untracked,
    /// The first submit: go on, then [`Turn::done`] with where it led.
    First(OwnedMutexGuard<Option<String>>),
    /// A submit after a successful first: answer with a redirect here.
    Done(String),
    /// The first is still running after [`SUBMIT_WAIT`].
    Busy,
}

impl Turn {
    /// Records where a successful first submit led, for the later ones.
    pub fn done(&mut self, location: &str) {
        if let Turn::First(guard) = self {
            **guard = Some(location.to_string());
        }
    }
}

/// The turn of this submit of `token` by the signed-in user, or the answer to give at once: the
/// first submit's redirect when it succeeded, or a page saying it is still being saved.
pub async fn go_on(session: &Session, token: Option<&str>) -> Result<Turn, Response> {
    let turn = turn(&session.user, token).await;
    match &turn {
        Turn::Done(location) => Err(Redirect::to(location).into_response()),
        Turn::Busy => Err(pages::from_error(
            PageError::Unavailable("the first submit of this form is still being saved".into()),
            Some(session),
        )),
        Turn::First(_) | Turn::Untracked => Ok(turn),
    }
}

/// The turn of this submit of `token` by `user`.
pub async fn turn(user: &str, token: Option<&str>) -> Turn {
    let Some(token) = token.filter(|t| !t.is_empty() && t.len() <= MAX_TOKEN_LEN) else {
        return Turn::Untracked;
    };
    let slot = slot(user, token);
    match tokio::time::timeout(SUBMIT_WAIT, slot.lock_owned()).await {
        Ok(guard) => match guard.as_ref() {
            Some(location) => Turn::Done(location.clone()),
            None => Turn::First(guard),
        },
        Err(_) => Turn::Busy,
    }
}

fn slot(user: &str, token: &str) -> Slot {
    let mut map = SUBMISSIONS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if map.len() >= MAX_TOKENS {
        map.retain(|_, (at, _)| at.elapsed() < TOKEN_LIFE);
        if map.len() >= MAX_TOKENS {
            // Full of fresh tokens (someone posting thousands of forms): forget the oldest.
            let cutoff = map.values().map(|(at, _)| *at).min();
            map.retain(|_, (at, _)| Some(*at) != cutoff);
        }
    }
    map.entry((user.to_string(), token.to_string()))
        .or_insert_with(|| (Instant::now(), Arc::new(tokio::sync::Mutex::new(None))))
        .1
        .clone()
}

#[cfg(test)]
mod tests {
    use super::{Turn, turn};

    #[tokio::test]
    async fn a_token_leads_where_its_first_submit_did_for_its_user_only() {
        let mut first = turn("ann", Some("t1")).await;
        assert!(matches!(first, Turn::First(_)));
        first.done("/folders/x");
        drop(first);
        assert!(matches!(turn("ann", Some("t1")).await, Turn::Done(l) if l == "/folders/x"));
        assert!(matches!(turn("bob", Some("t1")).await, Turn::First(_)));
        assert!(matches!(turn("ann", None).await, Turn::Untracked));
        // A first submit that failed leaves the next one its turn.
        drop(turn("ann", Some("t2")).await);
        assert!(matches!(turn("ann", Some("t2")).await, Turn::First(_)));
    }
}
