//! Delta history on both backends (each test runs on SQLite and on PostgreSQL, with a
//! connection of its own to the database for what no store call shows): a value a newer one
//! replaced is stored as a delta against its series' keyframe, and every entry still reads
//! back exactly after many changes, after the retention pruned the entries of a keyframe,
//! after the monitor whose values were bases was deleted, and after a check that failed half
//! way; the quota counts what the tables hold.

use crate::Sql;
use crate::store::{TestStore, add_user, monitor};
use chrono::{DateTime, Duration, TimeZone, Utc};
use std::sync::Arc;
use wachet::model::ClientData;
use wachet_server::store::sqlite::StoreSettings;
use wachet_server::store::*;

/// Settings keeping `retention` entries a series.
fn keeping(retention: u32) -> StoreSettings {
    StoreSettings {
        history_retention: retention,
        ..StoreSettings::default()
    }
}

/// A page of text as a large site's would be: `words` words of a vocabulary of a few thousand
/// made-up words (about 7 bytes a word with its space), the same for the same `seed`.
fn page(words: usize, seed: u64) -> Vec<String> {
    let mut random = Random(seed);
    (0..words).map(|_| random.word()).collect()
}

/// A small deterministic generator (a linear congruential one): the tests need the same
/// pages on every run, not good randomness.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// One of about 4,000 words of 3 to 8 letters.
    fn word(&mut self) -> String {
        let n = self.next() % 4_000;
        let mut x = n.wrapping_mul(2_654_435_761) ^ 0x5bd1_e995;
        let len = 3 + (n % 6) as usize;
        (0..len)
            .map(|_| {
                x = x.wrapping_mul(48_271) % 2_147_483_647;
                char::from(b'a' + (x % 26) as u8)
            })
            .collect()
    }
}

/// `versions` values of one page: each the previous with one word (at a random place)
/// replaced.
fn one_word_changes(words: usize, versions: usize, seed: u64) -> Vec<String> {
    let mut text = page(words, seed);
    let mut random = Random(seed ^ 0xdead_beef);
    (0..versions)
        .map(|_| {
            let at = random.below(text.len());
            text[at] = format!("{}{}", random.word(), random.below(100));
            text.join(" ")
        })
        .collect()
}

/// The time of the `i`th check of a test.
fn at(i: usize) -> DateTime<Utc> {
    Utc.timestamp_millis_opt(1_750_000_000_000).unwrap() + Duration::seconds(i as i64)
}

/// Creates a user with one monitor and returns both ids.
async fn one_monitor(store: &dyn TestStore, email: &str) -> (String, String) {
    let user = add_user(store, email).await;
    let task = store
        .create_task(&user, &monitor("large page", "https://example.com/"))
        .await
        .expect("create monitor")
        .id
        .expect("an id");
    (user, task)
}

/// Records `value` as the check of `task` at `at(i)`.
async fn record(store: &dyn TestStore, task: &str, i: usize, value: &str) {
    store
        .append_entry(
            &Series::Task(task.to_string()),
            &ClientData::value(at(i), value.to_string()),
        )
        .await
        .expect("append");
}

/// Every value of the series of `id`, oldest first, read a page of 50 at a time as the API
/// reads them.
async fn every_value(store: &dyn TestStore, user: &str, id: &str) -> Vec<Option<String>> {
    let mut values = Vec::new();
    let mut after = None;
    loop {
        let page = TimePage {
            from: None,
            to: None,
            after: after.clone(),
            limit: 50,
        };
        let mut entries = store.entries(user, id, &page).await.expect("entries");
        let more = entries.len() > 50;
        entries.truncate(50);
        after = entries.last().map(|(key, _)| key.clone());
        values.extend(entries.into_iter().map(|(_, data)| data.raw.or(data.error)));
        if !more {
            break;
        }
    }
    values.reverse();
    values
}

/// What the quota counts for `task`, counted again from the tables: 160 bytes an entry with
/// its error text (ASCII in these tests, so characters are bytes), and each distinct value its entries name at its stored size.
async fn recount(sql: &Sql, task: &str) -> i64 {
    sql.count(&format!(
        "SELECT (SELECT count(*) * 160 + coalesce(sum(length(error)), 0) \
         FROM entries WHERE task_id = '{task}') + (SELECT coalesce(sum(length(c.body)), 0) \
         FROM contents c WHERE c.hash IN \
         (SELECT content_hash FROM entries WHERE task_id = '{task}'))"
    ))
    .await
}

