//! Notifications that explain themselves, through the real service, a real
//! webhook receiver and a real SMTP server: pages whose only differences are noise (white
//! space, entities, Unicode forms, a counter, a date and a token the monitor masks, a paywall
//! meter and a cookie banner known by their words) never
//! notify, and a real change beside masked noise notifies once, showing the change as removed
//! and added text and the noise dimmed, never as a change.

use super::delivery::Receiver;
use crate::{Api, User, id};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use wachet::testing::{FixtureServer, Reply};

/// A mask written by a person.
fn mask(pattern: &str) -> Value {
    json!({"pattern": pattern, "learned": false, "active": true})
}

/// Noise that differs on every request `n`, beside text that stays. `real` switches the
/// page's real content once.
fn noisy(kind: &'static str, real: Arc<AtomicBool>) -> impl Fn(usize) -> Reply + Send + Sync {
    move |n| {
        let odd = n % 2 == 1;
        let body = match kind {
            // Spellings the normalisation ignores.
            "space" => match odd {
                true => "<p>Green   tea,\n  50 g</p>".to_string(),
                false => "<p>Green tea, 50&nbsp;g</p>".to_string(),
            },
            "entity" => match odd {
                true => "<p>Tea &amp; cakes &#8211; &ldquo;fresh&rdquo;</p>".to_string(),
                false => "<p>Tea &#38; cakes \u{2013} \u{201c}fresh\u{201d}</p>".to_string(),
            },
            "unicode" => match odd {
                true => "<p>Caf\u{e9} cr\u{e8}me</p>".to_string(),
                false => "<p>Cafe\u{301} cre\u{300}me</p>".to_string(),
            },
            // A counter crossing a thousand (grouped with a space) under a digits mask.
            "counter" => match n {
                1 => "<p>Tea</p><p>Seen 999 times</p>".to_string(),
                n => format!("<p>Tea</p><p>Seen 1 {:03} times</p>", n % 1000),
            },
            "date" => format!("<p>Tea</p><p>Updated {} November 2026.</p>", 1 + n % 28),
            "token" => format!("<p>Tea</p><form><p>csrf=a{n}b{}</p></form>", n * 7919),
            // Noise known by its words, masked with no mask of the person's: a paywall meter
            // that steps down every five requests (so a step lasts past its confirmation),
            // and a consent banner left out of two requests in a row now and then.
            "meter" => format!(
                "<p>Tea</p><p>You have {} free articles left this month.</p>",
                9 - ((n - 1) / 5).min(9)
            ),
            "banner" => {
                let banner = if n > 4 && (n / 2) % 3 == 0 {
                    ""
                } else {
                    "<div id=consent><p>We use cookies to improve your experience.</p>\
                     <button>Accept all</button> <button>Manage choices</button></div>"
                };
                format!("<p>Tea</p>{banner}<p>Green tea, 50 g</p>")
            }
            // A real change beside a counter, a date and a token that are masked.
            _ => {
                let price = if real.load(Ordering::SeqCst) {
                    "4.20"
                } else {
                    "3.50"
                };
                format!(
                    "<h1>Green tea</h1><p>Price {price} EUR \u{b7} {} people are looking</p>\
                     <p>Updated {} November 2026.</p><p>csrf=x{n}y</p>",
                    10 + n,
                    1 + n % 28
                )
            }
        };
        Reply::html(body)
    }
}

/// The masks each page's monitor has.
fn masks(kind: &str) -> Value {
    match kind {
        "counter" => json!([mask(r"\d+")]),
        "date" => json!([mask(r"Updated (\d+ \w+ \d{4})")]),
        "token" => json!([mask(r"csrf=(\w+)")]),
        "real" => json!([
            mask(r"(\d+) people are looking"),
            mask(r"Updated (\d+ \w+ \d{4})"),
            mask(r"csrf=(\w+)")
        ]),
        _ => json!([]),
    }
}

const NOISE: [&str; 8] = [
    "space", "entity", "unicode", "counter", "date", "token", "meter", "banner",
];

