//! The HTTP path against real servers on loopback: the monitor's request, redirects, timeouts,
//! size caps, compression, status handling and the private-network policy.

use crate::common::engine;
use std::io::Write;
use std::net::Ipv4Addr;
use std::time::Duration;
use wachet::model::HeaderPair;
use wachet::testing::{FixtureServer, Reply};
use wachet::{CheckOutcome, Checker, Engine, Monitor};

async fn server() -> FixtureServer {
    FixtureServer::builder()
        .page("/", "<p>hello</p>")
        .start()
        .await
        .unwrap()
}

async fn check(engine: &Engine, monitor: &Monitor) -> CheckOutcome {
    engine.check(monitor).await.unwrap()
}

#[tokio::test]
async fn method_headers_and_body_reach_the_server() {
    let server = server().await;
    let mut monitor = Monitor::new(server.url("/"));
    monitor.method = Some("post".into());
    monitor.headers = Some(vec![HeaderPair::new("X-Token", "abc 123")]);
    monitor.body = Some(r#"{"q":1}"#.into());
    let outcome = check(&engine(Duration::from_secs(2)), &monitor).await;
    assert_eq!(outcome.value(), Some("hello"));
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].method, "POST");
    assert_eq!(requests[0].header("x-token"), Some("abc 123"));
    assert_eq!(&requests[0].body[..], br#"{"q":1}"#);
    assert!(
        requests[0]
            .header("user-agent")
            .unwrap()
            .starts_with("wachet/")
    );
}

#[tokio::test]
async fn redirects_are_followed_and_the_final_url_reported() {
    let server = server().await;
    server.set("/old", Reply::redirect("/new"));
    server.set("/new", Reply::html("<p>moved here</p>"));
    let outcome = check(
        &engine(Duration::from_secs(2)),
        &Monitor::new(server.url("/old")),
    )
    .await;
    assert_eq!(outcome.value(), Some("moved here"));
    assert_eq!(
        outcome.final_url.as_deref(),
        Some(server.url("/new").as_str())
    );
    assert_eq!(outcome.status, Some(200));
}

#[tokio::test]
async fn ten_redirects_are_followed_and_eleven_are_not() {
    let server = server().await;
    for i in 0..11 {
        server.set(format!("/r{i}"), Reply::redirect(format!("/r{}", i + 1)));
    }
    server.set("/r11", Reply::html("<p>end</p>"));
    let ten = check(
        &engine(Duration::from_secs(2)),
        &Monitor::new(server.url("/r1")),
    )
    .await;
    assert_eq!(ten.value(), Some("end"), "{:?}", ten.error());
    let eleven = check(
        &engine(Duration::from_secs(2)),
        &Monitor::new(server.url("/r0")),
    )
    .await;
    assert_eq!(
        eleven.error(),
        Some("stopped after 10 redirects (a redirect loop?)")
    );
}

#[tokio::test]
async fn a_redirect_that_cannot_be_followed_is_a_failed_check_naming_its_target() {
    let server = server().await;
    let long = format!("/x?{}", "a".repeat(3000));
    server.set("/long", Reply::redirect(long));
    server.set("/invalid", Reply::redirect("http://exa mple.com:99999/"));
    server.set("/accented", Reply::redirect("/caf\u{e9}"));
    server.set("/refused", Reply::redirect("http://127.0.0.1:9/target"));
    let cases = [
        ("/long", "which is longer than 2048 characters"),
        (
            "/invalid",
            "redirected to \"http://exa%20mple.com:99999/\", which is not a valid URL",
        ),
        (
            "/refused",
            "redirected to http://127.0.0.1:9/target: could not connect to 127.0.0.1",
        ),
    ];
    for (path, expected) in cases {
        let outcome = check(
            &engine(Duration::from_secs(2)),
            &Monitor::new(server.url(path)),
        )
        .await;
        let error = outcome.error().unwrap_or_default();
        assert!(error.contains(expected), "{path}: {error}");
        assert!(error.len() < 400, "{path}: a long target is cut: {error}");
    }
    // A UTF-8 target is followed, percent-encoded, as browsers follow it.
    server.set("/caf%C3%A9", Reply::html("<p>accented</p>"));
    let outcome = check(
        &engine(Duration::from_secs(2)),
        &Monitor::new(server.url("/accented")),
    )
    .await;
    assert_eq!(outcome.value(), Some("accented"), "{outcome:?}");
}

