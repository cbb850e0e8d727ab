//! NUL characters, which SQLite's text holds and PostgreSQL's cannot: whatever the backend, a
//! NUL in what a user sends is the user's fault (`Invalid`, naming the field) or matches
//! nothing, never a database failure (a 500), and a page's NUL never stops a notification and
//! is kept as U+FFFD on both.

use super::checks::{Claimed, check, claimed, monitors};
use super::{TestStore, add_user, monitor, user_record};
use std::sync::Arc;
use wachet::model::{Alert, AlertType, ClientData, Folder, JobType};
use wachet_server::store::*;

/// Stored as given, or refused as `field`'s fault; anything else fails the test.
#[track_caller]
fn stored_or_refused<T: std::fmt::Debug>(result: Result<T, StoreError>, field: &str) {
    match result {
        Ok(_) => {}
        Err(StoreError::Invalid { field: blamed, .. }) => assert_eq!(blamed, field),
        Err(other) => panic!("a NUL in {field}: {other:?}"),
    }
}

both!(a_nul_is_never_a_database_failure, |store: Arc<
    dyn TestStore,
>| async move {
    let ada = add_user(&*store, "ada@example.com").await;
    assert!(
        store
            .user_by_email("ada\0@example.com")
            .await
            .unwrap()
            .is_none()
    );
    stored_or_refused(
        store.create_user(&user_record("nul\0@example.com")).await,
        "email",
    );
    stored_or_refused(
        store
            .create_task(&ada, &monitor("a\0b", "https://a.example/"))
            .await,
        "name",
    );
    stored_or_refused(
        store
            .create_task(&ada, &monitor("a", "https://a.example/\0"))
            .await,
        "url",
    );
    stored_or_refused(
        store
            .save_folder(
                &ada,
                &Folder {
                    name: Some("f\0".into()),
                    ..Default::default()
                },
            )
            .await,
        "name",
    );
    stored_or_refused(
        store
            .request_email_confirmation(&ada, "x\0@example.com", false)
            .await,
        "address",
    );
    store.search_tasks(&ada, &["\0".into()], 10).await.unwrap();
    assert!(matches!(
        store.delete_feed(&ada, "a\0").await,
        Err(StoreError::NotFound)
    ));
    assert!(matches!(
        store.task(&ada, "a\0").await,
        Err(StoreError::NotFound)
    ));
});

both!(a_pages_nul_still_raises_its_notification, |store: Arc<
    dyn TestStore,
>| async move {
    let ada = add_user(&*store, "ada@example.com").await;
    let task = store
        .create_task(&ada, &monitor("A", "https://a.example/"))
        .await
        .unwrap()
        .id
        .unwrap();
    let id = store
        .insert_notification(&NewNotification {
            task_id: task,
            page_url: None,
            job_type: JobType::SinglePage,
            alert: Alert {
                kind: AlertType::NotEq,
                value: None,
                parameters: None,
                remind_every_seconds: None,
            },
            created_at: 1_700_000_000_000,
            current: Some("before\0after".into()),
            comparand: None,
            error: None,
            url: None,
            synthetic_expression: "content changed".into(),
            html: "<p>before\0after</p>".into(),
            endpoints: Vec::new(),
            explanation: None,
        })
        .await
        .unwrap();
    let content = store.notification(&ada, &id).await.unwrap();
    let html = content.html.unwrap();
    assert!(
        html.starts_with("<p>before") && html.ends_with("after</p>"),
        "{html}"
    );
});

both!(a_nul_in_what_a_user_sends_is_refused_alike, |store: Arc<
    dyn TestStore,
>| async move {
    // Both backends refuse it, naming the field, so a SQLite server never keeps text that the
    // same data moved to PostgreSQL could not hold.
    let refused = |result: Result<(), StoreError>, field: &str| match result {
        Err(StoreError::Invalid { field: blamed, .. }) => assert_eq!(blamed, field),
        other => panic!("a NUL in {field}: {other:?}"),
    };
    let ada = add_user(&*store, "ada@example.com").await;
    refused(
        store.create_user(&user_record("nul\0@example.com")).await,
        "email",
    );
    for (name, url, field) in [
        ("a\0b", "https://a.example/", "name"),
        ("a", "https://a.example/\0", "url"),
    ] {
        refused(
            store.create_task(&ada, &monitor(name, url)).await.map(drop),
            field,
        );
    }
    let noted = wachet::model::Monitor {
        note: Some("n\0".into()),
        ..monitor("a", "https://a.example/")
    };
    refused(store.create_task(&ada, &noted).await.map(drop), "note");
    refused(
        store
            .save_folder(
                &ada,
                &Folder {
                    name: Some("f\0".into()),
                    ..Default::default()
                },
            )
            .await
            .map(drop),
        "name",
    );
    refused(
        store
            .request_email_confirmation(&ada, "x\0@example.com", false)
            .await,
        "address",
    );
    assert!(store.search_tasks(&ada, &[], 10).await.unwrap().is_empty());
    assert!(store.email_addresses(&ada).await.unwrap().is_empty());
});

both!(a_checks_nul_is_kept_alike_on_both_backends, |store: Arc<
    dyn TestStore,
>| async move {
    // What a check brings from a page (its URL and title, an error, a noise notice) keeps a
    // NUL as PostgreSQL must: as U+FFFD, on SQLite too, so the same check reads the same on
    // either backend and after a move from one to the other.
    let ada = add_user(&*store, "ada@example.com").await;
    let task = monitors(&*store, &ada, 1).await.remove(0);
    let claim = claimed(&*store, &task).await.claim();
    let mut record = check(&task, claim, "a");
    record.pages = vec![(
        "https://example.com/\0".into(),
        Some("title\0".into()),
        ClientData::failure(chrono::Utc::now(), "bad\0byte".into()),
    )];
    record.noise_notice = Some("noise\0".into());
    assert_eq!(store.record_check(&record).await.unwrap(), Recorded::Stored);
    let pages = store.task_pages(&ada, &task).await.unwrap();
    let shown: Vec<_> = pages
        .iter()
        .map(|p| {
            (
                p.url.as_deref(),
                p.name.as_deref(),
                p.data.as_ref().and_then(|d| d.error.as_deref()),
            )
        })
        .collect();
    assert_eq!(
        shown,
        vec![(
            Some("https://example.com/\u{FFFD}"),
            Some("title\u{FFFD}"),
            Some("bad\u{FFFD}byte")
        )]
    );
    let notice = store.task(&ada, &task).await.unwrap().noise_notice;
    assert_eq!(notice.as_deref(), Some("noise\u{FFFD}"));
    // A check that finds the value unchanged (SQLite's short way) keeps its notice alike.
    let mut again = check(&task, claim, "a");
    again.noise_notice = Some("again\0".into());
    assert_eq!(store.record_check(&again).await.unwrap(), Recorded::Stored);
    let notice = store.task(&ada, &task).await.unwrap().noise_notice;
    assert_eq!(notice.as_deref(), Some("again\u{FFFD}"));
});
