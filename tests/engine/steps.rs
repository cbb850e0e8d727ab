//! Browser steps and kept sessions against a real headless Chromium and a fixture site that
//! needs a sign-in (`wachet::testing::SignInSite`).

use std::sync::Arc;
use std::time::{Duration, Instant};
use wachet::model::{Login, Step, StepAction};
use wachet::steps::{MemorySessions, SessionStore};
use wachet::testing::{SignInSite, browser_test};
use wachet::{Checker, Engine, Monitor};

fn engine() -> Engine {
    Engine::builder()
        .allow_network("127.0.0.1/32".parse().unwrap())
        .total_timeout(Duration::from_secs(20))
        .build()
        .unwrap()
}

/// The site's sign-in as login steps: from the page, follow its link, fill the form (the
/// password a secret step) and send it.
fn login(password: &str) -> Login {
    let mut secret = Step::new(StepAction::Type).on("#password").with(password);
    secret.secret = true;
    Login {
        steps: vec![
            Step::new(StepAction::Click).on("#signin"),
            Step::new(StepAction::Type)
                .on("//input[@name='user']")
                .with("tea"),
            secret,
            Step::new(StepAction::Check).on("#remember"),
            Step::new(StepAction::Click).on("//button[@id='login']"),
        ],
        logged_in_when: Some("#account".into()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steps_sign_in_keep_the_session_and_skip_a_banner_that_is_not_there() {
    let Some(_serial) = browser_test().await else {
        return;
    };
    let site = SignInSite::start(5).await.unwrap();
    // The banner covers the page on loads 1 to 9, 11, ... but not on every tenth.
    site.banner_but_every(10);
    let mut accept = Step::new(StepAction::Click).on("#accept");
    accept.optional = true;
    let mut m = Monitor::new(site.url("/"));
    m.x_path = Some("//p[@id='price']".into());
    m.login = Some(login(SignInSite::PASSWORD));
    m.steps = Some(vec![
        accept,
        Step::new(StepAction::Select).on("#region").with("Europe"),
    ]);
    let engine = engine();
    let sessions: Arc<MemorySessions> = Arc::default();
    let prepared = engine.prepare(&m).unwrap().with_sessions(sessions.clone());

    let began = Instant::now();
    let mut signed_in = Vec::new();
    for i in 0..20 {
        let outcome = engine.check_prepared(&prepared).await;
        assert_eq!(
            outcome.value(),
            Some("12 EUR"),
            "check {i}: {:?}",
            outcome.data.error
        );
        signed_in.push(outcome.data.logged_in);
    }
    // A session lasts 5 loads of the page: a sign-in every 5 checks, not one a check.
    assert!(site.sign_ins() <= 7, "{} sign-ins", site.sign_ins());
    assert_eq!(
        signed_in.iter().filter(|s| **s).count(),
        site.sign_ins(),
        "{signed_in:?}"
    );
    assert!(signed_in[0] && !signed_in[1], "{signed_in:?}");
    // The banner was missing on some loads: the optional step was skipped, not failed.
    assert!(site.loads() >= 20);
    let kept = sessions.load().await.unwrap().unwrap();
    assert!(kept.cookies.iter().any(|c| c.name == "sid"));
    eprintln!(
        "20 checks with steps in {:?}, {} sign-ins",
        began.elapsed(),
        site.sign_ins()
    );
}

/// Checks `steps` on the site's sign-in form (no login) and returns the check's error.
async fn error_of(engine: &Engine, site: &SignInSite, steps: Vec<Step>) -> String {
    let mut m = Monitor::new(site.url("/login"));
    m.steps = Some(steps);
    let outcome = engine.check(&m).await.unwrap();
    outcome.data.error.unwrap_or_else(|| "no error".into())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_step_is_named_with_the_page_and_without_secrets() {
    let Some(_serial) = browser_test().await else {
        return;
    };
    let site = SignInSite::start(5).await.unwrap();
    let engine = engine();
    let form = site.url("/login");
    let mut secret = Step::new(StepAction::Type).on("h1").with("hunter2");
    secret.secret = true;
    let (missing, not_field, endless, private) = tokio::join!(
        error_of(
            &engine,
            &site,
            vec![
                Step::new(StepAction::Type).on("#user").with("tea"),
                Step::new(StepAction::WaitFor)
                    .on("//button[@id='gone']")
                    .with("1"),
            ],
        ),
        error_of(&engine, &site, vec![secret]),
        error_of(
            &engine,
            &site,
            vec![Step::new(StepAction::Script).with("while (true) {}")],
        ),
        error_of(
            &engine,
            &site,
            vec![Step::new(StepAction::Goto).with("http://10.0.0.1/admin")],
        ),
    );
    assert_eq!(
        missing,
        format!(
            "step 2 of 2 (wait for `//button[@id='gone']`): no element matched within 1 s, \
             on {form} titled \"Sign in\""
        )
    );
    assert_eq!(
        not_field,
        format!(
            "step 1 of 1 (type into `h1`): the element is not a field, on {form} titled \"Sign in\""
        )
    );
    assert!(!not_field.contains("hunter2"));
    assert_eq!(
        endless,
        "step 1 of 1 (script): the script did not finish within 5 s"
    );
    assert!(
        private.starts_with("step 1 of 1 (go to http://10.0.0.1/admin): ")
            && private.contains("private"),
        "{private}"
    );

    // A page that shows what was typed shows no secret in the value or the stored HTML.
    let mut typed = Step::new(StepAction::Type).on("#user").with("hunter2");
    typed.secret = true;
    let mut m = Monitor::new(form.clone());
    m.x_path = Some("//h1".into());
    m.collect_raw_html = true;
    m.steps = Some(vec![
        typed,
        Step::new(StepAction::Script).with(
            "document.querySelector('h1').textContent = document.querySelector('#user').value",
        ),
    ]);
    let outcome = engine.check(&m).await.unwrap();
    assert_eq!(outcome.value(), Some("•••"), "{:?}", outcome.data.error);
    assert!(!outcome.raw_html.unwrap_or_default().contains("hunter2"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_that_does_not_sign_in_is_an_error_not_a_loop() {
    let Some(_serial) = browser_test().await else {
        return;
    };
    let site = SignInSite::start(5).await.unwrap();
    let engine = engine();
    let mut m = Monitor::new(site.url("/"));
    m.login = Some(login("wrong horse"));
    let outcome = engine.check(&m).await.unwrap();
    let error = outcome.data.error.unwrap_or_default();
    assert!(
        error.starts_with("login: the login steps ran, but the page does not show `#account`"),
        "{error}"
    );
    assert!(!error.contains("wrong horse"), "{error}");
    assert_eq!(site.sign_ins(), 1);

    // A sign-in answered with a captcha is a wall, said as walls are.
    site.ask_captcha(true);
    m.login = Some(login(SignInSite::PASSWORD));
    let outcome = engine.check(&m).await.unwrap();
    assert_eq!(
        outcome.error_kind,
        Some(wachet::ErrorKind::Blocked),
        "{:?}",
        outcome.data.error
    );
    assert_eq!(site.sign_ins(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_portal_signs_in_once_and_crawls_with_the_session() {
    let Some(_serial) = browser_test().await else {
        return;
    };
    let site = SignInSite::start(5).await.unwrap();
    let mut m = Monitor::new(site.url("/"));
    m.job_type = wachet::model::ClientJobType::Portal;
    m.crawling_depth = Some(1);
    m.login = Some(login(SignInSite::PASSWORD));
    let outcome = engine().check(&m).await.unwrap();
    let pages = outcome.crawl.expect("a crawl").pages;
    let detail = pages
        .iter()
        .find(|p| p.url.ends_with("/orders/17"))
        .expect("the order's page was crawled");
    assert_eq!(
        detail.data.raw.as_deref(),
        Some("17: tea, shipped"),
        "{:?}",
        detail.data.error
    );
    assert_eq!(site.sign_ins(), 1);
    // The start page's entry says the crawl signed in there; the pages after did not.
    let start = pages.iter().find(|p| p.depth == 0).expect("the start page");
    assert!(start.data.logged_in);
    assert!(!detail.data.logged_in);
    assert!(outcome.data.logged_in);

    m.steps = Some(vec![Step::new(StepAction::Scroll)]);
    let refused = engine().validate(&m).unwrap_err();
    assert_eq!(refused.errors[0].field, "steps");
}
