//! Dynamic content against a real headless Chromium and real servers on loopback.
//!
//! These tests need Chromium. Without it they fail when `CI` is set (CI must install it) and are
//! skipped, loudly, on a developer machine.

use crate::common::{dynamic, engine};
use futures::StreamExt;
use std::net::Ipv4Addr;
use std::time::Duration;
use wachet::model::{ClientJobType, HeaderPair};
use wachet::render::RenderSettings;
use wachet::testing::browser_test;
use wachet::testing::{FixtureServer, Reply};
use wachet::{Checker, Engine, Monitor};

/// An engine for the fixture servers on loopback, with these bounds.
fn engine_with(total: Duration, render: RenderSettings) -> Engine {
    Engine::builder()
        .allow_private_networks(true)
        .total_timeout(total)
        .render_settings(render)
        .build()
        .unwrap()
}

/// The values of `n` checks of `m` in a row, `(failed)` for a check without one.
async fn values(engine: &Engine, m: &Monitor, n: usize) -> Vec<String> {
    let mut values = Vec::new();
    for _ in 0..n {
        let outcome = engine.check(m).await.unwrap();
        values.push(outcome.value().unwrap_or("(failed)").to_string());
    }
    values
}

const JS_LIST: &str = r#"<!doctype html><html><body style="height:1500px"><h1>Shop</h1><ul id=list></ul>
<script>
let n = 0;
function add(k) { for (let i = 0; i < k; i++) { const li = document.createElement('li'); li.textContent = 'item ' + (++n); document.getElementById('list').appendChild(li); } }
setTimeout(() => add(3), 150);
window.addEventListener('scroll', () => { if (n < 30) setTimeout(() => { add(3); document.body.style.height = (1500 + n * 100) + 'px'; }, 50); });
</script></body></html>"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn script_inserted_content_is_rendered() {
    let Some(_serial) = browser_test().await else {
        return;
    };
    let server = FixtureServer::builder()
        .page("/list", JS_LIST)
        .start()
        .await
        .unwrap();
    let engine = engine(Duration::from_secs(10));
    let mut m = dynamic(server.url("/list"));
    m.x_path = Some("//li".into());
    let outcome = engine.check(&m).await.unwrap();
    assert_eq!(
        outcome.value(),
        Some("item 1\nitem 2\nitem 3"),
        "{outcome:?}"
    );
    assert_eq!(outcome.status, Some(200));
    // The plain path sees no items.
    m.dynamic_content = false;
    assert_eq!(
        engine.check(&m).await.unwrap().error(),
        Some("xPath matched nothing")
    );
}

/// Content that arrives after the load with nothing visibly pending in between must still be
/// waited for: data fetched, then rendered in a task of its own (as frameworks schedule renders),
/// and a script chunk inserted after the load. Both come 400 ms late, longer than the quiet
/// window, so only counting them as pending makes the page wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn late_content_after_the_load_is_waited_for() {
    let Some(_serial) = browser_test().await else {
        return;
    };
    let page = r#"<!doctype html><p>start</p><script>
window.addEventListener('load', () => {
  fetch('/data').then(r => r.json()).then(d => {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => { const p = document.createElement('p'); p.textContent = d.text; document.body.appendChild(p); };
    channel.port2.postMessage(null);
  });
  const s = document.createElement('script'); s.src = '/chunk.js'; document.head.appendChild(s);
});
</script>"#;
    let late = Duration::from_millis(400);
    let server = FixtureServer::builder()
        .page("/late", page)
        .reply(
            "/data",
            Reply::new(200)
                .header("content-type", "application/json")
                .body(r#"{"text":"from the data"}"#)
                .delay(late),
        )
        .reply(
            "/chunk.js",
            Reply::new(200)
                .header("content-type", "text/javascript")
                .body("const p = document.createElement('p'); p.textContent = 'from the chunk'; document.body.appendChild(p);")
                .delay(late),
        )
        .start()
        .await
        .unwrap();
    let engine = engine(Duration::from_secs(10));
    let outcome = engine.check(&dynamic(server.url("/late"))).await.unwrap();
    let value = outcome.value().unwrap_or_default();
    assert!(value.contains("from the data"), "{outcome:?}");
    assert!(value.contains("from the chunk"), "{outcome:?}");

    // Data alone, put into the page in the next animation frame: nothing changes the DOM while
    // it is on its way, so the quiet counts from when it arrived.
    let frame = r#"<!doctype html><p>start</p><script>
window.addEventListener('load', () => {
  fetch('/data').then(r => r.json()).then(d => requestAnimationFrame(() => {
    const p = document.createElement('p'); p.textContent = d.text; document.body.appendChild(p);
  }));
});
</script>"#;
    server.set("/frame", Reply::html(frame));
    let outcome = engine.check(&dynamic(server.url("/frame"))).await.unwrap();
    assert!(
        outcome
            .value()
            .unwrap_or_default()
            .contains("from the data"),
        "{outcome:?}"
    );
}

