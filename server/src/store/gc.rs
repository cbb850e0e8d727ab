//! Garbage collection of stored values: a background loop that deletes, batch by batch, the
//! values no history entry names any more (left by the retention's pruning or by a deleted
//! monitor or folder), so the database shrinks back without one large transaction.

use super::HistoryStore;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// Values deleted in one transaction: bodies may be large, and the writer is shared with the
/// checks.
pub const BATCH: u32 = 64;

/// Collects garbage every `every` until `stop` turns true; a full batch is followed by the
/// next at once (after yielding the writer to whoever waits for it).
pub async fn run(store: Arc<dyn HistoryStore>, every: Duration, mut stop: watch::Receiver<bool>) {
    loop {
        loop {
            match store.collect_garbage(BATCH).await {
                Ok(n) if n >= u64::from(BATCH) => tokio::task::yield_now().await,
                Ok(_) => break,
                Err(err) => {
                    tracing::warn!(%err, "cannot collect unused history values");
                    break;
                }
            }
            if *stop.borrow() {
                return;
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = stop.wait_for(|stop| *stop) => return,
        }
    }
}
