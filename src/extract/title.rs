//! A page's title (a crawled page's `name` in the API; a wall's title, [`crate::classify`]): the text of the document's first `<title>`
//! as `document.title` gives it (character references decoded, white space collapsed), found
//! with the HTML5 tokenizer so titles inside comments, scripts, styles and SVG or MathML are
//! not taken. Tokenizing stops at the title's end, and looks no further than the start of the
//! body's content (the first element that does not belong in `<head>`), where titles are, and
//! never past the first 256 KB. The one-pass scan ([`super::onepass`]) reads the title on its
//! way through the head and gives it through [`from_scan`], held to [`title`]'s answer by its
//! differential tests; the tree path uses [`title`].

use html5ever::TokenizerResult;
use html5ever::tendril::StrTendril;
use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::{
    BufferQueue, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
};
use std::cell::{Cell, RefCell};

/// Longest title kept, in characters; a hostile page cannot make page names huge.
const MAX_TITLE_CHARS: usize = 1024;

/// How much of a page is looked at: titles are in the head, and a huge page is not copied.
const MAX_SCAN_BYTES: usize = 256 * 1024;

#[derive(Default)]
struct Sink {
    /// Inside `<title>`, collecting.
    in_title: Cell<bool>,
    /// The title ended, or the body's content began: stop.
    done: Cell<bool>,
    found: Cell<bool>,
    text: RefCell<String>,
}

impl TokenSink for Sink {
    type Handle = ();

    fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<()> {
        match token {
            Token::TagToken(tag) => {
                let name = tag.name.as_ref();
                if self.in_title.get() {
                    if tag.kind == TagKind::EndTag && name == "title" {
                        self.done.set(true);
                        return TokenSinkResult::Script(());
                    }
                    return TokenSinkResult::Continue;
                }
                if tag.kind == TagKind::EndTag {
                    return TokenSinkResult::Continue;
                }
                match name {
                    "title" => {
                        self.in_title.set(true);
                        self.found.set(true);
                        TokenSinkResult::RawData(RawKind::Rcdata)
                    }
                    "script" => TokenSinkResult::RawData(RawKind::ScriptData),
                    "style" | "noscript" | "noframes" | "xmp" | "iframe" => {
                        TokenSinkResult::RawData(RawKind::Rawtext)
                    }
                    "textarea" => TokenSinkResult::RawData(RawKind::Rcdata),
                    "html" | "head" | "meta" | "link" | "base" | "basefont" | "bgsound"
                    | "template" => TokenSinkResult::Continue,
                    // The body's content begins (an SVG or MathML title included).
                    _ => {
                        self.done.set(true);
                        TokenSinkResult::Script(())
                    }
                }
            }
            Token::CharacterTokens(chars) if self.in_title.get() => {
                let mut text = self.text.borrow_mut();
                if text.len() < MAX_TITLE_CHARS * 4 {
                    text.push_str(&chars);
                }
                TokenSinkResult::Continue
            }
            _ => TokenSinkResult::Continue,
        }
    }
}

/// The page's title, or `None` when it has none (an empty title is `Some("")`).
pub(crate) fn title(html: &str) -> Option<String> {
    let mut end = html.len().min(MAX_SCAN_BYTES);
    while !html.is_char_boundary(end) {
        end -= 1;
    }
    let input = BufferQueue::default();
    input.push_back(StrTendril::from_slice(&html[..end]));
    let tokenizer = Tokenizer::new(Sink::default(), TokenizerOpts::default());
    // A pause is the sink asking to stop, or a `<meta charset>` (the text is decoded already,
    // so it goes on); bounded all the same.
    for _ in 0..16 {
        if tokenizer.sink.done.get() {
            break;
        }
        match tokenizer.feed(&input) {
            TokenizerResult::Done => {
                tokenizer.end();
                break;
            }
            TokenizerResult::Script(()) | TokenizerResult::EncodingIndicator(_) => {}
        }
    }
    let sink = &tokenizer.sink;
    if !sink.found.get() {
        return None;
    }
    let text = sink.text.borrow();
    Some(tidy(&text))
}

/// A title's decoded text as `document.title` gives it: ASCII white space collapsed, at most
/// [`MAX_TITLE_CHARS`] characters.
fn tidy(text: &str) -> String {
    let mut tidy = String::with_capacity(text.len().min(MAX_TITLE_CHARS * 4));
    let mut room = MAX_TITLE_CHARS;
    for word in text
        .split(|c: char| c.is_ascii_whitespace())
        .filter(|w| !w.is_empty())
    {
        if !tidy.is_empty() {
            if room == 0 {
                break;
            }
            tidy.push(' ');
            room -= 1;
        }
        match word.char_indices().nth(room) {
            Some((cut, _)) => {
                tidy.push_str(&word[..cut]);
                break;
            }
            None => {
                tidy.push_str(word);
                room -= word.chars().count();
            }
        }
    }
    tidy
}

/// [`title`] of a page whose first `<title>`, in its head, holds `decoded` (character
/// references decoded) and whose content ends at byte `end`: what the one-pass scan found on
/// its way, so the page is not tokenized again. `None` when only [`title`] can tell: a title
/// reaching past the bytes it reads, or longer than it keeps before tidying.
pub(crate) fn from_scan(decoded: &str, end: usize) -> Option<String> {
    (end <= MAX_SCAN_BYTES && decoded.len() < MAX_TITLE_CHARS * 4).then(|| tidy(decoded))
}

#[cfg(test)]
mod tests {
    use super::{MAX_TITLE_CHARS, tidy, title};

    #[test]
    fn tidying_collapses_white_space_and_keeps_the_first_characters() {
        let plain = |text: &str| -> String {
            let collapsed = text.split_ascii_whitespace().collect::<Vec<_>>().join(" ");
            collapsed.chars().take(MAX_TITLE_CHARS).collect()
        };
        let long_word = "é".repeat(MAX_TITLE_CHARS + 3);
        let words = "ab ".repeat(MAX_TITLE_CHARS);
        let cut_at_space = format!("{} z", "x".repeat(MAX_TITLE_CHARS - 1));
        let exact = format!("{} z", "x".repeat(MAX_TITLE_CHARS));
        for text in [
            "",
            "   ",
            " Tea \n\t cake ",
            "one",
            "\u{a0}kept\u{a0} non-ASCII space",
            &long_word,
            &words,
            &cut_at_space,
            &exact,
        ] {
            assert_eq!(tidy(text), plain(text), "{text:?}");
        }
    }

    #[test]
    fn titles_as_document_title_gives_them() {
        assert_eq!(
            title("<html><head><title>  Tea &amp;\n cake </title></head><body>x</body>").as_deref(),
            Some("Tea & cake")
        );
        assert_eq!(title("<title>a <b> c</title>").as_deref(), Some("a <b> c"));
        assert_eq!(title("<title></title>").as_deref(), Some(""));
        assert_eq!(title("<p>no title</p>"), None);
        assert_eq!(
            title("<!-- <title>no</title> --><title>yes</title>").as_deref(),
            Some("yes")
        );
        assert_eq!(
            title("<script>document.write('<title>no</title>')</script><title>yes</title>")
                .as_deref(),
            Some("yes")
        );
        assert_eq!(title("<body><svg><title>icon</title></svg>"), None);
        assert_eq!(
            title("<meta charset=utf-8><title>unclosed").as_deref(),
            Some("unclosed")
        );
        assert_eq!(title(""), None);
    }
}
