//! The browser tabs the service renders with on its users' behalf, counted per user in one
//! place: every page a scheduled check renders (each crawled page of a Portal, each quick
//! sample), a preview's and a picker fetch's; a later use (a recording of browser steps, a
//! screenshot) is one more [`Use`] and takes its tabs through the same [`BrowserTabs::open`].
//! The renderer's tabs are shared out the way the scheduler shares its slots: a user rendering
//! alone may hold half of them, and while others render too each may hold
//! `max(1, half / users rendering)`; past that a user's render waits for one of that user's own
//! tabs. So a user whose pages hang holds at most their share, and another user's render finds a
//! tab free instead of waiting for those pages to time out.
//! Every render enters the ledger ([`UserTabs`], the engine's [`TabGate`]) before it takes one
//! of the renderer's tabs, and the ledger has as many tabs as the renderer
//! ([`wachet::Checker::browser_tabs`]), so the renderer never queues one user's render behind
//! another's. Every wait is bounded: a use from the interface waits [`INTERFACE_WAIT`] for its
//! first tab, any render [`RENDER_WAIT`], and at most [`MAX_WAITING`] renders of one user wait
//! at once; past those the use or the render is refused ([`TabsError`]). A render waits for a
//! tab holding nothing another user's render could use (a check waiting holds its scheduler
//! slot, but neither a renderer's tab nor its host's slot: the engine enters the gate first),
//! so no wait here waits on another's. A user's entry lives only
//! while they render or wait; the count of their waits ([`Waits`]) stays.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use tokio::sync::Notify;
use wachet::{TabGate, TabPass, TabRefused};

/// The renderer's tabs for a service running `browser_checks` browser checks at once: twice a
/// user's share, which is their checks and one preview or pick; so a user rendering alone
/// holds at most half, and another user's render finds the other half free.
pub fn renderer_tabs(browser_checks: usize) -> usize {
    (browser_checks.max(1) + 1) * 2
}

/// How long a use from the interface (a preview, a pick) waits for one of its user's tabs
/// before it is refused ([`TabsError::Busy`]): someone is waiting for the page.
pub const INTERFACE_WAIT: Duration = Duration::from_secs(5);

/// How long any render waits for one of its user's tabs before it fails
/// ([`TabsError::Busy`]). A tab comes free within one render timeout (30 s by default), so only
/// a user's many renders queued behind their own hanging pages wait this long (a crawl's
/// last pages); it is well within a check's own limit.
pub const RENDER_WAIT: Duration = Duration::from_secs(10 * 60);

/// Renders of one user waiting for a tab at once; one more is refused at once
/// ([`TabsError::Queue`]). Above what a user's checks, crawls, previews and picks wait for
/// together at the default settings.
pub const MAX_WAITING: usize = 256;

/// What a tab is used for on a user's behalf: each use takes its tabs through
/// [`BrowserTabs::open`], counted in the same share, and differs only in how long its first
/// render may wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Use {
    /// A scheduled check (its page, each page of its crawl, each quick sample): its renders
    /// wait for their tabs as they come, no tab is taken up front.
    Check,
    /// A preview from the monitor form: someone waits, so its first tab is taken up front
    /// within [`INTERFACE_WAIT`], or the preview is refused.
    Preview,
    /// A picker's fetch of a page: as a preview.
    Pick,
    /// An action of a recording of browser steps: as a preview, one tab per action.
    Record,
}

impl Use {
    /// How long the use waits for its first tab when it opens; `None` when it takes none then.
    fn first_wait(self) -> Option<Duration> {
        match self {
            Use::Check => None,
            Use::Preview | Use::Pick | Use::Record => Some(INTERFACE_WAIT),
        }
    }
}

