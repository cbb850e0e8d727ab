//! Recursive-descent parser from tokens to the expression tree of `ast`.
//! It owns every compile-time check: grammar, function names and arities,
//! static type errors (e.g. `count('a')`, `'a'/b`, `1|2`), unsupported
//! features (variables, namespace prefixes), and the bounds on expression
//! length and nesting depth. It also rewrites `//name` steps into a single
//! descendant step when that cannot change the result.

use super::XPathError;
use super::ast::{
    ArithOp, Axis, CmpOp, Expr, ExprKind, Func, NodeTest, Path, PathStart, Step, Type,
};
use super::lexer::{Tok, Token, tokenize};
use html5ever::LocalName;

/// Longest accepted expression, in characters.
pub(crate) const MAX_EXPR_CHARS: usize = 10_000;
/// Deepest accepted nesting of parentheses, predicates and function calls.
/// Parsing and evaluation recurse per level; unoptimised builds overflowed a
/// 2 MiB thread stack at about 200 levels, so 128 keeps a safe margin.
pub(crate) const MAX_DEPTH: usize = 128;

pub(crate) fn parse(expr: &str) -> Result<Expr, XPathError> {
    let nchars = expr.chars().count();
    if nchars > MAX_EXPR_CHARS {
        return Err(XPathError::new(
            format!("expression longer than {MAX_EXPR_CHARS} characters"),
            MAX_EXPR_CHARS,
        ));
    }
    let toks = tokenize(expr)?;
    if toks.is_empty() {
        return Err(XPathError::new("empty expression", 0));
    }
    let mut p = Parser {
        toks,
        i: 0,
        end: nchars,
        depth: 0,
    };
    let e = p.parse_expr()?;
    if let Some(t) = p.toks.get(p.i) {
        return Err(XPathError::new(
            format!("unexpected {}", t.tok.describe()),
            t.pos,
        ));
    }
    Ok(e)
}