/// Data that takes longer than a second, behind a spinner that never changes the DOM, is
/// waited for: a fetch, an XHR and a module loaded with `import()`, each 1.5 s late.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_data_behind_a_spinner_is_waited_for() {
    let Some(_serial) = browser_test().await else {
        return;
    };
    let slow = Duration::from_millis(1500);
    let page = |load: &str| {
        format!(
            r#"<!doctype html><style>@keyframes spin {{ to {{ transform: rotate(1turn) }} }}
#spinner {{ animation: spin 1s linear infinite; width: 10px; height: 10px }}</style>
<div id=spinner></div><p>start</p><script>
const show = text => {{ document.getElementById('spinner').remove();
  const p = document.createElement('p'); p.textContent = text; document.body.appendChild(p); }};
{load}
</script>"#
        )
    };
    let server = FixtureServer::builder()
        .page(
            "/fetch",
            page("fetch('/data').then(r => r.json()).then(d => show(d.text));"),
        )
        .page(
            "/xhr",
            page(
                "const x = new XMLHttpRequest(); x.open('GET', '/data'); \
                 x.onload = () => show(JSON.parse(x.responseText).text); x.send();",
            ),
        )
        .page(
            "/import",
            page("import('/module.js').then(m => show(m.text));"),
        )
        .reply(
            "/data",
            Reply::new(200)
                .header("content-type", "application/json")
                .body(r#"{"text":"the slow data"}"#)
                .delay(slow),
        )
        .reply(
            "/module.js",
            Reply::new(200)
                .header("content-type", "text/javascript")
                .body("export const text = 'the slow data';")
                .delay(slow),
        )
        .start()
        .await
        .unwrap();
    let engine = engine(Duration::from_secs(10));
    for path in ["/fetch", "/xhr", "/import"] {
        let mut m = dynamic(server.url(path));
        m.x_path = Some("//p[last()]".into());
        let outcome = engine.check(&m).await.unwrap();
        assert_eq!(
            outcome.value(),
            Some("the slow data"),
            "{path}: {outcome:?}"
        );
    }
}

/// A request that stays open (a long poll) is waited for up to the maximum by the first two
/// renders (one sighting is not enough to write an address off), with the page's other content,
/// slow data included, stored; the renders after them no longer wait for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_poll_does_not_hold_every_check_to_the_maximum() {
    let Some(_serial) = browser_test().await else {
        return;
    };
    let page = r#"<!doctype html><p>news</p><script>
const poll = () => fetch('/poll?since=' + Date.now()).then(r => r.text()).then(poll, poll);
poll();
fetch('/data').then(r => r.text()).then(t => {
  const p = document.createElement('p'); p.textContent = t; document.body.appendChild(p);
});
</script>"#;
    let server = FixtureServer::builder()
        .page("/live", page)
        .reply("/poll", Reply::new(200).body("nothing new").never_finish())
        .reply(
            "/data",
            Reply::new(200)
                .body("from the data")
                .delay(Duration::from_millis(1500)),
        )
        .start()
        .await
        .unwrap();
    let max_settle = Duration::from_secs(4);
    let engine = engine_with(
        Duration::from_secs(30),
        RenderSettings {
            max_settle,
            ..RenderSettings::default()
        },
    );
    let mut m = dynamic(server.url("/live"));
    m.x_path = Some("//p".into());
    for check in 1..=4 {
        let outcome = engine.check(&m).await.unwrap();
        assert_eq!(
            outcome.value(),
            Some("news\nfrom the data"),
            "check {check}: {outcome:?}"
        );
        if check <= 2 {
            assert!(
                outcome.timings.fetch >= max_settle,
                "check {check} waits for the open request: {:?}",
                outcome.timings
            );
        } else {
            assert!(
                outcome.timings.fetch < max_settle,
                "check {check}: a long poll seen hanging twice is not waited for: {:?}",
                outcome.timings
            );
        }
    }
}

/// A price shown by the page's script from a data request: on some requests the data fails
/// (the script retries once, 1.5 s later) or takes 2 s, and once it answers only after the
/// render's maximum wait. Every check after that one stores the complete value, 20 in a row
/// with the same engine: neither the retry nor the slow answer is given up on, and the one
/// answer that came too late does not make the engine stop waiting for that address.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_that_sometimes_fails_or_is_slow_is_stored_complete_on_every_check() {
    let Some(_serial) = browser_test().await else {
        return;
    };
    let page = r#"<!doctype html><h1>Tea</h1><p id=price>Loading...</p><script>
const load = retry => fetch('/price')
  .then(r => { if (!r.ok) throw new Error('HTTP ' + r.status); return r.json(); })
  .then(d => { document.getElementById('price').textContent = d.price; })
  .catch(() => { if (retry) setTimeout(() => load(false), 1500); });
