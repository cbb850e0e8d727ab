//! URL normalization for crawl dedup: WHATWG parsing (the `url` crate lower-cases scheme and
//! host, drops the default port and resolves dot segments), then the fragment dropped,
//! percent-escapes normalized (upper-case hex; unreserved characters decoded) and, when asked,
//! tracking parameters (`utm_*`, `fbclid`, `gclid`) removed. Two links that a server would
//! answer identically normalize to the same string.

use std::borrow::Cow;
use url::Url;

/// Resolves `href` against `base` and normalizes it; `None` for links that are not http(s).
pub fn resolve(base: &Url, href: &str, strip_tracking: bool) -> Option<Url> {
    let url = base.join(href.trim()).ok()?;
    normalize(url, strip_tracking)
}

/// Normalizes an absolute URL; `None` when it is not http(s) or has no host.
pub fn normalize(mut url: Url, strip_tracking: bool) -> Option<Url> {
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none_or(str::is_empty) {
        return None;
    }
    url.set_fragment(None);
    if let Cow::Owned(path) = normalize_escapes(url.path())
        && path != url.path()
    {
        url.set_path(&path);
    }
    if let Some(query) = url.query() {
        let mut query = normalize_escapes(query).into_owned();
        if strip_tracking {
            query = query
                .split('&')
                .filter(|pair| !is_tracking(pair.split('=').next().unwrap_or("")))
                .collect::<Vec<_>>()
                .join("&");
        }
        url.set_query((!query.is_empty()).then_some(query.as_str()));
    }
    Some(url)
}

fn is_tracking(key: &str) -> bool {
    key.starts_with("utm_") || key == "fbclid" || key == "gclid"
}

/// `%7e` becomes `~`, `%2f` becomes `%2F`; an invalid escape such as `%zz` stays as it is.
/// Borrowed when there is no escape (most links: each is normalized on every page linking it).
fn normalize_escapes(s: &str) -> Cow<'_, str> {
    if !s.contains('%') {
        return Cow::Borrowed(s);
    }
    let bytes = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            let byte = h * 16 + l;
            if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
                out.push(char::from(byte));
            } else {
                out.push('%');
                out.push(char::from(bytes[i + 1].to_ascii_uppercase()));
                out.push(char::from(bytes[i + 2].to_ascii_uppercase()));
            }
            i += 3;
            continue;
        }
        // Non-escape bytes are copied whole characters at a time.
        let ch_len = s[i..].chars().next().map_or(1, char::len_utf8);
        out.push_str(&s[i..i + ch_len]);
        i += ch_len;
    }
    Cow::Owned(out)
}

fn hex(b: u8) -> Option<u8> {
    char::from(b)
        .to_digit(16)
        .and_then(|d| u8::try_from(d).ok())
}

/// The site a host belongs to: `www.` and the bare host count as one.
pub fn site_of(url: &Url) -> &str {
    let host = url.host_str().unwrap_or("");
    host.strip_prefix("www.").unwrap_or(host)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(base: &str, href: &str) -> Option<String> {
        resolve(&Url::parse(base).unwrap(), href, true).map(String::from)
    }

    #[test]
    fn equivalent_links_normalize_alike() {
        let base = "http://Example.com:80/a/b/page.html";
        let expected = Some("http://example.com/a/x.html".to_string());
        for href in [
            "../x.html",
            "./../x.html",
            "/a/x.html#top",
            "HTTP://EXAMPLE.COM:80/a/x.html",
            "http://example.com/a/./c/../x.html",
            "/a/%78.html",
        ] {
            assert_eq!(norm(base, href), expected, "{href}");
        }
    }

    #[test]
    fn queries_are_kept_but_tracking_is_stripped() {
        let base = "https://s.example/";
        assert_eq!(
            norm(base, "/p?id=1&utm_source=x&gclid=2").as_deref(),
            Some("https://s.example/p?id=1")
        );
        assert_eq!(
            norm(base, "/p?utm_medium=y").as_deref(),
            Some("https://s.example/p")
        );
        assert_eq!(
            norm(base, "/p?a=%2f%7e").as_deref(),
            Some("https://s.example/p?a=%2F~")
        );
    }

    #[test]
    fn other_schemes_and_bad_escapes() {
        let base = "https://s.example/";
        for href in [
            "javascript:void(0)",
            "mailto:a@b.c",
            "tel:123",
            "data:text/html,x",
            "ftp://x/",
        ] {
            assert_eq!(norm(base, href), None, "{href}");
        }
        assert_eq!(
            norm(base, "/bad%zz%4").as_deref(),
            Some("https://s.example/bad%zz%4")
        );
    }

    #[test]
    fn www_and_bare_host_are_one_site() {
        let a = Url::parse("https://www.s.example/").unwrap();
        let b = Url::parse("https://s.example/x").unwrap();
        assert_eq!(site_of(&a), site_of(&b));
    }
}
