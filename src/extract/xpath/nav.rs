//! The XPath data model over scraper's `ego_tree`: which tree nodes are
//! XPath nodes, how to move between them, their string-values, and document
//! order. Everything here is iterative so that arbitrarily deep documents
//! cannot overflow the stack.
//!
//! Model: the tree root (Document, or Fragment for parsed fragments) is the
//! root node; Element, Text, Comment and ProcessingInstruction nodes are
//! nodes. Doctype nodes and empty text nodes are invisible. A non-root
//! Fragment (scraper's `<template>` contents) is transparent: its children
//! count as children of the `<template>` element, as in lxml/html5lib.
//! Adjacent text siblings form one XPath text node represented by the first
//! of them (the "leader"); later ones are never yielded.

use super::XNode;
use ego_tree::NodeRef;
use scraper::Node;
use std::borrow::Cow;
use std::collections::HashMap;

pub(crate) type NRef<'a> = NodeRef<'a, Node>;

/// A non-root fragment: scraper's `<template>` contents holder.
fn is_transparent(n: NRef<'_>) -> bool {
    matches!(n.value(), Node::Fragment) && n.parent().is_some()
}

/// Parent, skipping transparent fragments.
pub(crate) fn parent(n: NRef<'_>) -> Option<NRef<'_>> {
    let mut p = n.parent()?;
    while is_transparent(p) {
        p = p.parent()?;
    }
    Some(p)
}

enum Walk<'a> {
    /// Candidate to return unless it is transparent.
    Check(NRef<'a>),
    /// Continue with the sibling after (or before) this raw node.
    After(NRef<'a>),
}

/// Resolves transparent fragments moving forwards (first child / next
/// sibling). Fragments hold no fragments in practice, but the loop handles
/// any nesting without recursion.
fn walk_forward(mut w: Walk<'_>) -> Option<NRef<'_>> {
    loop {
        w = match w {
            Walk::Check(c) => {
                if !is_transparent(c) {
                    return Some(c);
                }
                match c.first_child() {
                    Some(fc) => Walk::Check(fc),
                    None => Walk::After(c),
                }
            }
            Walk::After(x) => match x.next_sibling() {
                Some(s) => Walk::Check(s),
                None => {
                    let p = x.parent()?;
                    if is_transparent(p) {
                        Walk::After(p)
                    } else {
                        return None;
                    }
                }
            },
        }
    }
}

fn walk_backward(mut w: Walk<'_>) -> Option<NRef<'_>> {
    loop {
        w = match w {
            Walk::Check(c) => {
                if !is_transparent(c) {
                    return Some(c);
                }
                match c.last_child() {
                    Some(lc) => Walk::Check(lc),
                    None => Walk::After(c),
                }
            }
            Walk::After(x) => match x.prev_sibling() {
                Some(s) => Walk::Check(s),
                None => {
                    let p = x.parent()?;
                    if is_transparent(p) {
                        Walk::After(p)
                    } else {
                        return None;
                    }
                }
            },
        }
    }
}

pub(crate) fn first_child(n: NRef<'_>) -> Option<NRef<'_>> {
    walk_forward(Walk::Check(n.first_child()?))
}

pub(crate) fn last_child(n: NRef<'_>) -> Option<NRef<'_>> {
    walk_backward(Walk::Check(n.last_child()?))
}

pub(crate) fn next_sibling(n: NRef<'_>) -> Option<NRef<'_>> {
    walk_forward(Walk::After(n))
}

pub(crate) fn prev_sibling(n: NRef<'_>) -> Option<NRef<'_>> {
    walk_backward(Walk::After(n))
}

/// Next node in document order within the subtree of `root` (pre-order),
/// over raw nodes minus transparent fragments.
pub(crate) fn next_in_subtree<'a>(n: NRef<'a>, root: NRef<'a>) -> Option<NRef<'a>> {
    if let Some(c) = first_child(n) {
        return Some(c);
    }
    next_skipping_children(n, root)
}

/// Next node in document order after `n`'s subtree, staying under `root`.
pub(crate) fn next_skipping_children<'a>(mut n: NRef<'a>, root: NRef<'a>) -> Option<NRef<'a>> {
    loop {
        if n.id() == root.id() {
            return None;
        }
        if let Some(s) = next_sibling(n) {
            return Some(s);
        }
        n = parent(n)?;
    }
}

fn text_of<'a>(n: NRef<'a>) -> Option<&'a str> {
    match n.value() {
        Node::Text(t) => Some(&t.text),
        _ => None,
    }
}

/// Whether this raw node is an XPath node (see the module docs).
pub(crate) fn is_visible(n: NRef<'_>) -> bool {
    match n.value() {
        Node::Doctype(_) => false,
        Node::Fragment => n.parent().is_none(),
        Node::Text(t) => {
            if t.text.is_empty() {
                return false;
            }
            // A continuation of a preceding non-empty text sibling.
            let mut p = prev_sibling(n);
            while let Some(s) = p {
                match text_of(s) {
                    Some("") => p = prev_sibling(s),
                    Some(_) => return false,
                    None => break,
                }
            }
            true
        }
        _ => true,
    }
}

/// The text of the XPath text node led by `n`: `n` plus following adjacent
/// text siblings.
fn text_run(n: NRef<'_>) -> Cow<'_, str> {
    let first = text_of(n).unwrap_or("");
    let mut next = next_sibling(n);
    let mut acc: Option<String> = None;
    while let Some(s) = next {
        match text_of(s) {
            Some(t) => {
                if !t.is_empty() {
                    acc.get_or_insert_with(|| first.to_string()).push_str(t);
                }
                next = next_sibling(s);
            }
            None => break,
        }
    }
    match acc {
        Some(s) => Cow::Owned(s),
        None => Cow::Borrowed(first),
    }
}

/// Concatenation of all descendant text, borrowed when there is one piece.
fn subtree_text(root: NRef<'_>) -> Cow<'_, str> {
    let mut single: Option<&str> = None;
    let mut acc: Option<String> = None;
    let mut cur = first_child(root);
    while let Some(n) = cur {
        super::eval::tick();
        if let Some(t) = text_of(n)
            && !t.is_empty()
        {
            match (&mut acc, single) {
                (Some(a), _) => a.push_str(t),
                (None, None) => single = Some(t),
                (None, Some(s)) => {
                    let mut a = String::with_capacity(s.len() + t.len());
                    a.push_str(s);
                    a.push_str(t);
                    acc = Some(a);
                }
            }
        }
        cur = next_in_subtree(n, root);
    }
    match acc {
        Some(a) => Cow::Owned(a),
        None => Cow::Borrowed(single.unwrap_or("")),
    }
}

/// XPath string-value of a node.
pub(crate) fn string_value<'a>(x: XNode<'a>) -> Cow<'a, str> {
    match x {
        XNode::Attribute { element, index } => match element.value() {
            Node::Element(e) => e
                .attrs
                .get(index)
                .map_or(Cow::Borrowed(""), |(_, v)| Cow::Borrowed(&**v)),
            _ => Cow::Borrowed(""),
        },
        XNode::Node(n) => match n.value() {
            Node::Text(_) => text_run(n),
            Node::Comment(c) => Cow::Borrowed(&c.comment),
            Node::ProcessingInstruction(p) => Cow::Borrowed(&p.data),
            Node::Doctype(_) => Cow::Borrowed(""),
            Node::Document | Node::Fragment | Node::Element(_) => subtree_text(n),
        },
    }
}

/// Document-order keys for all nodes of one tree, built on first need.
///
/// `NodeId` exposes no index, so the node's index in the tree's node vector
/// is recovered from the address of its value (nodes live in one `Vec`);
/// the layout assumption is verified while building and a hash map is used
/// if it ever fails.
pub(crate) struct DocOrder {
    base: usize,
    stride: usize,
    by_index: Vec<u32>,
    fallback: Option<HashMap<ego_tree::NodeId, u32>>,
}

fn addr(n: NRef<'_>) -> usize {
    std::ptr::from_ref(n.value()).addr()
}

impl DocOrder {
    pub(crate) fn build(root: NRef<'_>) -> DocOrder {
        let tree = root.tree();
        let count = tree.nodes().len();
        let mut nodes = tree.nodes();
        let base = nodes.next().map_or(0, addr);
        let stride = nodes.next().map_or(1, |n| addr(n).wrapping_sub(base));
        // A Vec's elements are evenly spaced, so checking the last node
        // confirms that values live in the node vector as assumed.
        let layout_ok = stride > 0
            && tree
                .nodes()
                .next_back()
                .is_some_and(|n| addr(n).wrapping_sub(base) == (count - 1).wrapping_mul(stride));
        let mut order = DocOrder {
            base,
            stride: stride.max(1),
            by_index: Vec::new(),
            fallback: None,
        };
        // Pre-order over raw nodes; the tree root is first.
        let mut seq: u32 = 0;
        if layout_ok {
            order.by_index = vec![u32::MAX; count];
            for edge in root.traverse() {
                if let ego_tree::iter::Edge::Open(n) = edge {
                    let i = addr(n).wrapping_sub(base) / order.stride;
                    if let Some(slot) = order.by_index.get_mut(i) {
                        *slot = seq;
                    }
                    seq = seq.saturating_add(1);
                }
            }
        } else {
            let mut map = HashMap::with_capacity(count);
            for edge in root.traverse() {
                if let ego_tree::iter::Edge::Open(n) = edge {
                    map.insert(n.id(), seq);
                    seq = seq.saturating_add(1);
                }
            }
            order.fallback = Some(map);
        }
        order
    }

    fn node_key(&self, n: NRef<'_>) -> u32 {
        match &self.fallback {
            Some(map) => map.get(&n.id()).copied().unwrap_or(u32::MAX),
            None => {
                let i = addr(n).wrapping_sub(self.base) / self.stride;
                self.by_index.get(i).copied().unwrap_or(u32::MAX)
            }
        }
    }

    /// Sort key: attributes sort right after their element, in `attrs` order.
    pub(crate) fn key(&self, x: &XNode<'_>) -> u64 {
        match *x {
            XNode::Node(n) => u64::from(self.node_key(n)) << 32,
            XNode::Attribute { element, index } => {
                (u64::from(self.node_key(element)) << 32)
                    | (u64::try_from(index)
                        .unwrap_or(u64::from(u32::MAX - 1))
                        .min(u64::from(u32::MAX - 1))
                        + 1)
            }
        }
    }
}