struct Parser {
    toks: Vec<Token>,
    i: usize,
    /// Character length of the expression, the position of "end of input".
    end: usize,
    depth: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.i).map(|t| &t.tok)
    }

    fn pos(&self) -> usize {
        self.toks.get(self.i).map_or(self.end, |t| t.pos)
    }

    fn err_here(&self, what: &str) -> XPathError {
        match self.toks.get(self.i) {
            Some(t) => XPathError::new(
                format!("expected {what}, found {}", t.tok.describe()),
                t.pos,
            ),
            None => XPathError::new(format!("expected {what} at end of expression"), self.end),
        }
    }

    fn eat(&mut self, tok: &Tok) -> bool {
        if self.peek() == Some(tok) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, tok: &Tok, what: &str) -> Result<(), XPathError> {
        if self.eat(tok) {
            Ok(())
        } else {
            Err(self.err_here(what))
        }
    }

    fn parse_expr(&mut self) -> Result<Expr, XPathError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(XPathError::new(
                format!("expression nested more than {MAX_DEPTH} levels deep"),
                self.pos(),
            ));
        }
        let r = self.parse_or();
        self.depth -= 1;
        r
    }

    fn parse_or(&mut self) -> Result<Expr, XPathError> {
        let first = self.parse_and()?;
        if self.peek() != Some(&Tok::Or) {
            return Ok(first);
        }
        let pos = first.pos;
        let mut v = vec![first];
        while self.eat(&Tok::Or) {
            v.push(self.parse_and()?);
        }
        Ok(Expr {
            kind: ExprKind::Or(v),
            pos,
        })
    }

    fn parse_and(&mut self) -> Result<Expr, XPathError> {
        let first = self.parse_equality()?;
        if self.peek() != Some(&Tok::And) {
            return Ok(first);
        }
        let pos = first.pos;
        let mut v = vec![first];
        while self.eat(&Tok::And) {
            v.push(self.parse_equality()?);
        }
        Ok(Expr {
            kind: ExprKind::And(v),
            pos,
        })
    }

    fn parse_equality(&mut self) -> Result<Expr, XPathError> {
        let first = self.parse_relational()?;
        let mut rest = Vec::new();
        loop {
            let op = match self.peek() {
                Some(Tok::Eq) => CmpOp::Eq,
                Some(Tok::Ne) => CmpOp::Ne,
                _ => break,
            };
            self.i += 1;
            rest.push((op, self.parse_relational()?));
        }
        Ok(chain_cmp(first, rest))
    }

    fn parse_relational(&mut self) -> Result<Expr, XPathError> {
        let first = self.parse_additive()?;
        let mut rest = Vec::new();
        loop {
            let op = match self.peek() {
                Some(Tok::Lt) => CmpOp::Lt,
                Some(Tok::Le) => CmpOp::Le,
                Some(Tok::Gt) => CmpOp::Gt,
                Some(Tok::Ge) => CmpOp::Ge,
                _ => break,
            };
            self.i += 1;
            rest.push((op, self.parse_additive()?));
        }
        Ok(chain_cmp(first, rest))
    }

    fn parse_additive(&mut self) -> Result<Expr, XPathError> {
        let first = self.parse_multiplicative()?;
        let mut rest = Vec::new();
        loop {
            let op = match self.peek() {
                Some(Tok::Plus) => ArithOp::Add,
                Some(Tok::Minus) => ArithOp::Sub,
                _ => break,
            };
            self.i += 1;
            rest.push((op, self.parse_multiplicative()?));
        }
        Ok(chain_arith(first, rest))
    }

    fn parse_multiplicative(&mut self) -> Result<Expr, XPathError> {
        let first = self.parse_unary()?;
        let mut rest = Vec::new();
        loop {
            let op = match self.peek() {
                Some(Tok::Mul) => ArithOp::Mul,
                Some(Tok::Div) => ArithOp::Div,
                Some(Tok::Mod) => ArithOp::Mod,
                _ => break,
            };
            self.i += 1;
            rest.push((op, self.parse_unary()?));
        }
        Ok(chain_arith(first, rest))
    }

    fn parse_unary(&mut self) -> Result<Expr, XPathError> {
        let pos = self.pos();
        let mut count = 0u32;
        while self.eat(&Tok::Minus) {
            count = count.saturating_add(1);
        }
        let e = self.parse_union()?;
        if count == 0 {
            Ok(e)
        } else {
            Ok(Expr {
                kind: ExprKind::Neg(count, Box::new(e)),
                pos,
            })
        }
    }

    fn parse_union(&mut self) -> Result<Expr, XPathError> {
        let first = self.parse_path()?;
        if self.peek() != Some(&Tok::Pipe) {
            return Ok(first);
        }
        let pos = first.pos;
        let mut v = vec![first];
        while self.eat(&Tok::Pipe) {
            v.push(self.parse_path()?);
        }
        for e in &v {
            if e.ty() != Type::NodeSet {
                return Err(XPathError::new("operands of '|' must be node-sets", e.pos));
            }
        }
        Ok(Expr {
            kind: ExprKind::Union(v),
            pos,
        })
    }

    fn can_start_step(&self) -> bool {
        matches!(
            self.peek(),
            Some(
                Tok::Name { .. }
                    | Tok::Star
                    | Tok::PrefixStar(_)
                    | Tok::NodeType(_)
                    | Tok::AxisName(_)
                    | Tok::At
                    | Tok::Dot
                    | Tok::DotDot
            )
        )
    }

    fn parse_path(&mut self) -> Result<Expr, XPathError> {
        let pos = self.pos();
        match self.peek() {
            Some(Tok::Slash) => {
                self.i += 1;
                let mut steps = Vec::new();
                if self.can_start_step() {
                    self.parse_relative(&mut steps)?;
                }
                Ok(make_path(PathStart::Root, steps, pos))
            }
            Some(Tok::SlashSlash) => {
                self.i += 1;
                let mut steps = vec![desc_or_self()];
                self.parse_relative(&mut steps)?;
                Ok(make_path(PathStart::Root, steps, pos))
            }
            Some(
                Tok::LParen
                | Tok::Literal(_)
                | Tok::Number(_)
                | Tok::FunctionName(_)
                | Tok::Variable(_),
            ) => {
                let filter = self.parse_filter()?;
                let mut steps = Vec::new();
                match self.peek() {
                    Some(Tok::Slash) => {
                        self.i += 1;
                    }
                    Some(Tok::SlashSlash) => {
                        self.i += 1;
                        steps.push(desc_or_self());
                    }
                    _ => return Ok(filter),
                }
                if filter.ty() != Type::NodeSet {
                    return Err(XPathError::new(
                        "a location path can only follow a node-set",
                        filter.pos,
                    ));
                }
                self.parse_relative(&mut steps)?;
                Ok(make_path(PathStart::Expr(Box::new(filter)), steps, pos))
            }
            _ => {
                let mut steps = Vec::new();
                self.parse_relative(&mut steps)?;
                Ok(make_path(PathStart::Context, steps, pos))
            }
        }
    }

    fn parse_relative(&mut self, steps: &mut Vec<Step>) -> Result<(), XPathError> {
        steps.push(self.parse_step()?);
        loop {
            match self.peek() {
                Some(Tok::Slash) => {
                    self.i += 1;
                }
                Some(Tok::SlashSlash) => {
                    self.i += 1;
                    steps.push(desc_or_self());
                }
                _ => return Ok(()),
            }
            steps.push(self.parse_step()?);
        }
    }

    fn parse_step(&mut self) -> Result<Step, XPathError> {
        let axis = match self.peek() {
            Some(Tok::Dot) => {
                self.i += 1;
                return Ok(Step {
                    axis: Axis::Itself,
                    test: NodeTest::Node,
                    preds: Vec::new(),
                });
            }
            Some(Tok::DotDot) => {
                self.i += 1;
                return Ok(Step {
                    axis: Axis::Parent,
                    test: NodeTest::Node,
                    preds: Vec::new(),
                });
            }
            Some(Tok::At) => {
                self.i += 1;
                Axis::Attribute
            }
            Some(Tok::AxisName(name)) => {
                let axis = Axis::from_name(name)
                    .ok_or_else(|| XPathError::new(format!("unknown axis '{name}'"), self.pos()))?;
                self.i += 1;
                self.expect(&Tok::ColonColon, "'::'")?;
                axis
            }
            _ => Axis::Child,
        };
        let test = self.parse_node_test()?;
        let mut preds = Vec::new();
        self.parse_predicates(&mut preds)?;
        Ok(Step { axis, test, preds })
    }

    fn parse_node_test(&mut self) -> Result<NodeTest, XPathError> {
        let pos = self.pos();
        let test = match self.peek().cloned() {
            Some(Tok::Star) => NodeTest::Any,
            Some(Tok::Name {
                prefix: None,
                local,
            }) => NodeTest::Name {
                lower: LocalName::from(local.to_ascii_lowercase()),
                local: LocalName::from(local),
            },
            Some(
                Tok::Name {
                    prefix: Some(_), ..
                }
                | Tok::PrefixStar(_),
            ) => {
                return Err(XPathError::new("namespace prefixes are not supported", pos));
            }
            Some(Tok::NodeType(t)) => {
                self.i += 1;
                self.expect(&Tok::LParen, "'('")?;
                let test = match t.as_str() {
                    "node" => NodeTest::Node,
                    "text" => NodeTest::Text,
                    "comment" => NodeTest::Comment,
                    _ => match self.peek().cloned() {
                        Some(Tok::Literal(s)) => {
                            self.i += 1;
                            NodeTest::Pi(Some(s))
                        }
                        _ => NodeTest::Pi(None),
                    },
                };
                self.expect(&Tok::RParen, "')'")?;
                return Ok(test);
            }
            _ => return Err(self.err_here("a node test")),
        };
        self.i += 1;
        Ok(test)
    }

    fn parse_predicates(&mut self, preds: &mut Vec<Expr>) -> Result<(), XPathError> {
        while self.eat(&Tok::LBracket) {
            preds.push(self.parse_expr()?);
            self.expect(&Tok::RBracket, "']'")?;
        }
        Ok(())
    }

    fn parse_filter(&mut self) -> Result<Expr, XPathError> {
        let primary = self.parse_primary()?;
        if self.peek() != Some(&Tok::LBracket) {
            return Ok(primary);
        }
        if primary.ty() != Type::NodeSet {
            return Err(XPathError::new(
                "predicates can only filter a node-set",
                primary.pos,
            ));
        }
        let pos = primary.pos;
        let mut preds = Vec::new();
        self.parse_predicates(&mut preds)?;
        Ok(Expr {
            kind: ExprKind::Filter(Box::new(primary), preds),
            pos,
        })
    }

    fn parse_primary(&mut self) -> Result<Expr, XPathError> {
        let pos = self.pos();
        match self.peek().cloned() {
            Some(Tok::Variable(_)) => Err(XPathError::new("variables are not supported", pos)),
            Some(Tok::LParen) => {
                self.i += 1;
                let e = self.parse_expr()?;
                self.expect(&Tok::RParen, "')'")?;
                Ok(e)
            }
            Some(Tok::Literal(s)) => {
                self.i += 1;
                Ok(Expr {
                    kind: ExprKind::Literal(s),
                    pos,
                })
            }
            Some(Tok::Number(n)) => {
                self.i += 1;
                Ok(Expr {
                    kind: ExprKind::Number(n),
                    pos,
                })
            }
            Some(Tok::FunctionName(name)) => {
                let func = Func::from_name(&name)
                    .ok_or_else(|| XPathError::new(format!("unknown function '{name}'"), pos))?;
                self.i += 1;
                self.expect(&Tok::LParen, "'('")?;
                let mut args = Vec::new();
                if !self.eat(&Tok::RParen) {
                    loop {
                        args.push(self.parse_expr()?);
                        if self.eat(&Tok::Comma) {
                            continue;
                        }
                        self.expect(&Tok::RParen, "',' or ')'")?;
                        break;
                    }
                }
                check_call(func, &name, &args, pos)?;
                Ok(Expr {
                    kind: ExprKind::Call(func, args),
                    pos,
                })
            }
            _ => Err(self.err_here("an expression")),
        }
    }
}

