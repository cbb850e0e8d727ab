//! [`FeedStore`]: feeds of a user, a folder or a monitor, renewed and found by their secret.

use super::{TestStore, add_user, monitor};
use std::sync::Arc;
use wachet::model::Folder;
use wachet_server::store::*;

/// A feed secret as the store keeps it: a hash of `digit`s and a sealed copy named after it.
fn secret(digit: &str) -> FeedSecret {
    FeedSecret {
        hash: digit.repeat(64),
        sealed: format!("sealed-{digit}"),
    }
}

both!(a_feed_is_renewed_not_doubled, |store: Arc<
    dyn TestStore,
>| async move {
    let ada = add_user(&*store, "ada@example.com").await;
    let now = now_millis();
    let first = store
        .renew_feed(&ada, &FeedScope::All, &secret("1"), now)
        .await
        .unwrap();
    assert_eq!(first.scope, FeedScope::All);
    let again = store
        .renew_feed(&ada, &FeedScope::All, &secret("2"), now + 1)
        .await
        .unwrap();
    assert_eq!(again.id, first.id);
    assert_eq!(again.created_at, now + 1);
    // The sealed copy is the renewed one, in every read.
    assert_eq!(first.sealed_secret.as_deref(), Some("sealed-1"));
    assert_eq!(again.sealed_secret.as_deref(), Some("sealed-2"));
    assert_eq!(
        store.feeds(&ada).await.unwrap()[0].sealed_secret.as_deref(),
        Some("sealed-2")
    );
    assert!(
        store
            .feed_by_secret(&"1".repeat(64))
            .await
            .unwrap()
            .is_none()
    );
    let found = store
        .feed_by_secret(&"2".repeat(64))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found.user_id, ada);
    assert_eq!(store.feeds(&ada).await.unwrap().len(), 1);
});

both!(feeds_follow_their_folder_and_monitor, |store: Arc<
    dyn TestStore,
>| async move {
    let ada = add_user(&*store, "ada@example.com").await;
    let bob = add_user(&*store, "bob@example.com").await;
    let now = now_millis();
    let folder = store
        .save_folder(
            &ada,
            &Folder {
                name: Some("Work".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap()
        .id
        .unwrap();
    let task = store
        .create_task(&ada, &monitor("Alpha", "https://a.example/"))
        .await
        .unwrap()
        .id
        .unwrap();
    let of_task = FeedScope::Monitor(task.clone());
    let of_folder = FeedScope::Folder(folder.clone());
    // Another user's folder or monitor has no feed for them.
    assert!(matches!(
        store.renew_feed(&bob, &of_task, &secret("9"), now).await,
        Err(StoreError::NotFound)
    ));
    assert!(matches!(
        store.renew_feed(&bob, &of_folder, &secret("9"), now).await,
        Err(StoreError::NotFound)
    ));
    store
        .renew_feed(&ada, &of_folder, &secret("3"), now)
        .await
        .unwrap();
    let monitor_feed = store
        .renew_feed(&ada, &of_task, &secret("4"), now)
        .await
        .unwrap();
    assert_eq!(monitor_feed.name.as_deref(), Some("Alpha"));
    store
        .renew_feed(&ada, &FeedScope::All, &secret("5"), now)
        .await
        .unwrap();
    let scopes: Vec<_> = store
        .feeds(&ada)
        .await
        .unwrap()
        .into_iter()
        .map(|f| f.scope)
        .collect();
    // All first, then by name.
    assert_eq!(scopes, [FeedScope::All, of_task.clone(), of_folder.clone()]);
    assert!(store.feeds(&bob).await.unwrap().is_empty());
    assert!(matches!(
        store.delete_feed(&bob, &monitor_feed.id).await,
        Err(StoreError::NotFound)
    ));
    // Deleting the monitor or folder deletes its feed.
    store.delete_task(&ada, &task).await.unwrap();
    store.delete_folder(&ada, &folder).await.unwrap();
    assert!(
        store
            .feed_by_secret(&"4".repeat(64))
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        store
            .feed_by_secret(&"3".repeat(64))
            .await
            .unwrap()
            .is_none()
    );
    let all = store
        .feed_by_secret(&"5".repeat(64))
        .await
        .unwrap()
        .unwrap();
    store.delete_feed(&ada, &all.id).await.unwrap();
    assert!(store.feeds(&ada).await.unwrap().is_empty());
});

both!(
    a_feed_shows_each_change_with_the_value_before_it,
    |store: Arc<dyn TestStore>| async move {
        use wachet::model::ClientData;
        let ada = add_user(&*store, "ada@example.com").await;
        let bob = add_user(&*store, "bob@example.com").await;
        let folder = store
            .save_folder(
                &ada,
                &Folder {
                    name: Some("Work".into()),
                    ..Default::default()
                },
            )
            .await
            .unwrap()
            .id
            .unwrap();
        let filed = wachet::model::Monitor {
            folder_id: Some(folder.clone()),
            ..monitor("Alpha", "https://a.example/")
        };
        let task = store.create_task(&ada, &filed).await.unwrap().id.unwrap();
        let other = store
            .create_task(&ada, &monitor("Beta", "https://b.example/"))
            .await
            .unwrap()
            .id
            .unwrap();
        let base = chrono::Utc::now();
        let series = Series::Task(task.clone());
        // A first value is no change; the same value again is none either; a failure between
        // two values is skipped.
        for (i, value) in ["3.50 EUR", "3.50 EUR", "3.90 EUR", "!", "4.10 EUR"]
            .iter()
            .enumerate()
        {
            let at = base + chrono::Duration::seconds(i as i64);
            let data = match *value {
                "!" => ClientData::failure(at, "HTTP 503".to_string()),
                v => ClientData::value(at, v.to_string()),
            };
            store.append_entry(&series, &data).await.unwrap();
        }
        store
            .append_entry(
                &Series::Task(other.clone()),
                &ClientData::value(base, "x".to_string()),
            )
            .await
            .unwrap();
        for scope in [
            FeedScope::All,
            FeedScope::Folder(folder.clone()),
            FeedScope::Monitor(task.clone()),
        ] {
            let changes = store.feed_changes(&ada, &scope, 10).await.unwrap();
            let shown: Vec<(&str, &str)> = changes
                .iter()
                .map(|c| (c.previous.as_str(), c.current.as_str()))
                .collect();
            assert_eq!(
                shown,
                [("3.90 EUR", "4.10 EUR"), ("3.50 EUR", "3.90 EUR")],
                "{scope:?}"
            );
            assert!(changes.iter().all(|c| c.task_id == task));
        }
        let one = store.feed_changes(&ada, &FeedScope::All, 1).await.unwrap();
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].current, "4.10 EUR");
        // Another user's feed shows none of them.
        let theirs = store.feed_changes(&bob, &FeedScope::All, 10).await.unwrap();
        assert!(theirs.is_empty());
        let foreign = store
            .feed_changes(&bob, &FeedScope::Monitor(task.clone()), 10)
            .await
            .unwrap();
        assert!(foreign.is_empty());
    }
);
