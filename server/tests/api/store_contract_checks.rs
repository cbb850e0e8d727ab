//! The contract of [`HistoryStore`], [`ScheduleStore`] and [`OutboxStore`] on both backends
//! (each `contract!` test runs on SQLite and on PostgreSQL): claims under leases that expire and
//! are renewed, two store handles (two pools, as two processes have) claiming at once never
//! given the same monitor or delivery, a check recorded all or nothing, retention and garbage
//! collection, the quota's count, deliveries with their retries, tests and hourly bound, and
//! confirmation mails.

use crate::store_contract::{TestStore, add_user, contract};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;
use wachet::alerts::confirm::ConfirmState;
use wachet::model::{
    Alert, AlertType, ClientData, JobType, MessagingServiceType, Monitor, NoiseMask,
    NotificationEndpoint,
};
use wachet_server::store::postgres::PgStore;
use wachet_server::store::sqlite::{SqliteStore, StoreSettings};
use wachet_server::store::*;

/// A plain monitor of `url`, checked hourly.
fn monitor(url: &str) -> Monitor {
    serde_json::from_value(serde_json::json!({
        "name": url, "url": url, "recurrenceInSeconds": 3600
    }))
    .expect("a monitor")
}

/// Creates `n` monitors of `user` (due at once) and returns their ids.
async fn monitors(store: &dyn TestStore, user: &str, n: usize) -> Vec<String> {
    let mut ids = Vec::new();
    for i in 0..n {
        let created = store
            .create_task(user, &monitor(&format!("https://example.com/{i}")))
            .await
            .expect("create monitor");
        ids.push(created.id.expect("an id"));
    }
    ids
}

fn plain(limit: u32) -> Claim {
    Claim {
        limit,
        share: 1_000,
        browser: false,
        locations: wachet_server::store::Locations::DEFAULT,
        buckets: wachet_server::store::HostBuckets::ALL,
        hosts: Default::default(),
    }
}

fn ids(due: &[DueCheck]) -> Vec<String> {
    due.iter()
        .map(|d| d.monitor.id.clone().expect("an id"))
        .collect()
}

/// What a claim gives the check it starts: the definition's version and the fencing token.
trait Claimed {
    fn claim(&self) -> (Millis, i64);
}

impl Claimed for DueCheck {
    fn claim(&self) -> (Millis, i64) {
        (self.version, self.token)
    }
}

/// A check of `task` under `claim` (version and token) that found `value`, due again in an hour.
fn check(task: &str, (version, token): (Millis, i64), value: &str) -> CheckRecord {
    CheckRecord {
        task: task.to_string(),
        version,
        token,
        own: ClientData::value(chrono::Utc::now(), value.to_string()),
        pages: Vec::new(),
        notifications: Vec::new(),
        alert_states: Vec::new(),
        next_check_at: now_millis() + 3_600_000,
        learned: Vec::new(),
        learned_order: None,
        sampled: false,
        noise_notice: None,
    }
}

fn notification(task: &str, value: &str) -> NewNotification {
    NewNotification {
        task_id: task.to_string(),
        page_url: None,
        job_type: JobType::SinglePage,
        alert: Alert {
            kind: AlertType::NotEq,
            value: None,
            parameters: None,
            remind_every_seconds: None,
        },
        created_at: now_millis(),
        current: Some(value.to_string()),
        comparand: None,
        error: None,
        url: Some("https://example.com/".into()),
        synthetic_expression: "content changed".into(),
        html: format!("<p>{value}</p>"),
        endpoints: vec![NotificationEndpoint {
            kind: MessagingServiceType::Webhook,
            value: Some("https://hooks.example/in".into()),
            confirmed: None,
        }],
        explanation: None,
    }
}

/// The version a claim gives `task` (claimed far ahead, so it is due whatever its time).
async fn claimed(store: &dyn TestStore, task: &str) -> DueCheck {
    let later = now_millis() + 10 * 3_600_000;
    store
        .claim_due(later, later + 60_000, &plain(1_000))
        .await
        .expect("claim")
        .into_iter()
        .find(|c| c.monitor.id.as_deref() == Some(task))
        .expect("the monitor is due")
}

/// The values of a series, newest first.
async fn values(store: &dyn TestStore, user: &str, task: &str) -> Vec<Option<String>> {
    let page = TimePage {
        from: None,
        to: None,
        after: None,
        limit: 100,
    };
    store
        .entries(user, task, &page)
        .await
        .expect("entries")
        .into_iter()
        .map(|(_, data)| data.raw.or(data.error))
        .collect()
}

