//! The content of a notification as HTML: what endpoint 5 returns and what an e-mail carries.
//! It names the monitor, its URL, the time and what fired (the synthetic expression), and shows
//! the change ([`VisibleChange`]) with deletions and insertions marked and the monitor's noise
//! dimmed, with a legend saying what dimmed means. Everything that comes from a page or a user
//! is escaped.

use super::change::VisibleChange;
use std::fmt::Write;

/// What the legend says of dimmed text.
pub const NOISE_LEGEND: &str = "parts wachet ignores, they change on their own";

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
    /// Why the rules were in doubt about the change, when they were
    /// ([`wachet::alerts::Raised::doubt`]).
    pub doubt: Option<&'a str>,
    /// The change to show: from the previous value to the current one, when the check
    /// succeeded.
    pub change: Option<&'a VisibleChange>,
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
    if let Some(doubt) = content.doubt {
        let _ = write!(out, "<p class=\"doubt\">{}</p>", escape(doubt));
    }
    if let Some(change) = content.change {
        if change.has_noise() {
            let _ = write!(
                out,
                "<p class=\"noise-legend\"><span class=\"noise\" style=\"color:#5f6368\">dimmed</span>: \
                 {NOISE_LEGEND}</p>"
            );
        }
        out.push_str("<pre class=\"change\">");
        out.push_str(&change.html());
        out.push_str("</pre>");
    }
    out.push_str("</div>");
    out
}

/// The plain-text alternative of [`html`]: the same facts, the change with markers
/// (`[-removed-]`, `{+added+}`, noise between `⟨` and `⟩`).
pub fn plain(content: &Content<'_>) -> String {
    let mut out = format!(
        "{}\n{}\n{} at {}\n",
        content.name,
        content.url,
        content.expression,
        content.at.format("%Y-%m-%d %H:%M:%S UTC")
    );
    if let Some(first_seen) = content.first_seen {
        let _ = writeln!(
            out,
            "First seen at {}, confirmed by the checks since.",
            first_seen.format("%Y-%m-%d %H:%M:%S UTC")
        );
    }
    if let Some(error) = content.error {
        let _ = writeln!(out, "error: {error}");
    }
    if let Some(doubt) = content.doubt {
        let _ = writeln!(out, "{doubt}");
    }
    if let Some(change) = content.change {
        out.push('\n');
        out.push_str(&change.plain());
        out.push('\n');
        out.push_str("\n[-removed-] {+added+}");
        if change.has_noise() {
            let _ = write!(out, " \u{27e8}dimmed\u{27e9}: {NOISE_LEGEND}");
        }
        out.push('\n');
    }
    out
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
            doubt: None,
            change: Some(&VisibleChange::between(
                &Default::default(),
                Some("Price 3.50 EUR"),
                "Price 3.90 EUR <script>",
            )),
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
        assert!(!html.contains("dimmed"), "no noise, no legend: {html}");
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
            doubt: None,
            change: Some(&VisibleChange::between(
                &Default::default(),
                Some(&previous),
                &current,
            )),
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
