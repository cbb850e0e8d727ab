//! Walls and empty documents: telling a response that is not the page from the page itself.
//!
//! Sites and the services in front of them answer automated visitors with pages that are not
//! the page asked for: a bot challenge or captcha (often with status 200), an access-denied or
//! rate-limit page, a maintenance notice, a "please enable JavaScript" wall; and a response can
//! come back empty or cut short. Stored as a value, each would read as a change, and the next
//! check's real page as another. [`classify`] looks at one response (status, headers and the
//! decoded text) and says whether it is the page ([`Verdict::Page`]), a wall
//! ([`Verdict::Blocked`]) or an empty document ([`Verdict::Empty`]); the engine makes the last
//! two failed checks of kinds [`ErrorKind::Blocked`](crate::ErrorKind::Blocked) and
//! [`ErrorKind::Empty`](crate::ErrorKind::Empty), so they never become the value the next check
//! is compared with.
//!
//! It is conservative: a page is a wall only by its structure, never because some text
//! mentions a captcha. The signals, written from the vendors' public descriptions of their
//! pages:
//!
//! - headers that say so whatever the body: `cf-mitigated: challenge` (Cloudflare),
//!   `x-amzn-waf-action: captcha` or `challenge` (AWS WAF), `x-datadome` on a 403, 405 or 429
//!   (DataDome marks the responses it lets through too);
//! - in a document whose visible text is short (walls are tiny): the markers of a vendor's wall
//!   (Cloudflare's challenge options `_cf_chl_opt`, DataDome's captcha host
//!   `captcha-delivery.com`, HUMAN/PerimeterX's `px-captcha` element, Imperva/Incapsula's
//!   `_Incapsula_Resource`, Sucuri's `sucuri_cloudproxy_js`, DDoS-Guard's scripts, AWS WAF's
//!   `AwsWafIntegration`, Akamai's "Access Denied" page with its `Reference #`);
//! - or a title that is one of the walls' own ("Just a moment...", "Attention Required! |
//!   Cloudflare", "Checking your browser", "Access Denied", "Pardon Our Interruption",
//!   "Verify you are human", "Too Many Requests", "Under maintenance", ...), the whole title or
//!   its first part before a ` | ` or ` - ` (the first `<h1>` stands for a missing title: walls
//!   a site writes by hand often have only a heading);
//! - or, for the JavaScript wall, nothing visible but a request to enable JavaScript (in the
//!   text, or in `<noscript>` when the page was not rendered), at most a name beside it.
//!
//! Empty: a 2xx response with no body (or only white space; a 204 and an answer to HEAD have
//! none by definition and are no failure); an HTML document that ends inside
//! something whose content a browser would lose (a comment, a script or a style running to
//! the end, an attribute value, a start tag; one that only lacks end tags or stops inside one,
//! as `</html`, is whole), or whose body holds nothing at all (no text
//! and no element but scripts and styles); a body shorter than its uncompressed
//! `Content-Length`. A value that is empty where the page had content before is none of this:
//! that is the page's own change.
//!
//! A response larger than [`SCAN_LIMIT`] is judged by its headers and its end only (walls are a
//! few kilobytes); a page with no sign of a wall in its source or title is read once more for
//! its title only. Every search is linear.
//!
//! ```
//! use wachet::classify::{HeaderMap, Response, Verdict, classify};
//!
//! let headers = HeaderMap::new();
//! let challenge = "<html><head><title>Just a moment...</title></head>\
//!                  <body><p>Checking your browser before accessing the site.</p></body></html>";
//! let verdict = classify(&Response::new(503, &headers, Some("text/html"), challenge));
//! assert_eq!(
//!     verdict.to_string(),
//!     "the site answered with a bot challenge (HTTP 503) instead of the page"
//! );
//! let article = "<title>How captchas work</title><p>A captcha asks you to prove ...</p>";
//! assert_eq!(classify(&Response::new(200, &headers, Some("text/html"), article)), Verdict::Page);
//! ```

use crate::extract::near;
use crate::normalize::comparison_key;
use aho_corasick::AhoCorasick;
/// The response headers' type ([`Response::headers`]).
pub use http::header::HeaderMap;
use http::header::{AsHeaderName, CONTENT_ENCODING, CONTENT_LENGTH, HeaderName};
use std::fmt;
use std::sync::LazyLock;

/// Bytes of a response looked at for walls; walls are a few kilobytes, and a larger document
/// is judged by its headers and its end only.
pub const SCAN_LIMIT: usize = 256 * 1024;

/// Visible characters above which a document is no wall, whatever its markers and title.
const WALL_TEXT: usize = 1500;

/// Visible characters above which a document is no JavaScript wall.
const JS_WALL_TEXT: usize = 300;

/// Visible characters beside the request for JavaScript (a site's name) above which a
/// document is no JavaScript wall.
const JS_WALL_OTHER_TEXT: usize = 20;

/// One response, as [`classify`] looks at it.
#[derive(Debug, Clone, Copy)]
pub struct Response<'a> {
    /// The HTTP status.
    pub status: u16,
    /// The response headers (empty for a rendered page).
    pub headers: &'a HeaderMap,
    /// The Content-Type, when given.
    pub content_type: Option<&'a str>,
    /// The body, decoded.
    pub text: &'a str,
    /// The body's length in bytes as received, after decompression.
    pub body_len: usize,
    /// The text is a rendered DOM (scripts ran), so `<noscript>` content is not what a reader
    /// sees and is no JavaScript wall.
    pub rendered: bool,
    /// The response has no body by definition (it answers a HEAD request), so it is never
    /// [`Verdict::Empty`].
    pub bodiless: bool,
}

impl<'a> Response<'a> {
    /// A response whose body was `text` as received (its length in bytes is the text's).
    pub fn new(
        status: u16,
        headers: &'a HeaderMap,
        content_type: Option<&'a str>,
        text: &'a str,
    ) -> Response<'a> {
        Response {
            status,
            headers,
            content_type,
            text,
            body_len: text.len(),
            rendered: false,
            bodiless: false,
        }
    }
}

/// What a response is.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The page (or an ordinary error page, which its status already tells).
    Page,
    /// A wall instead of the page.
    Blocked(Blocked),
    /// An empty or truncated document.
    Empty(Empty),
}

/// A wall: what it was and who served it, when that shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocked {
    /// What kind of wall.
    pub wall: Wall,
    /// The service that served it ("Cloudflare", "DataDome", ...), when it shows.
    pub vendor: Option<&'static str>,
    /// The response's status.
    pub status: u16,
}

/// Kinds of wall.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Wall {
    /// A bot check that a browser passes by itself ("Just a moment...").
    Challenge,
    /// A puzzle or "press and hold" for a person.
    Captcha,
    /// Access refused to the visitor ("Access Denied", "Request unsuccessful").
    AccessDenied,
    /// Too many requests.
    RateLimit,
    /// The site is down for maintenance.
    Maintenance,
    /// Nothing but a request to enable JavaScript.
    JavaScript,
}