contract!(
    a_claim_takes_no_more_of_a_hosts_monitors_than_its_room,
    |store: Arc<dyn TestStore>| async move {
        let user = add_user(&*store, "hosts@example.com").await;
        let (slow, other) = ("https://slow.example/", "https://other.example:8080/");
        let mut on_slow = Vec::new();
        // The slow host's monitors are due first, as an overdue backlog is.
        for i in 0..10 {
            let created = store
                .create_task(&user, &monitor(&format!("{slow}{i}")))
                .await
                .expect("create");
            on_slow.push(created.id.expect("an id"));
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
        for i in 0..3 {
            store
                .create_task(&user, &monitor(&format!("{other}{i}")))
                .await
                .expect("create");
        }
        let slow_host = host_hash(slow);
        assert_ne!(slow_host, host_hash(other), "another port is another host");
        assert_eq!(
            slow_host,
            host_hash("https://SLOW.example:443/x"),
            "as the engine keys it"
        );
        let now = now_millis();
        let with = |per_host, in_flight: Vec<(i64, u32)>| Claim {
            hosts: BusyHosts {
                per_host,
                in_flight,
            },
            ..plain(10)
        };
        let on = |due: &[DueCheck], host: &str| {
            due.iter()
                .filter(|c| {
                    c.monitor
                        .url
                        .as_deref()
                        .is_some_and(|u| u.starts_with(host))
                })
                .count()
        };

        // The slow host already has 3 of its 4 checks in flight: one more of it.
        let first = store
            .claim_due(now, now + 60_000, &with(4, vec![(slow_host, 3)]))
            .await
            .unwrap();
        assert_eq!(on(&first, slow), 1, "{:?}", ids(&first));
        // At its limit, none of it: its backlog, due first, is passed over for the others.
        let full = store
            .claim_due(now, now + 60_000, &with(4, vec![(slow_host, 4)]))
            .await
            .unwrap();
        assert_eq!(
            (on(&full, slow), on(&full, other)),
            (0, 3),
            "{:?}",
            ids(&full)
        );
        // With nothing in flight, at most its limit in one claim.
        let fresh = store
            .claim_due(now, now + 60_000, &with(4, Vec::new()))
            .await
            .unwrap();
        assert_eq!(on(&fresh, slow), 4, "{:?}", ids(&fresh));
        // No limit: the rest of the backlog at once.
        let unlimited = store
            .claim_due(now, now + 60_000, &with(0, vec![(slow_host, 100)]))
            .await
            .unwrap();
        assert_eq!(on(&unlimited, slow), 5, "{:?}", ids(&unlimited));
        let mut claimed: Vec<String> = [first, fresh, unlimited]
            .iter()
            .flat_map(|d| ids(d))
            .collect();
        claimed.retain(|id| on_slow.contains(id));
        claimed.sort();
        on_slow.sort();
        assert_eq!(claimed, on_slow, "each of the slow host's monitors once");
    }
);

contract!(due_monitors_are_claimed_once_under_a_lease, |store: Arc<
    dyn TestStore,
>| async move {
    let user = add_user(&*store, "ada@example.com").await;
    let tasks = monitors(&*store, &user, 3).await;
    let now = now_millis();
    let first = store.claim_due(now, now + 60_000, &plain(2)).await.unwrap();
    assert_eq!(first.len(), 2, "at most the limit");
    assert!(first.iter().all(|c| c.user == user && c.due_at <= now));
    let second = store
        .claim_due(now, now + 60_000, &plain(10))
        .await
        .unwrap();
    let mut all = ids(&first);
    all.extend(ids(&second));
    all.sort();
    let mut expected = tasks.clone();
    expected.sort();
    assert_eq!(all, expected, "each monitor once, none held twice");
    assert!(
        store
            .claim_due(now, now + 60_000, &plain(10))
            .await
            .unwrap()
            .is_empty()
    );
    // Browser checks are claimed apart.
    let browser = Claim {
        browser: true,
        locations: wachet_server::store::Locations::DEFAULT,
        buckets: wachet_server::store::HostBuckets::ALL,
        hosts: Default::default(),
        ..plain(10)
    };
    assert!(
        store
            .claim_due(now, now + 60_000, &browser)
            .await
            .unwrap()
            .is_empty()
    );
});

/// A worker as `wachet serve` describes itself.
fn worker(name: &str) -> WorkerInfo {
    WorkerInfo {
        id: new_id(),
        roles: "api,worker,deliver".into(),
        location: None,
        kinds: "plain,browser".into(),
        host: name.into(),
        pid: 1,
        started_at: now_millis(),
    }
}

fn holding(checks: &[&DueCheck]) -> Holdings {
    Holdings {
        checks: checks
            .iter()
            .map(|due| Held {
                id: due.monitor.id.clone().expect("an id"),
                token: due.token,
            })
            .collect(),
        ..Holdings::default()
    }
}

contract!(
    an_expired_lease_is_claimed_again_and_one_a_beat_renewed_is_not,
    |store: Arc<dyn TestStore>| async move {
        let user = add_user(&*store, "ada@example.com").await;
        let tasks = monitors(&*store, &user, 2).await;
        let now = now_millis();
        let due = store.claim_due(now, now + 300, &plain(10)).await.unwrap();
        assert_eq!(due.len(), 2);
        let first = due
            .iter()
            .find(|d| d.monitor.id.as_deref() == Some(tasks[0].as_str()))
            .expect("claimed");
        // Renewing what nobody holds, or what does not exist, claims nothing: it is lost.
        let mut held = holding(&[first]);
        let ghost = Held {
            id: new_id(),
            token: 1,
        };
        held.checks.push(ghost.clone());
        let me = worker("a");
        let beat = store
            .beat(&me, &held, Duration::from_secs(60))
            .await
            .unwrap();
        assert_eq!(
            beat.lost.checks,
            vec![ghost],
            "only the claim nobody holds is lost"
        );
        tokio::time::sleep(Duration::from_millis(700)).await;
        let now = now_millis();
        let again = store
            .claim_due(now, now + 60_000, &plain(10))
            .await
            .unwrap();
        assert_eq!(ids(&again), vec![tasks[1].clone()], "only the lapsed lease");
        let before = due
            .iter()
            .find(|d| d.monitor.id.as_deref() == Some(tasks[1].as_str()))
            .expect("claimed");
        assert_eq!(
            again[0].token,
            before.token + 1,
            "each claim raises the token"
        );
        let live = store.live_workers(Duration::from_secs(60)).await.unwrap();
        assert_eq!(
            live.iter().map(|w| w.info.clone()).collect::<Vec<_>>(),
            vec![me]
        );
    }
);

contract!(
    a_check_that_outlived_its_lease_stores_nothing_and_its_beat_says_so,
    |store: Arc<dyn TestStore>| async move {
        let user = add_user(&*store, "ada@example.com").await;
        let task = monitors(&*store, &user, 1).await.remove(0);
        let now = now_millis();
        let paused = store.claim_due(now, now + 200, &plain(1)).await.unwrap();
        assert_eq!(paused.len(), 1);
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = now_millis();
        let taken = store.claim_due(now, now + 60_000, &plain(1)).await.unwrap();
        assert_eq!(
            ids(&taken),
            vec![task.clone()],
            "the lapsed claim is taken over"
        );
        assert!(taken[0].token > paused[0].token, "with a newer token");
        // The paused worker wakes up: its beat finds the claim lost, its record stores nothing,
        // and finishing with its token leaves the new claim alone.
        let beat = store
            .beat(
                &worker("paused"),
                &holding(&[&paused[0]]),
                Duration::from_secs(60),
            )
            .await
            .unwrap();
        assert_eq!(beat.lost.checks.len(), 1, "the beat reports the claim lost");
        assert_eq!(
            store
                .record_check(&check(&task, paused[0].claim(), "stale"))
                .await
                .unwrap(),
            Recorded::Fenced
        );
        store
            .finish_check(&task, paused[0].version, paused[0].token, now)
            .await
            .unwrap();
        assert!(
            values(&*store, &user, &task).await.is_empty(),
            "nothing stored"
        );
        let later = now_millis();
        assert!(
            store
                .claim_due(later, later + 60_000, &plain(1))
                .await
                .unwrap()
                .is_empty(),
            "the new claim still holds the monitor"
        );
        assert_eq!(
            store
                .record_check(&check(&task, taken[0].claim(), "fresh"))
                .await
                .unwrap(),
            Recorded::Stored
        );
        assert_eq!(
            values(&*store, &user, &task).await,
            vec![Some("fresh".into())]
        );
    }
);

contract!(
    a_worker_that_leaves_hands_its_claims_back_at_once,
    |store: Arc<dyn TestStore>| async move {
        let user = add_user(&*store, "ada@example.com").await;
        let task = monitors(&*store, &user, 1).await.remove(0);
        let me = worker("leaving");
        let now = now_millis();
        let due = store
            .claim_due(now, now + 3_600_000, &plain(1))
            .await
            .unwrap();
        assert_eq!(due.len(), 1);
        store
            .beat(&me, &holding(&[&due[0]]), Duration::from_secs(3_600))
            .await
            .unwrap();
        store.leave(&me.id, &holding(&[&due[0]])).await.unwrap();
        assert!(
            store
                .live_workers(Duration::from_secs(60))
                .await
                .unwrap()
                .is_empty(),
            "it is no longer live"
        );
        let now = now_millis();
        let again = store.claim_due(now, now + 60_000, &plain(1)).await.unwrap();
        assert_eq!(
            ids(&again),
            vec![task.clone()],
            "claimed again at once, due as it was"
        );
        // What the leaving process could not stop stores nothing.
        assert_eq!(
            store
                .record_check(&check(&task, due[0].claim(), "late"))
                .await
                .unwrap(),
            Recorded::Fenced
        );
    }
);

contract!(
    a_delivery_that_outlived_its_lease_records_nothing,
    |store: Arc<dyn TestStore>| async move {
        let user = add_user(&*store, "ada@example.com").await;
        let task = monitors(&*store, &user, 1).await.remove(0);
        let due = claimed(&*store, &task).await;
        let mut record = check(&task, due.claim(), "Tea 3.50");
        record.notifications = vec![notification(&task, "Tea 3.50")];
        assert_eq!(store.record_check(&record).await.unwrap(), Recorded::Stored);
        let now = now_millis();
        let paused = store.claim_deliveries(now, now + 200, 10).await.unwrap();
        assert_eq!(paused.len(), 1);
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = now_millis();
        let taken = store.claim_deliveries(now, now + 60_000, 10).await.unwrap();
        assert_eq!(taken.len(), 1, "the lapsed delivery is taken over");
        let failed = DeliveryOutcome::Failed {
            error: "stale".into(),
        };
        assert!(
            !store
                .finish_delivery(&paused[0].id, paused[0].token, &failed)
                .await
                .unwrap(),
            "the stale try records nothing"
        );
        assert!(
            store
                .finish_delivery(&taken[0].id, taken[0].token, &DeliveryOutcome::Delivered)
                .await
                .unwrap()
        );
        let notification = taken[0].notification.id.clone().expect("a notification");
        let records = store.delivery_records(&notification).await.unwrap();
        assert_eq!(records[0].state, "delivered");
        assert_eq!(records[0].attempts, 1, "one try recorded");
    }
);

contract!(
    finishing_a_check_sets_its_next_time_unless_the_definition_changed,
    |store: Arc<dyn TestStore>| async move {
        let user = add_user(&*store, "ada@example.com").await;
        let tasks = monitors(&*store, &user, 2).await;
        let now = now_millis();
        let due = store
            .claim_due(now, now + 60_000, &plain(10))
            .await
            .unwrap();
        assert_eq!(due.len(), 2);
        let claim = |task: &str| {
            due.iter()
                .find(|c| c.monitor.id.as_deref() == Some(task))
                .expect("claimed")
                .claim()
        };
        let hour = now + 3_600_000;
        let (version, token) = claim(&tasks[0]);
        store
            .finish_check(&tasks[0], version, token, hour)
            .await
            .unwrap();
        // A check of an older version frees the monitor but keeps its due time.
        let (version, token) = claim(&tasks[1]);
        store
            .finish_check(&tasks[1], version - 1, token, hour)
            .await
            .unwrap();
        store.finish_check(&new_id(), 0, 0, hour).await.unwrap();
        let now = now_millis();
        let again = store
            .claim_due(now, now + 60_000, &plain(10))
            .await
            .unwrap();
        assert_eq!(ids(&again), vec![tasks[1].clone()]);
        // (The first is held by the claim above, which SQLite's caller clock sees lapse by then.)
        let later = store
            .claim_due(hour, hour + 60_000, &plain(10))
            .await
            .unwrap();
        assert!(ids(&later).contains(&tasks[0]), "due in an hour");
    }
);

contract!(
    a_check_is_recorded_with_its_notification_and_delivery,
    |store: Arc<dyn TestStore>| async move {
        let user = add_user(&*store, "ada@example.com").await;
        let task = monitors(&*store, &user, 1).await.remove(0);
        let due = claimed(&*store, &task).await;
        let mut record = check(&task, due.claim(), "Tea 3.50");
        record.pages = vec![(
            "https://example.com/a".into(),
            Some("Page A".into()),
            ClientData::value(chrono::Utc::now(), "A".into()),
        )];
        record.notifications = vec![notification(&task, "Tea 3.50")];
        assert_eq!(store.record_check(&record).await.unwrap(), Recorded::Stored);
        assert_eq!(
            values(&*store, &user, &task).await,
            vec![Some("Tea 3.50".into())]
        );
        let shown = store.task(&user, &task).await.unwrap();
        assert_eq!(
            shown.data.and_then(|d| d.raw).as_deref(),
            Some("Tea 3.50"),
            "the monitor's latest data"
        );
        let states = store.alert_states(&task).await.unwrap();
        assert_eq!(states.own.alerts.last_value.as_deref(), Some("Tea 3.50"));
        assert_eq!(
            states
                .pages
                .get("https://example.com/a")
                .and_then(|s| s.alerts.last_value.clone()),
            Some("A".into())
        );
        // The lease was freed and the next check is an hour away.
        let now = now_millis();
        assert!(
            store
                .claim_due(now, now + 60_000, &plain(10))
                .await
                .unwrap()
                .is_empty()
        );
        // Its delivery waits in the outbox, and is claimed once.
        let deliveries = store.claim_deliveries(now, now + 60_000, 10).await.unwrap();
        assert_eq!(deliveries.len(), 1);
        let delivery = &deliveries[0];
        assert_eq!(delivery.target, "https://hooks.example/in");
        assert_eq!(delivery.notification.current.as_deref(), Some("Tea 3.50"));
        assert!(
            store
                .claim_deliveries(now, now + 60_000, 10)
                .await
                .unwrap()
                .is_empty()
        );
        store
            .finish_delivery(&delivery.id, delivery.token, &DeliveryOutcome::Delivered)
            .await
            .unwrap();
        let notification = delivery.notification.id.clone().expect("a notification id");
        let records = store.delivery_records(&notification).await.unwrap();
        assert_eq!(records.len(), 1);
        assert_eq!(
            (records[0].state.as_str(), records[0].attempts),
            ("delivered", 1)
        );
        let counts = store.delivery_counts().await.unwrap();
        assert!(counts.contains(&("delivered".to_string(), 1)), "{counts:?}");
        // A stored state is what the next check reads, not the history.
        let mut kept = states.own.clone();
        kept.failures = 3;
        let mut next = check(&task, due.claim(), "Tea 3.60");
        next.alert_states = vec![(None, Some(kept))];
        assert_eq!(store.record_check(&next).await.unwrap(), Recorded::Stored);
        assert_eq!(store.alert_states(&task).await.unwrap().own.failures, 3);
    }
);

contract!(
    an_unchanged_value_keeps_its_change_time_and_a_stale_check_of_it_stores_nothing,
    |store: Arc<dyn TestStore>| async move {
        let user = add_user(&*store, "ada@example.com").await;
        let task = monitors(&*store, &user, 1).await.remove(0);
        let millis = |at: chrono::DateTime<chrono::Utc>| at.timestamp_millis();
        let first = check(&task, claimed(&*store, &task).await.claim(), "Tea 3.50");
        assert_eq!(store.record_check(&first).await.unwrap(), Recorded::Stored);
        let after_first = store.stored_bytes(&task).await.unwrap().used;
        tokio::time::sleep(Duration::from_millis(5)).await;

        // The same value again, with an alert state to keep: stored, counted and charged, the
        // newest check the latest data, the value's change time the first check's.
        let due = claimed(&*store, &task).await;
        let mut again = check(&task, due.claim(), "Tea 3.50");
        let mut kept = store.alert_states(&task).await.unwrap().own;
        kept.failures = 2;
        again.alert_states = vec![(None, Some(kept))];
        assert_eq!(store.record_check(&again).await.unwrap(), Recorded::Stored);
        let after_again = store.stored_bytes(&task).await.unwrap().used;
        assert!(after_again > after_first, "the entry is charged");
        let shown = store.task(&user, &task).await.unwrap().data.expect("data");
        assert_eq!(
            millis(shown.last_check_timestamp),
            millis(again.own.last_check_timestamp),
            "the newest check is the latest data"
        );
        assert_eq!(
            shown.value_changed_timestamp.map(millis),
            Some(millis(first.own.last_check_timestamp)),
            "the value last changed at the first check"
        );
        assert_eq!(store.alert_states(&task).await.unwrap().own.failures, 2);
        let two = vec![Some("Tea 3.50".to_string()); 2];
        assert_eq!(values(&*store, &user, &task).await, two);

        // A check whose claim was taken over stores nothing, nor one of an edited monitor.
        tokio::time::sleep(Duration::from_millis(5)).await;
        let due = claimed(&*store, &task).await;
        let (version, token) = due.claim();
        let stale = check(&task, (version, token - 1), "Tea 3.50");
        assert_eq!(store.record_check(&stale).await.unwrap(), Recorded::Fenced);
        tokio::time::sleep(Duration::from_millis(5)).await;
        let mut renamed = store.task(&user, &task).await.unwrap();
        renamed.name = Some("Renamed".into());
        store.update_task(&user, &renamed).await.unwrap();
        let edited = check(&task, due.claim(), "Tea 3.50");
        assert_eq!(store.record_check(&edited).await.unwrap(), Recorded::Edited);
        assert_eq!(values(&*store, &user, &task).await, two, "nothing stored");
        assert_eq!(
            store.stored_bytes(&task).await.unwrap().used,
            after_again,
            "nothing charged"
        );
    }
);

contract!(a_check_that_fails_in_part_stores_nothing, |store: Arc<
    dyn TestStore,
>| async move {
    let user = add_user(&*store, "ada@example.com").await;
    let task = monitors(&*store, &user, 1).await.remove(0);
    let due = claimed(&*store, &task).await;
    let before = store.stored_bytes(&task).await.unwrap();
    let mut record = check(&task, due.claim(), "Tea 3.50");
    // Its notification names a monitor that does not exist: the whole check must go.
    record.notifications = vec![notification(&new_id(), "Tea 3.50")];
    assert!(store.record_check(&record).await.is_err());
    assert!(values(&*store, &user, &task).await.is_empty(), "no entry");
    assert_eq!(
        store.stored_bytes(&task).await.unwrap(),
        before,
        "nothing charged"
    );
    let now = now_millis();
    assert!(
        store
            .claim_deliveries(now, now + 60_000, 10)
            .await
            .unwrap()
            .is_empty()
    );
    // The claim still holds it (its lease runs out as a crash's would).
    assert!(
        store
            .claim_due(now, now + 60_000, &plain(10))
            .await
            .unwrap()
            .is_empty()
    );
});

contract!(
    checks_recorded_together_each_end_as_they_would_alone,
    |store: Arc<dyn TestStore>| async move {
        let user = add_user(&*store, "ada@example.com").await;
        let tasks = monitors(&*store, &user, 5).await;
        let now = now_millis();
        let due = store
            .claim_due(now, now + 60_000, &plain(10))
            .await
            .unwrap();
        assert_eq!(due.len(), 5);
        let claim = |task: &str| {
            due.iter()
                .find(|d| d.monitor.id.as_deref() == Some(task))
                .expect("claimed")
                .claim()
        };
        let mut noted = check(&tasks[0], claim(&tasks[0]), "noted");
        noted.notifications = vec![notification(&tasks[0], "noted")];
        let (version, token) = claim(&tasks[1]);
        let fenced = check(&tasks[1], (version, token - 1), "fenced");
        let (version, token) = claim(&tasks[2]);
        let edited = check(&tasks[2], (version - 1, token), "edited");
        let gone = check(&new_id(), (0, 0), "gone");
        // Fails half way (its notification names no monitor): it alone stores nothing.
        let mut broken = check(&tasks[3], claim(&tasks[3]), "broken");
        broken.notifications = vec![notification(&new_id(), "broken")];
        let alone = check(&tasks[4], claim(&tasks[4]), "alone");
        let outcomes = store
            .record_checks(&[noted, fenced, edited, gone, broken, alone])
            .await;
        assert_eq!(outcomes.len(), 6);
        assert!(matches!(outcomes[0], Ok(Recorded::Stored)), "{outcomes:?}");
        assert!(matches!(outcomes[1], Ok(Recorded::Fenced)), "{outcomes:?}");
        assert!(matches!(outcomes[2], Ok(Recorded::Edited)), "{outcomes:?}");
        assert!(
            matches!(outcomes[3], Err(StoreError::NotFound)),
            "{outcomes:?}"
        );
        assert!(outcomes[4].is_err(), "{outcomes:?}");
        assert!(matches!(outcomes[5], Ok(Recorded::Stored)), "{outcomes:?}");
        let stored = [
            (0, vec![Some("noted".to_string())]),
            (1, vec![]),
            (2, vec![]),
            (3, vec![]),
            (4, vec![Some("alone".to_string())]),
        ];
        for (i, values_after) in stored {
            assert_eq!(
                values(&*store, &user, &tasks[i]).await,
                values_after,
                "monitor {i}"
            );
        }
        // The stored check's notification went with it, into the outbox.
        let later = now_millis();
        let deliveries = store
            .claim_deliveries(later, later + 60_000, 10)
            .await
            .unwrap();
        assert_eq!(deliveries.len(), 1, "one delivery, of the stored check");
        // The edited monitor is freed and due; the fenced record and the failed one leave their
        // claims holding; the stored ones are due in an hour.
        let again = store
            .claim_due(later, later + 60_000, &plain(10))
            .await
            .unwrap();
        assert_eq!(ids(&again), vec![tasks[2].clone()]);
    }
);

contract!(
    a_check_of_an_old_definition_or_a_deleted_monitor_stores_nothing,
    |store: Arc<dyn TestStore>| async move {
        let user = add_user(&*store, "ada@example.com").await;
        let task = monitors(&*store, &user, 1).await.remove(0);
        let due = claimed(&*store, &task).await;
        let stale = check(&task, (due.version - 1, due.token), "old");
        assert_eq!(store.record_check(&stale).await.unwrap(), Recorded::Edited);
        assert!(values(&*store, &user, &task).await.is_empty());
        let now = now_millis();
        let again = store
            .claim_due(now, now + 60_000, &plain(10))
            .await
            .unwrap();
        assert_eq!(ids(&again), vec![task.clone()], "freed, still due");
        let gone = check(&new_id(), (0, 0), "x");
        assert!(matches!(
            store.record_check(&gone).await,
            Err(StoreError::NotFound)
        ));
        assert!(matches!(
            store.alert_states(&new_id()).await,
            Err(StoreError::NotFound)
        ));
        assert!(matches!(
            store.stored_bytes(&new_id()).await,
            Err(StoreError::NotFound)
        ));
        // Another user's monitor has no history for this one.
        let bob = add_user(&*store, "bob@example.com").await;
        let page = TimePage {
            from: None,
            to: None,
            after: None,
            limit: 10,
        };
        assert!(matches!(
            store.entries(&bob, &task, &page).await,
            Err(StoreError::NotFound)
        ));
    }
);

contract!(
    retention_prunes_the_oldest_but_keeps_the_last_value,
    StoreSettings {
        history_retention: 3,
        ..StoreSettings::default()
    },
    |store: Arc<dyn TestStore>| async move {
        let user = add_user(&*store, "ada@example.com").await;
        let task = monitors(&*store, &user, 1).await.remove(0);
        let claim = claimed(&*store, &task).await.claim();
        store
            .record_check(&check(&task, claim, "v1"))
            .await
            .unwrap();
        for i in 0..4 {
            tokio::time::sleep(Duration::from_millis(3)).await;
            let mut failed = check(&task, claim, "");
            failed.own = ClientData::failure(chrono::Utc::now(), format!("error {i}"));
            store.record_check(&failed).await.unwrap();
        }
        assert_eq!(
            values(&*store, &user, &task).await,
            vec![
                Some("error 3".into()),
                Some("error 2".into()),
                Some("v1".into())
            ],
            "three kept, the last value among them"
        );
        let used = store.stored_bytes(&task).await.unwrap().used;
        assert_eq!(
            used,
            3 * 160 + 2 * "error 3".len() as u64 + "v1".len() as u64,
            "what went is no longer counted"
        );
    }
);

contract!(
    garbage_collection_keeps_what_is_named,
    StoreSettings {
        history_retention: 1,
        ..StoreSettings::default()
    },
    |store: Arc<dyn TestStore>| async move {
        let user = add_user(&*store, "ada@example.com").await;
        let tasks = monitors(&*store, &user, 2).await;
        let (a, b) = (&tasks[0], &tasks[1]);
        let later = now_millis() + 10 * 3_600_000;
        let due = store
            .claim_due(later, later + 60_000, &plain(10))
            .await
            .unwrap();
        let claim = |task: &str| {
            due.iter()
                .find(|c| c.monitor.id.as_deref() == Some(task))
                .expect("claimed")
                .claim()
        };
        let (va, vb) = (claim(a), claim(b));
        store.record_check(&check(b, vb, "shared")).await.unwrap();
        store.record_check(&check(a, va, "shared")).await.unwrap();
        tokio::time::sleep(Duration::from_millis(3)).await;
        store.record_check(&check(a, va, "only a")).await.unwrap();
        // A's "shared" entry was pruned, but B still names the value.
        assert_eq!(store.collect_garbage(64).await.unwrap(), 0);
        assert_eq!(values(&*store, &user, b).await, vec![Some("shared".into())]);
        tokio::time::sleep(Duration::from_millis(3)).await;
        store.record_check(&check(b, vb, "only b")).await.unwrap();
        assert_eq!(
            store.collect_garbage(64).await.unwrap(),
            1,
            "\"shared\" is unnamed now"
        );
        assert_eq!(store.collect_garbage(64).await.unwrap(), 0);
        assert_eq!(values(&*store, &user, a).await, vec![Some("only a".into())]);
        assert_eq!(values(&*store, &user, b).await, vec![Some("only b".into())]);
        // A deleted monitor's values go too.
        store.delete_task(&user, a).await.unwrap();
        assert_eq!(store.collect_garbage(64).await.unwrap(), 1);
        assert_eq!(values(&*store, &user, b).await, vec![Some("only b".into())]);
    }
);

contract!(
    a_garbage_batch_is_full_while_garbage_is_left_past_values_still_named,
    StoreSettings {
        history_retention: 1,
        ..StoreSettings::default()
    },
    |store: Arc<dyn TestStore>| async move {
        let user = add_user(&*store, "ada@example.com").await;
        let tasks = monitors(&*store, &user, 2).await;
        let (a, b) = (&tasks[0], &tasks[1]);
        let later = now_millis() + 10 * 3_600_000;
        let due = store
            .claim_due(later, later + 60_000, &plain(10))
            .await
            .unwrap();
        let claim = |task: &str| {
            due.iter()
                .find(|c| c.monitor.id.as_deref() == Some(task))
                .expect("claimed")
                .claim()
        };
        let (va, vb) = (claim(a), claim(b));
        store.record_check(&check(b, vb, "shared")).await.unwrap();
        // A's pruned entries leave "shared" (B still names it) first, then two unnamed values.
        for value in ["shared", "x1", "x2", "x3"] {
            tokio::time::sleep(Duration::from_millis(3)).await;
            store.record_check(&check(a, va, value)).await.unwrap();
        }
        // A batch of two is full: the named value does not take a place of the garbage.
        assert_eq!(store.collect_garbage(2).await.unwrap(), 2);
        assert_eq!(store.collect_garbage(2).await.unwrap(), 0);
        assert_eq!(values(&*store, &user, b).await, vec![Some("shared".into())]);
        assert_eq!(values(&*store, &user, a).await, vec![Some("x3".into())]);
    }
);

contract!(
    a_value_past_the_quota_is_not_kept,
    StoreSettings {
        quotas: Quotas {
            stored_bytes: 1_000,
            ..Quotas::default()
        },
        ..StoreSettings::default()
    },
    |store: Arc<dyn TestStore>| async move {
        let user = add_user(&*store, "ada@example.com").await;
        let task = monitors(&*store, &user, 1).await.remove(0);
        let claim = claimed(&*store, &task).await.claim();
        store
            .record_check(&check(&task, claim, "small"))
            .await
            .unwrap();
        let usage = store.stored_bytes(&task).await.unwrap();
        assert_eq!(
            usage,
            StorageUse {
                used: 160 + 5,
                max: 1_000
            }
        );
        tokio::time::sleep(Duration::from_millis(3)).await;
        // Random enough that compression does not bring it under the quota.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let big: String = (0..4_000)
            .map(|_| {
                x = x
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                char::from(b'a' + ((x >> 33) % 26) as u8)
            })
            .collect();
        store
            .record_check(&check(&task, claim, &big))
            .await
            .unwrap();
        let newest = values(&*store, &user, &task)
            .await
            .remove(0)
            .unwrap_or_default();
        assert!(newest.contains("was not stored"), "{newest}");
        // Once the quota is raised, the same value is kept again.
        tokio::time::sleep(Duration::from_millis(3)).await;
        store
            .record_check(&check(&task, claim, "small"))
            .await
            .unwrap();
        assert_eq!(
            values(&*store, &user, &task).await[0].as_deref(),
            Some("small")
        );
    }
);

contract!(
    test_deliveries_are_queued_claimed_and_retried,
    |store: Arc<dyn TestStore>| async move {
        let user = add_user(&*store, "ada@example.com").await;
        let now = now_millis();
        let id = store
            .queue_test_delivery(
                &user,
                MessagingServiceType::Webhook,
                "https://hooks.example/t",
                now,
                1,
            )
            .await
            .unwrap();
        let refused = store
            .queue_test_delivery(
                &user,
                MessagingServiceType::Webhook,
                "https://hooks.example/t",
                now,
                1,
            )
            .await;
        assert!(
            matches!(refused, Err(StoreError::Invalid { .. })),
            "{refused:?}"
        );
        let claimed = store.claim_deliveries(now, now + 60_000, 10).await.unwrap();
        assert_eq!(ids_of(&claimed), vec![id.clone()]);
        assert!(
            claimed[0].notification.id.is_none(),
            "a test has no notification"
        );
        let busy = store.retry_delivery(&user, None, &id, now_millis()).await;
        assert!(
            matches!(busy, Err(StoreError::Invalid { .. })),
            "in flight: {busy:?}"
        );
        let error = "503 from the endpoint".to_string();
        store
            .finish_delivery(
                &id,
                claimed[0].token,
                &DeliveryOutcome::Retry {
                    at: now + 3_600_000,
                    error: error.clone(),
                },
            )
            .await
            .unwrap();
        let listed = store.test_deliveries(&user, 10).await.unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(
            (
                listed[0].state.as_str(),
                listed[0].attempts,
                listed[0].last_error.as_deref()
            ),
            ("pending", 1, Some(error.as_str()))
        );
        let now = now_millis();
        assert!(
            store
                .claim_deliveries(now, now + 60_000, 10)
                .await
                .unwrap()
                .is_empty(),
            "not due yet"
        );
        // The owner asks for one more try now; nobody else can.
        let bob = add_user(&*store, "bob@example.com").await;
        let stranger = store.retry_delivery(&bob, None, &id, now).await;
        assert!(
            matches!(stranger, Err(StoreError::NotFound)),
            "{stranger:?}"
        );
        store.retry_delivery(&user, None, &id, now).await.unwrap();
        let again = store.claim_deliveries(now, now + 60_000, 10).await.unwrap();
        assert_eq!(ids_of(&again), vec![id.clone()]);
        assert_eq!(again[0].attempts, 1);
        store
            .finish_delivery(
                &id,
                again[0].token,
                &DeliveryOutcome::Failed {
                    error: "gone".into(),
                },
            )
            .await
            .unwrap();
        assert_eq!(
            store.test_deliveries(&user, 10).await.unwrap()[0].state,
            "failed"
        );
    }
);

contract!(
    deliveries_keep_to_the_hourly_bound,
    StoreSettings {
        deliveries_per_hour: 1,
        ..StoreSettings::default()
    },
    |store: Arc<dyn TestStore>| async move {
        let user = add_user(&*store, "ada@example.com").await;
        let now = now_millis();
        for _ in 0..2 {
            store
                .queue_test_delivery(
                    &user,
                    MessagingServiceType::Webhook,
                    "https://h.example/",
                    now,
                    5,
                )
                .await
                .unwrap();
        }
        let claimed = store.claim_deliveries(now, now + 60_000, 10).await.unwrap();
        assert_eq!(claimed.len(), 1, "one released this hour");
        store
            .finish_delivery(
                &claimed[0].id,
                claimed[0].token,
                &DeliveryOutcome::Delivered,
            )
            .await
            .unwrap();
        let later = now + 30 * 60_000;
        assert!(
            store
                .claim_deliveries(later, later + 60_000, 10)
                .await
                .unwrap()
                .is_empty()
        );
        let next_hour = now + 3_600_000 + 1;
        let held = store
            .claim_deliveries(next_hour, next_hour + 60_000, 10)
            .await
            .unwrap();
        assert_eq!(held.len(), 1, "released an hour later");
    }
);

contract!(confirmation_mails_are_claimed_once, |store: Arc<
    dyn TestStore,
>| async move {
    let user = add_user(&*store, "ada@example.com").await;
    store
        .request_email_confirmation(&user, "team@example.com", false)
        .await
        .unwrap();
    let now = now_millis();
    let mails = store
        .claim_confirmation_mails(now, now + 60_000, 10)
        .await
        .unwrap();
    assert_eq!(mails.len(), 1);
    assert_eq!(
        (mails[0].address.as_str(), mails[0].account_email.as_str()),
        ("team@example.com", "ada@example.com")
    );
    assert!(
        store
            .claim_confirmation_mails(now, now + 60_000, 10)
            .await
            .unwrap()
            .is_empty()
    );
    store
        .finish_confirmation_mail(&mails[0], &DeliveryOutcome::Delivered)
        .await
        .unwrap();
    let later = now_millis() + 10 * 3_600_000;
    assert!(
        store
            .claim_confirmation_mails(later, later + 60_000, 10)
            .await
            .unwrap()
            .is_empty(),
        "sent"
    );
});

contract!(
    a_confirmation_mail_is_held_by_beats_and_a_lapsed_try_records_nothing,
    |store: Arc<dyn TestStore>| async move {
        let user = add_user(&*store, "ada@example.com").await;
        store
            .request_email_confirmation(&user, "team@example.com", false)
            .await
            .unwrap();
        let now = now_millis();
        let held = store
            .claim_confirmation_mails(now, now + 300, 10)
            .await
            .unwrap();
        assert_eq!(held.len(), 1);
        let holdings = Holdings {
            mails: vec![Held {
                id: held[0].claim(),
                token: 0,
            }],
            ..Holdings::default()
        };
        let me = worker("mailer");
        let beat = store
            .beat(&me, &holdings, Duration::from_secs(60))
            .await
            .unwrap();
        assert!(beat.lost.mails.is_empty(), "{beat:?}");
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = now_millis();
        assert!(
            store
                .claim_confirmation_mails(now, now + 60_000, 10)
                .await
                .unwrap()
                .is_empty(),
            "renewed by the beat"
        );
        // Handed back, another claim takes it with a new code; the old try records nothing.
        store.leave(&me.id, &holdings).await.unwrap();
        let again = store
            .claim_confirmation_mails(now, now + 60_000, 10)
            .await
            .unwrap();
        assert_eq!(again.len(), 1);
        let retry = DeliveryOutcome::Retry {
            at: now,
            error: "stale".into(),
        };
        store
            .finish_confirmation_mail(&held[0], &retry)
            .await
            .unwrap();
        let now = now_millis();
        assert!(
            store
                .claim_confirmation_mails(now, now + 60_000, 10)
                .await
                .unwrap()
                .is_empty(),
            "the stale try neither freed nor rescheduled the new claim's message"
        );
        store
            .finish_confirmation_mail(&again[0], &DeliveryOutcome::Delivered)
            .await
            .unwrap();
    }
);

fn ids_of(deliveries: &[Delivery]) -> Vec<String> {
    deliveries.iter().map(|d| d.id.clone()).collect()
}

/// Two handles of one database, as two processes would hold: on SQLite two opens of one file,
/// on PostgreSQL two pools. `None` when PostgreSQL is not there (and `CI` is not set).
async fn two_handles(
    postgres: bool,
) -> Option<(
    Arc<dyn TestStore>,
    Arc<dyn TestStore>,
    Option<tempfile::TempDir>,
)> {
    let settings = StoreSettings::default();
    if postgres {
        let url = crate::pg::database().await?;
        let a = PgStore::connect(&url, &settings).await.expect("connect");
        let b = PgStore::connect(&url, &settings).await.expect("connect");
        return Some((Arc::new(a), Arc::new(b), None));
    }
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("wachet.db");
    let a = SqliteStore::open_with(&path, &settings)
        .await
        .expect("open");
    let b = SqliteStore::open_with(&path, &settings)
        .await
        .expect("open");
    Some((Arc::new(a), Arc::new(b), Some(dir)))
}

/// Both handles claim in small batches at once until nothing is due: every monitor is claimed
/// by exactly one of them.
async fn concurrent_claims_never_overlap(postgres: bool) {
    let Some((a, b, _dir)) = two_handles(postgres).await else {
        return;
    };
    let user = add_user(&*a, "ada@example.com").await;
    let tasks = monitors(&*a, &user, 60).await;
    let claimer = |store: Arc<dyn TestStore>| async move {
        let mut mine = Vec::new();
        loop {
            let now = now_millis();
            let due = store
                .claim_due(now, now + 60_000, &plain(3))
                .await
                .expect("claim");
            if due.is_empty() {
                return mine;
            }
            mine.extend(ids(&due));
        }
    };
    let deadline = Duration::from_secs(60);
    let (first, second) = tokio::time::timeout(deadline, async {
        tokio::join!(
            tokio::spawn(claimer(a.clone())),
            tokio::spawn(claimer(b.clone()))
        )
    })
    .await
    .expect("claims finish");
    let (first, second) = (first.unwrap(), second.unwrap());
    let mut all: Vec<String> = first.iter().chain(second.iter()).cloned().collect();
    let unique: HashSet<&String> = all.iter().collect();
    assert_eq!(unique.len(), all.len(), "a monitor claimed twice");
    all.sort();
    let mut expected = tasks;
    expected.sort();
    assert_eq!(all, expected, "every due monitor claimed");
}

/// Both handles claim deliveries at once: each is claimed by one of them.
async fn concurrent_delivery_claims_never_overlap(postgres: bool) {
    let Some((a, b, _dir)) = two_handles(postgres).await else {
        return;
    };
    let user = add_user(&*a, "ada@example.com").await;
    let now = now_millis();
    let mut queued = Vec::new();
    for i in 0..40 {
        let target = format!("https://hooks.example/{i}");
        queued.push(
            a.queue_test_delivery(&user, MessagingServiceType::Webhook, &target, now, 100)
                .await
                .unwrap(),
        );
    }
    let claimer = |store: Arc<dyn TestStore>| async move {
        let mut mine = Vec::new();
        loop {
            let now = now_millis();
            let due = store
                .claim_deliveries(now, now + 60_000, 3)
                .await
                .expect("claim");
            if due.is_empty() {
                return mine;
            }
            mine.extend(ids_of(&due));
        }
    };
    let (first, second) = tokio::time::timeout(Duration::from_secs(60), async {
        tokio::join!(
            tokio::spawn(claimer(a.clone())),
            tokio::spawn(claimer(b.clone()))
        )
    })
    .await
    .expect("claims finish");
    let mut all: Vec<String> = first.unwrap().into_iter().chain(second.unwrap()).collect();
    let unique: HashSet<&String> = all.iter().collect();
    assert_eq!(unique.len(), all.len(), "a delivery claimed twice");
    all.sort();
    queued.sort();
    assert_eq!(all, queued);
}

mod two_handles_claiming_at_once {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite() {
        super::concurrent_claims_never_overlap(false).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres() {
        super::concurrent_claims_never_overlap(true).await;
    }
}

mod two_handles_claiming_deliveries_at_once {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite() {
        super::concurrent_delivery_claims_never_overlap(false).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres() {
        super::concurrent_delivery_claims_never_overlap(true).await;
    }
}

contract!(a_portal_check_keeps_each_page_series, |store: Arc<
    dyn TestStore,
>| async move {
    let user = add_user(&*store, "ada@example.com").await;
    let task = monitors(&*store, &user, 1).await.remove(0);
    let claim = claimed(&*store, &task).await.claim();
    for value in ["first", "second"] {
        tokio::time::sleep(Duration::from_millis(3)).await;
        let mut record = check(&task, claim, "2 pages");
        record.pages = vec![
            (
                "https://example.com/b".into(),
                None,
                ClientData::value(chrono::Utc::now(), format!("B {value}")),
            ),
            (
                "https://example.com/a".into(),
                Some(format!("A {value}")),
                ClientData::value(chrono::Utc::now(), value.into()),
            ),
        ];
        let mut raised = notification(&task, value);
        raised.job_type = JobType::PortalPage;
        raised.page_url = Some("https://example.com/a".into());
        record.notifications = vec![raised];
        assert_eq!(store.record_check(&record).await.unwrap(), Recorded::Stored);
    }
    let pages = store.task_pages(&user, &task).await.unwrap();
    let shown: Vec<(Option<String>, Option<String>)> = pages
        .iter()
        .map(|p| (p.name.clone(), p.data.as_ref().and_then(|d| d.raw.clone())))
        .collect();
    assert_eq!(
        shown,
        vec![
            (Some("A second".into()), Some("second".into())),
            (
                Some("https://example.com/b".into()),
                Some("B second".into())
            ),
        ],
        "by URL, each with its latest data and name"
    );
    let page = pages[0].id.clone().expect("a page id");
    assert_eq!(
        values(&*store, &user, &page).await,
        vec![Some("second".into()), Some("first".into())]
    );
    assert_eq!(
        values(&*store, &user, &task).await,
        vec![Some("2 pages".into()), Some("2 pages".into())],
        "the monitor's own series apart from its pages'"
    );
    let states = store.alert_states(&task).await.unwrap();
    assert_eq!(states.pages.len(), 2);
});

contract!(
    collecting_garbage_while_checks_name_values_loses_no_check,
    StoreSettings {
        history_retention: 1,
        ..StoreSettings::default()
    },
    |store: Arc<dyn TestStore>| async move {
        let user = add_user(&*store, "ada@example.com").await;
        let tasks = monitors(&*store, &user, 2).await;
        let later = now_millis() + 10 * 3_600_000;
        let due = store
            .claim_due(later, later + 60_000, &plain(10))
            .await
            .unwrap();
        let collector = {
            let store = store.clone();
            tokio::spawn(async move {
                let mut collected = 0;
                for _ in 0..200 {
                    collected += store.collect_garbage(4).await.expect("collect");
                    tokio::task::yield_now().await;
                }
                collected
            })
        };
        // Two monitors take turns with two values: each check names a value the other's last
        // check may just have left unnamed.
        for i in 0..60 {
            for (n, check_of) in due.iter().enumerate() {
                let task = check_of.monitor.id.clone().expect("an id");
                let value = if (i + n) % 2 == 0 { "ping" } else { "pong" };
                store
                    .record_check(&check(&task, check_of.claim(), value))
                    .await
                    .expect("a check is stored whatever the collector does");
            }
        }
        tokio::time::timeout(Duration::from_secs(60), collector)
            .await
            .expect("the collector finishes")
            .expect("the collector ran");
        while store.collect_garbage(64).await.unwrap() > 0 {}
        for (n, task) in tasks.iter().enumerate() {
            let expected = if (59 + n) % 2 == 0 { "ping" } else { "pong" };
            assert_eq!(
                values(&*store, &user, task).await,
                vec![Some(expected.to_string())]
            );
        }
    }
);

/// On PostgreSQL a lease is as long as the caller asked, on the database's clock: a process
/// whose clock runs an hour ahead does not hold its monitors for an hour.
#[tokio::test]
async fn a_lease_follows_the_database_clock_on_postgres() {
    crate::store_contract::on_postgres(StoreSettings::default(), |store| async move {
        let user = add_user(&*store, "ada@example.com").await;
        let task = monitors(&*store, &user, 1).await.remove(0);
        let ahead = now_millis() + 3_600_000;
        let held = store
            .claim_due(ahead, ahead + 300, &plain(10))
            .await
            .unwrap();
        assert_eq!(ids(&held), vec![task.clone()]);
        let now = now_millis();
        assert!(
            store
                .claim_due(now, now + 60_000, &plain(10))
                .await
                .unwrap()
                .is_empty(),
            "held"
        );
        tokio::time::sleep(Duration::from_millis(700)).await;
        let now = now_millis();
        let again = store
            .claim_due(now, now + 60_000, &plain(10))
            .await
            .unwrap();
        assert_eq!(
            ids(&again),
            vec![task],
            "the lease ran out on the database's clock"
        );
    })
    .await;
}

contract!(
    a_check_of_a_page_with_nul_characters_is_stored,
    |store: Arc<dyn TestStore>| async move {
        let user = add_user(&*store, "ada@example.com").await;
        let task = monitors(&*store, &user, 1).await.remove(0);
        let claim = claimed(&*store, &task).await.claim();
        let mut record = check(&task, claim, "a\0b");
        record.pages = vec![(
            "https://example.com/\0".into(),
            Some("title\0".into()),
            ClientData::failure(chrono::Utc::now(), "bad\0byte".into()),
        )];
        record.noise_notice = Some("noise\0".into());
        assert_eq!(store.record_check(&record).await.unwrap(), Recorded::Stored);
        assert_eq!(
            values(&*store, &user, &task).await,
            vec![Some("a\0b".into())],
            "a value is kept byte for byte"
        );
        let pages = store.task_pages(&user, &task).await.unwrap();
        assert_eq!(pages.len(), 1);
        let error = pages[0].data.as_ref().and_then(|d| d.error.clone());
        assert!(error.is_some_and(|e| e.starts_with("bad")));
    }
);

contract!(a_deleted_monitor_gives_its_storage_back, |store: Arc<
    dyn TestStore,
>| async move {
    let user = add_user(&*store, "ada@example.com").await;
    let tasks = monitors(&*store, &user, 2).await;
    let later = now_millis() + 10 * 3_600_000;
    let due = store
        .claim_due(later, later + 60_000, &plain(10))
        .await
        .unwrap();
    for (n, c) in due.iter().enumerate() {
        let task = c.monitor.id.clone().expect("an id");
        let value = "x".repeat(100 * (n + 1));
        store
            .record_check(&check(&task, c.claim(), &value))
            .await
            .unwrap();
    }
    let both = store.stored_bytes(&tasks[0]).await.unwrap().used;
    assert_eq!(both, 2 * 160 + 100 + 200, "the owner's whole history");
    let kept = if due[0].monitor.id.as_deref() == Some(tasks[0].as_str()) {
        100
    } else {
        200
    };
    store.delete_task(&user, &tasks[1]).await.unwrap();
    assert_eq!(
        store.stored_bytes(&tasks[0]).await.unwrap().used,
        160 + kept,
        "what the deleted monitor took is free again"
    );
    let bob = add_user(&*store, "bob@example.com").await;
    let his = monitors(&*store, &bob, 1).await.remove(0);
    assert_eq!(store.stored_bytes(&his).await.unwrap().used, 0, "per user");
});

/// A PostgreSQL store on a fresh database, and a pool of its own on the same database for a
/// test's own statements; `None` without PostgreSQL.
async fn on_postgres() -> Option<(PgStore, sqlx::PgPool)> {
    let url = crate::pg::database().await?;
    let store = PgStore::connect(&url, &StoreSettings::default())
        .await
        .expect("connect");
    let pool = sqlx::PgPool::connect(&url).await.expect("connect");
    Some((store, pool))
}

/// On PostgreSQL a check writes its monitor's narrow rows (schedule, series), not the
/// definition's: the `tasks` row keeps its version (`xmin`) through claims and checks, so
/// checks leave no dead copies of wide definitions behind.
#[tokio::test]
async fn a_check_leaves_the_definition_row_alone_on_postgres() {
    let Some((store, pool)) = on_postgres().await else {
        return;
    };
    let user = add_user(&store, "ada@example.com").await;
    let task = monitors(&store, &user, 1).await.remove(0);
    let row_version = |table: &'static str, key: &'static str| {
        let pool = pool.clone();
        let task = task.clone();
        async move {
            let (xmin,): (String,) = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                "SELECT xmin::TEXT FROM {table} WHERE {key} = $1"
            )))
            .bind(&task)
            .fetch_one(&pool)
            .await
            .expect("row");
            xmin
        }
    };
    let definition = row_version("tasks", "id").await;
    let schedule = row_version("schedules", "task_id").await;
    let claim = claimed(&store, &task).await.claim();
    for value in ["one", "two", "two"] {
        store
            .record_check(&check(&task, claim, value))
            .await
            .unwrap();
    }
    assert_ne!(
        row_version("schedules", "task_id").await,
        schedule,
        "the schedule was written"
    );
    assert_eq!(
        row_version("tasks", "id").await,
        definition,
        "the definition was not"
    );
    pool.close().await;
    store.close().await;
}

