//! [`FolderStore`]: the tree, listings with counts and paging, moves.

use super::{TestStore, add_user, folder, monitor};
use std::sync::Arc;
use wachet::model::{Folder, MoveRequest};
use wachet_server::store::sqlite::StoreSettings;
use wachet_server::store::*;

both!(a_listing_counts_over_each_subtree, |store: Arc<
    dyn TestStore,
>| async move {
    let ada = add_user(&*store, "ada@example.com").await;
    let work = folder(&*store, &ada, "Work", None).await;
    let deep = folder(&*store, &ada, "Deep", Some(&work)).await;
    for (name, parent, paused) in [("a", &work, false), ("b", &deep, true), ("c", &deep, false)] {
        let mut m = monitor(name, "https://a.example/");
        m.folder_id = Some(parent.clone());
        if paused {
            m.recurrence_in_seconds = Some(0);
        }
        store.create_task(&ada, &m).await.unwrap();
    }
    store
        .create_task(&ada, &monitor("root", "https://r.example/"))
        .await
        .unwrap();
    let root = store.list_folder(&ada, None, None, 50).await.unwrap();
    assert_eq!(root.subfolders.len(), 1);
    assert_eq!(root.subfolders[0].name.as_deref(), Some("Work"));
    assert_eq!(root.subfolders[0].count, 3);
    assert_eq!(root.subfolders[0].paused_count, 1);
    assert_eq!(root.subfolders[0].failed_count, 0);
    assert_eq!(root.tasks.len(), 1);
    assert!(root.path.is_empty());
    assert!(root.next.is_none());
    let inside = store
        .list_folder(&ada, Some(&deep), None, 50)
        .await
        .unwrap();
    let path: Vec<_> = inside
        .path
        .iter()
        .map(|f| f.name.clone().unwrap())
        .collect();
    assert_eq!(path, ["Work", "Deep"]);
    assert_eq!(inside.path[1].count, 2);
    let names: Vec<_> = inside
        .tasks
        .iter()
        .map(|m| m.monitor().name.clone().unwrap())
        .collect();
    assert_eq!(names, ["b", "c"]);
});

both!(
    a_listing_pages_through_folders_then_monitors,
    |store: Arc<dyn TestStore>| async move {
        let ada = add_user(&*store, "ada@example.com").await;
        for name in ["b", "A", "c"] {
            folder(&*store, &ada, name, None).await;
        }
        for name in ["y", "X"] {
            store
                .create_task(&ada, &monitor(name, "https://a.example/"))
                .await
                .unwrap();
        }
        let mut seen = Vec::new();
        let mut after = None;
        for _ in 0..10 {
            let page = store
                .list_folder(&ada, None, after.as_ref(), 2)
                .await
                .unwrap();
            assert!(page.subfolders.len() + page.tasks.len() <= 2);
            seen.extend(page.subfolders.iter().map(|f| f.name.clone().unwrap()));
            seen.extend(page.tasks.iter().map(|m| m.monitor().name.clone().unwrap()));
            match page.next {
                Some(next) => after = Some(next),
                None => break,
            }
        }
        assert_eq!(seen, ["A", "b", "c", "X", "y"]);
    }
);

