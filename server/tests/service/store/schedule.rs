//! [`ScheduleStore`] on both backends: claims under leases that expire and are renewed, beats,
//! workers that leave, host buckets shared by a location's workers, two store handles (two
//! pools, as two processes have) claiming at once never given the same monitor, and edits or
//! beats racing a check without a deadlock.

use super::checks::*;
use crate::store::{TestStore, add_user};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;
use wachet_server::store::postgres::PgStore;
use wachet_server::store::sqlite::{SqliteStore, StoreSettings};
use wachet_server::store::*;

both!(
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

both!(due_monitors_are_claimed_once_under_a_lease, |store: Arc<
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

both!(
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

both!(
    a_window_longer_than_the_clock_counts_lists_every_worker_heard_of,
    |store: Arc<dyn TestStore>| async move {
        let me = worker("a");
        store
            .beat(&me, &Holdings::default(), Duration::from_secs(60))
            .await
            .unwrap();
        // A beat of a moment ago, not of this very millisecond.
        tokio::time::sleep(Duration::from_millis(2)).await;
        let live = store.live_workers(Duration::MAX).await.unwrap();
        assert_eq!(
            live.iter().map(|w| w.info.clone()).collect::<Vec<_>>(),
            vec![me],
            "a window too long to count in milliseconds reaches back to the start"
        );
    }
);

both!(
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

both!(
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

both!(
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

/// On PostgreSQL a lease is as long as the caller asked, on the database's clock: a process
/// whose clock runs an hour ahead does not hold its monitors for an hour.
#[tokio::test]
async fn a_lease_follows_the_database_clock_on_postgres() {
    crate::store::on(
        crate::Backend::Postgres,
        StoreSettings::default(),
        |store, _| async move {
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
        },
    )
    .await;
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

both!(
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
    let Some(db) = crate::support::pg::database().await else {
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
