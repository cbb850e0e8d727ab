//! Evaluation of compiled expressions against one document: location paths
//! and their 13 axes, predicates with proximity positions, filters, unions,
//! operators. It owns the ordering discipline: every node-set value is in
//! document order without duplicates, and steps only pay for a sort when
//! their output is not provably ordered already. Recursion here follows the
//! expression tree (bounded by the parser), never the document tree.

use super::ast::{ArithOp, Axis, CmpOp, Expr, ExprKind, NodeTest, Path, PathStart, Step};
use super::nav::{self, DocOrder, NRef, string_value};
use super::value::compare;
use super::{EvalError, Value, XNode, XPathError};
use html5ever::{QualName, ns};
use scraper::Node;
use std::borrow::Cow;
use std::cell::{Cell, OnceCell};
use std::collections::{HashMap, HashSet};
use std::time::Instant;

/// The dynamic context of section 1: node, position and size.
#[derive(Clone, Copy)]
pub(crate) struct Ctx<'a> {
    pub node: XNode<'a>,
    pub pos: usize,
    pub size: usize,
}

pub(crate) struct Evaluator<'a> {
    pub root: NRef<'a>,
    order: OnceCell<DocOrder>,
    deadline: Option<Instant>,
    /// The work count when the clock was last read.
    checked_at: Cell<u32>,
}

thread_local! {
    /// Units of work done on this thread: expressions evaluated and nodes visited. Walks over
    /// the tree count here rather than return early, so that they stay simple; a walk is linear
    /// in the document, and the next expression evaluated reads the clock once enough work is
    /// done.
    static WORK: Cell<u32> = const { Cell::new(0) };
}

/// Work between two looks at the clock: a few tens of microseconds, so the deadline costs
/// nothing measurable and is noticed within milliseconds.
const WORK_PER_CHECK: u32 = 4096;

/// Counts one unit of work (a node visited).
#[inline]
pub(crate) fn tick() {
    WORK.with(|w| w.set(w.get().wrapping_add(1)));
}

impl<'a> Evaluator<'a> {
    pub(crate) fn new(root: NRef<'a>, deadline: Option<Instant>) -> Evaluator<'a> {
        Evaluator {
            root,
            order: OnceCell::new(),
            deadline,
            checked_at: Cell::new(WORK.with(Cell::get)),
        }
    }

    /// Counts an expression evaluated; past the deadline, the evaluation stops.
    fn check_deadline(&self) -> Result<(), EvalError> {
        let work = WORK.with(|w| {
            let v = w.get().wrapping_add(1);
            w.set(v);
            v
        });
        let Some(deadline) = self.deadline else {
            return Ok(());
        };
        if work.wrapping_sub(self.checked_at.get()) < WORK_PER_CHECK {
            return Ok(());
        }
        self.checked_at.set(work);
        if Instant::now() >= deadline {
            return Err(EvalError::DeadlinePassed);
        }
        Ok(())
    }

    pub(crate) fn evaluate(&self, e: &Expr) -> Result<Value<'a>, EvalError> {
        let ctx = Ctx {
            node: XNode::Node(self.root),
            pos: 1,
            size: 1,
        };
        self.eval(e, &ctx)
    }

    fn order(&self) -> &DocOrder {
        self.order.get_or_init(|| DocOrder::build(self.root))
    }

