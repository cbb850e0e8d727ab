//! [`TaskStore`](crate::store::TaskStore) on PostgreSQL, written once for both backends in
//! [`crate::store::both::tasks`], with the statements PostgreSQL spells its own way. Only the
//! definition is in the monitor's row: when it changes, the schedule is told
//! ([`schedule::schedule_in`]), and a monitor's latest data is read through the history
//! ([`history::DATA_COLUMNS`]).

use super::{PgStore, history, schedule};
use crate::store::Millis;
use crate::store::shape::tasks::Columns;
use sqlx::Postgres;

/// A monitor row with its latest data, `{select()} WHERE ...`.
pub(super) fn select() -> String {
    format!(
        "SELECT t.id, t.folder_id, t.definition, t.noise_notice, {} FROM tasks t {}",
        history::DATA_COLUMNS,
        history::DATA_JOIN
    )
}

crate::store::both::tasks::task_store!(
    PgStore,
    Postgres,
    select: select(),
    insert: "INSERT INTO tasks (id, user_id, folder_id, name, sort_key, url, note, search_text, \
             definition, paused, dynamic, created_at, updated_at, sample_noise) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
    update: "UPDATE tasks SET folder_id = COALESCE($1, folder_id), name = $2, sort_key = $3, \
             url = $4, note = $5, search_text = $6, definition = $7, paused = $8, \
             dynamic = $9, updated_at = $10, name_auto = name_auto AND name IS NOT DISTINCT FROM $2 \
             WHERE id = $11 AND user_id = $12",
    lock_row: " FOR UPDATE",
    forget_pages_learning: "UPDATE pages SET alert_state = ((alert_state::jsonb - 'noise') - 'masks')::text \
                            WHERE task_id = $1 AND alert_state IS NOT NULL",
    pages_order: "p.url COLLATE \"C\"",
    small_int: i32,
);

/// The schedule is a row of its own, told of every write of the definition.
async fn scheduled_in(
    tx: &mut Transaction<'_, Postgres>,
    task: &str,
    user: &str,
    c: &Columns,
    now: Millis,
) -> Result<(), StoreError> {
    schedule::schedule_in(
        tx,
        task,
        user,
        c.first_check(now),
        (c.dynamic, c.location, c.host_bucket, c.host),
    )
    .await
}

/// What noise learning remembered is in the monitor's series (`task_series`).
async fn forget_learning_in(
    tx: &mut Transaction<'_, Postgres>,
    task: &str,
) -> Result<(), StoreError> {
    schedule::forget_learning_in(tx, task).await
}
