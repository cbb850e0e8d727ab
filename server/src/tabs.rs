//! The browser tabs the service renders with on its users' behalf, counted per user in one
//! place: every page a scheduled check renders (each crawled page of a Portal, each quick
//! sample), a preview's and a picker fetch's. The renderer's tabs are shared out the way the
//! scheduler shares its slots: a user rendering alone may hold half of them, and while others
//! render too each may hold `max(1, half / users rendering)`; past that a user's render waits
//! for one of that user's own tabs. So a user whose pages hang holds at most their share, and
//! another user's render finds a tab free instead of waiting for those pages to time out.
//! Every render enters the ledger ([`UserTabs`], the engine's [`TabGate`]) before it takes one
//! of the renderer's tabs, and the ledger has as many tabs as the renderer
//! ([`wachet::Checker::browser_tabs`]), so the renderer never queues one user's render behind
//! another's. A user's entry lives only while they render or wait; the count of their waits
//! ([`Waits`]) stays.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use tokio::sync::Notify;
use wachet::{TabGate, TabPass};

/// The renderer's tabs for a service running `browser_checks` browser checks at once: twice a
/// user's share, which is their checks and one preview or pick; so a user rendering alone
/// holds at most half, and another user's render finds the other half free.
pub fn renderer_tabs(browser_checks: usize) -> usize {
    (browser_checks.max(1) + 1) * 2
}

/// How long a preview or a pick waits for one of its user's tabs before it is refused ([`BUSY`]).
pub const INTERFACE_WAIT: Duration = Duration::from_secs(5);

/// What a user is told when their preview or pick found no tab.
pub const BUSY: &str = "Your pages already hold every browser tab you have (a check of one of your \
     monitors, a preview or a pick). Wait for them, then try again.";

/// Users whose [`Waits`] are kept; past that only those already counted are.
const COUNTED_USERS: usize = 10_000;

/// The tabs rendering for users, per user and in all.
#[derive(Debug)]
pub struct BrowserTabs {
    all: usize,
    ledger: Mutex<Ledger>,
    /// Told when a tab is given back or a user stops waiting: a waiter's turn may have come.
    changed: Notify,
}

#[derive(Debug, Default)]
struct Ledger {
    /// Tabs held in all.
    held: usize,
    /// The users holding or waiting for tabs.
    users: HashMap<String, Usage>,
    waits: HashMap<String, Waits>,
}

#[derive(Debug, Default)]
struct Usage {
    held: usize,
    waiting: usize,
}

/// How many of a user's renders had to wait for a tab, by what they waited for.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Waits {
    /// Renders that waited for one of the user's own tabs: the user held their share.
    pub for_own: u64,
    /// Renders that waited for a tab of other users: the user was within their share, and
    /// every tab was held. A renderer too small for its users shows here.
    pub for_others: u64,
}

/// One tab held for a user, given back when dropped.
#[derive(Debug)]
pub struct Tab {
    tabs: Arc<BrowserTabs>,
    user: String,
}

/// A render waiting for its tab; stops counting as waiting when dropped (a render stopped
/// meanwhile), and the others look again.
struct Waiting<'a> {
    tabs: &'a BrowserTabs,
    user: &'a str,
}

impl BrowserTabs {
    /// A ledger of `all` tabs (at least one).
    pub fn new(all: usize) -> Arc<BrowserTabs> {
        Arc::new(BrowserTabs {
            all: all.max(1),
            ledger: Mutex::default(),
            changed: Notify::new(),
        })
    }

    /// The tabs each of `users` rendering users may hold.
    fn share(&self, users: usize) -> usize {
        ((self.all / 2).max(1) / users.max(1)).max(1)
    }

    fn ledger(&self) -> MutexGuard<'_, Ledger> {
        // A panic while holding the lock leaves counts only: still usable.
        self.ledger.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A tab for `user`, once they are within their share and a tab is free. Cancel-safe: a
    /// render stopped while it waits holds nothing.
    pub async fn take(self: &Arc<Self>, user: &str) -> Tab {
        let mut waiting = None;
        loop {
            let changed = {
                let mut guard = self.ledger();
                let ledger = &mut *guard;
                let rendering = ledger.users.len() + usize::from(!ledger.users.contains_key(user));
                let share = self.share(rendering);
                let usage = ledger.users.entry(user.to_string()).or_default();
                let own_full = usage.held >= share;
                if !own_full && ledger.held < self.all {
                    usage.held += 1;
                    ledger.held += 1;
                    if let Some(waiting) = waiting.take() {
                        usage.waiting -= 1;
                        std::mem::forget::<Waiting>(waiting);
                    }
                    return Tab {
                        tabs: self.clone(),
                        user: user.to_string(),
                    };
                }
                if waiting.is_none() {
                    usage.waiting += 1;
                    waiting = Some(Waiting { tabs: self, user });
                    let room = ledger.waits.len() < COUNTED_USERS;
                    if let Some(waits) = match ledger.waits.get_mut(user) {
                        Some(waits) => Some(waits),
                        None if room => Some(ledger.waits.entry(user.to_string()).or_default()),
                        None => None,
                    } {
                        match own_full {
                            true => waits.for_own += 1,
                            false => waits.for_others += 1,
                        }
                    }
                }
                // Made under the lock, so a tab given back between this look and the wait
                // still wakes it.
                self.changed.notified()
            };
            changed.await;
        }
    }

    /// [`Self::take`], or `None` when no tab came within `wait`.
    pub async fn take_within(self: &Arc<Self>, user: &str, wait: Duration) -> Option<Tab> {
        tokio::time::timeout(wait, self.take(user)).await.ok()
    }

