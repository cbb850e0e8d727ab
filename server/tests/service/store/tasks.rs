//! [`TaskStore`]: monitors' definitions, ownership, quota, search.

use super::{TestStore, add_user, folder, monitor};
use std::sync::Arc;
use wachet_server::store::sqlite::StoreSettings;
use wachet_server::store::*;

both!(a_monitor_is_read_back_as_saved, |store: Arc<
    dyn TestStore,
>| async move {
    let ada = add_user(&*store, "ada@example.com").await;
    let mut wanted = monitor("Prices", "https://shop.example/prices");
    wanted.note = Some("weekly".into());
    let created = store.create_task(&ada, &wanted).await.unwrap();
    let id = created.id.clone().unwrap();
    assert!(is_id(&id));
    assert_eq!(created.name.as_deref(), Some("Prices"));
    assert!(created.data.is_none(), "never checked");
    let read = store.task(&ada, &id).await.unwrap();
    assert_eq!(read.url.as_deref(), Some("https://shop.example/prices"));
    assert_eq!(read.note.as_deref(), Some("weekly"));
    assert_eq!(read.recurrence_in_seconds, Some(3600));
    assert!(store.task_pages(&ada, &id).await.unwrap().is_empty());
});

both!(another_users_monitor_is_not_found, |store: Arc<
    dyn TestStore,
>| async move {
    let ada = add_user(&*store, "ada@example.com").await;
    let bob = add_user(&*store, "bob@example.com").await;
    let created = store
        .create_task(&ada, &monitor("A", "https://a.example/"))
        .await
        .unwrap();
    let id = created.id.clone().unwrap();
    // Read by its owner first, so a cache holds it.
    store.task(&ada, &id).await.unwrap();
    assert!(matches!(
        store.task(&bob, &id).await,
        Err(StoreError::NotFound)
    ));
    assert!(matches!(
        store.task_pages(&bob, &id).await,
        Err(StoreError::NotFound)
    ));
    assert!(matches!(
        store.update_task(&bob, &created).await,
        Err(StoreError::NotFound)
    ));
    assert!(matches!(
        store.delete_task(&bob, &id).await,
        Err(StoreError::NotFound)
    ));
    assert!(matches!(
        store.task(&ada, "not-an-id").await,
        Err(StoreError::NotFound)
    ));
    assert!(store.search_tasks(&bob, &[], 10).await.unwrap().is_empty());
    store.task(&ada, &id).await.unwrap();
});

both!(an_update_replaces_the_definition, |store: Arc<
    dyn TestStore,
>| async move {
    let ada = add_user(&*store, "ada@example.com").await;
    let mut saved = store
        .create_task(&ada, &monitor("Old", "https://a.example/"))
        .await
        .unwrap();
    store
        .task(&ada, saved.id.as_deref().unwrap())
        .await
        .unwrap();
    saved.name = Some("New".into());
    saved.url = Some("https://b.example/".into());
    saved.recurrence_in_seconds = Some(0);
    let updated = store.update_task(&ada, &saved).await.unwrap();
    assert_eq!(updated.name.as_deref(), Some("New"));
    let read = store
        .task(&ada, saved.id.as_deref().unwrap())
        .await
        .unwrap();
    assert_eq!(read.url.as_deref(), Some("https://b.example/"));
    assert_eq!(read.recurrence_in_seconds, Some(0));
    let mut missing = saved.clone();
    missing.id = Some(new_id());
    assert!(matches!(
        store.update_task(&ada, &missing).await,
        Err(StoreError::NotFound)
    ));
});

both!(
    a_deleted_monitor_is_gone,
    |store: Arc<dyn TestStore>| async move {
        let ada = add_user(&*store, "ada@example.com").await;
        let id = store
            .create_task(&ada, &monitor("A", "https://a.example/"))
            .await
            .unwrap()
            .id
            .unwrap();
        store.task(&ada, &id).await.unwrap();
        store.delete_task(&ada, &id).await.unwrap();
        assert!(matches!(
            store.task(&ada, &id).await,
            Err(StoreError::NotFound)
        ));
        assert!(matches!(
            store.delete_task(&ada, &id).await,
            Err(StoreError::NotFound)
        ));
    }
);

both!(a_monitor_goes_only_into_an_own_folder, |store: Arc<
    dyn TestStore,
>| async move {
    let ada = add_user(&*store, "ada@example.com").await;
    let bob = add_user(&*store, "bob@example.com").await;
    let mut wanted = monitor("A", "https://a.example/");
    wanted.folder_id = Some(folder(&*store, &bob, "B", None).await);
    match store.create_task(&ada, &wanted).await {
        Err(StoreError::Invalid { field, .. }) => assert_eq!(field, "folderId"),
        other => panic!("a monitor in another user's folder: {other:?}"),
    }
});