#[tokio::test]
async fn a_redirect_loop_is_an_error() {
    let server = server().await;
    server.set("/a", Reply::redirect("/b"));
    server.set("/b", Reply::redirect("/a"));
    let outcome = check(
        &engine(Duration::from_secs(2)),
        &Monitor::new(server.url("/a")),
    )
    .await;
    assert!(
        outcome.error().unwrap().contains("redirects"),
        "{outcome:?}"
    );
    assert!(server.hits("/a") <= 6);
}

#[tokio::test]
async fn a_redirect_to_another_scheme_is_refused() {
    let server = server().await;
    server.set("/x", Reply::redirect("file:///etc/passwd"));
    let outcome = check(
        &engine(Duration::from_secs(2)),
        &Monitor::new(server.url("/x")),
    )
    .await;
    assert_eq!(
        outcome.error(),
        Some("redirected to \"file:///etc/passwd\", which is not an http or https URL")
    );
}

#[tokio::test]
async fn a_slow_server_times_out() {
    let server = server().await;
    server.set("/slow", Reply::html("late").delay(Duration::from_secs(10)));
    let outcome = check(
        &engine(Duration::from_secs(2)),
        &Monitor::new(server.url("/slow")),
    )
    .await;
    assert_eq!(outcome.error(), Some("timed out after 2 s"));
    assert!(outcome.timings.total < Duration::from_secs(9));
}

#[tokio::test]
async fn a_body_that_never_finishes_times_out() {
    let server = server().await;
    server.set("/stall", Reply::html("<p>partial").never_finish());
    let outcome = check(
        &engine(Duration::from_secs(2)),
        &Monitor::new(server.url("/stall")),
    )
    .await;
    assert_eq!(outcome.error(), Some("timed out after 2 s"));
}

#[tokio::test]
async fn a_50_mb_page_is_refused() {
    let server = server().await;
    server.set("/huge", Reply::html(vec![b'a'; 50 * 1024 * 1024]));
    let outcome = check(
        &engine(Duration::from_secs(2)),
        &Monitor::new(server.url("/huge")),
    )
    .await;
    assert_eq!(
        outcome.error(),
        Some("the response is larger than 10485760 bytes")
    );
}

/// A server that answers every request with `bytes` of text without a length (the end of the
/// body is the connection's), written in `pieces` writes.
async fn unsized_body_server(bytes: usize, pieces: usize) -> std::net::SocketAddr {
    use tokio::io::AsyncWriteExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                if wachet::testing::read_request_path(&mut socket)
                    .await
                    .is_none()
                {
                    return;
                }
                let head =
                    "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\nconnection: close\r\n\r\n";
                let mut answer = head.as_bytes().to_vec();
                answer.extend(std::iter::repeat_n(b'a', bytes));
                for piece in answer.chunks(answer.len().div_ceil(pieces)) {
                    if socket.write_all(piece).await.is_err() {
                        return;
                    }
                    socket.flush().await.ok();
                }
                let _ = socket.shutdown().await;
            });
        }
    });
    addr
}

#[tokio::test]
async fn a_body_without_a_length_is_refused_past_the_cap_in_one_piece_or_many() {
    let engine = Engine::builder()
        .allow_private_networks(true)
        .max_body_bytes(4096)
        .build()
        .unwrap();
    // 6 KB in one write reaches the client as one piece (hyper reads 8 KB at first), which is
    // the whole body: the cap holds for it too. 2 MB comes in many, in one write or 500.
    for (bytes, pieces) in [(6 * 1024, 1), (2 * 1024 * 1024, 1), (2 * 1024 * 1024, 500)] {
        let addr = unsized_body_server(bytes, pieces).await;
        let outcome = check(&engine, &Monitor::new(format!("http://{addr}/"))).await;
        assert_eq!(
            outcome.error(),
            Some("the response is larger than 4096 bytes"),
            "{bytes} bytes in {pieces} pieces"
        );
    }
}

#[tokio::test]
async fn a_monitors_own_accept_encoding_replaces_the_engines() {
    let server = server().await;
    let mut monitor = Monitor::new(server.url("/"));
    monitor.headers = Some(vec![HeaderPair::new("Accept-Encoding", "identity")]);
    let outcome = check(&engine(Duration::from_secs(2)), &monitor).await;
    assert_eq!(outcome.value(), Some("hello"));
    let sent = server.requests();
    assert_eq!(sent[0].header("accept-encoding"), Some("identity"));
    assert_eq!(
        sent[0]
            .headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case("accept-encoding"))
            .count(),
        1
    );
}

