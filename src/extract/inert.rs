//! A fetched page's HTML made inert for showing it to people (the web interface's
//! point-and-click picker shows it in a sandboxed frame): parsed as a check parses it, cleaned
//! on the parsed tree against allow-lists, and written back, while every element a person can
//! pick stays where it was, so an XPath written against the shown page selects what it selects
//! in a check.
//!
//! What stays: HTML elements (the active ones emptied or stripped of what makes them act), the
//! SVG and MathML elements of [`SVG_ELEMENTS`] and [`MATHML_ELEMENTS`] (others go with their
//! content: SVG `animate`, `set` and the like, which could write a `javascript:` link), and
//! attributes of [`ATTRIBUTES`], `data-*` and `aria-*`, each checked for what it holds.
//! What goes: the content and attributes of `<script>` (the element stays, typed `text/plain`),
//! the content of `<noscript>` and `<plaintext>`, every `on…` event attribute, `http-equiv` (refresh, cookies,
//! policies), `href` and `target` of `<base>`, `href` of `<link>`, `action` and `formaction`,
//! `srcdoc`, links but to web, mail and phone addresses, a script address (`javascript:`,
//! `vbscript:`) in any attribute but the words shown to people, and every URL that loads something
//! but `data:` images (`src` of images only); in CSS, `url()` but of `data:` images,
//! `@import` and the other functions that load, and a `<style>` whose text holds a `<`.
//!
//! A tree cleaned and written out may read back as another tree (markup built for that:
//! foreign content, raw-text elements, misnested tables), and a browser reads it back. So the
//! output is parsed and cleaned again until a round changes nothing: what is returned is what
//! its own parse looks like, already clean. A page that keeps changing is refused
//! ([`ExtractError::Unsettled`]). The frame's Content-Security-Policy and sandbox are the other
//! line of defence.

use super::{Deadline, ExtractError, parse};
use ego_tree::NodeId;
use html5ever::serialize::{SerializeOpts, TraversalScope, serialize};
use html5ever::tendril::StrTendril;
use html5ever::{LocalName, QualName, ns};
use scraper::{Html, Node};

/// Rounds of parsing and cleaning before a page that still changes is refused; a page needs
/// one, markup built to change when read back a few.
const MAX_ROUNDS: usize = 4;

/// SVG elements kept (their names as the parser gives them). Animation elements (`animate`,
/// `set`, ...), `feImage`, `cursor` and unknown ones go with their content.
const SVG_ELEMENTS: &[&str] = &[
    "a",
    "circle",
    "clipPath",
    "defs",
    "desc",
    "ellipse",
    "feBlend",
    "feColorMatrix",
    "feComponentTransfer",
    "feComposite",
    "feConvolveMatrix",
    "feDiffuseLighting",
    "feDisplacementMap",
    "feDistantLight",
    "feDropShadow",
    "feFlood",
    "feFuncA",
    "feFuncB",
    "feFuncG",
    "feFuncR",
    "feGaussianBlur",
    "feMerge",
    "feMergeNode",
    "feMorphology",
    "feOffset",
    "fePointLight",
    "feSpecularLighting",
    "feSpotLight",
    "feTile",
    "feTurbulence",
    "filter",
    "foreignObject",
    "g",
    "image",
    "line",
    "linearGradient",
    "marker",
    "mask",
    "metadata",
    "path",
    "pattern",
    "polygon",
    "polyline",
    "radialGradient",
    "rect",
    "script",
    "stop",
    "style",
    "svg",
    "switch",
    "symbol",
    "text",
    "textPath",
    "title",
    "tspan",
    "use",
    "view",
];

/// MathML elements kept; `maction` and unknown ones go with their content.
const MATHML_ELEMENTS: &[&str] = &[
    "annotation",
    "annotation-xml",
    "math",
    "menclose",
    "merror",
    "mfenced",
    "mfrac",
    "mglyph",
    "mi",
    "mlabeledtr",
    "mmultiscripts",
    "mn",
    "mo",
    "mover",
    "mpadded",
    "mphantom",
    "mprescripts",
    "mroot",
    "mrow",
    "ms",
    "mspace",
    "msqrt",
    "mstyle",
    "msub",
    "msubsup",
    "msup",
    "mtable",
    "mtd",
    "mtext",
    "mtr",
    "munder",
    "munderover",
    "none",
    "semantics",
];

