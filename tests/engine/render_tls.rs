//! https through the engine's egress proxy, against a real headless Chromium and a real TLS
//! server on loopback (a TLS front with a certificate of a test CA, relaying to a fixture
//! server): the proxy intercepts the browser's TLS, so an https gzip bomb or 50 MB page is cut
//! at the body cap with the plain path's error, a normal page renders (its wss websocket
//! too), and a server whose
//! certificate is not trusted fails the check, as on the plain path, which trusts the same
//! extra root ([`wachet::EngineBuilder::root_certificate`]).
//!
//! The browser tests need Chromium. Without it they fail when `CI` is set (CI must install it)
//! and are skipped, loudly, on a developer machine.

use crate::common::dynamic;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use wachet::testing::FixtureServer;
use wachet::testing::browser_test;
use wachet::testing::hostile::{Hostile, HostileServer};
use wachet::testing::memory::PeakPss;
use wachet::testing::tls::TlsFront;
use wachet::{Checker, Engine, Monitor};

/// The bound on the browser's tree while a hostile page renders.
const MAX_TREE: u64 = 1024 * 1024 * 1024;

/// The bound on the time of one hostile check (a few seconds; unbounded it was 30 s and more).
const MAX_TIME: Duration = Duration::from_secs(20);

const TOO_LARGE: &str = "the response is larger than 10485760 bytes";

fn engine_trusting(pem: Option<&str>) -> Engine {
    let mut builder = Engine::builder().allow_private_networks(true);
    if let Some(pem) = pem {
        builder = builder.root_certificate(pem);
    }
    builder.build().unwrap()
}

/// Checks `monitor`, sampling the PSS of the engine's Chromium tree every 50 ms meanwhile:
/// the outcome's value or error, the time taken and the peak.
async fn watched(engine: &Engine, monitor: &Monitor) -> (Result<String, String>, Duration, u64) {
    let memory = PeakPss::watch(engine.renderer());
    let began = Instant::now();
    let outcome = engine.check(monitor).await.unwrap();
    let took = began.elapsed();
    let peak = memory.finish();
    let result = match (outcome.value(), outcome.error()) {
        (Some(v), _) => Ok(v.to_string()),
        (_, e) => Err(e.unwrap_or_default().to_string()),
    };
    (result, took, peak)
}

