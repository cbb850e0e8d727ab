//! Every kind of location proxy the engine accepts (`http://`, `https://`, `socks5://`,
//! `socks5h://`, with or without credentials) carries a monitor's traffic on both paths, plain
//! and rendered, http and https alike, and https always to the address the network policy
//! checked. Real proxies on loopback (a forwarding HTTP proxy, the same behind TLS, a SOCKS5
//! proxy), a real TLS server, and a real headless Chromium.
//!
//! The rendered half needs Chromium: without it the test fails when `CI` is set and is
//! skipped, loudly, on a developer machine.

use wachet::testing::FixtureServer;
use wachet::testing::browser_test;
use wachet::testing::proxy::ForwardProxy;
use wachet::testing::socks::SocksProxy;
use wachet::testing::tls::TlsFront;
use wachet::{Checker, Engine, Monitor};

const USER: &str = "ann";
/// A password with characters a URL must escape.
const PASSWORD: &str = "p@ss word";
const PASSWORD_IN_URL: &str = "p%40ss%20word";

/// The proxies of one kind's test, kept alive while it runs.
struct Proxies {
    url: String,
    http: Option<ForwardProxy>,
    socks: Option<SocksProxy>,
    front: Option<TlsFront>,
}

impl Proxies {
    /// What the proxy was asked for: request lines of an HTTP proxy, targets of a SOCKS one.
    fn asked(&self) -> Vec<String> {
        match (&self.http, &self.socks) {
            (Some(http), _) => http.requests(),
            (_, Some(socks)) => socks.targets(),
            _ => Vec::new(),
        }
    }
}

async fn start(kind: &str, password: &str) -> Proxies {
    let credentials = format!("{USER}:{password}@");
    match kind {
        "http" | "https" => {
            let http = ForwardProxy::builder()
                .credentials(USER, PASSWORD)
                .start()
                .await
                .unwrap();
            let addr: std::net::SocketAddr = http.url()["http://".len()..].parse().unwrap();
            if kind == "http" {
                Proxies {
                    url: format!("http://{credentials}{addr}"),
                    http: Some(http),
                    socks: None,
                    front: None,
                }
            } else {
                let front = TlsFront::start(addr).await.unwrap();
                Proxies {
                    url: format!("https://{credentials}localhost:{}", front.addr().port()),
                    http: Some(http),
                    socks: None,
                    front: Some(front),
                }
            }
        }
        "socks5" => {
            let socks = SocksProxy::builder()
                .credentials(USER, PASSWORD)
                .start()
                .await
                .unwrap();
            Proxies {
                url: socks.url("socks5", Some((USER, password))),
                http: None,
                socks: Some(socks),
                front: None,
            }
        }
        _ => {
            let socks = SocksProxy::builder().start().await.unwrap();
            Proxies {
                url: socks.url("socks5h", None),
                http: None,
                socks: Some(socks),
                front: None,
            }
        }
    }
}

/// An engine allowing only loopback (a restricting policy, under which https is pinned to the
/// checked address) or, when `allow_all`, every address; trusting the site's and the proxy's
/// test authorities, with `proxies` as location `us`.
fn engine(site: &TlsFront, proxies: &Proxies, allow_all: bool) -> Engine {
    let builder = if allow_all {
        Engine::builder().allow_private_networks(true)
    } else {
        Engine::builder()
            .allow_network("127.0.0.1/32".parse().unwrap())
            .allow_network("::1/128".parse().unwrap())
    };
    let mut builder = builder
        .root_certificate(site.ca_pem())
        .proxy("us", proxies.url.clone());
    if let Some(front) = &proxies.front {
        builder = builder.root_certificate(front.ca_pem());
    }
    builder.build().unwrap()
}

fn through_us(url: String, dynamic: bool) -> Monitor {
    let mut m = Monitor::new(url);
    m.dynamic_content = dynamic;
    m.proxies = Some(vec![wachet::model::Proxy {
        location: Some("us".into()),
    }]);
    m
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_kind_of_location_proxy_carries_plain_and_rendered_checks() {
    every_kind_carries_both_paths(false).await;
}

/// Under an allow-all policy nothing needs pinning (an HTTP or `socks5h` proxy resolves the
/// names it is given), and every kind of proxy still carries both paths.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_kind_of_location_proxy_carries_checks_under_an_allow_all_policy() {
    every_kind_carries_both_paths(true).await;
}

