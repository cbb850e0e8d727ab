//! [`NotificationStore`]: notifications of a user and of a monitor, newest first, paged.

use super::{TestStore, add_user, monitor};
use std::sync::Arc;
use wachet::model::{Alert, AlertType, JobType};
use wachet_server::store::*;

fn raised(task: &str, at: Millis, text: &str) -> NewNotification {
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
        created_at: at,
        current: Some(text.to_string()),
        comparand: Some("before".into()),
        error: None,
        url: Some("https://a.example/".into()),
        synthetic_expression: "content changed".into(),
        html: format!("<p>{text}</p>"),
        endpoints: Vec::new(),
        explanation: None,
    }
}

both!(notifications_list_newest_first_in_pages, |store: Arc<
    dyn TestStore,
>| async move {
    let ada = add_user(&*store, "ada@example.com").await;
    let bob = add_user(&*store, "bob@example.com").await;
    let a = store
        .create_task(&ada, &monitor("A", "https://a.example/"))
        .await
        .unwrap()
        .id
        .unwrap();
    let b = store
        .create_task(&ada, &monitor("B", "https://b.example/"))
        .await
        .unwrap()
        .id
        .unwrap();
    let base = 1_700_000_000_000;
    for n in 0..5 {
        let task = if n % 2 == 0 { &a } else { &b };
        store
            .insert_notification(&raised(task, base + n * 1000, &format!("v{n}")))
            .await
            .unwrap();
    }
    // Two at the same time are ordered by id.
    store
        .insert_notification(&raised(&a, base + 4000, "v4b"))
        .await
        .unwrap();
    let page = |limit, after| TimePage {
        limit,
        after,
        ..TimePage::default()
    };
    let mut seen = Vec::new();
    let mut after = None;
    for _ in 0..10 {
        let got = store
            .notifications(&ada, None, &page(2, after.clone()), false)
            .await
            .unwrap();
        assert!(got.len() <= 3, "at most limit + 1");
        let more = got.len() > 2;
        for (key, n) in got.into_iter().take(2) {
            assert!(n.html.is_none());
            seen.push((key.at, n.current.unwrap()));
            after = Some(key);
        }
        if !more {
            break;
        }
    }
    let times: Vec<_> = seen.iter().map(|(at, _)| *at).collect();
    assert_eq!(
        times,
        [
            base + 4000,
            base + 4000,
            base + 3000,
            base + 2000,
            base + 1000,
            base
        ]
    );
    let of_b = store
        .notifications(&ada, Some(&b), &page(10, None), true)
        .await
        .unwrap();
    let values: Vec<_> = of_b
        .iter()
        .map(|(_, n)| n.current.clone().unwrap())
        .collect();
    assert_eq!(values, ["v3", "v1"]);
    assert_eq!(of_b[0].1.html.as_deref(), Some("<p>v3</p>"));
    assert_eq!(of_b[0].1.task_name.as_deref(), Some("B"));
    let window = TimePage {
        from: Some(base + 1000),
        to: Some(base + 2000),
        limit: 10,
        after: None,
    };
    assert_eq!(
        store
            .notifications(&ada, None, &window, false)
            .await
            .unwrap()
            .len(),
        2
    );
    assert!(
        store
            .notifications(&bob, None, &page(10, None), false)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(matches!(
        store
            .notifications(&bob, Some(&a), &page(10, None), false)
            .await,
        Err(StoreError::NotFound)
    ));
});

both!(a_notifications_content_is_its_owners, |store: Arc<
    dyn TestStore,
>| async move {
    let ada = add_user(&*store, "ada@example.com").await;
    let bob = add_user(&*store, "bob@example.com").await;
    let a = store
        .create_task(&ada, &monitor("A", "https://a.example/"))
        .await
        .unwrap()
        .id
        .unwrap();
    let id = store
        .insert_notification(&raised(&a, 1_700_000_000_000, "v"))
        .await
        .unwrap();
    let content = store.notification(&ada, &id).await.unwrap();
    assert_eq!(content.html.as_deref(), Some("<p>v</p>"));
    assert_eq!(content.name.as_deref(), Some("A"));
    assert_eq!(
        content.synthetic_expression.as_deref(),
        Some("content changed")
    );
    assert!(matches!(
        store.notification(&bob, &id).await,
        Err(StoreError::NotFound)
    ));
    assert!(matches!(
        store.notification(&ada, "nope").await,
        Err(StoreError::NotFound)
    ));
    // A notification of a monitor that does not exist is not stored.
    assert!(matches!(
        store.insert_notification(&raised(&new_id(), 1, "v")).await,
        Err(StoreError::NotFound)
    ));
});
