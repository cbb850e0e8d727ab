//! `wachet check --steps FILE`: browser steps from a file, against a site that needs a sign-in.

use super::{stderr, stdout, wachet};
use wachet::testing::{SignInSite, browser_test};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_signs_in_and_runs_the_steps_of_a_file() {
    let Some(_serial) = browser_test().await else {
        return;
    };
    let site = SignInSite::start(5).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("steps.json");
    let steps = serde_json::json!({
        "login": {
            "steps": [
                {"action": "goto", "value": site.url("/login")},
                {"action": "type", "selector": "#user", "value": "tea"},
                {"action": "type", "selector": "#password", "value": SignInSite::PASSWORD, "secret": true},
                {"action": "press", "selector": "#password", "value": "Enter"}
            ],
            "loggedInWhen": "#account"
        },
        "steps": [{"action": "select", "selector": "#region", "value": "eu"}]
    });
    std::fs::write(&file, steps.to_string()).unwrap();
    let url = site.url("/");
    let file = file.to_str().unwrap();
    let out = wachet(&[
        "check",
        &url,
        "--xpath",
        "//p[@id='price']",
        "--steps",
        file,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "12 EUR\n");
    assert_eq!(site.sign_ins(), 1);

    std::fs::write(dir.path().join("bad.json"), r#"[{"action": "hover"}]"#).unwrap();
    let bad = dir.path().join("bad.json");
    let out = wachet(&["check", &url, "--steps", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("bad.json"), "{}", stderr(&out));
}
