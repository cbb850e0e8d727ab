//! Link resolution: the raw values of a page's `a[href]`, `area[href]`, `frame[src]` and
//! `iframe[src]` (found by the page's analysis, from its tree or its one-pass scan) resolved
//! against the first `<base href>` (itself resolved against the page's final URL), as browsers
//! do, and normalized for the crawl's dedup.

use super::normalize;
use url::Url;

/// Resolves raw link values against the page's base and normalizes them; links that are not
/// http(s) are dropped.
pub fn resolve_all<'a>(
    page_url: &Url,
    base_href: Option<&str>,
    hrefs: impl IntoIterator<Item = &'a str>,
    strip_tracking: bool,
) -> Vec<Url> {
    let base = base_href.and_then(|href| page_url.join(href.trim()).ok());
    let base = base.as_ref().unwrap_or(page_url);
    let hrefs = hrefs.into_iter();
    // Sized once: grown from empty, a page's forty links were three large reallocations.
    let mut links = Vec::with_capacity(hrefs.size_hint().0);
    links.extend(hrefs.filter_map(|href| normalize::resolve(base, href, strip_tracking)));
    links
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::parse::parse_document;
    use crate::extract::raw_links;

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
        let found: Vec<String> = resolve_all(&page, base, hrefs, false)
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
}
