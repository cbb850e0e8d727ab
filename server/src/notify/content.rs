//! The content of a notification as HTML: what endpoint 5 returns and what an e-mail carries.
//! It names the monitor, its URL, the time and what fired (the synthetic expression), and shows
//! the change with deletions and insertions marked. Everything that comes from a page or a user
//! is escaped.

use std::fmt::Write;
use wachet::model::{DiffElement, DiffOperation};

/// Longest deletion or insertion shown; a longer one is cut (the history has it whole).
const MAX_CHANGE_CHARS: usize = 5_000;
/// Unchanged characters shown on each side of a change.
const CONTEXT_CHARS: usize = 200;

/// What a notification's content is made of.
pub struct Content<'a> {
    /// The monitor's name (its URL when unnamed).
    pub name: &'a str,
    /// The page's URL.
    pub url: &'a str,
    /// When it was raised.
    pub at: chrono::DateTime<chrono::Utc>,
    /// When what it reports was first seen, when earlier than `at` (a change or a failure
    /// confirmed by later checks).
    pub first_seen: Option<chrono::DateTime<chrono::Utc>>,
    /// What fired, such as `content changed`.
    pub expression: &'a str,
    /// The check's error, if it failed.
    pub error: Option<&'a str>,
    /// The previous value, if there was one.
    pub previous: Option<&'a str>,
    /// The current value, if the check succeeded.
    pub current: Option<&'a str>,
}

/// Escapes text for HTML element content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            other => out.push(other),
        }
    }
    out
}

/// The HTML of a notification.
pub fn html(content: &Content<'_>) -> String {
    let mut out = String::new();
    let url = escape(content.url);
    let _ = write!(
        out,
        "<div class=\"wachet-notification\">\
         <h2>{name}</h2>\
         <p><a href=\"{url}\">{url}</a></p>\
         <p><strong>{expression}</strong> at {at}</p>",
        name = escape(content.name),
        expression = escape(content.expression),
        at = content.at.format("%Y-%m-%d %H:%M:%S UTC"),
    );
    if let Some(first_seen) = content.first_seen {
        let _ = write!(
            out,
            "<p class=\"first-seen\">First seen at {}, confirmed by the checks since.</p>",
            first_seen.format("%Y-%m-%d %H:%M:%S UTC")
        );
    }
    if let Some(error) = content.error {
        let _ = write!(out, "<p class=\"error\">{}</p>", escape(error));
    }
    if let Some(current) = content.current {
        let changes = wachet::diff::diff(content.previous.unwrap_or(""), current);
        out.push_str("<pre class=\"change\">");
        out.push_str(&change_html(&changes));
        out.push_str("</pre>");
    }
    out.push_str("</div>");
    out
}

/// The change with deletions in `<del>` and insertions in `<ins>`. Unchanged text is cut to
/// some context around the changes, and each change to a bounded length, so a one-word change
/// in a long page still shows.
fn change_html(changes: &[DiffElement]) -> String {
    let mut out = String::new();
    for change in changes {
        let text = change.text.as_deref().unwrap_or("");
        match change.operation {
            DiffOperation::Delete => {
                let text = escape(&head(text, MAX_CHANGE_CHARS));
                let _ = write!(out, "<del style=\"background:#fdd\">{text}</del>");
            }
            DiffOperation::Insert => {
                let text = escape(&head(text, MAX_CHANGE_CHARS));
                let _ = write!(out, "<ins style=\"background:#dfd\">{text}</ins>");
            }
            DiffOperation::Equal => out.push_str(&escape(&context(text))),
        }
    }
    out
}

/// At most `max` characters of `text`, with `…` when cut.
fn head(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// Unchanged text between changes: its start and end, [`CONTEXT_CHARS`] each, when longer.
fn context(text: &str) -> String {
    let count = text.chars().count();
    if count <= 2 * CONTEXT_CHARS {
        return text.to_string();
    }
    let start: String = text.chars().take(CONTEXT_CHARS).collect();
    let end: String = text.chars().skip(count - CONTEXT_CHARS).collect();
    format!("{start} … {end}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_change_is_marked_and_everything_escaped() {
        let at = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let html = html(&Content {
            name: "Tea <shop>",
            url: "https://example.com/?a=1&b=\"2\"",
            at,
            first_seen: None,
            expression: "content changed",
            error: None,
            previous: Some("Price 3.50 EUR"),
            current: Some("Price 3.90 EUR <script>"),
        });
        assert!(html.contains("<h2>Tea &lt;shop&gt;</h2>"), "{html}");
        assert!(
            html.contains("href=\"https://example.com/?a=1&amp;b=&quot;2&quot;\""),
            "{html}"
        );
        assert!(
            html.contains("content changed</strong> at 2027-01-15 08:00:00 UTC"),
            "{html}"
        );
        assert!(
            html.contains("<del style=\"background:#fdd\">3.50"),
            "{html}"
        );
        assert!(
            html.contains("<ins style=\"background:#dfd\">3.90"),
            "{html}"
        );
        assert!(!html.contains("<script>"), "{html}");
    }

    #[test]
    fn a_small_change_in_a_long_value_still_shows() {
        let at = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let filler = "lorem ipsum ".repeat(5_000);
        let previous = format!("{filler} price 3.50 EUR {filler}");
        let current = format!("{filler} price 3.90 EUR {filler}");
        let html = html(&Content {
            name: "Tea",
            url: "https://example.com/",
            at,
            first_seen: None,
            expression: "content changed",
            error: None,
            previous: Some(&previous),
            current: Some(&current),
        });
        assert!(
            html.contains(">3.50</del>") && html.contains(">3.90</ins>"),
            "{html}"
        );
        assert!(
            html.len() < 3_000,
            "unchanged text is cut: {} bytes",
            html.len()
        );
    }
}