contract!(an_expired_delivery_lease_is_claimed_again, |store: Arc<
    dyn TestStore,
>| async move {
    let user = add_user(&*store, "ada@example.com").await;
    let now = now_millis();
    let id = store
        .queue_test_delivery(
            &user,
            MessagingServiceType::Webhook,
            "https://h.example/",
            now,
            5,
        )
        .await
        .unwrap();
    let first = store.claim_deliveries(now, now + 300, 10).await.unwrap();
    assert_eq!(ids_of(&first), vec![id.clone()]);
    let now = now_millis();
    assert!(
        store
            .claim_deliveries(now, now + 60_000, 10)
            .await
            .unwrap()
            .is_empty()
    );
    tokio::time::sleep(Duration::from_millis(700)).await;
    let now = now_millis();
    let again = store.claim_deliveries(now, now + 60_000, 10).await.unwrap();
    assert_eq!(ids_of(&again), vec![id], "the sender died: tried again");
});

contract!(
    a_check_keeps_to_the_hourly_notification_limit,
    StoreSettings {
        quotas: Quotas {
            notifications_per_hour: 2,
            ..Quotas::default()
        },
        ..StoreSettings::default()
    },
    |store: Arc<dyn TestStore>| async move {
        let user = add_user(&*store, "ada@example.com").await;
        let task = monitors(&*store, &user, 1).await.remove(0);
        let claim = claimed(&*store, &task).await.claim();
        let mut record = check(&task, claim, "v");
        record.notifications = (0..4)
            .map(|i| notification(&task, &format!("v{i}")))
            .collect();
        assert_eq!(store.record_check(&record).await.unwrap(), Recorded::Stored);
        let now = now_millis();
        let sent = store.claim_deliveries(now, now + 60_000, 10).await.unwrap();
        let mut said: Vec<String> = sent
            .iter()
            .map(|d| d.synthetic_expression.clone())
            .collect();
        said.sort();
        assert_eq!(
            said.len(),
            3,
            "two and the one saying the rest was held: {said:?}"
        );
        assert!(said[0].starts_with("2 alert(s) not sent"), "{said:?}");
        // The hour is full: a later check's alerts are left out.
        let mut more = check(&task, claim, "w");
        more.notifications = vec![notification(&task, "w")];
        assert_eq!(store.record_check(&more).await.unwrap(), Recorded::Stored);
        assert!(
            store
                .claim_deliveries(now, now + 60_000, 10)
                .await
                .unwrap()
                .is_empty()
        );
    }
);

