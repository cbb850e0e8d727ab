//! The browser tabs the interface takes on a user's behalf (a rendered preview, a picker fetch
//! of a rendered page), counted here in one place: one per user at a time and
//! [`ON_DEMAND_TABS`] in all. `wachet serve` sizes the renderer's tabs for the scheduler's
//! browser slots plus these, so the interface's renders never take a tab a check needs, and
//! one user's hanging pages hold only that user's tab, never another user's.

use super::turns::{Turn, Turns};
use std::sync::Arc;
use std::time::Duration;

/// Tabs the interface's renders may hold at once, in all, beside the scheduler's.
pub const ON_DEMAND_TABS: usize = 2;
/// The renderer's tabs for a service running `browser_checks` browser checks at once: the
/// scheduler's (twice its slots, lent ones included) and the interface's own.
pub fn renderer_tabs(browser_checks: usize) -> usize {
    browser_checks.max(1) * 2 + ON_DEMAND_TABS
}

/// Tabs one user's renders may hold at once.
const PER_USER: usize = 1;
/// How long a render waits for the user's tab before it is refused.
const WAIT: Duration = Duration::from_secs(5);

/// The interface's tabs, per user and in all.
#[derive(Debug)]
pub struct BrowserTabs(Arc<Turns>);

impl Default for BrowserTabs {
    fn default() -> Self {
        BrowserTabs(Arc::new(Turns::new(PER_USER, ON_DEMAND_TABS)))
    }
}

impl BrowserTabs {
    /// A tab for `user`'s render, or `None` when their tab (or every one) stayed busy.
    pub async fn take(&self, user: &str) -> Option<Turn> {
        self.0.take(user, WAIT).await
    }
}

/// What a user is told when their render found no tab.
pub const BUSY: &str =
    "A page is already being rendered in the browser for you. Wait for it, then try again.";