/// Why a document is empty.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Empty {
    /// A 2xx response with no body, or only white space.
    NoBody {
        /// The response's status.
        status: u16,
    },
    /// An HTML document whose body holds nothing.
    NoContent,
    /// An HTML document that ends inside a comment, a script, a style, an attribute value or a
    /// start tag: what a browser would show of it lacks content the whole page has.
    EndsInsideMarkup,
    /// Fewer bytes than the `Content-Length` announced.
    ShorterThanLength {
        /// Bytes received.
        received: usize,
        /// Bytes announced.
        announced: u64,
    },
}

impl fmt::Display for Verdict {
    /// The failure as users see it in a check's `error`; empty for [`Verdict::Page`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::Page => Ok(()),
            Verdict::Blocked(blocked) => blocked.fmt(f),
            Verdict::Empty(empty) => empty.fmt(f),
        }
    }
}

impl fmt::Display for Blocked {
    /// "the site answered with a bot challenge (Cloudflare, HTTP 403) instead of the page".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.wall {
            Wall::Challenge => "a bot challenge",
            Wall::Captcha => "a captcha",
            Wall::AccessDenied => "an access-denied page",
            Wall::RateLimit => "a rate-limit page",
            Wall::Maintenance => "a maintenance page",
            Wall::JavaScript => "a page asking to enable JavaScript",
        };
        let status = (self.status != 200).then(|| format!("HTTP {}", self.status));
        let said: Vec<&str> = self
            .vendor
            .iter()
            .copied()
            .chain(status.as_deref())
            .collect();
        write!(f, "the site answered with {what}")?;
        if !said.is_empty() {
            write!(f, " ({})", said.join(", "))?;
        }
        f.write_str(" instead of the page")?;
        if self.wall == Wall::JavaScript {
            f.write_str("; a rendered monitor (dynamicContent) may get it")?;
        }
        Ok(())
    }
}

impl fmt::Display for Empty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Empty::NoBody { status } => {
                write!(f, "the page was empty (HTTP {status} with no body)")
            }
            Empty::NoContent => f.write_str("the page was empty (nothing in its HTML body)"),
            Empty::EndsInsideMarkup => {
                f.write_str("the page was cut short (it ends inside its HTML markup)")
            }
            Empty::ShorterThanLength {
                received,
                announced,
            } => write!(
                f,
                "the page was cut short ({received} of the {announced} bytes its Content-Length \
                 announced)"
            ),
        }
    }
}

/// What `response` is: the page, a wall, or an empty document (see the
/// [module documentation](self) for the signals).
///
/// Redirects (3xx) are always [`Verdict::Page`]; an error status (4xx, 5xx) is a wall when the
/// document is one, never [`Verdict::Empty`] (its status says enough); nor is a 204, or an
/// answer to HEAD ([`Response::bodiless`]), which have no body by definition.
pub fn classify(response: &Response<'_>) -> Verdict {
    classify_shown(response, None)
}

/// [`classify`], given the document's rendered text when the caller has it already (a page's
/// one-pass scan): the text then says whether the document shows more than any wall, which
/// `classify` would otherwise count from the markup, and the wall rules read it instead of
/// scanning the page again. The verdict is `classify`'s, whose wall rules judge that same
/// text, with one exception, and no wall among it: a document showing more text than any
/// wall is the page even where `classify`'s cheaper reading of the markup takes its body for
/// empty, as when the text sits inside `<head>` or before a late `<body>` tag (the parser
/// puts it in the body, where a browser shows it).
pub(crate) fn classify_shown(response: &Response<'_>, shown: Option<&str>) -> Verdict {
    if (300..400).contains(&response.status) {
        return Verdict::Page;
    }
    if let Some(blocked) = by_headers(response) {
        return Verdict::Blocked(blocked);
    }
    let html = is_html(response);
    // 204 and 304 have no body by definition, nor has an answer to HEAD.
    let body_expected = !response.bodiless && !matches!(response.status, 204 | 304);
    if response.status < 300 && body_expected {
        if response.text.trim().is_empty() {
            return Verdict::Empty(Empty::NoBody {
                status: response.status,
            });
        }
        if let Some(announced) = announced_length(response.headers)
            && (response.body_len as u64) < announced
        {
            return Verdict::Empty(Empty::ShorterThanLength {
                received: response.body_len,
                announced,
            });
        }
        if html && ends_inside_markup(response.text) {
            return Verdict::Empty(Empty::EndsInsideMarkup);
        }
    }
    // A document showing more text than any wall is the page (and not empty): most pages a
    // check or a crawl fetches end here, after a look at their first few kilobytes.
    let long = || match shown {
        Some(text) => alphanumeric_more_than(text, WALL_TEXT),
        None => shows_more_than(response.text, WALL_TEXT),
    };
    if !html || response.text.len() > SCAN_LIMIT || long() {
        return Verdict::Page;
    }
    let document = Document::read(response, shown);
    if let Some(blocked) = document.wall(response) {
        return Verdict::Blocked(blocked);
    }
    if response.status < 300 && body_expected && Document::body_is_empty(response.text) {
        return Verdict::Empty(Empty::NoContent);
    }
    Verdict::Page
}

fn header(headers: &HeaderMap, name: impl AsHeaderName) -> Option<&str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
}

// The headers looked at on every response, named once: a name given as text is parsed again
// at each lookup.
static CF_MITIGATED: HeaderName = HeaderName::from_static("cf-mitigated");
static X_DATADOME: HeaderName = HeaderName::from_static("x-datadome");
static X_AMZN_WAF_ACTION: HeaderName = HeaderName::from_static("x-amzn-waf-action");

/// Walls that the headers alone name.
fn by_headers(response: &Response<'_>) -> Option<Blocked> {
    let headers = response.headers;
    let blocked = |wall, vendor| {
        Some(Blocked {
            wall,
            vendor: Some(vendor),
            status: response.status,
        })
    };
    if header(headers, &CF_MITIGATED).is_some_and(|v| v.eq_ignore_ascii_case("challenge")) {
        return blocked(Wall::Challenge, "Cloudflare");
    }
    // DataDome marks every response it passes too; only a refusal is its captcha.
    if headers.contains_key(&X_DATADOME) && matches!(response.status, 403 | 405 | 429) {
        return blocked(Wall::Captcha, "DataDome");
    }
    match header(headers, &X_AMZN_WAF_ACTION).map(str::to_ascii_lowercase) {
        Some(action) if action == "captcha" => return blocked(Wall::Captcha, "AWS WAF"),
        Some(action) if action == "challenge" => return blocked(Wall::Challenge, "AWS WAF"),
        _ => {}
    }
    None
}