contract!(
    seeded_entries_keep_to_the_retention,
    StoreSettings {
        history_retention: 2,
        ..StoreSettings::default()
    },
    |store: Arc<dyn TestStore>| async move {
        let user = add_user(&*store, "ada@example.com").await;
        let task = monitors(&*store, &user, 1).await.remove(0);
        let base = chrono::Utc::now();
        for i in 0..4 {
            let at = base + chrono::Duration::seconds(i);
            store
                .append_entry(
                    &Series::Task(task.clone()),
                    &ClientData::value(at, format!("v{i}")),
                )
                .await
                .unwrap();
        }
        assert_eq!(
            values(&*store, &user, &task).await,
            vec![Some("v3".into()), Some("v2".into())]
        );
    }
);

contract!(
    host_buckets_are_shared_among_the_live_workers_of_a_location,
    |store: Arc<dyn TestStore>| async move {
        let lease = Duration::from_secs(1);
        let none = Holdings::default();
        let (a, b) = (worker("a"), worker("b"));
        let all = store.beat(&a, &none, lease).await.unwrap().buckets;
        assert_eq!(all, HostBuckets::ALL, "a lone worker holds every bucket");
        let late = store.beat(&b, &none, lease).await.unwrap().buckets;
        assert!(
            late.is_empty(),
            "none is free until the first hands some back"
        );
        let kept = store.beat(&a, &none, lease).await.unwrap().buckets;
        assert_eq!(kept.len(), 32, "the first keeps its share");
        // What it handed back waits a lease (its checks of those hosts end meanwhile).
        tokio::time::sleep(Duration::from_millis(600)).await;
        store.beat(&a, &none, lease).await.unwrap();
        let waiting = store.beat(&b, &none, lease).await.unwrap().buckets;
        assert!(
            waiting.is_empty(),
            "not before the lease ran out: {waiting:?}"
        );
        tokio::time::sleep(Duration::from_millis(600)).await;
        let kept = store.beat(&a, &none, lease).await.unwrap().buckets;
        let taken = store.beat(&b, &none, lease).await.unwrap().buckets;
        assert_eq!((kept.len(), taken.len()), (32, 32), "half each");
        assert_eq!(kept.bits() & taken.bits(), 0, "no bucket held twice");
        assert_eq!(kept.bits() | taken.bits(), -1, "every bucket held");
        // Another location's workers share its own buckets; a delivering worker holds none.
        let gb = WorkerInfo {
            location: Some("gb".into()),
            ..worker("gb")
        };
        assert_eq!(
            store.beat(&gb, &none, lease).await.unwrap().buckets,
            HostBuckets::ALL
        );
        let mailer = WorkerInfo {
            roles: "deliver".into(),
            ..worker("mailer")
        };
        assert!(
            store
                .beat(&mailer, &none, lease)
                .await
                .unwrap()
                .buckets
                .is_empty()
        );
        // The first leaves: the other takes its buckets at its next beat.
        store.leave(&a.id, &none).await.unwrap();
        assert_eq!(
            store.beat(&b, &none, lease).await.unwrap().buckets,
            HostBuckets::ALL
        );

        // A claim takes only the monitors whose host is in its buckets.
        let user = add_user(&*store, "ada@example.com").await;
        let urls = [
            "https://one.example/a",
            "https://two.example/b",
            "https://one.example/c",
        ];
        let mut ids = Vec::new();
        for url in urls {
            let created = store.create_task(&user, &monitor(url)).await.unwrap();
            ids.push(created.id.unwrap());
        }
        let one = host_bucket(urls[0]);
        assert_ne!(
            one,
            host_bucket(urls[1]),
            "the two hosts fall in two buckets"
        );
        let now = now_millis();
        let claim = Claim {
            buckets: HostBuckets::of([one]),
            hosts: Default::default(),
            ..plain(10)
        };
        let mut due = self::ids(&store.claim_due(now, now + 60_000, &claim).await.unwrap());
        due.sort();
        let mut expected = vec![ids[0].clone(), ids[2].clone()];
        expected.sort();
        assert_eq!(due, expected, "the monitors of one.example only");
    }
);

