//! HTML5 parsing into scraper's tree with a bound on nesting depth.
//!
//! html5ever builds the tree a browser builds, but its tree builder scans the stack of open
//! elements on every start tag, so a page nested 100,000 deep takes 16 s to parse (measured:
//! 10,000 deep 0.25 s, 30,000 deep 1.3 s). We feed the parser in chunks through a sink that
//! measures the depth of each inserted node and stop as soon as it passes [`MAX_DEPTH`]: such a
//! page is an error, found in milliseconds. Browsers do not render deeper trees faithfully either
//! (Blink flattens beyond 512 levels).
//!
//! Attributes have a bound too. html5ever checks each attribute of a tag against all earlier
//! ones for duplicates, and scraper inserts the attributes a repeated `<html>` or `<body>` adds
//! one by one into a sorted vector: both grow with the square of the count, so one element with
//! 400,000 attributes (a 4.7 MB page) took over 80 s to parse. An element keeps its first
//! [`MAX_ATTRIBUTES`] attributes as written; later ones are dropped before the parser sees them
//! ([`cap_attributes`]), and a repeated `<html>`/`<body>` adds attributes only up to the bound.
//! A parse given a [`Deadline`] reads the clock between chunks of input.

use super::{Deadline, ExtractError};
use ego_tree::NodeId;
use html5ever::tendril::{StrTendril, TendrilSink};
use html5ever::tree_builder::{ElementFlags, NodeOrText, QuirksMode, TreeSink};
use html5ever::{Attribute, QualName};
use scraper::{Html, HtmlTreeSink, Node};
use std::borrow::Cow;
use std::cell::{Cell, Ref, RefCell};
use std::collections::HashSet;

/// Deepest element nesting accepted in a page.
pub const MAX_DEPTH: usize = 1024;

/// Most attributes an element keeps; later ones in its tag are dropped. Real pages stay far
/// below (a few dozen at most); the bound keeps parsing linear in the page's size.
pub const MAX_ATTRIBUTES: usize = 1000;

/// Input is fed in pieces this large so a too-deep page is caught early, and a deadline
/// noticed within one piece's work.
const CHUNK: usize = 16 * 1024;

/// Parses `html` as a document the way a browser does.
pub fn parse_document(html: &str) -> Result<Html, ExtractError> {
    parse(html, None)
}

/// [`parse_document`], or [`ExtractError::TimedOut`] soon after `deadline`.
pub fn parse_document_within(html: &str, deadline: Deadline) -> Result<Html, ExtractError> {
    parse(html, Some(deadline))
}

pub(super) fn parse(html: &str, deadline: Option<Deadline>) -> Result<Html, ExtractError> {
    let html = cap_attributes(html);
    let sink = DepthGuard {
        inner: HtmlTreeSink::new(Html::new_document()),
        too_deep: Cell::new(false),
        integration_points: RefCell::new(HashSet::new()),
    };
    let mut parser = html5ever::parse_document(sink, Default::default());
    let mut rest: &str = &html;
    let mut first = true;
    while !rest.is_empty() {
        // Between chunks only: a page parsed in one piece never fails for time.
        if !first && let Some(deadline) = deadline.filter(Deadline::passed) {
            return Err(deadline.error());
        }
        first = false;
        let mut end = rest.len().min(CHUNK);
        while !rest.is_char_boundary(end) {
            end += 1;
        }
        let (piece, tail) = rest.split_at(end);
        parser.process(StrTendril::from_slice(piece));
        if parser.tokenizer.sink.sink.too_deep.get() {
            return Err(ExtractError::TooDeep { limit: MAX_DEPTH });
        }
        rest = tail;
    }
    let (html, too_deep) = parser.finish();
    if too_deep {
        return Err(ExtractError::TooDeep { limit: MAX_DEPTH });
    }
    Ok(html)
}