/// How many monitors' latest values are stored as deltas: none may be, as the listings and
/// the scheduler read them in one step.
async fn latest_deltas(sql: &Sql) -> i64 {
    sql.count(
        "SELECT count(*) FROM entries e JOIN contents c ON c.hash = e.content_hash \
         WHERE c.codec = 2 AND e.page_id IS NULL AND NOT EXISTS (SELECT 1 FROM entries n \
         WHERE n.task_id = e.task_id AND n.page_id IS NULL AND n.content_hash IS NOT NULL \
         AND (n.checked_at, n.id) > (e.checked_at, e.id))",
    )
    .await
}

/// The bytes of every stored value.
async fn stored_bytes(sql: &Sql) -> i64 {
    sql.count("SELECT sum(length(body)) FROM contents").await
}

both!(
    a_thousand_one_word_changes_of_a_large_page_read_back_at_under_a_kilobyte_each,
    keeping(2_000),
    |store: Arc<dyn TestStore>, sql: Sql| async move {
        let (user, task) = one_monitor(&*store, "ada@example.com").await;
        let versions = one_word_changes(15_500, 1_001, 21);
        assert!(
            (95_000..110_000).contains(&versions[0].len()),
            "{} bytes",
            versions[0].len()
        );
        record(&*store, &task, 0, &versions[0]).await;
        let first = stored_bytes(&sql).await;
        for (i, value) in versions.iter().enumerate().skip(1) {
            record(&*store, &task, i, value).await;
        }
        let expected: Vec<Option<String>> = versions.iter().cloned().map(Some).collect();
        assert!(
            every_value(&*store, &user, &task).await == expected,
            "every one of the 1,001 entries reads back exactly"
        );
        let per_change = (stored_bytes(&sql).await - first) / 1_000;
        println!(
            "1,000 one-word changes of a {} byte page: {per_change} bytes stored a change \
             (the first value {first} bytes)",
            versions[0].len()
        );
        assert!(per_change < 1_024, "{per_change} bytes a change");
        assert!(
            sql.count("SELECT count(*) FROM contents WHERE codec = 2")
                .await
                > 900
        );
        assert_eq!(
            sql.count("SELECT count(*) FROM contents").await,
            1_001,
            "one value a version"
        );
        assert_eq!(latest_deltas(&sql).await, 0, "the latest value is whole");
        assert_eq!(
            store.stored_bytes(&task).await.unwrap().used as i64,
            recount(&sql, &task).await,
            "the quota counts the deltas' sizes"
        );
    }
);

both!(
    the_same_text_twice_is_one_value_and_a_page_that_goes_back_reads_back,
    keeping(100),
    |store: Arc<dyn TestStore>, sql: Sql| async move {
        let (user, task) = one_monitor(&*store, "ada@example.com").await;
        let versions = one_word_changes(3_000, 6, 5);
        // A page flapping between its versions: each goes back to one stored before (and
        // made a delta since), which is made whole again as the latest.
        let order = [0, 1, 2, 1, 0, 3, 4, 3, 0, 5, 5, 2];
        for (i, &v) in order.iter().enumerate() {
            record(&*store, &task, i, &versions[v]).await;
            let (_, other) = one_monitor(&*store, &format!("o{i}@example.com")).await;
            // Another monitor naming an older value of this one keeps it whole for its own
            // latest; its check reads it back.
            record(&*store, &other, 0, &versions[order[i / 2]]).await;
        }
        let expected: Vec<Option<String>> =
            order.iter().map(|&v| Some(versions[v].clone())).collect();
        assert!(every_value(&*store, &user, &task).await == expected);
        assert_eq!(sql.count("SELECT count(*) FROM contents").await, 6);
        assert_eq!(
            latest_deltas(&sql).await,
            0,
            "no monitor's latest value is a delta"
        );
        assert_eq!(
            store.stored_bytes(&task).await.unwrap().used as i64,
            recount(&sql, &task).await
        );
    }
);