contract!(
    a_new_selection_forgets_what_the_monitors_pages_learned,
    |store: Arc<dyn TestStore>| async move {
        let user = add_user(&*store, "ada@example.com").await;
        let task = monitors(&*store, &user, 1).await.remove(0);
        let due = claimed(&*store, &task).await;
        let url = "https://example.com/a".to_string();
        let mut record = check(&task, due.claim(), "https://example.com/a");
        record.pages = vec![(
            url.clone(),
            Some("Page A".into()),
            ClientData::value(chrono::Utc::now(), "Viewed 104 times".into()),
        )];
        let mut learned = ConfirmState::default();
        learned.alerts.last_value = Some("Viewed 104 times".into());
        learned.masks = vec![NoiseMask {
            pattern: r"Viewed (\d+)".into(),
            learned: true,
            active: true,
            example: Some("104".into()),
        }];
        record.alert_states = vec![(Some(url.clone()), Some(learned))];
        assert_eq!(store.record_check(&record).await.unwrap(), Recorded::Stored);
        let shown = |pages: Vec<wachet::model::ClientPage>| pages[0].noise.clone();
        let before = shown(store.task_pages(&user, &task).await.unwrap());
        assert_eq!(
            before.map(|m| m[0].pattern.clone()).as_deref(),
            Some(r"Viewed (\d+)")
        );

        // A new name keeps them; a new selection forgets them, and keeps the confirmed value.
        let mut renamed = store.task(&user, &task).await.unwrap();
        renamed.name = Some("Renamed".into());
        store.update_task(&user, &renamed).await.unwrap();
        assert!(shown(store.task_pages(&user, &task).await.unwrap()).is_some());
        let mut selected = store.task(&user, &task).await.unwrap();
        selected.x_path = Some("//p".into());
        store.update_task(&user, &selected).await.unwrap();
        assert_eq!(shown(store.task_pages(&user, &task).await.unwrap()), None);
        let states = store.alert_states(&task).await.unwrap();
        let page = &states.pages[&url];
        assert!(page.masks.is_empty(), "{page:?}");
        assert_eq!(page.alerts.last_value.as_deref(), Some("Viewed 104 times"));
    }
);