both!(
    folders_are_the_owners_alone,
    |store: Arc<dyn TestStore>| async move {
        let ada = add_user(&*store, "ada@example.com").await;
        let bob = add_user(&*store, "bob@example.com").await;
        let work = folder(&*store, &ada, "Work", None).await;
        assert!(matches!(
            store.list_folder(&bob, Some(&work), None, 10).await,
            Err(StoreError::NotFound)
        ));
        assert!(matches!(
            store.delete_folder(&bob, &work).await,
            Err(StoreError::NotFound)
        ));
        let renamed = Folder {
            id: Some(work.clone()),
            name: Some("Mine".into()),
            ..Default::default()
        };
        assert!(matches!(
            store.save_folder(&bob, &renamed).await,
            Err(StoreError::NotFound)
        ));
        match store
            .save_folder(
                &bob,
                &Folder {
                    parent_id: Some(work.clone()),
                    ..Default::default()
                },
            )
            .await
        {
            Err(StoreError::Invalid { field, .. }) => assert_eq!(field, "parentId"),
            other => panic!("a folder under another user's: {other:?}"),
        }
        let moving = MoveRequest {
            folder_ids: Some(vec![work.clone()]),
            ..Default::default()
        };
        assert!(matches!(
            store.move_items(&bob, &moving).await,
            Err(StoreError::NotFound)
        ));
        assert!(
            store
                .list_folder(&bob, None, None, 10)
                .await
                .unwrap()
                .subfolders
                .is_empty()
        );
    }
);

both!(a_folder_never_moves_into_its_own_subtree, |store: Arc<
    dyn TestStore,
>| async move {
    let ada = add_user(&*store, "ada@example.com").await;
    let top = folder(&*store, &ada, "Top", None).await;
    let mid = folder(&*store, &ada, "Mid", Some(&top)).await;
    let low = folder(&*store, &ada, "Low", Some(&mid)).await;
    let into_low = MoveRequest {
        folder_ids: Some(vec![top.clone()]),
        folder_id: Some(low.clone()),
        ..Default::default()
    };
    match store.move_items(&ada, &into_low).await {
        Err(StoreError::Invalid { field, .. }) => assert_eq!(field, "folderIds"),
        other => panic!("a move into the subtree: {other:?}"),
    }
    let under_itself = Folder {
        id: Some(mid.clone()),
        name: Some("Mid".into()),
        parent_id: Some(mid.clone()),
        ..Default::default()
    };
    assert!(matches!(
        store.save_folder(&ada, &under_itself).await,
        Err(StoreError::Invalid { .. })
    ));
    // Moving Low up to the root, with a monitor, works.
    let m = store
        .create_task(&ada, &monitor("m", "https://a.example/"))
        .await
        .unwrap();
    let up = MoveRequest {
        folder_ids: Some(vec![low.clone()]),
        task_ids: Some(vec![m.id.clone().unwrap()]),
        folder_id: Some(top.clone()),
    };
    store.move_items(&ada, &up).await.unwrap();
    let listing = store.list_folder(&ada, Some(&top), None, 10).await.unwrap();
    let names: Vec<_> = listing
        .subfolders
        .iter()
        .map(|f| f.name.clone().unwrap())
        .collect();
    assert_eq!(names, ["Low", "Mid"]);
    assert_eq!(listing.tasks.len(), 1);
    let moved = store.task(&ada, m.id.as_deref().unwrap()).await.unwrap();
    assert_eq!(moved.folder_id.as_deref(), Some(top.as_str()));
});

both!(deleting_a_folder_takes_its_subtree, |store: Arc<
    dyn TestStore,
>| async move {
    let ada = add_user(&*store, "ada@example.com").await;
    let top = folder(&*store, &ada, "Top", None).await;
    let low = folder(&*store, &ada, "Low", Some(&top)).await;
    let mut m = monitor("m", "https://a.example/");
    m.folder_id = Some(low.clone());
    let id = store.create_task(&ada, &m).await.unwrap().id.unwrap();
    store.task(&ada, &id).await.unwrap();
    store.delete_folder(&ada, &top).await.unwrap();
    assert!(matches!(
        store.task(&ada, &id).await,
        Err(StoreError::NotFound)
    ));
    assert!(matches!(
        store.list_folder(&ada, Some(&low), None, 10).await,
        Err(StoreError::NotFound)
    ));
    assert!(
        store
            .list_folder(&ada, None, None, 10)
            .await
            .unwrap()
            .subfolders
            .is_empty()
    );
});

