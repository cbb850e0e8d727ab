//! The user guide (`docs/`) and the Markdown files beside the code, read as a reader would follow
//! them: every relative link and `#anchor` resolves, every chapter is in `SUMMARY.md` and
//! compiled as a doctest, every code block says its language, and no internal tracker number
//! appears. mdBook itself does not check links between chapters, so this is the check `.ci/run`
//! relies on (through `cargo test`). It reads files only: `cargo test --test docs` takes well
//! under a second once built.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

/// The repository's root (this crate's manifest directory).
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The guide's sources.
fn guide() -> PathBuf {
    root().join("docs/src")
}

/// Every Markdown file of the guide, sorted.
fn chapters() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("docs/src is readable") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(&guide(), &mut out);
    out.sort();
    out
}

/// The Markdown files outside the guide that readers of the repository follow.
fn repository_pages() -> Vec<PathBuf> {
    [
        "README.md",
        "CHANGELOG.md",
        "bench/README.md",
        "bench/HISTORY.md",
    ]
    .iter()
    .map(|p| root().join(p))
    .filter(|p| p.exists())
    .collect()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The text outside fenced code blocks, line by line (with line numbers from 1), inline code
/// spans blanked, and the info strings of the fences met.
struct Prose {
    lines: Vec<(usize, String)>,
    fences: Vec<(usize, String)>,
}

fn prose(text: &str) -> Prose {
    let mut lines = Vec::new();
    let mut fences = Vec::new();
    let mut open: Option<String> = None;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let fence = ["```", "~~~"].into_iter().find(|f| trimmed.starts_with(f));
        match (&open, fence) {
            (None, Some(f)) => {
                let run: String = trimmed
                    .chars()
                    .take_while(|&c| c == f.as_bytes()[0] as char)
                    .collect();
                fences.push((i + 1, trimmed[run.len()..].trim().to_string()));
                open = Some(run);
            }
            (Some(run), Some(_)) if trimmed.trim_end() == run.as_str() => open = None,
            (Some(_), _) => {}
            (None, None) => lines.push((i + 1, blank_code_spans(line))),
        }
    }
    Prose { lines, fences }
}

/// A line with its inline code spans (`` `like this` ``) replaced by spaces.
fn blank_code_spans(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut in_code = false;
    for c in line.chars() {
        if c == '`' {
            in_code = !in_code;
            out.push(' ');
        } else if in_code {
            out.push(' ');
        } else {
            out.push(c);
        }
    }
    out
}

/// The targets of the inline links and images of a line: `[text](target)` and `![alt](target)`
/// (a title after the target is dropped), and of reference definitions (`[name]: target`).
fn link_targets(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let bytes = line.as_bytes();
    let mut i = 0;
    while let Some(at) = line[i..].find("](") {
        let start = i + at + 2;
        let mut depth = 1;
        let mut end = start;
        while end < bytes.len() {
            match bytes[end] {
                b'(' => depth += 1,
                b')' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
            end += 1;
        }
        let target = line[start..end].trim();
        let target = target.split_whitespace().next().unwrap_or("");
        out.push(target.trim_matches(['<', '>']).to_string());
        i = end.min(line.len());
    }
    let trimmed = line.trim_start();
    if trimmed.starts_with('[')
        && let Some(close) = trimmed.find("]:")
        && !trimmed[1..close].contains(']')
        && let Some(target) = trimmed[close + 2..].split_whitespace().next()
    {
        out.push(target.to_string());
    }
    out
}

/// The anchors mdBook gives a page's headings: the heading's text, lower-cased, with white
/// space as `-` and everything but letters, digits, `-` and `_` dropped; a repeated one gets
/// `-1`, `-2`, ... An explicit `{#id}` after a heading is its anchor.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    for (_, line) in prose(text).lines {
        let Some(heading) = line.trim_start().strip_prefix('#') else {
            continue;
        };
        let heading = heading.trim_start_matches('#');
        if !heading.starts_with(' ') {
            continue;
        }
        let heading = heading.trim();
        if let Some(open) = heading.rfind("{#")
            && heading.ends_with('}')
        {
            out.insert(heading[open + 2..heading.len() - 1].to_string());
            continue;
        }
        // The text a reader sees: a link's text, without emphasis.
        let visible = visible_text(heading);
        let id: String = visible
            .chars()
            .filter_map(|c| {
                if c.is_alphanumeric() || c == '_' || c == '-' {
                    Some(c.to_lowercase().next().unwrap_or(c))
                } else if c.is_whitespace() {
                    Some('-')
                } else {
                    None
                }
            })
            .collect();
        let n = seen.entry(id.clone()).or_insert(0);
        out.insert(if *n == 0 {
            id.clone()
        } else {
            format!("{id}-{n}")
        });
        *n += 1;
    }
    out
}

