//! Fair share of the check slots among users, and the quotas per user: one user's monitors on
//! hosts that never answer do not hold back another user's checks, and a user who reaches a
//! quota (monitors, stored bytes, value size, notifications an hour) is told so, by name.

use crate::{Api, Backend, Setup, User, id, monitor};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use wachet::testing::FixtureServer;
use wachet_server::schedule::ScheduleSettings;
use wachet_server::store::Quotas;
use wachet_server::store::sqlite::StoreSettings;

/// A host that accepts connections and never answers: each check of it holds its slot until
/// the engine's timeout (30 s).
async fn silent_host() -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    (format!("http://{addr}"), task)
}

/// Creates 10 monitors of `site`'s `/tea` checked every `recurrence` seconds, waits for each
/// one's first entry, and then asserts, saying `why` otherwise, that none of `slow` has one yet.
async fn ten_stored_before(
    (api, user): (&Api, &User),
    (site, recurrence): (&FixtureServer, i64),
    slow: &[String],
    why: &str,
) {
    let mut fast = Vec::new();
    for i in 0..10 {
        let body = json!({"name": format!("tea {i}"), "url": site.url(&format!("/tea?{i}")),
                          "recurrenceInSeconds": recurrence});
        fast.push(id(&api.task(user, body).await));
    }
    for task in &fast {
        let took = first_entry(api, user, task, Duration::from_secs(60)).await;
        assert!(took.is_some(), "{task} was never checked");
    }
    for task in slow {
        let path = format!("/thirdparty/v1/data/list/{task}");
        let reply = api.get(user, &path).await;
        assert_eq!(
            reply.ok()["data"].as_array().map(Vec::len),
            Some(0),
            "{why}"
        );
    }
}

