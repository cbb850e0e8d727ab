//! CSS selectors as XPath 1.0, for the tools that select with CSS (changedetection.io's
//! filters, urlwatch's `css` filter). Only what has an exact XPath form is converted: type and
//! universal selectors, `#id`, `.class`, attribute tests (`[a]`, `=`, `~=`, `^=`, `*=`, `$=`
//! is left out: XPath 1.0 has no ends-with), descendant and child combinators, and groups
//! (`a, b` becomes a union). Anything else (pseudo-classes, sibling combinators) is `None`, and
//! the caller reports the selector as not carried over.

/// An XPath as it is (it starts with `/` or `(`), or a CSS selector as XPath; else why not.
pub fn xpath_or_css(selector: &str) -> Result<String, String> {
    let selector = selector.trim();
    if selector.starts_with('/') || selector.starts_with('(') {
        return Ok(selector.to_string());
    }
    to_xpath(selector).ok_or_else(|| {
        "a CSS selector with no XPath 1.0 form (pseudo-classes, sibling combinators, `$=`): \
         write it as the monitor's XPath"
            .to_string()
    })
}

/// The XPath selecting what `selector` selects, when it has one.
pub fn to_xpath(selector: &str) -> Option<String> {
    let mut groups = Vec::new();
    for group in split_groups(selector)? {
        groups.push(group_to_xpath(group.trim())?);
    }
    (!groups.is_empty()).then(|| groups.join(" | "))
}

/// Splits on top-level commas (none inside brackets or quotes).
fn split_groups(selector: &str) -> Option<Vec<&str>> {
    let mut groups = Vec::new();
    let (mut start, mut depth, mut quote) = (0, 0i32, None);
    for (i, c) in selector.char_indices() {
        match (quote, c) {
            (Some(q), _) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '[') => depth += 1,
            (None, ']') => depth -= 1,
            (None, ',') if depth == 0 => {
                groups.push(&selector[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    (quote.is_none() && depth == 0).then(|| {
        groups.push(&selector[start..]);
        groups
    })
}

fn group_to_xpath(group: &str) -> Option<String> {
    if group.is_empty() {
        return None;
    }
    let mut xpath = String::new();
    let mut chars = group.chars().peekable();
    let mut axis = "//";
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        match chars.peek() {
            None => break,
            Some('>') => {
                // A child combinator needs a compound before it.
                if xpath.is_empty() || axis == "/" {
                    return None;
                }
                chars.next();
                axis = "/";
                continue;
            }
            _ => {}
        }
        let compound = compound(&mut chars)?;
        xpath.push_str(axis);
        xpath.push_str(&compound);
        axis = "//";
    }
    (!xpath.is_empty() && axis == "//").then_some(xpath)
}

fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || c == '-' || c == '_'
}

fn name(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Option<String> {
    let mut name = String::new();
    while let Some(&c) = chars.peek() {
        if !is_name_char(c) {
            break;
        }
        name.push(c);
        chars.next();
    }
    (!name.is_empty() && !name.starts_with(|c: char| c.is_ascii_digit())).then_some(name)
}

/// An XPath string literal of `value`, when one can hold it.
fn literal(value: &str) -> Option<String> {
    if !value.contains('\'') {
        Some(format!("'{value}'"))
    } else if !value.contains('"') {
        Some(format!("\"{value}\""))
    } else {
        None
    }
}

/// One compound selector (`div.a#b[c]`) as a step with predicates.
fn compound(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Option<String> {
    let mut step = match chars.peek() {
        Some('*') => {
            chars.next();
            "*".to_string()
        }
        Some(&c) if is_name_char(c) => name(chars)?.to_ascii_lowercase(),
        _ => "*".to_string(),
    };
    loop {
        match chars.peek() {
            Some('#') => {
                chars.next();
                step.push_str(&format!("[@id={}]", literal(&name(chars)?)?));
            }
            Some('.') => {
                chars.next();
                let class = name(chars)?;
                step.push_str(&format!(
                    "[contains(concat(' ', normalize-space(@class), ' '), ' {class} ')]"
                ));
            }
            Some('[') => {
                chars.next();
                step.push_str(&attribute(chars)?);
            }
            Some(c) if c.is_whitespace() || *c == '>' => break,
            None => break,
            // Pseudo-classes, sibling combinators and the rest have no exact XPath here.
            Some(_) => return None,
        }
    }
    Some(step)
}

/// An attribute test after its `[`, through its `]`.
fn attribute(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Option<String> {
    let skip_space = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>| {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
    };
    skip_space(chars);
    let attr = name(chars)?.to_ascii_lowercase();
    skip_space(chars);
    let op = match chars.next()? {
        ']' => return Some(format!("[@{attr}]")),
        '=' => '=',
        c @ ('~' | '^' | '*') => {
            if chars.next()? != '=' {
                return None;
            }
            c
        }
        _ => return None,
    };
    skip_space(chars);
    let value = match chars.peek()? {
        &q @ ('"' | '\'') => {
            chars.next();
            let mut value = String::new();
            loop {
                let c = chars.next()?;
                if c == q {
                    break;
                }
                value.push(c);
            }
            value
        }
        _ => name(chars)?,
    };
    skip_space(chars);
    if chars.next()? != ']' {
        return None;
    }
    let quoted = literal(&value)?;
    Some(match op {
        '=' => format!("[@{attr}={quoted}]"),
        '~' => {
            let padded = literal(&format!(" {value} "))?;
            format!("[contains(concat(' ', normalize-space(@{attr}), ' '), {padded})]")
        }
        '^' => format!("[starts-with(@{attr}, {quoted})]"),
        _ => format!("[contains(@{attr}, {quoted})]"),
    })
}

#[cfg(test)]
mod tests {
    use super::to_xpath;

    #[test]
    fn converts_what_has_an_exact_form() {
        let class = "[contains(concat(' ', normalize-space(@class), ' '), ' content ')]";
        assert_eq!(
            to_xpath("div.content > p").as_deref(),
            Some(format!("//div{class}/p").as_str())
        );
        assert_eq!(to_xpath("#ads").as_deref(), Some("//*[@id='ads']"));
        assert_eq!(
            to_xpath("table[data-kind=\"price\"] td, h1").as_deref(),
            Some("//table[@data-kind='price']//td | //h1")
        );
        assert_eq!(
            to_xpath("a[href^='https:']").as_deref(),
            Some("//a[starts-with(@href, 'https:')]")
        );
    }

    #[test]
    fn refuses_what_has_none() {
        for selector in [
            "li:nth-child(2)",
            "h1 + p",
            "a ~ b",
            "",
            "> p",
            "p >",
            "a[href$=x]",
        ] {
            assert_eq!(to_xpath(selector), None, "{selector}");
        }
    }
}