#[tokio::test]
async fn a_gzip_bomb_is_stopped_at_the_size_cap() {
    // 64 MiB of zeros compress to about 64 KiB.
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let zeros = vec![0u8; 1024 * 1024];
    for _ in 0..64 {
        encoder.write_all(&zeros).unwrap();
    }
    let bomb = encoder.finish().unwrap();
    assert!(bomb.len() < 1024 * 1024);
    let server = server().await;
    server.set(
        "/bomb",
        Reply::html(bomb).header("content-encoding", "gzip"),
    );
    let engine = Engine::builder()
        .allow_private_networks(true)
        .max_body_bytes(1024 * 1024)
        .build()
        .unwrap();
    let outcome = check(&engine, &Monitor::new(server.url("/bomb"))).await;
    assert_eq!(
        outcome.error(),
        Some("the response is larger than 1048576 bytes")
    );
}

#[tokio::test]
async fn gzip_deflate_and_brotli_bodies_are_decoded() {
    let page = b"<p>compressed text</p>";
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(page).unwrap();
    let mut deflate = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    deflate.write_all(page).unwrap();
    let mut br = Vec::new();
    {
        let mut w = brotli_writer(&mut br);
        w.write_all(page).unwrap();
    }
    let server = server().await;
    server.set(
        "/gz",
        Reply::html(gz.finish().unwrap()).header("content-encoding", "gzip"),
    );
    server.set(
        "/deflate",
        Reply::html(deflate.finish().unwrap()).header("content-encoding", "deflate"),
    );
    server.set("/br", Reply::html(br).header("content-encoding", "br"));
    for path in ["/gz", "/deflate", "/br"] {
        let outcome = check(
            &engine(Duration::from_secs(2)),
            &Monitor::new(server.url(path)),
        )
        .await;
        assert_eq!(
            outcome.value(),
            Some("compressed text"),
            "{path}: {outcome:?}"
        );
    }
    let sent = server.requests();
    let accept = sent[0].header("accept-encoding").unwrap();
    for coding in ["gzip", "deflate", "br"] {
        assert!(accept.contains(coding), "{accept}");
    }
}

#[tokio::test]
async fn layered_codings_and_raw_deflate_decode_as_in_a_browser() {
    let page = b"<p>twice wrapped</p>";
    let mut inner = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    inner.write_all(page).unwrap();
    let mut outer = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    outer.write_all(&inner.finish().unwrap()).unwrap();
    let twice = outer.finish().unwrap();
    let mut raw = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
    raw.write_all(page).unwrap();
    let server = server().await;
    server.set(
        "/twice",
        Reply::html(twice.clone()).header("content-encoding", "gzip, gzip"),
    );
    server.set(
        "/two-headers",
        Reply::html(twice)
            .header("content-encoding", "gzip")
            .header("content-encoding", "gzip"),
    );
    server.set(
        "/raw",
        Reply::html(raw.finish().unwrap()).header("content-encoding", "deflate"),
    );
    for path in ["/twice", "/two-headers", "/raw"] {
        let outcome = check(
            &engine(Duration::from_secs(2)),
            &Monitor::new(server.url(path)),
        )
        .await;
        assert_eq!(
            outcome.value(),
            Some("twice wrapped"),
            "{path}: {outcome:?}"
        );
    }
    server.set(
        "/corrupt",
        Reply::html(b"no gzip here".to_vec()).header("content-encoding", "gzip"),
    );
    let outcome = check(
        &engine(Duration::from_secs(2)),
        &Monitor::new(server.url("/corrupt")),
    )
    .await;
    let error = outcome.error().unwrap_or_default();
    assert!(
        error.contains("could not decode its gzip content"),
        "{error}"
    );
}

fn brotli_writer(out: &mut Vec<u8>) -> impl Write + '_ {
    brotli::CompressorWriter::new(out, 4096, 5, 22)
}

#[tokio::test]
async fn http_errors_fail_the_check_unless_invalid_pages_are_ignored() {
    let server = server().await;
    server.set("/gone", Reply::html("<p>Not here</p>").status(404));
    let mut monitor = Monitor::new(server.url("/gone"));
    let outcome = check(&engine(Duration::from_secs(2)), &monitor).await;
    assert_eq!(outcome.error(), Some("HTTP 404 Not Found"));
    assert_eq!(outcome.status, Some(404));
    monitor.ignore_invalid_pages = true;
    let outcome = check(&engine(Duration::from_secs(2)), &monitor).await;
    assert_eq!(outcome.value(), Some("Not here"));
}

