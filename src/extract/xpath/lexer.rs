//! Tokenizer for XPath 1.0 expressions. It owns the lexical structure of
//! section 3.7 of the REC, including the context-sensitive disambiguation
//! rules: whether `*` is a multiplication or a name test, whether a name such
//! as `div` is an operator or an element name, and whether a name followed by
//! `(` or `::` is a function, node type or axis. Every token carries its
//! 0-based character offset so that errors can point into the expression.

use super::XPathError;

/// A lexical token of an XPath expression.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Tok {
    LParen,
    RParen,
    LBracket,
    RBracket,
    Dot,
    DotDot,
    At,
    Comma,
    ColonColon,
    /// `*` used as a name test.
    Star,
    /// A QName name test; the prefix is kept only to report it as unsupported.
    Name {
        prefix: Option<String>,
        local: String,
    },
    /// `prefix:*`
    PrefixStar(String),
    /// `comment`, `text`, `processing-instruction` or `node` followed by `(`.
    NodeType(String),
    /// A name followed by `(` that is not a node type.
    FunctionName(String),
    /// A name followed by `::`.
    AxisName(String),
    Literal(String),
    Number(f64),
    Variable(String),
    // Operators.
    And,
    Or,
    Mod,
    Div,
    Mul,
    Slash,
    SlashSlash,
    Pipe,
    Plus,
    Minus,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Tok {
    /// Whether the token is an Operator in the sense of the disambiguation
    /// rule (a following `*` or name then starts an operand).
    fn is_operator(&self) -> bool {
        matches!(
            self,
            Tok::And
                | Tok::Or
                | Tok::Mod
                | Tok::Div
                | Tok::Mul
                | Tok::Slash
                | Tok::SlashSlash
                | Tok::Pipe
                | Tok::Plus
                | Tok::Minus
                | Tok::Eq
                | Tok::Ne
                | Tok::Lt
                | Tok::Le
                | Tok::Gt
                | Tok::Ge
        )
    }

    /// Human-readable form for error messages.
    pub(crate) fn describe(&self) -> String {
        match self {
            Tok::LParen => "'('".into(),
            Tok::RParen => "')'".into(),
            Tok::LBracket => "'['".into(),
            Tok::RBracket => "']'".into(),
            Tok::Dot => "'.'".into(),
            Tok::DotDot => "'..'".into(),
            Tok::At => "'@'".into(),
            Tok::Comma => "','".into(),
            Tok::ColonColon => "'::'".into(),
            Tok::Star | Tok::Mul => "'*'".into(),
            Tok::Name { prefix, local } => match prefix {
                Some(p) => format!("name '{p}:{local}'"),
                None => format!("name '{local}'"),
            },
            Tok::PrefixStar(p) => format!("'{p}:*'"),
            Tok::NodeType(n) => format!("node type '{n}'"),
            Tok::FunctionName(n) => format!("function '{n}'"),
            Tok::AxisName(n) => format!("axis '{n}'"),
            Tok::Literal(_) => "string literal".into(),
            Tok::Number(_) => "number".into(),
            Tok::Variable(v) => format!("variable '${v}'"),
            Tok::And => "'and'".into(),
            Tok::Or => "'or'".into(),
            Tok::Mod => "'mod'".into(),
            Tok::Div => "'div'".into(),
            Tok::Slash => "'/'".into(),
            Tok::SlashSlash => "'//'".into(),
            Tok::Pipe => "'|'".into(),
            Tok::Plus => "'+'".into(),
            Tok::Minus => "'-'".into(),
            Tok::Eq => "'='".into(),
            Tok::Ne => "'!='".into(),
            Tok::Lt => "'<'".into(),
            Tok::Le => "'<='".into(),
            Tok::Gt => "'>'".into(),
            Tok::Ge => "'>='".into(),
        }
    }
}

/// A token and the character offset where it starts.
#[derive(Debug, Clone)]
pub(crate) struct Token {
    pub tok: Tok,
    pub pos: usize,
}

