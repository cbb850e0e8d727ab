//! Templates: an endpoint's own title and body, written in minijinja and filled with what a
//! notification knows (the monitor, the change in each format, the links, why it fired, the
//! time in the user's time zone). A template is checked when the endpoint is saved
//! ([`check`]): it must compile and render against a sample notification within the bounds, so
//! a syntax error, a token that does not exist, an endless loop or a huge output is refused
//! then, naming the field and the line, and never fails a delivery. The sandbox: no loader, no
//! includes or macros, a fuel budget (every instruction costs), a recursion limit, an output
//! bound and a bound on the template's length; strict undefined values, so a misspelt token is
//! an error at save time rather than an empty string at delivery.

use super::channel::Links;
use crate::store::{Delivery, DigestItem, Facts, Rendered, Template};
use chrono::{DateTime, Utc};
use minijinja::value::Value;
use minijinja::{AutoEscape, Environment, ErrorKind, UndefinedBehavior};
use serde::Serialize;
use std::io::Write;
use wachet::model::{AlertType, MessageFormat, NotificationEndpoint};

/// Longest template, in characters.
pub const MAX_TEMPLATE_CHARS: usize = 8_000;
/// Longest rendered title or body, in bytes.
pub const MAX_OUTPUT_BYTES: usize = 64 * 1024;
/// Longest title, in characters: a title is one line.
const MAX_TITLE_CHARS: usize = 1_000;
/// Instructions one rendering may run.
const FUEL: u64 = 100_000;
/// Nesting depth of blocks and calls.
const RECURSION: usize = 32;

/// Why a template was refused: its field (`title` or `body`) and what is wrong, with the line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateError {
    /// `title` or `body`.
    pub field: &'static str,
    /// What is wrong, naming the line when the error has one.
    pub message: String,
}

/// What the templates describe: one notification as a delivery (or a preview) sees it.
pub struct Subject<'a> {
    /// The monitor's id.
    pub monitor_id: &'a str,
    /// The monitor's name (its page's address when it has none).
    pub name: &'a str,
    /// The page's address.
    pub url: &'a str,
    /// The monitor's folder's name.
    pub folder: Option<&'a str>,
    /// The alert that fired.
    pub alert: AlertType,
    /// What fired in words (`content changed`).
    pub expression: &'a str,
    /// The current value.
    pub current: Option<&'a str>,
    /// The check's error.
    pub error: Option<&'a str>,
    /// When what fired was first seen, when a later check confirmed it.
    pub first_seen: Option<DateTime<Utc>>,
    /// When it fired.
    pub at: DateTime<Utc>,
    /// The change and the rest ([`Facts`]).
    pub facts: &'a Facts,
    /// The notification's page.
    pub change_link: Option<String>,
    /// The monitor's page.
    pub monitor_link: Option<String>,
    /// The user's time zone.
    pub time_zone: chrono_tz::Tz,
}

/// Checks `endpoint`'s templates: each within [`MAX_TEMPLATE_CHARS`], compiling, and rendering
/// a sample notification within the bounds.
pub fn check(endpoint: &NotificationEndpoint) -> Result<(), TemplateError> {
    let Some(template) = Template::of(endpoint) else {
        return Ok(());
    };
    let facts = sample_facts();
    render(&template, MessageFormat::Text, &sample(&facts)).map(drop)
}

/// Renders `template` for `subject`; `channel` is the format the channel writes by default
/// (used when the template names none).
pub fn render(
    template: &Template,
    channel: MessageFormat,
    subject: &Subject<'_>,
) -> Result<Rendered, TemplateError> {
    let format = template.format.unwrap_or(channel);
    let context = Value::from_serialize(context(subject, format));
    let title = template
        .title
        .as_deref()
        .map(|source| {
            // A title is one line, never marked up: no escaping for it.
            let line = one("title", source, MessageFormat::Text, &context)?;
            Ok::<_, TemplateError>(
                line.replace(['\r', '\n'], " ")
                    .trim()
                    .chars()
                    .take(MAX_TITLE_CHARS)
                    .collect(),
            )
        })
        .transpose()?;
    let body = template
        .body
        .as_deref()
        .map(|source| one("body", source, format, &context))
        .transpose()?
        .map(|body| body.trim().to_string());
    Ok(Rendered {
        title,
        body,
        format: Some(format),
    })
}

