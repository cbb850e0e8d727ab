//! The rendering browser stays inside: nothing a page does reaches the network around the
//! engine's egress proxy (WebRTC's UDP to STUN and TURN servers), a page opening a thousand
//! WebSockets gets a clear outcome in bounded time, and no process of the browser listens on a
//! TCP port another local user could connect to (DevTools goes over a pipe).
//!
//! These tests need Chromium. Without it they fail when `CI` is set (CI must install it) and are
//! skipped, loudly, on a developer machine.

use crate::common::{dynamic, engine};
use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};
use wachet::testing::{FixtureServer, browser_test};
use wachet::{Checker, Engine};

/// A page that gathers ICE candidates against STUN and TURN servers at `stun` and `turn`, and
/// says in the page how far it got.
fn webrtc_page(stun: SocketAddr, turn: SocketAddr) -> String {
    format!(
        r#"<!doctype html><p id=v>start</p><script>
const say = t => document.getElementById('v').textContent = t;
try {{
  const pc = new RTCPeerConnection({{iceServers: [
    {{urls: 'stun:{stun}'}},
    {{urls: ['turn:{turn}?transport=udp', 'turn:{stun}?transport=udp'], username: 'u', credential: 'p'}},
  ]}});
  pc.createDataChannel('x');
  pc.createOffer().then(o => pc.setLocalDescription(o)).then(() => say('offered'), e => say('no offer: ' + e));
  window.keep = pc;
}} catch (e) {{
  say('no WebRTC: ' + e.name);
}}
</script>"#
    )
}

/// A page's STUN and TURN requests reach no UDP listener on loopback (127.0.0.1 or 127.0.0.2):
/// UDP that would not go through the proxy is off, in the headless shell (by a flag) and in the
/// full Chromium (by the profile's preferences).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webrtc_sends_no_udp_around_the_proxy() {
    let Some(_serial) = browser_test().await else {
        return;
    };
    webrtc_sends_no_udp(engine(Duration::from_secs(30))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webrtc_sends_no_udp_around_the_proxy_from_the_full_chromium() {
    let Some(_serial) = browser_test().await else {
        return;
    };
    let Some(full) = wachet::testing::full_chromium_or_skip() else {
        return;
    };
    let engine = Engine::builder()
        .allow_private_networks(true)
        .total_timeout(Duration::from_secs(30))
        .chrome_path(full)
        .build()
        .unwrap();
    webrtc_sends_no_udp(engine).await;
}

async fn webrtc_sends_no_udp(engine: Engine) {
    let stun = tokio::net::UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))
        .await
        .unwrap();
    let turn = tokio::net::UdpSocket::bind((Ipv4Addr::new(127, 0, 0, 2), 0))
        .await
        .unwrap();
    let page = webrtc_page(stun.local_addr().unwrap(), turn.local_addr().unwrap());
    let server = FixtureServer::builder()
        .page("/rtc", page)
        .start()
        .await
        .unwrap();
    let outcome = engine.check(&dynamic(server.url("/rtc"))).await.unwrap();
    eprintln!("the page said: {outcome:?}");
    assert!(outcome.value().is_some(), "{outcome:?}");

    // ICE gathering goes on after the render (the tab stays open for the next one): listen a
    // few seconds for anything it sends, to either server.
    let (mut a, mut b) = ([0u8; 2048], [0u8; 2048]);
    let deadline = Instant::now() + Duration::from_secs(4);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        let received = tokio::select! {
            r = stun.recv_from(&mut a) => Some(("STUN", r)),
            r = turn.recv_from(&mut b) => Some(("TURN", r)),
            () = tokio::time::sleep(left) => None,
        };
        if let Some((server, Ok((n, from)))) = received {
            panic!("the {server} server on loopback received {n} bytes of UDP from {from}");
        }
    }
    drop(engine);
}

/// The inodes of the TCP sockets listening on this machine (IPv4 and IPv6).
fn listening_inodes() -> std::collections::HashSet<u64> {
    let mut found = std::collections::HashSet::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let text = std::fs::read_to_string(table).unwrap_or_default();
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // `st` 0A is LISTEN; the inode is the tenth field.
            if fields.get(3) == Some(&"0A")
                && let Some(inode) = fields.get(9).and_then(|i| i.parse().ok())
            {
                found.insert(inode);
            }
        }
    }
    found
}

/// The sockets `pid` holds open, by inode.
fn socket_inodes(pid: u32) -> Vec<u64> {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|fds| {
            fds.flatten()
                .filter_map(|fd| std::fs::read_link(fd.path()).ok())
                .filter_map(|target| {
                    target
                        .to_str()?
                        .strip_prefix("socket:[")?
                        .strip_suffix(']')?
                        .parse()
                        .ok()
                })
                .collect()
        })
        .unwrap_or_default()
}

