//! The crawl's frontier: which URLs the crawl has claimed, how many pages of each depth are
//! still out, and the links waiting for their depth to be certain. A finished page's links get
//! depth d + 1 only once no page of depth < d is out: then every URL of depth <= d is known, so
//! each new URL's depth is its shortest distance from the start. Until then they wait here,
//! per level, and are released level by level in order. Every URL is claimed once (links,
//! redirect hops, a browser's own redirect targets alike), so none is fetched twice; the page
//! budget caps the links claimed. Bounds: the claimed set holds at most the budget's links plus
//! the redirect hops taken (each page's bounded by the hop limit); the waiting links are those
//! of finished pages, each page's bounded by its size. Owned by the coordinator alone; only the
//! claimed set is shared, with the workers, who read it (each claim here takes its lock).

use super::claimed::{Claim, Claimed};
use super::page::Pending;
use std::sync::Arc;
use url::Url;

/// Links found on one page, waiting for their depth to be certain.
struct Found {
    links: Vec<Url>,
    on: Arc<str>,
}

pub(crate) struct Frontier {
    max_depth: u8,
    max_pages: usize,
    /// Shared with the workers, who read it; written here alone.
    claimed: Arc<Claimed>,
    /// Pages out (queued, in flight or between redirect hops) per depth, 0 to `max_depth`.
    outstanding: Vec<usize>,
    /// Links found on finished pages, per depth of the page they were found on (0 to
    /// `max_depth` - 1).
    waiting: Vec<Vec<Found>>,
    budget_reached: bool,
}

impl Frontier {
    /// A frontier with the start page claimed and out; links are followed from pages of depth
    /// below `max_depth`, and at most `max_pages` links (the start included) are claimed.
    pub fn new(start: &Url, max_depth: u8, max_pages: usize, claimed: Arc<Claimed>) -> Self {
        let mut outstanding = vec![0; usize::from(max_depth) + 1];
        outstanding[0] = 1;
        // Pages of the deepest level follow no links.
        let mut waiting = Vec::with_capacity(usize::from(max_depth));
        waiting.resize_with(usize::from(max_depth), Vec::new);
        claimed.claim(start.as_str(), usize::MAX);
        Frontier {
            max_depth,
            max_pages,
            claimed,
            outstanding,
            waiting,
            budget_reached: false,
        }
    }

    /// Whether links found on a page of `depth` are followed.
    pub fn follows(&self, depth: u8) -> bool {
        depth < self.max_depth
    }

    /// Claims `url` (a redirect hop's target, or where a browser's redirects ended), whatever
    /// the budget: false when the crawl already has it.
    pub fn claim(&mut self, url: &Url) -> bool {
        self.claimed.claim(url.as_str(), usize::MAX) == Claim::New
    }

    /// A page finished (reported, left out or failed) with the in-scope `links` found on it;
    /// `final_url` is where a fetcher that follows redirects itself (a browser) ended, which is
    /// then not fetched again when a link to it turns up. Returns the pages to fetch now, in
    /// order: the links whose depth has become certain, each claimed once.
    pub fn finished(
        &mut self,
        page: &Pending,
        final_url: Option<&Url>,
        links: Vec<Url>,
    ) -> Vec<Pending> {
        let depth = usize::from(page.depth);
        if let Some(out) = self.outstanding.get_mut(depth) {
            *out = out.saturating_sub(1);
        }
        if let Some(url) = final_url {
            self.claim(url);
        }
        if let Some(waiting) = self.waiting.get_mut(depth)
            && !links.is_empty()
        {
            waiting.push(Found {
                links,
                on: Arc::from(page.url.as_str()),
            });
        }
        self.release()
    }

    /// The waiting links of every level whose shallower levels are all done.
    fn release(&mut self) -> Vec<Pending> {
        let mut released = Vec::new();
        for level in 0..self.waiting.len() {
            if self.outstanding[..level].iter().any(|&n| n > 0) {
                break;
            }
            let depth = u8::try_from(level + 1).unwrap_or(u8::MAX);
            for found in std::mem::take(&mut self.waiting[level]) {
                for link in found.links {
                    match self.claimed.claim(link.as_str(), self.max_pages) {
                        Claim::Known => continue,
                        Claim::Full => {
                            self.budget_reached = true;
                            break;
                        }
                        Claim::New => {}
                    }
                    self.outstanding[usize::from(depth)] += 1;
                    released.push(Pending {
                        fetch_url: link.clone(),
                        url: link,
                        hops: 0,
                        depth,
                        found_on: Some(found.on.clone()),
                        request: None,
                    });
                }
            }
        }
        released
    }

    /// Pages out, all depths together.
    #[cfg(test)]
    pub fn outstanding(&self) -> usize {
        self.outstanding.iter().sum()
    }

