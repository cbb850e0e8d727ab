//! `wachet fixtures record` and `wachet fixtures run` as a user runs them: the real binary
//! recording pages from a real server on loopback into a suite folder, then running it green,
//! red with the diff shown, updated, green again; JUnit XML parsed back; and every kind of bad
//! input refused with the file named and nothing half-written.

use super::{stderr, stdout, wachet};
use std::path::{Path, PathBuf};
use wachet::testing::{FixtureServer, Reply};

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Every entry of `dir`, sorted (hidden ones too: a staging folder left behind shows here).
fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

fn read(p: impl AsRef<Path>) -> String {
    std::fs::read_to_string(p.as_ref()).unwrap_or_else(|e| panic!("{}: {e}", p.as_ref().display()))
}

fn json(p: impl AsRef<Path>) -> serde_json::Value {
    serde_json::from_str(&read(p)).unwrap()
}

/// A shop whose price page is windows-1252, declared only by the Content-Type header.
async fn shop() -> FixtureServer {
    FixtureServer::builder()
        .reply(
            "/shop/tea.html",
            Reply::new(200)
                .header("content-type", "text/html; charset=windows-1252")
                .body(
                    b"<h1>Th\xe9 vert</h1><div id=ad>Sale!</div><p class=price>Price: 3.50 \x80</p>"
                        .as_slice(),
                ),
        )
        .reply(
            "/gone.html",
            Reply::html("<h1>Gone</h1><p>This tea was sold out</p>").status(404),
        )
        .start()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn record_then_run_green_red_with_a_diff_update_and_green_again() {
    let server = shop().await;
    let tmp = tempfile::tempdir().unwrap();
    let suite = tmp.path().join("suite");
    let case = suite.join("tea");
    let url = server.url("/shop/tea.html");

    let out = wachet(&[
        "fixtures",
        "record",
        &url,
        path(&case),
        "--exclude-xpath",
        "//div[@id='ad']",
        "--regex",
        r"(\d+\.\d+ €)",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("expected value: 3.50 €"),
        "{}",
        stdout(&out)
    );
    assert_eq!(server.hits("/shop/tea.html"), 1);
    assert_eq!(entries(&suite), ["tea"]);
    assert_eq!(entries(&case), ["case.json", "expected.json", "page.html"]);
    // The page as decoded, stored as UTF-8 and served with that charset.
    assert!(read(case.join("page.html")).contains("Thé vert"));
    let spec = json(case.join("case.json"));
    assert_eq!(spec["monitor"]["url"], url.as_str());
    assert_eq!(spec["monitor"]["excludeXPath"], "//div[@id='ad']");
    assert_eq!(spec["monitor"]["regex"], r"(\d+\.\d+ €)");
    assert_eq!(spec["monitor"].get("dynamicContent"), None);
    assert_eq!(
        spec["response"],
        serde_json::json!({"status": 200, "headers": {"content-type": "text/html; charset=utf-8"}})
    );
    assert_eq!(
        read(case.join("expected.json")),
        "{\n  \"raw\": \"3.50 €\",\n  \"error\": null,\n  \"status\": 200\n}\n"
    );

    // Green: the case replays from its own fixture server, not from the shop.
    let out = wachet(&["fixtures", "run", path(&suite)]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).starts_with("ok      tea ("),
        "{}",
        stdout(&out)
    );
    assert!(stdout(&out).contains("1 cases: 1 passed, 0 updated, 0 failed, 0 errors"));
    assert_eq!(server.hits("/shop/tea.html"), 1);

    // Red: the expectation no longer matches; the diff says what and where.
    let expected = case.join("expected.json");
    std::fs::write(&expected, read(&expected).replace("3.50 €", "2.90 €")).unwrap();
    let out = wachet(&["fixtures", "run", path(&suite)]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let text = stdout(&out);
    assert!(text.starts_with("FAILED  tea ("), "{text}");
    assert!(
        text.contains("    --- expected\n    +++ actual\n"),
        "{text}"
    );
    assert!(
        text.contains("    -raw: \"2.90 €\"\n    +raw: \"3.50 €\"\n"),
        "{text}"
    );
    assert!(text.contains("1 cases: 0 passed, 0 updated, 1 failed, 0 errors"));

    // --update writes the outcome back, and shows what it changed.
    let out = wachet(&["fixtures", "run", path(&suite), "--update"]);
    assert!(out.status.success(), "{}", stdout(&out));
    assert!(
        stdout(&out).starts_with("updated tea ("),
        "{}",
        stdout(&out)
    );
    assert!(stdout(&out).contains("+raw: \"3.50 €\""));
    assert!(read(&expected).contains("\"raw\": \"3.50 €\""));
    assert_eq!(entries(&case), ["case.json", "expected.json", "page.html"]);

    let out = wachet(&["fixtures", "run", path(&suite)]);
    assert!(out.status.success(), "{}", stdout(&out));
    assert!(stdout(&out).starts_with("ok      tea ("));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn junit_xml_lists_every_case_with_its_failure_or_error() {
    let server = shop().await;
    let tmp = tempfile::tempdir().unwrap();
    let suite = tmp.path().join("shop & <co>");
    for (name, regex) in [("a-price", r"(\d+\.\d+)"), ("b-title", r"(Th\S+)")] {
        let out = wachet(&[
            "fixtures",
            "record",
            &server.url("/shop/tea.html"),
            path(&suite.join(name)),
            "--regex",
            regex,
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    // A failing case whose diff holds characters XML must escape, and a broken case.
    let failing = suite.join("c-\"quoted\"");
    std::fs::create_dir(&failing).unwrap();
    std::fs::write(failing.join("page.html"), "<p>a < b && c > \"d\"</p>\u{1}").unwrap();
    std::fs::write(failing.join("case.json"), "{}").unwrap();
    std::fs::write(
        failing.join("expected.json"),
        r#"{"raw": "]]> <not-a-tag/>", "error": null, "status": 200}"#,
    )
    .unwrap();
    std::fs::create_dir(suite.join("d-broken")).unwrap();

    let report = tmp.path().join("junit.xml");
    let out = wachet(&["fixtures", "run", path(&suite), "--junit", path(&report)]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("2 passed, 0 updated, 1 failed, 1 errors"),
        "{}",
        stdout(&out)
    );

    // Parse it back: every case, with its outcome, and the escaped text intact.
    let xml = read(&report);
    let mut reader = quick_xml::Reader::from_str(&xml);
    let mut suites = Vec::new();
    let mut cases: Vec<(String, Option<String>, String)> = Vec::new();
    let mut in_outcome = false;
    loop {
        match reader.read_event().unwrap() {
            quick_xml::events::Event::Eof => break,
            quick_xml::events::Event::Start(e) | quick_xml::events::Event::Empty(e) => {
                let attr = |name: &str| {
                    e.try_get_attribute(name).unwrap().map(|a| {
                        a.normalized_value(quick_xml::XmlVersion::Implicit1_0)
                            .unwrap()
                            .into_owned()
                    })
                };
                match e.name().as_ref() {
                    b"testsuite" => suites.push((
                        attr("name").unwrap(),
                        attr("tests").unwrap(),
                        attr("failures").unwrap(),
                        attr("errors").unwrap(),
                    )),
                    b"testcase" => {
                        cases.push((attr("name").unwrap(), None, String::new()));
                    }
                    kind @ (b"failure" | b"error") => {
                        let last = cases.last_mut().unwrap();
                        last.1 = Some(String::from_utf8_lossy(kind).into_owned());
                        last.2 = attr("message").unwrap();
                        in_outcome = true;
                    }
                    _ => {}
                }
            }
            quick_xml::events::Event::Text(t) if in_outcome => {
                let text = t.decode().unwrap();
                let text = quick_xml::escape::unescape(&text).unwrap();
                cases.last_mut().unwrap().2.push_str(&text);
            }
            quick_xml::events::Event::GeneralRef(r) if in_outcome => {
                let name = r.decode().unwrap();
                let reference = format!("&{name};");
                let text = quick_xml::escape::unescape(&reference).unwrap();
                cases.last_mut().unwrap().2.push_str(&text);
            }
            quick_xml::events::Event::End(e)
                if matches!(e.name().as_ref(), b"failure" | b"error") =>
            {
                in_outcome = false;
            }
            _ => {}
        }
    }
    assert_eq!(
        suites,
        [(
            "shop & <co>".to_string(),
            "4".to_string(),
            "1".to_string(),
            "1".to_string()
        )]
    );
    let names: Vec<&str> = cases.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(names, ["a-price", "b-title", "c-\"quoted\"", "d-broken"]);
    assert_eq!(cases[0].1, None);
    assert_eq!(cases[1].1, None);
    assert_eq!(cases[2].1.as_deref(), Some("failure"));
    let diff = &cases[2].2;
    assert!(diff.contains("-raw: \"]]> <not-a-tag/>\""), "{diff}");
    assert!(diff.contains(r#"a < b && c > \"d\""#), "{diff}");
    assert_eq!(cases[3].1.as_deref(), Some("error"));
    assert!(
        cases[3].2.contains(&format!(
            "{} is missing",
            suite.join("d-broken/case.json").display()
        )),
        "{}",
        cases[3].2
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_names_the_file_at_fault_for_each_broken_case() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = tmp.path();
    let case = |name: &str, files: &[(&str, &str)]| {
        let dir = suite.join(name);
        std::fs::create_dir(&dir).unwrap();
        for (file, text) in files {
            std::fs::write(dir.join(file), text).unwrap();
        }
        dir
    };
    let page = ("page.html", "<p>ok</p>");
    let good = (
        "expected.json",
        r#"{"raw": "ok", "error": null, "status": 200}"#,
    );
    case("fine", &[page, ("case.json", "{}"), good]);
    let no_case = case("no-case-json", &[page, good]);
    let bad_case = case(
        "bad-case-json",
        &[page, ("case.json", "{\"monitor\": {\"regex\": [1]}}"), good],
    );
    let no_expected = case("no-expected-json", &[page, ("case.json", "{}")]);
    let bad_expected = case(
        "bad-expected-json",
        &[page, ("case.json", "{}"), ("expected.json", "{\"raw\": 1}")],
    );
    let no_page = case(
        "no-page",
        &[("case.json", "{\"page\": \"index.html\"}"), good],
    );

    let out = wachet(&["fixtures", "run", path(suite)]);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    let line = |name: &str| {
        text.lines()
            .find(|l| l.split_whitespace().nth(1).map(|n| n.trim_end_matches(':')) == Some(name))
            .unwrap_or_else(|| panic!("no line for {name} in {text}"))
            .to_string()
    };
    assert!(line("fine").starts_with("ok      fine"));
    assert_eq!(
        line("no-case-json"),
        format!(
            "ERROR   no-case-json: {} is missing",
            no_case.join("case.json").display()
        )
    );
    assert!(
        line("bad-case-json").starts_with(&format!(
            "ERROR   bad-case-json: {}: monitor.regex: invalid type",
            bad_case.join("case.json").display()
        )),
        "{text}"
    );
    assert_eq!(
        line("no-expected-json"),
        format!(
            "ERROR   no-expected-json: {} is missing",
            no_expected.join("expected.json").display()
        )
    );
    assert!(
        line("bad-expected-json").starts_with(&format!(
            "ERROR   bad-expected-json: {}: raw: invalid type",
            bad_expected.join("expected.json").display()
        )),
        "{text}"
    );
    assert_eq!(
        line("no-page"),
        format!(
            "ERROR   no-page: {} is missing",
            no_page.join("index.html").display()
        )
    );
    assert!(text.contains("6 cases: 1 passed, 0 updated, 0 failed, 5 errors"));

    // --update writes what is missing or unreadable, but leaves broken cases alone.
    let out = wachet(&["fixtures", "run", path(suite), "--update"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains("written no-expected-json"),
        "{}",
        stdout(&out)
    );
    assert!(stdout(&out).contains("written bad-expected-json"));
    assert!(read(bad_expected.join("expected.json")).contains("\"raw\": \"ok\""));
    assert!(!no_case.join("expected.json.tmp").exists());
    assert_eq!(entries(&no_page), ["case.json", "expected.json"]);

    // A suite folder that is not there, or holds no case.
    let missing = suite.join("nothing");
    let out = wachet(&["fixtures", "run", path(&missing)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains(&format!(
            "cannot read the suite directory {}",
            missing.display()
        )),
        "{}",
        stderr(&out)
    );
    let empty = suite.join("_empty");
    std::fs::create_dir(&empty).unwrap();
    let out = wachet(&["fixtures", "run", path(&empty)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("holds no case folders"),
        "{}",
        stderr(&out)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn record_of_a_failing_page_needs_allow_error_and_then_expects_the_error() {
    let server = shop().await;
    let tmp = tempfile::tempdir().unwrap();
    let suite = tmp.path().join("suite");
    let case = suite.join("gone");
    let url = server.url("/gone.html");

    let out = wachet(&["fixtures", "record", &url, path(&case)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("the check failed: HTTP 404 Not Found"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("nothing recorded"));
    assert_eq!(entries(&suite), Vec::<String>::new());

    let out = wachet(&["fixtures", "record", &url, path(&case), "--allow-error"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("expected error: HTTP 404 Not Found"));
    assert_eq!(json(case.join("case.json"))["response"]["status"], 404);
    assert_eq!(
        json(case.join("expected.json")),
        serde_json::json!({"raw": null, "error": "HTTP 404 Not Found", "errorKind": "httpStatus",
                           "status": 404})
    );
    let out = wachet(&["fixtures", "run", path(&suite)]);
    assert!(out.status.success(), "{}", stdout(&out));

    // A failure before any response cannot be replayed, so it is never recorded.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let down = suite.join("down");
    let out = wachet(&[
        "fixtures",
        "record",
        &format!("http://127.0.0.1:{closed}/"),
        path(&down),
        "--allow-error",
        "--timeout",
        "5",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("cannot replay"), "{}", stderr(&out));
    assert_eq!(entries(&suite), ["gone"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn record_refuses_an_existing_case_unless_forced_and_invalid_monitors() {
    let server = shop().await;
    let tmp = tempfile::tempdir().unwrap();
    let suite = tmp.path().join("suite");
    let case = suite.join("tea");
    let url = server.url("/shop/tea.html");
    let out = wachet(&["fixtures", "record", &url, path(&case), "--xpath", "//h1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let before = read(case.join("expected.json"));

    let out = wachet(&["fixtures", "record", &url, path(&case), "--xpath", "//p"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains(&format!(
            "{} already exists; --force replaces it",
            case.display()
        )),
        "{}",
        stderr(&out)
    );
    assert_eq!(read(case.join("expected.json")), before);

    let out = wachet(&[
        "fixtures",
        "record",
        &url,
        path(&case),
        "--xpath",
        "//p",
        "--force",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(read(case.join("expected.json")).contains("Price: 3.50 €"));
    assert_eq!(entries(&suite), ["tea"], "no staging or old folder left");

    // An invalid monitor is refused before anything is fetched or written.
    let hits = server.hits("/shop/tea.html");
    let out = wachet(&[
        "fixtures",
        "record",
        &url,
        path(&suite.join("broken")),
        "--xpath",
        "//p[",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("xPath"), "{}", stderr(&out));
    assert_eq!(server.hits("/shop/tea.html"), hits);
    // A case name the suite would skip.
    let out = wachet(&["fixtures", "record", &url, path(&suite.join("_hidden"))]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(entries(&suite), ["tea"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn record_dynamic_saves_the_rendered_dom_and_replays_it_without_a_browser() {
    if !wachet::testing::chromium_or_skip() {
        return;
    }
    let server = FixtureServer::builder()
        .page(
            "/app.html",
            r#"<!doctype html><html><body><p id=static>static</p><script>
const p = document.createElement('p'); p.id = 'late'; p.textContent = 'made by script';
document.body.appendChild(p);
</script></body></html>"#,
        )
        .start()
        .await
        .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let suite: PathBuf = tmp.path().join("suite");
    let case = suite.join("app");
    let out = wachet(&[
        "fixtures",
        "record",
        &server.url("/app.html"),
        path(&case),
        "--dynamic",
        "--xpath",
        "//p[@id='late']",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("expected value: made by script"));
    let page = read(case.join("page.html"));
    assert!(
        page.contains(r#"<p id="late">made by script</p>"#),
        "the rendered DOM: {page}"
    );
    let spec = json(case.join("case.json"));
    assert_eq!(spec["monitor"].get("dynamicContent"), None);
    assert!(
        spec["description"]
            .as_str()
            .unwrap()
            .contains("rendered by Chromium")
    );
    // The replay is a static check of the rendered page: the script's element is there once,
    // although the saved page still holds the script.
    let out = wachet(&["fixtures", "run", path(&suite)]);
    assert!(out.status.success(), "{}", stdout(&out));
    assert_eq!(server.hits("/app.html"), 1);
}

/// Writes `text` to `dir/name`, creating `dir`.
fn put(dir: &Path, name: &str, text: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join(name), text).unwrap();
}

const ANY_EXPECTED: &str = r#"{"raw": "x", "error": null, "status": 200}"#;

/// A suite from a stranger (a pull request run in CI) reads nothing outside its directory:
/// `site` with `..` or an absolute path, a page file, expected file or case folder that is a
/// symbolic link leading out, and links that loop are each a clear error of their case; the
/// secret beside the suite is never read, and the run ends (no hang on a loop).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stranger_suite_reads_nothing_outside_its_directory() {
    use std::os::unix::fs::symlink;
    let tmp = tempfile::tempdir().unwrap();
    let outside = tmp.path().join("outside");
    put(&outside, "page.html", "<p>SECRET-OUTSIDE</p>");
    put(&outside, "index.html", "<p>SECRET-OUTSIDE</p>");
    put(
        &outside,
        "expected.json",
        r#"{"raw": "SECRET-OUTSIDE", "error": null, "status": 200}"#,
    );
    let suite = tmp.path().join("suite");
    let case = |name: &str, case_json: &str| {
        let dir = suite.join(name);
        put(&dir, "case.json", case_json);
        put(&dir, "expected.json", ANY_EXPECTED);
        dir
    };
    case(
        "dotdot",
        r#"{"site": "../../outside", "page": "index.html"}"#,
    );
    case(
        "absolute",
        &format!(
            r#"{{"site": "{}", "page": "index.html"}}"#,
            outside.display()
        ),
    );
    let linked = case("linked-page", "{}");
    symlink(outside.join("page.html"), linked.join("page.html")).unwrap();
    let looped = case("page-loop", "{}");
    symlink(looped.join("page.html"), looped.join("page.html")).unwrap();
    let site_loop = case("site-loop", r#"{"site": "a"}"#);
    symlink(site_loop.join("b"), site_loop.join("a")).unwrap();
    symlink(site_loop.join("a"), site_loop.join("b")).unwrap();
    let expected_out = suite.join("expected-link");
    put(&expected_out, "case.json", "{}");
    put(&expected_out, "page.html", "<p>inside</p>");
    symlink(
        outside.join("expected.json"),
        expected_out.join("expected.json"),
    )
    .unwrap();
    symlink(&outside, suite.join("linked-case")).unwrap();

    let out = tokio::task::spawn_blocking({
        let suite = suite.clone();
        move || wachet(&["fixtures", "run", path(&suite)])
    });
    let out = tokio::time::timeout(std::time::Duration::from_secs(60), out)
        .await
        .expect("the run ends")
        .unwrap();
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    for expected in [
        "ERROR   dotdot: ",
        "site: ",
        "leads out of the suite directory",
        "ERROR   absolute: ",
        "is not relative",
        "ERROR   linked-page: ",
        "ERROR   page-loop: ",
        "is a loop of symbolic links",
        "ERROR   site-loop: ",
        "ERROR   expected-link: ",
        "ERROR   linked-case: ",
        "7 cases: 0 passed, 0 updated, 0 failed, 7 errors",
    ] {
        assert!(text.contains(expected), "{expected:?} in\n{text}");
    }
    for line in text.lines().filter(|l| l.starts_with("ERROR")) {
        assert!(
            line.contains("leads out of") || line.contains("loop") || line.contains("relative"),
            "{line}"
        );
    }
    assert!(!text.contains("SECRET"), "{text}");
    assert!(!stderr(&out).contains("SECRET"), "{}", stderr(&out));
}

/// Each case reaches only its own fixture server: a redirect to another loopback server and a
/// Portal link to it are refused with a clear error and the other server hears nothing. A case
/// that asks for the network (`engine.allowNetwork`) is an error unless the run passes
/// `--allow-network`, and then it reaches the other server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suite_reaches_only_its_own_fixture_server() {
    let other = FixtureServer::builder()
        .page("/secret", "<p>SECRET-OTHER</p>")
        .start()
        .await
        .unwrap();
    let target = other.url("/secret");
    let tmp = tempfile::tempdir().unwrap();
    let suite = tmp.path().join("suite");
    let redirect = suite.join("redirect");
    put(&redirect, "page.html", "");
    put(
        &redirect,
        "case.json",
        &format!(r#"{{"response": {{"status": 302, "headers": {{"location": "{target}"}}}}}}"#),
    );
    put(
        &redirect,
        "expected.json",
        r#"{"raw": "SECRET-OTHER", "error": null, "status": 200}"#,
    );
    let portal = suite.join("portal-link");
    put(
        &portal,
        "page.html",
        &format!(r#"<a href="{target}">other</a><a href="/local.html">local</a>"#),
    );
    put(&portal, "local.html", "<p>local</p>");
    put(
        &portal,
        "case.json",
        r#"{"monitor": {"jobType": "Portal", "crawlingDepth": 1, "crawlPagesFromAllDomains": true}}"#,
    );
    put(&portal, "expected.json", ANY_EXPECTED);

    let out = wachet(&["fixtures", "run", path(&suite), "--update"]);
    let text = stdout(&out);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    let port = other.addr().port();
    let refused = format!("refused to connect to 127.0.0.1:{port}: only 127.0.0.1:");
    assert!(text.contains(&refused), "{text}");
    let written = json(redirect.join("expected.json"));
    assert!(
        written["error"].as_str().unwrap().contains(&refused),
        "{written}"
    );
    assert!(written["raw"].is_null(), "{written}");
    // The Portal case lists the link it was refused, and its own page.
    let pages = json(portal.join("expected.json"))["pages"].clone();
    assert_eq!(pages[&target], 1, "{pages}");
    assert_eq!(pages["/local.html"], 1, "{pages}");
    assert!(other.requests().is_empty(), "{:?}", other.requests());

    // Asking for the network takes the run's consent too.
    let asks = tmp.path().join("trusted");
    let case = asks.join("asks-network");
    put(&case, "page.html", "");
    put(
        &case,
        "case.json",
        &format!(
            r#"{{"engine": {{"allowNetwork": true}}, "response": {{"status": 302, "headers": {{"location": "{target}"}}}}}}"#
        ),
    );
    put(
        &case,
        "expected.json",
        r#"{"raw": "SECRET-OTHER", "error": null, "status": 200}"#,
    );
    let out = wachet(&["fixtures", "run", path(&asks)]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("ERROR   asks-network: ")
            && text.contains("engine.allowNetwork")
            && text.contains("--allow-network"),
        "{text}"
    );
    assert!(other.requests().is_empty());
    let out = wachet(&["fixtures", "run", path(&asks), "--allow-network"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert_eq!(other.hits("/secret"), 1);
}
