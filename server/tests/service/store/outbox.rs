//! [`OutboxStore`] on both backends: deliveries claimed under leases, retried, kept to the
//! hourly bound, test deliveries, confirmation mails, and two store handles claiming
//! deliveries at once never given the same one.

use super::checks::*;
use crate::store::{TestStore, add_user};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;
use wachet::model::MessagingServiceType;
use wachet_server::store::sqlite::StoreSettings;
use wachet_server::store::*;

both!(
    a_delivery_that_outlived_its_lease_records_nothing,
    |store: Arc<dyn TestStore>| async move {
        let user = add_user(&*store, "ada@example.com").await;
        let task = monitors(&*store, &user, 1).await.remove(0);
        let due = claimed(&*store, &task).await;
        let mut record = check(&task, due.claim(), "Tea 3.50");
        record.notifications = vec![notification(&task, "Tea 3.50")];
        assert_eq!(store.record_check(&record).await.unwrap(), Recorded::Stored);
        let now = now_millis();
        let paused = store
            .claim_deliveries(now, now + 200, 10, 10)
            .await
            .unwrap();
        assert_eq!(paused.len(), 1);
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = now_millis();
        let taken = store
            .claim_deliveries(now, now + 60_000, 10, 10)
            .await
            .unwrap();
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

both!(
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
        let claimed = store
            .claim_deliveries(now, now + 60_000, 10, 10)
            .await
            .unwrap();
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
                .claim_deliveries(now, now + 60_000, 10, 10)
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
        let again = store
            .claim_deliveries(now, now + 60_000, 10, 10)
            .await
            .unwrap();
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

both!(
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
        let claimed = store
            .claim_deliveries(now, now + 60_000, 10, 10)
            .await
            .unwrap();
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
                .claim_deliveries(later, later + 60_000, 10, 10)
                .await
                .unwrap()
                .is_empty()
        );
        let next_hour = now + 3_600_000 + 1;
        let held = store
            .claim_deliveries(next_hour, next_hour + 60_000, 10, 10)
            .await
            .unwrap();
        assert_eq!(held.len(), 1, "released an hour later");
    }
);

both!(confirmation_mails_are_claimed_once, |store: Arc<
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

both!(
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
                .claim_deliveries(now, now + 60_000, 3, 100)
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

both!(an_expired_delivery_lease_is_claimed_again, |store: Arc<
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
    let first = store
        .claim_deliveries(now, now + 300, 10, 10)
        .await
        .unwrap();
    assert_eq!(ids_of(&first), vec![id.clone()]);
    let now = now_millis();
    assert!(
        store
            .claim_deliveries(now, now + 60_000, 10, 10)
            .await
            .unwrap()
            .is_empty()
    );
    tokio::time::sleep(Duration::from_millis(700)).await;
    let now = now_millis();
    let again = store
        .claim_deliveries(now, now + 60_000, 10, 10)
        .await
        .unwrap();
    assert_eq!(ids_of(&again), vec![id], "the sender died: tried again");
});