/// Attributes kept (lower case; SVG's camelCase ones are compared lower-cased), besides
/// `data-*` and `aria-*` and names with a hyphen (presentation attributes such as
/// `stroke-width`; none of them acts). URL attributes are judged by [`url_stays`].
const ATTRIBUTES: &[&str] = &[
    // HTML
    "abbr",
    "accept",
    "accesskey",
    "align",
    "alink",
    "allow",
    "alt",
    "autocapitalize",
    "autocomplete",
    "autocorrect",
    "autoplay",
    "bgcolor",
    "border",
    "cellpadding",
    "cellspacing",
    "char",
    "charoff",
    "charset",
    "checked",
    "cite",
    "class",
    "clear",
    "color",
    "cols",
    "colspan",
    "content",
    "contenteditable",
    "controls",
    "coords",
    "crossorigin",
    "datetime",
    "decoding",
    "default",
    "dir",
    "dirname",
    "disabled",
    "download",
    "draggable",
    "enctype",
    "enterkeyhint",
    "face",
    "for",
    "frame",
    "frameborder",
    "headers",
    "height",
    "hidden",
    "high",
    "href",
    "hreflang",
    "hspace",
    "id",
    "inert",
    "inputmode",
    "integrity",
    "is",
    "ismap",
    "itemid",
    "itemprop",
    "itemref",
    "itemscope",
    "itemtype",
    "kind",
    "label",
    "lang",
    "link",
    "list",
    "loading",
    "loop",
    "low",
    "marginheight",
    "marginwidth",
    "max",
    "maxlength",
    "media",
    "method",
    "min",
    "minlength",
    "multiple",
    "muted",
    "name",
    "nonce",
    "noshade",
    "novalidate",
    "nowrap",
    "open",
    "optimum",
    "pattern",
    "placeholder",
    "playsinline",
    "popover",
    "preload",
    "readonly",
    "referrerpolicy",
    "rel",
    "required",
    "rev",
    "reversed",
    "role",
    "rows",
    "rowspan",
    "rules",
    "sandbox",
    "scope",
    "scrolling",
    "selected",
    "shape",
    "size",
    "sizes",
    "slot",
    "span",
    "spellcheck",
    "src",
    "srclang",
    "start",
    "step",
    "style",
    "summary",
    "tabindex",
    "target",
    "text",
    "title",
    "translate",
    "type",
    "usemap",
    "valign",
    "value",
    "vlink",
    "vspace",
    "width",
    "wrap",
    // SVG
    "accumulate",
    "additive",
    "alignment-baseline",
    "amplitude",
    "azimuth",
    "basefrequency",
    "baseprofile",
    "bias",
    "clip",
    "clippathunits",
    "cx",
    "cy",
    "d",
    "diffuseconstant",
    "direction",
    "display",
    "divisor",
    "dx",
    "dy",
    "edgemode",
    "elevation",
    "exponent",
    "fill",
    "filter",
    "filterunits",
    "flood-color",
    "flood-opacity",
    "fr",
    "fx",
    "fy",
    "g1",
    "g2",
    "glyph-name",
    "glyphref",
    "gradienttransform",
    "gradientunits",
    "in",
    "in2",
    "intercept",
    "k",
    "k1",
    "k2",
    "k3",
    "k4",
    "kernelmatrix",
    "kernelunitlength",
    "kerning",
    "keypoints",
    "keysplines",
    "keytimes",
    "lengthadjust",
    "limitingconeangle",
    "marker",
    "markerheight",
    "markerunits",
    "markerwidth",
    "mask",
    "maskcontentunits",
    "maskunits",
    "mode",
    "numoctaves",
    "offset",
    "opacity",
    "operator",
    "order",
    "orient",
    "orientation",
    "overflow",
    "paint-order",
    "path",
    "pathlength",
    "patterncontentunits",
    "patterntransform",
    "patternunits",
    "points",
    "pointsatx",
    "pointsaty",
    "pointsatz",
    "preservealpha",
    "preserveaspectratio",
    "primitiveunits",
    "r",
    "radius",
    "refx",
    "refy",
    "requiredfeatures",
    "result",
    "rotate",
    "rx",
    "ry",
    "scale",
    "seed",
    "specularconstant",
    "specularexponent",
    "spreadmethod",
    "startoffset",
    "stddeviation",
    "stitchtiles",
    "stroke",
    "surfacescale",
    "systemlanguage",
    "tablevalues",
    "targetx",
    "targety",
    "textlength",
    "transform",
    "u1",
    "u2",
    "unicode",
    "version",
    "viewbox",
    "visibility",
    "x",
    "x1",
    "x2",
    "xchannelselector",
    "xmlns",
    "y",
    "y1",
    "y2",
    "ychannelselector",
    "z",
    "zoomandpan",
    // MathML
    "accent",
    "accentunder",
    "bevelled",
    "close",
    "columnalign",
    "columnlines",
    "columnspacing",
    "columnspan",
    "denomalign",
    "depth",
    "display",
    "displaystyle",
    "encoding",
    "fence",
    "largeop",
    "linethickness",
    "lspace",
    "mathbackground",
    "mathcolor",
    "mathsize",
    "mathvariant",
    "maxsize",
    "minsize",
    "movablelimits",
    "notation",
    "numalign",
    "rowalign",
    "rowlines",
    "rowspacing",
    "rspace",
    "scriptlevel",
    "scriptminsize",
    "scriptsizemultiplier",
    "selection",
    "separator",
    "separators",
    "stretchy",
    "subscriptshift",
    "superscriptshift",
    "symmetric",
    "voffset",
];