fn is_name_start(c: char) -> bool {
    c.is_alphabetic() || c == '_' || (!c.is_ascii() && !c.is_whitespace() && !c.is_control())
}

fn is_name_char(c: char) -> bool {
    is_name_start(c) || c.is_ascii_digit() || c == '-' || c == '.' || c.is_numeric()
}

fn is_xml_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

/// Splits `expr` into tokens. The result always ends at the end of input;
/// the parser reports "unexpected end" at `chars.len()`.
pub(crate) fn tokenize(expr: &str) -> Result<Vec<Token>, XPathError> {
    let chars: Vec<char> = expr.chars().collect();
    let mut toks: Vec<Token> = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if is_xml_space(c) {
            i += 1;
            continue;
        }
        let start = i;
        // Rule 3.7: after a token that is not @ :: ( [ , or an operator, `*`
        // and NCNames are operators. At the start there is no preceding token.
        let operator_context = toks.last().is_some_and(|t| {
            !matches!(
                t.tok,
                Tok::At | Tok::ColonColon | Tok::LParen | Tok::LBracket | Tok::Comma
            ) && !t.tok.is_operator()
        });
        let peek = |k: usize| chars.get(i + k).copied();
        let tok = match c {
            '(' => {
                i += 1;
                Tok::LParen
            }
            ')' => {
                i += 1;
                Tok::RParen
            }
            '[' => {
                i += 1;
                Tok::LBracket
            }
            ']' => {
                i += 1;
                Tok::RBracket
            }
            '@' => {
                i += 1;
                Tok::At
            }
            ',' => {
                i += 1;
                Tok::Comma
            }
            '|' => {
                i += 1;
                Tok::Pipe
            }
            '+' => {
                i += 1;
                Tok::Plus
            }
            '-' => {
                i += 1;
                Tok::Minus
            }
            '=' => {
                i += 1;
                Tok::Eq
            }
            '!' => {
                if peek(1) == Some('=') {
                    i += 2;
                    Tok::Ne
                } else {
                    return Err(XPathError::new("unexpected character '!'", start));
                }
            }
            '<' => {
                if peek(1) == Some('=') {
                    i += 2;
                    Tok::Le
                } else {
                    i += 1;
                    Tok::Lt
                }
            }
            '>' => {
                if peek(1) == Some('=') {
                    i += 2;
                    Tok::Ge
                } else {
                    i += 1;
                    Tok::Gt
                }
            }
            '/' => {
                if peek(1) == Some('/') {
                    i += 2;
                    Tok::SlashSlash
                } else {
                    i += 1;
                    Tok::Slash
                }
            }
            ':' => {
                if peek(1) == Some(':') {
                    i += 2;
                    Tok::ColonColon
                } else {
                    return Err(XPathError::new("unexpected character ':'", start));
                }
            }
            '*' => {
                i += 1;
                if operator_context {
                    Tok::Mul
                } else {
                    Tok::Star
                }
            }
            '"' | '\'' => {
                let quote = c;
                let mut j = i + 1;
                while j < chars.len() && chars[j] != quote {
                    j += 1;
                }
                if j >= chars.len() {
                    return Err(XPathError::new("unterminated string literal", start));
                }
                let s: String = chars[i + 1..j].iter().collect();
                i = j + 1;
                Tok::Literal(s)
            }
            '.' => {
                if peek(1) == Some('.') {
                    i += 2;
                    Tok::DotDot
                } else if peek(1).is_some_and(|d| d.is_ascii_digit()) {
                    let mut j = i + 1;
                    while j < chars.len() && chars[j].is_ascii_digit() {
                        j += 1;
                    }
                    let s: String = chars[i..j].iter().collect();
                    i = j;
                    Tok::Number(parse_number_literal(&s, start)?)
                } else {
                    i += 1;
                    Tok::Dot
                }
            }
            '$' => {
                let (name, end) = read_qname(&chars, i + 1)
                    .ok_or_else(|| XPathError::new("expected a variable name after '$'", start))?;
                i = end;
                Tok::Variable(name)
            }
            d if d.is_ascii_digit() => {
                let mut j = i;
                while j < chars.len() && chars[j].is_ascii_digit() {
                    j += 1;
                }
                if j < chars.len() && chars[j] == '.' {
                    j += 1;
                    while j < chars.len() && chars[j].is_ascii_digit() {
                        j += 1;
                    }
                }
                let s: String = chars[i..j].iter().collect();
                i = j;
                Tok::Number(parse_number_literal(&s, start)?)
            }
            n if is_name_start(n) => {
                let (first, end) = read_ncname(&chars, i);
                i = end;
                // QName or prefix:* ; a single ':' directly joins the parts.
                let mut prefix = None;
                let mut local = first.clone();
                let mut prefix_star = false;
                if chars.get(i) == Some(&':') && chars.get(i + 1) != Some(&':') {
                    if chars.get(i + 1) == Some(&'*') {
                        i += 2;
                        prefix_star = true;
                    } else if chars.get(i + 1).is_some_and(|&c| is_name_start(c)) {
                        let (second, end2) = read_ncname(&chars, i + 1);
                        i = end2;
                        prefix = Some(first.clone());
                        local = second;
                    } else {
                        return Err(XPathError::new("unexpected character ':'", i));
                    }
                }
                if operator_context && prefix.is_none() && !prefix_star {
                    match first.as_str() {
                        "and" => Tok::And,
                        "or" => Tok::Or,
                        "mod" => Tok::Mod,
                        "div" => Tok::Div,
                        _ => {
                            return Err(XPathError::new(
                                format!("expected an operator, found name '{first}'"),
                                start,
                            ));
                        }
                    }
                } else if prefix_star {
                    Tok::PrefixStar(first)
                } else {
                    // Look past whitespace for `(` or `::`.
                    let mut j = i;
                    while j < chars.len() && is_xml_space(chars[j]) {
                        j += 1;
                    }
                    let next = chars.get(j).copied();
                    let next2 = chars.get(j + 1).copied();
                    if next == Some('(') {
                        let full = match &prefix {
                            Some(p) => format!("{p}:{local}"),
                            None => local.clone(),
                        };
                        if prefix.is_none()
                            && matches!(
                                local.as_str(),
                                "comment" | "text" | "processing-instruction" | "node"
                            )
                        {
                            Tok::NodeType(local)
                        } else {
                            Tok::FunctionName(full)
                        }
                    } else if next == Some(':') && next2 == Some(':') && prefix.is_none() {
                        Tok::AxisName(local)
                    } else {
                        Tok::Name { prefix, local }
                    }
                }
            }
            other => {
                return Err(XPathError::new(
                    format!("unexpected character '{other}'"),
                    start,
                ));
            }
        };
        toks.push(Token { tok, pos: start });
    }
    Ok(toks)
}

fn read_ncname(chars: &[char], start: usize) -> (String, usize) {
    let mut j = start;
    while j < chars.len() && is_name_char(chars[j]) {
        j += 1;
    }
    (chars[start..j].iter().collect(), j)
}

fn read_qname(chars: &[char], start: usize) -> Option<(String, usize)> {
    if !chars.get(start).is_some_and(|&c| is_name_start(c)) {
        return None;
    }
    let (mut name, mut end) = read_ncname(chars, start);
    if chars.get(end) == Some(&':') && chars.get(end + 1).is_some_and(|&c| is_name_start(c)) {
        let (local, e2) = read_ncname(chars, end + 1);
        name = format!("{name}:{local}");
        end = e2;
    }
    Some((name, end))
}

fn parse_number_literal(s: &str, pos: usize) -> Result<f64, XPathError> {
    // The lexer only hands over `Digits ('.' Digits?)? | '.' Digits`, which
    // Rust's float parser accepts; a failure would be a lexer bug.
    s.parse::<f64>()
        .map_err(|_| XPathError::new(format!("invalid number '{s}'"), pos))
}
