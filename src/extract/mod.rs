//! Extraction: from a page's HTML to the monitor's value. One pipeline serves every fetch path
//! (plain HTTP, rendered by Chromium, each page of a crawl).
//!
//! Parse as a browser does ([`parse`]), remove what `excludeXPath` selects, evaluate `xPath`
//! ([`xpath`]) and turn each selected item into a line (elements as [`text::rendered_text`]),
//! then apply `regex` (to a JSON document with its keys in order: [`json`]). Without `xPath`
//! the value is the rendered text of `<body>`.
//!
//! An extraction may be given a [`Deadline`]: parsing reads the clock between chunks of input
//! and XPath evaluation every few thousand steps, and either ends with
//! [`ExtractError::TimedOut`] soon after the deadline, so a hostile page cannot hold a check
//! past its timeout.

pub mod inert;
pub mod json;
pub(crate) mod near;
pub mod onepass;
pub mod parse;
pub mod text;
pub(crate) mod title;
pub mod xpath;

use ego_tree::NodeId;
use regex::Regex;
use scraper::{Html, Node};
use std::time::{Duration, Instant};
use xpath::{EvalError, Value, XNode, XPath};

/// Why a page yielded no value. The text is what users see in a check's `error`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ExtractError {
    /// The xPath selected no node.
    #[error("xPath matched nothing")]
    XPathMatchedNothing,
    /// The regex found no match in the value.
    #[error("regex matched nothing")]
    RegexMatchedNothing,
    /// The page nests elements deeper than the parser accepts.
    #[error("the page nests elements more than {limit} levels deep")]
    TooDeep {
        /// The depth limit.
        limit: usize,
    },
    /// An XPath expression failed while evaluating (for example a function given a wrong type).
    #[error("{field}: {source}")]
    XPath {
        /// `xPath` or `excludeXPath`.
        field: &'static str,
        /// What went wrong.
        source: xpath::XPathError,
    },
    /// A page made inert for showing ([`inert::inert_html`]) read back differently each time it
    /// was written out (markup built to change when a browser parses it again).
    #[error("the page changes each time it is read back, so it cannot be shown safely")]
    Unsettled,
    /// Parsing and evaluation ran past the [`Deadline`]; `limit` is the time they were given.
    #[error("extraction took longer than {} s", seconds(*.limit))]
    TimedOut {
        /// The time from the start of the extraction to its deadline.
        limit: Duration,
    },
}

/// "30", "2.5", "0.25": whole seconds from ten up, else the shortest of up to two decimals.
fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    let text = if s >= 10.0 {
        format!("{s:.0}")
    } else if s >= 1.0 {
        format!("{s:.1}")
    } else {
        format!("{s:.2}")
    };
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// When an extraction must end, and how long it was given (for the error's text).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadline {
    at: Instant,
    limit: Duration,
}

impl Deadline {
    /// An extraction starting now must end at `at` (a past instant leaves it no time).
    pub fn at(at: Instant) -> Deadline {
        Deadline {
            at,
            limit: at.saturating_duration_since(Instant::now()),
        }
    }

    /// An extraction starting now must end within `limit`.
    pub fn after(limit: Duration) -> Deadline {
        let now = Instant::now();
        Deadline {
            // An instant too far to represent is no deadline in practice.
            at: now
                .checked_add(limit)
                .unwrap_or_else(|| now + Duration::from_secs(u64::from(u32::MAX))),
            limit,
        }
    }

    /// The instant the extraction must end.
    pub fn instant(&self) -> Instant {
        self.at
    }

    /// Whether the deadline has passed.
    pub fn passed(&self) -> bool {
        Instant::now() >= self.at
    }

    /// The error for an extraction that ran past this deadline.
    pub fn error(&self) -> ExtractError {
        ExtractError::TimedOut { limit: self.limit }
    }
}

/// Which links' targets a value shows after their text ([`text::rendered_text_with_links`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Links {
    /// The targets of the links `xPath` selects itself (`//a[@class='download']`), where a
    /// person chose links to watch; none on a whole page, whose links carry session ids and
    /// tracking parameters that would be noise.
    #[default]
    Selected,
    /// Every link's target in the value.
    All,
    /// No link's target.
    Never,
}

impl Links {
    /// The choice a monitor's `watchLinks` makes: null for [`Links::Selected`], true for
    /// [`Links::All`], false for [`Links::Never`].
    pub fn of(watch_links: Option<bool>) -> Links {
        match watch_links {
            None => Links::Selected,
            Some(true) => Links::All,
            Some(false) => Links::Never,
        }
    }
}