#[tokio::test]
async fn raw_html_is_kept_only_when_asked() {
    let server = server().await;
    let mut monitor = Monitor::new(server.url("/"));
    assert_eq!(
        check(&engine(Duration::from_secs(2)), &monitor)
            .await
            .raw_html,
        None
    );
    monitor.collect_raw_html = true;
    let outcome = check(&engine(Duration::from_secs(2)), &monitor).await;
    assert_eq!(outcome.raw_html.as_deref(), Some("<p>hello</p>"));
    assert_eq!(outcome.content_type.as_deref(), Some("text/html"));
}

#[tokio::test]
async fn a_closed_port_is_a_connect_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let outcome = check(
        &engine(Duration::from_secs(2)),
        &Monitor::new(format!("http://127.0.0.1:{port}/")),
    )
    .await;
    let error = outcome.error().unwrap();
    assert!(
        error.starts_with("could not connect to 127.0.0.1"),
        "{error}"
    );
}

#[tokio::test]
async fn a_server_that_drops_the_connection_is_an_error() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            drop(socket);
        }
    });
    let outcome = check(
        &engine(Duration::from_secs(2)),
        &Monitor::new(format!("http://{addr}/")),
    )
    .await;
    assert!(outcome.error().is_some(), "{outcome:?}");
}

mod private_networks {
    use super::*;

    fn strict() -> Engine {
        Engine::builder().build().unwrap()
    }

    #[tokio::test]
    async fn loopback_is_refused_by_default_without_a_request() {
        let server = server().await;
        let outcome = check(&strict(), &Monitor::new(server.url("/"))).await;
        let error = outcome.error().unwrap();
        assert!(
            error.starts_with("refused to connect to 127.0.0.1"),
            "{error}"
        );
        assert!(error.contains("loopback"), "{error}");
        assert_eq!(server.requests().len(), 0);
    }

    #[tokio::test]
    async fn cloud_metadata_is_refused() {
        let outcome = check(
            &strict(),
            &Monitor::new("http://169.254.169.254/latest/meta-data/"),
        )
        .await;
        assert!(
            outcome.error().unwrap().contains("link-local"),
            "{outcome:?}"
        );
    }

    #[tokio::test]
    async fn a_name_resolving_inside_is_refused() {
        let server = server().await;
        let url = format!("http://localhost:{}/", server.addr().port());
        let outcome = check(&strict(), &Monitor::new(url)).await;
        let error = outcome.error().unwrap();
        assert!(error.contains("refused to connect to localhost"), "{error}");
        assert_eq!(server.requests().len(), 0);
    }

    /// IPv6 spellings that carry an IPv4 address inside are judged by it, before any connect.
    #[tokio::test]
    async fn ipv6_spellings_of_loopback_are_refused() {
        let server = server().await;
        let port = server.addr().port();
        for host in [
            "[::127.0.0.1]",
            "[::ffff:127.0.0.1]",
            "[::ffff:0:127.0.0.1]",
            "[64:ff9b::127.0.0.1]",
            "[2002:7f00:1::1]",
        ] {
            let outcome = check(&strict(), &Monitor::new(format!("http://{host}:{port}/"))).await;
            let error = outcome.error().unwrap_or_default();
            assert!(
                error.starts_with("refused to connect to") && error.contains("loopback"),
                "{host}: {outcome:?}"
            );
        }
        assert_eq!(server.requests().len(), 0);
    }

    #[tokio::test]
    async fn a_redirect_pointing_inside_is_refused() {
        // Only 127.0.0.1 is allowed, so 127.0.0.2 stands for the inside network.
        let inside = FixtureServer::builder()
            .ip(Ipv4Addr::new(127, 0, 0, 2))
            .page("/secret", "<p>secret</p>")
            .start()
            .await
            .unwrap();
        let outside = server().await;
        outside.set("/go", Reply::redirect(inside.url("/secret")));
        let engine = Engine::builder()
            .allow_network("127.0.0.1/32".parse().unwrap())
            .build()
            .unwrap();
        let outcome = check(&engine, &Monitor::new(outside.url("/go"))).await;
        let error = outcome.error().unwrap();
        assert!(error.contains("refused to connect to 127.0.0.2"), "{error}");
        assert_eq!(inside.requests().len(), 0);
        // The allowed host itself is reachable.
        let ok = check(&engine, &Monitor::new(outside.url("/"))).await;
        assert_eq!(ok.value(), Some("hello"));
    }
}