    /// Sorts into document order and removes duplicates.
    pub(crate) fn sort_dedup(&self, v: &mut Vec<XNode<'a>>) {
        if v.len() < 2 {
            return;
        }
        let order = self.order();
        let mut keyed: Vec<(u64, XNode<'a>)> = v.iter().map(|x| (order.key(x), *x)).collect();
        keyed.sort_unstable_by_key(|(k, _)| *k);
        keyed.dedup_by_key(|(k, _)| *k);
        v.clear();
        v.extend(keyed.into_iter().map(|(_, x)| x));
    }

    pub(crate) fn eval(&self, e: &Expr, ctx: &Ctx<'a>) -> Result<Value<'a>, EvalError> {
        self.check_deadline()?;
        Ok(match &e.kind {
            ExprKind::Or(v) => {
                for x in v {
                    if self.eval(x, ctx)?.to_bool() {
                        return Ok(Value::Boolean(true));
                    }
                }
                Value::Boolean(false)
            }
            ExprKind::And(v) => {
                for x in v {
                    if !self.eval(x, ctx)?.to_bool() {
                        return Ok(Value::Boolean(false));
                    }
                }
                Value::Boolean(true)
            }
            ExprKind::Compare(first, rest) => {
                if let [(op, rhs)] = rest.as_slice()
                    && let Some(b) = self.compare_attr_literal(*op, first, rhs, ctx)
                {
                    return Ok(Value::Boolean(b));
                }
                let mut acc = self.eval(first, ctx)?;
                for (op, rhs) in rest {
                    let r = self.eval(rhs, ctx)?;
                    acc = Value::Boolean(compare(*op, &acc, &r));
                }
                acc
            }
            ExprKind::Arith(first, rest) => {
                let mut acc = self.eval(first, ctx)?.to_number();
                for (op, rhs) in rest {
                    let r = self.eval(rhs, ctx)?.to_number();
                    acc = match op {
                        ArithOp::Add => acc + r,
                        ArithOp::Sub => acc - r,
                        ArithOp::Mul => acc * r,
                        ArithOp::Div => acc / r,
                        // XPath mod truncates like Java's %, which Rust's % matches.
                        ArithOp::Mod => acc % r,
                    };
                }
                Value::Number(acc)
            }
            ExprKind::Neg(count, inner) => {
                let x = self.eval(inner, ctx)?.to_number();
                Value::Number(if count % 2 == 1 { -x } else { x })
            }
            ExprKind::Union(v) => {
                let mut all = Vec::new();
                for x in v {
                    all.extend(self.eval_nodes(x, ctx)?);
                }
                self.sort_dedup(&mut all);
                Value::Nodes(all)
            }
            ExprKind::Literal(s) => Value::String(s.clone()),
            ExprKind::Number(n) => Value::Number(*n),
            ExprKind::Call(f, args) => super::functions::call(self, *f, args, ctx, e.pos)?,
            ExprKind::Filter(primary, preds) => {
                let nodes = self.eval_nodes(primary, ctx)?;
                // Filter predicates count positions along the child axis,
                // i.e. in document order, which `nodes` already is in.
                Value::Nodes(self.apply_predicates(nodes, preds)?)
            }
            ExprKind::Path(p) => Value::Nodes(self.eval_path(p, ctx)?),
        })
    }

    /// `string(e)`, borrowing literals and attribute values instead of
    /// copying them (the hot path of predicates like `contains(@class, 'x')`).
    pub(crate) fn eval_string<'e>(
        &self,
        e: &'e Expr,
        ctx: &Ctx<'a>,
    ) -> Result<Cow<'e, str>, EvalError>
    where
        'a: 'e,
    {
        if let ExprKind::Literal(s) = &e.kind {
            return Ok(Cow::Borrowed(s));
        }
        if let Some(name) = simple_attribute(e) {
            return Ok(Cow::Borrowed(
                attribute_values(ctx.node, name).next().unwrap_or(""),
            ));
        }
        Ok(match self.eval(e, ctx)? {
            Value::Nodes(n) => n.first().map(|x| string_value(*x)).unwrap_or_default(),
            Value::String(s) => Cow::Owned(s),
            v => Cow::Owned(v.to_xpath_string()),
        })
    }

    /// `@name = 'lit'` / `@name != 'lit'` (either side) without building
    /// node-sets; None when the shape does not apply.
    fn compare_attr_literal(
        &self,
        op: CmpOp,
        lhs: &Expr,
        rhs: &Expr,
        ctx: &Ctx<'a>,
    ) -> Option<bool> {
        if !matches!(op, CmpOp::Eq | CmpOp::Ne) {
            return None;
        }
        let (name, lit) = match (&lhs.kind, &rhs.kind) {
            (_, ExprKind::Literal(l)) => (simple_attribute(lhs)?, l),
            (ExprKind::Literal(l), _) => (simple_attribute(rhs)?, l),
            _ => return None,
        };
        // Existential semantics: some attribute value compares true.
        let want_eq = op == CmpOp::Eq;
        Some(attribute_values(ctx.node, name).any(|v| (v == lit.as_str()) == want_eq))
    }

    /// Evaluates an expression that must yield a node-set.
    pub(crate) fn eval_nodes(&self, e: &Expr, ctx: &Ctx<'a>) -> Result<Vec<XNode<'a>>, EvalError> {
        match self.eval(e, ctx)? {
            Value::Nodes(n) => Ok(n),
            _ => Err(XPathError::new("expression does not yield a node-set", e.pos).into()),
        }
    }

    fn eval_path(&self, p: &Path, ctx: &Ctx<'a>) -> Result<Vec<XNode<'a>>, EvalError> {
        let mut cur = match &p.start {
            PathStart::Root => vec![XNode::Node(self.root)],
            PathStart::Context => vec![ctx.node],
            PathStart::Expr(e) => self.eval_nodes(e, ctx)?,
        };
        // "Flat": no node of `cur` is an ancestor of another. A forward
        // child step from a sorted flat set then yields a sorted set.
        let mut flat = cur.len() <= 1;
        for step in &p.steps {
            if cur.is_empty() {
                break;
            }
            let (next, next_flat) = self.eval_step(step, &cur, flat)?;
            cur = next;
            flat = next_flat;
        }
        Ok(cur)
    }

    fn eval_step(
        &self,
        step: &Step,
        input: &[XNode<'a>],
        flat: bool,
    ) -> Result<(Vec<XNode<'a>>, bool), EvalError> {
        let mut out = Vec::new();
        if step.axis == Axis::DescendantGrouped {
            self.collect_grouped(step, input, &mut out)?;
        } else if step.preds.is_empty() && input.len() > 1 && is_chain_axis(step.axis) {
            collect_chains(input, step.axis, &step.test, &mut out);
        } else if step.preds.is_empty() {
            for &c in input {
                collect_axis(c, step.axis, &step.test, &mut out);
            }
        } else {
            let mut buf = Vec::new();
            for &c in input {
                buf.clear();
                collect_axis(c, step.axis, &step.test, &mut buf);
                let kept = self.apply_predicates(std::mem::take(&mut buf), &step.preds)?;
                out.extend_from_slice(&kept);
                buf = kept;
            }
        }
        let single = input.len() <= 1;
        let out_flat = match step.axis {
            Axis::Child | Axis::Itself => flat,
            Axis::Attribute | Axis::Namespace => true,
            Axis::Parent | Axis::FollowingSibling | Axis::PrecedingSibling => single,
            _ => false,
        };
        if step.axis == Axis::DescendantGrouped {
            // Buckets come out parent by parent, not in document order.
            self.sort_dedup(&mut out);
        } else if single {
            if step.axis.is_reverse() {
                out.reverse();
            }
        } else {
            let ordered = match step.axis {
                Axis::Attribute | Axis::Itself | Axis::Namespace => true,
                Axis::Child | Axis::Descendant | Axis::DescendantOrSelf => flat,
                _ => false,
            };
            if !ordered {
                self.sort_dedup(&mut out);
            }
        }
        Ok((out, out_flat))
    }

    /// `//T[p]` with positional `p`: candidates from one descendant scan,
    /// bucketed by parent so that positions count among siblings.
    fn collect_grouped(
        &self,
        step: &Step,
        input: &[XNode<'a>],
        out: &mut Vec<XNode<'a>>,
    ) -> Result<(), EvalError> {
        let mut cands = Vec::new();
        for &c in input {
            let XNode::Node(n) = c else { continue };
            cands.clear();
            collect_descendants(n, &step.test, &mut cands);
            let mut index: HashMap<ego_tree::NodeId, usize> = HashMap::new();
            let mut buckets: Vec<Vec<XNode<'a>>> = Vec::new();
            for &x in &cands {
                let XNode::Node(m) = x else { continue };
                let Some(p) = nav::parent(m) else { continue };
                let b = *index.entry(p.id()).or_insert_with(|| {
                    buckets.push(Vec::new());
                    buckets.len() - 1
                });
                if let Some(bucket) = buckets.get_mut(b) {
                    bucket.push(x);
                }
            }
            for bucket in buckets {
                out.extend(self.apply_predicates(bucket, &step.preds)?);
            }
        }
        Ok(())
    }

    /// Applies predicates in turn; positions are 1-based indexes into the
    /// list as given (axis order, i.e. reversed for reverse axes).
    pub(crate) fn apply_predicates(
        &self,
        mut nodes: Vec<XNode<'a>>,
        preds: &[Expr],
    ) -> Result<Vec<XNode<'a>>, EvalError> {
        for pred in preds {
            if nodes.is_empty() {
                break;
            }
            let size = nodes.len();
            if let ExprKind::Number(n) = pred.kind {
                // `[n]`: pick directly instead of evaluating n per node.
                let keep = (n >= 1.0 && n <= size as f64 && n.fract() == 0.0)
                    .then(|| nodes.get(n as usize - 1).copied())
                    .flatten();
                nodes = keep.into_iter().collect();
                continue;
            }
            let mut kept = Vec::with_capacity(nodes.len());
            for (i, &n) in nodes.iter().enumerate() {
                let ctx = Ctx {
                    node: n,
                    pos: i + 1,
                    size,
                };
                let keep = match self.eval(pred, &ctx)? {
                    Value::Number(x) => x == (i + 1) as f64,
                    v => v.to_bool(),
                };
                if keep {
                    kept.push(n);
                }
            }
            nodes = kept;
        }
        Ok(nodes)
    }
}

/// The name test of a bare `@name` expression.
fn simple_attribute(e: &Expr) -> Option<&NodeTest> {
    let ExprKind::Path(p) = &e.kind else {
        return None;
    };
    match (&p.start, p.steps.as_slice()) {
        (
            PathStart::Context,
            [
                Step {
                    axis: Axis::Attribute,
                    test: test @ NodeTest::Name { .. },
                    preds,
                },
            ],
        ) if preds.is_empty() => Some(test),
        _ => None,
    }
}

/// Values of the attributes `test` (a name test) selects on an element context node, in
/// document order (what `@name` selects).
fn attribute_values<'a, 't>(
    node: XNode<'a>,
    test: &'t NodeTest,
) -> impl Iterator<Item = &'a str> + 't
where
    'a: 't,
{
    let element = match node {
        XNode::Node(n) => match n.value() {
            Node::Element(e) => Some(e),
            _ => None,
        },
        XNode::Attribute { .. } => None,
    };
    let attrs: &'a [(QualName, scraper::StrTendril)] = element.map_or(&[], |e| &e.attrs);
    let html = element.is_some_and(|e| e.name.ns == ns!(html));
    attrs
        .iter()
        .filter(move |(q, _)| attribute_name_matches(html, q, test))
        .map(|(_, v)| &**v)
}

/// Whether an element passes a name test, as browsers match names in an HTML document: only
/// elements in the HTML namespace, ignoring ASCII case (the parser lower-cases HTML names, so
/// comparing with the lower-cased name is enough). Foreign (SVG, MathML) elements never match an
/// unprefixed name; `*[local-name() = 'svg']` reaches them.
fn element_name_matches(name: &QualName, test: &NodeTest) -> bool {
    match test {
        NodeTest::Name { lower, .. } => name.ns == ns!(html) && name.local == *lower,
        NodeTest::Any | NodeTest::Node => true,
        _ => false,
    }
}

/// Whether an attribute of an element (`html`: one in the HTML namespace) passes a name test:
/// only attributes in no namespace match an unprefixed name (`@href` is not `xlink:href`),
/// ignoring ASCII case on HTML elements, as browsers do. Namespace declarations are never
/// attributes in XPath.
fn attribute_name_matches(html: bool, name: &QualName, test: &NodeTest) -> bool {
    if name.ns == ns!(xmlns) {
        return false;
    }
    match test {
        NodeTest::Node | NodeTest::Any => true,
        NodeTest::Name { local, lower } => {
            name.ns == ns!()
                && if html {
                    name.local == *lower
                } else {
                    name.local == *local
                }
        }
        _ => false,
    }
}

/// Axes that walk a chain of nodes (up, or along siblings) where chains from
/// different context nodes merge: once a walk reaches a node an earlier walk
/// visited, the rest was already produced. Without this, `//x/ancestor::*`
/// on a deep document or `//li/following-sibling::li` on a long list is
/// quadratic.
fn is_chain_axis(axis: Axis) -> bool {
    matches!(
        axis,
        Axis::Parent
            | Axis::Ancestor
            | Axis::AncestorOrSelf
            | Axis::FollowingSibling
            | Axis::PrecedingSibling
    )
}

fn collect_chains<'a>(input: &[XNode<'a>], axis: Axis, test: &NodeTest, out: &mut Vec<XNode<'a>>) {
    let mut seen: HashSet<ego_tree::NodeId> = HashSet::new();
    for &c in input {
        let start = match c {
            XNode::Node(n) => n,
            XNode::Attribute { element, index } => {
                // Attributes have no siblings; their chain starts at the element.
                match axis {
                    Axis::FollowingSibling | Axis::PrecedingSibling => continue,
                    Axis::AncestorOrSelf if test_attr(element, index, test) => out.push(c),
                    _ => {}
                }
                if seen.insert(element.id()) {
                    push_if(element, test, out);
                } else {
                    continue;
                }
                if axis == Axis::Parent {
                    continue;
                }
                element
            }
        };
        if axis == Axis::AncestorOrSelf && matches!(c, XNode::Node(_)) && seen.insert(start.id()) {
            push_if(start, test, out);
        }
        let step = |n: NRef<'a>| match axis {
            Axis::FollowingSibling => nav::next_sibling(n),
            Axis::PrecedingSibling => nav::prev_sibling(n),
            _ => nav::parent(n),
        };
        let mut cur = step(start);
        while let Some(n) = cur {
            if !seen.insert(n.id()) {
                break;
            }
            push_if(n, test, out);
            if axis == Axis::Parent {
                break;
            }
            cur = step(n);
        }
    }
}

/// Whether a tree node passes a node test whose principal type is element.
fn test_node(n: NRef<'_>, test: &NodeTest) -> bool {
    let ok = match (test, n.value()) {
        (NodeTest::Node, _) => true,
        (NodeTest::Any, Node::Element(_)) => true,
        (NodeTest::Name { .. }, Node::Element(e)) => element_name_matches(&e.name, test),
        (NodeTest::Text, Node::Text(_)) => true,
        (NodeTest::Comment, Node::Comment(_)) => true,
        (NodeTest::Pi(target), Node::ProcessingInstruction(p)) => {
            target.as_ref().is_none_or(|t| *t == *p.target)
        }
        _ => false,
    };
    // Test first: it rejects most nodes more cheaply than visibility does.
    ok && nav::is_visible(n)
}

/// Whether the attribute at `index` of `element` passes `test` (principal
/// type attribute). Namespace declarations are not attributes in XPath.
fn test_attr(element: NRef<'_>, index: usize, test: &NodeTest) -> bool {
    let Node::Element(e) = element.value() else {
        return false;
    };
    let Some((name, _)) = e.attrs.get(index) else {
        return false;
    };
    attribute_name_matches(e.name.ns == ns!(html), name, test)
}

fn push_if<'a>(n: NRef<'a>, test: &NodeTest, out: &mut Vec<XNode<'a>>) {
    tick();
    if test_node(n, test) {
        out.push(XNode::Node(n));
    }
}