/// No process of the browser listens on a TCP port while it renders: DevTools goes over a
/// pipe, so no other local user can drive the browser.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_process_of_the_browser_listens_on_tcp() {
    let Some(_serial) = browser_test().await else {
        return;
    };
    let server = FixtureServer::builder()
        .page(
            "/slow",
            r#"<!doctype html><p>slow</p><script src="/slow.js"></script>"#,
        )
        .reply(
            "/slow.js",
            wachet::testing::Reply::new(200)
                .header("content-type", "text/javascript")
                .body("document.body.append(' done')")
                .delay(Duration::from_secs(2)),
        )
        .start()
        .await
        .unwrap();
    let engine = engine(Duration::from_secs(30));
    let check = {
        let engine = engine.clone();
        let url = server.url("/slow");
        tokio::spawn(async move { engine.check(&dynamic(url)).await })
    };
    let mut samples = 0;
    let mut listening: Vec<(u32, String)> = Vec::new();
    while !check.is_finished() {
        if let Some(browser) = engine.renderer().browser_pid() {
            let listeners = listening_inodes();
            for pid in wachet::testing::memory::process_tree(browser) {
                if socket_inodes(pid).iter().any(|i| listeners.contains(i))
                    && !listening.iter().any(|(p, _)| *p == pid)
                {
                    let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                    let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
                    listening.push((pid, cmd.chars().take(120).collect()));
                }
            }
            samples += 1;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let outcome = check.await.unwrap().unwrap();
    assert_eq!(outcome.value(), Some("slow\ndone"), "{outcome:?}");
    assert!(samples > 5, "the browser was seen only {samples} times");
    assert!(
        listening.is_empty(),
        "processes of the browser listen on TCP: {listening:?}"
    );
}

/// A WebSocket server on 127.0.0.1 that completes every handshake and holds the connection
/// open, counting connections made and still open.
struct WebSocketServer {
    addr: SocketAddr,
    made: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    open: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl WebSocketServer {
    async fn start() -> WebSocketServer {
        use std::sync::atomic::Ordering;
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .unwrap();
        let addr = listener.local_addr().unwrap();
        let made = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let open = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (m, o) = (made.clone(), open.clone());
        let task = tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                m.fetch_add(1, Ordering::AcqRel);
                o.fetch_add(1, Ordering::AcqRel);
                let o = o.clone();
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut buf = [0u8; 4096];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16384 {
                        match stream.read(&mut buf).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    let text = String::from_utf8_lossy(&head);
                    let key = text.lines().find_map(|l| {
                        let (name, value) = l.split_once(':')?;
                        name.eq_ignore_ascii_case("sec-websocket-key")
                            .then(|| value.trim().to_string())
                    });
                    if let Some(key) = key {
                        use base64::Engine as _;
                        use sha1::Digest as _;
                        let digest = sha1::Sha1::digest(
                            format!("{key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11").as_bytes(),
                        );
                        let accept = base64::engine::general_purpose::STANDARD.encode(digest);
                        let reply = format!(
                            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n"
                        );
                        if stream.write_all(reply.as_bytes()).await.is_ok() {
                            while matches!(stream.read(&mut buf).await, Ok(n) if n > 0) {}
                        }
                    }
                    o.fetch_sub(1, Ordering::AcqRel);
                });
            }
        });
        WebSocketServer {
            addr,
            made,
            open,
            task,
        }
    }
}

impl Drop for WebSocketServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A page opening a thousand WebSockets gets a clear outcome within a generous bound, its
/// connections are closed with its check, and the next check renders as usual.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_websockets_stay_bounded() {
    use std::sync::atomic::Ordering;
    let Some(_serial) = browser_test().await else {
        return;
    };
    let sockets = WebSocketServer::start().await;
    let page = format!(
        r#"<!doctype html><p id=v>start</p><script>
let made = 0, opened = 0, failed = 0;
window.keep = [];
for (let i = 0; i < 1000; i++) {{
  try {{
    const ws = new WebSocket('ws://{}/' + i);
    made++;
    ws.onopen = () => opened++;
    ws.onerror = () => failed++;
    keep.push(ws);
  }} catch (e) {{ failed++; }}
}}
setTimeout(() => document.getElementById('v').textContent = `made ${{made}}`, 900);
</script>"#,
        sockets.addr
    );
    let server = FixtureServer::builder()
        .page("/many", page)
        .page("/fine", "<p>fine</p>")
        .start()
        .await
        .unwrap();
    let engine = engine(Duration::from_secs(30));
    let began = Instant::now();
    let outcome = engine.check(&dynamic(server.url("/many"))).await.unwrap();
    let took = began.elapsed();
    eprintln!(
        "1000 WebSockets: {:?} / {:?} in {:.1} s; the server saw {} connections, {} open",
        outcome.value(),
        outcome.error(),
        took.as_secs_f64(),
        sockets.made.load(Ordering::Acquire),
        sockets.open.load(Ordering::Acquire)
    );
    assert!(
        outcome.value().is_some() || outcome.error().is_some(),
        "{outcome:?}"
    );
    assert!(took < Duration::from_secs(60), "took {took:?}");

    // The check's browser context is gone, and its connections with it.
    let deadline = Instant::now() + Duration::from_secs(20);
    while sockets.open.load(Ordering::Acquire) > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        sockets.open.load(Ordering::Acquire),
        0,
        "WebSockets outlived their check"
    );
    let next = engine.check(&dynamic(server.url("/fine"))).await.unwrap();
    assert_eq!(next.value(), Some("fine"), "{next:?}");
}