/// A heading's text as rendered: `[text](url)` as `text`, emphasis marks dropped.
fn visible_text(heading: &str) -> String {
    let mut out = String::new();
    let mut rest = heading;
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match (after.find("]("), after.find(')')) {
            (Some(close), Some(end)) if close < end => {
                out.push_str(&after[..close]);
                rest = &after[end + 1..];
            }
            _ => {
                out.push('[');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out.replace(['*', '`'], "")
}

/// Headings read from the original text (code spans kept, since mdBook keeps their text).
fn heading_anchors(path: &Path) -> BTreeSet<String> {
    let text = read(path);
    // `prose` blanks code spans, but mdBook keeps their text in a heading's anchor: give
    // `anchors` the heading lines without their backticks.
    let unquoted: String = text
        .lines()
        .map(|l| {
            if l.trim_start().starts_with('#') {
                l.replace('`', "")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    anchors(&unquoted)
}

/// `path` with `.` and `..` resolved, without touching the file system.
fn clean(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Every broken relative link of `page`: a target that does not exist, leaves `within`, or
/// names an anchor its page does not have.
fn broken_links(page: &Path, within: &Path) -> Vec<String> {
    let text = read(page);
    let dir = page.parent().expect("a page has a directory");
    let mut broken = Vec::new();
    for (number, line) in prose(&text).lines {
        for target in link_targets(&line) {
            if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (file, anchor) = match target.split_once('#') {
                Some((file, anchor)) => (file, Some(anchor)),
                None => (target.as_str(), None),
            };
            let resolved = if file.is_empty() {
                page.to_path_buf()
            } else {
                clean(&dir.join(file))
            };
            let at = format!("{}:{number}: {target}", page.display());
            if !resolved.starts_with(within) {
                broken.push(format!("{at}: leads outside {}", within.display()));
            } else if !resolved.exists() {
                broken.push(format!("{at}: no such file"));
            } else if let Some(anchor) = anchor {
                if resolved.extension().is_none_or(|e| e != "md") {
                    broken.push(format!("{at}: an anchor into a file that is not Markdown"));
                } else if !heading_anchors(&resolved).contains(anchor) {
                    broken.push(format!("{at}: no heading has the anchor #{anchor}"));
                }
            }
        }
    }
    broken
}

#[test]
fn every_link_of_the_guide_resolves_inside_the_book() {
    let guide = guide();
    let broken: Vec<String> = chapters()
        .iter()
        .flat_map(|page| broken_links(page, &guide))
        .collect();
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn every_link_of_the_readme_and_the_bench_notes_resolves() {
    let root = root();
    let broken: Vec<String> = repository_pages()
        .iter()
        .flat_map(|page| broken_links(page, &root))
        .collect();
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn every_chapter_is_in_the_summary_and_every_entry_exists() {
    let guide = guide();
    let summary = guide.join("SUMMARY.md");
    let listed: BTreeSet<PathBuf> = prose(&read(&summary))
        .lines
        .iter()
        .flat_map(|(_, line)| link_targets(line))
        .map(|target| clean(&guide.join(target)))
        .collect();
    for entry in &listed {
        assert!(
            entry.exists(),
            "SUMMARY.md lists {}, which does not exist",
            entry.display()
        );
    }
    for chapter in chapters() {
        if chapter != summary {
            assert!(
                listed.contains(&chapter),
                "{} is not in SUMMARY.md, so the book leaves it out",
                chapter.display()
            );
        }
    }
}

#[test]
fn every_chapter_is_compiled_as_a_doctest() {
    // src/lib.rs includes each chapter in a `#[cfg(doctest)]` item, so `cargo test` compiles and
    // runs the guide's Rust code; a chapter missing there would let its code drift.
    let lib = read(&root().join("src/lib.rs"));
    for chapter in chapters() {
        let name = chapter
            .strip_prefix(root())
            .expect("a chapter is under the repository")
            .to_string_lossy()
            .replace('\\', "/");
        if name.ends_with("SUMMARY.md") {
            continue;
        }
        let include = format!("include_str!(\"../{name}\")");
        assert!(
            lib.contains(&include),
            "src/lib.rs does not include {name} as a doctest ({include})"
        );
    }
    assert!(
        lib.contains("include_str!(\"../README.md\")"),
        "the README's example is a doctest"
    );
}

#[test]
fn every_code_block_says_its_language() {
    // rustdoc compiles a fence without a language as Rust, and mdBook highlights it as nothing:
    // say `text`, `sh`, `json` or `rust`.
    let mut pages = chapters();
    pages.extend(repository_pages());
    let mut bare = Vec::new();
    for page in pages {
        for (number, info) in prose(&read(&page)).fences {
            if info.is_empty() {
                bare.push(format!("{}:{number}", page.display()));
            }
        }
    }
    assert!(
        bare.is_empty(),
        "code blocks without a language:\n{}",
        bare.join("\n")
    );
}

#[test]
fn no_page_names_an_internal_tracker_number() {
    // Readers have no access to the project's tracker: "issue 12" or "item 3" tells them nothing.
    let mut pages = chapters();
    pages.extend(repository_pages());
    let mut found = Vec::new();
    for page in pages {
        for (i, line) in read(&page).lines().enumerate() {
            let lower = line.to_lowercase();
            for word in ["issue ", "issue #", "item "] {
                let mut rest = lower.as_str();
                while let Some(at) = rest.find(word) {
                    let after = &rest[at + word.len()..];
                    if after.starts_with(|c: char| c.is_ascii_digit()) {
                        found.push(format!("{}:{}: {}", page.display(), i + 1, line.trim()));
                    }
                    rest = after;
                }
            }
        }
    }
    assert!(found.is_empty(), "internal numbers:\n{}", found.join("\n"));
}

#[test]
fn the_readme_fits_on_a_few_screens() {
    let lines = read(&root().join("README.md")).lines().count();
    assert!(
        lines <= 250,
        "README.md has {lines} lines; the guide in docs/ holds the rest"
    );
}

#[test]
fn the_link_checker_finds_what_it_should() {
    // The checker itself, on made-up pages: a test that cannot fail is no test.
    let dir = std::env::temp_dir().join(format!("wachet-docs-check-{}", std::process::id()));
    let src = dir.join("src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(
        src.join("a.md"),
        "# Alerts and `noise`\n\n## Masks hide noise, never news\n\n## Masks hide noise, never news\n\n\
         [ok](b.md#the-other-page) [ok](#masks-hide-noise-never-news-1) [ok](#alerts-and-noise)\n\
         [bad](b.md#nowhere) [bad](c.md) [bad](../outside.md) [ok](https://example.com/x.md)\n\
         `[not a link](d.md)`\n\n```text\n[not a link](e.md)\n```\n\n[ref]: f.md\n",
    )
    .unwrap();
    std::fs::write(src.join("b.md"), "# The other page\n").unwrap();
    std::fs::write(dir.join("outside.md"), "# Outside\n").unwrap();
    let broken = broken_links(&src.join("a.md"), &src);
    std::fs::remove_dir_all(&dir).unwrap();
    let targets: Vec<&str> = broken
        .iter()
        .map(|b| b.rsplit(": ").nth(1).unwrap_or(b))
        .collect();
    assert_eq!(
        targets,
        ["b.md#nowhere", "c.md", "../outside.md", "f.md"],
        "{broken:#?}"
    );
}
