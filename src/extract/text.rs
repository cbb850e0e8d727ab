//! Rendered text: what a reader sees of an element, as lines.
//!
//! Descendant text without `script`, `style`, `noscript` and `template`; block elements start new
//! lines; table cells of a row are separated by a tab; runs of white space collapse to one space
//! (kept as they are inside `pre`); lines are trimmed and empty lines dropped. The walk is
//! iterative, so the depth of the tree costs no stack.
//!
//! With link targets ([`rendered_text_with_links`]) a link's target follows its text, as
//! plain-text mail writes links (`Download <https://example.org/app-4.2.1.zip>`), so a link
//! whose text stays while its target changes is a changed value that shows both targets.

use ego_tree::NodeRef;
use ego_tree::iter::Edge;
use scraper::Node;

/// The rendered text of `node` and its descendants.
pub fn rendered_text(node: NodeRef<'_, Node>) -> String {
    render(node, false)
}

/// The rendered text of `node` and its descendants with each link's target after its text
/// (see the [module documentation](self)).
pub fn rendered_text_with_links(node: NodeRef<'_, Node>) -> String {
    render(node, true)
}

/// The target of a link element worth showing: an `a` or `area` with an `href` that leads
/// somewhere (not an empty one, a fragment of the same page or a script).
pub(crate) fn link_target(el: &scraper::node::Element) -> Option<&str> {
    if !matches!(el.name(), "a" | "area") {
        return None;
    }
    let href = el.attr("href")?.trim();
    let script = href
        .get(..11)
        .is_some_and(|s| s.eq_ignore_ascii_case("javascript:"));
    (!href.is_empty() && !href.starts_with('#') && !script).then_some(href)
}

fn render(node: NodeRef<'_, Node>, links: bool) -> String {
    let mut out = Lines::default();
    // Depth inside a skipped subtree, and inside `pre`.
    let mut skipping = 0usize;
    let mut pre = 0usize;
    for edge in node.traverse() {
        match edge {
            Edge::Open(n) => match n.value() {
                Node::Element(el) => {
                    let name = el.name();
                    if skipping > 0 || is_skipped(name) {
                        skipping += 1;
                        continue;
                    }
                    if name == "pre" {
                        pre += 1;
                    }
                    if is_cell(name) {
                        out.cell();
                    } else if is_block(name) {
                        out.break_line();
                    }
                }
                Node::Text(text) if skipping == 0 => {
                    if pre > 0 {
                        out.push_pre(text);
                    } else {
                        out.push_collapsed(text);
                    }
                }
                _ => {}
            },
            Edge::Close(n) => {
                if let Node::Element(el) = n.value() {
                    if skipping > 0 {
                        skipping -= 1;
                        continue;
                    }
                    let name = el.name();
                    if name == "pre" {
                        pre = pre.saturating_sub(1);
                    }
                    if name == "tr" {
                        out.end_row();
                    }
                    if links && let Some(href) = link_target(el) {
                        out.push_collapsed(&format!(" <{href}>"));
                    }
                    if is_block(name) || name == "br" {
                        out.break_line();
                    }
                }
            }
        }
    }
    out.finish()
}

fn is_skipped(name: &str) -> bool {
    matches!(name, "script" | "style" | "noscript" | "template")
}

fn is_cell(name: &str) -> bool {
    matches!(name, "td" | "th")
}

pub(crate) fn is_block(name: &str) -> bool {
    matches!(
        name,
        "p" | "div"
            | "li"
            | "tr"
            | "h1"
            | "h2"
            | "h3"
            | "h4"
            | "h5"
            | "h6"
            | "hr"
            | "table"
            | "ul"
            | "ol"
            | "dl"
            | "dt"
            | "dd"
            | "section"
            | "article"
            | "header"
            | "footer"
            | "nav"
            | "main"
            | "aside"
            | "blockquote"
            | "pre"
            | "form"
            | "fieldset"
            | "figure"
            | "figcaption"
            | "address"
            | "body"
            | "html"
    )
}