/// The Content-Length of an uncompressed body, when given (a compressed body's length is not
/// the decompressed one).
fn announced_length(headers: &HeaderMap) -> Option<u64> {
    if header(headers, CONTENT_ENCODING).is_some_and(|v| !v.eq_ignore_ascii_case("identity")) {
        return None;
    }
    header(headers, CONTENT_LENGTH)?.parse().ok()
}

fn is_html(response: &Response<'_>) -> bool {
    match response.content_type {
        Some(ct) => {
            let mime = ct.split(';').next().unwrap_or("").trim();
            mime.eq_ignore_ascii_case("text/html")
                || mime.eq_ignore_ascii_case("application/xhtml+xml")
        }
        None => response.text.trim_start().starts_with('<'),
    }
}

/// Longest heading taken for a missing title, in bytes of source; a wall's is a few words.
const MAX_HEADING: usize = 512;

/// The text of the first `<h1>` of `html`, tags inside it dropped and white space collapsed:
/// what stands for the title of a document that has none.
fn first_heading(html: &str) -> Option<String> {
    let bytes = html.as_bytes();
    let mut from = 0;
    let open = loop {
        let at = find_tag(html, from, "<h1")?;
        let next = *bytes.get(at + 3)?;
        if next == b'>' || next.is_ascii_whitespace() {
            break at;
        }
        from = at + 3;
    };
    let start = open + memchr::memchr(b'>', &bytes[open..])? + 1;
    let end = find_tag(html, start, "</h1")?;
    if end - start > MAX_HEADING {
        return None;
    }
    let text = without_tags(&html[start..end]);
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    (!text.is_empty()).then_some(text)
}

/// Whether an HTML document stops inside something whose content a browser would lose: a
/// comment, a script or a style whose text runs to the end, an attribute value, or a start
/// tag (the element it opens is dropped, with all it would have held). A document that only
/// lacks end tags, or stops inside one (`</html`, `</bo`, as some sites serve their pages), is
/// whole: a browser shows all of it. Looks at the end only, and copies nothing: this runs on
/// every page a check or a crawl fetches.
fn ends_inside_markup(text: &str) -> bool {
    let text = text.trim_end();
    // A document that ends with its own end tag arrived whole: a transfer cut off at a random
    // byte does not stop just after `</html>`. Most pages end so, and are not walked back.
    if ends_with_ignoring_case(text.as_bytes(), b"</html>") {
        return false;
    }
    let mut from = text.len().saturating_sub(64 * 1024);
    while !text.is_char_boundary(from) {
        from -= 1;
    }
    let tail = &text.as_bytes()[from..];
    // In a tag: the first `<` after the last `>` that starts one (a letter, `/` or `!` after
    // it). A start tag, a comment or a declaration that never ends is cut; an end tag only
    // when it stops inside a quoted value.
    let after_last_close = memchr::memrchr(b'>', tail).map_or(0, |at| at + 1);
    if let Some(open) = memchr::memchr_iter(b'<', &tail[after_last_close..])
        .map(|at| after_last_close + at)
        .find(|&at| {
            tail.get(at + 1)
                .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'/' || *c == b'!')
        })
    {
        match tail[open + 1] {
            b'/' if !unclosed_quote(&tail[open + 2..]) => {}
            _ => return true,
        }
    }
    // In a comment, a script or a style, found in one pass going back from `<` to `<` (a
    // vectorised search; a page with neither comments nor scripts is walked once, to its
    // start): the last `<!--` has no `-->` after it, or the opening tag of a script or style
    // comes before a closing one.
    let (mut comment, mut script, mut style) = (None, None, None);
    for at in memchr::memrchr_iter(b'<', tail) {
        let rest = &tail[at + 1..];
        if comment.is_none() && rest.starts_with(b"!--") {
            if memchr::memmem::find(&tail[at..], b"-->").is_none() {
                return true;
            }
            comment = Some(false);
        }
        let (closing, name) = match rest.first() {
            Some(b'/') => (true, &rest[1..]),
            _ => (false, rest),
        };
        if script.is_none() && starts_ignoring_case(name, b"script") {
            script = Some(!closing);
        } else if style.is_none() && starts_ignoring_case(name, b"style") {
            style = Some(!closing);
        }
        if script == Some(true) || style == Some(true) {
            return true;
        }
        if comment.is_some() && script.is_some() && style.is_some() {
            return false;
        }
    }
    false
}

/// Whether the text of a tag (after its name's first character) stops inside a quoted value.
fn unclosed_quote(tag: &[u8]) -> bool {
    let mut at = 0;
    while let Some(quote) = memchr::memchr2(b'"', b'\'', &tag[at..]).map(|n| at + n) {
        match memchr::memchr(tag[quote], &tag[quote + 1..]) {
            Some(end) => at = quote + 1 + end + 1,
            None => return true,
        }
    }
    false
}

/// Elements whose content is never text a reader sees (or, for `<svg>` and `<math>`, not
/// counted here): skipped whole by [`shows_more_than`].
const UNSEEN: &[&str] = &[
    "script",
    "style",
    "noscript",
    "template",
    "title",
    "textarea",
    "xmp",
    "iframe",
    "noembed",
    "noframes",
    "plaintext",
    "svg",
    "math",
    "select",
    "head",
];

/// The shortest and the longest name in [`UNSEEN`].
const UNSEEN_LENGTHS: (usize, usize) = {
    let (mut shortest, mut longest, mut i) = (usize::MAX, 0, 0);
    while i < UNSEEN.len() {
        let n = UNSEEN[i].len();
        if n < shortest {
            shortest = n;
        }
        if n > longest {
            longest = n;
        }
        i += 1;
    }
    (shortest, longest)
};

/// Whether the visible text of the HTML document `html` surely holds more than `limit`
/// characters: a lower bound counted cheaply, letters and digits of ASCII in text outside tags
/// and outside [`UNSEEN`] elements, not in character references. Each such byte is a
/// character of the extracted text (composed with a mark after it, still one), so `true`
/// means the text is longer; `false` means only that the count did not get there. It stops as
/// soon as it does.
fn shows_more_than(html: &str, limit: usize) -> bool {
    let bytes = html.as_bytes();
    let (mut at, mut count) = (0, 0);
    while at < bytes.len() {
        let next = near::find(b'<', &bytes[at..]).map_or(bytes.len(), |n| at + n);
        count += letters_shown(&bytes[at..next], limit - count);
        if count > limit {
            return true;
        }
        if next >= bytes.len() {
            return false;
        }
        at = match skip_markup(html, next) {
            Some(after) => after,
            None => return false,
        };
    }
    false
}

/// Whether the rendered `text` holds more than `limit` ASCII letters and digits outside what
/// reads as a character reference ([`letters_shown`]): then [`Document::wall`] counts more
/// than `limit` characters in it too. Its comparison key keeps each such letter as one
/// character, but decodes a reference written in the text (a page's `&amp;amp;` shows as
/// `&amp;`, one character in the key), so a reference's name is not counted.
fn alphanumeric_more_than(text: &str, limit: usize) -> bool {
    letters_shown(text.as_bytes(), limit) > limit
}