/// scraper's sink, plus a depth check on every insertion, the attribute bound, and the MathML
/// `annotation-xml` elements that are HTML integration points.
struct DepthGuard {
    inner: HtmlTreeSink,
    too_deep: Cell<bool>,
    /// `<annotation-xml encoding="text/html">` (or XHTML) elements, whose content is HTML as in
    /// a browser. scraper's sink does not remember them, so without this html5ever would treat
    /// a `<div>` there as breaking out of the formula. (html5ever's scope checks still miss
    /// `annotation-xml` as a boundary: a block there closes a `<p>` around the formula, which
    /// browsers keep open.)
    integration_points: RefCell<HashSet<NodeId>>,
}

impl DepthGuard {
    fn check_depth(&self, parent: NodeId) {
        if self.too_deep.get() {
            return;
        }
        let html = self.inner.0.borrow();
        if let Some(node) = html.tree.get(parent) {
            // Counting at most MAX_DEPTH ancestors keeps this O(MAX_DEPTH) per node even on
            // hostile input; ordinary pages are 10-30 deep.
            if node.ancestors().take(MAX_DEPTH).count() >= MAX_DEPTH {
                self.too_deep.set(true);
            }
        }
    }

    fn check_child(&self, parent: NodeId, child: &NodeOrText<NodeId>) {
        if matches!(child, NodeOrText::AppendNode(_)) {
            self.check_depth(parent);
        }
    }
}

impl TreeSink for DepthGuard {
    type Output = (Html, bool);
    type Handle = NodeId;
    type ElemName<'a> = Ref<'a, QualName>;

    fn finish(self) -> (Html, bool) {
        (self.inner.finish(), self.too_deep.get())
    }

    fn parse_error(&self, msg: Cow<'static, str>) {
        self.inner.parse_error(msg)
    }

    fn get_document(&self) -> NodeId {
        self.inner.get_document()
    }

    fn elem_name<'a>(&'a self, target: &'a NodeId) -> Ref<'a, QualName> {
        self.inner.elem_name(target)
    }

    fn create_element(&self, name: QualName, attrs: Vec<Attribute>, flags: ElementFlags) -> NodeId {
        let point = flags.mathml_annotation_xml_integration_point;
        let id = self.inner.create_element(name, attrs, flags);
        if point {
            self.integration_points.borrow_mut().insert(id);
        }
        id
    }

    fn is_mathml_annotation_xml_integration_point(&self, handle: &NodeId) -> bool {
        self.integration_points.borrow().contains(handle)
    }

    fn create_comment(&self, text: StrTendril) -> NodeId {
        self.inner.create_comment(text)
    }

    fn create_pi(&self, target: StrTendril, data: StrTendril) -> NodeId {
        self.inner.create_pi(target, data)
    }

    fn append(&self, parent: &NodeId, child: NodeOrText<NodeId>) {
        self.check_child(*parent, &child);
        self.inner.append(parent, child)
    }

    fn append_based_on_parent_node(
        &self,
        element: &NodeId,
        prev_element: &NodeId,
        child: NodeOrText<NodeId>,
    ) {
        self.check_child(*prev_element, &child);
        self.inner
            .append_based_on_parent_node(element, prev_element, child)
    }

    fn append_doctype_to_document(
        &self,
        name: StrTendril,
        public_id: StrTendril,
        system_id: StrTendril,
    ) {
        self.inner
            .append_doctype_to_document(name, public_id, system_id)
    }

    fn get_template_contents(&self, target: &NodeId) -> NodeId {
        self.inner.get_template_contents(target)
    }

    fn same_node(&self, x: &NodeId, y: &NodeId) -> bool {
        self.inner.same_node(x, y)
    }

    fn set_quirks_mode(&self, mode: QuirksMode) {
        self.inner.set_quirks_mode(mode)
    }

    fn append_before_sibling(&self, sibling: &NodeId, new_node: NodeOrText<NodeId>) {
        self.inner.append_before_sibling(sibling, new_node)
    }