    /// Whether the page budget left an in-scope link unclaimed.
    pub fn budget_reached(&self) -> bool {
        self.budget_reached
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(path: &str) -> Url {
        Url::parse(&format!("http://s.example/{path}")).unwrap()
    }

    fn urls(paths: &[&str]) -> Vec<Url> {
        paths.iter().map(|p| url(p)).collect()
    }

    fn start() -> Pending {
        Pending {
            url: url(""),
            fetch_url: url(""),
            hops: 0,
            depth: 0,
            found_on: None,
            request: None,
        }
    }

    /// (path, depth, found on) of each page.
    fn described(pages: &[Pending]) -> Vec<(String, u8, String)> {
        pages
            .iter()
            .map(|p| {
                (
                    p.url.path().to_string(),
                    p.depth,
                    p.found_on.as_deref().unwrap_or("").to_string(),
                )
            })
            .collect()
    }

    #[test]
    fn each_url_is_claimed_once() {
        let mut frontier = Frontier::new(&url(""), 2, 100, Arc::default());
        let released = frontier.finished(&start(), None, urls(&["a", "a", "b", ""]));
        assert_eq!(
            described(&released),
            [
                ("/a".into(), 1, "http://s.example/".into()),
                ("/b".into(), 1, "http://s.example/".into())
            ]
        );
        // A redirect to a claimed page is refused; a new target is claimed once.
        assert!(!frontier.claim(&url("b")));
        assert!(frontier.claim(&url("r")));
        assert!(!frontier.claim(&url("r")));
        // A browser's own redirect target counts as claimed.
        let again = frontier.finished(&released[0], Some(&url("t")), urls(&["b", "r", "t", "c"]));
        assert_eq!(
            described(&again),
            [("/c".into(), 2, "http://s.example/a".into())]
        );
    }

    #[test]
    fn links_are_followed_only_below_the_depth_limit() {
        let mut frontier = Frontier::new(&url(""), 1, 100, Arc::default());
        assert!(frontier.follows(0));
        assert!(!frontier.follows(1));
        let released = frontier.finished(&start(), None, urls(&["a"]));
        assert_eq!(released.len(), 1);
        assert!(
            frontier
                .finished(&released[0], None, urls(&["deeper"]))
                .is_empty()
        );
        assert_eq!(frontier.outstanding(), 0);
        // The link beyond the limit was not claimed.
        assert!(frontier.claim(&url("deeper")));
    }

    #[test]
    fn outstanding_pages_reach_zero_when_every_page_finished() {
        let mut frontier = Frontier::new(&url(""), 3, 100, Arc::default());
        assert_eq!(frontier.outstanding(), 1);
        let mut queue = frontier.finished(&start(), None, urls(&["a", "b"]));
        assert_eq!(frontier.outstanding(), 2);
        let mut finished = 1;
        while let Some(page) = queue.pop() {
            let links = urls(&[&format!("{}x", page.url.path()), "a"]);
            queue.extend(frontier.finished(&page, None, links));
            finished += 1;
        }
        assert_eq!(frontier.outstanding(), 0);
        // The start, a and b, ax and bx, axx and bxx; the links beyond depth 3 are not taken.
        assert_eq!(finished, 7);
        assert!(!frontier.budget_reached());
    }

    #[test]
    fn deferred_links_wait_for_shallower_pages_and_come_out_in_level_order() {
        let mut frontier = Frontier::new(&url(""), 3, 100, Arc::default());
        let level1 = frontier.finished(&start(), None, urls(&["slow", "fast"]));
        let (slow, fast) = (&level1[0], &level1[1]);
        let level2 = frontier.finished(fast, None, urls(&["c"]));
        assert_eq!(
            described(&level2),
            [("/c".into(), 2, "http://s.example/fast".into())]
        );
        // "slow" (depth 1) is still out: c's link might yet be found closer to the start.
        assert!(
            frontier
                .finished(&level2[0], None, urls(&["e", "f"]))
                .is_empty()
        );
        // "slow" finishes linking to e too: e is at depth 2, found on "slow", and f follows
        // at depth 3, found on c.
        let released = frontier.finished(slow, None, urls(&["e"]));
        assert_eq!(
            described(&released),
            [
                ("/e".into(), 2, "http://s.example/slow".into()),
                ("/f".into(), 3, "http://s.example/c".into())
            ]
        );
    }

    #[test]
    fn the_page_budget_caps_the_links_claimed() {
        let mut frontier = Frontier::new(&url(""), 2, 3, Arc::default());
        let released = frontier.finished(&start(), None, urls(&["a", "b", "c", "d"]));
        assert_eq!(
            released.len(),
            2,
            "the start page counts against the budget"
        );
        assert!(frontier.budget_reached());
        // Known links are no new pages: they never reach the budget.
        let mut frontier = Frontier::new(&url(""), 2, 3, Arc::default());
        let released = frontier.finished(&start(), None, urls(&["a", "a", "b", ""]));
        assert_eq!(released.len(), 2);
        assert!(!frontier.budget_reached());
    }
}