/// Through a location's proxy, which resolves names itself and reaches whatever they point at,
/// the policy still holds on every hop. 127.0.0.2 stands in for a public host (the engine
/// allows only it); 127.0.0.1 is the inside. And a location's TLS is its own.
mod through_a_location_proxy {
    use super::*;
    use wachet::testing::proxy::ForwardProxy;

    fn via(location: &str, url: String) -> Monitor {
        let mut monitor = Monitor::new(url);
        monitor.proxies = Some(vec![wachet::model::Proxy {
            location: Some(location.into()),
        }]);
        monitor
    }

    /// A TLS session a site gave the direct route is not offered through a location's proxy
    /// (the site could tell the two egresses apart from one client).
    #[tokio::test]
    async fn a_location_never_resumes_a_tls_session_of_the_direct_route() {
        let server = server().await;
        let front = wachet::testing::tls::TlsFront::start(server.addr())
            .await
            .unwrap();
        let proxy = ForwardProxy::builder().start().await.unwrap();
        let engine = Engine::builder()
            .allow_private_networks(true)
            .root_certificate(front.ca_pem())
            .proxy("us", proxy.url())
            .build()
            .unwrap();
        let direct = check(&engine, &Monitor::new(front.url("/"))).await;
        assert_eq!(direct.value(), Some("hello"), "{direct:?}");
        let proxied = check(&engine, &via("us", front.url("/"))).await;
        assert_eq!(proxied.value(), Some("hello"), "{proxied:?}");
        assert_eq!(front.handshakes(), 2);
        assert_eq!(front.resumed(), 0);
        assert!(!proxy.requests().is_empty(), "the proxy carried nothing");
    }

    #[tokio::test]
    async fn a_redirect_inside_is_refused_on_every_spelling() {
        let inside = FixtureServer::builder()
            .page("/secret", "<p>secret</p>")
            .start()
            .await
            .unwrap();
        let outside = FixtureServer::builder()
            .ip(Ipv4Addr::new(127, 0, 0, 2))
            .page("/", "<p>outside</p>")
            .start()
            .await
            .unwrap();
        // A proxy that also knows an internal name of its own site.
        let proxy = ForwardProxy::builder()
            .alias("intranet.test", inside.addr())
            .start()
            .await
            .unwrap();
        let engine = Engine::builder()
            .allow_network("127.0.0.2/32".parse().unwrap())
            .proxy("us", proxy.url())
            .total_timeout(Duration::from_secs(5))
            .build()
            .unwrap();
        let port = inside.addr().port();
        for (target, expected) in [
            (
                format!("http://localhost:{port}/secret"),
                "refused to connect to localhost",
            ),
            (
                format!("https://localhost:{port}/secret"),
                "refused to connect to localhost",
            ),
            (
                format!("http://127.0.0.1:{port}/secret"),
                "refused to connect to 127.0.0.1",
            ),
            (
                format!("http://[::ffff:127.0.0.1]:{port}/secret"),
                "loopback",
            ),
            (format!("http://2130706433:{port}/secret"), "loopback"),
            // Not resolvable here: the policy cannot judge it, so the proxy never hears it.
            (
                format!("http://intranet.test:{port}/secret"),
                "could not connect to intranet.test",
            ),
            (
                format!("https://intranet.test:{port}/secret"),
                "could not connect to intranet.test",
            ),
        ] {
            outside.set("/go", Reply::redirect(target.clone()));
            let outcome = check(&engine, &via("us", outside.url("/go"))).await;
            let error = outcome.error().unwrap_or_default();
            assert!(error.contains(expected), "{target}: {outcome:?}");
        }
        assert_eq!(inside.requests().len(), 0, "{:?}", proxy.requests());
        // The public stand-in itself is fetched through the proxy.
        let outcome = check(&engine, &via("us", outside.url("/"))).await;
        assert_eq!(outcome.value(), Some("outside"), "{outcome:?}");
        assert!(
            proxy
                .requests()
                .iter()
                .all(|line| line.contains("127.0.0.2")),
            "{:?}",
            proxy.requests()
        );
    }