/// The subject of `delivery`, its links on `links`.
pub fn subject<'a>(delivery: &'a Delivery, links: &Links, facts: &'a Facts) -> Subject<'a> {
    let n = &delivery.notification;
    let monitor_id = n.task_id.as_deref().unwrap_or("");
    Subject {
        monitor_id,
        name: super::channel::message::monitor_name(delivery),
        url: n.url.as_deref().unwrap_or(""),
        folder: delivery.folder.as_deref(),
        alert: delivery.alert.kind,
        expression: &delivery.synthetic_expression,
        current: n.current.as_deref(),
        error: n.error.as_deref(),
        first_seen: delivery.explanation.as_ref().and_then(|e| e.first_seen),
        at: n.timestamp,
        facts,
        change_link: n.id.as_deref().map(|id| links.alert_url(delivery, id)),
        monitor_link: (!monitor_id.is_empty()).then(|| links.monitor_url(delivery, monitor_id)),
        time_zone: zone_of(delivery),
    }
}

/// The subject of `item`, one notification of the digest `delivery`, its links on `links`: a
/// digest renders the endpoint's templates once for each notification it lists.
pub fn item_subject<'a>(
    delivery: &Delivery,
    item: &'a DigestItem,
    links: &Links,
    facts: &'a Facts,
) -> Subject<'a> {
    let monitor_id = item.monitor.as_deref().unwrap_or("");
    Subject {
        monitor_id,
        name: &item.name,
        url: item.url.as_deref().unwrap_or(""),
        folder: item.folder.as_deref(),
        alert: item.alert,
        expression: &item.expression,
        current: item.current.as_deref(),
        error: item.error.as_deref(),
        first_seen: item.explanation.as_ref().and_then(|e| e.first_seen),
        at: DateTime::from_timestamp_millis(item.at).unwrap_or_default(),
        facts,
        change_link: Some(links.alert_url(delivery, &item.notification)),
        monitor_link: (!monitor_id.is_empty()).then(|| links.monitor_url(delivery, monitor_id)),
        time_zone: zone_of(delivery),
    }
}

/// The time zone of the user `delivery` goes to (UTC for a name no longer known).
pub(super) fn zone_of(delivery: &Delivery) -> chrono_tz::Tz {
    delivery
        .time_zone
        .parse::<chrono_tz::Tz>()
        .unwrap_or(chrono_tz::Tz::UTC)
}

/// `at` to the minute in `zone`, as messages show times: `2026-03-29 03:30 CEST`.
pub(super) fn minute(at: DateTime<Utc>, zone: chrono_tz::Tz) -> String {
    at.with_timezone(&zone)
        .format("%Y-%m-%d %H:%M %Z")
        .to_string()
}

/// Renders one template: compiled in the sandbox, run on the fuel budget, written into a
/// bounded buffer.
fn one(
    field: &'static str,
    source: &str,
    format: MessageFormat,
    context: &Value,
) -> Result<String, TemplateError> {
    let refuse = |message: String| TemplateError { field, message };
    if source.chars().count() > MAX_TEMPLATE_CHARS {
        return Err(refuse(format!(
            "is longer than {MAX_TEMPLATE_CHARS} characters"
        )));
    }
    let mut env = Environment::new();
    env.set_fuel(Some(FUEL));
    env.set_recursion_limit(RECURSION);
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_auto_escape_callback(move |_| match format {
        MessageFormat::Html => AutoEscape::Html,
        MessageFormat::Text | MessageFormat::Markdown => AutoEscape::None,
    });
    let explain = |err: minijinja::Error| {
        let what = match err.kind() {
            ErrorKind::OutOfFuel => "runs too long (an endless or very long loop)".to_string(),
            ErrorKind::WriteFailure => format!("writes more than {} KiB", MAX_OUTPUT_BYTES / 1024),
            _ => err
                .detail()
                .map(str::to_string)
                .unwrap_or_else(|| err.kind().to_string()),
        };
        match err.line() {
            Some(line) => refuse(format!("line {line}: {what}")),
            None => refuse(what),
        }
    };
    let template = env.template_from_str(source).map_err(explain)?;
    let mut out = Bounded(Vec::new());
    template
        .render_captured_to(context, &mut out)
        .map_err(explain)?;
    Ok(String::from_utf8_lossy(&out.0).into_owned())
}

/// A buffer that refuses to grow past [`MAX_OUTPUT_BYTES`].
struct Bounded(Vec<u8>);

