//! The compiled form of an expression: an expression tree whose nodes carry
//! the character offset they came from (for error reporting), plus static
//! facts computed once at compile time (result types, whether a predicate
//! depends on the context position) that the evaluator uses to pick fast
//! paths without re-inspecting the tree.

use html5ever::LocalName;

/// An expression node and the offset of its first character.
#[derive(Debug, Clone)]
pub(crate) struct Expr {
    pub kind: ExprKind,
    pub pos: usize,
}

#[derive(Debug, Clone)]
pub(crate) enum ExprKind {
    // Operator chains are n-ary so that a long flat chain such as
    // `1+1+...+1` does not become a deep tree (evaluation and drop recurse).
    Or(Vec<Expr>),
    And(Vec<Expr>),
    /// Left-associative chain: `first op1 e1 op2 e2 ...`.
    Compare(Box<Expr>, Vec<(CmpOp, Expr)>),
    Arith(Box<Expr>, Vec<(ArithOp, Expr)>),
    /// Unary minus applied `count` times (parity matters, -(-0) is 0).
    Neg(u32, Box<Expr>),
    Union(Vec<Expr>),
    Literal(String),
    Number(f64),
    Call(Func, Vec<Expr>),
    /// `primary[pred]...`; predicates use document-order positions.
    Filter(Box<Expr>, Vec<Expr>),
    Path(Path),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ArithOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
}

/// Where a location path starts.
#[derive(Debug, Clone)]
pub(crate) enum PathStart {
    /// `/...`: the root node.
    Root,
    /// A relative path: the context node.
    Context,
    /// `filter/...`: the node-set an expression yields.
    Expr(Box<Expr>),
}

#[derive(Debug, Clone)]
pub(crate) struct Path {
    pub start: PathStart,
    pub steps: Vec<Step>,
}

#[derive(Debug, Clone)]
pub(crate) struct Step {
    pub axis: Axis,
    pub test: NodeTest,
    pub preds: Vec<Expr>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Axis {
    Ancestor,
    AncestorOrSelf,
    Attribute,
    Child,
    Descendant,
    DescendantOrSelf,
    Following,
    FollowingSibling,
    Namespace,
    Parent,
    Preceding,
    PrecedingSibling,
    Itself,
    /// Not an XPath axis but a plan the parser substitutes for
    /// `descendant-or-self::node()/child::T[p]` when `p` is positional: the
    /// descendants of the context, with predicate positions counted among
    /// the children of each parent. Lets `//li[1]` scan once instead of
    /// expanding the children of every node.
    DescendantGrouped,
}

impl Axis {
    pub(crate) fn from_name(name: &str) -> Option<Axis> {
        Some(match name {
            "ancestor" => Axis::Ancestor,
            "ancestor-or-self" => Axis::AncestorOrSelf,
            "attribute" => Axis::Attribute,
            "child" => Axis::Child,
            "descendant" => Axis::Descendant,
            "descendant-or-self" => Axis::DescendantOrSelf,
            "following" => Axis::Following,
            "following-sibling" => Axis::FollowingSibling,
            "namespace" => Axis::Namespace,
            "parent" => Axis::Parent,
            "preceding" => Axis::Preceding,
            "preceding-sibling" => Axis::PrecedingSibling,
            "self" => Axis::Itself,
            _ => return None,
        })
    }

    /// Reverse axes number their proximity positions backwards.
    pub(crate) fn is_reverse(self) -> bool {
        matches!(
            self,
            Axis::Ancestor | Axis::AncestorOrSelf | Axis::Preceding | Axis::PrecedingSibling
        )
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum NodeTest {
    /// A name test without a prefix, matched as browsers match it in an HTML document: an
    /// element only in the HTML namespace, ignoring ASCII case; an attribute only in no
    /// namespace (ignoring ASCII case on HTML elements). `lower` is `local` in ASCII lower case,
    /// precomputed because parsed HTML names are lower case and atoms compare as integers.
    Name {
        /// The name as written.
        local: LocalName,
        /// The name in ASCII lower case.
        lower: LocalName,
    },
    /// `*`: any node of the axis' principal type.
    Any,
    Node,
    Text,
    Comment,
    Pi(Option<String>),
}

/// The 27 core functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Func {
    Last,
    Position,
    Count,
    Id,
    LocalName,
    NamespaceUri,
    Name,
    String,
    Concat,
    StartsWith,
    Contains,
    SubstringBefore,
    SubstringAfter,
    Substring,
    StringLength,
    NormalizeSpace,
    Translate,
    Boolean,
    Not,
    True,
    False,
    Lang,
    Number,
    Sum,
    Floor,
    Ceiling,
    Round,
}

/// Static result type of an expression; XPath 1.0 types are all static.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Type {
    NodeSet,
    String,
    Number,
    Boolean,
}

impl Func {
    pub(crate) fn from_name(name: &str) -> Option<Func> {
        Some(match name {
            "last" => Func::Last,
            "position" => Func::Position,
            "count" => Func::Count,
            "id" => Func::Id,
            "local-name" => Func::LocalName,
            "namespace-uri" => Func::NamespaceUri,
            "name" => Func::Name,
            "string" => Func::String,
            "concat" => Func::Concat,
            "starts-with" => Func::StartsWith,
            "contains" => Func::Contains,
            "substring-before" => Func::SubstringBefore,
            "substring-after" => Func::SubstringAfter,
            "substring" => Func::Substring,
            "string-length" => Func::StringLength,
            "normalize-space" => Func::NormalizeSpace,
            "translate" => Func::Translate,
            "boolean" => Func::Boolean,
            "not" => Func::Not,
            "true" => Func::True,
            "false" => Func::False,
            "lang" => Func::Lang,
            "number" => Func::Number,
            "sum" => Func::Sum,
            "floor" => Func::Floor,
            "ceiling" => Func::Ceiling,
            "round" => Func::Round,
            _ => return None,
        })
    }