/// The ASCII letters and digits in `text` outside the names of character references (`&amp;`
/// shows none of its letters), counted a block at a time until past `limit`: a long text is
/// read only as far as the count needs, and the count then is above `limit`, not all of it.
fn letters_shown(text: &[u8], limit: usize) -> usize {
    let (mut at, mut count) = (0, 0);
    while at < text.len() && count <= limit {
        let block = &text[at..text.len().min(at + 512)];
        match near::find(b'&', block) {
            None => {
                count += count_alphanumeric(block);
                at += block.len();
            }
            Some(n) => {
                count += count_alphanumeric(&block[..n]);
                let name = &text[at + n + 1..];
                let name_len = name
                    .iter()
                    .take_while(|b| b.is_ascii_alphanumeric() || **b == b'#')
                    .count();
                at += n + 1 + name_len;
            }
        }
    }
    count
}

/// The ASCII letters and digits in `bytes`: the common case of [`letters_shown`], counted in
/// blocks of 64 with byte-wide sums, which the compiler turns into whole-register operations
/// (a running `usize` count it widens lane by lane, several times slower).
fn count_alphanumeric(bytes: &[u8]) -> usize {
    let mut blocks = bytes.chunks_exact(64);
    let mut count = 0;
    for block in &mut blocks {
        let n = block
            .iter()
            .fold(0u8, |n, b| n + u8::from(b.is_ascii_alphanumeric()));
        count += usize::from(n);
    }
    count
        + blocks
            .remainder()
            .iter()
            .filter(|b| b.is_ascii_alphanumeric())
            .count()
}

/// Where the markup starting at the `<` at `at` ends: past a comment, a declaration, a tag
/// (quoted attribute values may hold `>`), or an [`UNSEEN`] element's end tag. `None` when it
/// runs to the end of the document.
fn skip_markup(html: &str, at: usize) -> Option<usize> {
    let bytes = html.as_bytes();
    let rest = &bytes[at..];
    if rest.starts_with(b"<!--") {
        return memchr::memmem::find(&rest[4..], b"-->").map(|end| at + 4 + end + 3);
    }
    // The first `>` outside quotes, jumping from one quote or `>` to the next.
    let mut i = 1;
    let end = loop {
        let found = i + near::find3(b'>', b'"', b'\'', &rest[i..])?;
        match rest[found] {
            b'>' => break at + found + 1,
            quote => i = found + 1 + near::find(quote, &rest[found + 1..])? + 1,
        }
    };
    let name_end = rest[1..]
        .iter()
        .position(|b| !b.is_ascii_alphanumeric())
        .map_or(rest.len(), |n| n + 1);
    let name = &rest[1..name_end];
    // Most tags (`a`, `p`, `li`, `div`, end tags) are none of them: told by their length.
    let maybe_unseen = (UNSEEN_LENGTHS.0..=UNSEEN_LENGTHS.1).contains(&name.len());
    match UNSEEN
        .iter()
        .filter(|_| maybe_unseen)
        .find(|unseen| name.eq_ignore_ascii_case(unseen.as_bytes()))
    {
        Some(unseen) => {
            let close_at = find_element_tag(html, end, true, unseen)?;
            // One inside another (templates, SVG in SVG) would end at the inner one's end tag:
            // not counted further.
            // Looked for up to the end tag only: past it, it would walk the rest of the page.
            if find_element_tag(&html[..close_at], end, false, unseen).is_some() {
                return None;
            }
            memchr::memchr(b'>', &bytes[close_at..]).map(|n| close_at + n + 1)
        }
        None => Some(end),
    }
}

/// Whether `bytes` end with `suffix` (lower-case ASCII), ASCII case ignored.
fn ends_with_ignoring_case(bytes: &[u8], suffix: &[u8]) -> bool {
    bytes.len() >= suffix.len() && bytes[bytes.len() - suffix.len()..].eq_ignore_ascii_case(suffix)
}

/// Whether `bytes` start with `prefix` (lower-case ASCII), ASCII case ignored.
fn starts_ignoring_case(bytes: &[u8], prefix: &[u8]) -> bool {
    bytes.len() >= prefix.len() && bytes[..prefix.len()].eq_ignore_ascii_case(prefix)
}

/// Where the start tag (or with `closing` the end tag) of `name` (lower-case ASCII) first
/// begins in `text` at or after `from`, ASCII case ignored: [`find_tag`] without building the
/// needle.
fn find_element_tag(text: &str, from: usize, closing: bool, name: &str) -> Option<usize> {
    let open: &[u8] = if closing { b"</" } else { b"<" };
    find_lt(text, from, |rest| {
        rest.strip_prefix(open)
            .is_some_and(|rest| starts_ignoring_case(rest, name.as_bytes()))
    })
}

/// Where `needle` (lower-case ASCII, starting with `<`) first occurs in `text` at or after
/// `from`, ASCII case ignored.
fn find_tag(text: &str, from: usize, needle: &str) -> Option<usize> {
    find_lt(text, from, |rest| {
        starts_ignoring_case(rest, needle.as_bytes())
    })
}

/// The first `<` in `text` at or after `from` where the text from it on is `wanted`.
fn find_lt(text: &str, from: usize, wanted: impl Fn(&[u8]) -> bool) -> Option<usize> {
    let bytes = text.as_bytes();
    memchr::memchr_iter(b'<', bytes.get(from..)?)
        .map(|at| from + at)
        .find(|&at| wanted(&bytes[at..]))
}

/// What a small HTML document shows: its title and visible text, keyed for comparison and in
/// lower case, and its source in lower case (the last three only when it shows a sign of a
/// wall).
struct Document {
    title: Option<String>,
    text: String,
    /// Characters of `<noscript>` content: not rendered text, but what a reader without
    /// JavaScript sees, and where walls ask for it.
    noscript_chars: usize,
    /// Characters on visible lines and in `<noscript>` content that ask for JavaScript.
    javascript_chars: usize,
    source: String,
}