both!(
    the_monitor_quota_holds,
    StoreSettings {
        quotas: Quotas {
            monitors: 2,
            ..Quotas::default()
        },
        ..StoreSettings::default()
    },
    |store: Arc<dyn TestStore>| async move {
        let ada = add_user(&*store, "ada@example.com").await;
        let bob = add_user(&*store, "bob@example.com").await;
        let folder = folder(&*store, &ada, "F", None).await;
        let mut first = monitor("m0", "https://a.example/");
        first.folder_id = Some(folder.clone());
        let first = store.create_task(&ada, &first).await.unwrap();
        let second = store
            .create_task(&ada, &monitor("m1", "https://a.example/"))
            .await
            .unwrap();
        let over = || async {
            match store
                .create_task(&ada, &monitor("over", "https://a.example/"))
                .await
            {
                Err(StoreError::QuotaExceeded { limit, .. }) => {
                    assert_eq!(limit, "maxMonitorsPerUser")
                }
                other => panic!("a monitor past the quota: {other:?}"),
            }
        };
        over().await;
        // The quota is each user's.
        store
            .create_task(&bob, &monitor("b", "https://b.example/"))
            .await
            .unwrap();
        // A deleted monitor, and one deleted with its folder, make room again, one each.
        store
            .delete_task(&ada, second.id.as_deref().unwrap())
            .await
            .unwrap();
        store
            .create_task(&ada, &monitor("m2", "https://a.example/"))
            .await
            .unwrap();
        over().await;
        store.delete_folder(&ada, &folder).await.unwrap();
        assert!(matches!(
            store.task(&ada, first.id.as_deref().unwrap()).await,
            Err(StoreError::NotFound)
        ));
        store
            .create_task(&ada, &monitor("m3", "https://a.example/"))
            .await
            .unwrap();
        over().await;
        // Many at once count as many.
        match store
            .create_tasks(
                &ada,
                &[
                    monitor("x", "https://a.example/"),
                    monitor("y", "https://a.example/"),
                ],
            )
            .await
        {
            Err(StoreError::QuotaExceeded { .. }) => {}
            other => panic!("two monitors with room for none: {other:?}"),
        }
    }
);

both!(
    search_matches_every_term_in_name_url_and_note,
    |store: Arc<dyn TestStore>| async move {
        let ada = add_user(&*store, "ada@example.com").await;
        let bob = add_user(&*store, "bob@example.com").await;
        store
            .create_task(&ada, &monitor("Beta prices", "https://shop.example/"))
            .await
            .unwrap();
        store
            .create_task(&ada, &monitor("alpha prices", "https://other.example/"))
            .await
            .unwrap();
        let mut noted = monitor("Gamma", "https://news.example/");
        noted.note = Some("50% off".into());
        store.create_task(&ada, &noted).await.unwrap();
        store
            .create_task(&bob, &monitor("Bob's prices", "https://shop.example/"))
            .await
            .unwrap();
        let names = |found: Vec<wachet::model::Monitor>| -> Vec<String> {
            found
                .into_iter()
                .map(|m| m.name.unwrap_or_default())
                .collect()
        };
        // Ordered by name, case aside; only the user's own.
        assert_eq!(
            names(
                store
                    .search_tasks(&ada, &["PRICES".into()], 10)
                    .await
                    .unwrap()
            ),
            ["alpha prices", "Beta prices"]
        );
        assert_eq!(
            names(
                store
                    .search_tasks(&ada, &["prices".into(), "shop".into()], 10)
                    .await
                    .unwrap()
            ),
            ["Beta prices"]
        );
        // LIKE's wildcards match only themselves.
        assert_eq!(
            names(store.search_tasks(&ada, &["50%".into()], 10).await.unwrap()),
            ["Gamma"]
        );
        assert!(
            store
                .search_tasks(&ada, &["5_%".into()], 10)
                .await
                .unwrap()
                .is_empty()
        );
        assert_eq!(store.search_tasks(&ada, &[], 2).await.unwrap().len(), 2);
    }
);

both!(
    creations_at_once_never_pass_the_quota,
    StoreSettings {
        quotas: Quotas {
            monitors: 5,
            ..Quotas::default()
        },
        ..StoreSettings::default()
    },
    |store: Arc<dyn TestStore>| async move {
        let ada = add_user(&*store, "ada@example.com").await;
        let attempts = (0..12).map(|n| {
            let store = store.clone();
            let ada = ada.clone();
            tokio::spawn(async move {
                store
                    .create_task(&ada, &monitor(&format!("m{n}"), "https://a.example/"))
                    .await
            })
        });
        let mut created = 0;
        for attempt in futures::future::join_all(attempts).await {
            match attempt.unwrap() {
                Ok(_) => created += 1,
                Err(StoreError::QuotaExceeded { .. }) => {}
                Err(other) => panic!("a creation failed: {other}"),
            }
        }
        assert_eq!(created, 5);
        assert_eq!(store.search_tasks(&ada, &[], 100).await.unwrap().len(), 5);
    }
);

both!(
    monitors_created_together_are_all_stored_or_none,
    |store: Arc<dyn TestStore>| async move {
        let ada = add_user(&*store, "ada@example.com").await;
        let bob = add_user(&*store, "bob@example.com").await;
        let theirs = store
            .save_folder(
                &bob,
                &wachet::model::Folder {
                    name: Some("B".into()),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        let mut stray = monitor("B", "https://b.example/");
        stray.folder_id = theirs.id.clone();
        let batch = [monitor("A", "https://a.example/"), stray];
        match store.create_tasks(&ada, &batch).await {
            Err(StoreError::Invalid { field, .. }) => assert_eq!(field, "[1].folderId"),
            other => panic!("a monitor in another user's folder: {other:?}"),
        }
        let none = store.search_tasks(&ada, &[], 10).await.unwrap();
        assert!(none.is_empty(), "the first was not kept either: {none:?}");
        let made = store
            .create_tasks(
                &ada,
                &[
                    monitor("A", "https://a.example/"),
                    monitor("C", "https://c.example/"),
                ],
            )
            .await
            .unwrap();
        let names: Vec<_> = made.iter().map(|m| m.name.clone().unwrap()).collect();
        assert_eq!(names, ["A", "C"]);
        for created in &made {
            let id = created.id.as_deref().unwrap();
            assert_eq!(store.task(&ada, id).await.unwrap().name, created.name);
        }
    }
);