/// Returns once a session of the test database waits for a lock (30 s at most, else fails
/// saying `what` did not happen).
async fn lock_waited_for(pool: &sqlx::PgPool, what: &str) {
    let waiting = async {
        loop {
            let (n,): (i64,) = sqlx::query_as(
                "SELECT count(*) FROM pg_stat_activity \
                 WHERE datname = current_database() AND wait_event_type = 'Lock'",
            )
            .fetch_one(pool)
            .await
            .unwrap();
            if n > 0 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(30), waiting)
        .await
        .expect(what);
}

/// On PostgreSQL a worker's beat renewing two claims while a transaction holds the first one's
/// schedule row and then locks the second's (as a group of checks locks them, in the order of
/// their ids): the beat waits for the first row without holding the second, so the group gets
/// it and commits, and the beat then renews both. A beat that locked the rows in the order it
/// was handed them took the second and waited for the first: a deadlock, ended by PostgreSQL
/// after a second by failing one of the two.
#[tokio::test]
async fn a_beat_waits_for_a_group_of_checks_instead_of_deadlocking_on_postgres() {
    let Some((store, pool)) = on_postgres().await else {
        return;
    };
    let user = add_user(&store, "ada@example.com").await;
    monitors(&store, &user, 2).await;
    let now = now_millis();
    let mut due = store
        .claim_due(now, now + 60_000, &plain(10))
        .await
        .unwrap();
    assert_eq!(due.len(), 2);
    due.sort_by(|a, b| a.monitor.id.cmp(&b.monitor.id));
    let id = |i: usize| due[i].monitor.id.clone().unwrap();

    let mut group = pool.begin().await.unwrap();
    let lock = "SELECT token FROM schedules WHERE task_id = $1 FOR UPDATE";
    sqlx::query(lock)
        .bind(id(0))
        .execute(&mut *group)
        .await
        .unwrap();
    // Handed the second claim first.
    let held = holding(&[&due[1], &due[0]]);
    let beat = tokio::spawn({
        let store = store.clone();
        async move {
            store
                .beat(&worker("beating"), &held, Duration::from_secs(60))
                .await
        }
    });
    lock_waited_for(&pool, "the beat waits for the row the group holds").await;
    sqlx::query(lock)
        .bind(id(1))
        .execute(&mut *group)
        .await
        .expect("the group takes the second row: the beat does not hold it");
    group.commit().await.unwrap();
    let beat = tokio::time::timeout(Duration::from_secs(30), beat)
        .await
        .expect("the beat ends once the group committed")
        .unwrap()
        .expect("the beat is no deadlock's victim");
    assert!(beat.lost.checks.is_empty(), "both renewed: {beat:?}");
    pool.close().await;
    store.close().await;
}

/// A PostgreSQL store with one monitor, claimed at the returned time, and a pool of its own
/// on the same database for a test's transactions; `None` without PostgreSQL.
async fn claimed_on_postgres() -> Option<(PgStore, sqlx::PgPool, String, DueCheck, Millis)> {
    let (store, pool) = on_postgres().await?;
    let user = add_user(&store, "ada@example.com").await;
    let task = monitors(&store, &user, 1).await.remove(0);
    let now = now_millis();
    let mut due = store
        .claim_due(now, now + 60_000, &plain(10))
        .await
        .unwrap();
    assert_eq!(due.len(), 1);
    Some((store, pool, task, due.remove(0), now))
}

/// An edit of `task` begun as the store saves one: its definition's row written (a version
/// after `version`) and held until the caller commits.
async fn editing(
    pool: &sqlx::PgPool,
    task: &str,
    version: Millis,
) -> sqlx::Transaction<'static, sqlx::Postgres> {
    let mut edit = pool.begin().await.unwrap();
    sqlx::query("UPDATE tasks SET updated_at = $2 WHERE id = $1")
        .bind(task)
        .bind(version + 1_000)
        .execute(&mut *edit)
        .await
        .unwrap();
    edit
}