impl Document {
    /// Reads what the rules need; the visible text (a second pass over the page) only when
    /// the source or the title shows a sign of a wall, as walls always do.
    fn read(response: &Response<'_>, shown: Option<&str>) -> Document {
        let (html, headers) = (response.text, response.headers);
        // A wall a site writes by hand often has no title, only its heading.
        let title = crate::extract::title::title(html)
            .or_else(|| first_heading(html))
            .map(|t| comparison_key(&t).to_lowercase());
        let server = header(headers, "server").unwrap_or("").to_ascii_lowercase();
        let mut document = Document {
            title,
            text: String::new(),
            noscript_chars: 0,
            javascript_chars: 0,
            source: String::new(),
        };
        // Every marker the rules look for holds one of the signs, so a page without them is no
        // wall whatever its source. One search for all of them, in the lower-case copy: a
        // case-insensitive automaton walks every byte, while lower-case signs in lower-case
        // text leave most of the page to a vectorised prefilter.
        let source = html.to_ascii_lowercase();
        let signs = SIGNS.as_ref().is_none_or(|signs| signs.is_match(&source))
            || document.titled_wall(&server).is_some();
        if !signs {
            return document;
        }
        document.source = source;
        let text = shown
            .map(str::to_string)
            .or_else(|| crate::extract::onepass::scan(html, false).map(|scanned| scanned.text))
            .or_else(|| {
                let extractor = crate::extract::Extractor::new(None, None, None);
                let deadline = crate::extract::Deadline::after(std::time::Duration::from_secs(2));
                extractor.extract_within(html, deadline).ok()
            })
            .unwrap_or_default();
        let noscript = match response.rendered {
            true => Vec::new(),
            false => noscript_texts(html, &document.source),
        };
        let noscript_chars = noscript.iter().map(|t| t.chars().count()).sum();
        let javascript_chars = text
            .lines()
            .map(|line| comparison_key(line).to_lowercase())
            .chain(noscript)
            .filter(|line| asks_for_javascript(line))
            .map(|line| line.chars().count())
            .sum();
        document.text = comparison_key(&text).to_lowercase();
        document.noscript_chars = noscript_chars;
        document.javascript_chars = javascript_chars;
        document
    }

    fn has(&self, marker: &str) -> bool {
        self.source.contains(marker)
    }

    /// The wall this document is, if it is one.
    fn wall(&self, response: &Response<'_>) -> Option<Blocked> {
        let visible = self.text.chars().count();
        if visible > WALL_TEXT {
            return None;
        }
        let server = header(response.headers, "server")
            .unwrap_or("")
            .to_ascii_lowercase();
        let (wall, vendor) = self
            .vendor_wall(&server)
            .or_else(|| self.titled_wall(&server))
            .or_else(|| self.javascript_wall(visible))?;
        Some(Blocked {
            wall,
            vendor,
            status: response.status,
        })
    }

    /// Markers only the vendors' walls carry.
    fn vendor_wall(&self, server: &str) -> Option<(Wall, Option<&'static str>)> {
        let cloudflare = server == "cloudflare" || self.has("cf-error-details");
        if self.has("_cf_chl_opt") {
            return Some((Wall::Challenge, Some("Cloudflare")));
        }
        if cloudflare
            && (self.text.contains("error 1015")
                || self.text.contains("you are being rate limited"))
        {
            return Some((Wall::RateLimit, Some("Cloudflare")));
        }
        if cloudflare
            && self.has("cf-error-details")
            && (self.text.contains("access denied") || self.text.contains("you have been blocked"))
        {
            return Some((Wall::AccessDenied, Some("Cloudflare")));
        }
        if self.has("captcha-delivery.com") {
            return Some((Wall::Captcha, Some("DataDome")));
        }
        if self.has("id=\"px-captcha\"") || self.has("id=px-captcha") || self.has("id='px-captcha'")
        {
            return Some((Wall::Captcha, Some("HUMAN (PerimeterX)")));
        }
        if self.has("_incapsula_resource") || self.text.contains("incapsula incident id") {
            let wall = if self.text.contains("request unsuccessful") {
                Wall::AccessDenied
            } else {
                Wall::Challenge
            };
            return Some((wall, Some("Imperva Incapsula")));
        }
        if self.has("sucuri_cloudproxy_js") {
            return Some((Wall::Challenge, Some("Sucuri")));
        }
        if self.text.contains("sucuri website firewall") && self.text.contains("access denied") {
            return Some((Wall::AccessDenied, Some("Sucuri")));
        }
        if server == "ddos-guard"
            && (self.has("ddos-guard")
                || self
                    .title
                    .as_deref()
                    .is_some_and(|t| t.contains("ddos-guard")))
        {
            return Some((Wall::Challenge, Some("DDoS-Guard")));
        }
        if self.has("check.ddos-guard.net") || self.has("/.well-known/ddos-guard/") {
            return Some((Wall::Challenge, Some("DDoS-Guard")));
        }
        if self.has("awswafintegration") || self.has(".token.awswaf.com") {
            let wall = if self.has("captcha") {
                Wall::Captcha
            } else {
                Wall::Challenge
            };
            return Some((wall, Some("AWS WAF")));
        }
        let akamai = server.contains("akamaighost") || self.has("errors.edgesuite.net");
        if akamai
            && self.title.as_deref() == Some("access denied")
            && self.text.contains("reference #")
        {
            return Some((Wall::AccessDenied, Some("Akamai")));
        }
        None
    }

    /// A wall named by its title: the whole title, or its part before a ` | `, ` - ` or ` · `.
    fn titled_wall(&self, server: &str) -> Option<(Wall, Option<&'static str>)> {
        let title = self.title.as_deref()?;
        let head = [" | ", " - ", " · ", " :: "]
            .iter()
            .filter_map(|sep| title.split_once(sep).map(|(head, _)| head))
            .min_by_key(|head| head.len())
            .unwrap_or(title)
            .trim();
        let is = |phrases: &[&str]| phrases.iter().any(|p| title == *p || head == *p);
        let cloudflare = (server == "cloudflare").then_some("Cloudflare");
        if title == "attention required! | cloudflare" {
            return Some((Wall::Challenge, Some("Cloudflare")));
        }
        if is(&[
            "just a moment...",
            "just a moment…",
            "just a moment",
            "please wait...",
            "one moment, please...",
            "one more step",
        ]) || head.starts_with("checking your browser")
            || head.starts_with("checking if the site connection is secure")
        {
            return Some((Wall::Challenge, cloudflare));
        }
        WALL_TITLES.iter().find(|(titles, _, _)| is(titles)).map(
            |&(_, wall, served)| match served {
                Served::By(vendor) => (wall, Some(vendor)),
                Served::Cloudflare => (wall, cloudflare),
                Served::Unnamed => (wall, None),
            },
        )
    }

    /// A page showing nothing but a request to enable JavaScript (and at most a name): a
    /// login form, or a short page, that also asks for it is a page.
    fn javascript_wall(&self, visible: usize) -> Option<(Wall, Option<&'static str>)> {
        let shown = visible + self.noscript_chars;
        (self.javascript_chars > 0
            && shown <= JS_WALL_TEXT
            && shown.saturating_sub(self.javascript_chars) <= JS_WALL_OTHER_TEXT)
            .then_some((Wall::JavaScript, None))
    }

