//! One analysis of a fetched page, shared by the single-page check ([`crate::engine`]) and
//! every page of a Portal crawl ([`crate::crawl`]) so the two cannot drift: what an error
//! status means ([`judge_status`]), whether the page is a wall or an empty document
//! ([`screen`], which [`analyse`] runs itself), the one-pass scan or the parsed tree, the
//! value or the extraction error with its [`ErrorKind`] ([`analyse`]), and which pages are
//! analysed on the blocking pool ([`off_runtime`]). What each path makes of the result (a
//! check's outcome; a crawled page's title, links and place in the crawl) stays with the path.

use crate::classify::{Response, Verdict, classify_shown};
use crate::extract::{Deadline, ExtractError, Extractor, onepass, parse, raw_links};
use crate::fetch::{FetchedPage, status_text};
use crate::outcome::ErrorKind;
use std::borrow::Cow;
use std::panic::AssertUnwindSafe;

/// Pages larger than this are analysed on the blocking pool; smaller ones inline, which is
/// cheaper than the hand-off (an 8 KB page parses in well under 100 µs).
const INLINE_LIMIT: usize = 64 * 1024;

/// Why a page has no value: the text users see, and its kind.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Failure {
    pub message: String,
    pub kind: ErrorKind,
}

impl Failure {
    fn extraction(error: ExtractError) -> Failure {
        Failure {
            kind: ErrorKind::of_extract(&error),
            message: error.to_string(),
        }
    }

    /// A bug: the analysis panicked or its task was lost.
    fn internal() -> Failure {
        Failure {
            message: "internal error while extracting".into(),
            kind: ErrorKind::Internal,
        }
    }
}

/// What a response's status means for its page.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Status {
    /// Below 400: the page is analysed.
    Fine,
    /// An error status (400 and up): the page failed ("HTTP 404 Not Found").
    Failed(Failure),
    /// An error status the monitor ignores (`ignoreInvalidPages`): a single page is analysed
    /// as it is, a crawled page is left out.
    Ignored,
}

/// What `status` means for a page of a monitor that does (or does not) ignore invalid pages.
pub(crate) fn judge_status(status: u16, ignore_invalid_pages: bool) -> Status {
    match status {
        ..400 => Status::Fine,
        _ if ignore_invalid_pages => Status::Ignored,
        _ => Status::Failed(Failure {
            message: status_text(status),
            kind: ErrorKind::of_status(status),
        }),
    }
}

/// The failure `page` is instead of a page, when it is a wall or an empty or truncated
/// document ([`crate::classify`]); `text` is its decoded body. Checked before its status: a
/// challenge served with 403 is a wall, not "HTTP 403".
pub(crate) fn screen(page: &FetchedPage, text: &str) -> Option<Failure> {
    screen_shown(page, text, None)
}

/// [`screen`], given the page's rendered text when its one pass has read it already.
fn screen_shown(page: &FetchedPage, text: &str, shown: Option<&str>) -> Option<Failure> {
    let verdict = classify_shown(
        &Response {
            status: page.status,
            headers: &page.headers,
            content_type: page.content_type.as_deref(),
            text,
            body_len: page.body.len(),
            rendered: page.rendered,
            bodiless: page.bodiless,
        },
        shown,
    );
    let kind = match verdict {
        Verdict::Blocked(_) => ErrorKind::Blocked,
        Verdict::Empty(_) => ErrorKind::Empty,
        _ => return None,
    };
    Some(Failure {
        message: verdict.to_string(),
        kind,
    })
}

/// A page's links as written: its first `<base href>` and the raw value of each link, borrowed
/// from the page's text where the one pass found them.
#[derive(Debug, Default)]
pub(crate) struct RawLinks<'a> {
    pub base: Option<Cow<'a, str>>,
    pub hrefs: Vec<Cow<'a, str>>,
}

/// The value of a page, and its raw links when asked for.
pub(crate) struct Analysed<'a> {
    pub value: Result<String, Failure>,
    /// Empty unless links were wanted and the page could be read.
    pub links: RawLinks<'a>,
    /// The page's title when the one pass read it on its way (`Some(None)`: it has none);
    /// `None` when [`crate::extract::title::title`] has to.
    pub title: Option<Option<String>>,
}

