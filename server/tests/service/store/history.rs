//! [`HistoryStore`] on both backends: a check recorded all or nothing with its notification
//! and delivery, checks of an old definition dropped, retention, garbage collection while
//! checks name values, the quota's count, a Portal check's page series.

use super::checks::*;
use crate::store::{TestStore, add_user};
use std::sync::Arc;
use std::time::Duration;
use wachet::alerts::confirm::ConfirmState;
use wachet::model::{ClientData, JobType, NoiseMask};
use wachet_server::store::sqlite::StoreSettings;
use wachet_server::store::*;

both!(
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
        let deliveries = store
            .claim_deliveries(now, now + 60_000, 10, 10)
            .await
            .unwrap();
        assert_eq!(deliveries.len(), 1);
        let delivery = &deliveries[0];
        assert_eq!(delivery.target, "https://hooks.example/in");
        assert_eq!(delivery.notification.current.as_deref(), Some("Tea 3.50"));
        assert!(
            store
                .claim_deliveries(now, now + 60_000, 10, 10)
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

both!(
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

both!(a_check_that_fails_in_part_stores_nothing, |store: Arc<
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
            .claim_deliveries(now, now + 60_000, 10, 10)
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

both!(
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
            .claim_deliveries(later, later + 60_000, 10, 10)
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

both!(
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

both!(
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

both!(
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

both!(
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

both!(
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

both!(a_portal_check_keeps_each_page_series, |store: Arc<
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

both!(
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

both!(
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

both!(a_deleted_monitor_gives_its_storage_back, |store: Arc<
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

both!(
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
        let sent = store
            .claim_deliveries(now, now + 60_000, 10, 10)
            .await
            .unwrap();
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
                .claim_deliveries(now, now + 60_000, 10, 10)
                .await
                .unwrap()
                .is_empty()
        );
    }
);

both!(
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

both!(
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