    /// Whether the body holds nothing: no text and no element but scripts, styles and
    /// templates (comments aside).
    fn body_is_empty(html: &str) -> bool {
        let start = match find_tag(html, 0, "<body") {
            Some(at) => {
                memchr::memchr(b'>', &html.as_bytes()[at..]).map_or(html.len(), |end| at + end + 1)
            }
            None => find_tag(html, 0, "</head>").map_or(0, |at| at + "</head>".len()),
        };
        let mut rest = &html[start..];
        loop {
            rest = rest.trim_start();
            if rest.is_empty() {
                return true;
            }
            let starts = |prefix: &str| starts_ignoring_case(rest.as_bytes(), prefix.as_bytes());
            let skip_to =
                |rest: &str, close: &str| find_tag(rest, 0, close).map(|at| at + close.len());
            let skip_past = |rest: &str, close: &str| rest.find(close).map(|at| at + close.len());
            let skipped = if starts("<!--") {
                skip_past(rest, "-->")
            } else if starts("<script") {
                skip_to(rest, "</script>")
            } else if starts("<style") {
                skip_to(rest, "</style>")
            } else if starts("<template") {
                skip_to(rest, "</template>")
            } else if starts("</") || starts("<br") || starts("<!") {
                skip_past(rest, ">")
            } else if starts("<head")
                || starts("<html")
                || starts("<body")
                || starts("<meta")
                || starts("<link")
                || starts("<title")
            {
                // Only before the body starts; a title's text is not the body's.
                if starts("<title") {
                    skip_to(rest, "</title>")
                } else {
                    skip_past(rest, ">")
                }
            } else {
                // Text, or an element of the body.
                return false;
            };
            match skipped {
                Some(at) => rest = &rest[at..],
                None => return true,
            }
        }
    }
}

/// The text of each `<noscript>` element (tags dropped, keyed, lower case); `lower` is `html`
/// in ASCII lower case, so their offsets agree.
/// `markup` with its tags dropped, each replaced by a space.
fn without_tags(markup: &str) -> String {
    let mut text = String::with_capacity(markup.len());
    let mut in_tag = false;
    for c in markup.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                text.push(' ');
            }
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    text
}

fn noscript_texts(html: &str, lower: &str) -> Vec<String> {
    let mut texts = Vec::new();
    let mut from = 0;
    while let Some(at) = lower[from..].find("<noscript") {
        let open = from + at;
        let Some(start) = lower[open..].find('>').map(|end| open + end + 1) else {
            break;
        };
        let end = lower[start..]
            .find("</noscript")
            .map_or(lower.len(), |len| start + len);
        let text = comparison_key(&without_tags(&html[start..end])).to_lowercase();
        if !text.is_empty() {
            texts.push(text);
        }
        from = end;
    }
    texts
}