both!(
    entries_pruned_by_the_retention_leave_every_remaining_entry_readable,
    keeping(10),
    |store: Arc<dyn TestStore>, sql: Sql| async move {
        let (user, task) = one_monitor(&*store, "ada@example.com").await;
        let versions = one_word_changes(3_000, 80, 9);
        let mut pruned_base_seen = false;
        for (i, value) in versions.iter().enumerate() {
            record(&*store, &task, i, value).await;
            while store.collect_garbage(4).await.unwrap() > 0 {}
            let expected: Vec<Option<String>> = versions[i.saturating_sub(9)..=i]
                .iter()
                .cloned()
                .map(Some)
                .collect();
            assert!(
                every_value(&*store, &user, &task).await == expected,
                "after check {i}"
            );
            // A delta whose base's own entries were pruned: the base stays for it.
            pruned_base_seen |= sql
                .count(
                    "SELECT count(*) FROM contents d JOIN contents b ON b.hash = d.base_hash \
                     WHERE NOT EXISTS (SELECT 1 FROM entries e WHERE e.content_hash = b.hash)",
                )
                .await
                > 0;
            assert_eq!(
                store.stored_bytes(&task).await.unwrap().used as i64,
                recount(&sql, &task).await,
                "after check {i}"
            );
        }
        assert!(pruned_base_seen, "a keyframe outlived its entries");
        // Garbage is what no entry and no delta names: ten values and the bases they need.
        assert_eq!(
            sql.count(
                "SELECT count(*) FROM contents c WHERE NOT EXISTS \
                 (SELECT 1 FROM entries e WHERE e.content_hash = c.hash) AND NOT EXISTS \
                 (SELECT 1 FROM contents d WHERE d.base_hash = c.hash)"
            )
            .await,
            0
        );
    }
);

both!(
    deleting_the_monitor_whose_values_are_bases_collects_them_and_others_read_on,
    keeping(1_000),
    |store: Arc<dyn TestStore>, sql: Sql| async move {
        let (user, a) = one_monitor(&*store, "ada@example.com").await;
        let b = store
            .create_task(&user, &monitor("b", "https://example.org/"))
            .await
            .unwrap()
            .id
            .unwrap();
        let versions = one_word_changes(3_000, 30, 13);
        for (i, value) in versions.iter().enumerate() {
            record(&*store, &a, i, value).await;
        }
        assert!(
            sql.count("SELECT count(*) FROM contents WHERE codec = 2")
                .await
                > 20
        );
        // B names one of A's deltas, then goes on with A's keyframe and a value of its own.
        let ours = format!("{} and more", versions[29]);
        for (i, value) in [&versions[12], &versions[0], &ours].into_iter().enumerate() {
            record(&*store, &b, 100 + i, value).await;
        }
        store.delete_task(&user, &a).await.unwrap();
        let mut collected = 0;
        loop {
            let n = store.collect_garbage(8).await.unwrap();
            collected += n;
            if n < 8 {
                break;
            }
        }
        assert_eq!(collected, 28, "A's values but the two B names");
        assert_eq!(store.collect_garbage(8).await.unwrap(), 0);
        assert_eq!(
            every_value(&*store, &user, &b).await,
            vec![
                Some(versions[12].clone()),
                Some(versions[0].clone()),
                Some(ours.clone())
            ]
        );
        assert_eq!(sql.count("SELECT count(*) FROM contents").await, 3);
        assert_eq!(
            store.stored_bytes(&b).await.unwrap().used as i64,
            recount(&sql, &b).await
        );
    }
);