/// The compiled extraction of one monitor: reusable across pages and threads.
#[derive(Debug, Clone, Default)]
pub struct Extractor {
    xpath: Option<XPath>,
    exclude: Option<XPath>,
    regex: Option<Regex>,
    links: Links,
}

impl Extractor {
    /// An extractor from already compiled parts (see [`crate::validate`] for the checked way in).
    pub fn new(xpath: Option<XPath>, exclude: Option<XPath>, regex: Option<Regex>) -> Self {
        Extractor {
            xpath,
            exclude,
            regex,
            links: Links::default(),
        }
    }

    /// This extractor showing the targets `links` chooses.
    pub fn with_links(self, links: Links) -> Self {
        Extractor { links, ..self }
    }

    /// The value of the page `html`, however long it takes.
    pub fn extract(&self, html: &str) -> Result<String, ExtractError> {
        self.run(html, None)
    }

    /// The value of the page `html`, or [`ExtractError::TimedOut`] soon after `deadline`.
    pub fn extract_within(&self, html: &str, deadline: Deadline) -> Result<String, ExtractError> {
        self.run(html, Some(deadline))
    }

    fn run(&self, html: &str, deadline: Option<Deadline>) -> Result<String, ExtractError> {
        self.run_counted(html, deadline).value
    }

    /// The value of the page `html` as [`Extractor::extract_within`] gives it, with how many
    /// nodes `xPath` selected and `excludeXPath` removed ([`Evaluation`]).
    pub fn evaluate_within(&self, html: &str, deadline: Deadline) -> Evaluation {
        self.run_counted(html, Some(deadline))
    }

    fn run_counted(&self, html: &str, deadline: Option<Deadline>) -> Evaluation {
        if !self.needs_tree()
            && let Some(scanned) = onepass::scan(html, false)
        {
            return Evaluation::of(self.finish(scanned.text));
        }
        match parse::parse(html, deadline) {
            Ok(mut doc) => self.extract_counted(&mut doc, deadline),
            Err(error) => Evaluation::of(Err(error)),
        }
    }

    /// Whether the value needs the document tree; without `xPath` and `excludeXPath` it is the
    /// body text, which [`onepass::scan`] gives for most pages without one.
    pub fn needs_tree(&self) -> bool {
        self.xpath.is_some() || self.exclude.is_some() || self.links == Links::All
    }

    /// The value from the page's body text, for extractors that need no tree. A regex reads
    /// a JSON document with its objects' members in key order ([`json::sorted_keys`]), so its
    /// matches come in the same order whatever order the server wrote the keys in.
    pub fn finish(&self, body_text: String) -> Result<String, ExtractError> {
        match &self.regex {
            Some(regex) => match json::sorted_keys(&body_text) {
                Some(sorted) => apply_regex(regex, &sorted),
                None => apply_regex(regex, &body_text),
            },
            None => Ok(body_text),
        }
    }

    /// The value of an already parsed page. Exclusion removes nodes from `doc`.
    pub fn extract_from(&self, doc: &mut Html) -> Result<String, ExtractError> {
        self.extract_tree(doc, None)
    }

    /// [`Extractor::extract_from`], or [`ExtractError::TimedOut`] soon after `deadline`.
    pub fn extract_from_within(
        &self,
        doc: &mut Html,
        deadline: Deadline,
    ) -> Result<String, ExtractError> {
        self.extract_tree(doc, Some(deadline))
    }

    fn extract_tree(
        &self,
        doc: &mut Html,
        deadline: Option<Deadline>,
    ) -> Result<String, ExtractError> {
        self.extract_counted(doc, deadline).value
    }

    fn extract_counted(&self, doc: &mut Html, deadline: Option<Deadline>) -> Evaluation {
        let mut excluded = None;
        if let Some(exclude) = &self.exclude {
            match remove_selected(doc, exclude, deadline) {
                Ok(removed) => excluded = Some(removed),
                Err(error) => return Evaluation::of(Err(error)),
            }
        }
        let (value, matched) = match &self.xpath {
            Some(xpath) => select(doc, xpath, self.links, deadline),
            None => (Ok(body_text(doc, self.links)), None),
        };
        Evaluation {
            value: value.and_then(|value| self.finish(value)),
            matched,
            excluded,
        }
    }
}

