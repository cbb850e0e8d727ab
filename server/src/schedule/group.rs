//! Group commit of checks: the checks that end while a group is being written wait together and
//! are written next as one group ([`ScheduleStore::record_checks`], one transaction), so a busy
//! scheduler pays one commit for many checks while a quiet one writes each check at once. Nothing
//! waits for a timer: a check waits at most for the group before its own, a few milliseconds, so
//! its notifications are not held back. A check is answered only after its group committed, so
//! a check reported stored (announced, or read back through the API) and its notifications
//! survive any crash; a group cut off by a crash is lost whole, and its monitors are checked
//! again when their leases run out.

use crate::metrics::METRICS;
use crate::store::{CheckRecord, Recorded, ScheduleStore, StoreError};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use tokio::sync::{mpsc, oneshot};

/// Most checks in one group: enough that a commit is shared by many, few enough that a group
/// takes milliseconds to write, which is what the checks behind it wait.
pub const MAX_GROUP: usize = 32;

/// A check waiting for its group, and where its outcome goes.
struct Waiting {
    record: CheckRecord,
    reply: oneshot::Sender<Result<Recorded, StoreError>>,
}

/// Where checks are handed to be stored; cheap to clone. The writer behind it ends once every
/// clone is dropped and what was handed to it is written.
#[derive(Clone)]
pub struct Groups {
    queue: mpsc::UnboundedSender<Waiting>,
}

impl Groups {
    /// Starts the writer of groups over `store`.
    pub fn start(store: Arc<dyn ScheduleStore>) -> Groups {
        let (queue, waiting) = mpsc::unbounded_channel();
        tokio::spawn(write_groups(store, waiting));
        Groups { queue }
    }

    /// Stores `record` with the checks that end with it; answers once its group committed.
    pub async fn record(&self, record: CheckRecord) -> Result<Recorded, StoreError> {
        let (reply, outcome) = oneshot::channel();
        let handed = std::time::Instant::now();
        self.queue
            .send(Waiting { record, reply })
            .map_err(|_| StoreError::Backend("the writer of checks has stopped".into()))?;
        let outcome = outcome
            .await
            .map_err(|_| StoreError::Backend("the writer of checks has stopped".into()))?;
        METRICS.store_wait.observe(handed.elapsed());
        outcome
    }
}