/// Waits up to `within` until the history at `path` has an entry; returns how long it took.
async fn first_entry(api: &Api, user: &User, task: &str, within: Duration) -> Option<Duration> {
    let started = Instant::now();
    let path = format!("/thirdparty/v1/data/list/{task}");
    while started.elapsed() < within {
        let reply = api.get(user, &path).await;
        if !reply.ok()["data"].as_array().unwrap().is_empty() {
            return Some(started.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    None
}

both!(
    hanging_hosts_of_one_user_hold_back_only_that_users_checks,
    multi_thread
);
async fn hanging_hosts_of_one_user_hold_back_only_that_users_checks() {
    // Eight hosts, as a host gets no more checks at once than its 4 host slots.
    let mut silent = Vec::new();
    for _ in 0..8 {
        silent.push(silent_host().await);
    }
    let site = FixtureServer::builder()
        .page("/tea", "<p class=price>3.50 EUR</p>")
        .start()
        .await
        .unwrap();
    let api = Api::start_checking().await;
    let (ann, bob) = (
        api.user("ann@example.com").await,
        api.user("bob@example.com").await,
    );
    for i in 0..40 {
        let host = &silent[i % silent.len()].0;
        let body = json!({"name": format!("silent {i}"), "url": format!("{host}/page/{i}"),
                          "recurrenceInSeconds": 60});
        api.task(&ann, body).await;
    }
    // Alone, Ann may use every slot: all 32 are taken by her hanging checks.
    // No store call lists leases: the database is asked, where each backend keeps them.
    let db = api.sql().await;
    let leases = match api.backend() {
        Backend::Sqlite => "tasks t",
        Backend::Postgres => "schedules t",
    };
    let held = format!("SELECT count(*) FROM {leases} WHERE t.lease_until IS NOT NULL");
    let started = Instant::now();
    while db.count(&held).await < 32 && started.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(db.count(&held).await, 32, "a lone user uses every slot");

    let body = json!({"name": "tea", "url": site.url("/tea"), "recurrenceInSeconds": 60});
    let tea = id(&api.task(&bob, body).await);
    // Before the fair share Bob waited for Ann's checks to time out (27 s).
    let took = first_entry(&api, &bob, &tea, Duration::from_secs(25)).await;
    let took = took.expect("Bob's monitor is checked while Ann's hosts hang");
    assert!(took < Duration::from_secs(10), "first check after {took:?}");
    let monitor: Value = api
        .get(&bob, &format!("/thirdparty/v1/task/{tea}"))
        .await
        .ok()
        .clone();
    assert_eq!(monitor["data"]["raw"], "3.50 EUR");
    // Ann's monitors beyond her share wait for her own checks to end.
    let anns = format!(
        "SELECT count(*) FROM {leases} JOIN users u ON u.id = t.user_id \
         WHERE u.email = 'ann@example.com' AND t.lease_until IS NOT NULL"
    );
    assert_eq!(
        db.count(&anns).await,
        32,
        "Ann is given no more while over her share"
    );
}

both!(
    a_slow_host_with_many_monitors_holds_only_its_host_slots_and_delays_no_other_host,
    multi_thread
);
/// 40 monitors of one user on a host that never answers, due before 10 others on a host that
/// answers at once. The slow host gets as many checks at once as the engine lets requests
/// through to it (4 host slots), not every check slot: the other host's monitors are all
/// checked while the slow host's first checks still wait for its answer (until the engine's
/// 30 s timeout). Before, its checks took all 32 slots, 28 of them only waiting for a host
/// slot, and the other host waited for those timeouts.
async fn a_slow_host_with_many_monitors_holds_only_its_host_slots_and_delays_no_other_host() {
    let (slow, _listener) = silent_host().await;
    let site = FixtureServer::builder()
        .page("/tea", "<p class=price>3.50 EUR</p>")
        .start()
        .await
        .unwrap();
    let api = Api::start_checking().await;
    let ann = api.user("ann@example.com").await;
    let mut on_slow = Vec::new();
    for i in 0..40 {
        let body = json!({"name": format!("slow {i}"), "url": format!("{slow}/page/{i}"),
                          "recurrenceInSeconds": 60});
        on_slow.push(id(&api.task(&ann, body).await));
    }
    // Every fast monitor was checked before any of the slow host's checks ended.
    ten_stored_before(
        (&api, &ann),
        (&site, 60),
        &on_slow,
        "a check of the slow host ended before the other host's monitors were checked",
    )
    .await;
    let leases = match api.backend() {
        Backend::Sqlite => "SELECT count(*) FROM tasks t WHERE t.lease_until IS NOT NULL",
        Backend::Postgres => "SELECT count(*) FROM schedules t WHERE t.lease_until IS NOT NULL",
    };
    assert_eq!(
        api.sql().await.count(leases).await,
        4,
        "the slow host holds its 4 host slots' worth of checks, no more"
    );
}

/// A host that answers each path the first time it is asked and never again: a monitor's first
/// check of it succeeds at once, and its quick samples then hang. Adds the requests it holds
/// unanswered to `hanging`.
async fn answers_once_host(hanging: Arc<AtomicUsize>) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let seen = Arc::new(std::sync::Mutex::new(std::collections::HashSet::new()));
        while let Ok((mut socket, _)) = listener.accept().await {
            let (seen, held) = (seen.clone(), hanging.clone());
            tokio::spawn(async move {
                let Some(path) = wachet::testing::read_request_path(&mut socket).await else {
                    return;
                };
                if seen.lock().unwrap().insert(path) {
                    let body = "<p class=price>3.50 EUR</p>";
                    let reply = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\n\
                         connection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = socket.write_all(reply.as_bytes()).await;
                    return;
                }
                held.fetch_add(1, Ordering::SeqCst);
                // Held open without an answer until the client gives up.
                let _ = socket.read(&mut [0u8; 64]).await;
                held.fetch_sub(1, Ordering::SeqCst);
            });
        }
    });
    format!("http://{addr}")
}