    /// Allowed argument counts: (min, max); `None` max means unbounded.
    pub(crate) fn arity(self) -> (usize, Option<usize>) {
        match self {
            Func::Last | Func::Position | Func::True | Func::False => (0, Some(0)),
            Func::Count
            | Func::Id
            | Func::Boolean
            | Func::Not
            | Func::Lang
            | Func::Sum
            | Func::Floor
            | Func::Ceiling
            | Func::Round => (1, Some(1)),
            Func::LocalName
            | Func::NamespaceUri
            | Func::Name
            | Func::String
            | Func::StringLength
            | Func::NormalizeSpace
            | Func::Number => (0, Some(1)),
            Func::Concat => (2, None),
            Func::StartsWith | Func::Contains | Func::SubstringBefore | Func::SubstringAfter => {
                (2, Some(2))
            }
            Func::Substring => (2, Some(3)),
            Func::Translate => (3, Some(3)),
        }
    }

    /// Functions whose arguments must be node-sets (no conversion exists).
    pub(crate) fn needs_node_set_args(self) -> bool {
        matches!(
            self,
            Func::Count | Func::Sum | Func::LocalName | Func::NamespaceUri | Func::Name
        )
    }

    pub(crate) fn result_type(self) -> Type {
        match self {
            Func::Last
            | Func::Position
            | Func::Count
            | Func::StringLength
            | Func::Number
            | Func::Sum
            | Func::Floor
            | Func::Ceiling
            | Func::Round => Type::Number,
            Func::Id => Type::NodeSet,
            Func::LocalName
            | Func::NamespaceUri
            | Func::Name
            | Func::String
            | Func::Concat
            | Func::SubstringBefore
            | Func::SubstringAfter
            | Func::Substring
            | Func::NormalizeSpace
            | Func::Translate => Type::String,
            Func::StartsWith
            | Func::Contains
            | Func::Boolean
            | Func::Not
            | Func::True
            | Func::False
            | Func::Lang => Type::Boolean,
        }
    }
}

impl Expr {
    /// The static type of the expression's value.
    pub(crate) fn ty(&self) -> Type {
        match &self.kind {
            ExprKind::Or(..) | ExprKind::And(..) | ExprKind::Compare(..) => Type::Boolean,
            ExprKind::Arith(..) | ExprKind::Neg(..) | ExprKind::Number(_) => Type::Number,
            ExprKind::Union(..) | ExprKind::Filter(..) | ExprKind::Path(_) => Type::NodeSet,
            ExprKind::Literal(_) => Type::String,
            ExprKind::Call(f, _) => f.result_type(),
        }
    }

    /// Whether evaluating this expression as a predicate needs the context
    /// position or size: numeric predicates and uses of position()/last()
    /// outside nested predicates (which have their own context).
    pub(crate) fn is_positional_predicate(&self) -> bool {
        self.ty() == Type::Number || self.uses_position()
    }

    fn uses_position(&self) -> bool {
        match &self.kind {
            ExprKind::Or(v) | ExprKind::And(v) | ExprKind::Union(v) => {
                v.iter().any(Expr::uses_position)
            }
            ExprKind::Compare(a, rest) => {
                a.uses_position() || rest.iter().any(|(_, e)| e.uses_position())
            }
            ExprKind::Arith(a, rest) => {
                a.uses_position() || rest.iter().any(|(_, e)| e.uses_position())
            }
            ExprKind::Neg(_, a) => a.uses_position(),
            ExprKind::Literal(_) | ExprKind::Number(_) => false,
            ExprKind::Call(f, args) => {
                matches!(f, Func::Position | Func::Last) || args.iter().any(Expr::uses_position)
            }
            // Predicates of a filter are evaluated against the filtered set.
            ExprKind::Filter(primary, _) => primary.uses_position(),
            ExprKind::Path(p) => match &p.start {
                PathStart::Expr(e) => e.uses_position(),
                _ => false,
            },
        }
    }
}
