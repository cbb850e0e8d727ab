//! Link discovery on a parsed page: `a[href]`, `area[href]`, `frame[src]`, `iframe[src]`,
//! resolved against `<base href>` (itself resolved against the page's final URL).

use super::normalize;
use scraper::{Html, Node};
use url::Url;

/// The normalized http(s) links of `doc`, in document order, duplicates included.
pub fn links(doc: &Html, page_url: &Url, strip_tracking: bool) -> Vec<Url> {
    let mut base = page_url.clone();
    let mut out = Vec::new();
    let mut base_seen = false;
    for node in doc.tree.root().descendants() {
        let Node::Element(el) = node.value() else {
            continue;
        };
        let attr = match el.name() {
            "a" | "area" => "href",
            "frame" | "iframe" => "src",
            // Only the first <base href> counts, as in browsers.
            "base" if !base_seen => {
                if let Some(href) = el.attr("href") {
                    base_seen = true;
                    if let Ok(resolved) = page_url.join(href.trim()) {
                        base = resolved;
                    }
                }
                continue;
            }
            _ => continue,
        };
        if let Some(value) = el.attr(attr)
            && let Some(url) = normalize::resolve(&base, value, strip_tracking)
        {
            out.push(url);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::parse::parse_document;

    #[test]
    fn links_come_from_anchors_areas_and_frames_against_base() {
        let doc = parse_document(
            r#"<base href="/docs/"><a href="a.html">a</a><area href="/b"><iframe src="c"></iframe>
               <a href="mailto:x@y">m</a><a>no href</a><link href="/style.css"><img src="/i.png">"#,
        )
        .unwrap();
        let page = Url::parse("http://s.example/index.html").unwrap();
        let found: Vec<String> = links(&doc, &page, false)
            .into_iter()
            .map(String::from)
            .collect();
        assert_eq!(
            found,
            [
                "http://s.example/docs/a.html",
                "http://s.example/b",
                "http://s.example/docs/c"
            ]
        );
    }
}