both!(
    a_failure_recorded_late_does_not_count_under_a_newer_success,
    |store: Arc<dyn TestStore>| async move {
        let ada = add_user(&*store, "ada@example.com").await;
        let work = folder(&*store, &ada, "Work", None).await;
        let mut m = monitor("m", "https://a.example/");
        m.folder_id = Some(work.clone());
        let id = store.create_task(&ada, &m).await.unwrap().id.unwrap();
        let now = chrono::Utc::now();
        let newer = wachet::model::ClientData::value(now, "up".into());
        let older =
            wachet::model::ClientData::failure(now - chrono::Duration::seconds(30), "down".into());
        store
            .append_entry(&Series::Task(id.clone()), &newer)
            .await
            .unwrap();
        store
            .append_entry(&Series::Task(id.clone()), &older)
            .await
            .unwrap();
        let shown = store.task(&ada, &id).await.unwrap().data.expect("data");
        assert_eq!(shown.error, None, "the newest check is the latest data");
        let root = store.list_folder(&ada, None, None, 10).await.unwrap();
        assert_eq!(
            root.subfolders[0].failed_count, 0,
            "{:?}",
            root.subfolders[0]
        );
    }
);

/// A folder's counts over its subtree, recounted from the monitors listed in it.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Counts {
    all: i32,
    failed: i32,
    paused: i32,
}

/// Recounts every folder's subtree from the listings' monitors and compares the counts each
/// listing reports; returns the folders and monitors found.
fn recount<'a>(
    store: &'a dyn TestStore,
    user: &'a str,
    folder: Option<String>,
    found: &'a mut (Vec<String>, Vec<String>),
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Counts> + Send + 'a>> {
    Box::pin(async move {
        let listing = store
            .list_folder(user, folder.as_deref(), None, 500)
            .await
            .unwrap();
        assert!(listing.next.is_none(), "one page holds the test's tree");
        let mut total = Counts::default();
        for task in listing.tasks.iter().map(|t| t.monitor()) {
            found.1.push(task.id.clone().unwrap());
            total.all += 1;
            total.failed += i32::from(task.data.as_ref().is_some_and(|d| d.error.is_some()));
            total.paused += i32::from(task.recurrence_in_seconds.unwrap_or(0) <= 0);
        }
        for sub in &listing.subfolders {
            found.0.push(sub.id.clone().unwrap());
            let counted = recount(store, user, sub.id.clone(), found).await;
            let reported = Counts {
                all: sub.count,
                failed: sub.failed_count,
                paused: sub.paused_count,
            };
            assert_eq!(reported, counted, "folder {:?}", sub.name);
            total.all += counted.all;
            total.failed += counted.failed;
            total.paused += counted.paused;
        }
        total
    })
}

/// A small xorshift: the same operations on both backends, every run.
fn picker(seed: u64) -> impl FnMut(usize) -> usize {
    let mut state = seed;
    move |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n.max(1) as u64) as usize
    }
}

/// What a random change created, for the next changes to pick from.
enum Created {
    Folder(String),
    Task(String),
}

/// What a change returned, `None` when the store refused it as it may (an id deleted meanwhile,
/// a folder moved into its own subtree, the quota); any other error fails the test (a deadlock
/// the store did not get past, a database error).
fn refused<T>(outcome: Result<T, StoreError>) -> Option<T> {
    match outcome {
        Ok(value) => Some(value),
        Err(
            StoreError::NotFound | StoreError::Invalid { .. } | StoreError::QuotaExceeded { .. },
        ) => None,
        Err(other) => panic!("a change failed: {other:?}"),
    }
}

