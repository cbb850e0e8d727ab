//! TEMPORARY interface stub; replaced by the XPath 1.0 evaluator.
#![allow(missing_docs, dead_code)]
use ego_tree::NodeRef;
use scraper::{Html, Node};

#[derive(Debug, Clone)]
pub struct XPath;
impl XPath {
    pub fn compile(expr: &str) -> Result<XPath, XPathError> {
        Err(XPathError {
            message: format!("unsupported {expr}"),
            position: 0,
        })
    }
    pub fn evaluate<'a>(&self, _doc: &'a Html) -> Result<Value<'a>, XPathError> {
        Ok(Value::Boolean(false))
    }
}
pub enum Value<'a> {
    Nodes(Vec<XNode<'a>>),
    String(String),
    Number(f64),
    Boolean(bool),
}
impl Value<'_> {
    pub fn to_xpath_string(&self) -> String {
        String::new()
    }
}
#[derive(Clone, Copy)]
pub enum XNode<'a> {
    Node(NodeRef<'a, Node>),
    Attribute {
        element: NodeRef<'a, Node>,
        index: usize,
    },
}
impl XNode<'_> {
    pub fn string_value(&self) -> String {
        String::new()
    }
}
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message} at position {position}")]
pub struct XPathError {
    pub message: String,
    pub position: usize,
}
