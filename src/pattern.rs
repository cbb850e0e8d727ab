//! Regular expressions as users write them (a monitor's `regex`, a URL filter's regex): checked
//! for syntax first (cheap, and a syntax error located by character position), then compiled
//! under size limits, so a hostile pattern cannot eat memory or CPU. A leaf: both
//! [`crate::validate`] and [`crate::filter`] compile their patterns here.

use regex::{Regex, RegexSet};

/// Compiled size (bytes) one pattern may reach; larger ones are refused. `\w{100}` is about
/// 1.5 MB (`\w` is all of Unicode's word characters), `(?-u:\w){100}` a few KB.
pub const REGEX_SIZE_LIMIT: usize = 2 * 1024 * 1024;

/// Memory (bytes) the lazy DFA of one compiled pattern (or set) may cache while matching; past
/// it the cache is cleared and matching goes on, slower. The regex crate's default is 2 MiB a
/// pattern, which 100 patterns would make 200 MiB.
const DFA_SIZE_LIMIT: usize = 512 * 1024;

/// Checks a pattern's syntax without compiling it: an error names its character position.
/// Parsing is linear in the pattern's length, so this is cheap even for patterns that would be
/// far too large once compiled.
pub fn check_syntax(pattern: &str) -> Result<(), String> {
    let located = |offset: usize, kind: &dyn std::fmt::Display| {
        let position = pattern
            .get(..offset)
            .map_or(offset, |prefix| prefix.chars().count());
        format!("{kind} at position {position}")
    };
    match regex_syntax::Parser::new().parse(pattern) {
        Ok(_) => Ok(()),
        Err(regex_syntax::Error::Parse(err)) => Err(located(err.span().start.offset, err.kind())),
        Err(regex_syntax::Error::Translate(err)) => {
            Err(located(err.span().start.offset, err.kind()))
        }
        Err(other) => Err(other.to_string()),
    }
}

/// Compiles a regex, locating a syntax error by character position.
pub fn compile_pattern(pattern: &str) -> Result<Regex, String> {
    check_syntax(pattern)?;
    regex::RegexBuilder::new(pattern)
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(DFA_SIZE_LIMIT)
        .build()
        .map_err(|e| describe(e, "is too large once compiled"))
}

/// Compiles patterns, each checked with [`check_syntax`] already, into one set whose compiled
/// size together is at most `size_limit` bytes: one program and one DFA cache for all of them.
pub(crate) fn compile_set(patterns: &[&str], size_limit: usize) -> Result<RegexSet, String> {
    regex::RegexSetBuilder::new(patterns)
        .size_limit(size_limit)
        .dfa_size_limit(DFA_SIZE_LIMIT)
        .build()
        .map_err(|e| describe(e, "are too large once compiled together"))
}

fn describe(error: regex::Error, too_large: &str) -> String {
    match error {
        regex::Error::CompiledTooBig(limit) => format!("{too_large} (limit {limit} bytes)"),
        // The message is multi-line with a caret diagram; keep its last line, the reason.
        other => other
            .to_string()
            .lines()
            .rfind(|l| !l.trim().is_empty())
            .unwrap_or("invalid regex")
            .trim_start_matches("error: ")
            .to_string(),
    }
}
