//! Link resolution: the raw values of a page's `a[href]`, `area[href]`, `frame[src]` and
//! `iframe[src]` (found by the page's analysis, from its tree or its one-pass scan) resolved
//! against the first `<base href>` (itself resolved against the page's final URL), as browsers
//! do, and normalized for the crawl's dedup. A link written as a plain path is joined to its
//! base as text and looked up among the URLs the crawl has claimed, and dropped here when found,
//! before the URL parser sees it; any other link is parsed, and the frontier drops those it has.

use super::claimed::Claimed;
use super::normalize;
use url::{Position, Url};

/// Links looked up under one hold of the claimed set's read lock: the frontier's next claim
/// waits for no more than this many lookups, whatever the size of the page.
const LOOKUP_BATCH: usize = 64;

/// Resolves raw link values against the page's base and normalizes them, leaving out links
/// that are not http(s) and plain links the crawl has already `claimed` (a link it has that
/// only the parser can join is left to the frontier, which drops it).
pub fn resolve_new<'a>(
    page_url: &Url,
    base_href: Option<&str>,
    hrefs: impl IntoIterator<Item = &'a str>,
    strip_tracking: bool,
    claimed: &Claimed,
) -> Vec<Url> {
    let base = base_href.and_then(|href| page_url.join(href.trim()).ok());
    let base = base.as_ref().unwrap_or(page_url);
    let plain_base = PlainBase::of(base);
    let mut hrefs = hrefs.into_iter().map(str::trim).peekable();
    let mut plain = String::new();
    let mut unknown = Vec::new();
    while hrefs.peek().is_some() {
        let known = claimed.read();
        for href in hrefs.by_ref().take(LOOKUP_BATCH) {
            let joined = plain_base
                .as_ref()
                .is_some_and(|b| b.join(href, &mut plain));
            if !(joined && known.contains(plain.as_str())) {
                unknown.push(href);
            }
        }
    }
    unknown
        .into_iter()
        .filter_map(|href| normalize::resolve(base, href, strip_tracking))
        .collect()
}

/// A base URL as plain text joins paths to it: an http(s) URL whose path has no escape, split
/// once a page into its scheme and authority and its directory.
struct PlainBase<'a> {
    /// Up to the path: `http://host:port`.
    origin: &'a str,
    /// The path up to its last slash: `/dir/`.
    directory: &'a str,
}

impl<'a> PlainBase<'a> {
    fn of(base: &'a Url) -> Option<Self> {
        let path = base.path();
        if !matches!(base.scheme(), "http" | "https") || path.contains('%') {
            return None;
        }
        // An http(s) URL's path starts with a slash.
        let directory = path.rfind('/')?;
        Some(PlainBase {
            origin: &base[..Position::BeforePath],
            directory: &path[..=directory],
        })
    }

