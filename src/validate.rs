//! Validation of a monitor before any fetch. It compiles what it checks (URL, method, headers,
//! XPath, regex, URL filters), so a check never compiles twice and never meets an invalid
//! definition halfway. Each problem names its field and, where there is one, the position.
//!
//! Counts and sizes are checked first ([`MAX_HEADERS`] and the other limits below), and a
//! monitor over any of them is refused before anything is compiled: refusing an oversized
//! monitor costs no more than counting it. What is compiled then is bounded too: each regex by
//! [`REGEX_SIZE_LIMIT`], the URL filters' regexes together by [`URL_FILTER_REGEX_BUDGET`].

use crate::extract::xpath::XPath;
use crate::extract::{Extractor, Links};
pub use crate::filter::URL_FILTER_REGEX_BUDGET;
use crate::filter::{FilterError, FilterSpec, UrlFilterSet};
use crate::model::{LocationCode, Monitor};
pub use crate::pattern::{REGEX_SIZE_LIMIT, compile_pattern};
use http::Method;
use http::header::{HeaderMap, HeaderName, HeaderValue};
use regex::Regex;
use std::fmt;
use url::Url;

pub use crate::fetch::MAX_URL_LEN;

/// Most request headers a monitor sends.
pub const MAX_HEADERS: usize = 50;
/// Most bytes of header names and values of one monitor together.
pub const MAX_HEADER_BYTES: usize = 32 * 1024;
/// Most URL filters of one monitor, include and exclude together.
pub const MAX_URL_FILTERS: usize = 100;
/// Most bytes of one URL filter (a URL is at most [`MAX_URL_LEN`]).
pub const MAX_URL_FILTER_BYTES: usize = 4 * 1024;
/// Most bytes of all URL filters of one monitor together.
pub const MAX_URL_FILTERS_BYTES: usize = 64 * 1024;
/// Most bytes of the monitor's `regex`.
pub const MAX_REGEX_BYTES: usize = 4 * 1024;
/// Most bytes of `xPath` and of `excludeXPath`, each.
pub const MAX_XPATH_BYTES: usize = 8 * 1024;

/// One problem with one field.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FieldError {
    /// The field's JSON path, such as `xPath` or `headers[1].key`.
    pub field: String,
    /// What is wrong with it.
    pub message: String,
}

/// A monitor that cannot be checked, with every problem found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InvalidMonitor {
    /// The problems, in field order.
    pub errors: Vec<FieldError>,
}

impl fmt::Display for InvalidMonitor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.errors.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{}: {}", e.field, e.message)?;
        }
        Ok(())
    }
}

/// A monitor compiled for checking.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub url: Url,
    pub method: Method,
    pub headers: HeaderMap,
    pub body: Option<String>,
    pub extractor: Extractor,
    /// Lower-case location whose proxy to use.
    pub proxy: Option<String>,
    pub crawling_depth: u8,
    pub url_filter: UrlFilterSet,
    /// Browser steps and login ([`crate::steps`]); they make the check a rendered one.
    pub steps: Option<std::sync::Arc<crate::steps::Steps>>,
}

/// Collects field errors while compiling.
#[derive(Default)]
struct Errors(Vec<FieldError>);

impl Errors {
    fn add(&mut self, field: impl Into<String>, message: impl Into<String>) {
        self.0.push(FieldError {
            field: field.into(),
            message: message.into(),
        });
    }

    fn take<T, E: fmt::Display>(&mut self, field: &str, result: Result<T, E>) -> Option<T> {
        result.map_err(|e| self.add(field, e.to_string())).ok()
    }
}

