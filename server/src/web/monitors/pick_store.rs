//! The pages the picker fetched, kept in memory for a while so the frame, the "Try" form and
//! the value requests all work on the very page that was fetched, without fetching it again.
//! Bounded every way: each page by [`MAX_PAGE_BYTES`], each user by [`PER_USER`] pages (the
//! oldest goes), the process by [`TOTAL`] pages (the oldest of anyone's goes), each page by
//! [`KEPT_FOR`]; at most one fetch per user at a time, and XPath evaluations in turns of each
//! user's own ([`crate::web::shared::turns`]). A page is found only by its random token
//! together with its owner, so another user's token is as unknown as a made-up one. Nothing
//! is written to the database: a restart forgets the pages, and the picker fetches again.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Largest page the picker keeps (its text, decoded); larger pages are refused with a message.
/// Its inert copy may be at most twice as large, so the store holds at most
/// `TOTAL × 3 × MAX_PAGE_BYTES` (192 MiB) however it is used.
pub const MAX_PAGE_BYTES: usize = 2 * 1024 * 1024;
/// Pages kept per user; a new one pushes out that user's oldest.
pub const PER_USER: usize = 3;
/// Pages kept in all; a new one pushes out the oldest of all.
pub const TOTAL: usize = 32;
/// How long a page is kept after it was fetched.
pub const KEPT_FOR: Duration = Duration::from_secs(30 * 60);

/// One fetched page.
#[derive(Debug)]
pub struct Pick {
    /// The user it was fetched for.
    pub user: String,
    /// The monitor it was fetched for (its definition: request, rendering, regex), if any.
    pub monitor: Option<wachet::Monitor>,
    /// The URL asked for.
    pub url: String,
    /// The URL after redirects.
    pub final_url: String,
    /// Whether it was rendered in the browser (`dynamicContent`).
    pub rendered: bool,
    /// The page's text as a check extracts from it.
    pub html: Arc<str>,
    /// The same page made inert, served in the frame (shared, never copied per request).
    pub inert: axum::body::Bytes,
    fetched: Instant,
}

impl Pick {
    /// A page fetched now.
    pub fn new(
        user: String,
        monitor: Option<wachet::Monitor>,
        url: String,
        final_url: String,
        html: String,
        inert: String,
    ) -> Pick {
        Pick {
            rendered: monitor.as_ref().is_some_and(|m| m.dynamic_content),
            user,
            monitor,
            url,
            final_url,
            html: html.into(),
            inert: axum::body::Bytes::from(inert),
            fetched: Instant::now(),
        }
    }
}

/// Evaluations of XPaths on kept pages one user may run at once (each is a parse of a page of
/// up to [`MAX_PAGE_BYTES`] on the blocking pool); the user's next waits for one of them.
pub const EVALUATIONS_PER_USER: usize = 2;
/// Evaluations running at once in all, so that many users together cannot take every thread of
/// the blocking pool; each user's share is bounded first, so one user's slow expressions never
/// hold the turns of others.
pub const EVALUATIONS: usize = 16;

/// The kept pages.
#[derive(Debug)]
pub struct PickStore {
    inner: Mutex<Inner>,
    /// Turns to evaluate XPaths on a kept page ([`EVALUATIONS_PER_USER`], [`EVALUATIONS`]).
    pub evaluations: Arc<crate::web::shared::turns::Turns>,
}

impl Default for PickStore {
    fn default() -> Self {
        PickStore {
            inner: Mutex::default(),
            evaluations: Arc::new(crate::web::shared::turns::Turns::new(
                EVALUATIONS_PER_USER,
                EVALUATIONS,
            )),
        }
    }
}

#[derive(Debug, Default)]
struct Inner {
    picks: HashMap<String, Arc<Pick>>,
    fetching: HashSet<String>,
}

/// A user's turn to fetch: while it lives, that user's other fetches are refused.
#[derive(Debug)]
pub struct FetchTurn {
    store: Arc<PickStore>,
    user: String,
}

impl Drop for FetchTurn {
    fn drop(&mut self) {
        self.store.lock().fetching.remove(&self.user);
    }
}

impl PickStore {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves only a map of pages behind: still usable.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The user's turn to fetch, or `None` while a fetch of theirs is under way.
    pub fn fetch_turn(self: &Arc<Self>, user: &str) -> Option<FetchTurn> {
        let mut inner = self.lock();
        if !inner.fetching.insert(user.to_string()) {
            return None;
        }
        Some(FetchTurn {
            store: self.clone(),
            user: user.to_string(),
        })
    }

    /// Keeps `pick`; its token.
    pub fn insert(&self, pick: Pick) -> String {
        let token = crate::secrets::random_hex(16);
        let mut inner = self.lock();
        let now = Instant::now();
        inner
            .picks
            .retain(|_, p| now.duration_since(p.fetched) < KEPT_FOR);
        let user = pick.user.clone();
        while inner.picks.values().filter(|p| p.user == user).count() >= PER_USER {
            remove_oldest(&mut inner.picks, |p| p.user == user);
        }
        while inner.picks.len() >= TOTAL {
            remove_oldest(&mut inner.picks, |_| true);
        }
        inner.picks.insert(token.clone(), Arc::new(pick));
        token
    }

    /// The page of `token` if it is `user`'s and still kept.
    pub fn get(&self, user: &str, token: &str) -> Option<Arc<Pick>> {
        let inner = self.lock();
        inner
            .picks
            .get(token)
            .filter(|p| p.user == user && p.fetched.elapsed() < KEPT_FOR)
            .cloned()
    }
}

fn remove_oldest(picks: &mut HashMap<String, Arc<Pick>>, which: impl Fn(&Pick) -> bool) {
    let oldest = picks
        .iter()
        .filter(|(_, p)| which(p))
        .min_by_key(|(_, p)| p.fetched)
        .map(|(token, _)| token.clone());
    if let Some(token) = oldest {
        picks.remove(&token);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pick(user: &str) -> Pick {
        Pick::new(
            user.into(),
            None,
            "https://example.com/".into(),
            "https://example.com/".into(),
            "<p>x</p>".into(),
            "<p>x</p>".into(),
        )
    }

    #[test]
    fn pages_are_bounded_per_user_and_in_all_and_found_only_by_their_owner() {
        let store = PickStore::default();
        let first = store.insert(pick("ann"));
        assert!(store.get("ann", &first).is_some());
        assert!(store.get("bob", &first).is_none());
        let later: Vec<String> = (0..PER_USER).map(|_| store.insert(pick("ann"))).collect();
        assert!(store.get("ann", &first).is_none(), "the oldest went");
        assert!(later.iter().all(|t| store.get("ann", t).is_some()));
        for i in 0..TOTAL * 2 {
            store.insert(pick(&format!("user{i}")));
        }
        assert_eq!(store.lock().picks.len(), TOTAL);
    }

    #[test]
    fn one_fetch_per_user_at_a_time() {
        let store = Arc::new(PickStore::default());
        let turn = store.fetch_turn("ann").unwrap();
        assert!(store.fetch_turn("ann").is_none());
        assert!(store.fetch_turn("bob").is_some());
        drop(turn);
        assert!(store.fetch_turn("ann").is_some());
    }
}
