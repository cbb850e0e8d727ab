//! The 27 functions of the XPath 1.0 core library (section 4). Arity and
//! node-set argument types were checked by the parser; this file owns their
//! run-time behaviour, including the REC's rounding rules for `substring`
//! and `round`, character (not byte) counting, and HTML-specific choices:
//! `id()` matches `id` attributes, `lang()` also honours HTML's `lang`.

use super::ast::{Expr, Func};
use super::eval::{Ctx, Evaluator};
use super::nav::{self, string_value};
use super::{EvalError, Value, XNode, XPathError};
use html5ever::ns;
use scraper::Node;
use std::borrow::Cow;
use std::collections::HashSet;

fn is_xml_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

/// XPath `round`: nearest integer, ties toward +Infinity, keeping -0 and
/// giving -0 for [-0.5, 0).
pub(crate) fn xpath_round(x: f64) -> f64 {
    if !x.is_finite() || x == 0.0 {
        return x;
    }
    if (-0.5..0.0).contains(&x) {
        return -0.0;
    }
    // floor(x + 0.5) would round 0.49999999999999994 up; x - floor(x) is exact.
    let f = x.floor();
    if x - f >= 0.5 { f + 1.0 } else { f }
}

pub(crate) fn call<'a>(
    ev: &Evaluator<'a>,
    func: Func,
    args: &[Expr],
    ctx: &Ctx<'a>,
    pos: usize,
) -> Result<Value<'a>, EvalError> {
    let string_arg = |i: usize| -> Result<Cow<'_, str>, EvalError> {
        match args.get(i) {
            Some(e) => ev.eval_string(e, ctx),
            None => Ok(string_value(ctx.node)),
        }
    };
    let number_arg = |i: usize| -> Result<f64, EvalError> {
        match args.get(i) {
            Some(e) => Ok(ev.eval(e, ctx)?.to_number()),
            None => Ok(Value::Nodes(vec![ctx.node]).to_number()),
        }
    };
    // Optional node-set argument defaulting to the context node.
    let first_node = |i: usize| -> Result<Option<XNode<'a>>, EvalError> {
        match args.get(i) {
            Some(e) => Ok(ev.eval_nodes(e, ctx)?.first().copied()),
            None => Ok(Some(ctx.node)),
        }
    };
    Ok(match func {
        Func::Last => Value::Number(ctx.size as f64),
        Func::Position => Value::Number(ctx.pos as f64),
        Func::Count => Value::Number(node_set_arg(ev, args, ctx, pos)?.len() as f64),
        Func::Id => {
            let arg = args
                .first()
                .ok_or_else(|| XPathError::new("function id expects 1 argument", pos))?;
            let text = match ev.eval(arg, ctx)? {
                Value::Nodes(nodes) => {
                    let mut s = String::new();
                    for n in nodes {
                        s.push_str(&string_value(n));
                        s.push(' ');
                    }
                    s
                }
                v => v.into_string(),
            };
            Value::Nodes(elements_by_id(ev.root, &text))
        }
        Func::LocalName => Value::String(first_node(0)?.map(local_name).unwrap_or_default()),
        Func::NamespaceUri => Value::String(first_node(0)?.map(namespace_uri).unwrap_or_default()),
        Func::Name => Value::String(first_node(0)?.map(qualified_name).unwrap_or_default()),
        Func::String => Value::String(string_arg(0)?.into_owned()),
        Func::Concat => {
            let mut s = String::new();
            for i in 0..args.len() {
                s.push_str(&string_arg(i)?);
            }
            Value::String(s)
        }
        Func::StartsWith => Value::Boolean(string_arg(0)?.starts_with(&*string_arg(1)?)),
        Func::Contains => Value::Boolean(string_arg(0)?.contains(&*string_arg(1)?)),
        Func::SubstringBefore => {
            let (s, t) = (string_arg(0)?, string_arg(1)?);
            Value::String(s.find(&*t).map(|i| s[..i].to_string()).unwrap_or_default())
        }
        Func::SubstringAfter => {
            let (s, t) = (string_arg(0)?, string_arg(1)?);
            Value::String(
                s.find(&*t)
                    .map(|i| s[i + t.len()..].to_string())
                    .unwrap_or_default(),
            )
        }
        Func::Substring => {
            let s = string_arg(0)?;
            let start = xpath_round(number_arg(1)?);
            let end = if args.len() > 2 {
                start + xpath_round(number_arg(2)?)
            } else {
                f64::INFINITY
            };
            // Character p (1-based) is kept iff p >= start and p < end;
            // NaN bounds make every comparison false, so nothing is kept.
            Value::String(
                s.chars()
                    .enumerate()
                    .filter(|(i, _)| {
                        let p = (*i + 1) as f64;
                        p >= start && p < end
                    })
                    .map(|(_, c)| c)
                    .collect(),
            )
        }
        Func::StringLength => Value::Number(string_arg(0)?.chars().count() as f64),
        Func::NormalizeSpace => Value::String(
            string_arg(0)?
                .split(is_xml_space)
                .filter(|w| !w.is_empty())
                .collect::<Vec<_>>()
                .join(" "),
        ),
        Func::Translate => {
            let (s, from, to) = (string_arg(0)?, string_arg(1)?, string_arg(2)?);
            let from: Vec<char> = from.chars().collect();
            let to: Vec<char> = to.chars().collect();
            Value::String(
                s.chars()
                    .filter_map(|c| match from.iter().position(|&f| f == c) {
                        // The first occurrence in `from` decides; no
                        // counterpart in `to` means delete.
                        Some(i) => to.get(i).copied(),
                        None => Some(c),
                    })
                    .collect(),
            )
        }
        Func::Boolean => Value::Boolean(eval_arg(ev, args, 0, ctx, pos)?.to_bool()),
        Func::Not => Value::Boolean(!eval_arg(ev, args, 0, ctx, pos)?.to_bool()),
        Func::True => Value::Boolean(true),
        Func::False => Value::Boolean(false),
        Func::Lang => Value::Boolean(lang_matches(ctx.node, &string_arg(0)?)),
        Func::Number => Value::Number(number_arg(0)?),
        Func::Sum => Value::Number(
            node_set_arg(ev, args, ctx, pos)?
                .iter()
                .map(|n| super::value::string_to_number(&string_value(*n)))
                .sum(),
        ),
        Func::Floor => Value::Number(number_arg(0)?.floor()),
        Func::Ceiling => Value::Number(number_arg(0)?.ceil()),
        Func::Round => Value::Number(xpath_round(number_arg(0)?)),
    })
}