/// The end of the run from `start` (a non-space byte) of words joined by single spaces: the
/// next white space that is not a lone `' '` between words, or `end`. The text is
/// `page[..end]`; the bytes of `page` past `end` are only read, so that a short run near the
/// markup after it is still looked at sixteen bytes at a time.
fn plain_run_end(page: &[u8], start: usize, end: usize) -> usize {
    let mut i = start;
    // Sixteen bytes at a time while they hold no byte below ' ' and no two spaces in a row
    // (also across the boundary), and do not go past `end`; in the first block that does, the
    // bytes before the first such byte are words and lone spaces, and the byte loop goes on
    // from it (a byte below ' ' may be no white space at all, and a space just before the
    // stop is stepped back onto below).
    let mut last_was_space = false;
    while i < end
        && let Some(block) = page
            .get(i..i + 16)
            .and_then(|b| <&[u8; 16]>::try_from(b).ok())
    {
        let (white, spaces) = white_masks(block);
        let past_end = if end - i >= 16 {
            0
        } else {
            u16::MAX << (end - i)
        };
        let stops = (white & !spaces)
            | (spaces & (spaces >> 1))
            | (u16::from(last_was_space) & spaces)
            | past_end;
        if stops != 0 {
            i += stops.trailing_zeros() as usize;
            break;
        }
        last_was_space = spaces & 0x8000 != 0;
        i += 16;
    }
    // A run never ends in a space: step back onto it and let the byte loop decide.
    if i > start && page[i - 1] == b' ' {
        i -= 1;
    }
    loop {
        while i < end && !is_space_byte(page[i]) {
            i += 1;
        }
        if i + 1 < end && page[i] == b' ' && !is_space_byte(page[i + 1]) {
            i += 1;
            continue;
        }
        return i;
    }
}

/// Bit k of the first mask is set when byte k of `block` is `' '` or below, of the second
/// when it is `' '`: one vector compare each and a byte mask on x86_64.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn white_masks(block: &[u8; 16]) -> (u16, u16) {
    use std::arch::x86_64::{
        _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_set1_epi8,
    };
    // SAFETY: SSE2 is part of every x86_64 target, and the load reads the 16 bytes of `block`.
    let (white, spaces) = unsafe {
        let v = _mm_loadu_si128(block.as_ptr().cast());
        let space = _mm_set1_epi8(b' ' as i8);
        // Unsigned `b <= ' '`: the smaller of the two is `b`.
        let white = _mm_cmpeq_epi8(_mm_min_epu8(v, space), v);
        (
            _mm_movemask_epi8(white),
            _mm_movemask_epi8(_mm_cmpeq_epi8(v, space)),
        )
    };
    // A byte mask of 16 lanes fills the low 16 bits.
    (white as u16, spaces as u16)
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn white_masks(block: &[u8; 16]) -> (u16, u16) {
    white_masks_by_byte(block)
}

/// [`white_masks`] a byte at a time: elsewhere than x86_64, and the vector form's reference.
#[cfg(any(test, not(target_arch = "x86_64")))]
fn white_masks_by_byte(block: &[u8; 16]) -> (u16, u16) {
    let (mut white, mut spaces) = (0u16, 0u16);
    for (k, &b) in block.iter().enumerate() {
        white |= u16::from(b <= b' ') << k;
        spaces |= u16::from(b == b' ') << k;
    }
    (white, spaces)
}

/// HTML's ASCII white space.
pub(crate) fn is_space_byte(b: u8) -> bool {
    // One compare rules out nearly every byte of text.
    b <= b' ' && matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'\x0c')
}

/// Builds the output line by line; a line is only kept when it has content. The current line
/// is written straight into the output (a separate line buffer cost a second copy of every
/// page's text); a line that ends blank is cut off again.
#[derive(Default)]
pub(crate) struct Lines {
    out: String,
    /// Where the current line starts in `out`: after the previous line's `'\n'`, which is
    /// written as soon as that line ends with content.
    line_start: usize,
    /// White space seen since the last character of the line.
    space: bool,
    /// A cell ended in this row, so the next cell needs a tab before it.
    after_cell: bool,
}

impl Lines {
    /// Room for about `bytes` of text, so a page's text is not copied as it grows.
    pub(crate) fn with_capacity(bytes: usize) -> Lines {
        Lines {
            out: String::with_capacity(bytes),
            ..Lines::default()
        }
    }