/// An https hostile case fails with `expected` within the bounds, and the next https check of
/// the same engine renders.
async fn hostile_over_https(case: Hostile, path: &str, expected: &str) {
    let Some(_serial) = browser_test().await else {
        return;
    };
    let server = HostileServer::start().await.unwrap();
    let front = TlsFront::start(server.server().addr()).await.unwrap();
    let engine = engine_trusting(Some(front.ca_pem()));
    // Start the browser first, so the whole check is watched.
    let warm = engine.check(&dynamic(front.url("/ok"))).await.unwrap();
    assert_eq!(warm.value(), Some("fine"), "{warm:?}");

    let (result, took, peak) = watched(&engine, &dynamic(front.url(path))).await;
    eprintln!(
        "https {case:?} at {path}: {:?} in {:.1} s, Chromium tree peak {} MiB (PSS)",
        result
            .as_ref()
            .map(|v| v.chars().take(80).collect::<String>()),
        took.as_secs_f64(),
        peak / (1024 * 1024)
    );
    assert_eq!(result, Err(expected.to_string()), "{case:?} at {path}");
    assert!(took < MAX_TIME, "{case:?} took {took:?}");
    assert!(
        peak < MAX_TREE,
        "{case:?}: the Chromium tree reached {} MiB",
        peak / (1024 * 1024)
    );
    let next = engine.check(&dynamic(front.url("/ok"))).await.unwrap();
    assert_eq!(next.value(), Some("fine"), "after {case:?}: {next:?}");
    engine.renderer().shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_https_gzip_bomb_is_cut_at_the_body_cap() {
    hostile_over_https(Hostile::GzipBomb, Hostile::GzipBomb.path(), TOO_LARGE).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_https_huge_page_is_cut_at_the_body_cap() {
    hostile_over_https(Hostile::HugePage, Hostile::HugePage.path(), TOO_LARGE).await;
}

/// A page that fetches a gzip bomb from its script fails as the same page does over http.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gzip_bomb_fetched_by_an_https_page_fails_it_as_over_http() {
    let Some(_serial) = browser_test().await else {
        return;
    };
    let server = FixtureServer::builder()
        .page(
            "/fetches",
            "<!doctype html><p id=n>waiting</p><script>\
             fetch('/bomb').then(r => r.text())\
               .then(t => { document.getElementById('n').textContent = 'got ' + t.length; })\
               .catch(e => { document.getElementById('n').textContent = 'failed'; });\
             </script>",
        )
        .reply("/bomb", Hostile::GzipBomb.reply())
        .start()
        .await
        .unwrap();
    let front = TlsFront::start(server.addr()).await.unwrap();
    let engine = engine_trusting(Some(front.ca_pem()));
    let mut monitor = dynamic(server.url("/fetches"));
    monitor.x_path = Some("//p[@id='n']".into());
    let (over_http, _, _) = watched(&engine, &monitor).await;
    monitor.url = Some(front.url("/fetches"));
    let (over_https, took, peak) = watched(&engine, &monitor).await;
    eprintln!(
        "a fetched bomb: over http {over_http:?}, over https {over_https:?} in {:.1} s, \
         Chromium tree peak {} MiB (PSS)",
        took.as_secs_f64(),
        peak / (1024 * 1024)
    );
    assert_eq!(over_http, Err(TOO_LARGE.to_string()));
    assert_eq!(over_https, over_http);
    assert!(took < MAX_TIME, "took {took:?}");
    assert!(
        peak < MAX_TREE,
        "the tree reached {} MiB",
        peak / (1024 * 1024)
    );
    engine.renderer().shutdown().await;
}

/// A normal https page renders, with what its script fetched (over the same interception).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_https_page_renders_with_what_its_script_fetched() {
    let Some(_serial) = browser_test().await else {
        return;
    };
    let server = FixtureServer::builder()
        .page(
            "/shop",
            "<!doctype html><h1>Shop</h1><p id=price>loading</p><script>\
             fetch('/price.json').then(r => r.json())\
               .then(j => { document.getElementById('price').textContent = j.price; });\
             </script>",
        )
        .reply(
            "/price.json",
            wachet::testing::Reply::new(200)
                .header("content-type", "application/json")
                .body(r#"{"price": "12.50 EUR"}"#),
        )
        .start()
        .await
        .unwrap();
    let front = TlsFront::start(server.addr()).await.unwrap();
    let engine = engine_trusting(Some(front.ca_pem()));
    let mut monitor = dynamic(front.url("/shop"));
    monitor.x_path = Some("//p[@id='price']".into());
    let outcome = engine.check(&monitor).await.unwrap();
    assert_eq!(outcome.value(), Some("12.50 EUR"), "{outcome:?}");
    assert_eq!(
        outcome.final_url.as_deref(),
        Some(front.url("/shop").as_str())
    );
    assert_eq!(server.hits("/price.json"), 1);
    engine.renderer().shutdown().await;
}

/// Each rendered check's TLS toward a site is its own: three checks of one https page (one
/// connection each: the page loads nothing more) never resume each other's TLS session, which
/// would let a site link them (and, through a location's proxy, link the location to another).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rendered_checks_never_resume_each_others_tls_sessions() {
    let Some(_serial) = browser_test().await else {
        return;
    };
    let server = FixtureServer::builder()
        .page("/a", "<!doctype html><p>first</p>")
        .start()
        .await
        .unwrap();
    let front = TlsFront::start(server.addr()).await.unwrap();
    let engine = engine_trusting(Some(front.ca_pem()));
    for _ in 0..3 {
        let outcome = engine.check(&dynamic(front.url("/a"))).await.unwrap();
        assert_eq!(outcome.value(), Some("first"), "{outcome:?}");
    }
    assert!(front.handshakes() >= 3, "{} handshakes", front.handshakes());
    assert_eq!(front.resumed(), 0, "of {} handshakes", front.handshakes());
    engine.renderer().shutdown().await;
}

/// A server whose certificate the engine does not trust: the rendered check fails naming the
/// certificate problem, as the plain check does, and the page is never requested.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_https_server_fails_the_render_with_a_certificate_error() {
    let Some(_serial) = browser_test().await else {
        return;
    };
    let server = FixtureServer::builder()
        .page("/secret", "<p>should not render</p>")
        .start()
        .await
        .unwrap();
    let front = TlsFront::start(server.addr()).await.unwrap();
    let engine = engine_trusting(None);
    let rendered = engine.check(&dynamic(front.url("/secret"))).await.unwrap();
    let plain = engine
        .check(&Monitor::new(front.url("/secret")))
        .await
        .unwrap();
    eprintln!(
        "rendered: {:?}; plain: {:?}",
        rendered.error(),
        plain.error()
    );
    let error = rendered.error().unwrap_or_default();
    assert!(rendered.value().is_none(), "{rendered:?}");
    assert!(
        error.contains("127.0.0.1") && error.contains("certificate"),
        "{error}"
    );
    assert!(plain.error().unwrap_or_default().contains("certificate"));
    assert_eq!(server.hits("/secret"), 0);
    engine.renderer().shutdown().await;
}