both!(
    slow_hosts_new_monitors_taking_samples_delay_no_other_hosts_new_monitors,
    multi_thread
);
/// 84 new monitors on 7 hosts that answer each page once: their first checks succeed, and the
/// fetches of their quick samples then hang until the samples' budget ends, 4 on each host (its
/// host slots). 10 new monitors of another host, created while those hang, are checked with
/// their samples and stored before any of the 84 is. Before, a sample held one of the 32
/// sampler permits while it waited for its host's slots: the 7 hosts' samples took them all,
/// and every other new monitor's first check waited for their budget. Now a sample waits for
/// room on its host first, holding nothing: a host's samples hold at most its slots' worth.
async fn slow_hosts_new_monitors_taking_samples_delay_no_other_hosts_new_monitors() {
    let hanging = Arc::new(AtomicUsize::new(0));
    let mut slow = Vec::new();
    for _ in 0..7 {
        slow.push(answers_once_host(hanging.clone()).await);
    }
    let site = FixtureServer::builder()
        .page("/tea", "<p class=price>3.50 EUR</p>")
        .start()
        .await
        .unwrap();
    let mut setup = Setup::checking();
    // Long enough for the other host's monitors on a busy machine, short for the test.
    setup.service.schedule.noise_sample_budget = Duration::from_secs(25);
    let api = Api::start_as(setup).await;
    let ann = api.user("ann@example.com").await;
    let mut on_slow = Vec::new();
    for i in 0..84 {
        let host = &slow[i % slow.len()];
        let body = json!({"name": format!("slow {i}"), "url": format!("{host}/page/{i}"),
                          "recurrenceInSeconds": 3600});
        on_slow.push(id(&api.task(&ann, body).await));
    }
    // The slow hosts' samples have begun: as many hang as their host slots let through.
    let started = Instant::now();
    while hanging.load(Ordering::SeqCst) < 28 && started.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        hanging.load(Ordering::SeqCst),
        28,
        "4 samples hang on each slow host"
    );
    // Time for the samples beyond them to ask for a permit (1.5 s apart).
    tokio::time::sleep(Duration::from_secs(2)).await;

    ten_stored_before(
        (&api, &ann),
        (&site, 3600),
        &on_slow,
        "a slow monitor's samples ended before the other host's new monitors were stored",
    )
    .await;
}

fn quotas(change: impl FnOnce(&mut Quotas)) -> StoreSettings {
    let mut quotas = Quotas::default();
    change(&mut quotas);
    StoreSettings {
        quotas,
        ..StoreSettings::default()
    }
}

fn schedule(max_value_bytes: usize) -> ScheduleSettings {
    ScheduleSettings {
        min_recurrence: 1,
        max_value_bytes,
        ..ScheduleSettings::default()
    }
}

/// The whole service ([`Setup::checking`]) over a store with these settings and a scheduler
/// with these.
async fn checking(store: StoreSettings, schedule: ScheduleSettings) -> Api {
    let mut setup = Setup::checking();
    setup.store = store;
    setup.service.schedule = schedule;
    Api::start_as(setup).await
}

both!(creating_a_monitor_past_the_cap_is_a_400_naming_the_limit);
async fn creating_a_monitor_past_the_cap_is_a_400_naming_the_limit() {
    let store = quotas(|q| q.monitors = 3);
    let mut setup = Setup::api();
    setup.store = store;
    let api = Api::start_as(setup).await;
    let (ann, bob) = (
        api.user("ann@example.com").await,
        api.user("bob@example.com").await,
    );
    let mut made = Vec::new();
    for i in 0..3 {
        made.push(id(&api
            .task(&ann, monitor(&format!("m{i}"), "https://example.com/"))
            .await));
    }
    let reply = api
        .put(
            &ann,
            "/thirdparty/v1/task",
            monitor("m3", "https://example.com/"),
        )
        .await;
    reply.field_error("maxMonitorsPerUser", "you have 3 monitors");
    assert!(
        reply.body["detail"].as_str().unwrap().contains("(3)"),
        "{}",
        reply.text
    );
    // The cap is per user; a deleted monitor makes room.
    api.task(&bob, monitor("b", "https://example.com/")).await;
    api.delete(&ann, &format!("/thirdparty/v1/task/{}", made[0]))
        .await
        .ok();
    api.task(&ann, monitor("m3", "https://example.com/")).await;
}