/// Analyses `page`, whose decoded body is `text`: [`screen`]s it for a wall or an empty
/// document (the failure it is then), else reads its value and, when `want_links`, its raw
/// links, in one pass without a tree when the extractor needs none and the page allows, else
/// in one parse, within `deadline`. The one pass runs before the screen: its text tells the
/// screen that a page shows more than any wall, which the screen would otherwise count from
/// the markup (a fifth of a crawled page's analysis). A page that needs the tree is screened
/// before it is parsed.
pub(crate) fn analyse<'a>(
    page: &FetchedPage,
    text: &'a str,
    extractor: &Extractor,
    deadline: Deadline,
    want_links: bool,
) -> Result<Analysed<'a>, Failure> {
    if !extractor.needs_tree()
        && let Some(scanned) = onepass::scan(text, want_links)
    {
        if let Some(failure) = screen_shown(page, text, Some(&scanned.text)) {
            return Err(failure);
        }
        return Ok(from_scan(scanned, extractor));
    }
    if let Some(failure) = screen(page, text) {
        return Err(failure);
    }
    Ok(from_tree(text, extractor, deadline, want_links))
}

fn from_scan<'a>(scanned: onepass::Scanned<'a>, extractor: &Extractor) -> Analysed<'a> {
    Analysed {
        value: extractor.finish(scanned.text).map_err(Failure::extraction),
        links: RawLinks {
            base: scanned.base,
            hrefs: scanned.links,
        },
        title: scanned.title,
    }
}

/// The page parsed into a tree, links taken first (exclusion edits the tree).
fn from_tree<'a>(
    text: &'a str,
    extractor: &Extractor,
    deadline: Deadline,
    want_links: bool,
) -> Analysed<'a> {
    let mut doc = match parse::parse_document_within(text, deadline) {
        Ok(doc) => doc,
        Err(error) => {
            return Analysed {
                value: Err(Failure::extraction(error)),
                links: RawLinks::default(),
                title: None,
            };
        }
    };
    let links = if want_links {
        let (base, hrefs) = raw_links(&doc);
        RawLinks {
            base: base.map(|base| Cow::Owned(base.to_string())),
            hrefs: hrefs
                .into_iter()
                .map(|href| Cow::Owned(href.to_string()))
                .collect(),
        }
    } else {
        RawLinks::default()
    };
    let value = extractor
        .extract_from_within(&mut doc, deadline)
        .map_err(Failure::extraction);
    Analysed {
        value,
        links,
        title: None,
    }
}

/// Runs `work`, the analysis of a page of `bytes` bytes: inline for a small page, on the
/// blocking pool for a large one, so parsing never holds up the runtime's workers for long.
/// A panic in it is an internal error of that page, never its caller's.
pub(crate) async fn off_runtime<T: Send + 'static>(
    bytes: usize,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Failure> {
    match start_off_runtime(bytes, work) {
        Started::Done(result) => result,
        Started::Blocking(handle) => blocking_result(handle.await),
    }
}

/// [`off_runtime`] in two steps, for a caller whose future would otherwise keep `work` and
/// its result in its state across the await: a crawl spawns a task for every page, and a
/// task past a kilobyte is a large allocation each time.
pub(crate) enum Started<T> {
    /// A small page's analysis, done inline.
    Done(Result<T, Failure>),
    /// A large page's, running on the blocking pool; [`blocking_result`] reads its end.
    Blocking(tokio::task::JoinHandle<T>),
}

/// Starts [`off_runtime`]'s work: done at once for a small page, spawned for a large one.
pub(crate) fn start_off_runtime<T: Send + 'static>(
    bytes: usize,
    work: impl FnOnce() -> T + Send + 'static,
) -> Started<T> {
    if bytes <= INLINE_LIMIT {
        return Started::Done(
            std::panic::catch_unwind(AssertUnwindSafe(work)).map_err(|_| Failure::internal()),
        );
    }
    Started::Blocking(tokio::task::spawn_blocking(work))
}