/// The plain fetcher trusts the extra root, and only with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plain_fetcher_trusts_the_given_root_certificate() {
    let server = FixtureServer::builder()
        .page("/stock", "<p id=stock>In stock</p>")
        .start()
        .await
        .unwrap();
    let front = TlsFront::start(server.addr()).await.unwrap();
    let mut monitor = Monitor::new(front.url("/stock"));
    monitor.x_path = Some("//p[@id='stock']".into());
    let trusting = engine_trusting(Some(front.ca_pem()));
    let outcome = trusting.check(&monitor).await.unwrap();
    assert_eq!(outcome.value(), Some("In stock"), "{outcome:?}");

    let untrusting = engine_trusting(None);
    let outcome = untrusting.check(&monitor).await.unwrap();
    let error = outcome.error().unwrap_or_default();
    assert!(
        error.starts_with("could not connect to 127.0.0.1") && error.contains("certificate"),
        "{error}"
    );
    assert_eq!(server.hits("/stock"), 1);
}

#[test]
fn a_root_certificate_that_is_not_pem_fails_the_build() {
    // The last is PEM, but what it holds is no certificate: the build reads it, though the
    // platform's roots wait for the first https request.
    for bad in [
        "",
        "not a certificate",
        "-----BEGIN CERTIFICATE-----\n!!\n",
        "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
    ] {
        let error = Engine::builder().root_certificate(bad).build().unwrap_err();
        assert!(
            error.to_string().starts_with("root certificate: "),
            "{error}"
        );
    }
}

/// Not a test: the time of rendered https checks, of a small page and of one whose script
/// fetches 20 resources, run by hand
/// (`cargo test -p wachet --test engine render_tls::measure -- --ignored --nocapture`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn measure_rendered_https_checks() {
    let Some(_serial) = browser_test().await else {
        return;
    };
    let mut builder = FixtureServer::builder()
        .page("/p", "<!doctype html><p id=v>small</p>")
        .page(
            "/many",
            "<!doctype html><p id=v>loading</p><script>\
             Promise.all(Array.from({length: 20}, (_, i) => fetch('/r' + i).then(r => r.text())))\
               .then(parts => { document.getElementById('v').textContent = parts.length; });\
             </script>",
        );
    for i in 0..20 {
        builder = builder.page(format!("/r{i}"), "x".repeat(2000));
    }
    let server = builder.start().await.unwrap();
    let front = TlsFront::start(server.addr()).await.unwrap();
    let engine = engine_trusting(Some(front.ca_pem()));
    for (path, value) in [("/p", "small"), ("/many", "20")] {
        let mut monitor = dynamic(front.url(path));
        monitor.x_path = Some("//p[@id='v']".into());
        let warm = engine.check(&monitor).await.unwrap();
        assert_eq!(warm.value(), Some(value), "{warm:?}");
        let handshakes = front.handshakes();
        let began = Instant::now();
        for _ in 0..20 {
            let outcome = engine.check(&monitor).await.unwrap();
            assert_eq!(outcome.value(), Some(value), "{outcome:?}");
        }
        let took = began.elapsed();
        eprintln!(
            "20 rendered https checks of {path}: {:.2} s, {:.1} ms a check, {:.1} TLS \
             connections to the server a check",
            took.as_secs_f64(),
            took.as_secs_f64() * 1000.0 / 20.0,
            (front.handshakes() - handshakes) as f64 / 20.0
        );
    }
    engine.renderer().shutdown().await;
}

/// A page over https whose script opens a websocket (wss, through the same interception) shows
/// what the server sent on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wss_websocket_of_an_https_page_works_through_the_interception() {
    let Some(_serial) = browser_test().await else {
        return;
    };
    let backend = WebSocketBackend::start().await;
    let front = TlsFront::start(backend.addr).await.unwrap();
    let engine = engine_trusting(Some(front.ca_pem()));
    let mut monitor = dynamic(front.url("/page"));
    monitor.x_path = Some("//p[@id='v']".into());
    let outcome = engine.check(&monitor).await.unwrap();
    assert_eq!(outcome.value(), Some("hello over wss"), "{outcome:?}");
    engine.renderer().shutdown().await;
}