    /// Writes to `out` the normalized URL of `href` joined to the base, when plain text can:
    /// `href` is a path of unreserved characters (letters, digits, `-`, `.`, `_`, `~`) and
    /// slashes, with no dot segment and no two slashes in a row, so no scheme, authority,
    /// query, fragment, escape or white space. Such a path is the base's origin followed by it
    /// (from `/`) or by the base's directory and it: what the URL parser and [`normalize`] make
    /// of it. False for any other link, which then takes the parser.
    fn join(&self, href: &str, out: &mut String) -> bool {
        let plain_byte =
            |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/');
        if href.is_empty()
            || !href.as_bytes().iter().all(plain_byte)
            || href.contains("//")
            || href
                .split('/')
                .any(|segment| segment == "." || segment == "..")
        {
            return false;
        }
        out.clear();
        out.push_str(self.origin);
        if !href.starts_with('/') {
            out.push_str(self.directory);
        }
        out.push_str(href);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::parse::parse_document;
    use crate::extract::raw_links;
    use crate::test_rng::Xorshift;

    #[test]
    fn links_come_from_anchors_areas_and_frames_against_base() {
        let doc = parse_document(
            r#"<a href="first.html">before base</a><base href="/docs/"><a href="a.html">a</a>
               <area href="/b"><iframe src="c"></iframe><base href="/other/">
               <a href="mailto:x@y">m</a><a>no href</a><link href="/style.css"><img src="/i.png">"#,
        )
        .unwrap();
        let page = Url::parse("http://s.example/index.html").unwrap();
        let (base, hrefs) = raw_links(&doc);
        let found: Vec<String> = resolve_new(&page, base, hrefs, false, &Claimed::default())
            .into_iter()
            .map(String::from)
            .collect();
        // The first base counts for every link, also those before it.
        assert_eq!(
            found,
            [
                "http://s.example/docs/first.html",
                "http://s.example/docs/a.html",
                "http://s.example/b",
                "http://s.example/docs/c"
            ]
        );
    }

    #[test]
    fn plain_links_the_crawl_has_are_left_out_and_the_rest_left_to_the_frontier() {
        let page = Url::parse("http://s.example/docs/index.html?page=2").unwrap();
        let claimed = Claimed::default();
        for url in ["http://s.example/docs/a.html", "http://s.example/b?x=1"] {
            claimed.claim(url, usize::MAX);
        }
        // More links than one batch of lookups, the claimed ones after the first batch.
        let mut hrefs: Vec<String> = (0..100).map(|i| format!("n{i}.html")).collect();
        hrefs.extend(["a.html", " /docs/a.html", "./a.html", "/b?x=1", "c.html"].map(String::from));
        let found: Vec<String> = resolve_new(
            &page,
            None,
            hrefs.iter().map(String::as_str),
            false,
            &claimed,
        )
        .into_iter()
        .map(String::from)
        .collect();
        assert_eq!(found.len(), 103, "{found:?}");
        assert_eq!(found[0], "http://s.example/docs/n0.html");
        // A claimed link only the parser can join (a dot segment, a query) goes on to the
        // frontier, which has it.
        assert_eq!(
            found[100..],
            [
                "http://s.example/docs/a.html",
                "http://s.example/b?x=1",
                "http://s.example/docs/c.html"
            ]
        );
    }

    /// Whenever a link is joined as text, the text is the URL the parser and normalization make
    /// of it: random links of characters plain and not, against bases of every shape.
    #[test]
    fn a_link_joined_as_text_is_the_parsed_url() {
        let bases = [
            "http://s.example/index.html",
            "http://s.example/",
            "https://User:pw@S.Example:8443/a/b/c.html?q=1#frag",
            "http://127.0.0.1:18082/p/5.html",
            "http://s.example/dir/",
            "http://s.example/a%7e/b.html",
            "https://xn--bcher-kva.example/%C3%BC/x",
            "http://[::1]:8080/x/y",
            "http://s.example",
            "http://s.example.:80/x/",
            "http://us%20er:p@s.example/a/b",
        ];
        let pieces = [
            "a", "B", "0", "-", ".", "_", "~", "/", "..", "./", "%7e", "%2F", "?", "#", ":", "\\",
            " ", "\t", "é", "//", "p/", "x.html",
        ];
        let mut rng = Xorshift(0x9E37_79B9_7F4A_7C15);
        let (mut joined, mut out) = (0, String::new());
        for base in bases {
            let base = Url::parse(base).unwrap();
            let plain_base = PlainBase::of(&base);
            for _ in 0..20_000 {
                let len = rng.next() % 6;
                let href: String = (0..len).map(|_| rng.pick(&pieces)).collect();
                if plain_base.as_ref().is_some_and(|b| b.join(&href, &mut out)) {
                    joined += 1;
                    for strip_tracking in [false, true] {
                        let parsed = normalize::resolve(&base, &href, strip_tracking);
                        let parsed = parsed.as_ref().map(Url::as_str);
                        assert_eq!(Some(out.as_str()), parsed, "{base} + {href:?}");
                    }
                }
            }
        }
        // Most random links are not plain; enough are to make the comparison mean something.
        assert!(joined > 10_000, "{joined} links joined as text");
    }
}