    /// A repeated `<html>` or `<body>` adds the attributes the element lacks, up to
    /// [`MAX_ATTRIBUTES`] in all, in linear time (scraper's own insertion is quadratic).
    fn add_attrs_if_missing(&self, target: &NodeId, attrs: Vec<Attribute>) {
        let mut html = self.inner.0.borrow_mut();
        let Some(mut node) = html.tree.get_mut(*target) else {
            return;
        };
        let Node::Element(element) = node.value() else {
            return;
        };
        let mut present: HashSet<QualName> =
            element.attrs.iter().map(|(name, _)| name.clone()).collect();
        let before = element.attrs.len();
        for attr in attrs {
            if element.attrs.len() >= MAX_ATTRIBUTES {
                break;
            }
            if present.insert(attr.name.clone()) {
                element.attrs.push((attr.name, attr.value));
            }
        }
        if element.attrs.len() != before {
            // scraper keeps attributes sorted by name.
            element.attrs.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        }
    }

    fn remove_from_parent(&self, target: &NodeId) {
        self.inner.remove_from_parent(target)
    }

    fn reparent_children(&self, node: &NodeId, new_parent: &NodeId) {
        self.inner.reparent_children(node, new_parent)
    }
}

/// Elements whose content the tokenizer reads as text up to their end tag.
const RAW_TEXT: [&[u8]; 9] = [
    b"script",
    b"style",
    b"xmp",
    b"iframe",
    b"noembed",
    b"noframes",
    b"noscript",
    b"textarea",
    b"title",
];

/// Drops the attributes of each tag past its [`MAX_ATTRIBUTES`]th, by cutting their source
/// out of the page; borrows the page unchanged when no tag has that many (the usual case).
///
/// Tags and attributes are found by the tokenizer's own rules for the data state (attribute
/// names, quoted and unquoted values, `/`), skipping comments, CDATA sections and the content
/// of raw-text elements. Where this reading and the tokenizer's could part (a `<style>` inside
/// SVG is not raw text, for one), it skips text the tokenizer reads as markup, never the
/// reverse: so it never cuts text the tokenizer would keep, only misses an over-long tag, whose
/// cost the parse's deadline then bounds. One pass, linear in the page.
pub fn cap_attributes(html: &str) -> Cow<'_, str> {
    let b = html.as_bytes();
    let mut cuts: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while let Some(off) = memchr::memchr(b'<', b.get(i..).unwrap_or_default()) {
        let lt = i + off;
        let next = b.get(lt + 1).copied();
        i = match next {
            Some(c) if c.is_ascii_alphabetic() => {
                let (end, name) = scan_tag(b, lt + 1, &mut cuts);
                match raw_text_end(b, end, name) {
                    Some(close) => close,
                    None => b.len(),
                }
            }
            Some(b'/') if b.get(lt + 2).is_some_and(u8::is_ascii_alphabetic) => {
                scan_tag(b, lt + 2, &mut cuts).0
            }
            Some(b'!') if b[lt..].starts_with(b"<!--") => find(b, lt + 4, b"-->"),
            Some(b'!') if b[lt..].starts_with(b"<![CDATA[") => find(b, lt + 9, b"]]>"),
            Some(b'!' | b'?') => find(b, lt + 2, b">"),
            _ => lt + 1,
        };
    }
    if cuts.is_empty() {
        return Cow::Borrowed(html);
    }
    let mut out = String::with_capacity(html.len());
    let mut from = 0;
    for (start, end) in cuts {
        // Cuts fall on ASCII bytes (an attribute's first byte, the byte after its end), so
        // on character boundaries.
        out.push_str(html.get(from..start).unwrap_or_default());
        from = end;
    }
    out.push_str(html.get(from..).unwrap_or_default());
    Cow::Owned(out)
}

fn is_space(c: u8) -> bool {
    matches!(c, b'\t' | b'\n' | b'\x0c' | b' ' | b'\r')
}

/// The index just past `needle` at or after `from`, or the end of the page.
fn find(b: &[u8], from: usize, needle: &[u8]) -> usize {
    b.get(from..)
        .and_then(|rest| memchr::memmem::find(rest, needle))
        .map_or(b.len(), |at| from + at + needle.len())
}