fn check_call(func: Func, name: &str, args: &[Expr], pos: usize) -> Result<(), XPathError> {
    let (min, max) = func.arity();
    let n = args.len();
    if n < min || max.is_some_and(|m| n > m) {
        let plural = |k: usize| if k == 1 { "argument" } else { "arguments" };
        let msg = match max {
            Some(m) if m == min => format!("function {name} expects {min} {}", plural(min)),
            Some(m) => format!("function {name} expects {min} to {m} arguments"),
            None => format!("function {name} expects at least {min} {}", plural(min)),
        };
        return Err(XPathError::new(msg, pos));
    }
    if func.needs_node_set_args() {
        for a in args {
            if a.ty() != Type::NodeSet {
                return Err(XPathError::new(
                    format!("function {name} expects a node-set argument"),
                    a.pos,
                ));
            }
        }
    }
    Ok(())
}

fn chain_cmp(first: Expr, rest: Vec<(CmpOp, Expr)>) -> Expr {
    if rest.is_empty() {
        return first;
    }
    let pos = first.pos;
    Expr {
        kind: ExprKind::Compare(Box::new(first), rest),
        pos,
    }
}

fn chain_arith(first: Expr, rest: Vec<(ArithOp, Expr)>) -> Expr {
    if rest.is_empty() {
        return first;
    }
    let pos = first.pos;
    Expr {
        kind: ExprKind::Arith(Box::new(first), rest),
        pos,
    }
}

fn desc_or_self() -> Step {
    Step {
        axis: Axis::DescendantOrSelf,
        test: NodeTest::Node,
        preds: Vec::new(),
    }
}

/// Builds a path, fusing `descendant-or-self::node()/child::T[p]` into
/// `descendant::T[p]` when no predicate looks at the position (positions
/// count per parent on the child axis), or else into the grouped descendant
/// plan. Either way `//p` becomes one scan instead of a child expansion of
/// every node.
fn make_path(start: PathStart, steps: Vec<Step>, pos: usize) -> Expr {
    let mut out: Vec<Step> = Vec::with_capacity(steps.len());
    for step in steps {
        let fusable = step.axis == Axis::Child
            && out.last().is_some_and(|prev| {
                prev.axis == Axis::DescendantOrSelf
                    && prev.test == NodeTest::Node
                    && prev.preds.is_empty()
            });
        if fusable {
            out.pop();
            let axis = if step.preds.iter().any(Expr::is_positional_predicate) {
                Axis::DescendantGrouped
            } else {
                Axis::Descendant
            };
            out.push(Step { axis, ..step });
        } else {
            out.push(step);
        }
    }
    Expr {
        kind: ExprKind::Path(Path { start, steps: out }),
        pos,
    }
}