/// A plain server of a page (`/page`) opening a websocket to `/ws`, which sends one message
/// and stays open.
struct WebSocketBackend {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl WebSocketBackend {
    async fn start() -> WebSocketBackend {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        // The render does not wait for websocket messages; a timer (which it waits for) holds
        // it until the message is in.
        const PAGE: &str = "<!doctype html><p id=v>waiting</p><script>\
            const ws = new WebSocket('wss://' + location.host + '/ws');\
            ws.onmessage = e => { document.getElementById('v').textContent = e.data; };\
            ws.onerror = () => { document.getElementById('v').textContent = 'failed'; };\
            setTimeout(() => {}, 900);\
            </script>";
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 4096];
                    loop {
                        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
                            match stream.read(&mut chunk).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                            }
                            continue;
                        };
                        let head = String::from_utf8_lossy(&buf[..end]).into_owned();
                        buf.drain(..end + 4);
                        let key = head.lines().find_map(|l| {
                            let (name, value) = l.split_once(':')?;
                            name.eq_ignore_ascii_case("sec-websocket-key")
                                .then(|| value.trim().to_string())
                        });
                        let Some(key) = key else {
                            let reply = format!(
                                "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\n\r\n{PAGE}",
                                PAGE.len()
                            );
                            if stream.write_all(reply.as_bytes()).await.is_err() {
                                return;
                            }
                            continue;
                        };
                        use base64::Engine as _;
                        use sha1::Digest as _;
                        let accept =
                            base64::engine::general_purpose::STANDARD.encode(sha1::Sha1::digest(
                                format!("{key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11").as_bytes(),
                            ));
                        let message = b"hello over wss";
                        let mut reply = format!(
                            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\
                             Connection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n"
                        )
                        .into_bytes();
                        reply.extend_from_slice(&[0x81, message.len() as u8]);
                        reply.extend_from_slice(message);
                        let _ = stream.write_all(&reply).await;
                        // Open until the client goes.
                        while matches!(stream.read(&mut chunk).await, Ok(n) if n > 0) {}
                        return;
                    }
                });
            }
        });
        WebSocketBackend { addr, task }
    }
}

impl Drop for WebSocketBackend {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A monitor's location proxy carries https on both paths: the engine's egress opens its
/// tunnel through the location's proxy (a CONNECT proxy here, which sends every tunnel to the
/// TLS front), then its TLS to the site inside it. The target port has nothing listening.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_location_proxy_carries_https_on_both_paths() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Some(_serial) = browser_test().await else {
        return;
    };
    let server = FixtureServer::builder()
        .page("/page", "<p>through the gb proxy</p>")
        .start()
        .await
        .unwrap();
    let front = TlsFront::start(server.addr()).await.unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let proxy_addr = listener.local_addr().unwrap();
    let tunnels = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let seen = tunnels.clone();
    let target = front.addr();
    let proxy = tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let seen = seen.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if !matches!(stream.read(&mut byte).await, Ok(1)) || head.len() > 8192 {
                        return;
                    }
                    head.push(byte[0]);
                }
                let line = String::from_utf8_lossy(&head)
                    .lines()
                    .next()
                    .unwrap_or("")
                    .to_string();
                seen.lock().unwrap().push(line);
                let Ok(mut upstream) = tokio::net::TcpStream::connect(target).await else {
                    return;
                };
                if stream
                    .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                    .await
                    .is_ok()
                {
                    let _ = tokio::io::copy_bidirectional(&mut stream, &mut upstream).await;
                }
            });
        }
    });
    let engine = Engine::builder()
        .allow_private_networks(true)
        .root_certificate(front.ca_pem())
        .proxy("gb", format!("http://{proxy_addr}"))
        .build()
        .unwrap();
    // A port that was free a moment ago: nothing listens there.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut m = Monitor::new(format!("https://localhost:{closed}/page"));
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
    assert_eq!(server.hits("/page"), 2);
    let tunnels = tunnels.lock().unwrap().clone();
    assert!(
        tunnels.len() >= 2
            && tunnels
                .iter()
                .all(|t| t.starts_with(&format!("CONNECT localhost:{closed} "))),
        "{tunnels:?}"
    );
    proxy.abort();
    engine.renderer().shutdown().await;
}