/// A check that parks its monitor for its quick samples while an edit of it is being saved
/// leaves the edit's first check as it is: the edited monitor is due at once, not held for the
/// old definition's samples (a person waited 50 s to see an edit checked).
#[tokio::test]
async fn a_park_racing_an_edit_leaves_the_edited_monitor_due_on_postgres() {
    let Some((store, pool, task, due, now)) = claimed_on_postgres().await else {
        return;
    };
    let (version, token) = (due.version, due.token);
    // The edit as the store saves one: the definition's row, then its schedule (due at once).
    let mut edit = editing(&pool, &task, version).await;
    sqlx::query("UPDATE schedules SET next_check_at = $2 WHERE task_id = $1")
        .bind(&task)
        .bind(now)
        .execute(&mut *edit)
        .await
        .unwrap();
    let park = tokio::spawn({
        let (store, task) = (store.clone(), task.clone());
        async move {
            store
                .finish_check(&task, version, token, now + 50_000)
                .await
        }
    });
    lock_waited_for(&pool, "the park waits for the edit").await;
    edit.commit().await.unwrap();
    tokio::time::timeout(Duration::from_secs(30), park)
        .await
        .expect("the park ends once the edit is saved")
        .unwrap()
        .expect("parked");

    let due = store
        .claim_due(now + 1, now + 60_000, &plain(10))
        .await
        .unwrap();
    assert_eq!(
        due.iter().map(|d| d.version).collect::<Vec<_>>(),
        [version + 1_000],
        "the edited monitor is due at once"
    );
    pool.close().await;
    store.close().await;
}