    fn line_is_empty(&self) -> bool {
        self.out.len() == self.line_start
    }

    pub(crate) fn push_collapsed(&mut self, text: &str) {
        self.push_collapsed_within(text, 0, text.len());
    }

    /// [`Lines::push_collapsed`] of `page[start..end]` (`start` and `end` char boundaries of
    /// `page`): the bytes of `page` after `end` are read (never written out), so runs that end
    /// near them are still looked at in blocks.
    pub(crate) fn push_collapsed_within(&mut self, page: &str, start: usize, end: usize) {
        debug_assert!(
            start <= end && page.is_char_boundary(start) && page.is_char_boundary(end),
            "{start}..{end} of {} bytes",
            page.len()
        );
        // Bytes, not chars: HTML white space is ASCII, so every word boundary is a char
        // boundary. Words joined by single spaces need no change and are copied as one run
        // (word by word, this was a sixth of a crawl's CPU).
        let bytes = page.as_bytes();
        let mut i = start;
        while i < end {
            if is_space_byte(bytes[i]) {
                self.space = true;
                i += 1;
                continue;
            }
            if self.space && !self.line_is_empty() && !self.out.ends_with('\t') {
                self.out.push(' ');
            }
            self.space = false;
            let run_start = i;
            i = plain_run_end(bytes, i, end);
            self.out.push_str(&page[run_start..i]);
        }
    }

    pub(crate) fn push_pre(&mut self, text: &str) {
        if self.space && !self.line_is_empty() {
            self.out.push(' ');
        }
        self.space = false;
        let mut first = true;
        for piece in text.split('\n') {
            if !first {
                self.break_line();
            }
            first = false;
            self.out.push_str(piece.strip_suffix('\r').unwrap_or(piece));
        }
    }

    fn cell(&mut self) {
        if self.after_cell {
            self.out.push('\t');
        }
        self.space = false;
        self.after_cell = true;
    }

    fn end_row(&mut self) {
        self.after_cell = false;
    }

    pub(crate) fn break_line(&mut self) {
        self.space = false;
        let line = &self.out.as_bytes()[self.line_start..];
        // A row of empty cells leaves only tabs: nothing a reader sees.
        if line.iter().all(|&b| b == b' ' || b == b'\t') {
            self.out.truncate(self.line_start);
            return;
        }
        let trimmed = line.len() - line.iter().rev().take_while(|&&b| b == b' ').count();
        self.out.truncate(self.line_start + trimmed);
        self.out.push('\n');
        self.line_start = self.out.len();
    }