/// Attributes with a hyphen that act all the same.
const HYPHENATED_DENIED: &[&str] = &["http-equiv", "accept-charset"];

/// CSS that loads something, lower case. `url(` of a `data:` image stays.
const CSS_LOADERS: &[&str] = &[
    "url(",
    "@import",
    "image-set(",
    "image(",
    "cross-fade(",
    "element(",
    "src(",
    "paint(",
    "expression(",
    "behavior",
    "-moz-binding",
];

/// `html` as a document that can do nothing but be looked at, or why it cannot be made so
/// (nested too deep, not done before `deadline`, or read back differently every time). The
/// result is UTF-8 whatever the page's own encoding was; its `<meta charset>` is left as it
/// was, so it must be served with a `charset=utf-8` content type.
pub fn inert_html(html: &str, deadline: Deadline) -> Result<String, ExtractError> {
    let mut out = clean_once(html, deadline)?;
    for _ in 1..MAX_ROUNDS {
        let again = clean_once(&out, deadline)?;
        if again == out {
            return Ok(out);
        }
        out = again;
    }
    Err(ExtractError::Unsettled)
}

/// One round: parse, clean the tree, write it out.
fn clean_once(html: &str, deadline: Deadline) -> Result<String, ExtractError> {
    let mut doc = parse::parse(html, Some(deadline))?;
    clean(&mut doc);
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

/// What becomes of an element's content.
enum Content {
    /// Kept (and cleaned in turn).
    Keep,
    /// Its children go, the element stays.
    Empty,
    /// The element goes with everything in it.
    Remove,
}

fn clean(doc: &mut Html) {
    let ids: Vec<NodeId> = doc.tree.root().descendants().map(|n| n.id()).collect();
    let mut emptied = Vec::new();
    let mut removed = Vec::new();
    for id in ids {
        let Some(mut node) = doc.tree.get_mut(id) else {
            continue;
        };
        let Node::Element(element) = node.value() else {
            continue;
        };
        let name = element.name.clone();
        let content = match name.ns {
            ns!(html) => match &*name.local {
                "script" => {
                    element.attrs.clear();
                    Content::Empty
                }
                // Parsed with scripts on, its content is text here; shown with scripts off, a
                // browser would read it as markup.
                "noscript" => Content::Empty,
                // Its text runs to the end of the page, so written back it swallows the end tags
                // after it and grows each round.
                "plaintext" => Content::Empty,
                _ => Content::Keep,
            },
            ns!(svg) if SVG_ELEMENTS.contains(&&*name.local) => match &*name.local {
                "script" => {
                    element.attrs.clear();
                    Content::Empty
                }
                _ => Content::Keep,
            },
            ns!(mathml) if MATHML_ELEMENTS.contains(&&*name.local) => Content::Keep,
            _ => Content::Remove,
        };
        element
            .attrs
            .retain(|(attr, value)| attribute_stays(&name, attr, value));
        for (attr, value) in element.attrs.iter_mut() {
            if &*attr.local == "style"
                && let Some(css) = inert_css(value)
            {
                *value = StrTendril::from(css);
            }
        }
        if &*name.local == "script" {
            element.attrs.push((
                QualName::new(None, ns!(), LocalName::from("type")),
                StrTendril::from("text/plain"),
            ));
        }
        match content {
            Content::Keep => {}
            Content::Empty => emptied.push(id),
            Content::Remove => removed.push(id),
        }
        if (*name.local).eq_ignore_ascii_case("style") {
            style_text(doc, id, &mut emptied);
        }
    }
    for id in removed {
        if let Some(mut node) = doc.tree.get_mut(id) {
            node.detach();
        }
    }
    let children: Vec<NodeId> = emptied
        .into_iter()
        .filter_map(|id| doc.tree.get(id))
        .flat_map(|node| node.children().map(|c| c.id()).collect::<Vec<_>>())
        .collect();
    for id in children {
        if let Some(mut child) = doc.tree.get_mut(id) {
            child.detach();
        }
    }
}

/// A `<style>` keeps its text only as inert CSS and only without a `<` (text that could end
/// the element when read back); one with elements inside (SVG's or MathML's, whose content is
/// markup) is emptied.
fn style_text(doc: &mut Html, id: NodeId, emptied: &mut Vec<NodeId>) {
    let Some(style) = doc.tree.get(id) else {
        return;
    };
    let texts: Vec<NodeId> = style.children().map(|c| c.id()).collect();
    let only_text = style.children().all(|c| matches!(c.value(), Node::Text(_)));
    let text: String = style
        .children()
        .filter_map(|c| match c.value() {
            Node::Text(text) => Some(&*text.text),
            _ => None,
        })
        .collect();
    let css = if only_text && !text.contains('<') {
        inert_css(&text)
    } else {
        None
    };
    match css {
        Some(css) if texts.len() == 1 => {
            if let Some(mut node) = doc.tree.get_mut(texts[0])
                && let Node::Text(text) = node.value()
            {
                text.text = StrTendril::from(css);
            }
        }
        _ if texts.is_empty() => {}
        _ => emptied.push(id),
    }
}

/// Whether the attribute `attr="value"` of the element `element` stays.
fn attribute_stays(element: &QualName, attr: &QualName, value: &str) -> bool {
    let lower = (*attr.local).to_ascii_lowercase();
    if lower.starts_with("on") {
        return false;
    }
    let known = ATTRIBUTES.contains(&lower.as_str())
        || lower.starts_with("data-")
        || lower.starts_with("aria-")
        || (lower.contains('-') && !HYPHENATED_DENIED.contains(&lower.as_str()));
    // `xlink:href` is `href` in the xlink namespace; other namespaced attributes but `xml:lang`
    // and `xmlns` are not needed to show a page.
    let namespaced_ok = match attr.ns {
        ns!() => true,
        ns!(xlink) => lower == "href",
        ns!(xml) => lower == "lang" || lower == "space",
        ns!(xmlns) => true,
        _ => false,
    };
    if !known || !namespaced_ok {
        return false;
    }
    let html = element.ns == ns!(html);
    let name: &str = &element.local;
    match lower.as_str() {
        "href" => match (html, name) {
            (true, "a" | "area") => url_stays(value, Use::Link),
            (true, _) => false,
            // SVG references to parts of the page itself (`<use href="#icon">`) load nothing.
            (false, "a") => url_stays(value, Use::Link),
            _ if element.ns == ns!(svg) => value.trim_start().starts_with('#'),
            // MathML links.
            _ => url_stays(value, Use::Link),
        },
        "src" => html && matches!(name, "img" | "source" | "input") && url_stays(value, Use::Image),
        "cite" | "itemtype" | "itemid" => url_stays(value, Use::Link),
        "target" => !(html && name == "base"),
        "style" => inert_css(value).is_some(),
        // Words shown to people may read like a script address and stay; any other attribute
        // holding one goes, whatever it means today (`<param value>` to a plugin, an `x` a
        // later mutation could make a link).
        _ if SHOWN_TEXT.contains(&lower.as_str())
            || lower.starts_with("aria-")
            || lower.starts_with("data-") =>
        {
            !loads_by_url(value)
        }
        // SVG's `fill="url(#g)"` names a part of the page; any other `url()` could load.
        _ => !loads_by_url(value) && !script_url(value),
    }
}

/// Attributes whose values are words shown to people (or kept for them), never followed.
const SHOWN_TEXT: &[&str] = &["title", "alt", "label", "placeholder", "summary"];

/// Whether `value`, read as a URL the way browsers read one, runs script when followed.
fn script_url(value: &str) -> bool {
    !url_stays(value, Use::Link)
        && matches!(
            url_scheme(value).as_deref(),
            Some("javascript" | "vbscript" | "livescript")
        )
}

/// Whether an attribute's value holds a CSS `url()` of anything but a part of the page.
fn loads_by_url(value: &str) -> bool {
    let lower = css_unescape(value).to_ascii_lowercase();
    lower.match_indices("url(").any(|(at, _)| {
        !lower[at + 4..]
            .trim_start_matches(|c: char| c.is_ascii_whitespace() || c == '"' || c == '\'')
            .starts_with('#')
    })
}

/// What a URL is used for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Use {
    /// Followed when clicked: web, mail and phone addresses, and relative ones.
    Link,
    /// Loaded as an image: only `data:` images (the frame loads nothing from outside).
    Image,
}