/// One random change among creates, saves, checks, pauses, moves and deletes of the given
/// folders and monitors (refusals, such as a folder moved into its own subtree or an id deleted
/// meanwhile, change nothing and are part of the test).
async fn random_change(
    store: &dyn TestStore,
    user: &str,
    step: usize,
    next: &mut impl FnMut(usize) -> usize,
    folders: &[String],
    tasks: &[String],
) -> Option<Created> {
    let folder_of = |i: usize| (i < folders.len()).then(|| folders[i].clone());
    match next(10) {
        0 | 1 => {
            let parent = folder_of(next(folders.len() + 2));
            let folder = wachet::model::Folder {
                name: Some(format!("f{step}")),
                parent_id: parent,
                ..Default::default()
            };
            let saved = refused(store.save_folder(user, &folder).await)?;
            Some(Created::Folder(saved.id?))
        }
        2..=4 => {
            let mut new = monitor(&format!("m{step}"), "https://a.example/");
            new.folder_id = folder_of(next(folders.len() + 2));
            if next(3) == 0 {
                new.recurrence_in_seconds = Some(0);
            }
            let created = refused(store.create_task(user, &new).await)?;
            Some(Created::Task(created.id?))
        }
        5 if !tasks.is_empty() => {
            let id = tasks[next(tasks.len())].clone();
            let data = match next(2) == 0 {
                true => wachet::model::ClientData::failure(chrono::Utc::now(), "down".into()),
                false => wachet::model::ClientData::value(chrono::Utc::now(), "up".into()),
            };
            // The test's own seeding (no claim, no lock of the monitor) may fail on a monitor
            // deleted meanwhile in any way: not a path of the service.
            let _ = store.append_entry(&Series::Task(id), &data).await;
            None
        }
        6 if !tasks.is_empty() => {
            let id = tasks[next(tasks.len())].clone();
            if let Ok(mut stored) = store.task(user, &id).await {
                let paused = stored.recurrence_in_seconds.unwrap_or(0) <= 0;
                stored.recurrence_in_seconds = Some(if paused { 3600 } else { 0 });
                stored.data = None;
                refused(store.update_task(user, &stored).await);
            }
            None
        }
        7 => {
            let moved = MoveRequest {
                task_ids: (!tasks.is_empty()).then(|| vec![tasks[next(tasks.len())].clone()]),
                folder_ids: (!folders.is_empty() && next(2) == 0)
                    .then(|| vec![folders[next(folders.len())].clone()]),
                folder_id: folder_of(next(folders.len() + 2)),
            };
            refused(store.move_items(user, &moved).await);
            None
        }
        8 if !tasks.is_empty() => {
            let id = tasks[next(tasks.len())].clone();
            refused(store.delete_task(user, &id).await);
            None
        }
        9 if !folders.is_empty() && next(4) == 0 => {
            let id = folders[next(folders.len())].clone();
            refused(store.delete_folder(user, &id).await);
            None
        }
        _ => None,
    }
}

both!(
    folder_counts_match_a_recount_after_random_changes,
    |store: Arc<dyn TestStore>| async move {
        let user = add_user(&*store, "ada@example.com").await;
        let mut next = picker(0x9e37_79b9_7f4a_7c15);
        let mut found: (Vec<String>, Vec<String>) = (Vec::new(), Vec::new());
        for step in 0..150 {
            random_change(&*store, &user, step, &mut next, &found.0, &found.1).await;
            // What exists now, and every count checked against it.
            found = (Vec::new(), Vec::new());
            recount(&*store, &user, None, &mut found).await;
        }
        assert!(found.0.len() > 3 && found.1.len() > 10, "{found:?}");
    }
);