    #[tokio::test]
    async fn redirects_between_public_hosts_are_followed_hop_by_hop() {
        let outside = FixtureServer::builder()
            .ip(Ipv4Addr::new(127, 0, 0, 2))
            .page("/end", "<p>arrived</p>")
            .start()
            .await
            .unwrap();
        outside.set("/a", Reply::redirect("/b"));
        outside.set("/b", Reply::redirect(outside.url("/end")));
        let proxy = ForwardProxy::builder().start().await.unwrap();
        let engine = Engine::builder()
            .allow_network("127.0.0.2/32".parse().unwrap())
            .proxy("us", proxy.url())
            .build()
            .unwrap();
        let outcome = check(&engine, &via("us", outside.url("/a"))).await;
        assert_eq!(outcome.value(), Some("arrived"), "{outcome:?}");
        assert_eq!(proxy.requests().len(), 3, "{:?}", proxy.requests());
        // Eleven redirects are one too many, as on the direct path.
        for i in 0..11 {
            outside.set(
                format!("/loop{i}"),
                Reply::redirect(format!("/loop{}", i + 1)),
            );
        }
        outside.set("/loop11", Reply::html("<p>too far</p>"));
        let outcome = check(&engine, &via("us", outside.url("/loop0"))).await;
        assert_eq!(
            outcome.error(),
            Some("stopped after 10 redirects (a redirect loop?)"),
            "{outcome:?}"
        );
    }
}