/// Who a titled wall is named after.
#[derive(Clone, Copy)]
enum Served {
    By(&'static str),
    /// Cloudflare when it answered (its `Server` header), else no one.
    Cloudflare,
    Unnamed,
}

/// Walls named by their title (the whole title, or its part before a separator), tried in
/// this order after the challenges.
const WALL_TITLES: &[(&[&str], Wall, Served)] = &[
    (
        &["ddos-guard", "ddos protection by ddos-guard"],
        Wall::Challenge,
        Served::By("DDoS-Guard"),
    ),
    (
        &["pardon our interruption", "pardon our interruption..."],
        Wall::Challenge,
        Served::By("Imperva"),
    ),
    (
        &[
            "access to this page has been denied",
            "access to this page has been denied.",
        ],
        Wall::Captcha,
        Served::By("HUMAN (PerimeterX)"),
    ),
    (
        &[
            "access denied",
            "request rejected",
            "request unsuccessful",
            "403 - forbidden: access is denied.",
            "you have been blocked",
        ],
        Wall::AccessDenied,
        Served::Cloudflare,
    ),
    (
        &[
            "captcha",
            "security check",
            "human verification",
            "verify you are human",
            "verify you are a human",
            "please verify you are a human",
            "are you a robot?",
            "are you a robot",
            "are you human?",
            "bot verification",
            "robot check",
            "security verification",
        ],
        Wall::Captcha,
        Served::Cloudflare,
    ),
    (
        &[
            "too many requests",
            "429 too many requests",
            "rate limit exceeded",
            "rate limited",
            "you are being rate limited",
        ],
        Wall::RateLimit,
        Served::Cloudflare,
    ),
    (
        &[
            "maintenance",
            "site maintenance",
            "under maintenance",
            "down for maintenance",
            "maintenance mode",
            "scheduled maintenance",
            "we'll be back soon!",
            "we'll be back soon",
            "we will be back soon",
            "temporarily down for maintenance",
            "site under maintenance",
            "website under maintenance",
        ],
        Wall::Maintenance,
        Served::Unnamed,
    ),
];

/// [`WALL_SIGNS`] and [`JAVASCRIPT_ASKS`], found in one pass over a lower-case source.
static SIGNS: LazyLock<Option<AhoCorasick>> = LazyLock::new(|| {
    AhoCorasick::builder()
        .kind(Some(aho_corasick::AhoCorasickKind::DFA))
        .prefilter(false)
        .build(WALL_SIGNS.iter().chain(JAVASCRIPT_ASKS))
        .ok()
});

/// Text in a wall's source (in lower case) that the rules of [`Document::vendor_wall`] look
/// for: a page with none of them, none of [`JAVASCRIPT_ASKS`] and no wall's title is read no
/// further.
const WALL_SIGNS: &[&str] = &[
    "_cf_chl_opt",
    "cf-error-details",
    "1015",
    "rate limited",
    "captcha",
    "incapsula",
    "sucuri",
    "ddos-guard",
    "awswaf",
    "edgesuite",
    "reference #",
    "reference&#32;&#35;",
];

/// How a page asks to enable JavaScript (keyed, lower case).
const JAVASCRIPT_ASKS: &[&str] = &[
    "enable javascript",
    "javascript is required",
    "javascript is disabled",
    "requires javascript",
    "turn on javascript",
    "activate javascript",
    "javascript must be enabled",
    "enable js and disable any ad blocker",
    "javascript to run this app",
];

/// Whether a line (keyed, lower case) asks to enable JavaScript.
fn asks_for_javascript(line: &str) -> bool {
    JAVASCRIPT_ASKS.iter().any(|phrase| line.contains(phrase))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::Xorshift;
    use http::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    fn verdict(status: u16, pairs: &[(&'static str, &str)], text: &str) -> Verdict {
        classify(&Response::new(
            status,
            &headers(pairs),
            Some("text/html"),
            text,
        ))
    }

    #[test]
    fn headers_alone_name_a_wall_whatever_the_body() {
        let page = "<title>Tea</title><p>Earl Grey 3.50 EUR</p>";
        let challenge = verdict(403, &[("cf-mitigated", "challenge")], page);
        assert_eq!(
            challenge.to_string(),
            "the site answered with a bot challenge (Cloudflare, HTTP 403) instead of the page"
        );
        assert!(matches!(
            verdict(405, &[("x-amzn-waf-action", "captcha")], page),
            Verdict::Blocked(Blocked {
                wall: Wall::Captcha,
                vendor: Some("AWS WAF"),
                ..
            })
        ));
        // DataDome marks the responses it lets through too.
        assert_eq!(
            verdict(200, &[("x-datadome", "protected")], page),
            Verdict::Page
        );
        assert!(matches!(
            verdict(403, &[("x-datadome", "protected")], page),
            Verdict::Blocked(Blocked {
                vendor: Some("DataDome"),
                ..
            })
        ));
    }

    #[test]
    fn a_body_shorter_than_its_content_length_is_cut_short() {
        let page = "<p>Tea</p>";
        let short = classify(&Response {
            status: 200,
            headers: &headers(&[("content-length", "100")]),
            content_type: Some("text/html"),
            text: page,
            body_len: page.len(),
            rendered: false,
            bodiless: false,
        });
        assert_eq!(
            short.to_string(),
            "the page was cut short (10 of the 100 bytes its Content-Length announced)"
        );
        // A compressed body's length is not the decompressed one.
        let gzip = headers(&[("content-length", "100"), ("content-encoding", "gzip")]);
        assert_eq!(
            classify(&Response::new(200, &gzip, Some("text/html"), page)),
            Verdict::Page
        );
    }

    #[test]
    fn letters_and_digits_are_counted_alike_in_blocks_and_one_by_one() {
        let mut rng = Xorshift(0x2545_f491_4f6c_dd1d);
        for len in [0, 1, 63, 64, 65, 127, 128, 200, 1000] {
            let bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
            let plain = bytes.iter().filter(|b| b.is_ascii_alphanumeric()).count();
            assert_eq!(count_alphanumeric(&bytes), plain, "{len} bytes");
        }
        assert_eq!(count_alphanumeric(&[b'a'; 640]), 640);
    }

    #[test]
    fn only_the_end_of_a_document_tells_it_was_cut() {
        for (text, cut) in [
            ("<p>a < b", false),
            ("<p>x <3", false),
            ("<p>Tea</p>", false),
            ("<p>Tea", false),
            // A start tag that never ends drops the element it opens, with all it would hold.
            ("<p>Tea</p><a hr", true),
            ("<p>Tea</p><a href=\"/more", true),
            // An end tag that never ends loses nothing a reader sees.
            ("<p>Tea</p></di", false),
            ("<p>Tea</p></div title=\"x", true),
            ("<p>Tea</p><!-- note", true),
            ("<p>Tea</p><script>var a = 1", true),
            ("<p>Tea</p><script>var a = 1</script>", false),
            ("<p>Tea</p><STYLE>p{color:red", true),
            // Its own end tag last: it arrived whole, whatever came before.
            ("<p>Tea</p><script>var a = 1</html>\n", false),
        ] {
            assert_eq!(ends_inside_markup(text), cut, "{text:?}");
        }
    }

    #[test]
    fn error_statuses_redirects_no_content_and_head_are_never_empty() {
        assert_eq!(verdict(404, &[], ""), Verdict::Page);
        assert_eq!(verdict(503, &[], "<p>x</p><a hr"), Verdict::Page);
        assert_eq!(
            verdict(302, &[("cf-mitigated", "challenge")], ""),
            Verdict::Page
        );
        // No content by definition.
        assert_eq!(verdict(204, &[], ""), Verdict::Page);
        let none = HeaderMap::new();
        let head = Response {
            bodiless: true,
            ..Response::new(200, &none, Some("text/html"), "")
        };
        assert_eq!(classify(&head), Verdict::Page);
        assert!(matches!(
            verdict(200, &[], ""),
            Verdict::Empty(Empty::NoBody { status: 200 })
        ));
    }

    #[test]
    fn a_large_document_is_judged_by_its_headers_and_end_only() {
        let big = format!(
            "<title>Just a moment...</title><p>{}</p>",
            "tea ".repeat(SCAN_LIMIT)
        );
        assert_eq!(verdict(200, &[], &big), Verdict::Page);
        let cut = format!("{big}<a hr");
        assert_eq!(
            verdict(200, &[], &cut),
            Verdict::Empty(Empty::EndsInsideMarkup)
        );
    }

    #[test]
    fn noscript_asks_for_javascript_only_where_scripts_did_not_run() {
        let none = HeaderMap::new();
        let shell = "<title>Shop</title><body><noscript>You need to enable JavaScript to run \
                     this app.</noscript><div id=root>Teashop</div></body>";
        let served = Response::new(200, &none, Some("text/html"), shell);
        assert!(matches!(
            classify(&served),
            Verdict::Blocked(Blocked {
                wall: Wall::JavaScript,
                ..
            })
        ));
        let rendered = Response {
            rendered: true,
            ..served
        };
        assert_eq!(classify(&rendered), Verdict::Page);
        // Served with a little content of its own beside the request, it is a page too.
        let short = shell.replace("Teashop", "Earl Grey 3.50 EUR, in stock");
        let short = Response::new(200, &none, Some("text/html"), &short);
        assert_eq!(classify(&short), Verdict::Page);
    }

    #[test]
    fn json_and_text_are_only_ever_empty() {
        let none = HeaderMap::new();
        let json = r#"{"title": "Just a moment...", "error": "rate limit exceeded"}"#;
        assert_eq!(
            classify(&Response::new(200, &none, Some("application/json"), json)),
            Verdict::Page
        );
        assert!(matches!(
            classify(&Response::new(200, &none, Some("application/json"), " ")),
            Verdict::Empty(Empty::NoBody { .. })
        ));
    }

    /// The straightforward forms of the two scans that run on every page (a lower-case copy
    /// and substring searches), which the fast ones must agree with.
    fn ends_inside_markup_plainly(text: &str) -> bool {
        let tail = text.trim_end().to_ascii_lowercase();
        if tail.ends_with("</html>") {
            return false;
        }
        let after = tail.rfind('>').map_or(0, |at| at + 1);
        let starts_tag = |(at, _): &(usize, char)| {
            tail[after + at + 1..]
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '/' || c == '!')
        };
        if let Some((open, _)) = tail[after..]
            .char_indices()
            .filter(|(_, c)| *c == '<')
            .find(starts_tag)
        {
            let tag = &tail[after + open..];
            let Some(end_tag) = tag.strip_prefix("</") else {
                return true;
            };
            // Quotes pair up; an odd one left open is a value that runs to the end.
            let mut open_quote: Option<char> = None;
            for c in end_tag.chars() {
                match open_quote {
                    Some(q) if c == q => open_quote = None,
                    None if c == '"' || c == '\'' => open_quote = Some(c),
                    _ => {}
                }
            }
            if open_quote.is_some() {
                return true;
            }
        }
        let after = |open: &str, close: &str| match tail.rfind(open) {
            Some(at) => !tail[at..].contains(close),
            None => false,
        };
        after("<!--", "-->") || after("<script", "</script") || after("<style", "</style")
    }

    #[test]
    fn the_scans_of_every_page_agree_with_their_plain_forms() {
        let parts = [
            "<p>Tea</p>",
            "<SCRIPT>var a = 1;",
            "</Script>",
            "<style>p{}",
            "</STYLE>",
            "<!-- note",
            " -->",
            "<!-->",
            "<Body class=x>",
            "</head>",
            "<br>",
            "<title>T</title>",
            "  ",
            "<div",
            "é",
            "<scripts>",
            "</style",
            "</ht",
            "<a href=\"x",
            "</div title='",
            "\"",
            "'",
            " > ",
            "<",
            "<!doctype html>",
            "</HTML>",
            "text",
        ];
        let mut rng = Xorshift(0x9e37_79b9_7f4a_7c15);
        let mut pages = std::collections::HashSet::new();
        for _ in 0..20_000 {
            // Every page drawn afresh (a length drawn once stayed zero once it was).
            let mut page = String::new();
            for _ in 0..rng.next() % 7 {
                page.push_str(rng.pick(&parts));
            }
            pages.insert(page.clone());
            assert_eq!(
                ends_inside_markup(&page),
                ends_inside_markup_plainly(&page),
                "{page:?}"
            );
            let lower = page.to_ascii_lowercase();
            assert_eq!(
                Document::body_is_empty(&page),
                Document::body_is_empty(&lower),
                "{page:?}"
            );
        }
        assert!(pages.len() > 10_000, "only {} pages", pages.len());
    }

    /// Every HTML page of the fixtures (walls, articles, crawled sites, extraction cases) and
    /// some made to sit on the counts' edges.
    fn pages() -> Vec<String> {
        fn read(dir: &std::path::Path, out: &mut Vec<String>) {
            for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    read(&path, out);
                } else if path.extension().is_some_and(|e| e == "html") {
                    out.extend(std::fs::read_to_string(&path));
                }
            }
        }
        let mut all = Vec::new();
        read(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures"),
            &mut all,
        );
        let words = "Plans that grow with you, priced per seat &amp; per month. ".repeat(40);
        all.extend([
            format!("<p>{words}</p>"),
            format!("<template><template>x</template>{words}</template><p>short</p>"),
            format!("<p title='a>b'>{words}</p>"),
            format!("<!-- {words} --><p>tiny</p>"),
            format!("<SCRIPT>var a = '{words}';</Script><p>tiny</p>"),
            format!("<svg><svg>x</svg><text>{words}</text></svg>"),
            format!("<p>AT&T {words}</p>"),
            // Walls at the length where a wall stops being one, counted in characters.
            format!(
                "<title>Just a moment...</title><p>{}</p>",
                "a".repeat(WALL_TEXT)
            ),
            format!(
                "<title>Just a moment...</title><p>{}</p>",
                "a".repeat(WALL_TEXT + 1)
            ),
            format!(
                "<title>Just a moment...</title><p>{}</p>",
                "été ".repeat(300)
            ),
            // References written in the text: letters the markup shows, one character each in
            // the comparison key.
            format!(
                "<head><title>Just a moment...</title><p>{}</p></head><body></body>",
                "&amp;amp; ".repeat(600)
            ),
            format!(
                "<title>Just a moment...</title><p><a title=it's>x</a>{}</p>",
                "&amp;amp; ".repeat(600)
            ),
            format!(
                "<title>Just a moment...</title><p>{}</p>",
                "&amp;#65; ".repeat(600)
            ),
        ]);
        assert!(all.len() > 30, "{} pages", all.len());
        all
    }

