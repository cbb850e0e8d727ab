//! `parse-cost DIR [PAGES]`: CPU cost per page of the HTML work a crawl does, measured on
//! the pages of a generated site, to see where a crawler's time per page goes.

use html5ever::tendril::StrTendril;
use html5ever::tokenizer::{
    BufferQueue, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
};
use std::cell::Cell;
use std::path::Path;
use std::time::Instant;

/// Counts `<a href>` start tags and text bytes: the least a streaming link and text pass does.
#[derive(Default)]
struct CountingSink {
    links: Cell<usize>,
    text: Cell<usize>,
}

impl TokenSink for CountingSink {
    type Handle = ();

    fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<()> {
        match token {
            Token::TagToken(tag)
                if tag.kind == TagKind::StartTag
                    && &*tag.name == "a"
                    && tag.attrs.iter().any(|a| &*a.name.local == "href") =>
            {
                self.links.set(self.links.get() + 1);
            }
            Token::CharacterTokens(text) => self.text.set(self.text.get() + text.len()),
            _ => {}
        }
        TokenSinkResult::Continue
    }
}

fn tokenize_only(html: &str) -> usize {
    let tokenizer = Tokenizer::new(CountingSink::default(), TokenizerOpts::default());
    let input = BufferQueue::default();
    input.push_back(StrTendril::from_slice(html));
    let _ = tokenizer.feed(&input);
    tokenizer.end();
    tokenizer.sink.links.get() + tokenizer.sink.text.get()
}

fn per_page<T, F: FnMut(&T) -> usize>(label: &str, pages: &[T], mut f: F) {
    let rounds = 3;
    let mut sink = 0usize;
    let began = Instant::now();
    for _ in 0..rounds {
        for page in pages {
            sink = sink.wrapping_add(f(page));
        }
    }
    let micros = began.elapsed().as_secs_f64() * 1e6 / (rounds * pages.len().max(1)) as f64;
    println!("{label:<58} {micros:>8.1} µs/page  (check {sink})");
}

/// Runs the measurements on up to `limit` pages below `dir`.
pub fn run(dir: &Path, limit: usize) -> Result<(), String> {
    // Each page with the path the crawl reaches it under, to resolve its links against.
    let mut pages = Vec::new();
    let mut paths = Vec::new();
    if let Ok(index) = std::fs::read_to_string(dir.join("index.html")) {
        pages.push(index);
        paths.push("index.html".to_string());
    }
    for i in 1..limit {
        let path = format!("p/{i}.html");
        match std::fs::read_to_string(dir.join(&path)) {
            Ok(page) => {
                pages.push(page);
                paths.push(path);
            }
            Err(_) => break,
        }
    }
    if pages.is_empty() {
        return Err(format!("no pages below {}", dir.display()));
    }
    let avg = pages.iter().map(String::len).sum::<usize>() / pages.len();
    println!("{} pages, {avg} bytes each on average", pages.len());
    per_page(
        "html5ever tokenizer only (count <a href> + text)",
        &pages,
        |p| tokenize_only(p),
    );
    per_page(
        "wachet onepass::scan (body text + links, no tree)",
        &pages,
        |p| wachet::extract::onepass::scan(p, true).map_or(0, |s| s.text.len() + s.links.len()),
    );
    // Every link of every page through the URL parser, against the page's own URL: what a
    // crawl did before it looked links up among those it has (it now parses only new links and
    // those it cannot join as text).
    let scanned: Vec<(url::Url, Vec<String>)> = pages
        .iter()
        .zip(&paths)
        .filter_map(|(page, path)| {
            let links = wachet::extract::onepass::scan(page, true)?.links;
            let url = url::Url::parse(&format!("http://127.0.0.1:18082/{path}")).ok()?;
            Some((url, links.iter().map(|l| l.to_string()).collect()))
        })
        .collect();
    let links_per_page =
        scanned.iter().map(|(_, l)| l.len()).sum::<usize>() as f64 / scanned.len().max(1) as f64;
    per_page(
        &format!("wachet link resolution (Url::join + normalize, {links_per_page:.1} links)"),
        &scanned,
        |(url, links)| {
            links
                .iter()
                .filter_map(|href| wachet::crawl::normalize::resolve(url, href, false))
                .count()
        },
    );
    let headers = wachet::classify::HeaderMap::new();
    per_page(
        "wachet classify (wall or empty page? every page fetched)",
        &pages,
        |p| {
            let response = wachet::classify::Response::new(200, &headers, Some("text/html"), p);
            usize::from(wachet::classify::classify(&response) == wachet::classify::Verdict::Page)
        },
    );
    per_page(
        "wachet parse_document (html5ever + scraper tree)",
        &pages,
        |p| wachet::extract::parse::parse_document(p).map_or(0, |d| d.tree.nodes().count()),
    );
    per_page(
        "wachet parse_document + rendered_text(<body>)",
        &pages,
        |p| {
            wachet::extract::parse::parse_document(p).map_or(0, |d| {
                let root = d.tree.root();
                let body = root
                    .descendants()
                    .find(|n| n.value().as_element().is_some_and(|e| e.name() == "body"))
                    .unwrap_or(root);
                wachet::extract::text::rendered_text(body).len()
            })
        },
    );
    Ok(())
}
