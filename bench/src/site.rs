//! A deterministic static site for crawl benchmarks.
//!
//! Page 0 is `/index.html`; page `i > 0` is `/p/{i}.html`. The pages form a breadth-first tree
//! whose fan-out is the smallest (at least 22) that puts all `n` pages within three hops of the
//! index, so a crawl of depth 3 can find every page. Each page also links to its parent, the
//! index, a few neighbours and pseudo-random pages, about 20 distinct links in all (the tree's
//! inner pages have their children besides), and carries text padding it to about 8 KB. The
//! same `n` always gives the same bytes.
//!
//! Only `std` is used, so the root crate's criterion bench can include this file with
//! `#[path]` while `wachet-bench` uses it as a module.

use std::fmt::Write as _;
use std::io;
use std::path::Path;

/// Default number of pages.
pub const DEFAULT_PAGES: usize = 10_000;
/// Hops from the index within which every page lies.
pub const DEPTH: u32 = 3;
/// Size each page is padded to (bytes, approximately).
pub const PAGE_BYTES: usize = 8 * 1024;
/// Links each page carries besides its tree children.
pub const LINKS_PER_PAGE: usize = 20;

/// A site of `pages` pages.
#[derive(Debug, Clone, Copy)]
pub struct Site {
    /// Number of pages (at least 1).
    pub pages: usize,
    /// Children per inner page of the tree.
    pub fanout: usize,
}

impl Site {
    /// The site of `pages` pages.
    pub fn new(pages: usize) -> Site {
        let pages = pages.max(1);
        let mut fanout = 22;
        while within_depth(fanout, DEPTH) < pages {
            fanout += 1;
        }
        Site { pages, fanout }
    }

    /// The site's path of page `i`.
    pub fn path(i: usize) -> String {
        if i == 0 {
            "/index.html".to_string()
        } else {
            format!("/p/{i}.html")
        }
    }

    /// Tree children of page `i`.
    pub fn children(&self, i: usize) -> std::ops::Range<usize> {
        let first = (i * self.fanout + 1).min(self.pages);
        let end = (i * self.fanout + self.fanout + 1).min(self.pages);
        first..end
    }

    /// Depth of page `i` in the tree (its shortest distance is never larger).
    pub fn depth(&self, mut i: usize) -> u32 {
        let mut d = 0;
        while i > 0 {
            i = (i - 1) / self.fanout;
            d += 1;
        }
        d
    }

    /// The distinct pages page `i` links to, children first.
    pub fn links(&self, i: usize) -> Vec<usize> {
        let mut out: Vec<usize> = self.children(i).collect();
        let push = |out: &mut Vec<usize>, j: usize| {
            if j != i && j < self.pages && !out.contains(&j) {
                out.push(j);
            }
        };
        let want = out.len() + LINKS_PER_PAGE;
        push(&mut out, 0);
        if i > 0 {
            push(&mut out, (i - 1) / self.fanout);
        }
        for j in [i.wrapping_sub(1), i + 1, i + 2] {
            push(&mut out, j);
        }
        let mut rng = Rng::new(i as u64);
        let mut tries = 0;
        while out.len() < want && out.len() + 1 < self.pages && tries < 10 * LINKS_PER_PAGE {
            push(&mut out, rng.below(self.pages as u64) as usize);
            tries += 1;
        }
        out
    }

    /// The HTML of page `i`.
    pub fn page(&self, i: usize) -> String {
        let mut rng = Rng::new(0x5eed ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let links = self.links(i);
        let mut html = String::with_capacity(PAGE_BYTES + 2048);
        let title = format!("Page {i} - {}", words(&mut rng, 3));
        let _ = write!(
            html,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
             <title>{title}</title>\n<style>body{{font-family:sans-serif}}</style>\n</head>\n\
             <body id=\"top\">\n<header class=\"site-header\"><a class=\"logo\" href=\"/index.html\">Bench site</a>\n\
             <nav class=\"main-nav\"><ul>\n"
        );
        // The navigation bar: the index, the parent and the first few links.
        let nav = links.len().min(6);
        for &j in &links[..nav] {
            let _ = writeln!(
                html,
                "<li><a href=\"{}\">{}</a></li>",
                Site::path(j),
                words(&mut rng, 2)
            );
        }
        let _ = write!(
            html,
            "</ul></nav>\n</header>\n<main>\n<article>\n<h1>{title}</h1>\n\
             <p class=\"meta\">Depth {} &middot; <a href=\"#comments\">Comments</a></p>\n",
            self.depth(i)
        );
        // The body: paragraphs, each carrying some of the remaining links, relative or rooted.
        let mut rest = links[nav..].iter().peekable();
        let mut para = 0;
        while html.len() < PAGE_BYTES - 320 || rest.peek().is_some() {
            let _ = write!(html, "<p>{}", sentence(&mut rng));
            for _ in 0..3 {
                if let Some(&j) = rest.next() {
                    let href = if j > 0 && i > 0 && para % 2 == 0 {
                        format!("{j}.html")
                    } else {
                        Site::path(j)
                    };
                    let _ = write!(
                        html,
                        " See <a href=\"{href}\">{}</a>. {}",
                        words(&mut rng, 3),
                        sentence(&mut rng)
                    );
                }
            }
            html.push_str("</p>\n");
            para += 1;
            if para % 4 == 0 {
                let _ = writeln!(html, "<h2>{}</h2>", words(&mut rng, 4));
            }
        }
        let _ = write!(
            html,
            "</article>\n<aside id=\"comments\"><p>No comments yet.</p></aside>\n</main>\n\
             <footer><p>&copy; Bench site. <a href=\"#top\">Back to top</a></p></footer>\n\
             </body>\n</html>\n"
        );
        html
    }

    /// Writes every page below `dir`.
    pub fn write(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir_all(dir.join("p"))?;
        for i in 0..self.pages {
            let path = Site::path(i);
            std::fs::write(dir.join(path.trim_start_matches('/')), self.page(i))?;
        }
        Ok(())
    }
}

/// Pages of a tree of `fanout` within `depth` hops of its root.
fn within_depth(fanout: usize, depth: u32) -> usize {
    (0..=depth).map(|d| fanout.pow(d)).sum()
}

/// Writes a site of `pages` pages below `dir`.
pub fn generate(dir: &Path, pages: usize) -> io::Result<Site> {
    let site = Site::new(pages);
    site.write(dir)?;
    Ok(site)
}

const WORDS: &[&str] = &[
    "price", "stock", "update", "monitor", "change", "page", "release", "notes", "report",
    "market", "weather", "schedule", "ticket", "service", "status", "delivery", "product",
    "catalog", "review", "season", "offer", "archive", "issue", "summary", "network", "river",
    "garden", "library", "station", "museum", "harbour", "valley", "engine", "signal", "window",
    "letter", "morning", "evening", "quiet", "bright", "rapid", "gentle", "public", "local",
    "annual", "recent", "simple", "careful", "open", "closed", "north", "south", "the", "a", "of",
    "and", "to", "in", "for", "with", "on", "by", "from", "about",
];

fn words(rng: &mut Rng, n: usize) -> String {
    let mut out = String::new();
    for k in 0..n {
        if k > 0 {
            out.push(' ');
        }
        out.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
    }
    out
}

fn sentence(rng: &mut Rng) -> String {
    let n = 8 + rng.below(14) as usize;
    let mut s = words(rng, n);
    if let Some(first) = s.get_mut(0..1) {
        first.make_ascii_uppercase();
    }
    s.push('.');
    s
}

/// SplitMix64: small, fast and the same everywhere.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x2545_f491_4f6c_dd1d)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}