    #[test]
    fn the_text_counted_cheaply_is_never_more_than_the_extracted_text() {
        let all = pages();
        let extractor = crate::extract::Extractor::new(None, None, None);
        let mut counted = 0;
        for page in &all {
            let deadline = crate::extract::Deadline::after(std::time::Duration::from_secs(5));
            let Ok(text) = extractor.extract_within(page, deadline) else {
                continue;
            };
            let shown = comparison_key(&text).chars().count();
            for limit in [0, 10, 100, 300, 1500] {
                if shows_more_than(page, limit) {
                    counted += 1;
                    assert!(shown > limit, "{shown} <= {limit}: {page:.300}");
                }
            }
        }
        assert!(counted > 20, "the cheap count decided only {counted} times");
    }

    #[test]
    fn the_scans_text_gives_the_verdict_the_markup_gives() {
        // A crawl hands the one pass's text to the screen; every page the pass reads must get
        // the verdict it gets without it, walls and the longest pages alike.
        let mut walls = 0;
        let mut pages_read = 0;
        for page in pages() {
            let Some(scanned) = crate::extract::onepass::scan(&page, true) else {
                continue;
            };
            pages_read += 1;
            let shown = comparison_key(&scanned.text).chars().count();
            for limit in [0, 10, 300, 1500] {
                if alphanumeric_more_than(&scanned.text, limit) {
                    assert!(shown > limit, "{shown} <= {limit}: {page:.300}");
                }
            }
            for status in [200, 403, 503] {
                let headers = headers(&[]);
                let response = Response::new(status, &headers, Some("text/html"), &page);
                let verdict = classify(&response);
                walls += usize::from(matches!(verdict, Verdict::Blocked(_)));
                assert_eq!(
                    classify_shown(&response, Some(&scanned.text)),
                    verdict,
                    "{status}: {page:.300}"
                );
            }
        }
        assert!(
            pages_read > 30 && walls > 20,
            "{pages_read} pages, {walls} walls"
        );
    }

    #[test]
    fn the_text_shown_decides_where_the_markup_reads_otherwise() {
        let headers = headers(&[]);
        // Text inside <head> is moved to the body by the parser and shown there: the page
        // shows two thousand letters, which the markup's reading takes for an empty body.
        // So is text before a late <body> tag, past markup the cheap count gives up at.
        let words = "tea ".repeat(700);
        for page in [
            format!("<html><head><title>T</title><p>{words}</p></head><body></body></html>"),
            format!("<a title=it's>x</a>{words}<body></body>"),
        ] {
            let response = Response::new(200, &headers, Some("text/html"), &page);
            let shown = crate::extract::onepass::scan(&page, false).unwrap().text;
            assert!(shown.ends_with(words.trim()), "{shown:.100}");
            assert_eq!(classify_shown(&response, Some(&shown)), Verdict::Page);
            assert_eq!(
                classify(&response),
                Verdict::Empty(Empty::NoContent),
                "the markup's reading changed: the exception in classify_shown's docs may be gone"
            );
        }
        // The text given is what decides: a wall's markup with a long text is the page.
        let wall = "<title>Just a moment...</title><p>Checking your browser.</p>";
        let response = Response::new(503, &headers, Some("text/html"), wall);
        assert!(matches!(classify(&response), Verdict::Blocked(_)));
        assert_eq!(classify_shown(&response, Some(&words)), Verdict::Page);
    }
}
