//! URL filters of a Portal monitor: `urlFilter.include` (a link must match one, when any is
//! given) and `urlFilter.exclude` (a link must match none), each a substring or a regex.

use crate::model::UrlFilterType;
use crate::pattern::compile_pattern;
use regex::Regex;

/// One compiled filter.
#[derive(Debug, Clone)]
pub enum UrlMatcher {
    /// Plain substring.
    Contains(String),
    /// Regular expression, unanchored.
    Regex(Regex),
}

impl UrlMatcher {
    /// Compiles a filter; an invalid regex is an error naming the position.
    pub fn new(kind: UrlFilterType, filter: &str) -> Result<Self, String> {
        match kind {
            UrlFilterType::Contains => Ok(UrlMatcher::Contains(filter.to_string())),
            UrlFilterType::Regex => compile_pattern(filter).map(UrlMatcher::Regex),
        }
    }

    /// Whether `url` matches.
    pub fn is_match(&self, url: &str) -> bool {
        match self {
            UrlMatcher::Contains(s) => url.contains(s.as_str()),
            UrlMatcher::Regex(r) => r.is_match(url),
        }
    }
}

/// The include and exclude filters of one monitor.
#[derive(Debug, Clone, Default)]
pub struct UrlFilterSet {
    include: Vec<UrlMatcher>,
    exclude: Vec<UrlMatcher>,
}

impl UrlFilterSet {
    /// A filter set.
    pub fn new(include: Vec<UrlMatcher>, exclude: Vec<UrlMatcher>) -> Self {
        UrlFilterSet { include, exclude }
    }

    /// Whether a link to `url` may be followed.
    pub fn allows(&self, url: &str) -> bool {
        (self.include.is_empty() || self.include.iter().any(|m| m.is_match(url)))
            && !self.exclude.iter().any(|m| m.is_match(url))
    }
}