/// Waits up to 15 s until the newest entry of `task`'s history satisfies `done`; returns it.
async fn newest_where(api: &Api, user: &User, task: &str, done: impl Fn(&Value) -> bool) -> Value {
    let path = format!("/thirdparty/v1/data/list/{task}");
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(15) {
        let reply = api.get(user, &path).await;
        if let Some(newest) = reply.ok()["data"].as_array().unwrap().first()
            && done(newest)
        {
            return newest.clone();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no such entry of {task} within 15 s");
}

/// [`newest_where`] for the two newest entries: a change the scheduler's early check has
/// confirmed (`wachet::alerts::confirm`), so its alerts have raised.
async fn confirmed_where(api: &Api, user: &User, task: &str, done: impl Fn(&Value) -> bool) {
    let path = format!("/thirdparty/v1/data/list/{task}");
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(15) {
        let reply = api.get(user, &path).await;
        let data = reply.ok()["data"].as_array().unwrap().clone();
        if data.len() >= 2 && done(&data[0]) && done(&data[1]) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no such entry confirmed for {task} within 15 s");
}

both!(
    a_value_over_the_size_limit_is_stored_as_an_error_saying_so,
    multi_thread
);
async fn a_value_over_the_size_limit_is_stored_as_an_error_saying_so() {
    let site = FixtureServer::builder()
        .page("/big", format!("<p>{}</p>", "x".repeat(2000)))
        .page("/small", "<p>small</p>")
        .start()
        .await
        .unwrap();
    let api = checking(StoreSettings::default(), schedule(1000)).await;
    let ann = api.user("ann@example.com").await;
    let every_second = |path: &str| json!({"url": site.url(path), "recurrenceInSeconds": 1});
    let big = id(&api.task(&ann, every_second("/big")).await);
    let small = id(&api.task(&ann, every_second("/small")).await);
    let entry = newest_where(&api, &ann, &big, |_| true).await;
    assert_eq!(entry["raw"], Value::Null, "{entry}");
    assert_eq!(
        entry["error"], "the value is 2000 bytes, above the limit of 1000 bytes",
        "never cut short"
    );
    let entry = newest_where(&api, &ann, &small, |_| true).await;
    assert_eq!(entry["raw"], "small");
}

/// Text that zstd cannot shrink much, different for each `seed`.
fn noise(seed: u64, len: usize) -> String {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..len)
        .map(|_| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
            let alphabet = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
            char::from(alphabet[((state >> 33) % 62) as usize])
        })
        .collect()
}

both!(
    a_value_past_the_stored_bytes_quota_is_not_kept_and_the_count_follows_deletes,
    multi_thread
);
async fn a_value_past_the_stored_bytes_quota_is_not_kept_and_the_count_follows_deletes() {
    let site = FixtureServer::builder()
        .page("/noise", format!("<p>{}</p>", noise(0, 10_000)))
        .start()
        .await
        .unwrap();
    let store = quotas(|q| q.stored_bytes = 25_000);
    let api = checking(store, schedule(1 << 20)).await;
    let ann = api.user("ann@example.com").await;
    let body = json!({"url": site.url("/noise"), "recurrenceInSeconds": 1,
                      "alerts": [{"type": "NotEq"}, {"type": "Error"}]});
    let task = id(&api.task(&ann, body).await);
    newest_where(&api, &ann, &task, |e| e["raw"].is_string()).await;
    let mut refused = None;
    for seed in 1..10 {
        let value = noise(seed, 10_000);
        site.set(
            "/noise",
            wachet::testing::Reply::html(format!("<p>{value}</p>")),
        );
        let entry = newest_where(&api, &ann, &task, |e| {
            e["raw"] == value.as_str() || e["error"].is_string()
        })
        .await;
        if entry["error"].is_string() {
            refused = Some((seed, entry));
            break;
        }
        // Each change is raised once its confirming check agrees.
        confirmed_where(&api, &ann, &task, |e| e["raw"] == value.as_str()).await;
    }
    let (seed, entry) = refused.expect("a value past 25,000 bytes is refused");
    let error = entry["error"].as_str().unwrap();
    assert!(
        error.contains("was not stored") && error.contains("of the 25000 bytes this server keeps"),
        "{error}"
    );
    assert!(seed >= 2, "two values fit: refused at value {seed}");
    // Later checks find the same value and fail the same way: one Error, once the failure
    // lasted the early check's delay (5 s: seven checks a second apart), and no change raised
    // again and again for a value never kept.
    let path = format!("/thirdparty/v1/data/list/{task}?count=500");
    let before = api.get(&ann, &path).await.ok()["data"]
        .as_array()
        .unwrap()
        .len();
    let started = Instant::now();
    while api.get(&ann, &path).await.ok()["data"]
        .as_array()
        .unwrap()
        .len()
        < before + 7
    {
        assert!(started.elapsed() < Duration::from_secs(15), "checks go on");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let list = api
        .get(
            &ann,
            &format!("/thirdparty/v1/notification/list?taskId={task}&count=500"),
        )
        .await;
    let list = list.ok()["data"].as_array().unwrap().clone();
    let errors: Vec<&Value> = list.iter().filter(|n| n["error"].is_string()).collect();
    assert_eq!(errors.len(), 1, "{list:?}");
    assert_eq!(
        list.len() as u64,
        seed,
        "a change for each value kept, then one Error"
    );

    // The counter against a count of what is stored, in each backend's own tables: each value
    // a monitor names at its stored size, and 160 bytes and the error text of each entry.
    let db = api.sql().await;
    let (used, recount) = match api.backend() {
        Backend::Sqlite => (
            "SELECT stored_bytes FROM users WHERE email = 'ann@example.com'",
            "SELECT (SELECT coalesce(sum(bytes), 0) FROM task_contents) \
             + (SELECT count(*) * 160 + coalesce(sum(length(CAST(error AS BLOB))), 0) \
                FROM entries)",
        ),
        Backend::Postgres => (
            "SELECT sum(s.bytes) FROM user_storage s JOIN users u ON u.id = s.user_id \
             WHERE u.email = 'ann@example.com'",
            "SELECT (SELECT coalesce(sum(length(c.body)), 0) FROM contents c JOIN \
                     (SELECT DISTINCT task_id, content_hash FROM entries) d \
                     ON d.content_hash = c.hash) \
             + (SELECT count(*) * 160 + coalesce(sum(octet_length(error)), 0) FROM entries)",
        ),
    };
    let stored = db.count(used).await;
    assert_eq!(
        stored,
        db.count(recount).await,
        "the counter matches what is stored"
    );
    assert!(stored <= 25_000 + 160 * db.count("SELECT count(*) FROM entries").await);
    // Deleting the monitor gives its bytes back.
    api.delete(&ann, &format!("/thirdparty/v1/task/{task}"))
        .await
        .ok();
    assert_eq!(db.count(used).await, 0);
}

both!(
    past_the_notifications_per_hour_one_notification_says_alerts_were_not_sent,
    multi_thread
);
async fn past_the_notifications_per_hour_one_notification_says_alerts_were_not_sent() {
    let site = FixtureServer::builder()
        .page("/price", "<p>0</p>")
        .start()
        .await
        .unwrap();
    let store = quotas(|q| q.notifications_per_hour = 2);
    let api = checking(store, schedule(1 << 20)).await;
    let ann = api.user("ann@example.com").await;
    let body = json!({"name": "price", "url": site.url("/price"), "recurrenceInSeconds": 1,
                      "alerts": [{"type": "NotEq"}]});
    let task = id(&api.task(&ann, body).await);
    newest_where(&api, &ann, &task, |e| e["raw"] == "0").await;
    // Five changes: two notifications, then one saying alerts are not sent, then nothing.
    for price in 1..=5 {
        site.set(
            "/price",
            wachet::testing::Reply::html(format!("<p>{price}</p>")),
        );
        // Each change is raised once its confirming check agrees.
        confirmed_where(&api, &ann, &task, |e| {
            e["raw"] == price.to_string().as_str()
        })
        .await;
    }
    let list = api
        .get(
            &ann,
            &format!("/thirdparty/v1/notification/list?taskId={task}"),
        )
        .await;
    let list = list.ok()["data"].as_array().unwrap().clone();
    let currents: Vec<&Value> = list.iter().map(|n| &n["current"]).collect();
    assert_eq!(list.len(), 3, "{currents:?}");
    let notice = api
        .get(
            &ann,
            &format!("/thirdparty/v1/notification/{}", id(&list[0])),
        )
        .await;
    let expression = notice.ok()["syntheticExpression"].as_str().unwrap();
    assert!(
        expression.starts_with("1 alert(s) not sent")
            && expression.contains("2 notifications in the last hour"),
        "{expression}"
    );
    assert_eq!(list[0]["current"], Value::Null);
    assert_eq!(list[1]["current"], "2");
    assert_eq!(list[2]["current"], "1");
}

both!(a_claim_takes_turns_between_users_and_keeps_each_within_their_share);
async fn a_claim_takes_turns_between_users_and_keeps_each_within_their_share() {
    use wachet_server::store::{Claim, now_millis};
    let api = Api::start().await;
    let (ann, bob) = (
        api.user("ann@example.com").await,
        api.user("bob@example.com").await,
    );
    // Ann's ten rendered monitors were due first; Bob's one comes after them.
    let rendered = |name: &str| {
        json!({"name": name, "url": "https://example.com/", "recurrenceInSeconds": 60,
               "dynamicContent": true})
    };
    let mut anns = Vec::new();
    for i in 0..10 {
        anns.push(id(&api.task(&ann, rendered(&format!("a{i}"))).await));
    }
    tokio::time::sleep(Duration::from_millis(5)).await;
    let bobs = id(&api.task(&bob, rendered("b")).await);
    let plain = id(&api
        .task(&bob, monitor("plain", "https://example.com/"))
        .await);
    let now = now_millis();
    let claim = |limit, share| Claim {
        limit,
        share,
        browser: true,
        locations: wachet_server::store::Locations::DEFAULT,
        buckets: wachet_server::store::HostBuckets::ALL,
        hosts: Default::default(),
    };
    let ids = |due: Vec<wachet_server::store::DueCheck>| -> Vec<String> {
        due.into_iter().map(|d| d.monitor.id.unwrap()).collect()
    };
    // Two places: Ann's earliest and then Bob's, not Ann's first two.
    let first = ids(api
        .store
        .claim_due(now, now + 60_000, &claim(2, 4))
        .await
        .unwrap());
    assert_eq!(first, vec![anns[0].clone(), bobs.clone()]);
    // Ann holds one of her share of two (four slots, two users): one more, however many wait.
    let next = ids(api
        .store
        .claim_due(now, now + 60_000, &claim(10, 4))
        .await
        .unwrap());
    assert_eq!(next, vec![anns[1].clone()]);
    assert!(
        !next.contains(&plain),
        "plain monitors are claimed for the other slots"
    );
    // The other kind is claimed against its own slots.
    let alone = Claim {
        limit: 10,
        share: 4,
        browser: false,
        locations: wachet_server::store::Locations::DEFAULT,
        buckets: wachet_server::store::HostBuckets::ALL,
        hosts: Default::default(),
    };
    let due = ids(api
        .store
        .claim_due(now, now + 60_000, &alone)
        .await
        .unwrap());
    assert_eq!(due, vec![plain]);
}

both!(a_user_with_one_due_monitor_gets_a_turn_behind_another_users_backlog_of_thousands);
async fn a_user_with_one_due_monitor_gets_a_turn_behind_another_users_backlog_of_thousands() {
    use wachet_server::store::{Claim, now_millis};
    let api = Api::start().await;
    let (ann, bob) = (
        api.user("ann@example.com").await,
        api.user("bob@example.com").await,
    );
    // More overdue monitors of Ann than a claim reads to find who waits (1,024 on SQLite), all
    // due before Bob's one.
    for batch in 0..2 {
        let monitors: Vec<Value> = (0..800)
            .map(|i| monitor(&format!("a{batch}-{i}"), "https://example.com/"))
            .collect();
        api.put(&ann, "/thirdparty/v1/tasks", json!(monitors))
            .await
            .ok();
    }
    tokio::time::sleep(Duration::from_millis(5)).await;
    let bobs = id(&api.task(&bob, monitor("b", "https://example.com/")).await);
    let claim = Claim {
        limit: 2,
        share: 4,
        browser: false,
        locations: wachet_server::store::Locations::DEFAULT,
        buckets: wachet_server::store::HostBuckets::ALL,
        hosts: Default::default(),
    };
    let now = now_millis();
    let due = api
        .store
        .claim_due(now, now + 60_000, &claim)
        .await
        .unwrap();
    let owners: Vec<&str> = due.iter().map(|d| d.user.as_str()).collect();
    assert_eq!(
        owners,
        [ann.account.id.as_str(), bob.account.id.as_str()],
        "one turn each"
    );
    assert_eq!(due[1].monitor.id.as_deref(), Some(bobs.as_str()));
}
