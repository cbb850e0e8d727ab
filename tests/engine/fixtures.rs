//! The project's fixture regression suites, run through `wachet::testing::Suite` (the runner
//! users get; there is no second copy here): `fixtures/extract/` (every case a page checked
//! through fetch, decode, parse, exclude, XPath, rendered text and regex), `fixtures/blocked/`
//! (bot challenges, captchas, access-denied, rate-limit and maintenance walls, empty and
//! truncated documents, each expected as its error and kind, beside real pages that must stay
//! pages) and
//! `fixtures/crawl/filters/cases/` (Portal crawls of one site under each URL filter, expected
//! as URL sets with depths). `UPDATE_EXPECT=1 cargo test --test engine fixtures::` rewrites the
//! expectations, so a change of output is a deliberate diff in review.
//!
//! The Suite's own behaviour (diffs, update mode, every kind of broken case) is tested below
//! on suites written into temporary folders.

use std::path::{Path, PathBuf};
use wachet::testing::{CaseError, CaseReport, CaseResult, Suite, SuiteError};

fn fixtures(dir: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(dir)
}

fn describe(case: &CaseReport) -> String {
    match &case.result {
        CaseResult::Passed => format!("{}: passed", case.name),
        CaseResult::Updated { diff } => format!(
            "{}: updated\n{}",
            case.name,
            diff.as_deref().unwrap_or("(new)")
        ),
        CaseResult::Failed { diff } => format!("{}: FAILED\n{diff}", case.name),
        CaseResult::Error(err) => format!("{}: ERROR {err}", case.name),
    }
}