/// An edit saved while a check of its monitor is being recorded is no deadlock: the record
/// waits for the edit (both take the definition's row before the schedule's), which lands, and
/// the check is then dropped as a check of the old definition. (Taken the other way round,
/// PostgreSQL ended one of the two after a second: a person's edit failed, or the check.)
#[tokio::test]
async fn an_edit_saved_while_its_check_is_recorded_is_no_deadlock_on_postgres() {
    let Some((store, pool, task, due, now)) = claimed_on_postgres().await else {
        return;
    };
    // The edit as the store saves one: the definition's row, then its schedule.
    let mut edit = editing(&pool, &task, due.version).await;
    let record = tokio::spawn({
        let (store, record) = (store.clone(), check(&task, due.claim(), "v1"));
        async move { store.record_check(&record).await }
    });
    lock_waited_for(&pool, "the record waits for the edit").await;
    sqlx::query("UPDATE schedules SET next_check_at = $2 WHERE task_id = $1")
        .bind(&task)
        .bind(now)
        .execute(&mut *edit)
        .await
        .expect("the edit's schedule is saved");
    edit.commit().await.expect("the edit is saved");
    let recorded = tokio::time::timeout(Duration::from_secs(30), record)
        .await
        .expect("the record ends once the edit is saved")
        .unwrap();
    assert_eq!(recorded.expect("no deadlock's victim"), Recorded::Edited);
    pool.close().await;
    store.close().await;
}

/// Monitors stored before their host was hashed (the migration that added it leaves 0 and sets
/// the buckets to -1) get both when the store opens, so claims count them on their host.
#[tokio::test]
async fn hosts_stored_before_they_were_hashed_are_filled_in_when_the_sqlite_store_opens() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("wachet.db");
    let url = "https://old.example:8443/page";
    let store = SqliteStore::open_with(&path, &StoreSettings::default())
        .await
        .expect("open");
    let user = add_user(&store, "old@example.com").await;
    let task = store
        .create_task(&user, &monitor(url))
        .await
        .expect("create");
    let task = task.id.expect("an id");
    store.close().await;
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", path.display()))
        .await
        .expect("connect");
    sqlx::query("UPDATE tasks SET host = 0, host_bucket = -1")
        .execute(&pool)
        .await
        .expect("as before the migration");
    pool.close().await;
    let store = SqliteStore::open_with(&path, &StoreSettings::default())
        .await
        .expect("open again");
    assert_eq!(claimed(&store, &task).await.host, host_hash(url));
}

/// The same on PostgreSQL, where the host is kept on the schedule's row.
#[tokio::test]
async fn hosts_stored_before_they_were_hashed_are_filled_in_when_the_postgres_store_opens() {
    let Some(db) = crate::pg::database().await else {
        return;
    };
    let url = "https://old.example:8443/page";
    let store = PgStore::connect(&db, &StoreSettings::default())
        .await
        .expect("connect");
    let user = add_user(&store, "old@example.com").await;
    let task = store
        .create_task(&user, &monitor(url))
        .await
        .expect("create");
    let task = task.id.expect("an id");
    store.close().await;
    let pool = sqlx::PgPool::connect(&db).await.expect("connect");
    sqlx::query("UPDATE schedules SET host = 0, host_bucket = -1")
        .execute(&pool)
        .await
        .expect("as before the migration");
    pool.close().await;
    let store = PgStore::connect(&db, &StoreSettings::default())
        .await
        .expect("connect again");
    assert_eq!(claimed(&store, &task).await.host, host_hash(url));
}
