//! Link discovery: `a[href]`, `area[href]`, `frame[src]`, `iframe[src]`, resolved against the
//! first `<base href>` (itself resolved against the page's final URL), as browsers do. The
//! links come from the page's tree ([`links`]) or from the one-pass scan ([`resolve_all`]).

use super::normalize;
use scraper::{Html, Node};
use url::Url;

/// The normalized http(s) links of `doc`, in document order, duplicates included.
pub fn links(doc: &Html, page_url: &Url, strip_tracking: bool) -> Vec<Url> {
    let (base, hrefs) = raw_links(doc);
    resolve_all(page_url, base, hrefs, strip_tracking)
}

/// The first `<base href>` and the raw link values of `doc`, in document order.
pub(crate) fn raw_links(doc: &Html) -> (Option<&str>, Vec<&str>) {
    let mut base = None;
    let mut hrefs = Vec::new();
    for node in doc.tree.root().descendants() {
        let Node::Element(el) = node.value() else {
            continue;
        };
        let attr = match el.name() {
            "a" | "area" => "href",
            "frame" | "iframe" => "src",
            "base" => {
                if base.is_none() {
                    base = el.attr("href");
                }
                continue;
            }
            _ => continue,
        };
        if let Some(value) = el.attr(attr) {
            hrefs.push(value);
        }
    }
    (base, hrefs)
}

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
    hrefs
        .into_iter()
        .filter_map(|href| normalize::resolve(base, href, strip_tracking))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::parse::parse_document;

    #[test]
    fn links_come_from_anchors_areas_and_frames_against_base() {
        let doc = parse_document(
            r#"<a href="first.html">before base</a><base href="/docs/"><a href="a.html">a</a>
               <area href="/b"><iframe src="c"></iframe><base href="/other/">
               <a href="mailto:x@y">m</a><a>no href</a><link href="/style.css"><img src="/i.png">"#,
        )
        .unwrap();
        let page = Url::parse("http://s.example/index.html").unwrap();
        let found: Vec<String> = links(&doc, &page, false)
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