fn collect_descendants<'a>(root: NRef<'a>, test: &NodeTest, out: &mut Vec<XNode<'a>>) {
    let mut cur = nav::first_child(root);
    while let Some(n) = cur {
        push_if(n, test, out);
        cur = nav::next_in_subtree(n, root);
    }
}

fn collect_ancestors<'a>(n: NRef<'a>, test: &NodeTest, out: &mut Vec<XNode<'a>>) {
    let mut cur = nav::parent(n);
    while let Some(p) = cur {
        push_if(p, test, out);
        cur = nav::parent(p);
    }
}

fn collect_following<'a>(n: NRef<'a>, test: &NodeTest, out: &mut Vec<XNode<'a>>) {
    let top = n.tree().root();
    let mut cur = nav::next_skipping_children(n, top);
    while let Some(m) = cur {
        push_if(m, test, out);
        cur = nav::next_in_subtree(m, top);
    }
}

/// Reverse document order, skipping ancestors.
fn collect_preceding<'a>(n: NRef<'a>, test: &NodeTest, out: &mut Vec<XNode<'a>>) {
    // `level` counts how far `cur` is below the level of the origin's
    // ancestor chain; climbing from level 0 reaches an ancestor of `n`.
    let mut cur = n;
    let mut level = 0usize;
    loop {
        if let Some(mut s) = nav::prev_sibling(cur) {
            while let Some(lc) = nav::last_child(s) {
                s = lc;
                level += 1;
            }
            push_if(s, test, out);
            cur = s;
        } else {
            let Some(p) = nav::parent(cur) else {
                return;
            };
            if level == 0 {
                cur = p;
            } else {
                level -= 1;
                push_if(p, test, out);
                cur = p;
            }
        }
    }
}