/// The history entries of `task`, once there are at least `n`, waited for 60 s at most.
async fn checks(api: &Api, user: &User, task: &str, n: usize) -> Vec<Value> {
    let path = format!("/thirdparty/v1/data/list/{task}?count=500");
    for _ in 0..600 {
        let data = api.get(user, &path).await.ok()["data"].clone();
        let entries = data.as_array().cloned().unwrap_or_default();
        if entries.len() >= n {
            return entries;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("fewer than {n} checks of {task} within 60 s");
}

async fn notifications(api: &Api, user: &User, task: &str) -> Vec<Value> {
    let path = format!("/thirdparty/v1/notification/list?taskId={task}");
    let data = api.get(user, &path).await.ok()["data"].clone();
    data.as_array().cloned().unwrap_or_default()
}

/// Monitors of each noisy page and of the page with a real change, created with their masks
/// and a NotEq alert delivered to `endpoints`; their ids in the order of `kinds`.
async fn monitors(
    api: &Api,
    user: &User,
    site: &FixtureServer,
    kinds: &[&str],
    endpoints: Value,
) -> Vec<String> {
    let mut tasks = Vec::new();
    for kind in kinds {
        let body = json!({"name": format!("Tea ({kind})"), "url": site.url(&format!("/{kind}")),
                          "recurrenceInSeconds": 1, "alerts": [{"type": "NotEq"}],
                          "noise": masks(kind), "notificationEndpoints": endpoints});
        let task = api.task(user, body).await;
        assert_eq!(task["noise"], masks(kind), "the masks are kept: {task}");
        tasks.push(id(&task));
    }
    tasks
}

fn site(real: &Arc<AtomicBool>) -> wachet::testing::FixtureServerBuilder {
    let mut builder = FixtureServer::builder();
    for kind in NOISE.iter().chain(&["real"]) {
        builder = builder.counted(format!("/{kind}"), noisy(kind, real.clone()));
    }
    builder
}

both!(
    noise_never_notifies_and_a_real_change_beside_it_notifies_once_explained,
    multi_thread
);
async fn noise_never_notifies_and_a_real_change_beside_it_notifies_once_explained() {
    let real = Arc::new(AtomicBool::new(false));
    let site = site(&real).start().await.unwrap();
    let (receiver, hook) = Receiver::start(0).await;
    let api = Api::start_checking().await;
    let user = api.user("ann@example.com").await;
    let kinds: Vec<&str> = NOISE.iter().copied().chain(["real"]).collect();
    let endpoints = json!([{"type": "Webhook", "value": hook}]);
    let tasks = monitors(&api, &user, &site, &kinds, endpoints).await;
    let real_task = tasks.last().unwrap().clone();

    // Every noisy page checked many times (each check saw different noise), the page with a
    // real change too, before its change.
    for task in &tasks {
        checks(&api, &user, task, 6).await;
    }
    let changed_at = checks(&api, &user, &real_task, 0).await.len();
    real.store(true, Ordering::SeqCst);

    let seen = receiver.wait_for(1).await;
    // Some more checks of every monitor, for anything late to show: counted from now for all
    // of them, then waited for (they are checked at once, not one after the other).
    let mut before = Vec::new();
    for task in &tasks {
        before.push(checks(&api, &user, task, 0).await.len());
    }
    for (task, before) in tasks.iter().zip(before) {
        checks(&api, &user, task, before + 4).await;
    }
    for (kind, task) in kinds.iter().zip(&tasks) {
        let notes = notifications(&api, &user, task).await;
        let expected = usize::from(*kind == "real");
        assert_eq!(notes.len(), expected, "{kind}: {notes:#?}");
    }
    assert!(checks(&api, &user, &real_task, 0).await.len() > changed_at);
    let seen_now = receiver.wait_for(1).await;
    assert_eq!(seen_now.len(), 1, "one delivery in all: {seen_now:#?}");

    // The webhook: the real change as data, and when it was first seen.
    let payload: Value = serde_json::from_str(&seen[0].1).unwrap();
    assert_eq!(payload["taskId"], real_task.as_str());
    assert_eq!(
        payload["change"],
        json!({"removed": ["3.50"], "added": ["4.20"]})
    );
    let first_seen =
        chrono::DateTime::parse_from_rfc3339(payload["firstSeen"].as_str().unwrap()).unwrap();
    let sent =
        chrono::DateTime::parse_from_rfc3339(payload["timestamp"].as_str().unwrap()).unwrap();
    assert!(first_seen < sent, "{first_seen} before {sent}");

    // The HTML: the change marked, the noise dimmed as it reads now, with its legend.
    let note = payload["id"].as_str().unwrap();
    let content = api
        .get(&user, &format!("/thirdparty/v1/notification/{note}"))
        .await
        .ok()
        .clone();
    let html = content["html"].as_str().unwrap().to_string();
    assert!(html.contains(">3.50</del>"), "{html}");
    assert!(html.contains(">4.20</ins>"), "{html}");
    let current = payload["current"].as_str().unwrap();
    let looking = current
        .split(" people are looking")
        .next()
        .and_then(|s| s.rsplit(' ').next())
        .unwrap();
    assert!(
        html.contains(&format!(
            "class=\"noise\" style=\"color:#5f6368\">{looking}</span>"
        )),
        "the counter as it reads now ({looking}), dimmed: {html}"
    );
    assert!(
        html.contains("parts wachet ignores, they change on their own"),
        "{html}"
    );
    for marked in html.split("<del").chain(html.split("<ins")).skip(1) {
        let inside = marked.split("</").next().unwrap();
        assert!(!inside.contains("noise"), "noise inside a change: {html}");
    }
}

both!(
    an_email_shows_the_real_change_marked_and_the_noise_dimmed,
    multi_thread
);
async fn an_email_shows_the_real_change_marked_and_the_noise_dimmed() {
    let Some((_smtp, port, mut lines)) = super::delivery::debugging_smtp().await else {
        return;
    };
    let real = Arc::new(AtomicBool::new(false));
    let site = site(&real).start().await.unwrap();
    let api = Api::start_checking_with(super::delivery::smtp_at(port)).await;
    let user = api.user("cy@example.com").await;
    let endpoints = json!([{"type": "Email", "value": "cy@example.com"}]);
    let tasks = monitors(&api, &user, &site, &["counter", "real"], endpoints).await;
    for task in &tasks {
        checks(&api, &user, task, 4).await;
    }
    real.store(true, Ordering::SeqCst);

    let message = super::delivery::next_message(&mut lines).await;
    let decoded = decoded(&message);
    assert!(
        decoded.contains("Subject: Tea (real): content changed"),
        "{decoded}"
    );
    // The HTML part.
    assert!(decoded.contains(">4.20</ins>"), "{decoded}");
    assert!(decoded.contains("class=\"noise\""), "{decoded}");
    // The plain-text part: the same change with markers.
    assert!(decoded.contains("Price [-3.50-]{+4.20+} EUR"), "{decoded}");
    assert!(
        decoded.contains("\u{27e8}dimmed\u{27e9}: parts wachet ignores"),
        "{decoded}"
    );
    // Nothing for the counter's monitor, whose page only had noise.
    let before = checks(&api, &user, &tasks[0], 0).await.len();
    checks(&api, &user, &tasks[0], before + 3).await;
    assert!(notifications(&api, &user, &tasks[0]).await.is_empty());
}

in_browser!(
    the_notification_page_shows_the_change_marked_and_the_noise_dimmed_in_a_real_browser,
    multi_thread
);
async fn the_notification_page_shows_the_change_marked_and_the_noise_dimmed_in_a_real_browser() {
    let Some(_guard) = wachet::testing::browser_test().await else {
        return;
    };
    let real = Arc::new(AtomicBool::new(false));
    let site = site(&real).start().await.unwrap();
    let api = Api::start_checking().await;
    let user = api.user("dee@example.com").await;
    let tasks = monitors(&api, &user, &site, &["real"], json!([])).await;
    checks(&api, &user, &tasks[0], 3).await;
    real.store(true, Ordering::SeqCst);
    for _ in 0..300 {
        if !notifications(&api, &user, &tasks[0]).await.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let notes = notifications(&api, &user, &tasks[0]).await;
    let note = notes[0]["id"]
        .as_str()
        .expect("a notification of the change");

    let (_driver, page, mut dialogs) = crate::support::web::signed_in_browser(&api, &user).await;
    page.goto(api.url("/notifications")).await.unwrap();
    let item = format!("#n-{note} .notification-content");
    crate::support::web::until(&page, &format!("!!document.querySelector('{item} ins')")).await;
    let text = |selector: String| {
        let page = &page;
        async move {
            crate::support::web::eval::<Vec<String>>(
                page,
                &format!("[...document.querySelectorAll({selector:?})].map(e => e.textContent)"),
            )
            .await
        }
    };
    assert_eq!(text(format!("{item} del")).await, ["3.50"]);
    assert_eq!(text(format!("{item} ins")).await, ["4.20"]);
    // The counter, the date and the token as they read now, dimmed, none of them a change.
    let noise = text(format!("{item} .noise")).await;
    assert_eq!(
        noise.len(),
        4,
        "the legend's sample and three spans: {noise:?}"
    );
    assert_eq!(noise[0], "dimmed");
    assert!(noise[1].parse::<u32>().is_ok(), "{noise:?}");
    assert!(noise[2].ends_with("November 2026"), "{noise:?}");
    assert!(noise[3].starts_with('x'), "{noise:?}");
    assert_eq!(
        crate::support::web::eval::<usize>(
            &page,
            &format!("document.querySelectorAll('{item} del .noise, {item} ins .noise').length")
        )
        .await,
        0
    );
    let legend = text(format!("{item} .noise-legend")).await;
    assert_eq!(
        legend,
        ["dimmed: parts wachet ignores, they change on their own"]
    );
    // Dimmed by the page's own style (inline styles are sanitised away): the muted colour.
    let colours = crate::support::web::eval::<Vec<String>>(
        &page,
        &format!(
            "[document.querySelector('{item} pre .noise'), document.querySelector('{item} pre')]\
             .map(e => getComputedStyle(e).color)"
        ),
    )
    .await;
    assert_ne!(
        colours[0], colours[1],
        "noise looks unlike the text around it: {colours:?}"
    );
    crate::support::web::no_dialog(&mut dialogs).await;
    // axe-core runs on each: the dimmed text's contrast must pass, light and dark.
    crate::support::web::screenshots(&page, "notification-noise", 1440).await;
}

/// `message` with its quoted-printable and base64 parts decoded, for reading.
pub(crate) fn decoded(message: &str) -> String {
    let mut out = String::new();
    let mut encoding = "";
    let mut body = String::new();
    let mut in_body = false;
    let flush = |encoding: &str, body: &mut String, out: &mut String| {
        match encoding {
            "quoted-printable" => out.push_str(&quoted_printable(body)),
            "base64" => out.push_str(&base64(body)),
            _ => out.push_str(body),
        }
        body.clear();
    };
    for line in message.lines() {
        if line.starts_with("--") {
            flush(encoding, &mut body, &mut out);
            encoding = "";
            in_body = false;
            out.push_str(line);
            out.push('\n');
            continue;
        }
        let lower = line.to_ascii_lowercase();
        if let Some(value) = lower.strip_prefix("content-transfer-encoding:") {
            encoding = match value.trim() {
                "quoted-printable" => "quoted-printable",
                "base64" => "base64",
                _ => "",
            };
        }
        if !in_body && line.is_empty() {
            in_body = true;
        }
        if in_body {
            body.push_str(line);
            body.push('\n');
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    flush(encoding, &mut body, &mut out);
    out
}

fn quoted_printable(text: &str) -> String {
    let joined = text.replace("=\n", "");
    let bytes = joined.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'='
            && i + 2 < bytes.len()
            && let Ok(byte) = u8::from_str_radix(joined.get(i + 1..i + 3).unwrap_or(""), 16)
        {
            out.push(byte);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn base64(text: &str) -> String {
    let value = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let mut out = Vec::new();
    let (mut acc, mut bits) = (0u32, 0);
    for v in text.bytes().filter_map(value) {
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