#[cfg(test)]
thread_local! {
    /// Compilations on this thread, so tests can tell a prepared monitor is not compiled again.
    pub(crate) static COMPILES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Compiles `monitor`; `proxy_locations` are the locations the engine has a proxy for, `here`
/// the one it checks from directly.
pub(crate) fn compile(
    monitor: &Monitor,
    proxy_locations: &[String],
    here: LocationCode,
) -> Result<Plan, InvalidMonitor> {
    #[cfg(test)]
    COMPILES.with(|c| c.set(c.get() + 1));
    let mut errors = Errors::default();
    check_sizes(monitor, &mut errors);
    if !errors.0.is_empty() {
        return Err(InvalidMonitor { errors: errors.0 });
    }
    let url = match monitor.url.as_deref() {
        None => {
            errors.add("url", "is required");
            None
        }
        Some(url) => errors.take("url", parse_url(url)),
    };
    let method = errors.take("method", parse_method(monitor.method.as_deref()));
    let headers = parse_headers(monitor, &mut errors);
    let xpath = errors.take("xPath", compile_xpath(monitor.x_path.as_deref()));
    let exclude = errors.take(
        "excludeXPath",
        compile_xpath(monitor.exclude_x_path.as_deref()),
    );
    let regex = errors.take("regex", compile_regex(monitor.regex.as_deref()));
    let depth = monitor.effective_crawling_depth();
    if !(1..=3).contains(&depth) {
        errors.add("crawlingDepth", format!("must be 1, 2 or 3, not {depth}"));
    }
    let url_filter = compile_filters(monitor, &mut errors);
    let proxy = choose_proxy(monitor, proxy_locations, here, &mut errors);
    let mut step_problems = Vec::new();
    let steps = crate::steps::compile(monitor, &mut step_problems).map(std::sync::Arc::new);
    for (field, message) in step_problems {
        errors.add(field, message);
    }

    match (url, method, xpath, exclude, regex) {
        (Some(url), Some(method), Some(xpath), Some(exclude), Some(regex))
            if errors.0.is_empty() =>
        {
            Ok(Plan {
                url,
                method,
                headers,
                body: monitor.body.clone(),
                extractor: Extractor::new(xpath, exclude, regex)
                    .with_links(Links::of(monitor.watch_links)),
                proxy,
                crawling_depth: u8::try_from(depth).unwrap_or(2),
                url_filter,
                steps,
            })
        }
        _ => Err(InvalidMonitor { errors: errors.0 }),
    }
}

impl Plan {
    /// The request for the monitor's own page: its URL, method, headers, body and proxy.
    pub fn request(&self) -> crate::fetch::FetchRequest {
        crate::fetch::FetchRequest {
            url: self.url.clone(),
            method: self.method.clone(),
            headers: self.headers.clone(),
            body: self.body.clone(),
            proxy: self.proxy.clone(),
        }
    }
}

/// Parses a URL to fetch: absolute, http(s), no white space inside, at most [`MAX_URL_LEN`].
pub fn parse_url(input: &str) -> Result<Url, String> {
    let trimmed = input.trim();
    if trimmed.is_empty() {
        return Err("is empty".into());
    }
    if let Some((pos, c)) = trimmed
        .chars()
        .enumerate()
        .find(|(_, c)| c.is_whitespace() || c.is_control())
    {
        let what = if c == ' ' {
            "a space".to_string()
        } else {
            format!("the character U+{:04X}", u32::from(c))
        };
        return Err(format!(
            "contains {what} at position {pos}; percent-encode it (a space is %20)"
        ));
    }
    if trimmed.len() > MAX_URL_LEN {
        return Err(format!("is longer than {MAX_URL_LEN} characters"));
    }
    let url = Url::parse(trimmed).map_err(|e| format!("is not a valid absolute URL ({e})"))?;
    match url.scheme() {
        "http" | "https" => {}
        other => {
            return Err(format!(
                "scheme \"{other}:\" is not allowed; only http and https URLs can be watched"
            ));
        }
    }
    if url.host().is_none() {
        return Err("has no host".into());
    }
    Ok(url)
}

fn parse_method(method: Option<&str>) -> Result<Method, String> {
    let method = method
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .unwrap_or("GET");
    Method::from_bytes(method.to_ascii_uppercase().as_bytes())
        .map_err(|_| format!("\"{method}\" is not a valid HTTP method"))
}

/// Headers that frame the request or the connection. A value given by a monitor would contradict
/// the real one (a `Content-Length` that is not the body's length, say) and corrupt the request
/// or smuggle a second one, so they are refused, as browsers refuse them to scripts.
const FRAMING_HEADERS: &[&str] = &[
    "connection",
    "content-length",
    "expect",
    "host",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

fn parse_headers(monitor: &Monitor, errors: &mut Errors) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (i, pair) in monitor.headers.iter().flatten().enumerate() {
        let key = pair.key.as_deref().unwrap_or("").trim();
        let name = match HeaderName::from_bytes(key.as_bytes()) {
            Ok(name) => Some(name),
            Err(_) if key.is_empty() => {
                errors.add(format!("headers[{i}].key"), "is required");
                None
            }
            Err(_) => {
                errors.add(
                    format!("headers[{i}].key"),
                    format!("\"{key}\" is not a valid header name"),
                );
                None
            }
        };
        let name = name.filter(|name| {
            let framing = FRAMING_HEADERS.contains(&name.as_str());
            if framing {
                errors.add(
                    format!("headers[{i}].key"),
                    format!(
                        "\"{key}\" is set from the request itself (its URL, method and body); \
                         it cannot be given"
                    ),
                );
            }
            !framing
        });
        let value = pair.value.as_deref().unwrap_or("");
        let value = match HeaderValue::from_str(value) {
            Ok(value) => Some(value),
            Err(_) => {
                errors.add(
                    format!("headers[{i}].value"),
                    "contains a line break or another character not allowed in a header",
                );
                None
            }
        };
        if let (Some(name), Some(value)) = (name, value) {
            map.append(name, value);
        }
    }
    map
}

/// Compiles an optional XPath; blank means none.
pub fn compile_xpath(expr: Option<&str>) -> Result<Option<XPath>, String> {
    match expr.map(str::trim).filter(|e| !e.is_empty()) {
        None => Ok(None),
        Some(expr) => XPath::compile(expr).map(Some).map_err(|e| e.to_string()),
    }
}

/// Compiles an optional regex; empty means none.
pub fn compile_regex(pattern: Option<&str>) -> Result<Option<Regex>, String> {
    match pattern.filter(|p| !p.is_empty()) {
        None => Ok(None),
        Some(pattern) => compile_pattern(pattern).map(Some),
    }
}

fn compile_filters(monitor: &Monitor, errors: &mut Errors) -> UrlFilterSet {
    let Some(filter) = &monitor.url_filter else {
        return UrlFilterSet::default();
    };
    let mut specs = Vec::new();
    let mut fields = Vec::new();
    for (list, include, name) in [
        (&filter.include, true, "include"),
        (&filter.exclude, false, "exclude"),
    ] {
        for (i, value) in list.iter().flatten().enumerate() {
            let field = format!("urlFilter.{name}[{i}].filter");
            let text = value.filter.as_deref().unwrap_or("");
            if text.is_empty() {
                errors.add(field, "is required");
                continue;
            }
            specs.push(FilterSpec {
                kind: value.kind,
                filter: text,
                include,
            });
            fields.push(field);
        }
    }
    match UrlFilterSet::compile(&specs) {
        Ok(set) => set,
        Err(problems) => {
            for problem in problems {
                match problem {
                    FilterError::Syntax { index, message } => {
                        let field = fields.get(index).map_or("urlFilter", String::as_str);
                        errors.add(field, message);
                    }
                    FilterError::TooLarge(message) => errors.add(
                        "urlFilter",
                        format!(
                            "the regex filters {message}; use fewer or simpler ones (\\w is any \
                             Unicode word character, (?-u:\\w) only ASCII ones and far smaller)"
                        ),
                    ),
                }
            }
            UrlFilterSet::default()
        }
    }
}

/// Counts and sizes, checked before anything is compiled. Each message names the limit.
fn check_sizes(monitor: &Monitor, errors: &mut Errors) {
    let headers = monitor.headers.as_deref().unwrap_or_default();
    if headers.len() > MAX_HEADERS {
        errors.add(
            "headers",
            format!("at most {MAX_HEADERS} headers, not {}", headers.len()),
        );
    } else {
        let bytes: usize = headers
            .iter()
            .map(|h| h.key.as_deref().map_or(0, str::len) + h.value.as_deref().map_or(0, str::len))
            .sum();
        if bytes > MAX_HEADER_BYTES {
            errors.add(
                "headers",
                format!(
                    "names and values must be at most {} KiB together, not {bytes} bytes",
                    MAX_HEADER_BYTES / 1024
                ),
            );
        }
    }
    let too_long = |errors: &mut Errors, field: &str, value: Option<&str>, max: usize| {
        if let Some(len) = value.map(str::len).filter(|len| *len > max) {
            errors.add(field, format!("must be at most {max} bytes, not {len}"));
        }
    };
    too_long(errors, "regex", monitor.regex.as_deref(), MAX_REGEX_BYTES);
    too_long(errors, "xPath", monitor.x_path.as_deref(), MAX_XPATH_BYTES);
    too_long(
        errors,
        "excludeXPath",
        monitor.exclude_x_path.as_deref(),
        MAX_XPATH_BYTES,
    );
    let Some(filter) = &monitor.url_filter else {
        return;
    };
    let lists = [("include", &filter.include), ("exclude", &filter.exclude)];
    let count: usize = lists
        .iter()
        .map(|(_, l)| l.as_ref().map_or(0, Vec::len))
        .sum();
    if count > MAX_URL_FILTERS {
        errors.add(
            "urlFilter",
            format!(
                "at most {MAX_URL_FILTERS} filters (include and exclude together), not {count}"
            ),
        );
        return;
    }
    let mut total = 0;
    for (name, list) in lists {
        for (i, value) in list.iter().flatten().enumerate() {
            let text = value.filter.as_deref();
            total += text.map_or(0, str::len);
            let field = format!("urlFilter.{name}[{i}].filter");
            too_long(errors, &field, text, MAX_URL_FILTER_BYTES);
        }
    }
    if total > MAX_URL_FILTERS_BYTES {
        errors.add(
            "urlFilter",
            format!(
                "filters must be at most {} KiB together, not {total} bytes",
                MAX_URL_FILTERS_BYTES / 1024
            ),
        );
    }
}

fn choose_proxy(
    monitor: &Monitor,
    configured: &[String],
    here: LocationCode,
    errors: &mut Errors,
) -> Option<String> {
    let known = |loc: &str| configured.iter().any(|c| c == loc);
    let list = if configured.is_empty() {
        "none is configured".to_string()
    } else {
        format!("configured: {}", configured.join(", "))
    };
    let mut chosen = None;
    for (i, proxy) in monitor.proxies.iter().flatten().enumerate() {
        let loc = proxy
            .location
            .as_deref()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        if !known(&loc) {
            errors.add(
                format!("proxies[{i}].location"),
                format!("no proxy for location \"{loc}\" ({list})"),
            );
        } else if chosen.is_none() {
            chosen = Some(loc);
        }
    }
    if chosen.is_none() && monitor.location != LocationCode::Default {
        let loc = monitor.location.name().to_ascii_lowercase();
        if known(&loc) {
            chosen = Some(loc);
        } else if monitor.location != here {
            errors.add(
                "location",
                format!("no checker at location {} ({list})", monitor.location),
            );
        }
    }
    chosen
}