/// An extraction with its counts ([`Extractor::evaluate_within`]), for people choosing an
/// XPath: the value (exactly what [`Extractor::extract_within`] gives) and how much each XPath
/// selected.
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    /// The value, or why there is none (the text a check would store as its error).
    pub value: Result<String, ExtractError>,
    /// How many nodes (elements, text, attributes) `xPath` selected: `Some(0)` when it selected
    /// none (the value is then [`ExtractError::XPathMatchedNothing`]); `None` without an
    /// `xPath`, when it gives a number, string or boolean instead of nodes, or when the
    /// extraction failed before it was evaluated (parse, `excludeXPath`, deadline).
    pub matched: Option<usize>,
    /// How many nodes and attributes `excludeXPath` removed before `xPath` was evaluated:
    /// `None` without an `excludeXPath` or when it failed.
    pub excluded: Option<usize>,
}

impl Evaluation {
    fn of(value: Result<String, ExtractError>) -> Evaluation {
        Evaluation {
            value,
            matched: None,
            excluded: None,
        }
    }
}

/// Evaluates `xpath` (the monitor's `field`) on `doc`, within `deadline` when there is one.
fn evaluate<'a>(
    doc: &'a Html,
    xpath: &XPath,
    field: &'static str,
    deadline: Option<Deadline>,
) -> Result<Value<'a>, ExtractError> {
    let result = match deadline {
        Some(deadline) => xpath.evaluate_within(doc, deadline.instant()),
        None => xpath.evaluate(doc).map_err(EvalError::Failed),
    };
    result.map_err(|err| match (err, deadline) {
        (EvalError::DeadlinePassed, Some(deadline)) => deadline.error(),
        (EvalError::Failed(source), _) => ExtractError::XPath { field, source },
        // Only an evaluation given a deadline can pass it.
        (EvalError::DeadlinePassed, None) => ExtractError::XPath {
            field,
            source: xpath::XPathError::new("the evaluation ran past its deadline", 0),
        },
    })
}

/// The rendered text of `<body>` (of the whole document when there is none), with every
/// link's target when `links` asks for all.
fn body_text(doc: &Html, links: Links) -> String {
    let root = doc.tree.root();
    let body = root
        .descendants()
        .find(|n| matches!(n.value(), Node::Element(el) if el.name() == "body"))
        .unwrap_or(root);
    match links {
        Links::All => text::rendered_text_with_links(body),
        Links::Selected | Links::Never => text::rendered_text(body),
    }
}

/// The first `<base href>` and the raw values of every `a[href]`, `area[href]`, `frame[src]`
/// and `iframe[src]` of `doc`, in document order: the tree's twin of [`onepass::scan`]'s links.
pub(crate) fn raw_links(doc: &Html) -> (Option<&str>, Vec<&str>) {
    let mut base = None;
    let mut hrefs = Vec::new();
    for node in doc.tree.root().descendants() {
        let Node::Element(el) = node.value() else {
            continue;
        };
        let attr = match el.name() {
            "a" | "area" => "href",
            "frame" | "iframe" => "src",
            "base" => {
                if base.is_none() {
                    base = el.attr("href");
                }
                continue;
            }
            _ => continue,
        };
        if let Some(value) = el.attr(attr) {
            hrefs.push(value);
        }
    }
    (base, hrefs)
}

/// The value `xpath` selects in `doc`, and how many nodes it selected (`None` for a scalar).
fn select(
    doc: &Html,
    xpath: &XPath,
    links: Links,
    deadline: Option<Deadline>,
) -> (Result<String, ExtractError>, Option<usize>) {
    let nodes = match evaluate(doc, xpath, "xPath", deadline) {
        Ok(Value::Nodes(nodes)) => nodes,
        Ok(scalar) => return (Ok(scalar.to_xpath_string()), None),
        Err(error) => return (Err(error), None),
    };
    let matched = nodes.len();
    if nodes.is_empty() {
        return (Err(ExtractError::XPathMatchedNothing), Some(0));
    }
    let mut out = String::new();
    for node in nodes {
        let line = match node {
            XNode::Node(n) if matches!(n.value(), Node::Element(_) | Node::Document) => {
                let link =
                    matches!(n.value(), Node::Element(el) if text::link_target(el).is_some());
                match links {
                    Links::All => text::rendered_text_with_links(n),
                    Links::Selected if link => text::rendered_text_with_links(n),
                    Links::Selected | Links::Never => text::rendered_text(n),
                }
            }
            other => other.string_value(),
        };
        if line.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&line);
    }
    (Ok(out), Some(matched))
}