/// Why a use or a render got no tab. Its words are for the user (a page shows them, a check
/// stores them as its error).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TabsError {
    /// The user's own tabs stayed held for the whole wait.
    #[error(
        "Your pages already hold every browser tab you have (a check of one of your monitors, \
         a preview or a pick), and none came free within {} s. Wait for them, then try again.",
        .waited.as_secs()
    )]
    Busy {
        /// How long the use waited.
        waited: Duration,
    },
    /// [`MAX_WAITING`] renders of the user wait for a tab already.
    #[error(
        "{waiting} of your pages already wait for a browser tab (pages of yours that do not \
         answer hold your tabs); this one was not queued behind them."
    )]
    Queue {
        /// The user's renders waiting.
        waiting: usize,
    },
}

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

    /// A tab for `user`, once they are within their share and a tab is free, waiting at most
    /// `wait`. Cancel-safe: a render stopped while it waits holds nothing.
    pub async fn take(self: &Arc<Self>, user: &str, wait: Duration) -> Result<Tab, TabsError> {
        match tokio::time::timeout(wait, self.take_unbounded(user)).await {
            Ok(taken) => taken,
            Err(_) => Err(TabsError::Busy { waited: wait }),
        }
    }

    /// [`Self::take`] without its time limit; refused only when [`MAX_WAITING`] of the user's
    /// renders wait already.
    async fn take_unbounded(self: &Arc<Self>, user: &str) -> Result<Tab, TabsError> {
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
                    return Ok(Tab {
                        tabs: self.clone(),
                        user: user.to_string(),
                    });
                }
                if waiting.is_none() {
                    if usage.waiting >= MAX_WAITING {
                        let waiting = usage.waiting;
                        Self::forget_idle(ledger, user);
                        return Err(TabsError::Queue { waiting });
                    }
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

    /// The one way a use of the browser for `user` takes its tabs: the gate each of its renders
    /// enters ([`wachet::PreparedMonitor::with_tabs`]), with its first tab already taken when
    /// the use waits for none later ([`Use`]: a preview, a pick), so a user whose tabs are all
    /// held is told at once. `Err` when that first tab did not come in time.
    pub async fn open(
        self: &Arc<Self>,
        user: &str,
        usage: Use,
    ) -> Result<Arc<UserTabs>, TabsError> {
        let first = match usage.first_wait() {
            Some(wait) => Some(self.take(user, wait).await?),
            None => None,
        };
        Ok(Arc::new(UserTabs {
            tabs: self.clone(),
            user: user.to_string(),
            usage,
            first: Mutex::new(first),
        }))
    }

    /// [`Self::open`] for a use that takes no tab up front ([`Use::Check`]), which cannot be
    /// refused then: its renders wait for their tabs as they come.
    pub fn open_lazily(self: &Arc<Self>, user: &str, usage: Use) -> Arc<UserTabs> {
        Arc::new(UserTabs {
            tabs: self.clone(),
            user: user.to_string(),
            usage,
            first: Mutex::new(None),
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

/// One use of the browser for one user ([`BrowserTabs::open`]), handed to the engine with
/// the monitor it renders ([`wachet::PreparedMonitor::with_tabs`]): its first render takes the
/// tab taken when it opened, if any, and each other render one of the user's tabs, waiting at
/// most [`RENDER_WAIT`].
#[derive(Debug)]
pub struct UserTabs {
    tabs: Arc<BrowserTabs>,
    user: String,
    usage: Use,
    first: Mutex<Option<Tab>>,
}

impl UserTabs {
    /// What this use is.
    pub fn usage(&self) -> Use {
        self.usage
    }
}

#[async_trait::async_trait]
impl TabGate for UserTabs {
    async fn enter(&self) -> Result<TabPass, TabRefused> {
        let first = self
            .first
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let tab = match first {
            Some(tab) => tab,
            None => self
                .tabs
                .take(&self.user, RENDER_WAIT)
                .await
                .map_err(|refused| TabRefused(refused.to_string()))?,
        };
        Ok(Box::new(tab))
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
            ann.push(tabs.take("ann", NOW).await.unwrap());
        }
        assert!(tabs.take("ann", NOW).await.is_err());
        assert_eq!(
            tabs.waits("ann"),
            Waits {
                for_own: 1,
                for_others: 0
            }
        );
        // Another user finds the other half free, and never waits for hers.
        let bob: Vec<Tab> = vec![tabs.take("bob", NOW).await.unwrap()];
        assert_eq!(tabs.held("bob"), 1);
        // Now two render: a share is one each, so neither takes more until Ann gives back.
        assert!(tabs.take("bob", NOW).await.is_err());
        let waiting = tokio::spawn({
            let tabs = tabs.clone();
            async move { tabs.take("ann", Duration::from_secs(60)).await }
        });
        tokio::time::sleep(NOW).await;
        drop(ann.pop());
        drop(ann.pop());
        assert!(!waiting.is_finished(), "Ann still holds her share");
        drop(ann.pop());
        let again = tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("woken once within her share")
            .unwrap()
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
        let ann = tabs.take("ann", NOW).await.unwrap();
        let bob = tabs.take("bob", NOW).await.unwrap();
        assert!(tabs.take("cat", NOW).await.is_err());
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
        let gate = tabs.open("ann", Use::Pick).await.unwrap();
        assert_eq!(tabs.held("ann"), 1, "taken when it opened");
        let pass = gate.enter().await.unwrap();
        assert_eq!(tabs.held("ann"), 1, "the same tab");
        // The next render waits for Ann's share (one of two) to have room.
        let second = tokio::time::timeout(NOW, gate.enter()).await;
        assert!(second.is_err());
        drop(pass);
        let pass = tokio::time::timeout(NOW, gate.enter())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(tabs.held("ann"), 1);
        drop((pass, gate));
        assert_eq!(tabs.held("ann"), 0);
    }

    #[tokio::test]
    async fn every_wait_is_bounded_and_says_why_it_ended() {
        let tabs = BrowserTabs::new(2);
        let held = tabs.take("ann", NOW).await.unwrap();
        // Ann's next render finds her one tab held, and is refused once its wait ran out.
        let refused = tabs.take("ann", NOW).await.unwrap_err();
        assert_eq!(refused, TabsError::Busy { waited: NOW });
        assert!(refused.to_string().contains("none came free"), "{refused}");
        // A check's gate takes nothing up front; its renders queue, a bounded number of them.
        let gate = tabs.open("ann", Use::Check).await.unwrap();
        assert_eq!(tabs.held("ann"), 1);
        let queued: Vec<_> = (0..MAX_WAITING)
            .map(|_| {
                let gate = gate.clone();
                tokio::spawn(async move { gate.enter().await.map(|_| ()) })
            })
            .collect();
        while tabs.ledger().users.get("ann").map_or(0, |u| u.waiting) < MAX_WAITING {
            tokio::task::yield_now().await;
        }
        let Err(refused) = gate.enter().await else {
            panic!("one render too many was let through");
        };
        assert!(refused.0.contains("256 of your pages"), "{refused}");
        // Bob's render is neither refused nor held behind Ann's queue.
        let bob = tabs.take("bob", NOW).await.unwrap();
        drop((bob, held));
        for render in queued {
            render.abort();
        }
    }
}