both!(
    counts_stay_exact_under_concurrent_changes,
    StoreSettings {
        quotas: Quotas {
            monitors: 120,
            ..Quotas::default()
        },
        ..StoreSettings::default()
    },
    |store: Arc<dyn TestStore>| async move {
        let user = add_user(&*store, "ada@example.com").await;
        let known = Arc::new(std::sync::Mutex::new((
            Vec::<String>::new(),
            Vec::<String>::new(),
        )));
        // Six writers changing one tree at once, and a reader listing it meanwhile, so kept
        // pages are read while the writes that change them commit.
        let writers = (0..6u64).map(|writer| {
            let (store, user, known) = (store.clone(), user.clone(), known.clone());
            tokio::spawn(async move {
                let mut next = picker(0x9e37_79b9_7f4a_7c15 ^ ((writer + 1) * 0x1234_5678_9abc));
                for step in 0..60 {
                    let (folders, tasks) = known.lock().unwrap().clone();
                    let step = writer as usize * 1000 + step;
                    match random_change(&*store, &user, step, &mut next, &folders, &tasks).await {
                        Some(Created::Folder(id)) => known.lock().unwrap().0.push(id),
                        Some(Created::Task(id)) => known.lock().unwrap().1.push(id),
                        None => {}
                    }
                }
            })
        });
        let writers: Vec<_> = writers.collect();
        let reader = {
            let (store, user, known) = (store.clone(), user.clone(), known.clone());
            tokio::spawn(async move {
                for i in 0.. {
                    let folders = known.lock().unwrap().0.clone();
                    let folder = (!folders.is_empty()).then(|| folders[i % folders.len()].clone());
                    let _ = store.list_folder(&user, folder.as_deref(), None, 500).await;
                    let _ = store.list_folder(&user, None, None, 500).await;
                    tokio::task::yield_now().await;
                }
            })
        };
        for writer in writers {
            writer.await.expect("a writer panicked");
        }
        reader.abort();

        // Every folder's counts against a recount of what is listed, read after the writes.
        let mut found = (Vec::new(), Vec::new());
        let total = recount(&*store, &user, None, &mut found).await;
        assert!(found.0.len() > 3 && found.1.len() > 10, "{found:?}");
        assert_eq!(total.all as usize, found.1.len());
        // The user's count of monitors: exactly the quota's room is left.
        for i in found.1.len()..120 {
            store
                .create_task(&user, &monitor(&format!("fill{i}"), "https://a.example/"))
                .await
                .unwrap_or_else(|e| panic!("monitor {i} of 120 refused: {e:?}"));
        }
        match store
            .create_task(&user, &monitor("over", "https://a.example/"))
            .await
        {
            Err(StoreError::QuotaExceeded { message, .. }) => {
                assert!(message.contains("you have 120 monitors"), "{message}")
            }
            other => panic!("monitor 121 of 120: {other:?}"),
        }
    }
);

/// PostgreSQL's answer to a real deadlock (two transactions locking two rows in opposite
/// orders) is the error the store runs the write again for, not a server error.
#[tokio::test]
async fn a_deadlock_is_a_conflict_to_run_again() {
    use sqlx::Connection;
    let Some(url) = crate::support::pg::database().await else {
        return;
    };
    let mut setup = sqlx::PgConnection::connect(&url).await.unwrap();
    sqlx::raw_sql("CREATE TABLE rows (id INT PRIMARY KEY); INSERT INTO rows VALUES (1), (2)")
        .execute(&mut setup)
        .await
        .unwrap();
    // Each takes its first row before either asks for its second.
    let both_hold_one = Arc::new(tokio::sync::Barrier::new(2));
    let lock = |first: i32, second: i32| {
        let (url, both_hold_one) = (url.clone(), both_hold_one.clone());
        async move {
            let mut conn = sqlx::PgConnection::connect(&url).await.unwrap();
            let mut tx = conn.begin().await.unwrap();
            let take =
                |id: i32| sqlx::query("SELECT 1 FROM rows WHERE id = $1 FOR UPDATE").bind(id);
            take(first).execute(&mut *tx).await?;
            both_hold_one.wait().await;
            take(second).execute(&mut *tx).await?;
            tx.rollback().await
        }
    };
    let (a, b) = tokio::join!(lock(1, 2), lock(2, 1));
    let failed = a
        .err()
        .or(b.err())
        .expect("one of the two is ended by the deadlock");
    let failed = StoreError::from(failed);
    assert!(matches!(failed, StoreError::Conflict(_)), "{failed:?}");
}