/// The end of work started on the blocking pool: a panic in it is an internal error.
pub(crate) fn blocking_result<T>(joined: Result<T, tokio::task::JoinError>) -> Result<T, Failure> {
    joined.map_err(|_| Failure::internal())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::compile_xpath;
    use std::time::Duration;

    fn extractor(xpath: Option<&str>) -> Extractor {
        Extractor::new(compile_xpath(xpath).unwrap(), None, None)
    }

    fn page(status: u16, html: &str) -> FetchedPage {
        FetchedPage {
            url: url::Url::parse("http://127.0.0.1/").unwrap(),
            status,
            content_type: Some("text/html".into()),
            headers: http::HeaderMap::new(),
            rendered: false,
            bodiless: false,
            body: bytes::Bytes::copy_from_slice(html.as_bytes()),
            elapsed: Duration::ZERO,
        }
    }

    /// `html` analysed as the body of a response of `status`.
    fn analysed<'a>(
        status: u16,
        html: &'a str,
        xpath: Option<&str>,
        want_links: bool,
    ) -> Result<Analysed<'a>, Failure> {
        let deadline = Deadline::after(Duration::from_secs(10));
        analyse(
            &page(status, html),
            html,
            &extractor(xpath),
            deadline,
            want_links,
        )
    }

    #[test]
    fn error_statuses_fail_unless_ignored() {
        assert_eq!(judge_status(399, false), Status::Fine);
        assert_eq!(judge_status(404, true), Status::Ignored);
        let Status::Failed(failure) = judge_status(404, false) else {
            panic!("404 did not fail");
        };
        assert_eq!(failure.message, "HTTP 404 Not Found");
        assert_eq!(failure.kind, ErrorKind::HttpStatus);
        let Status::Failed(failure) = judge_status(503, false) else {
            panic!("503 did not fail");
        };
        assert_eq!(failure.kind, ErrorKind::Unavailable);
    }

    #[test]
    fn scan_and_tree_give_the_same_links_and_value() {
        let html = r#"<base href="/d/"><p>Tea <a href="a.html">A</a></p><iframe src="f"></iframe>"#;
        // No xPath: the one-pass scan; an xPath: the tree.
        let scanned = analysed(200, html, None, true).unwrap();
        let tree = analysed(200, html, Some("/html/body"), true).unwrap();
        assert_eq!(scanned.value, Ok("Tea A".to_string()));
        assert_eq!(tree.value, scanned.value);
        for links in [&scanned.links, &tree.links] {
            assert_eq!(links.base.as_deref(), Some("/d/"));
            assert_eq!(links.hrefs, ["a.html", "f"]);
        }
        let unwanted = analysed(200, html, Some("//a"), false).unwrap();
        assert!(unwanted.links.hrefs.is_empty() && unwanted.links.base.is_none());
    }

    #[test]
    fn extraction_errors_carry_their_kind() {
        let failure = analysed(200, "<p>x</p>", Some("//table"), true)
            .unwrap()
            .value
            .unwrap_err();
        assert_eq!(failure.message, "xPath matched nothing");
        assert_eq!(failure.kind, ErrorKind::NothingMatched);
    }

    #[test]
    fn a_wall_is_screened_out_on_the_scan_and_the_tree_path_alike() {
        let wall = "<html><head><title>Just a moment...</title></head>\
                    <body><p>Checking your browser before accessing the site.</p></body></html>";
        let article = format!(
            "<title>Just a moment...</title><p>{}</p>",
            "A long article about waiting for a page, with a wall's title. ".repeat(40)
        );
        for xpath in [None, Some("/html/body")] {
            let failure = analysed(200, wall, xpath, true).err().unwrap();
            assert_eq!(failure.kind, ErrorKind::Blocked, "{xpath:?}");
            assert!(
                failure.message.contains("bot challenge"),
                "{}",
                failure.message
            );
            let page = analysed(200, &article, xpath, true).unwrap();
            assert!(
                page.value.unwrap().starts_with("A long article"),
                "{xpath:?}"
            );
        }
        // An error page that is no wall is screened as any page: its own value.
        let not_found = analysed(404, "<p>gone</p>", None, false).unwrap();
        assert_eq!(not_found.value, Ok("gone".to_string()));
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_panicking_analysis_is_an_internal_error_small_or_large() {
        for bytes in [10, INLINE_LIMIT + 1] {
            let failure = off_runtime(bytes, || -> u8 { panic!("a bug") })
                .await
                .unwrap_err();
            assert_eq!(failure.kind, ErrorKind::Internal);
            assert_eq!(failure.message, "internal error while extracting");
        }
        assert_eq!(off_runtime(INLINE_LIMIT + 1, || 7).await, Ok(7));
    }
}