    pub(crate) fn finish(mut self) -> String {
        self.break_line();
        // The last line's separator, written before it was known to be the last.
        self.out.pop();
        // Sized for the whole page: a page that is mostly markup keeps only its text's worth
        // (shrinking in place costs no copy).
        if self.out.capacity() - self.out.len() > self.out.len() / 4 + 1024 {
            self.out.shrink_to_fit();
        }
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::parse::parse_document;
    use crate::test_rng::Xorshift;

    #[test]
    fn collapsing_white_space_agrees_with_its_plain_form() {
        // Every byte the sixteen-byte masks tell apart, at every offset of a block: white
        // space, ' ' and its neighbours ('!' is one bit from it), control bytes that are no
        // white space, UTF-8.
        let parts = [
            " ",
            "  ",
            "\n",
            "\t",
            "\r\n",
            "\x0c",
            "\x01",
            "\x1f",
            "!",
            "a",
            "word",
            "é",
            "\u{a0}",
            "long words in a row ",
        ];
        let mut rng = Xorshift(0x2545_f491_4f6c_dd1d);
        let mut texts = std::collections::HashSet::new();
        for _ in 0..50_000 {
            // Up to two dozen parts: runs of several blocks, ending anywhere in one.
            let mut text = String::from("x");
            for _ in 0..rng.next() % 24 {
                text.push_str(rng.pick(&parts));
            }
            texts.insert(text.clone());
            let plain = text
                .split(|c: char| c.is_ascii() && is_space_byte(c as u8))
                .filter(|w| !w.is_empty())
                .collect::<Vec<_>>()
                .join(" ");
            let mut lines = Lines::with_capacity(0);
            lines.push_collapsed(&text);
            assert_eq!(lines.finish(), plain, "{text:?}");
            // Within a page: whatever comes before and after the text changes nothing.
            let (mut before, mut after) = (String::new(), String::new());
            for _ in 0..rng.next() % 3 {
                before.push_str(rng.pick(&parts));
            }
            for _ in 0..rng.next() % 4 {
                after.push_str(rng.pick(&parts));
            }
            let page = format!("{before}{text}{after}");
            let mut lines = Lines::with_capacity(0);
            lines.push_collapsed_within(&page, before.len(), before.len() + text.len());
            assert_eq!(lines.finish(), plain, "{before:?} {text:?} {after:?}");
        }
        assert!(texts.len() > 40_000, "only {} texts", texts.len());
    }

    #[test]
    fn runs_end_where_they_should_at_the_edges_of_a_block() {
        let collapse = |page: &str, start: usize, end: usize| {
            let mut lines = Lines::with_capacity(0);
            lines.push_collapsed_within(page, start, end);
            lines.finish()
        };
        let a15 = "a".repeat(15);
        // Two spaces across a block's boundary, and one space followed by white space or by a
        // byte below ' ' that is none, in a block's last lane.
        assert_eq!(
            collapse(&format!("{a15}  b{a15}"), 0, 33),
            format!("{a15} b{a15}")
        );
        assert_eq!(
            collapse(&format!("{a15} \nb{a15}"), 0, 33),
            format!("{a15} b{a15}")
        );
        assert_eq!(
            collapse(&format!("{a15} \x01b{a15}"), 0, 33),
            format!("{a15} \x01b{a15}")
        );
        // Sixteen bytes ending in a space, inside a longer page: the space is not the run's.
        let page = format!("{a15} word and more");
        assert_eq!(collapse(&page, 0, 16), a15);
        // A run that ends one byte into a block, and text at the very end of a page.
        assert_eq!(
            collapse(&format!("{a15}b<p>{a15}"), 0, 16),
            format!("{a15}b")
        );
        assert_eq!(collapse(&format!("<p>{a15} x"), 3, 20), format!("{a15} x"));
    }

    #[test]
    fn the_vector_masks_agree_with_the_byte_loop() {
        // Every byte value in every lane, among letters and among spaces.
        for lane in 0..16 {
            for byte in 0..=u8::MAX {
                for background in [b'a', b' '] {
                    let mut block = [background; 16];
                    block[lane] = byte;
                    assert_eq!(
                        white_masks(&block),
                        white_masks_by_byte(&block),
                        "{byte:#x} in lane {lane} among {background:#x}"
                    );
                }
            }
        }
    }

    fn body_text(html: &str) -> String {
        let doc = parse_document(html).unwrap();
        rendered_text(doc.tree.root())
    }

    #[test]
    fn blocks_start_lines_and_inline_flows() {
        assert_eq!(
            body_text("<p>Hello <b>bold</b>\n  world</p><div>next</div>x<br>y"),
            "Hello bold world\nnext\nx\ny"
        );
    }

    #[test]
    fn scripts_styles_and_templates_are_not_text() {
        assert_eq!(
            body_text(
                "<style>p{}</style><p>a<script>var x</script>b</p><noscript>n</noscript><template>t</template>"
            ),
            "ab"
        );
    }

    #[test]
    fn table_cells_are_tab_separated() {
        assert_eq!(
            body_text(
                "<table><tr><th>Name</th><th>Price</th></tr><tr><td>Tea</td><td> 3 </td></tr></table>"
            ),
            "Name\tPrice\nTea\t3"
        );
    }

    #[test]
    fn pre_keeps_white_space() {
        assert_eq!(
            body_text("<p>a</p><pre>  x  y\n    z</pre>"),
            "a\n  x  y\n    z"
        );
    }

    #[test]
    fn empty_lines_are_dropped() {
        assert_eq!(
            body_text("<div> </div><p></p><ul><li>one</li><li> </li></ul>"),
            "one"
        );
    }
}
