//! A fetched page's HTML made inert for showing it to people (the web interface's
//! point-and-click picker shows it in a sandboxed frame): parsed as a check parses it, then
//! written back with everything that could act removed, while every element stays where it
//! was, so an XPath written against the shown page selects what it selects in a check.
//!
//! What goes: the content and attributes of `<script>` (the element stays, typed
//! `text/plain`), the content of `<noscript>`, every `on…` event attribute, `http-equiv` of `<meta>` (refresh, cookies,
//! policies), `href` and `target` of `<base>`, `href` of `<link>`, `action` and `formaction`,
//! `srcdoc`, and `javascript:` or `data:` URLs in `href`, `src`, `action` and the like. This is
//! a second line only: the frame's own Content-Security-Policy and sandbox keep scripts off
//! whatever is left.

use super::{Deadline, ExtractError, parse};
use html5ever::serialize::{SerializeOpts, TraversalScope, serialize};
use html5ever::tendril::StrTendril;
use html5ever::{LocalName, QualName, ns};
use scraper::Node;

/// Attributes that hold a URL a browser may follow or load.
const URL_ATTRIBUTES: &[&str] = &[
    "href",
    "src",
    "action",
    "formaction",
    "data",
    "poster",
    "background",
    "xlink:href",
];

/// `html` as a document that can do nothing but be looked at, or why it cannot be parsed
/// (nested too deep, or not parsed before `deadline`). The result is UTF-8 whatever the
/// page's own encoding was; its `<meta charset>` is left as it was, so it must be served with
/// a `charset=utf-8` content type.
pub fn inert_html(html: &str, deadline: Deadline) -> Result<String, ExtractError> {
    let mut doc = parse::parse(html, Some(deadline))?;
    let ids: Vec<_> = doc.tree.root().descendants().map(|n| n.id()).collect();
    // Elements whose content goes: scripts, and `<noscript>`.
    let mut scripts = Vec::new();
    for id in ids {
        let Some(mut node) = doc.tree.get_mut(id) else {
            continue;
        };
        let Node::Element(element) = node.value() else {
            continue;
        };
        let name = element.name().to_string();
        element
            .attrs
            .retain(|(attr, value)| keep(&name, attr, value));
        if name == "script" {
            element.attrs.push((
                QualName::new(None, ns!(), LocalName::from("type")),
                StrTendril::from("text/plain"),
            ));
            scripts.push(id);
        }
        // Parsed with scripts on, its content is text here; shown with scripts off, a browser
        // would read it as markup (a `<meta http-equiv=refresh>` inside would act): it goes.
        if name == "noscript" {
            scripts.push(id);
        }
    }
    let script_texts: Vec<_> = scripts
        .into_iter()
        .filter_map(|id| doc.tree.get(id))
        .flat_map(|script| script.children().map(|c| c.id()).collect::<Vec<_>>())
        .collect();
    for id in script_texts {
        if let Some(mut child) = doc.tree.get_mut(id) {
            child.detach();
        }
    }
    let mut out = Vec::with_capacity(html.len());
    let opts = SerializeOpts {
        // As the page was parsed (`<noscript>` is empty by now either way).
        scripting_enabled: true,
        traversal_scope: TraversalScope::IncludeNode,
        create_missing_parent: false,
    };
    // Writing into memory cannot fail.
    let _ = serialize(&mut out, &doc, opts);
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Whether the attribute `attr="value"` of a `<name>` element stays.
fn keep(name: &str, attr: &QualName, value: &str) -> bool {
    let local: &str = &attr.local;
    let lower = local.to_ascii_lowercase();
    if lower.starts_with("on") || lower == "srcdoc" || lower == "formaction" {
        return false;
    }
    match (name, lower.as_str()) {
        ("script", _) => false,
        ("meta", "http-equiv") => false,
        ("base", "href" | "target") => false,
        ("link", "href" | "imagesrcset") => false,
        ("form", "action") => false,
        _ if URL_ATTRIBUTES.contains(&lower.as_str()) => !acts(value),
        _ => true,
    }
}

/// A URL that runs or carries code instead of naming a place (`javascript:`, `vbscript:`,
/// `data:`), spelled as browsers read it: leading spaces and control characters, and tabs
/// and newlines anywhere, ignored; any case.
fn acts(value: &str) -> bool {
    let scheme: String = value
        .trim_start_matches(|c: char| c <= ' ')
        .chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
        .take(11)
        .collect::<String>()
        .to_ascii_lowercase();
    ["javascript:", "vbscript:", "data:"]
        .iter()
        .any(|s| scheme.starts_with(s))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn inert(html: &str) -> String {
        inert_html(html, Deadline::after(Duration::from_secs(10))).unwrap()
    }

    #[test]
    fn scripts_handlers_refresh_base_and_actions_go_elements_stay() {
        let out = inert(
            r#"<html><head><meta http-equiv="refresh" content="0;url=https://x.test/"><base href="https://x.test/"><script src="a.js"></script>
            <noscript><meta http-equiv="refresh" content="0;url=https://x.test/steal"></noscript></head>
            <body onload="alert(1)"><script>top.document.title='x'</script><div id="a"><p>One</p><p class=b>Two</p></div>
            <form action="https://x.test/steal"><button formaction="/x">Go</button></form>
            <a href=" JavaScript:alert(1)">j</a><a href="/fine">f</a><iframe srcdoc="<script>1</script>"></iframe></body></html>"#,
        );
        for gone in [
            "http-equiv",
            "a.js",
            "onload",
            "top.document",
            "x.test/steal",
            "<base href",
            "formaction",
            "srcdoc",
            "alert",
        ] {
            assert!(!out.contains(gone), "{gone} left in {out}");
        }
        assert_eq!(
            out.matches("<script type=\"text/plain\"></script>").count(),
            2
        );
        assert!(out.contains(r#"<p class="b">Two</p>"#), "{out}");
        assert!(out.contains(r#"<a href="/fine">f</a>"#), "{out}");
        // The same elements in the same places: positional XPaths still select the same.
        let extractor = |xpath: &str| {
            crate::extract::Extractor::new(
                crate::validate::compile_xpath(Some(xpath)).unwrap(),
                None,
                None,
            )
        };
        for xpath in [
            "/html/body/div[1]/p[2]",
            "count(//*)",
            "/html/body/script[1]",
        ] {
            let page = r#"<script>x</script><div id="a"><p>One</p><p class=b>Two</p></div><meta http-equiv=refresh content=1>"#;
            assert_eq!(
                extractor(xpath).extract(&inert(page)).ok(),
                extractor(xpath).extract(page).ok(),
                "{xpath}"
            );
        }
    }

    #[test]
    fn too_deep_pages_are_refused_as_a_check_refuses_them() {
        let page = "<div>".repeat(2000);
        let err = inert_html(&page, Deadline::after(Duration::from_secs(10))).unwrap_err();
        assert!(matches!(err, ExtractError::TooDeep { .. }), "{err}");
    }
}