/// Writes what is waiting, a group at a time, until every sender is gone.
async fn write_groups(
    store: Arc<dyn ScheduleStore>,
    mut waiting: mpsc::UnboundedReceiver<Waiting>,
) {
    let mut records = Vec::with_capacity(MAX_GROUP);
    let mut replies = Vec::with_capacity(MAX_GROUP);
    while let Some(first) = waiting.recv().await {
        records.push(first.record);
        replies.push(first.reply);
        while records.len() < MAX_GROUP {
            let Ok(next) = waiting.try_recv() else { break };
            records.push(next.record);
            replies.push(next.reply);
        }
        let outcomes = store.record_checks(&records).await;
        METRICS.check_groups.fetch_add(1, Ordering::Relaxed);
        METRICS
            .checks_grouped
            .fetch_add(records.len() as u64, Ordering::Relaxed);
        let mut outcomes = outcomes.into_iter();
        for reply in replies.drain(..) {
            let outcome = outcomes
                .next()
                .unwrap_or_else(|| Err(StoreError::Backend("no outcome for the check".into())));
            // A check stopped meanwhile (its claim taken over) no longer waits: nothing to do.
            let _ = reply.send(outcome);
        }
        records.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{AlertStates, Claim, DueCheck, Millis, StorageUse};
    use std::sync::Mutex;

    /// A store that keeps the size of each group it was given, and answers each record by its
    /// task's name.
    #[derive(Default)]
    struct Sizes(Mutex<Vec<usize>>);

    #[async_trait::async_trait]
    impl ScheduleStore for Sizes {
        async fn name_after_page(&self, _: &str, _: &str) -> Result<bool, StoreError> {
            Ok(false)
        }
        async fn task_session(&self, _: &str) -> Result<Option<String>, StoreError> {
            Ok(None)
        }
        async fn keep_task_session(&self, _: &str, _: &str) -> Result<(), StoreError> {
            Ok(())
        }
        async fn forget_task_session(&self, _: &str) -> Result<(), StoreError> {
            Ok(())
        }
        async fn claim_due(
            &self,
            _: Millis,
            _: Millis,
            _: &Claim,
        ) -> Result<Vec<DueCheck>, StoreError> {
            Ok(Vec::new())
        }
        async fn finish_check(
            &self,
            _: &str,
            _: Millis,
            _: i64,
            _: Millis,
        ) -> Result<(), StoreError> {
            Ok(())
        }
        async fn record_checks(
            &self,
            records: &[CheckRecord],
        ) -> Vec<Result<Recorded, StoreError>> {
            self.0.lock().unwrap().push(records.len());
            records
                .iter()
                .map(|r| match r.task.as_str() {
                    "fenced" => Ok(Recorded::Fenced),
                    "gone" => Err(StoreError::NotFound),
                    _ => Ok(Recorded::Stored),
                })
                .collect()
        }
        async fn alert_states(&self, _: &str) -> Result<AlertStates, StoreError> {
            Ok(AlertStates::default())
        }
        async fn stored_bytes(&self, _: &str) -> Result<StorageUse, StoreError> {
            Ok(StorageUse { used: 0, max: 0 })
        }
    }

    fn record(task: &str) -> CheckRecord {
        CheckRecord {
            task: task.to_string(),
            version: 0,
            token: 0,
            own: wachet::model::ClientData::value(chrono::Utc::now(), "v".into()),
            pages: Vec::new(),
            notifications: Vec::new(),
            alert_states: Vec::new(),
            next_check_at: 0,
            learned: Vec::new(),
            learned_order: None,
            sampled: false,
            noise_notice: None,
        }
    }

    /// 100 checks waiting at once go in groups of at most [`MAX_GROUP`], and each gets its own
    /// outcome, not its group's.
    #[tokio::test]
    async fn checks_waiting_together_share_a_group_and_each_gets_its_own_outcome() {
        let store = Arc::new(Sizes::default());
        let (queue, waiting) = mpsc::unbounded_channel();
        let mut outcomes = Vec::new();
        for i in 0..100 {
            let task = match i % 10 {
                3 => "fenced".to_string(),
                7 => "gone".to_string(),
                _ => format!("t{i}"),
            };
            let (reply, outcome) = oneshot::channel();
            queue
                .send(Waiting {
                    record: record(&task),
                    reply,
                })
                .unwrap();
            outcomes.push((task, outcome));
        }
        drop(queue);
        write_groups(store.clone(), waiting).await;
        assert_eq!(*store.0.lock().unwrap(), vec![32, 32, 32, 4]);
        for (task, outcome) in outcomes {
            let outcome = outcome.await.unwrap();
            match task.as_str() {
                "fenced" => assert_eq!(outcome.unwrap(), Recorded::Fenced),
                "gone" => assert!(matches!(outcome, Err(StoreError::NotFound))),
                _ => assert_eq!(outcome.unwrap(), Recorded::Stored),
            }
        }
    }

    /// A lone check is written at once, in a group of its own: nothing waits for company.
    #[tokio::test]
    async fn a_lone_check_is_written_at_once() {
        let store = Arc::new(Sizes::default());
        let groups = Groups::start(store.clone());
        assert_eq!(groups.record(record("a")).await.unwrap(), Recorded::Stored);
        assert_eq!(groups.record(record("b")).await.unwrap(), Recorded::Stored);
        assert_eq!(*store.0.lock().unwrap(), vec![1, 1]);
    }
}
