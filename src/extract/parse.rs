//! HTML5 parsing into scraper's tree with a bound on nesting depth.
//!
//! html5ever builds the tree a browser builds, but its tree builder scans the stack of open
//! elements on every start tag, so a page nested 100,000 deep takes 16 s to parse (measured:
//! 10,000 deep 0.25 s, 30,000 deep 1.3 s). We feed the parser in chunks through a sink that
//! measures the depth of each inserted node and stop as soon as it passes [`MAX_DEPTH`]: such a
//! page is an error, found in milliseconds. Browsers do not render deeper trees faithfully either
//! (Blink flattens beyond 512 levels).

use super::ExtractError;
use ego_tree::NodeId;
use html5ever::tendril::{StrTendril, TendrilSink};
use html5ever::tree_builder::{ElementFlags, NodeOrText, QuirksMode, TreeSink};
use html5ever::{Attribute, QualName};
use scraper::{Html, HtmlTreeSink};
use std::borrow::Cow;
use std::cell::{Cell, Ref};

/// Deepest element nesting accepted in a page.
pub const MAX_DEPTH: usize = 1024;

/// Input is fed in pieces this large so a too-deep page is caught early.
const CHUNK: usize = 16 * 1024;

/// Parses `html` as a document the way a browser does.
pub fn parse_document(html: &str) -> Result<Html, ExtractError> {
    let sink = DepthGuard {
        inner: HtmlTreeSink::new(Html::new_document()),
        too_deep: Cell::new(false),
    };
    let mut parser = html5ever::parse_document(sink, Default::default());
    let mut rest = html;
    while !rest.is_empty() {
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

/// scraper's sink, plus a depth check on every insertion.
struct DepthGuard {
    inner: HtmlTreeSink,
    too_deep: Cell<bool>,
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
        self.inner.create_element(name, attrs, flags)
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

    fn add_attrs_if_missing(&self, target: &NodeId, attrs: Vec<Attribute>) {
        self.inner.add_attrs_if_missing(target, attrs)
    }

    fn remove_from_parent(&self, target: &NodeId) {
        self.inner.remove_from_parent(target)
    }

    fn reparent_children(&self, node: &NodeId, new_parent: &NodeId) {
        self.inner.reparent_children(node, new_parent)
    }
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