/// A render through a location's proxy (which resolves names itself and reaches anything)
/// reaches nothing inside: a redirect to a name only the proxy knows is never handed to it, and
/// one to a name resolving inside is refused, as on the plain path. 127.0.0.2 stands in for a
/// public host.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_render_through_a_location_proxy_reaches_nothing_inside() {
    use wachet::testing::Reply;
    use wachet::testing::proxy::ForwardProxy;
    let Some(_serial) = browser_test().await else {
        return;
    };
    let inside = FixtureServer::builder()
        .page("/secret", "<p>secret</p>")
        .start()
        .await
        .unwrap();
    let port = inside.addr().port();
    let outside = FixtureServer::builder()
        .ip(std::net::Ipv4Addr::new(127, 0, 0, 2))
        .page("/", "<p>outside</p>")
        .start()
        .await
        .unwrap();
    let proxy = ForwardProxy::builder()
        .alias("intranet.test", inside.addr())
        .start()
        .await
        .unwrap();
    let engine = Engine::builder()
        .allow_network("127.0.0.2/32".parse().unwrap())
        .proxy("us", proxy.url())
        .total_timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let mut m = Monitor::new(outside.url("/go"));
    m.dynamic_content = true;
    m.proxies = Some(vec![wachet::model::Proxy {
        location: Some("us".into()),
    }]);
    for (target, expected) in [
        (
            format!("http://intranet.test:{port}/secret"),
            "could not connect to intranet.test: the name does not resolve here",
        ),
        (
            format!("https://intranet.test:{port}/secret"),
            "could not connect to intranet.test: the name does not resolve here",
        ),
        (
            format!("http://localhost:{port}/secret"),
            "refused to connect to localhost",
        ),
    ] {
        outside.set("/go", Reply::redirect(target.clone()));
        let outcome = engine.check(&m).await.unwrap();
        let error = outcome.error().unwrap_or_default();
        assert!(error.contains(expected), "{target}: {outcome:?}");
    }
    assert_eq!(inside.requests().len(), 0, "{:?}", proxy.requests());
    assert!(
        proxy.requests().iter().all(|l| !l.contains("intranet")),
        "{:?}",
        proxy.requests()
    );
    // The public stand-in itself renders through the proxy.
    m.url = Some(outside.url("/"));
    let outcome = engine.check(&m).await.unwrap();
    assert_eq!(outcome.value(), Some("outside"), "{outcome:?}");
    engine.renderer().shutdown().await;
}

/// https through a location's proxy tunnels to the address the policy checked, on both paths:
/// the proxy hears `CONNECT 127.0.0.1:PORT`, never the name, so its own DNS (here it resolves
/// `localhost` to another server, as an internal zone at the proxy's site or a rebound name
/// would) cannot send the tunnel elsewhere. TLS still names the host and is verified.
/// `localhost` stands in for a public name (the engine allows only loopback's addresses).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_through_a_location_proxy_tunnels_to_the_checked_address() {
    use wachet::testing::proxy::ForwardProxy;
    let Some(_serial) = browser_test().await else {
        return;
    };
    let server = FixtureServer::builder()
        .page("/page", "<p>the checked address</p>")
        .start()
        .await
        .unwrap();
    let front = TlsFront::start(server.addr()).await.unwrap();
    let elsewhere = TlsFront::start(server.addr()).await.unwrap();
    let proxy = ForwardProxy::builder()
        .alias("localhost", elsewhere.addr())
        .start()
        .await
        .unwrap();
    let engine = Engine::builder()
        .allow_network("127.0.0.1/32".parse().unwrap())
        .allow_network("::1/128".parse().unwrap())
        .root_certificate(front.ca_pem())
        .proxy("us", proxy.url())
        .build()
        .unwrap();
    let port = front.addr().port();
    let mut m = Monitor::new(format!("https://localhost:{port}/page"));
    m.proxies = Some(vec![wachet::model::Proxy {
        location: Some("us".into()),
    }]);
    for dynamic in [false, true] {
        m.dynamic_content = dynamic;
        let outcome = engine.check(&m).await.unwrap();
        assert_eq!(
            outcome.value(),
            Some("the checked address"),
            "dynamic {dynamic}: {outcome:?}"
        );
    }
    let lines = proxy.requests();
    assert!(
        lines.len() >= 2
            && lines.iter().all(|l| {
                l == &format!("CONNECT 127.0.0.1:{port} HTTP/1.1")
                    || l == &format!("CONNECT [::1]:{port} HTTP/1.1")
            }),
        "{lines:?}"
    );
    assert_eq!(elsewhere.handshakes(), 0);
    engine.renderer().shutdown().await;
}
