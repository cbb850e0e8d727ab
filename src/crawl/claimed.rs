//! The URLs a crawl has claimed: every normalized URL it has taken to fetch (links the frontier
//! released, redirect hops, a browser's own redirect targets). The [`Frontier`](super::frontier)
//! is its one writer and decides every claim. Workers read it to drop the links of a page that
//! the crawl already has before building their URLs: on a site whose pages link to one another,
//! most of each page's links. The read is only a shortcut: a link it lets through is decided by
//! the frontier as before, and a link it drops is one the frontier would drop (a claim is never
//! taken back), so a crawl's pages, depths and order are what they would be without it.

use std::sync::{PoisonError, RwLock, RwLockReadGuard};

/// A set of claimed URLs, hashed with foldhash: a fraction of SipHash's time a URL (every link of
/// every page is looked up), and seeded at random for each set, so a site cannot choose links
/// that collide.
pub(crate) type UrlSet = std::collections::HashSet<Box<str>, foldhash::fast::RandomState>;

/// The claimed URLs, shared by a crawl's coordinator and its workers. Bounded as the frontier's
/// seen set it is: the page budget's links plus the redirect hops taken.
#[derive(Default)]
pub(crate) struct Claimed {
    urls: RwLock<UrlSet>,
}

impl Claimed {
    /// Whether `url` is claimed.
    pub fn contains(&self, url: &str) -> bool {
        self.read().contains(url)
    }

    /// Claims `url`: false when it was claimed already. For the frontier alone.
    pub fn claim(&self, url: &str) -> bool {
        let mut urls = self.urls.write().unwrap_or_else(PoisonError::into_inner);
        if urls.contains(url) {
            return false;
        }
        urls.insert(url.into())
    }

    /// The set as it stands, to look up many links under one lock. Held only for synchronous
    /// lookups: the frontier's next claim waits for it.
    pub fn read(&self) -> RwLockReadGuard<'_, UrlSet> {
        // A panic while the set was written leaves it whole (an insert either happened or not).
        self.urls.read().unwrap_or_else(PoisonError::into_inner)
    }
}