load(true);
</script>"#;
    let max_settle = Duration::from_secs(4);
    let server = FixtureServer::builder()
        .page("/tea", page)
        .counted("/price", move |n| {
            let price = Reply::new(200)
                .header("content-type", "application/json")
                .body(r#"{"price":"3.50 EUR"}"#);
            match n {
                // The first check: the answer comes after the render's maximum wait.
                1 => price.delay(max_settle + Duration::from_secs(2)),
                // Fails; the retry (the next request) answers.
                3 | 7 | 12 | 18 => Reply::new(503).body("busy"),
                // Slow, a retry (13) included.
                5 | 10 | 13 | 16 | 21 => price.delay(Duration::from_secs(2)),
                _ => price,
            }
        })
        .start()
        .await
        .unwrap();
    let engine = engine_with(
        Duration::from_secs(20),
        RenderSettings {
            max_settle,
            ..RenderSettings::default()
        },
    );
    let mut m = dynamic(server.url("/tea"));
    m.x_path = Some("//p[@id='price']".into());
    let late = engine.check(&m).await.unwrap();
    assert_eq!(late.value(), Some("Loading..."), "{late:?}");
    let values = values(&engine, &m, 20).await;
    let incomplete: Vec<(usize, &String)> = values
        .iter()
        .enumerate()
        .filter(|(_, v)| *v != "3.50 EUR")
        .map(|(i, v)| (i + 1, v))
        .collect();
    assert!(
        incomplete.is_empty(),
        "checks with another value: {incomplete:?}"
    );
    // 21 checks, 4 of them retried once.
    assert_eq!(server.hits("/price"), 25);
}

/// A list loaded a screen at a time as the page is scrolled to its end (3 screens), with the
/// loads failing (retried once, 1.5 s later) or taking 2 s on some requests: with `scrollPage`
/// every check stores all 45 items.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lazily_loaded_list_is_complete_on_every_check() {
    let Some(_serial) = browser_test().await else {
        return;
    };
    let page = r#"<!doctype html><h1>Items</h1><ul id=list></ul><script>
const list = document.getElementById('list');
let pages = 0, loading = false;
const more = retry => {
  loading = true;
  fetch('/items?page=' + (pages + 1))
    .then(r => { if (!r.ok) throw new Error('HTTP ' + r.status); return r.text(); })
    .then(() => {
      for (let i = 1; i <= 15; i++) {
        const li = document.createElement('li');
        li.style.height = '60px';
        li.textContent = 'item ' + (pages * 15 + i);
        list.appendChild(li);
      }
      pages++;
      loading = false;
    })
    .catch(() => { if (retry) setTimeout(() => more(false), 1500); else loading = false; });
};
more(true);
window.addEventListener('scroll', () => {
  const end = window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 50;
  if (end && !loading && pages < 3) more(true);
});
</script>"#;
    let server = FixtureServer::builder()
        .page("/items.html", page)
        .counted("/items", |n| match n {
            5 | 11 | 16 => Reply::new(503).body("busy"),
            2 | 9 | 17 => Reply::new(200).body("more").delay(Duration::from_secs(2)),
            _ => Reply::new(200).body("more"),
        })
        .start()
        .await
        .unwrap();
    let engine = engine(Duration::from_secs(10));
    let mut m = dynamic(server.url("/items.html"));
    m.x_path = Some("count(//li)".into());
    m.scroll_page = true;
    let counts = values(&engine, &m, 8).await;
    assert!(
        counts.iter().all(|c| c == "45"),
        "items per check: {counts:?}"
    );
    // 8 checks of 3 loads, 3 of them retried once.
    assert_eq!(server.hits("/items"), 27);
}

/// An endless list (a screen more on every scroll) stops growing the value at the maximum
/// height: scrolling ends once the document is that tall, with what was loaded until then.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_list_is_scrolled_to_the_maximum_height() {
    let Some(_serial) = browser_test().await else {
        return;
    };
    let page = r#"<!doctype html><body style="margin:0"><ul id=list style="margin:0"></ul><script>
const list = document.getElementById('list');
let n = 0;
const more = () => fetch('/more').then(r => r.text()).then(() => {
  for (let i = 0; i < 10; i++) {
    const li = document.createElement('li'); li.style.height = '100px'; li.textContent = 'item ' + (++n);
    list.appendChild(li);
  }
});
more();
window.addEventListener('scroll', more);
</script>"#;
    let server = FixtureServer::builder()
        .page("/endless", page)
        .page("/more", "more")
        .start()
        .await
        .unwrap();
    let engine = engine_with(
        Duration::from_secs(10),
        RenderSettings {
            max_scroll_height: 3000.0,
            ..RenderSettings::default()
        },
    );
    let mut m = dynamic(server.url("/endless"));
    m.x_path = Some("count(//li)".into());
    m.scroll_page = true;
    for _ in 0..2 {
        let outcome = engine.check(&m).await.unwrap();
        // 1,000 px a load: after the second scroll the page is 3,000 px tall, the maximum.
        assert_eq!(outcome.value(), Some("30"), "{outcome:?}");
    }
}