fn eval_arg<'a>(
    ev: &Evaluator<'a>,
    args: &[Expr],
    i: usize,
    ctx: &Ctx<'a>,
    pos: usize,
) -> Result<Value<'a>, EvalError> {
    match args.get(i) {
        Some(e) => ev.eval(e, ctx),
        None => Err(XPathError::new("missing function argument", pos).into()),
    }
}

fn node_set_arg<'a>(
    ev: &Evaluator<'a>,
    args: &[Expr],
    ctx: &Ctx<'a>,
    pos: usize,
) -> Result<Vec<XNode<'a>>, EvalError> {
    match args.first() {
        Some(e) => ev.eval_nodes(e, ctx),
        None => Err(XPathError::new("missing function argument", pos).into()),
    }
}

/// Elements whose `id` attribute equals one of the whitespace-separated
/// tokens; the first such element in document order wins for each token,
/// as `getElementById` does in HTML.
fn elements_by_id<'a>(root: nav::NRef<'a>, tokens: &str) -> Vec<XNode<'a>> {
    let mut wanted: HashSet<&str> = tokens
        .split(is_xml_space)
        .filter(|t| !t.is_empty())
        .collect();
    let mut out = Vec::new();
    let mut cur = Some(root);
    while let Some(n) = cur {
        if wanted.is_empty() {
            break;
        }
        if let Node::Element(e) = n.value()
            && let Some((_, v)) = e
                .attrs
                .iter()
                .find(|(name, _)| name.ns == ns!() && &*name.local == "id")
            && wanted.remove(&**v)
        {
            out.push(XNode::Node(n));
        }
        super::eval::tick();
        cur = nav::next_in_subtree(n, root);
    }
    out
}

fn local_name(x: XNode<'_>) -> String {
    match x {
        XNode::Attribute { element, index } => attr_name(element, index)
            .map(|q| q.local.to_string())
            .unwrap_or_default(),
        XNode::Node(n) => match n.value() {
            Node::Element(e) => e.name.local.to_string(),
            Node::ProcessingInstruction(p) => p.target.to_string(),
            _ => String::new(),
        },
    }
}

fn qualified_name(x: XNode<'_>) -> String {
    let q = match x {
        XNode::Attribute { element, index } => attr_name(element, index),
        XNode::Node(n) => match n.value() {
            Node::Element(e) => Some(&e.name),
            Node::ProcessingInstruction(p) => return p.target.to_string(),
            _ => None,
        },
    };
    match q {
        Some(q) => match &q.prefix {
            Some(p) => format!("{p}:{}", q.local),
            None => q.local.to_string(),
        },
        None => String::new(),
    }
}

/// HTML elements report no namespace, as in lxml.html; foreign (SVG,
/// MathML) elements and namespaced attributes report theirs.
fn namespace_uri(x: XNode<'_>) -> String {
    let q = match x {
        XNode::Attribute { element, index } => attr_name(element, index),
        XNode::Node(n) => match n.value() {
            Node::Element(e) => Some(&e.name),
            _ => None,
        },
    };
    match q {
        Some(q) if q.ns != ns!(html) => q.ns.to_string(),
        _ => String::new(),
    }
}

fn attr_name(element: nav::NRef<'_>, index: usize) -> Option<&html5ever::QualName> {
    match element.value() {
        Node::Element(e) => e.attrs.get(index).map(|(q, _)| q),
        _ => None,
    }
}

/// `lang(s)`: the language of the nearest ancestor-or-self element with
/// `xml:lang` or (HTML) `lang` equals `s` or starts with `s-`, ignoring
/// ASCII case.
fn lang_matches(node: XNode<'_>, want: &str) -> bool {
    let mut cur = Some(match node {
        XNode::Node(n) => n,
        XNode::Attribute { element, .. } => element,
    });
    while let Some(n) = cur {
        if let Node::Element(e) = n.value() {
            let xml_lang = e.attrs.iter().find(|(q, _)| {
                (q.ns == ns!(xml) && &*q.local == "lang")
                    || (q.ns == ns!() && &*q.local == "xml:lang")
            });
            let html_lang = || {
                e.attrs
                    .iter()
                    .find(|(q, _)| q.ns == ns!() && &*q.local == "lang")
            };
            if let Some((_, v)) = xml_lang.or_else(html_lang) {
                let v: &str = v;
                return v.eq_ignore_ascii_case(want)
                    || (v.len() > want.len()
                        && v.is_char_boundary(want.len())
                        && v[..want.len()].eq_ignore_ascii_case(want)
                        && v[want.len()..].starts_with('-'));
            }
        }
        cur = nav::parent(n);
    }
    false
}
