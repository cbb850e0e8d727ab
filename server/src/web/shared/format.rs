//! How the pages write what they show: a monitor's name (times are [`super::clock`]'s), whether an
//! address may be a link, byte sizes in words, and the head of a long text.

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