/// A JSON API that writes its keys in another order on every request (a hash map's), and
/// reverses its ranked offers from the fourth request on.
fn shuffled_api(n: usize) -> Reply {
    let mut offers = [
        (r#""seller":"a""#, r#""price":49.90"#),
        (r#""seller":"b""#, r#""price":51.00"#),
    ];
    if n >= 4 {
        offers.reverse();
    }
    let offers: Vec<String> = offers
        .iter()
        .map(|(s, p)| match n % 2 {
            0 => format!("{{{s},{p}}}"),
            _ => format!("{{{p}, {s}}}"),
        })
        .collect();
    let fields = [
        r#""name":"Trail headlamp""#.to_string(),
        format!(r#""offers":[{}]"#, offers.join(",")),
        format!(r#""requestId":"r{n}""#),
    ];
    let body = match n % 3 {
        0 => format!("{{{},{},{}}}", fields[0], fields[1], fields[2]),
        1 => format!("{{{},{},{}}}", fields[2], fields[0], fields[1]),
        _ => format!("{{ {}, {}, {} }}", fields[1], fields[2], fields[0]),
    };
    Reply::html(body).header("content-type", "application/json")
}

#[tokio::test]
async fn a_regex_reads_a_json_document_in_key_order_so_only_a_real_reordering_changes_the_value() {
    let server = FixtureServer::builder()
        .counted("/api", shuffled_api)
        .start()
        .await
        .unwrap();
    let mut monitor = Monitor::new(server.url("/api"));
    monitor.regex = Some(r#""(?:name|seller|price)":"?[^",}]*"#.into());
    let engine = engine(Duration::from_secs(2));
    let mut values = Vec::new();
    for _ in 0..5 {
        values.push(check(&engine, &monitor).await.value().unwrap().to_string());
    }
    // Numbers in one spelling (49.90 and 4.99e1 are one price), so a server that spells a
    // number differently on each request does not change the value.
    let first =
        "\"name\":\"Trail headlamp\n\"price\":49.9\n\"seller\":\"a\n\"price\":51\n\"seller\":\"b";
    assert_eq!(values[0], first);
    assert_eq!(values[1], first, "another key order is the same value");
    assert_eq!(values[2], first);
    assert_ne!(values[3], first, "the offers' order changed");
    assert_eq!(values[4], values[3]);
}

#[tokio::test]
async fn the_servers_date_header_is_the_pages_clock() {
    let server = FixtureServer::builder()
        .reply(
            "/dated",
            Reply::html("<p>Wednesday, December 31</p>")
                .header("date", "Wed, 31 Dec 2025 23:59:00 GMT"),
        )
        .reply(
            "/nonsense",
            Reply::html("<p>hello</p>").header("date", "yesterday-ish"),
        )
        .start()
        .await
        .unwrap();
    let engine = engine(Duration::from_secs(2));
    let dated = check(&engine, &Monitor::new(server.url("/dated"))).await;
    assert_eq!(
        dated.server_date.map(|t| t.to_rfc3339()),
        Some("2025-12-31T23:59:00+00:00".to_string())
    );
    let nonsense = check(&engine, &Monitor::new(server.url("/nonsense"))).await;
    assert_eq!(nonsense.server_date, None, "an unreadable Date is no clock");
    assert_eq!(nonsense.value(), Some("hello"));
}

/// An engine at a location ([`wachet::EngineBuilder::location`], a worker of `wachet serve
/// --location`) checks that location's monitors directly, or through its proxy there when it
/// has one; an engine elsewhere refuses them without a proxy.
#[tokio::test]
async fn an_engine_checks_its_own_location_directly_or_through_its_proxy_there() {
    use wachet::model::LocationCode;
    use wachet::testing::proxy::ForwardProxy;
    let site = FixtureServer::builder()
        .page("/", "<p>from gb</p>")
        .start()
        .await
        .unwrap();
    let mut monitor = Monitor::new(site.url("/"));
    monitor.location = LocationCode::Gb;
    let elsewhere = Engine::builder()
        .allow_private_networks(true)
        .build()
        .unwrap();
    let refused = elsewhere.validate(&monitor).unwrap_err();
    assert!(
        refused.errors.iter().any(|e| e.field == "location"),
        "{refused:?}"
    );
    assert!(!elsewhere.serves(LocationCode::Gb));

    let here = Engine::builder()
        .allow_private_networks(true)
        .location(LocationCode::Gb)
        .build()
        .unwrap();
    assert!(here.serves(LocationCode::Gb) && !here.serves(LocationCode::Us));
    let outcome = here.check(&monitor).await.unwrap();
    assert_eq!(outcome.data.raw.as_deref(), Some("from gb"));

    let proxy = ForwardProxy::builder().start().await.unwrap();
    let proxied = Engine::builder()
        .allow_private_networks(true)
        .location(LocationCode::Gb)
        .proxy("gb", proxy.url())
        .build()
        .unwrap();
    let outcome = proxied.check(&monitor).await.unwrap();
    assert_eq!(outcome.data.raw.as_deref(), Some("from gb"));
    assert!(!proxy.requests().is_empty(), "through the proxy there");
}

/// A 304 or a 204 has no body, whatever its Content-Length says: one announcing more than the
/// body cap is still an answer, not a page too large.
#[tokio::test]
async fn a_bodiless_answer_with_a_large_content_length_is_no_page_too_large() {
    use tokio::io::AsyncWriteExt;
    use wachet::fetch::http::{HttpFetcher, HttpSettings};
    use wachet::fetch::{FetchRequest, Fetcher, NetworkPolicy};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let Some(path) = wachet::testing::read_request_path(&mut stream).await else {
                    return;
                };
                let status = if path == "/304" {
                    "304 Not Modified"
                } else {
                    "204 No Content"
                };
                let head = format!("HTTP/1.1 {status}\r\nContent-Length: 99999999\r\n\r\n");
                let _ = stream.write_all(head.as_bytes()).await;
            });
        }
    });
    let fetcher = HttpFetcher::new(
        HttpSettings {
            policy: std::sync::Arc::new(NetworkPolicy::allow_all()),
            max_body_bytes: 4096,
            ..HttpSettings::default()
        },
        &Default::default(),
    )
    .unwrap();
    for (path, status) in [("/304", 304), ("/204", 204)] {
        let url = url::Url::parse(&format!("http://{addr}{path}")).unwrap();
        let page = fetcher.fetch(&FetchRequest::get(url)).await;
        assert!(
            page.as_ref()
                .is_ok_and(|p| p.status == status && p.body.is_empty()),
            "{path}: {page:?}"
        );
    }
}

/// A URL that cannot be sent is named without the password it carries.
#[tokio::test]
async fn a_url_that_cannot_be_requested_is_named_without_its_password() {
    use wachet::fetch::http::{HttpFetcher, HttpSettings};
    use wachet::fetch::{FetchRequest, Fetcher, NetworkPolicy};
    let fetcher = HttpFetcher::new(
        HttpSettings {
            policy: std::sync::Arc::new(NetworkPolicy::allow_all()),
            ..HttpSettings::default()
        },
        &Default::default(),
    )
    .unwrap();
    let url = url::Url::parse("http://user:s3cret@a{b.localhost/").unwrap();
    let error = fetcher
        .fetch(&FetchRequest::get(url))
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        error.contains("cannot be requested") && !error.contains("s3cret"),
        "{error}"
    );
}
