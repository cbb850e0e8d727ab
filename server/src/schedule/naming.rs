//! Naming a monitor after its page: a monitor the service named (the quick-add names it after
//! its URL's host and path, [`name_from_url`]) takes its page's title once a check reads one.
//! A name a person chose is never touched: the store keeps whether the name is the service's
//! ([`crate::store::TaskStore::name_automatically`]), and the rename is conditional on it.

use crate::store::ScheduleStore;
use wachet::model::Monitor;

/// Longest name taken from a title, in characters: a page cannot give a monitor a huge name.
const MAX_NAME_CHARS: usize = 200;

/// What a monitor of `url` is named until its page's title is known: its host and path
/// (`example.com/news`), the host alone for the site's root; `url` itself when it has no host.
pub fn name_from_url(url: &str) -> String {
    let Ok(parsed) = url::Url::parse(url.trim()) else {
        return url.trim().to_string();
    };
    let Some(host) = parsed.host_str() else {
        return url.trim().to_string();
    };
    let path = parsed.path().trim_end_matches('/');
    format!("{host}{path}")
}

/// After a check of `monitor` read its page's `title`: names the monitor after it when its
/// name is still the one it was given after its URL. Asks the store only then, so a check of
/// a named monitor writes nothing; the store renames only a name the service gave. A failure
/// only leaves the name as it was.
pub(super) async fn name_after_page(
    store: &dyn ScheduleStore,
    monitor: &Monitor,
    title: Option<&str>,
) {
    let (Some(task), Some(url)) = (monitor.id.as_deref(), monitor.url.as_deref()) else {
        return;
    };
    let Some(title) = title.map(str::trim).filter(|t| !t.is_empty()) else {
        return;
    };
    if monitor.name.as_deref() != Some(name_from_url(url).as_str()) {
        return;
    }
    let title: String = title.chars().take(MAX_NAME_CHARS).collect();
    if let Err(err) = store.name_after_page(task, &title).await {
        tracing::warn!(%err, task = %task, "cannot name the monitor after its page");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_names_its_host_and_path_without_query_or_trailing_slash() {
        assert_eq!(name_from_url("https://example.com/"), "example.com");
        assert_eq!(name_from_url("https://example.com"), "example.com");
        assert_eq!(
            name_from_url("http://news.example.org/world/today/?page=2#top"),
            "news.example.org/world/today"
        );
        assert_eq!(name_from_url("not a url"), "not a url");
    }
}