    /// The gate of one use of the browser for `user` (a check, a preview, a picker fetch):
    /// each of its renders takes one of the user's tabs; `first`, a tab taken before the use
    /// began, serves its first render.
    pub fn for_user(self: &Arc<Self>, user: &str, first: Option<Tab>) -> Arc<UserTabs> {
        Arc::new(UserTabs {
            tabs: self.clone(),
            user: user.to_string(),
            first: Mutex::new(first),
        })
    }

    /// How often `user`'s renders waited for a tab since the service started.
    pub fn waits(&self, user: &str) -> Waits {
        self.ledger().waits.get(user).copied().unwrap_or_default()
    }

    /// The tabs `user` holds now.
    pub fn held(&self, user: &str) -> usize {
        self.ledger().users.get(user).map_or(0, |usage| usage.held)
    }

    /// Forgets `user`'s entry once they hold and wait for nothing, and wakes the waiters.
    fn forget_idle(ledger: &mut Ledger, user: &str) {
        if ledger
            .users
            .get(user)
            .is_some_and(|usage| usage.held == 0 && usage.waiting == 0)
        {
            ledger.users.remove(user);
        }
    }
}

impl Drop for Tab {
    fn drop(&mut self) {
        {
            let mut ledger = self.tabs.ledger();
            ledger.held = ledger.held.saturating_sub(1);
            if let Some(usage) = ledger.users.get_mut(&self.user) {
                usage.held = usage.held.saturating_sub(1);
            }
            BrowserTabs::forget_idle(&mut ledger, &self.user);
        }
        // A tab is free, and with a user gone the shares of the others grew.
        self.tabs.changed.notify_waiters();
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        {
            let mut ledger = self.tabs.ledger();
            if let Some(usage) = ledger.users.get_mut(self.user) {
                usage.waiting = usage.waiting.saturating_sub(1);
            }
            BrowserTabs::forget_idle(&mut ledger, self.user);
        }
        self.tabs.changed.notify_waiters();
    }
}

/// One use of the browser for one user ([`BrowserTabs::for_user`]), handed to the engine with
/// the monitor it renders ([`wachet::PreparedMonitor::with_tabs`]).
#[derive(Debug)]
pub struct UserTabs {
    tabs: Arc<BrowserTabs>,
    user: String,
    first: Mutex<Option<Tab>>,
}

#[async_trait::async_trait]
impl TabGate for UserTabs {
    async fn enter(&self) -> TabPass {
        let first = self
            .first
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let tab = match first {
            Some(tab) => tab,
            None => self.tabs.take(&self.user).await,
        };
        Box::new(tab)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: Duration = Duration::from_millis(50);

    #[tokio::test]
    async fn a_user_holds_their_share_and_waits_for_their_own_tabs_only() {
        let tabs = BrowserTabs::new(6);
        // Alone: half of the tabs.
        let mut ann: Vec<Tab> = Vec::new();
        for _ in 0..3 {
            ann.push(tabs.take_within("ann", NOW).await.unwrap());
        }
        assert!(tabs.take_within("ann", NOW).await.is_none());
        assert_eq!(
            tabs.waits("ann"),
            Waits {
                for_own: 1,
                for_others: 0
            }
        );
        // Another user finds the other half free, and never waits for hers.
        let bob: Vec<Tab> = vec![tabs.take_within("bob", NOW).await.unwrap()];
        assert_eq!(tabs.held("bob"), 1);
        // Now two render: a share is one each, so neither takes more until Ann gives back.
        assert!(tabs.take_within("bob", NOW).await.is_none());
        let waiting = tokio::spawn({
            let tabs = tabs.clone();
            async move { tabs.take("ann").await }
        });
        tokio::time::sleep(NOW).await;
        drop(ann.pop());
        drop(ann.pop());
        assert!(!waiting.is_finished(), "Ann still holds her share");
        drop(ann.pop());
        let again = tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("woken once within her share")
            .unwrap();
        assert_eq!((tabs.held("ann"), tabs.held("bob")), (1, 1));
        assert_eq!(
            tabs.waits("bob"),
            Waits {
                for_own: 1,
                for_others: 0
            }
        );
        drop((again, bob));
        assert!(tabs.ledger().users.is_empty(), "idle users are forgotten");
        assert_eq!(tabs.ledger().held, 0);
    }

    #[tokio::test]
    async fn a_render_within_its_share_waits_for_others_only_when_every_tab_is_held() {
        let tabs = BrowserTabs::new(2);
        let ann = tabs.take_within("ann", NOW).await.unwrap();
        let bob = tabs.take_within("bob", NOW).await.unwrap();
        assert!(tabs.take_within("cat", NOW).await.is_none());
        assert_eq!(
            tabs.waits("cat"),
            Waits {
                for_own: 0,
                for_others: 1
            }
        );
        assert!(!tabs.ledger().users.contains_key("cat"), "no waiter left");
        drop((ann, bob));
    }

    #[tokio::test]
    async fn a_gate_serves_its_first_render_from_the_tab_taken_before_it() {
        let tabs = BrowserTabs::new(2);
        let first = tabs.take_within("ann", NOW).await.unwrap();
        let gate = tabs.for_user("ann", Some(first));
        let pass = gate.enter().await;
        assert_eq!(tabs.held("ann"), 1, "the same tab");
        // The next render waits for Ann's share (one of two) to have room.
        let second = tokio::time::timeout(NOW, gate.enter()).await;
        assert!(second.is_err());
        drop(pass);
        let pass = tokio::time::timeout(NOW, gate.enter()).await.unwrap();
        assert_eq!(tabs.held("ann"), 1);
        drop((pass, gate));
        assert_eq!(tabs.held("ann"), 0);
    }
}
