//! What the tests of [`HistoryStore`], [`ScheduleStore`] and [`OutboxStore`] share: monitors
//! made due, claims, checks and notifications as the scheduler records them.

use crate::store::TestStore;
use std::sync::Arc;
use wachet::model::{
    Alert, AlertType, ClientData, JobType, MessagingServiceType, Monitor, NotificationEndpoint,
};
use wachet_server::store::postgres::PgStore;
use wachet_server::store::sqlite::{SqliteStore, StoreSettings};
use wachet_server::store::*;

/// A plain monitor of `url`, checked hourly.
pub(super) fn monitor(url: &str) -> Monitor {
    serde_json::from_value(serde_json::json!({
        "name": url, "url": url, "recurrenceInSeconds": 3600
    }))
    .expect("a monitor")
}

/// Creates `n` monitors of `user` (due at once) and returns their ids.
pub(super) async fn monitors(store: &dyn TestStore, user: &str, n: usize) -> Vec<String> {
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

pub(super) fn plain(limit: u32) -> Claim {
    Claim {
        limit,
        share: 1_000,
        browser: false,
        locations: wachet_server::store::Locations::DEFAULT,
        buckets: wachet_server::store::HostBuckets::ALL,
        hosts: Default::default(),
    }
}

pub(super) fn ids(due: &[DueCheck]) -> Vec<String> {
    due.iter()
        .map(|d| d.monitor.id.clone().expect("an id"))
        .collect()
}

/// What a claim gives the check it starts: the definition's version and the fencing token.
pub(super) trait Claimed {
    fn claim(&self) -> (Millis, i64);
}

impl Claimed for DueCheck {
    fn claim(&self) -> (Millis, i64) {
        (self.version, self.token)
    }
}

/// A check of `task` under `claim` (version and token) that found `value`, due again in an hour.
pub(super) fn check(task: &str, (version, token): (Millis, i64), value: &str) -> CheckRecord {
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

pub(super) fn notification(task: &str, value: &str) -> NewNotification {
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
        endpoints: vec![NotificationEndpoint::new(
            MessagingServiceType::Webhook,
            Some("https://hooks.example/in".into()),
        )],
        explanation: None,
    }
}

/// The version a claim gives `task` (claimed far ahead, so it is due whatever its time).
pub(super) async fn claimed(store: &dyn TestStore, task: &str) -> DueCheck {
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
pub(super) async fn values(store: &dyn TestStore, user: &str, task: &str) -> Vec<Option<String>> {
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

/// Two handles of one database, as two processes would hold: on SQLite two opens of one file,
/// on PostgreSQL two pools. `None` when PostgreSQL is not there (and `CI` is not set).
pub(super) async fn two_handles(
    postgres: bool,
) -> Option<(
    Arc<dyn TestStore>,
    Arc<dyn TestStore>,
    Option<tempfile::TempDir>,
)> {
    let settings = StoreSettings::default();
    if postgres {
        let url = crate::support::pg::database().await?;
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

/// A PostgreSQL store on a fresh database, and a pool of its own on the same database for a
/// test's own statements; `None` without PostgreSQL.
pub(super) async fn on_postgres() -> Option<(PgStore, sqlx::PgPool)> {
    let url = crate::support::pg::database().await?;
    let store = PgStore::connect(&url, &StoreSettings::default())
        .await
        .expect("connect");
    let pool = sqlx::PgPool::connect(&url).await.expect("connect");
    Some((store, pool))
}

/// A worker as `wachet serve` describes itself.
pub(super) fn worker(name: &str) -> WorkerInfo {
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

pub(super) fn holding(checks: &[&DueCheck]) -> Holdings {
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
