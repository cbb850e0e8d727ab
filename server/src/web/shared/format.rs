//! How the pages write what they show: a monitor's name, a time beside "ago", whether an
//! address may be a link, byte sizes in words, the head of a long text, and a difference
//! bounded in size for a page.

use chrono::{DateTime, Utc};
use maud::{Markup, html};
use wachet::model::Monitor;

/// The monitor's name as shown: its name, else its URL.
pub(crate) fn display_name(monitor: &Monitor) -> &str {
    monitor
        .name
        .as_deref()
        .filter(|n| !n.is_empty())
        .or(monitor.url.as_deref())
        .unwrap_or("(unnamed)")
}

/// A time as "5 min ago", with the exact time for hovering and machines.
pub(crate) fn when(at: Option<DateTime<Utc>>, now: DateTime<Utc>) -> Markup {
    let Some(at) = at else {
        return html! { "never" };
    };
    let seconds = (now - at).num_seconds().max(0);
    let relative = match seconds {
        0..60 => "just now".to_string(),
        60..3600 => format!("{} min ago", seconds / 60),
        3600..86_400 => format!("{} h ago", seconds / 3600),
        _ => format!("{} d ago", seconds / 86_400),
    };
    html! {
        time datetime=(at.to_rfc3339()) title=(at.format("%Y-%m-%d %H:%M:%S UTC").to_string()) { (relative) }
    }
}

/// Whether a stored URL may become a link: only web addresses, never `javascript:`.
pub(crate) fn linkable(url: &str) -> bool {
    url.starts_with("http://") || url.starts_with("https://")
}

/// A size for people, in the binary units the service's limits use: "10.0 MB", "200 KB",
/// "12 bytes".
pub(crate) fn size_in_words(bytes: usize) -> String {
    const KB: usize = 1024;
    match bytes {
        b if b >= KB * KB => format!("{:.1} MB", b as f64 / (KB * KB) as f64),
        b if b >= KB => format!("{} KB", b / KB),
        b => format!("{b} bytes"),
    }
}

/// The longest start of `text` of at most `max` bytes ending at a character boundary.
pub(crate) fn head(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}
