//! URL filters of a Portal monitor: `urlFilter.include` (a link must match one, when any is
//! given) and `urlFilter.exclude` (a link must match none), each a substring or a regex. All the
//! regexes of a monitor are compiled into one [`RegexSet`] under one size budget
//! ([`URL_FILTER_REGEX_BUDGET`]), so many patterns cost one program, not one each.

use crate::model::UrlFilterType;
use crate::pattern::{check_syntax, compile_set};
use regex::RegexSet;

/// Compiled size (bytes) that all regex URL filters of one monitor may reach together.
pub const URL_FILTER_REGEX_BUDGET: usize = 4 * 1024 * 1024;

/// One filter as given, not compiled yet.
#[derive(Debug, Clone, Copy)]
pub struct FilterSpec<'a> {
    /// Substring or regex.
    pub kind: UrlFilterType,
    /// The text or pattern.
    pub filter: &'a str,
    /// Whether it is an include filter (else exclude).
    pub include: bool,
}

/// Why filters cannot be compiled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FilterError {
    /// The filter at this index of the list given has bad syntax.
    #[error("{message}")]
    Syntax {
        /// Index into the specs.
        index: usize,
        /// What is wrong, with the position.
        message: String,
    },
    /// The regexes together exceed the budget.
    #[error("{0}")]
    TooLarge(String),
}

/// The include and exclude filters of one monitor.
#[derive(Debug, Clone, Default)]
pub struct UrlFilterSet {
    include_texts: Vec<String>,
    exclude_texts: Vec<String>,
    /// Include regexes first, then exclude ones.
    regexes: Option<RegexSet>,
    include_regexes: usize,
    has_include: bool,
}

impl UrlFilterSet {
    /// Compiles filters: every pattern's syntax first (each error names its filter), then all
    /// regexes together within [`URL_FILTER_REGEX_BUDGET`].
    pub fn compile(specs: &[FilterSpec<'_>]) -> Result<Self, Vec<FilterError>> {
        let syntax: Vec<FilterError> = specs
            .iter()
            .enumerate()
            .filter(|(_, s)| s.kind == UrlFilterType::Regex)
            .filter_map(|(index, s)| {
                check_syntax(s.filter)
                    .err()
                    .map(|message| FilterError::Syntax { index, message })
            })
            .collect();
        if !syntax.is_empty() {
            return Err(syntax);
        }
        let mut set = UrlFilterSet {
            has_include: specs.iter().any(|s| s.include),
            ..UrlFilterSet::default()
        };
        let mut patterns = Vec::new();
        for include in [true, false] {
            for spec in specs.iter().filter(|s| s.include == include) {
                match (spec.kind, include) {
                    (UrlFilterType::Regex, _) => patterns.push(spec.filter),
                    (UrlFilterType::Contains, true) => {
                        set.include_texts.push(spec.filter.to_string())
                    }
                    (UrlFilterType::Contains, false) => {
                        set.exclude_texts.push(spec.filter.to_string())
                    }
                }
            }
            if include {
                set.include_regexes = patterns.len();
            }
        }
        if !patterns.is_empty() {
            let compiled = compile_set(&patterns, URL_FILTER_REGEX_BUDGET)
                .map_err(|e| vec![FilterError::TooLarge(e)])?;
            set.regexes = Some(compiled);
        }
        Ok(set)
    }

    /// Whether a link to `url` may be followed.
    pub fn allows(&self, url: &str) -> bool {
        let matched = self.regexes.as_ref().map(|set| set.matches(url));
        let regex_hit = |include: bool| {
            matched
                .as_ref()
                .is_some_and(|m| m.iter().any(|i| (i < self.include_regexes) == include))
        };
        let included = !self.has_include
            || self.include_texts.iter().any(|t| url.contains(t.as_str()))
            || regex_hit(true);
        included
            && !self.exclude_texts.iter().any(|t| url.contains(t.as_str()))
            && !regex_hit(false)
    }
}
