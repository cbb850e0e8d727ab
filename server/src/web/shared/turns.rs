//! Turns for heavy work the interface does for a user (a difference of large values, a feed's
//! entries, an XPath evaluation on a picked page): a few per user, and a bound in all. A user's
//! work waits only for that user's own turns, then for one of all; so one user asking for much
//! at once delays that user, and everyone's work together stays within what the machine has
//! beside the API's requests. A user's entry lives only while they work or wait.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Turns of one kind of work.
#[derive(Debug)]
pub struct Turns {
    per_user: usize,
    all: Arc<Semaphore>,
    users: Mutex<HashMap<String, Arc<Semaphore>>>,
}

/// A turn: one of its user's and one of all, given back when dropped.
#[derive(Debug)]
pub struct Turn {
    turns: Arc<Turns>,
    user: String,
    own: Option<OwnedSemaphorePermit>,
    _all: OwnedSemaphorePermit,
}

impl Drop for Turn {
    fn drop(&mut self) {
        // The permit holds the user's semaphore too: let it go before looking.
        self.own = None;
        self.turns.forget_idle(&self.user);
    }
}

impl Turns {
    /// `per_user` turns for each user, `all` in all (each at least one).
    pub fn new(per_user: usize, all: usize) -> Turns {
        Turns {
            per_user: per_user.max(1),
            all: Arc::new(Semaphore::new(all.max(1))),
            users: Mutex::default(),
        }
    }

    /// Half the cores (at least one): CPU work that leaves the rest to the API's requests.
    pub fn half_the_cores() -> usize {
        std::thread::available_parallelism().map_or(1, |n| (n.get() / 2).max(1))
    }

    /// A turn for `user`, waiting first for one of the user's own, then for one of all; `None`
    /// when none came within `wait`.
    pub async fn take(self: &Arc<Self>, user: &str, wait: Duration) -> Option<Turn> {
        let own = self
            .users()
            .entry(user.to_string())
            .or_insert_with(|| Arc::new(Semaphore::new(self.per_user)))
            .clone();
        let permits = tokio::time::timeout(wait, async {
            let own = own.acquire_owned().await.ok()?;
            let all = self.all.clone().acquire_owned().await.ok()?;
            Some((own, all))
        })
        .await
        .ok()
        .flatten();
        match permits {
            Some((own, all)) => Some(Turn {
                turns: self.clone(),
                user: user.to_string(),
                own: Some(own),
                _all: all,
            }),
            None => {
                self.forget_idle(user);
                None
            }
        }
    }

    fn users(&self) -> MutexGuard<'_, HashMap<String, Arc<Semaphore>>> {
        // A panic while holding the lock leaves only a map of semaphores: still usable.
        self.users
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Forgets `user`'s turns once nobody of theirs works or waits (only the map holds them).
    fn forget_idle(&self, user: &str) {
        let mut users = self.users();
        if users
            .get(user)
            .is_some_and(|turns| Arc::strong_count(turns) == 1)
        {
            users.remove(user);
        }
    }

    /// Users with work under way or waiting (for tests).
    #[cfg(test)]
    pub fn busy_users(&self) -> usize {
        self.users().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn each_user_works_in_their_own_turns_under_a_bound_in_all() {
        let turns = Arc::new(Turns::new(2, 4));
        let wait = Duration::from_millis(50);
        let mut ann = Vec::new();
        for _ in 0..2 {
            ann.push(turns.take("ann", wait).await.unwrap());
        }
        // Ann's next waits for her own, and gives up after the wait.
        assert!(turns.take("ann", wait).await.is_none());
        // Bob's does not wait for hers.
        let bob = turns.take("bob", Duration::ZERO).await;
        assert!(bob.is_some());
        drop(bob);
        ann.pop();
        assert!(turns.take("ann", wait).await.is_some());
        drop(ann);
        assert_eq!(turns.busy_users(), 0, "idle users are forgotten");
        // In all, no more than four at once.
        let mut many = Vec::new();
        for i in 0..4 {
            many.push(turns.take(&format!("u{i}"), wait).await.unwrap());
        }
        assert!(turns.take("late", wait).await.is_none());
        assert_eq!(turns.busy_users(), 4);
    }
}