both!(
    a_check_that_fails_after_its_value_was_stored_leaves_every_value_readable,
    keeping(100),
    |store: Arc<dyn TestStore>, sql: Sql| async move {
        let (user, task) = one_monitor(&*store, "ada@example.com").await;
        let versions = one_word_changes(3_000, 4, 17);
        for (i, value) in versions.iter().take(3).enumerate() {
            record(&*store, &task, i, value).await;
        }
        let later = now_millis() + 10 * 3_600_000;
        let due = store
            .claim_due(
                later,
                later + 60_000,
                &Claim {
                    limit: 100,
                    share: 1_000,
                    browser: false,
                    locations: Locations::DEFAULT,
                    buckets: HostBuckets::ALL,
                    hosts: Default::default(),
                },
            )
            .await
            .unwrap()
            .into_iter()
            .find(|c| c.monitor.id.as_deref() == Some(&*task))
            .expect("due");
        let deltas = sql
            .count("SELECT count(*) FROM contents WHERE codec = 2")
            .await;
        let bytes = stored_bytes(&sql).await;
        let used = store.stored_bytes(&task).await.unwrap();
        // The new value retires the latest (it would become a delta), then the check's
        // notification names a monitor that does not exist: all of it is rolled back.
        let record = CheckRecord {
            task: task.clone(),
            version: due.version,
            token: due.token,
            own: ClientData::value(at(3), versions[3].clone()),
            pages: Vec::new(),
            notifications: vec![NewNotification {
                task_id: new_id(),
                page_url: None,
                job_type: wachet::model::JobType::SinglePage,
                alert: wachet::model::Alert {
                    kind: wachet::model::AlertType::NotEq,
                    value: None,
                    parameters: None,
                    remind_every_seconds: None,
                },
                created_at: now_millis(),
                current: None,
                comparand: None,
                error: None,
                url: None,
                synthetic_expression: "content changed".into(),
                html: String::new(),
                endpoints: Vec::new(),
                explanation: None,
            }],
            alert_states: Vec::new(),
            next_check_at: later,
            learned: Vec::new(),
            learned_order: None,
            sampled: false,
            noise_notice: None,
        };
        assert!(store.record_check(&record).await.is_err());
        assert_eq!(
            sql.count("SELECT count(*) FROM contents WHERE codec = 2")
                .await,
            deltas
        );
        assert_eq!(stored_bytes(&sql).await, bytes);
        assert_eq!(store.stored_bytes(&task).await.unwrap(), used);
        let expected: Vec<Option<String>> = versions.iter().take(3).cloned().map(Some).collect();
        assert!(every_value(&*store, &user, &task).await == expected);
        // The same check without the bad notification stores it all.
        let record = CheckRecord {
            notifications: Vec::new(),
            ..record
        };
        assert_eq!(store.record_check(&record).await.unwrap(), Recorded::Stored);
        assert!(
            sql.count("SELECT count(*) FROM contents WHERE codec = 2")
                .await
                > deltas
        );
        let expected: Vec<Option<String>> = versions.iter().cloned().map(Some).collect();
        assert!(every_value(&*store, &user, &task).await == expected);
        assert_eq!(
            store.stored_bytes(&task).await.unwrap().used as i64,
            recount(&sql, &task).await
        );
    }
);

both!(
    a_value_a_monitor_and_one_of_its_pages_share_stays_whole_while_either_shows_it,
    keeping(100),
    |store: Arc<dyn TestStore>, sql: Sql| async move {
        let (user, task) = one_monitor(&*store, "ada@example.com").await;
        let versions = one_word_changes(3_000, 3, 23);
        let page = |i: usize, v: usize| ClientData::value(at(i), versions[v].clone());
        let series = Series::Page {
            task_id: task.clone(),
            url: "https://example.com/a".into(),
            name: None,
        };
        record(&*store, &task, 0, &versions[0]).await;
        // The page's series gets a keyframe, then shows the monitor's value and leaves it:
        // the value stays whole, the monitor's latest.
        for (i, v) in [(1, 2), (2, 0), (3, 1)] {
            store.append_entry(&series, &page(i, v)).await.unwrap();
        }
        let monitor = store.task(&user, &task).await.expect("the monitor reads");
        assert_eq!(monitor.data.and_then(|d| d.raw), Some(versions[0].clone()));
        let pages = store
            .task_pages(&user, &task)
            .await
            .expect("its pages read");
        assert_eq!(
            pages[0].data.as_ref().and_then(|d| d.raw.clone()),
            Some(versions[1].clone())
        );
        assert_eq!(latest_deltas(&sql).await, 0);
        // Once the monitor moves on too, its old value is free to become a delta.
        record(&*store, &task, 4, &versions[1]).await;
        record(&*store, &task, 5, &versions[2]).await;
        let id = pages[0].id.clone().unwrap();
        assert_eq!(
            every_value(&*store, &user, &id).await,
            vec![
                Some(versions[2].clone()),
                Some(versions[0].clone()),
                Some(versions[1].clone())
            ]
        );
        assert_eq!(
            every_value(&*store, &user, &task).await,
            vec![
                Some(versions[0].clone()),
                Some(versions[1].clone()),
                Some(versions[2].clone())
            ]
        );
    }
);
