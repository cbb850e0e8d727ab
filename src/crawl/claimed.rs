//! The URLs a crawl has claimed: every normalized URL it has taken to fetch (links the frontier
//! released, redirect hops, a browser's own redirect targets). The [`Frontier`](super::frontier)
//! is its one writer and decides every claim. Workers read it to drop the links of a page that
//! the crawl already has before building their URLs: on a site whose pages link to one another,
//! most of the links of each page that follows its links. The read is only a shortcut: a link it
//! lets through is decided by the frontier as before, and a link it drops is one the frontier
//! would drop (a claim is never taken back), so a crawl's pages, depths and order are what they
//! would be without it.

use std::sync::{PoisonError, RwLock, RwLockReadGuard};

/// A set of claimed URLs, hashed with foldhash: a fraction of SipHash's time a URL (links are
/// looked up by the page's worker and again by the frontier). foldhash is seeded for each set but
/// only minimally resistant to chosen collisions; the set holds no more than the page budget's
/// links and the redirect hops taken, so colliding links could slow only their own crawl.
pub(crate) type UrlSet = std::collections::HashSet<Box<str>, foldhash::fast::RandomState>;

/// What became of a claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Claim {
    /// The URL is the crawl's now.
    New,
    /// The crawl had it already.
    Known,
    /// The set holds as many URLs as the claim allowed; the URL was not claimed.
    Full,
}

/// The claimed URLs, shared by a crawl's coordinator and its workers. At most the page budget's
/// links plus the redirect hops taken (each page's bounded by the hop limit).
#[derive(Default)]
pub(crate) struct Claimed {
    urls: RwLock<UrlSet>,
}

impl Claimed {
    /// Claims `url` unless the crawl has it already or the set holds `limit` URLs. For the
    /// frontier alone.
    pub fn claim(&self, url: &str, limit: usize) -> Claim {
        let mut urls = self.urls.write().unwrap_or_else(PoisonError::into_inner);
        if urls.contains(url) {
            Claim::Known
        } else if urls.len() >= limit {
            Claim::Full
        } else {
            urls.insert(url.into());
            Claim::New
        }
    }

    /// The set as it stands, to look up a batch of links under one lock. The frontier's next
    /// claim waits for the guard (a runtime thread, blocked), so a reader holds it only for a
    /// bounded batch of synchronous lookups.
    pub fn read(&self) -> RwLockReadGuard<'_, UrlSet> {
        // A panic while the set was written leaves it whole (an insert either happened or not).
        self.urls.read().unwrap_or_else(PoisonError::into_inner)
    }
}