/// The start of a URL as browsers read it: leading spaces and control characters, and tabs
/// and newlines anywhere, ignored; lower case.
fn url_start(value: &str) -> String {
    value
        .trim_start_matches(|c: char| c <= ' ')
        .chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
        .take(64)
        .collect::<String>()
        .to_ascii_lowercase()
}

/// The scheme of a URL as browsers read it ([`url_start`]), if it names one.
fn url_scheme(value: &str) -> Option<String> {
    let cleaned = url_start(value);
    cleaned
        .find([':', '/', '?', '#'])
        .filter(|at| cleaned[*at..].starts_with(':'))
        .map(|at| cleaned[..at].to_string())
}

/// Whether a URL may stay in an attribute used so, judged on its scheme as browsers read it.
fn url_stays(value: &str, usage: Use) -> bool {
    match usage {
        Use::Image => url_start(value).starts_with("data:image/"),
        Use::Link => matches!(
            url_scheme(value).as_deref(),
            None | Some("http" | "https" | "mailto" | "tel")
        ),
    }
}

/// `css` with everything that loads made invalid (so browsers drop those declarations), or
/// `None` when it hides a loader behind escapes (then it goes whole).
fn inert_css(css: &str) -> Option<String> {
    let lower = css.to_ascii_lowercase();
    let decoded = css_unescape(css).to_lowercase();
    for loader in CSS_LOADERS {
        if decoded.matches(loader).count() > lower.matches(loader).count() {
            return None;
        }
    }
    let mut out = String::with_capacity(css.len());
    let mut at = 0;
    while at < css.len() {
        let rest = &lower[at..];
        let found = CSS_LOADERS.iter().find(|loader| rest.starts_with(*loader));
        match found {
            Some(&"url(") if data_image(&rest[4..]) => {
                out.push_str(&css[at..at + 4]);
                at += 4;
            }
            // Split by a word no loader contains, so a second round finds nothing to change.
            Some(loader) => {
                let (left, right) = loader.split_at(loader.len() / 2);
                out.push_str(left);
                out.push_str("-blocked-");
                out.push_str(right);
                at += loader.len();
            }
            None => {
                let step = css[at..].chars().next().map_or(1, char::len_utf8);
                out.push_str(&css[at..at + step]);
                at += step;
            }
        }
    }
    Some(out)
}