/// The headless shell is preferred when installed; the full Chromium must work as well.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_full_chromium_renders_too() {
    let Some(_serial) = browser_test().await else {
        return;
    };
    let Some(full) = wachet::testing::full_chromium_or_skip() else {
        return;
    };
    let server = FixtureServer::builder()
        .page("/list", JS_LIST)
        .page("/popups", "<p>popups</p><script>for (let i = 0; i < 100; i++) { window.open('/popups'); }</script>")
        .start()
        .await
        .unwrap();
    let engine = Engine::builder()
        .allow_private_networks(true)
        .total_timeout(Duration::from_secs(10))
        .chrome_path(full)
        .build()
        .unwrap();
    let mut m = dynamic(server.url("/list"));
    m.x_path = Some("//li".into());
    let outcome = engine.check(&m).await.unwrap();
    assert_eq!(
        outcome.value(),
        Some("item 1\nitem 2\nitem 3"),
        "{outcome:?}"
    );
    let popups = engine.check(&dynamic(server.url("/popups"))).await.unwrap();
    assert_eq!(popups.value(), Some("popups"), "{popups:?}");
    assert!(server.hits("/popups") < 10, "{}", server.hits("/popups"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scrolling_loads_more_items() {
    let Some(_serial) = browser_test().await else {
        return;
    };
    let server = FixtureServer::builder()
        .page("/list", JS_LIST)
        .start()
        .await
        .unwrap();
    let engine = engine(Duration::from_secs(10));
    let mut m = dynamic(server.url("/list"));
    m.x_path = Some("count(//li)".into());
    let without = engine.check(&m).await.unwrap();
    m.scroll_page = true;
    let with = engine.check(&m).await.unwrap();
    let count = |o: &wachet::CheckOutcome| o.value().unwrap_or("0").parse::<u32>().unwrap();
    assert_eq!(count(&without), 3);
    // The page stops adding items at 30: scrolling goes on until the page stops growing.
    assert_eq!(count(&with), 30, "{with:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_monitors_request_reaches_the_server_and_assets_are_blocked() {
    let Some(_serial) = browser_test().await else {
        return;
    };
    let server = FixtureServer::builder()
        .page(
            "/form",
            "<p>posted</p><img src=/pic.png><script src=/app.js></script>",
        )
        .reply(
            "/pic.png",
            Reply::new(200)
                .header("content-type", "image/png")
                .body("png"),
        )
        .reply(
            "/app.js",
            Reply::new(200)
                .header("content-type", "text/javascript")
                .body("1;"),
        )
        .start()
        .await
        .unwrap();
    let mut m = dynamic(server.url("/form"));
    m.method = Some("POST".into());
    m.body = Some("a=1&b=2".into());
    m.headers = Some(vec![
        HeaderPair::new("X-Wachet-Test", "yes"),
        HeaderPair::new("Content-Type", "application/x-www-form-urlencoded"),
    ]);
    let outcome = engine(Duration::from_secs(10)).check(&m).await.unwrap();
    assert_eq!(outcome.value(), Some("posted"), "{outcome:?}");
    let requests = server.requests();
    let main = requests.iter().find(|r| r.path == "/form").unwrap();
    assert_eq!(main.method, "POST");
    assert_eq!(&main.body[..], b"a=1&b=2");
    assert_eq!(main.header("x-wachet-test"), Some("yes"));
    assert_eq!(server.hits("/app.js"), 1, "scripts load");
    assert_eq!(server.hits("/pic.png"), 0, "images are not downloaded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_errors_are_reported_like_the_static_path() {
    let Some(_serial) = browser_test().await else {
        return;
    };
    let server = FixtureServer::builder()
        .reply("/gone", Reply::html("<p>Not here</p>").status(404))
        .start()
        .await
        .unwrap();
    let engine = engine(Duration::from_secs(10));
    let mut m = dynamic(server.url("/gone"));
    let outcome = engine.check(&m).await.unwrap();
    assert_eq!(outcome.error(), Some("HTTP 404 Not Found"));
    assert_eq!(outcome.status, Some(404));
    m.ignore_invalid_pages = true;
    assert_eq!(engine.check(&m).await.unwrap().value(), Some("Not here"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_that_never_finishes_is_an_error_within_the_bound() {
    let Some(_serial) = browser_test().await else {
        return;
    };
    let server = FixtureServer::builder()
        .reply("/stall", Reply::html("<p>partial").never_finish())
        .page("/ok", "<p>fine</p>")
        .start()
        .await
        .unwrap();
    let engine = Engine::builder()
        .allow_private_networks(true)
        .total_timeout(Duration::from_secs(3))
        .build()
        .unwrap();
    let outcome = engine.check(&dynamic(server.url("/stall"))).await.unwrap();
    // The plain path's words.
    assert_eq!(outcome.error(), Some("timed out after 3 s"), "{outcome:?}");
    // The pool is healthy afterwards.
    let ok = engine.check(&dynamic(server.url("/ok"))).await.unwrap();
    assert_eq!(ok.value(), Some("fine"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_pages_give_errors_and_leave_the_pool_healthy() {
    let Some(_serial) = browser_test().await else {
        return;
    };
    let huge_dom = "<script>const b = document.body || document.documentElement; \
        const s = 'x'.repeat(1024 * 1024); for (let i = 0; i < 50; i++) { const p = document.createElement('p'); p.textContent = s; b.appendChild(p); }</script>";
    let server = FixtureServer::builder()
        .page("/loop", "<p>before</p><script>setTimeout(() => { while (true) {} }, 0)</script>")
        .page("/popups", "<p>popups</p><script>for (let i = 0; i < 1000; i++) { window.open('/popups'); } alert('hi'); alert('again'); confirm('sure?');</script>")
        .page("/huge", huge_dom)
        .page("/away", "<p>away</p><script>setTimeout(() => { location.href = '/away?' + Math.random(); }, 20)</script>")
        .page("/ok", "<p>fine</p>")
        .start()
        .await
        .unwrap();
    let engine = engine(Duration::from_secs(10));
    let loop_outcome = engine.check(&dynamic(server.url("/loop"))).await.unwrap();
    assert!(loop_outcome.error().is_some(), "{loop_outcome:?}");

    let popups = engine.check(&dynamic(server.url("/popups"))).await.unwrap();
    assert_eq!(popups.value(), Some("popups"), "{popups:?}");
    assert!(
        server.hits("/popups") < 10,
        "popups are blocked: {}",
        server.hits("/popups")
    );

    let huge = engine.check(&dynamic(server.url("/huge"))).await.unwrap();
    // The size cap, the render bound or the memory limit stops it, depending on how long
    // layout takes and how much memory it needs.
    let error = huge.error().unwrap_or_default();
    assert!(
        error.starts_with("the rendered page is larger than 10485760 bytes")
            || error.starts_with("timed out after")
            || (error.starts_with("the page used more than ") && error.ends_with(" MB of memory")),
        "{huge:?}"
    );

    let away = engine.check(&dynamic(server.url("/away"))).await.unwrap();
    assert!(
        away.value() == Some("away") || away.error().is_some(),
        "{away:?}"
    );

    let ok = engine.check(&dynamic(server.url("/ok"))).await.unwrap();
    assert_eq!(ok.value(), Some("fine"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn monitors_never_share_cookies() {
    let Some(_serial) = browser_test().await else {
        return;
    };
    let page = "<p id=c></p><script>document.getElementById('c').textContent = 'cookies:' + document.cookie; \
                document.cookie = 'seen=1; path=/'; localStorage.setItem('k', 'v');</script>";
    let server = FixtureServer::builder()
        .page("/a", page)
        .reply(
            "/b",
            Reply::html(page).header("set-cookie", "server=2; Path=/"),
        )
        .start()
        .await
        .unwrap();
    let engine = engine(Duration::from_secs(10));
    let mut a = dynamic(server.url("/a"));
    a.x_path = Some("//p".into());
    let mut b = dynamic(server.url("/b"));
    b.x_path = Some("//p".into());
    assert_eq!(
        engine.check(&b).await.unwrap().value(),
        Some("cookies:server=2")
    );
    assert_eq!(engine.check(&a).await.unwrap().value(), Some("cookies:"));
    assert_eq!(engine.check(&a).await.unwrap().value(), Some("cookies:"));
    // b's own later requests (its favicon) may carry b's cookies; a's never do.
    let requests = server.requests();
    let first_b = requests.iter().find(|r| r.path == "/b").unwrap();
    assert_eq!(first_b.header("cookie"), None);
    for r in requests.iter().filter(|r| r.path == "/a") {
        assert_eq!(r.header("cookie"), None, "a's request carried a cookie");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_network_policy_holds_for_every_request_of_the_page() {
    let Some(_serial) = browser_test().await else {
        return;
    };
    let inside = FixtureServer::builder()
        .ip(Ipv4Addr::new(127, 0, 0, 2))
        .page("/secret", "<p>secret</p>")
        .start()
        .await
        .unwrap();
    let secret = inside.url("/secret");
    let page = format!(
        "<p>outside</p><script src='{secret}?script'></script><iframe src='{secret}?frame'></iframe>\
         <script>fetch('{secret}?fetch').catch(() => {{}}); new Image().src = '{secret}?img';</script>"
    );
    let outside = FixtureServer::builder()
        .page("/page", page)
        .reply("/jump", Reply::redirect(secret.clone()))
        .start()
        .await
        .unwrap();
    let engine = Engine::builder()
        .allow_network("127.0.0.1/32".parse().unwrap())
        .total_timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let mut m = dynamic(outside.url("/page"));
    m.x_path = Some("//p".into());
    let outcome = engine.check(&m).await.unwrap();
    assert_eq!(outcome.value(), Some("outside"), "{outcome:?}");
    let redirected = engine.check(&dynamic(outside.url("/jump"))).await.unwrap();
    let error = redirected.error().unwrap_or_default();
    assert!(
        error.contains("refused to connect to 127.0.0.2"),
        "{redirected:?}"
    );
    assert!(inside.requests().is_empty(), "{:?}", inside.requests());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_page_app_is_crawled_from_its_rendered_links() {
    let Some(_serial) = browser_test().await else {
        return;
    };
    let shell = |name: &str, links: &[&str]| {
        let anchors: String = links
            .iter()
            .map(|l| format!("const a{0} = document.createElement('a'); a{0}.href = '/{1}'; a{0}.textContent = '{1}'; document.body.appendChild(a{0});", l.replace('-', "_"), l))
            .collect();
        format!(
            "<title>{name}</title><h1>{name}</h1><script>setTimeout(() => {{ {anchors} }}, 100);</script>"
        )
    };
    let server = FixtureServer::builder()
        .page("/", shell("home", &["one", "two"]))
        .page("/one", shell("one", &["three"]))
        .page("/two", shell("two", &["one"]))
        .page("/three", shell("three", &[]))
        .start()
        .await
        .unwrap();
    let mut m = dynamic(server.url("/"));
    m.job_type = ClientJobType::Portal;
    m.crawling_depth = Some(2);
    m.x_path = Some("//h1".into());
    let engine = engine(Duration::from_secs(10));
    let mut stream = engine.crawl(&m).unwrap();
    let mut found = Vec::new();
    while let Some(event) = stream.next().await {
        if let wachet::CrawlEvent::Page { page, .. } = event {
            found.push((page.url.clone(), page.depth, page.data.raw.clone()));
        }
    }
    found.sort();
    let base = server.url("");
    assert_eq!(
        found,
        vec![
            (format!("{base}/"), 0, Some("home".to_string())),
            (format!("{base}/one"), 1, Some("one".to_string())),
            (format!("{base}/three"), 2, Some("three".to_string())),
            (format!("{base}/two"), 1, Some("two".to_string())),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_browser_is_relaunched_and_the_check_succeeds() {
    let Some(_serial) = browser_test().await else {
        return;
    };
    let server = FixtureServer::builder()
        .page("/warm", "<p>warm</p>")
        .reply(
            "/slow",
            Reply::html("<p>slow but fine</p>").delay(Duration::from_secs(2)),
        )
        .start()
        .await
        .unwrap();
    let engine = engine(Duration::from_secs(10));
    engine.check(&dynamic(server.url("/warm"))).await.unwrap();
    let first = engine.renderer().browser_pid().expect("a browser runs");
    let checking = {
        let engine = engine.clone();
        let m = dynamic(server.url("/slow"));
        tokio::spawn(async move { engine.check(&m).await })
    };
    // Kill it while the check waits on the slow page.
    while server.hits("/slow") == 0 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(first).unwrap()),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let outcome = checking.await.unwrap().unwrap();
    assert_eq!(outcome.value(), Some("slow but fine"), "{outcome:?}");
    let second = engine.renderer().browser_pid().expect("relaunched");
    assert_ne!(first, second);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_chromium_process_or_profile_outlives_the_engine() {
    let Some(_serial) = browser_test().await else {
        return;
    };
    let server = FixtureServer::builder()
        .page("/", "<p>x</p>")
        .start()
        .await
        .unwrap();
    let engine = engine(Duration::from_secs(10));
    engine.check(&dynamic(server.url("/"))).await.unwrap();
    let pid = engine.renderer().browser_pid().expect("a browser runs");
    let group: Vec<u32> = processes_in_group(pid);
    assert!(
        group.len() > 1,
        "Chromium runs several processes: {group:?}"
    );
    let profile = profile_dir(pid).expect("the browser has a profile");
    drop(engine);
    let mut left = group.clone();
    // The browser may go a moment after the engine: the check's browser context is disposed
    // in the background, and the last handle on the browser (which kills it and then removes
    // the profile) can be that task's.
    for _ in 0..100 {
        left.retain(|p| is_running(*p));
        if left.is_empty() && !std::path::Path::new(&profile).exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(left.is_empty(), "still running: {left:?}");
    assert!(
        !std::path::Path::new(&profile).exists(),
        "{profile} is left"
    );
}

/// Processes (not zombies) whose process group is `pgid`.
fn processes_in_group(pgid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Some((state, group)) = stat(pid)
            && group == pgid
            && state != 'Z'
        {
            out.push(pid);
        }
    }
    out
}

fn is_running(pid: u32) -> bool {
    matches!(stat(pid), Some((state, _)) if state != 'Z' && state != 'X')
}

/// State and process group from /proc/PID/stat.
fn stat(pid: u32) -> Option<(char, u32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = text.rsplit_once(')')?.1;
    let mut fields = after.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, pgrp))
}

fn profile_dir(pid: u32) -> Option<String> {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    String::from_utf8_lossy(&cmdline)
        .split('\0')
        .find_map(|a| a.strip_prefix("--user-data-dir=").map(str::to_string))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_browser_is_closed_and_started_again_on_demand() {
    let Some(_serial) = browser_test().await else {
        return;
    };
    let server = FixtureServer::builder()
        .page("/", "<p>x</p>")
        .start()
        .await
        .unwrap();
    let settings = wachet::render::RenderSettings {
        idle_shutdown: Duration::from_millis(500),
        ..Default::default()
    };
    let engine = Engine::builder()
        .allow_private_networks(true)
        .render_settings(settings)
        .build()
        .unwrap();
    engine.check(&dynamic(server.url("/"))).await.unwrap();
    let pid = engine.renderer().browser_pid().expect("a browser runs");
    let mut closed = false;
    for _ in 0..100 {
        if engine.renderer().browser_pid().is_none() && !is_running(pid) {
            closed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(closed, "the idle browser {pid} still runs");
    let again = engine.check(&dynamic(server.url("/"))).await.unwrap();
    assert_eq!(again.value(), Some("x"));
}

#[tokio::test]
async fn a_missing_browser_is_a_clear_error() {
    let server = FixtureServer::builder()
        .page("/", "<p>x</p>")
        .start()
        .await
        .unwrap();
    let engine = Engine::builder()
        .allow_private_networks(true)
        .chrome_path("/nonexistent/chromium")
        .build()
        .unwrap();
    let outcome = engine.check(&dynamic(server.url("/"))).await.unwrap();
    assert_eq!(
        outcome.error(),
        Some("the browser failed: the configured Chromium /nonexistent/chromium does not exist")
    );
    assert!(server.requests().is_empty());
}

/// A monitor's `proxies` location sends its traffic through that location's proxy, on the plain
/// path and on the browser path alike. The target address has nothing listening: only the
/// proxy (a fixture server answering absolute-form requests) can answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_location_proxy_carries_both_paths() {
    let Some(_serial) = browser_test().await else {
        return;
    };
    let proxy = FixtureServer::builder()
        .page("/page", "<p>through the gb proxy</p>")
        .start()
        .await
        .unwrap();
    let engine = Engine::builder()
        .allow_private_networks(true)
        .total_timeout(Duration::from_secs(10))
        .proxy("gb", proxy.url(""))
        .build()
        .unwrap();
    // A port that was free a moment ago: nothing listens there.
    let closed = std::net::TcpListener::bind("127.0.0.3:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let mut m = Monitor::new(format!("http://{closed}/page"));
    m.proxies = Some(vec![wachet::model::Proxy {
        location: Some("gb".into()),
    }]);
    for dynamic in [false, true] {
        m.dynamic_content = dynamic;
        let outcome = engine.check(&m).await.unwrap();
        assert_eq!(
            outcome.value(),
            Some("through the gb proxy"),
            "dynamic {dynamic}: {outcome:?}"
        );
    }
    assert_eq!(proxy.hits("/page"), 2);
    // Without the location the same address answers nothing.
    m.proxies = None;
    for dynamic in [false, true] {
        m.dynamic_content = dynamic;
        let outcome = engine.check(&m).await.unwrap();
        assert!(outcome.error().is_some(), "dynamic {dynamic}: {outcome:?}");
    }
}

/// Renders beyond the tabs wait in a bounded queue; past its bound a check fails at once with a
/// clear error, and the others still render.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renders_beyond_the_queue_bound_fail_at_once() {
    let Some(_serial) = browser_test().await else {
        return;
    };
    let server = FixtureServer::builder()
        .reply(
            "/slow",
            Reply::html("<p>slow</p>").delay(Duration::from_millis(500)),
        )
        .start()
        .await
        .unwrap();
    let engine = Engine::builder()
        .allow_private_networks(true)
        .total_timeout(Duration::from_secs(10))
        .render_settings(RenderSettings {
            tabs: 1,
            max_waiting: 1,
            ..RenderSettings::default()
        })
        .build()
        .unwrap();
    let m = dynamic(server.url("/slow"));
    let (a, b, c) = tokio::join!(engine.check(&m), engine.check(&m), engine.check(&m));
    let outcomes = [a.unwrap(), b.unwrap(), c.unwrap()];
    let rendered = outcomes
        .iter()
        .filter(|o| o.value() == Some("slow"))
        .count();
    let busy: Vec<_> = outcomes.iter().filter_map(|o| o.error()).collect();
    assert_eq!(rendered, 2, "{outcomes:?}");
    assert_eq!(
        busy,
        ["the browser is busy: 1 renders are already waiting"],
        "{outcomes:?}"
    );
}

/// The renderers below the engine's browser.
fn renderers(engine: &Engine) -> Vec<i32> {
    let Some(root) = engine.renderer().browser_pid() else {
        return Vec::new();
    };
    wachet::testing::memory::process_tree(root)
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains("--type=renderer"))
        })
        .filter_map(|pid| i32::try_from(pid).ok())
        .collect()
}

/// A renderer that crashes in the middle of a check (killed, as the kernel's OOM killer or a
/// bug would end it) is replaced and the render retried once, which succeeds; the checks after
/// it are healthy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_tab_is_replaced_and_the_check_retried() {
    let Some(_serial) = browser_test().await else {
        return;
    };
    let server = FixtureServer::builder()
        .page(
            "/crash",
            r#"<!doctype html><p>before</p><script src="/slow.js"></script>"#,
        )
        .reply(
            "/slow.js",
            Reply::new(200)
                .header("content-type", "text/javascript")
                .body("document.body.append('after')")
                .delay(Duration::from_secs(2)),
        )
        .page("/ok", "<p>fine</p>")
        .start()
        .await
        .unwrap();
    let engine = engine(Duration::from_secs(10));
    assert_eq!(
        engine
            .check(&dynamic(server.url("/ok")))
            .await
            .unwrap()
            .value(),
        Some("fine")
    );
    let check = tokio::spawn({
        let engine = engine.clone();
        let url = server.url("/crash");
        async move { engine.check(&dynamic(url)).await.unwrap() }
    });
    // Mid-render: the page waits for its script.
    let began = std::time::Instant::now();
    while server.hits("/slow.js") == 0 {
        assert!(
            began.elapsed() < Duration::from_secs(20),
            "the render did not begin"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let killed = renderers(&engine);
    assert!(!killed.is_empty(), "no renderer found");
    for pid in &killed {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(*pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    let outcome = check.await.unwrap();
    assert!(
        outcome.value().is_some_and(|v| v.contains("after")),
        "{outcome:?}"
    );
    assert_eq!(server.hits("/crash"), 2, "retried once");
    for _ in 0..3 {
        let ok = engine.check(&dynamic(server.url("/ok"))).await.unwrap();
        assert_eq!(ok.value(), Some("fine"), "{ok:?}");
    }
}

/// A frontend's gate that lets no render through, and says when one came to it.
#[derive(Debug, Default)]
struct ClosedGate {
    entered: std::sync::atomic::AtomicBool,
}

#[async_trait::async_trait]
impl wachet::TabGate for ClosedGate {
    async fn enter(&self) -> Result<wachet::TabPass, wachet::TabRefused> {
        self.entered
            .store(true, std::sync::atomic::Ordering::Release);
        std::future::pending().await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_render_waiting_at_its_gate_holds_no_slot_of_its_host() {
    let Some(_serial) = browser_test().await else {
        return;
    };
    let server = FixtureServer::builder()
        .page("/a", "<html><body><p>a</p></body></html>")
        .page("/b", "<html><body><p>b</p></body></html>")
        .start()
        .await
        .unwrap();
    let total = Duration::from_secs(10);
    let engine = Engine::builder()
        .allow_private_networks(true)
        .total_timeout(total)
        .per_host_concurrency(1)
        .build()
        .unwrap();
    // One person's render of the host waits at its gate (their tabs are all held)...
    let gate = std::sync::Arc::new(ClosedGate::default());
    let waiting = engine
        .prepare(&dynamic(server.url("/a")))
        .unwrap()
        .with_tabs(gate.clone());
    let waiting = tokio::spawn({
        let engine = engine.clone();
        async move { engine.check_prepared(&waiting).await }
    });
    let mut polls = 0;
    while !gate.entered.load(std::sync::atomic::Ordering::Acquire) {
        polls += 1;
        assert!(polls < 500, "the render never came to its gate");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // ...while another's render of the same host, its one slot, goes through at once.
    let started = std::time::Instant::now();
    let other = engine.check(&dynamic(server.url("/b"))).await.unwrap();
    assert_eq!(other.value(), Some("b"), "{other:?}");
    assert!(started.elapsed() < total / 2, "{:?}", started.elapsed());
    waiting.abort();
}
