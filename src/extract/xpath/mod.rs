//! XPath 1.0 over scraper's HTML5 tree: the public face of the evaluator.
//! This file owns the API the engine codes against (`XPath`, `Value`,
//! `XNode`, `XPathError`); lexing, parsing, the tree model, evaluation and
//! the function library live in the sibling files. Node-sets handed out are
//! in document order without duplicates; attribute nodes follow their
//! element, in the order of the element's `attrs` vector.

mod ast;
mod eval;
mod functions;
mod lexer;
mod nav;
mod parser;
mod value;

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

/// A compiled XPath 1.0 expression, reusable across documents and threads; cloning it shares
/// the compiled expression.
#[derive(Clone)]
pub struct XPath {
    expr: Arc<ast::Expr>,
    source: Arc<str>,
}

/// Expressions compiled lately, by their text, so monitors created in bulk with the same XPath
/// share one compiled expression: 100,000 prepared monitors would otherwise hold 100,000 copies
/// of the same tree (0.5 to 0.9 KB each). Bounded by [`MAX_SHARED`]: emptied when full.
static SHARED: Mutex<Option<HashMap<Arc<str>, XPath>>> = Mutex::new(None);

/// Most expressions kept in [`SHARED`].
const MAX_SHARED: usize = 256;

impl fmt::Debug for XPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("XPath")
            .field("source", &self.source)
            .finish()
    }
}

impl XPath {
    /// Compiles an XPath 1.0 expression.
    ///
    /// Fails on syntax errors, unknown functions, wrong arities, static type
    /// errors (such as `count('a')`), variable references, namespace
    /// prefixes, expressions over 10,000 characters and nesting deeper than
    /// 128 levels. The error position is a 0-based character offset.
    pub fn compile(expr: &str) -> Result<XPath, XPathError> {
        if let Ok(shared) = SHARED.lock()
            && let Some(compiled) = shared.as_ref().and_then(|s| s.get(expr))
        {
            return Ok(compiled.clone());
        }
        let compiled = XPath {
            expr: Arc::new(parser::parse(expr)?),
            source: Arc::from(expr),
        };
        if let Ok(mut shared) = SHARED.lock() {
            let shared = shared.get_or_insert_with(HashMap::new);
            if shared.len() >= MAX_SHARED {
                shared.clear();
            }
            shared.insert(compiled.source.clone(), compiled.clone());
        }
        Ok(compiled)
    }

    /// The expression text this was compiled from.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Evaluates with the document node as context node (position 1, size 1).
    pub fn evaluate<'a>(&self, doc: &'a scraper::Html) -> Result<Value<'a>, XPathError> {
        match eval::Evaluator::new(doc.tree.root(), None).evaluate(&self.expr) {
            Ok(value) => Ok(value),
            Err(EvalError::Failed(err)) => Err(err),
            // Without a deadline there is none to pass.
            Err(EvalError::DeadlinePassed) => Err(XPathError::new("deadline passed", 0)),
        }
    }

    /// Evaluates like [`XPath::evaluate`], stopping with [`EvalError::DeadlinePassed`] soon
    /// (within milliseconds) after `deadline`. The clock is read every few thousand nodes
    /// visited or expressions evaluated, so an evaluation too small to read it never fails for
    /// time.
    pub fn evaluate_within<'a>(
        &self,
        doc: &'a scraper::Html,
        deadline: std::time::Instant,
    ) -> Result<Value<'a>, EvalError> {
        eval::Evaluator::new(doc.tree.root(), Some(deadline)).evaluate(&self.expr)
    }
}

/// Why an evaluation with a deadline gave no value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EvalError {
    /// The expression failed (for example a function given a wrong type).
    #[error(transparent)]
    Failed(#[from] XPathError),
    /// The deadline passed before the evaluation ended.
    #[error("the evaluation ran past its deadline")]
    DeadlinePassed,
}

/// The result of an evaluation: one of the four XPath 1.0 types.
#[derive(Debug, Clone)]
pub enum Value<'a> {
    /// A node-set, in document order without duplicates.
    Nodes(Vec<XNode<'a>>),
    /// A string.
    String(String),
    /// An IEEE 754 double.
    Number(f64),
    /// A boolean.
    Boolean(bool),
}

impl Value<'_> {
    /// XPath 1.0 `string()` conversion: for node-sets the string-value of the
    /// first node in document order (or ""), numbers as in the REC (`3`,
    /// `0.5`, `NaN`, `Infinity`, `-Infinity`, never exponent notation).
    pub fn to_xpath_string(&self) -> String {
        match self {
            Value::Nodes(n) => n.first().map(XNode::string_value).unwrap_or_default(),
            Value::String(s) => s.clone(),
            Value::Number(x) => value::number_to_string(*x),
            Value::Boolean(b) => if *b { "true" } else { "false" }.to_string(),
        }
    }
}

/// An XPath node: a tree node (document, element, text, comment or
/// processing instruction) or an attribute of an element.
#[derive(Clone, Copy)]
pub enum XNode<'a> {
    /// A node of the tree. For text, the node is the first of a run of
    /// adjacent text siblings and stands for the whole run.
    Node(ego_tree::NodeRef<'a, scraper::Node>),
    /// The attribute at `index` in `element`'s `attrs` vector.
    Attribute {
        /// The element carrying the attribute (its XPath parent).
        element: ego_tree::NodeRef<'a, scraper::Node>,
        /// Index into the element's `attrs`.
        index: usize,
    },
}

impl fmt::Debug for XNode<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            XNode::Node(n) => write!(f, "Node({:?})", n.value()),
            XNode::Attribute { element, index } => {
                write!(f, "Attribute({:?}, {index})", element.value())
            }
        }
    }
}

impl PartialEq for XNode<'_> {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (XNode::Node(a), XNode::Node(b)) => a.id() == b.id(),
            (
                XNode::Attribute {
                    element: a,
                    index: i,
                },
                XNode::Attribute {
                    element: b,
                    index: j,
                },
            ) => a.id() == b.id() && i == j,
            _ => false,
        }
    }
}

impl Eq for XNode<'_> {}

impl XNode<'_> {
    /// The XPath string-value: the text of a text node (including adjacent
    /// text siblings), an attribute's value, a comment's text, a processing
    /// instruction's data, or the concatenated descendant text of an element
    /// or the root.
    pub fn string_value(&self) -> String {
        nav::string_value(*self).into_owned()
    }
}

/// A compile or evaluation error with the character offset it concerns.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message} at position {position}")]
pub struct XPathError {
    /// What went wrong.
    pub message: String,
    /// 0-based character offset in the expression.
    pub position: usize,
}

impl XPathError {
    pub(crate) fn new(message: impl Into<String>, position: usize) -> XPathError {
        XPathError {
            message: message.into(),
            position,
        }
    }
}

#[cfg(test)]
mod sharing_tests {
    use super::*;

    #[test]
    fn the_same_expression_compiled_twice_is_shared_and_another_is_not() {
        let a = XPath::compile("//p[@class='shared-price']").unwrap();
        let b = XPath::compile("//p[@class='shared-price']").unwrap();
        let c = XPath::compile("//p[@class='other-price']").unwrap();
        assert!(Arc::ptr_eq(&a.expr, &b.expr), "one tree for both");
        assert!(!Arc::ptr_eq(&a.expr, &c.expr));
        assert_eq!(b.as_str(), "//p[@class='shared-price']");
        assert!(XPath::compile("//[").is_err(), "errors are not kept");
        assert!(XPath::compile("//[").is_err());
    }
}