impl Write for Bounded {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if self.0.len() + bytes.len() > MAX_OUTPUT_BYTES {
            return Err(std::io::Error::other("output bound"));
        }
        self.0.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The tokens, as the guide lists them.
#[derive(Serialize)]
struct Context {
    monitor: MonitorTokens,
    change: ChangeTokens,
    links: LinkTokens,
    alert: AlertTokens,
    /// When it fired, in the user's time zone (`2026-12-06 22:03 CET`).
    time: String,
    /// The same as RFC 3339 with the zone's offset.
    time_iso: String,
    /// The user's time zone.
    time_zone: String,
    /// The format the body is written in.
    format: &'static str,
}

#[derive(Serialize)]
struct MonitorTokens {
    id: String,
    name: String,
    url: String,
    folder: Option<String>,
}

#[derive(Serialize)]
struct ChangeTokens {
    /// The change in the body's format.
    diff: Value,
    text: String,
    markdown: String,
    html: Value,
    added: Vec<String>,
    removed: Vec<String>,
    current: Option<String>,
    previous: Option<String>,
    before: Option<f64>,
    after: Option<f64>,
}

#[derive(Serialize)]
struct LinkTokens {
    change: Option<String>,
    monitor: Option<String>,
}

#[derive(Serialize)]
struct AlertTokens {
    #[serde(rename = "type")]
    kind: String,
    expression: String,
    confirmation: Option<String>,
    doubt: Option<String>,
    noise: bool,
    error: Option<String>,
}

fn context(subject: &Subject<'_>, format: MessageFormat) -> Context {
    let facts = subject.facts;
    let local = |at: DateTime<Utc>| at.with_timezone(&subject.time_zone);
    let html = Value::from_safe_string(facts.diff_html.clone());
    let diff = match format {
        MessageFormat::Text => Value::from(facts.diff_text.clone()),
        MessageFormat::Markdown => Value::from(facts.diff_markdown.clone()),
        MessageFormat::Html => html.clone(),
    };
    Context {
        monitor: MonitorTokens {
            id: subject.monitor_id.to_string(),
            name: subject.name.to_string(),
            url: subject.url.to_string(),
            folder: subject.folder.map(str::to_string),
        },
        change: ChangeTokens {
            diff,
            text: facts.diff_text.clone(),
            markdown: facts.diff_markdown.clone(),
            html,
            added: facts.added_lines.clone(),
            removed: facts.removed_lines.clone(),
            current: subject.current.map(str::to_string),
            previous: facts.previous.clone(),
            before: facts.before,
            after: facts.after,
        },
        links: LinkTokens {
            change: subject.change_link.clone(),
            monitor: subject.monitor_link.clone(),
        },
        alert: AlertTokens {
            kind: subject.alert.to_string(),
            expression: subject.expression.to_string(),
            confirmation: subject.first_seen.map(|at| {
                format!(
                    "first seen at {}, confirmed by the checks since",
                    minute(at, subject.time_zone)
                )
            }),
            doubt: facts.doubt.clone(),
            noise: facts.noise,
            error: subject.error.map(str::to_string),
        },
        time: minute(subject.at, subject.time_zone),
        time_iso: local(subject.at).to_rfc3339(),
        time_zone: subject.time_zone.name().to_string(),
        format: match format {
            MessageFormat::Text => "text",
            MessageFormat::Markdown => "markdown",
            MessageFormat::Html => "html",
        },
    }
}

/// The facts of the sample notification templates are checked against.
fn sample_facts() -> Facts {
    Facts {
        diff_text: "Price: [-12.00-]{+10.00+} EUR".into(),
        diff_markdown: "Price: ~~12.00~~ **10.00** EUR".into(),
        diff_html: "Price: <del>12.00</del><ins>10.00</ins> EUR".into(),
        added_lines: vec!["Price: 10.00 EUR".into()],
        removed_lines: vec!["Price: 12.00 EUR".into()],
        previous: Some("Price: 12.00 EUR".into()),
        before: Some(12.0),
        after: Some(10.0),
        doubt: None,
        noise: false,
    }
}

/// The sample notification templates are checked against.
fn sample(facts: &Facts) -> Subject<'_> {
    Subject {
        monitor_id: "sample",
        name: "Sample monitor",
        url: "https://example.com/",
        folder: Some("Sample folder"),
        alert: AlertType::NotEq,
        expression: "content changed",
        current: Some("Price: 10.00 EUR"),
        error: None,
        first_seen: None,
        at: Utc::now(),
        facts,
        change_link: Some("https://wachet.example/notifications/sample".into()),
        monitor_link: Some("https://wachet.example/monitors/sample".into()),
        time_zone: chrono_tz::Tz::UTC,
    }
}