/// Runs the suite in `dir` (updating it with `UPDATE_EXPECT=1`) and asserts every case passed.
async fn run_project_suite(dir: &Path, at_least: usize) {
    let update = std::env::var_os("UPDATE_EXPECT").is_some_and(|v| v == "1");
    let report = Suite::builder(dir)
        .update(update)
        .build()
        .run()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        report.cases.len() >= at_least,
        "expected at least {at_least} cases in {}, found {}",
        dir.display(),
        report.cases.len()
    );
    let failures: Vec<String> = report.failures().map(describe).collect();
    assert!(
        failures.is_empty(),
        "{} of {} fixture cases differ (UPDATE_EXPECT=1 rewrites expectations):\n{}",
        failures.len(),
        report.cases.len(),
        failures.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_extract_case_gives_its_expected_outcome() {
    run_project_suite(&fixtures("extract"), 40).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_blocked_case_is_the_wall_or_page_it_is() {
    run_project_suite(&fixtures("blocked"), 28).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_crawl_filter_case_crawls_its_expected_pages() {
    run_project_suite(&fixtures("crawl/filters/cases"), 9).await;
}

// ---------------------------------------------------------------------------------------------
// The Suite itself
// ---------------------------------------------------------------------------------------------

/// A temporary suite folder, removed on drop.
struct TempSuite(PathBuf);

impl TempSuite {
    fn new(tag: &str) -> TempSuite {
        let dir = std::env::temp_dir().join(format!(
            "wachet-fixtures-{tag}-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempSuite(dir)
    }

    fn write(&self, path: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let file = self.0.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, content).unwrap();
        file
    }

    fn read(&self, path: &str) -> String {
        std::fs::read_to_string(self.0.join(path)).unwrap()
    }

    async fn run(&self, update: bool) -> Vec<CaseReport> {
        Suite::builder(&self.0)
            .update(update)
            .build()
            .run()
            .await
            .unwrap()
            .cases
    }
}

impl Drop for TempSuite {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn update_writes_expectations_and_a_changed_page_fails_with_a_line_diff() {
    let suite = TempSuite::new("diff");
    suite.write(
        "stock/page.html",
        "<ul><li>apples<li>pears<li>plums</ul><p id=n>3 left</p>",
    );
    suite.write("stock/case.json", r#"{"monitor": {"xPath": "//li"}}"#);
    suite.write("count/page.html", "<p id=n>3 left</p>");
    suite.write(
        "count/case.json",
        r#"{"description": "one number", "monitor": {"xPath": "//p", "regex": "(\\d+)"}}"#,
    );

    // Without expectations and without update mode, each case names its missing file.
    let cases = suite.run(false).await;
    assert_eq!(cases.len(), 2);
    for case in &cases {
        let CaseResult::Error(CaseError::Missing { path }) = &case.result else {
            panic!("{}", describe(case));
        };
        assert_eq!(path, &case.dir.join("expected.json"));
    }

    let cases = suite.run(true).await;
    assert!(
        cases
            .iter()
            .all(|c| matches!(c.result, CaseResult::Updated { diff: None })),
        "{:?}",
        cases.iter().map(describe).collect::<Vec<_>>()
    );
    assert_eq!(
        suite.read("count/expected.json"),
        "{\n  \"raw\": \"3\",\n  \"error\": null,\n  \"status\": 200\n}\n"
    );
    assert_eq!(
        suite.read("stock/expected.json"),
        "{\n  \"raw\": \"apples\\npears\\nplums\",\n  \"error\": null,\n  \"status\": 200\n}\n"
    );
    assert!(
        suite
            .run(false)
            .await
            .iter()
            .all(|c| matches!(c.result, CaseResult::Passed))
    );

    // The page changes: the multi-line value's diff shows the one line that changed.
    suite.write(
        "stock/page.html",
        "<ul><li>apples<li>quinces<li>plums</ul><p id=n>3 left</p>",
    );
    let cases = suite.run(false).await;
    assert_eq!(cases[0].name, "count");
    assert!(matches!(cases[0].result, CaseResult::Passed));
    let CaseResult::Failed { diff } = &cases[1].result else {
        panic!("{}", describe(&cases[1]));
    };
    assert!(
        diff.contains("--- expected\n+++ actual\n"),
        "a unified diff: {diff}"
    );
    assert!(diff.contains("\n-  \"pears\"\n+  \"quinces\"\n"), "{diff}");
    assert!(diff.contains("\n   \"apples\"\n"), "context lines: {diff}");
    assert!(!diff.contains("-status"), "{diff}");

    // Update mode rewrites only what changed and reports the diff it applied.
    let cases = suite.run(true).await;
    assert!(matches!(cases[0].result, CaseResult::Passed));
    let CaseResult::Updated { diff: Some(diff) } = &cases[1].result else {
        panic!("{}", describe(&cases[1]));
    };
    assert!(diff.contains("+  \"quinces\""));
    assert!(suite.read("stock/expected.json").contains("quinces"));
    assert!(suite.run(false).await.iter().all(|c| c.passed()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn response_status_and_headers_are_served_as_the_case_says() {
    let suite = TempSuite::new("response");
    suite.write("gone/page.html", "<h1>Gone</h1>");
    suite.write("gone/case.json", r#"{"response": {"status": 410}}"#);
    suite.write(
        "latin1/page.html",
        b"<p>caf\xe9</p>".as_slice(), // windows-1252, declared only by the header
    );
    suite.write(
        "latin1/case.json",
        r#"{"monitor": {"xPath": "//p"},
            "response": {"headers": {"content-type": "text/html; charset=windows-1252"}}}"#,
    );
    suite.run(true).await;
    assert_eq!(
        suite.read("gone/expected.json"),
        "{\n  \"raw\": null,\n  \"error\": \"HTTP 410 Gone\",\n  \"errorKind\": \"httpStatus\",\n  \"status\": 410\n}\n"
    );
    assert!(
        suite
            .read("latin1/expected.json")
            .contains("\"raw\": \"café\"")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_portal_case_expects_its_url_set_with_depths() {
    let suite = TempSuite::new("portal");
    suite.write(
        "_site/index.html",
        r#"<a href="a.html">a</a> <a href="/b.html?x=1">b</a>"#,
    );
    suite.write("_site/a.html", r#"<a href="deep/c.html">c</a>"#);
    suite.write("_site/b.html", "b");
    suite.write("_site/deep/c.html", r#"<a href="../d.html">d</a>"#);
    suite.write("_site/d.html", "d");
    suite.write(
        "depth2/case.json",
        r#"{"monitor": {"jobType": "Portal", "crawlingDepth": 2},
            "page": "index.html", "site": "../_site", "engine": {"perHostRps": 0}}"#,
    );
    let cases = suite.run(true).await;
    assert_eq!(cases.len(), 1, "folders starting with _ are not cases");
    assert_eq!(
        suite.read("depth2/expected.json"),
        r#"{
  "raw": null,
  "error": null,
  "status": 200,
  "pages": {
    "/a.html": 1,
    "/b.html?x=1": 1,
    "/deep/c.html": 2,
    "/index.html": 0
  }
}
"#
    );
    // A page more in the site is a readable diff line.
    suite.write("_site/b.html", r#"<a href="e.html">e</a>"#);
    suite.write("_site/e.html", "e");
    let cases = suite.run(false).await;
    let CaseResult::Failed { diff } = &cases[0].result else {
        panic!("{}", describe(&cases[0]));
    };
    assert!(diff.contains("-pages: 4\n+pages: 5\n"), "{diff}");
    assert!(diff.contains("\n+  /e.html depth 2\n"), "{diff}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_cases_are_reported_by_file_and_the_rest_still_run() {
    let suite = TempSuite::new("broken");
    let good = |name: &str| {
        suite.write(&format!("{name}/page.html"), "<p>ok</p>");
        suite.write(&format!("{name}/case.json"), "{}");
        suite.write(
            &format!("{name}/expected.json"),
            r#"{"raw": "ok", "error": null, "status": 200}"#,
        );
    };
    good("a-good");
    good("no-case");
    std::fs::remove_file(suite.0.join("no-case/case.json")).unwrap();
    good("bad-case-json");
    suite.write("bad-case-json/case.json", "{\"monitor\": {\"xPath\": 3}}");
    good("unknown-field");
    suite.write("unknown-field/case.json", "{\"monitr\": {}}");
    good("bad-expected");
    suite.write("bad-expected/expected.json", "{\"raw\": \"ok\",");
    good("no-page");
    std::fs::remove_file(suite.0.join("no-page/page.html")).unwrap();
    good("invalid-monitor");
    suite.write(
        "invalid-monitor/case.json",
        r#"{"monitor": {"xPath": "//p["}}"#,
    );
    good("z-good");

    let cases = suite.run(false).await;
    let by_name = |name: &str| {
        cases
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("no case {name}"))
    };
    assert!(by_name("a-good").passed());
    assert!(by_name("z-good").passed());
    let error = |name: &str| match &by_name(name).result {
        CaseResult::Error(err) => err.to_string(),
        _ => panic!("{}", describe(by_name(name))),
    };
    let file = |path: &str| suite.0.join(path).display().to_string();
    assert_eq!(
        error("no-case"),
        format!("{} is missing", file("no-case/case.json"))
    );
    let bad = error("bad-case-json");
    assert!(
        bad.starts_with(&format!(
            "{}: monitor.xPath: invalid type",
            file("bad-case-json/case.json")
        )),
        "{bad}"
    );
    let unknown = error("unknown-field");
    assert!(unknown.contains("unknown field `monitr`"), "{unknown}");
    assert!(
        error("bad-expected").starts_with(&file("bad-expected/expected.json")),
        "{}",
        error("bad-expected")
    );
    assert_eq!(
        error("no-page"),
        format!("{} is missing", file("no-page/page.html"))
    );
    let invalid = error("invalid-monitor");
    assert!(
        invalid.starts_with(&format!(
            "{}: the monitor is invalid",
            file("invalid-monitor/case.json")
        )),
        "{invalid}"
    );
    assert!(invalid.contains("xPath"), "{invalid}");

    // Update mode replaces an unreadable expectation but never touches a broken case.
    let cases = suite.run(true).await;
    assert!(
        cases
            .iter()
            .find(|c| c.name == "bad-expected")
            .unwrap()
            .passed()
    );
    assert!(
        suite
            .read("bad-expected/expected.json")
            .contains("\"raw\": \"ok\"")
    );
    assert!(!suite.0.join("no-page/expected.json.tmp").exists());
    assert_eq!(
        suite.read("bad-case-json/expected.json"),
        r#"{"raw": "ok", "error": null, "status": 200}"#
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_or_empty_suite_directory_is_an_error() {
    let suite = TempSuite::new("empty");
    let err = Suite::builder(&suite.0).build().run().await.unwrap_err();
    assert!(matches!(err, SuiteError::NoCases { .. }), "{err}");
    let missing = suite.0.join("nothing-here");
    let err = Suite::builder(&missing).build().run().await.unwrap_err();
    assert!(
        err.to_string().starts_with(&format!(
            "cannot read the suite directory {}",
            missing.display()
        )),
        "{err}"
    );
}

/// The fixture server follows no symbolic link out of its folder (a Portal case's link to a
/// page that is a link to a file elsewhere is a 404, and a loop of links too), while links
/// inside the folder, or inside the limit it is given, are served.
#[tokio::test]
async fn the_fixture_server_follows_no_link_out_of_its_folder() {
    use std::os::unix::fs::symlink;
    let tmp = TempSuite::new("links");
    let tmp_path = tmp.0.clone();
    let site = tmp_path.join("suite/case");
    std::fs::create_dir_all(&site).unwrap();
    std::fs::write(tmp_path.join("secret.html"), "SECRET").unwrap();
    std::fs::write(tmp_path.join("suite/shared.html"), "shared").unwrap();
    std::fs::write(site.join("page.html"), "page").unwrap();
    symlink(tmp_path.join("secret.html"), site.join("leak.html")).unwrap();
    symlink(site.join("page.html"), site.join("alias.html")).unwrap();
    symlink(tmp_path.join("suite/shared.html"), site.join("shared.html")).unwrap();
    symlink(site.join("loop.html"), site.join("loop.html")).unwrap();
    let get = |server: &wachet::testing::FixtureServer, path: &str| {
        let url = server.url(path);
        async move {
            let response = reqwest::get(url).await.unwrap();
            (response.status().as_u16(), response.text().await.unwrap())
        }
    };
    let server = wachet::testing::FixtureServer::serve_dir(&site)
        .await
        .unwrap();
    assert_eq!(get(&server, "/leak.html").await.0, 404);
    assert_eq!(get(&server, "/loop.html").await.0, 404);
    assert_eq!(get(&server, "/shared.html").await.0, 404);
    assert_eq!(get(&server, "/alias.html").await, (200, "page".into()));
    let within = wachet::testing::FixtureServer::builder()
        .dir(&site)
        .links_within(tmp_path.join("suite"))
        .start()
        .await
        .unwrap();
    assert_eq!(get(&within, "/shared.html").await, (200, "shared".into()));
    assert_eq!(get(&within, "/leak.html").await.0, 404);
}

/// A rendered case reaches only its fixture server too: its script's fetch of another local
/// server never leaves the browser's egress, and a redirect there fails the case with the
/// refusal.
#[cfg(feature = "chrome")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rendered_case_reaches_only_its_fixture_server() {
    let Some(_serial) = wachet::testing::browser_test().await else {
        return;
    };
    let other = wachet::testing::FixtureServer::builder()
        .page("/secret", "<p>secret</p>")
        .start()
        .await
        .unwrap();
    let target = other.url("/secret");
    let tmp = TempSuite::new("rendered-origins");
    let script = tmp.0.join("script");
    std::fs::create_dir_all(&script).unwrap();
    std::fs::write(
        script.join("page.html"),
        format!(
            "<p id=out>waiting</p><script>fetch('{target}').then(r => r.text())\
             .then(t => out.textContent = t, e => out.textContent = 'refused')</script>"
        ),
    )
    .unwrap();
    std::fs::write(
        script.join("case.json"),
        r#"{"monitor": {"dynamicContent": true, "xPath": "//p[@id='out']"}}"#,
    )
    .unwrap();
    let redirect = tmp.0.join("redirect");
    std::fs::create_dir_all(&redirect).unwrap();
    std::fs::write(redirect.join("page.html"), "").unwrap();
    std::fs::write(
        redirect.join("case.json"),
        format!(
            r#"{{"monitor": {{"dynamicContent": true}}, "response": {{"status": 302, "headers": {{"location": "{target}"}}}}}}"#
        ),
    )
    .unwrap();
    let report = Suite::builder(&tmp.0)
        .update(true)
        .build()
        .run()
        .await
        .unwrap();
    assert!(report.passed(), "{:?}", report.cases);
    let expected = |case: &Path| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(case.join("expected.json")).unwrap()).unwrap()
    };
    assert_eq!(expected(&script)["raw"], "refused");
    let error = expected(&redirect)["error"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let port = other.addr().port();
    assert!(
        error.contains(&format!(
            "refused to connect to 127.0.0.1:{port}: only 127.0.0.1:"
        )),
        "{error}"
    );
    assert!(other.requests().is_empty(), "{:?}", other.requests());
}