/// Whether the argument of a `url(` starts with a `data:` image.
fn data_image(argument: &str) -> bool {
    argument
        .trim_start_matches(|c: char| c.is_ascii_whitespace() || c == '"' || c == '\'')
        .starts_with("data:image/")
}

/// CSS text with its escapes resolved (`\75` is `u`, `\(` is `(`), to see what a browser reads.
fn css_unescape(css: &str) -> String {
    let mut out = String::with_capacity(css.len());
    let mut chars = css.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let mut hex = String::new();
        while hex.len() < 6
            && let Some(&h) = chars.peek()
            && h.is_ascii_hexdigit()
        {
            hex.push(h);
            chars.next();
        }
        if hex.is_empty() {
            match chars.next() {
                Some('\n') | None => {}
                Some(other) => out.push(other),
            }
            continue;
        }
        if chars.peek().is_some_and(|c| c.is_ascii_whitespace()) {
            chars.next();
        }
        let code = u32::from_str_radix(&hex, 16).unwrap_or(0xFFFD);
        out.push(char::from_u32(code).unwrap_or('\u{FFFD}'));
    }
    out
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

    /// What in `html`, as a browser parses it, could run, load or navigate.
    fn acting(html: &str) -> Vec<String> {
        let doc = parse::parse(html, None).unwrap();
        let mut found = Vec::new();
        for node in doc.tree.root().descendants() {
            let Node::Element(element) = node.value() else {
                continue;
            };
            let name: &str = &element.name.local;
            if [
                "animate",
                "set",
                "animateMotion",
                "animateTransform",
                "discard",
                "handler",
                "feImage",
                "maction",
            ]
            .contains(&name)
            {
                found.push(format!("<{name}>"));
            }
            if name == "script" && node.children().next().is_some() {
                found.push("script content".into());
            }
            if name == "style" {
                let text: String = node
                    .children()
                    .filter_map(|c| c.value().as_text().map(|t| t.to_string()))
                    .collect();
                let lower = text.to_ascii_lowercase();
                if lower.contains("@import")
                    || lower.replace("url(data:image/", "").contains("url(")
                {
                    found.push(format!("style {text}"));
                }
            }
            for (attr, value) in &element.attrs {
                let local = (*attr.local).to_ascii_lowercase();
                let v = value.to_ascii_lowercase();
                let bad = local.starts_with("on")
                    || [
                        "srcdoc",
                        "action",
                        "formaction",
                        "srcset",
                        "poster",
                        "background",
                        "ping",
                        "http-equiv",
                    ]
                    .contains(&local.as_str())
                    || (local == "src" && !v.starts_with("data:image/"))
                    || (local == "href"
                        && (name == "base" || name == "link" || !url_stays(&v, Use::Link)))
                    || (local == "style" && v.contains("url("))
                    || (!["title", "alt"].contains(&local.as_str())
                        && matches!(url_scheme(&v).as_deref(), Some("javascript" | "vbscript")));
                if bad {
                    found.push(format!("<{name} {local}={value}>"));
                }
            }
        }
        found
    }

    #[test]
    fn mutation_vectors_are_inert_once_read_back_and_the_result_is_stable() {
        for vector in [
            "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>",
            "<math><mtext><table><mglyph><style><!--</style><img title=\"--&gt;&lt;/mglyph&gt;&lt;img&Tab;src=1&Tab;onerror=alert(1)&gt;\">",
            "<math><mtext><table><mglyph><style><meta http-equiv=refresh content=0><base href=//x.test/><a href=javascript:alert(1)>x</a><iframe srcdoc=x></iframe><form action=//x.test/></form>",
            "<form><math><mtext></form><form><mglyph><style></math><img src onerror=alert(1)>",
            "<svg></p><style><a id=\"</style><img src=1 onerror=alert(1)>\">",
            "<math><mi><mglyph><svg><mtext><textarea><path id=\"</textarea><img onerror=alert(1) src=1>\">",
            "<svg><style>&lt;img src=x onerror=alert(1)&gt;</style></svg>",
            "<noscript><p title=\"</noscript><img src=x onerror=alert(1)>\"></noscript>",
            "<svg><a><animate attributeName=href values=javascript:alert(1) /><set attributeName=onclick to=alert(1) /><text>x</text></a></svg>",
            "<svg><script>alert(1)</script><image href=//x.test/i.png /><use href=//x.test/u.svg#a /><use href=#local /></svg>",
            "<style>@im\\port '//x.test/a.css'; body{background:u\\72l(//x.test/b.png)}</style><div style=\"background:url(//x.test/c.png)\">d</div>",
            "<img src=//x.test/i.png srcset=//x.test/s.png><img src=\"data:image/png;base64,AAAA\"><video poster=//x.test/p.png></video>",
            "<object><param name=DataURL value=\"java&#x09;script:alert(1)\"></object><input x=javascript: autofocus><svg><text x=\" VBScript:msgbox\">t</text></svg>",
        ] {
            let out = inert(vector);
            assert_eq!(acting(&out), Vec::<String>::new(), "{vector}\n-> {out}");
            assert_eq!(inert(&out), out, "not stable: {vector}");
        }
        // What is harmless stays: data images, links to web pages, local SVG references, CSS,
        // words that only read like a script address.
        let out = inert(
            "<style>p{color:red;background:url(data:image/png;base64,AA)}</style><img src=\"data:image/png;base64,AA\"><a href=\"https://example.com/\">w</a><svg><use href=\"#i\"/></svg><p data-price=\"3\" aria-label=\"l\" style=\"color:blue\" title=\"javascript: a tutorial\">p</p>",
        );
        for kept in [
            "title=\"javascript: a tutorial\"",
            "color:red;background:url(data:image/png;base64,AA)",
            "<img src=\"data:image/png;base64,AA\">",
            "href=\"https://example.com/\"",
            "<use href=\"#i\">",
            "data-price=\"3\"",
            "aria-label=\"l\"",
            "style=\"color:blue\"",
        ] {
            assert!(out.contains(kept), "{kept} gone from {out}");
        }
    }

    #[test]
    fn css_loaders_are_invalidated_even_when_escaped() {
        assert_eq!(
            inert_css("a{b:url(x.png)}").as_deref(),
            Some("a{b:ur-blocked-l(x.png)}")
        );
        assert_eq!(
            inert_css("@import 'x.css';").as_deref(),
            Some("@im-blocked-port 'x.css';")
        );
        assert_eq!(
            inert_css("a{b:URL( 'data:image/png;base64,A')}").as_deref(),
            Some("a{b:URL( 'data:image/png;base64,A')}")
        );
        assert_eq!(inert_css("a{b:u\\72l(x.png)}"), None);
        assert_eq!(inert_css("@\\69mport 'x.css';"), None);
        assert_eq!(
            inert_css("a{content:\"\\f101\"}").as_deref(),
            Some("a{content:\"\\f101\"}")
        );
    }

    #[test]
    fn too_deep_pages_are_refused_as_a_check_refuses_them() {
        let page = "<div>".repeat(2000);
        let err = inert_html(&page, Deadline::after(Duration::from_secs(10))).unwrap_err();
        assert!(matches!(err, ExtractError::TooDeep { .. }), "{err}");
    }
}