/// Removes the nodes (and attributes) `exclude` selects; how many it selected.
fn remove_selected(
    doc: &mut Html,
    exclude: &XPath,
    deadline: Option<Deadline>,
) -> Result<usize, ExtractError> {
    let mut nodes: Vec<NodeId> = Vec::new();
    let mut attributes: Vec<(NodeId, usize)> = Vec::new();
    // A scalar result selects nothing to remove.
    if let Value::Nodes(selected) = evaluate(doc, exclude, "excludeXPath", deadline)? {
        for node in selected {
            match node {
                XNode::Node(n) => nodes.push(n.id()),
                XNode::Attribute { element, index } => attributes.push((element.id(), index)),
            }
        }
    }
    let selected = nodes.len() + attributes.len();
    // Highest index first, so earlier indexes stay valid while removing.
    attributes.sort_unstable_by_key(|a| std::cmp::Reverse(a.1));
    for (id, index) in attributes {
        if let Some(mut node) = doc.tree.get_mut(id)
            && let Node::Element(el) = node.value()
            && index < el.attrs.len()
        {
            el.attrs.remove(index);
        }
    }
    for id in nodes {
        // The document node itself cannot be detached; excluding it excludes its content.
        if let Some(mut node) = doc.tree.get_mut(id) {
            if node.parent().is_some() {
                node.detach();
            } else {
                let children: Vec<NodeId> = doc.tree.root().children().map(|c| c.id()).collect();
                for child in children {
                    if let Some(mut c) = doc.tree.get_mut(child) {
                        c.detach();
                    }
                }
            }
        }
    }
    Ok(selected)
}

/// Every match of `regex` in `value`, one per line; the first group's text where there is one.
fn apply_regex(regex: &Regex, value: &str) -> Result<String, ExtractError> {
    let mut lines: Vec<&str> = Vec::new();
    if regex.captures_len() > 1 {
        for caps in regex.captures_iter(value) {
            if let Some(group) = caps.get(1) {
                lines.push(group.as_str());
            }
        }
    } else {
        lines.extend(regex.find_iter(value).map(|m| m.as_str()));
    }
    if lines.is_empty() {
        return Err(ExtractError::RegexMatchedNothing);
    }
    Ok(lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_targets_show_where_links_are_watched() {
        let page = |target: &str| {
            format!(
                "<body><h1>Download</h1><p><a id=dl href=\"/files/app-{target}.msi\">Download for \
                 Windows</a> · <a href=\"/notes?utm_content=x1\">Release notes</a> \
                 <a href=\"#top\">Top</a> <a href=\"javascript:void(0)\">Menu</a></p></body>"
            )
        };
        let xpath = |x: &str| xpath::XPath::compile(x).unwrap();
        let value = |extractor: &Extractor, target: &str| extractor.extract(&page(target)).unwrap();
        // A whole page shows no targets unless asked: its links carry tracking tokens.
        let whole = Extractor::default();
        assert_eq!(value(&whole, "4.2.0"), value(&whole, "4.2.1"));
        let all = Extractor::default().with_links(Links::All);
        assert_eq!(
            value(&all, "4.2.1"),
            "Download\nDownload for Windows </files/app-4.2.1.msi> · Release notes \
             </notes?utm_content=x1> Top Menu"
        );
        // An xPath that selects links shows their targets; one that selects their container
        // does not, unless asked.
        let links = Extractor::new(Some(xpath("//a[@id='dl']")), None, None);
        assert_eq!(
            value(&links, "4.2.0"),
            "Download for Windows </files/app-4.2.0.msi>"
        );
        assert_ne!(value(&links, "4.2.0"), value(&links, "4.2.1"));
        let never = links.clone().with_links(Links::Never);
        assert_eq!(value(&never, "4.2.0"), "Download for Windows");
        let container = Extractor::new(Some(xpath("//p")), None, None);
        assert_eq!(value(&container, "4.2.0"), value(&container, "4.2.1"));
        assert_eq!(Links::of(None), Links::Selected);
        assert_eq!(Links::of(Some(true)), Links::All);
        assert_eq!(Links::of(Some(false)), Links::Never);
    }

    #[test]
    fn regex_gives_every_match_or_its_first_group() {
        let all = Regex::new(r"\d+").unwrap();
        assert_eq!(apply_regex(&all, "a 1 b 22 c 333").unwrap(), "1\n22\n333");
        let group = Regex::new(r"price: (\d+)").unwrap();
        assert_eq!(
            apply_regex(&group, "price: 10\nprice: 12").unwrap(),
            "10\n12"
        );
        assert_eq!(
            apply_regex(&group, "none").unwrap_err(),
            ExtractError::RegexMatchedNothing
        );
    }

    #[test]
    fn without_xpath_the_value_is_the_body_text() {
        let value = Extractor::default()
            .extract("<html><head><title>T</title></head><body><h1>Hi</h1><p>there</p></body>")
            .unwrap();
        assert_eq!(value, "Hi\nthere");
    }
}