/// Checks a page over http and https, plain and rendered, through each kind of proxy, and
/// that the proxy carried them; under a restricting policy, that https went to the checked
/// address and never to the name.
async fn every_kind_carries_both_paths(allow_all: bool) {
    let Some(_serial) = browser_test().await else {
        return;
    };
    let server = FixtureServer::builder()
        .page("/page", "<p>through the location</p>")
        .start()
        .await
        .unwrap();
    let site = TlsFront::start(server.addr()).await.unwrap();
    let (plain, tls) = (server.addr().port(), site.addr().port());
    for kind in ["http", "https", "socks5", "socks5h"] {
        let proxies = start(kind, PASSWORD_IN_URL).await;
        let engine = engine(&site, &proxies, allow_all);
        let before = server.requests().len();
        for url in [
            format!("http://localhost:{plain}/page"),
            format!("https://localhost:{tls}/page"),
        ] {
            for dynamic in [false, true] {
                let outcome = engine
                    .check(&through_us(url.clone(), dynamic))
                    .await
                    .unwrap();
                assert_eq!(
                    outcome.value(),
                    Some("through the location"),
                    "{kind} proxy, {url}, dynamic {dynamic}: {outcome:?}"
                );
            }
        }
        assert!(server.requests().len() >= before + 4);
        let asked = proxies.asked();
        let count = |part: String| asked.iter().filter(|l| l.contains(&part)).count();
        // Both paths went through the proxy: no request reached the site around it.
        assert!(
            count(format!(":{tls}")) >= 2 && count(format!(":{plain}")) >= 2,
            "{kind}: {asked:?}"
        );
        if !allow_all {
            // https went to the address the policy checked, never to the name.
            assert!(
                count(format!("127.0.0.1:{tls}")) + count(format!("[::1]:{tls}")) >= 2
                    && count(format!("localhost:{tls}")) == 0,
                "{kind}: {asked:?}"
            );
        }
        engine.renderer().shutdown().await;
    }
}

/// A location proxy that refuses the engine's credentials fails the check, plain or rendered,
/// with an error that says the proxy refused, and nothing reaches the site.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_location_proxy_refusing_the_credentials_fails_the_check_saying_so() {
    let Some(_serial) = browser_test().await else {
        return;
    };
    let server = FixtureServer::builder()
        .page("/page", "<p>through the location</p>")
        .start()
        .await
        .unwrap();
    let site = TlsFront::start(server.addr()).await.unwrap();
    let (plain, tls) = (server.addr().port(), site.addr().port());
    for kind in ["http", "https", "socks5"] {
        let proxies = start(kind, "wrong").await;
        let engine = engine(&site, &proxies, false);
        for url in [
            format!("http://localhost:{plain}/page"),
            format!("https://localhost:{tls}/page"),
        ] {
            for dynamic in [false, true] {
                let outcome = engine
                    .check(&through_us(url.clone(), dynamic))
                    .await
                    .unwrap();
                let error = outcome.error().unwrap_or_default().to_string();
                eprintln!("{kind} {url} dynamic {dynamic}: {error}");
                assert!(
                    error.starts_with(
                        "could not connect to localhost: the location's proxy refused"
                    ),
                    "{kind} proxy, {url}, dynamic {dynamic}: {outcome:?}"
                );
            }
        }
        engine.renderer().shutdown().await;
    }
    assert!(server.requests().is_empty(), "{:?}", server.requests());
}

/// A proxy asking for credentials of a URL that has none says so; a 407 the site itself sends
/// through a tunnel is the page's status, not the proxy's refusal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxy_wanting_credentials_and_a_site_sending_407_are_told_apart() {
    let server = FixtureServer::builder()
        .reply(
            "/407",
            wachet::testing::Reply::html("<p>no</p>").status(407),
        )
        .start()
        .await
        .unwrap();
    let site = TlsFront::start(server.addr()).await.unwrap();
    let socks = SocksProxy::builder()
        .credentials(USER, PASSWORD)
        .start()
        .await
        .unwrap();
    let proxies = Proxies {
        url: socks.url("socks5", None),
        http: None,
        socks: Some(socks),
        front: None,
    };
    let checker = engine(&site, &proxies, false);
    let url = format!("https://localhost:{}/407", site.addr().port());
    let outcome = checker.check(&through_us(url, false)).await.unwrap();
    assert_eq!(
        outcome.error(),
        Some(
            "could not connect to localhost: the location's proxy asks for credentials, and its \
             URL has none"
        ),
        "{outcome:?}"
    );
    let proxies = start("http", PASSWORD_IN_URL).await;
    let checker = engine(&site, &proxies, false);
    let url = format!("https://localhost:{}/407", site.addr().port());
    let outcome = checker.check(&through_us(url, false)).await.unwrap();
    assert_eq!(outcome.status, Some(407), "{outcome:?}");
    assert!(
        !outcome.error().unwrap_or_default().contains("proxy"),
        "{outcome:?}"
    );
}

/// A proxy URL the engine cannot use fails the build, naming the location and never the URL
/// (it may hold the proxy's password).
#[test]
fn a_proxy_url_that_cannot_be_used_fails_the_build_without_showing_it() {
    for (url, expected) in [
        (
            "socks4://ann:s3cret@127.0.0.1:1080",
            "proxy for location \"us\": scheme \"socks4\" is not supported",
        ),
        (
            "http://ann:s3cret@[::1",
            "proxy for location \"us\": not a URL (invalid IPv6 address)",
        ),
        (
            "socks5://ann:s3cret@",
            "proxy for location \"us\": not a URL (empty host)",
        ),
        // The slashes forgotten.
        (
            "socks5:proxy.example:1080",
            "proxy for location \"us\": the URL names no host",
        ),
    ]
    .into_iter()
    .map(|(url, expected)| (url.to_string(), expected))
    .chain([(
        format!("socks5://{}:s3cret@127.0.0.1:1080", "u".repeat(230)),
        "proxy for location \"us\": a SOCKS proxy's user and password may take at most 234 \
         bytes together",
    )]) {
        let error = Engine::builder()
            .proxy("us", &url)
            .build()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert_eq!(error, expected, "{url}");
    }
}
