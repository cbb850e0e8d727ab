//! The fixture regression suite: every case under `fixtures/extract/` is served by a real HTTP
//! server on 127.0.0.1 and checked through the engine's real path (fetch, decode, parse,
//! exclude, XPath, rendered text, regex). Each case's `expected.json` holds the outcome;
//! `UPDATE_EXPECT=1 cargo test --test fixtures` rewrites them, so a change of output is a
//! deliberate diff in review.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use wachet::testing::{FixtureServer, Reply};
use wachet::{Checker, Engine, Monitor};

#[derive(Deserialize)]
struct Case {
    #[allow(dead_code)]
    description: String,
    #[serde(default)]
    monitor: Value,
    #[serde(default)]
    response: Option<ResponseSpec>,
}

#[derive(Deserialize)]
struct ResponseSpec {
    #[serde(default = "ok")]
    status: u16,
    #[serde(default)]
    headers: BTreeMap<String, String>,
}

fn ok() -> u16 {
    200
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Expected {
    raw: Option<String>,
    error: Option<String>,
    status: Option<u16>,
}

fn cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/extract")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fixture_case_gives_its_expected_outcome() {
    let dir = cases_dir();
    let server = FixtureServer::serve_dir(&dir).await.unwrap();
    let engine = Engine::builder()
        .allow_private_networks(true)
        .build()
        .unwrap();
    let update = std::env::var_os("UPDATE_EXPECT").is_some_and(|v| v == "1");

    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("case.json").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(
        names.len() >= 40,
        "expected at least 40 cases, found {}",
        names.len()
    );

    let mut failures = Vec::new();
    for name in &names {
        let case_dir = dir.join(name);
        let case: Case =
            serde_json::from_slice(&std::fs::read(case_dir.join("case.json")).unwrap())
                .unwrap_or_else(|e| panic!("{name}/case.json: {e}"));
        let path = format!("/{name}/page.html");
        if let Some(spec) = &case.response {
            let mut reply =
                Reply::new(spec.status).body(std::fs::read(case_dir.join("page.html")).unwrap());
            let mut has_type = false;
            for (k, v) in &spec.headers {
                has_type |= k.eq_ignore_ascii_case("content-type");
                reply = reply.header(k, v);
            }
            if !has_type {
                reply = reply.header("content-type", "text/html");
            }
            server.set(path.clone(), reply);
        }
        let mut monitor: Monitor = match case.monitor {
            Value::Null => Monitor::default(),
            v => serde_json::from_value(v).unwrap_or_else(|e| panic!("{name}: monitor: {e}")),
        };
        monitor.url = Some(server.url(&path));
        let outcome = engine
            .check(&monitor)
            .await
            .unwrap_or_else(|e| panic!("{name}: invalid monitor: {e}"));
        let actual = Expected {
            raw: outcome.data.raw.clone(),
            error: outcome.data.error.clone(),
            status: outcome.status,
        };
        let expected_path = case_dir.join("expected.json");
        if update {
            let mut text = serde_json::to_string_pretty(&actual).unwrap();
            text.push('\n');
            std::fs::write(&expected_path, text).unwrap();
            continue;
        }
        let expected: Expected = match std::fs::read(&expected_path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .unwrap_or_else(|e| panic!("{name}/expected.json: {e}")),
            Err(_) => {
                failures.push(format!("{name}: no expected.json"));
                continue;
            }
        };
        if expected != actual {
            failures.push(format!(
                "{name}:\n  expected {expected:?}\n  actual   {actual:?}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} fixture cases differ (UPDATE_EXPECT=1 rewrites expectations):\n{}",
        failures.len(),
        names.len(),
        failures.join("\n")
    );
}
