//! Regular expressions as users write them (a monitor's `regex`, a URL filter's regex): compiled
//! under a size limit, a syntax error located by character position. A leaf: both
//! [`crate::validate`] and [`crate::filter`] compile their patterns here.

use regex::Regex;

/// Compiled regexes larger than this are refused, so a hostile pattern cannot eat memory.
const REGEX_SIZE_LIMIT: usize = 2 * 1024 * 1024;

/// Compiles a regex, locating a syntax error by character position.
pub fn compile_pattern(pattern: &str) -> Result<Regex, String> {
    if let Err(err) = regex_syntax::ast::parse::Parser::new().parse(pattern) {
        let offset = err.span().start.offset;
        let position = pattern
            .get(..offset)
            .map_or(offset, |prefix| prefix.chars().count());
        return Err(format!("{} at position {position}", err.kind()));
    }
    regex::RegexBuilder::new(pattern)
        .size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|e| match e {
            regex::Error::CompiledTooBig(limit) => {
                format!("is too large once compiled (limit {limit} bytes)")
            }
            // The message is multi-line with a caret diagram; keep its last line, the reason.
            other => other
                .to_string()
                .lines()
                .rfind(|l| !l.trim().is_empty())
                .unwrap_or("invalid regex")
                .trim_start_matches("error: ")
                .to_string(),
        })
}
