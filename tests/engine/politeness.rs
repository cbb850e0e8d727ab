//! Per-host politeness across every check of one engine: single-page checks and a crawl running
//! at once never have more requests in flight at one host than the engine's per-host limit,
//! another host is not held up by a busy one, and the requests-per-second limit holds.
//!
//! The servers here are small HTTP/1.1 servers on loopback that count requests in flight
//! (the fixture server does not), each answering after a short delay so requests overlap.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use wachet::model::ClientJobType;
use wachet::{Checker, Engine, Monitor};

/// A loopback server counting requests in flight, their peak, and when each arrived.
struct CountingServer {
    addr: SocketAddr,
    in_flight: Arc<AtomicUsize>,
    peak: Arc<AtomicUsize>,
    arrivals: Arc<std::sync::Mutex<Vec<Instant>>>,
}

impl CountingServer {
    /// Serves on `ip`: `/` links to `/p0.html` .. `/p{links-1}.html`; every page answers after
    /// `delay`.
    async fn start(ip: Ipv4Addr, delay: Duration, links: usize) -> CountingServer {
        let listener = TcpListener::bind((ip, 0)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let in_flight = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let arrivals = Arc::new(std::sync::Mutex::new(Vec::new()));
        let (f, p, a) = (in_flight.clone(), peak.clone(), arrivals.clone());
        tokio::spawn(async move {
            loop {
                let Ok((mut socket, _)) = listener.accept().await else {
                    continue;
                };
                let (f, p, a) = (f.clone(), p.clone(), a.clone());
                tokio::spawn(async move {
                    let Some(path) = wachet::testing::read_request_path(&mut socket).await else {
                        return;
                    };
                    let now = f.fetch_add(1, Ordering::SeqCst) + 1;
                    p.fetch_max(now, Ordering::SeqCst);
                    a.lock().unwrap().push(Instant::now());
                    tokio::time::sleep(delay).await;
                    let body = if path == "/" {
                        (0..links)
                            .map(|i| format!("<a href=/p{i}.html>p{i}</a>"))
                            .collect::<String>()
                    } else {
                        format!("<title>{path}</title><p>{path}</p>")
                    };
                    let response = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    // Counted out before the answer leaves, so a client that reuses its slot at
                    // once never meets a stale count.
                    f.fetch_sub(1, Ordering::SeqCst);
                    let _ = socket.write_all(response.as_bytes()).await;
                    let _ = socket.shutdown().await;
                });
            }
        });
        CountingServer {
            addr,
            in_flight,
            peak,
            arrivals,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn requests(&self) -> usize {
        self.arrivals.lock().unwrap().len()
    }
}

fn single(url: String) -> Monitor {
    Monitor::new(url)
}

fn portal(url: String) -> Monitor {
    let mut m = Monitor::new(url);
    m.job_type = ClientJobType::Portal;
    m.crawling_depth = Some(1);
    m
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_checks_and_a_crawl_never_pass_the_per_host_limit() {
    let busy = CountingServer::start(Ipv4Addr::LOCALHOST, Duration::from_millis(100), 40).await;
    let other = CountingServer::start(Ipv4Addr::new(127, 0, 0, 2), Duration::ZERO, 0).await;
    let engine = Engine::builder()
        .allow_private_networks(true)
        .per_host_concurrency(3)
        .per_host_rps(0)
        .crawl_concurrency(16)
        .total_timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let checker: Arc<dyn Checker> = Arc::new(engine);

    let mut checks = tokio::task::JoinSet::new();
    for i in 0..100 {
        let checker = checker.clone();
        let monitor = single(busy.url(&format!("/p{}.html", i % 40)));
        checks.spawn(async move { checker.check(&monitor).await.unwrap() });
    }
    let crawl = {
        let checker = checker.clone();
        let monitor = portal(busy.url("/"));
        tokio::spawn(async move { checker.check(&monitor).await.unwrap() })
    };
    // While the first host is saturated, the second answers at once: its checks finish while
    // the busy host still has most of its requests queued.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let quick = checker.check(&single(other.url("/"))).await.unwrap();
    assert_eq!(quick.status, Some(200));
    assert!(
        busy.requests() < 100,
        "the other host waited for the busy one: {} of the busy host's 141 requests were done",
        busy.requests()
    );

    while let Some(done) = checks.join_next().await {
        let outcome = done.unwrap();
        assert_eq!(outcome.error(), None);
    }
    let crawled = crawl.await.unwrap();
    assert_eq!(crawled.error(), None);
    assert_eq!(crawled.crawl.as_ref().unwrap().pages.len(), 41);

    assert_eq!(busy.requests(), 100 + 41);
    assert_eq!(busy.in_flight.load(Ordering::SeqCst), 0);
    let peak = busy.peak.load(Ordering::SeqCst);
    assert!(
        peak <= 3,
        "{peak} requests in flight at one host; the limit is 3"
    );
    assert!(
        peak >= 2,
        "the requests never overlapped ({peak}), so the test proves nothing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_per_second_per_host_hold_across_checks() {
    let server = CountingServer::start(Ipv4Addr::LOCALHOST, Duration::ZERO, 0).await;
    let engine = Engine::builder()
        .allow_private_networks(true)
        .per_host_concurrency(0)
        .per_host_rps(5)
        .total_timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let mut checks = tokio::task::JoinSet::new();
    for i in 0..15 {
        let engine = engine.clone();
        let monitor = single(server.url(&format!("/r{i}.html")));
        checks.spawn(async move { engine.check(&monitor).await.unwrap() });
    }
    while let Some(done) = checks.join_next().await {
        assert_eq!(done.unwrap().error(), None);
    }
    let mut arrivals = server.arrivals.lock().unwrap().clone();
    arrivals.sort();
    assert_eq!(arrivals.len(), 15);
    // 5 per second after a burst of 5 (governor's quota): the 10 after the burst need at
    // least 2 s, and no one-second window holds more than 10. Generous bounds both.
    let span = arrivals[14].duration_since(arrivals[0]);
    assert!(
        span >= Duration::from_millis(1600),
        "15 requests within {span:?}"
    );
    for (i, first) in arrivals.iter().enumerate() {
        let within = arrivals[i..]
            .iter()
            .take_while(|t| t.duration_since(*first) < Duration::from_secs(1))
            .count();
        assert!(
            within <= 11,
            "{within} requests within 1 s; the limit is 5 per second"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_waiting_past_its_timeout_for_a_host_slot_fails_as_busy() {
    let server = CountingServer::start(Ipv4Addr::LOCALHOST, Duration::from_secs(3), 0).await;
    let engine = Engine::builder()
        .allow_private_networks(true)
        .per_host_concurrency(1)
        .per_host_rps(0)
        .total_timeout(Duration::from_secs(1))
        .build()
        .unwrap();
    // One slot: the first request holds it until its timeout, the second (queued first) takes
    // it next, so the third waits past its own timeout and never reaches the host.
    let mut holders = Vec::new();
    for path in ["/first.html", "/second.html"] {
        let engine = engine.clone();
        let monitor = single(server.url(path));
        holders.push(tokio::spawn(async move {
            engine.check(&monitor).await.unwrap()
        }));
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let third = engine
        .check(&single(server.url("/third.html")))
        .await
        .unwrap();
    let error = third.error().unwrap_or_default().to_string();
    assert!(error.contains("free slot"), "{error}");
    for holder in holders {
        let outcome = holder.await.unwrap();
        assert!(
            outcome.error().is_some_and(|e| e.contains("timed out")),
            "{:?}",
            outcome.error()
        );
    }
    assert_eq!(
        server.requests(),
        2,
        "the third request never reached the host"
    );
}