/// The facts of a change from `previous` to `current` shown as `change` (None: no value, as
/// for a failed check), with the rules' `doubt`.
pub fn facts(
    previous: Option<&str>,
    current: Option<&str>,
    change: Option<&super::change::VisibleChange>,
    doubt: Option<&str>,
) -> Facts {
    let (added_lines, removed_lines) = match current {
        Some(current) => lines(previous.unwrap_or(""), current),
        None => (Vec::new(), Vec::new()),
    };
    Facts {
        diff_text: change.map(|c| c.plain()).unwrap_or_default(),
        diff_markdown: change.map(|c| c.markdown()).unwrap_or_default(),
        diff_html: change.map(|c| c.html()).unwrap_or_default(),
        added_lines,
        removed_lines,
        previous: previous.map(|p| cut_bytes(p, MAX_OUTPUT_BYTES)),
        before: previous.and_then(wachet::alerts::first_number),
        after: current.and_then(wachet::alerts::first_number),
        doubt: doubt.map(str::to_string),
        noise: change.is_some_and(|c| c.has_noise()),
    }
}

/// Lines listed at most on each side, and characters of a line.
const MAX_LINES: usize = 100;
const MAX_LINE_CHARS: usize = 1_000;

/// The lines `current` added to `previous`, and those it removed (by a line diff bounded in
/// time as the change's is), each list bounded.
fn lines(previous: &str, current: &str) -> (Vec<String>, Vec<String>) {
    let diff = similar::TextDiff::configure()
        .algorithm(similar::Algorithm::Myers)
        .timeout(std::time::Duration::from_millis(300))
        .diff_lines(previous, current);
    let (mut added, mut removed) = (Vec::new(), Vec::new());
    for change in diff.iter_all_changes() {
        let list = match change.tag() {
            similar::ChangeTag::Insert => &mut added,
            similar::ChangeTag::Delete => &mut removed,
            similar::ChangeTag::Equal => continue,
        };
        let line = change.value().trim();
        if line.is_empty() || list.len() >= MAX_LINES {
            continue;
        }
        list.push(line.chars().take(MAX_LINE_CHARS).collect());
    }
    (added, removed)
}

/// `text` cut to at most `bytes` bytes at a character boundary.
fn cut_bytes(text: &str, bytes: usize) -> String {
    let mut end = text.len().min(bytes);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint(title: Option<&str>, body: Option<&str>) -> NotificationEndpoint {
        NotificationEndpoint {
            title: title.map(str::to_string),
            body: body.map(str::to_string),
            ..NotificationEndpoint::new(wachet::model::MessagingServiceType::Webhook, None)
        }
    }

    #[test]
    fn bad_templates_are_refused_with_their_field_and_line() {
        let refused = |title, body| check(&endpoint(title, body)).unwrap_err();
        let syntax = refused(None, Some("ok\n{% if %}"));
        assert_eq!(syntax.field, "body");
        assert!(syntax.message.starts_with("line 2:"), "{}", syntax.message);
        let unknown = refused(Some("{{ monitor.nmae }}"), None);
        assert_eq!(unknown.field, "title");
        assert!(unknown.message.contains("line 1"), "{}", unknown.message);
        let endless = refused(
            None,
            Some(
                "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}",
            ),
        );
        assert!(
            endless.message.contains("runs too long"),
            "{}",
            endless.message
        );
        let huge = refused(None, Some("{{ 'x' * 10000000 }}"));
        assert!(
            huge.message.contains("writes more than"),
            "{}",
            huge.message
        );
        let long = refused(None, Some(&"x".repeat(MAX_TEMPLATE_CHARS + 1)));
        assert!(long.message.contains("longer than"), "{}", long.message);
        assert!(
            check(&endpoint(
                Some("{{ monitor.name }}"),
                Some("{{ change.diff }}")
            ))
            .is_ok()
        );
    }

    #[test]
    fn html_bodies_escape_values_but_not_the_diff() {
        let facts = sample_facts();
        let mut subject = sample(&facts);
        subject.name = "Tea <b>";
        let template = Template {
            title: Some("{{ monitor.name }}\n{{ alert.type }}".into()),
            body: Some(
                "{{ monitor.name }}: {{ change.diff }} ({{ change.before }} → {{ change.after }})"
                    .into(),
            ),
            format: None,
        };
        let html = render(&template, MessageFormat::Html, &subject).unwrap();
        assert_eq!(html.title.as_deref(), Some("Tea <b> NotEq"));
        assert_eq!(
            html.body.as_deref(),
            Some("Tea &lt;b&gt;: Price: <del>12.00</del><ins>10.00</ins> EUR (12.0 → 10.0)")
        );
        let text = render(&template, MessageFormat::Text, &subject).unwrap();
        assert!(
            text.body
                .unwrap()
                .starts_with("Tea <b>: Price: [-12.00-]{+10.00+}")
        );
        let lines = lines("a\nb\nc\n", "a\nc\nd\n");
        assert_eq!(lines, (vec!["d".to_string()], vec!["b".to_string()]));
    }
}