/// Appends the nodes of `axis` from `c` that pass `test`, in axis
/// (proximity) order.
pub(crate) fn collect_axis<'a>(
    c: XNode<'a>,
    axis: Axis,
    test: &NodeTest,
    out: &mut Vec<XNode<'a>>,
) {
    match c {
        XNode::Node(n) => match axis {
            Axis::Child => {
                let mut cur = nav::first_child(n);
                while let Some(m) = cur {
                    push_if(m, test, out);
                    cur = nav::next_sibling(m);
                }
            }
            Axis::Descendant | Axis::DescendantGrouped => collect_descendants(n, test, out),
            Axis::DescendantOrSelf => {
                push_if(n, test, out);
                collect_descendants(n, test, out);
            }
            Axis::Parent => {
                if let Some(p) = nav::parent(n) {
                    push_if(p, test, out);
                }
            }
            Axis::Ancestor => collect_ancestors(n, test, out),
            Axis::AncestorOrSelf => {
                push_if(n, test, out);
                collect_ancestors(n, test, out);
            }
            Axis::FollowingSibling => {
                let mut cur = nav::next_sibling(n);
                while let Some(m) = cur {
                    push_if(m, test, out);
                    cur = nav::next_sibling(m);
                }
            }
            Axis::PrecedingSibling => {
                let mut cur = nav::prev_sibling(n);
                while let Some(m) = cur {
                    push_if(m, test, out);
                    cur = nav::prev_sibling(m);
                }
            }
            Axis::Following => collect_following(n, test, out),
            Axis::Preceding => collect_preceding(n, test, out),
            Axis::Attribute => {
                if let Node::Element(e) = n.value() {
                    for index in 0..e.attrs.len() {
                        if test_attr(n, index, test) {
                            out.push(XNode::Attribute { element: n, index });
                        }
                    }
                }
            }
            Axis::Itself => push_if(n, test, out),
            Axis::Namespace => {}
        },
        XNode::Attribute { element, index } => match axis {
            Axis::Itself | Axis::DescendantOrSelf if test_attr(element, index, test) => {
                out.push(c);
            }
            Axis::Parent => push_if(element, test, out),
            Axis::Ancestor => {
                push_if(element, test, out);
                collect_ancestors(element, test, out);
            }
            Axis::AncestorOrSelf => {
                if test_attr(element, index, test) {
                    out.push(c);
                }
                push_if(element, test, out);
                collect_ancestors(element, test, out);
            }
            // After the attribute in document order come the element's
            // descendants, then what follows the element.
            Axis::Following => {
                collect_descendants(element, test, out);
                collect_following(element, test, out);
            }
            Axis::Preceding => collect_preceding(element, test, out),
            _ => {}
        },
    }
}