/// Reads the tag whose name starts at `name_start` up to its `>`; records the source of its
/// attributes past the bound in `cuts`. Returns the index after the tag and its name.
fn scan_tag<'b>(
    b: &'b [u8],
    name_start: usize,
    cuts: &mut Vec<(usize, usize)>,
) -> (usize, &'b [u8]) {
    let len = b.len();
    let mut pos = name_start;
    while pos < len && !is_space(b[pos]) && b[pos] != b'/' && b[pos] != b'>' {
        pos += 1;
    }
    let name = &b[name_start..pos];
    let mut count = 0usize;
    let mut cut_start = None;
    let mut last_end = pos;
    loop {
        while pos < len && (is_space(b[pos]) || b[pos] == b'/') {
            pos += 1;
        }
        if pos >= len {
            break;
        }
        if b[pos] == b'>' {
            pos += 1;
            break;
        }
        count += 1;
        if count == MAX_ATTRIBUTES + 1 {
            cut_start = Some(pos);
        }
        // The name: its first byte whatever it is (even `=`), then up to a space, `/`, `>`, `=`.
        pos += 1;
        while pos < len && !is_space(b[pos]) && !matches!(b[pos], b'/' | b'>' | b'=') {
            pos += 1;
        }
        let mut p = pos;
        while p < len && is_space(b[p]) {
            p += 1;
        }
        if p < len && b[p] == b'=' {
            p += 1;
            while p < len && is_space(b[p]) {
                p += 1;
            }
            pos = match b.get(p) {
                Some(&q @ (b'"' | b'\'')) => find(b, p + 1, &[q]),
                // A missing value; the `>` ends the tag.
                Some(b'>') | None => p,
                Some(_) => {
                    while p < len && !is_space(b[p]) && b[p] != b'>' {
                        p += 1;
                    }
                    p
                }
            };
        }
        last_end = pos;
    }
    if let Some(start) = cut_start {
        cuts.push((start, last_end));
    }
    (pos, name)
}

/// For a raw-text element's start tag ending at `from`: where its end tag `</name` begins,
/// or `None` when it has none (the rest of the page is its text). `Some(from)` for others.
fn raw_text_end(b: &[u8], from: usize, name: &[u8]) -> Option<usize> {
    if name.eq_ignore_ascii_case(b"plaintext") {
        return None;
    }
    if !RAW_TEXT.iter().any(|raw| name.eq_ignore_ascii_case(raw)) {
        return Some(from);
    }
    let mut i = from;
    while let Some(off) = memchr::memchr(b'<', b.get(i..).unwrap_or_default()) {
        let lt = i + off;
        let after = lt + 2 + name.len();
        if b.get(lt + 1) == Some(&b'/')
            && b.get(lt + 2..after)
                .is_some_and(|n| n.eq_ignore_ascii_case(name))
            && b.get(after)
                .is_none_or(|&c| is_space(c) || c == b'/' || c == b'>')
        {
            return Some(lt);
        }
        i = lt + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_beyond_the_limit_is_an_error() {
        let page = "<div>".repeat(100_000) + "x";
        let err = parse_document(&page).unwrap_err();
        assert_eq!(err, ExtractError::TooDeep { limit: MAX_DEPTH });
        assert!(err.to_string().contains("1024"));
    }

    #[test]
    fn nesting_just_below_the_limit_parses() {
        // html, body and the document take three levels.
        let page = "<div>".repeat(MAX_DEPTH - 4) + "deep";
        let html = parse_document(&page).unwrap();
        assert!(html.root_element().text().any(|t| t == "deep"));
    }

    #[test]
    fn multibyte_text_across_chunk_borders_is_kept() {
        let page = format!("<p>{}</p>", "é€😀".repeat(10_000));
        let html = parse_document(&page).unwrap();
        let text: String = html.root_element().text().collect();
        assert_eq!(text, "é€😀".repeat(10_000));
    }
}
