-- The scheduler's state lives in the database, so a restart neither loses nor bunches checks and
-- several processes can share the work: when each active monitor is next due (null: paused),
-- and until when a check in flight holds it (a lease, so a check lost in a crash runs again).
-- Browser checks (dynamicContent) are claimed apart from plain ones, each kind against its own
-- slots, so monitors waiting for the browser never hold up the others.
ALTER TABLE tasks ADD COLUMN next_check_at BIGINT;
ALTER TABLE tasks ADD COLUMN lease_until BIGINT;
ALTER TABLE tasks ADD COLUMN dynamic INTEGER NOT NULL DEFAULT 0;
UPDATE tasks SET next_check_at = updated_at WHERE paused = 0;
CREATE INDEX tasks_due ON tasks (dynamic, next_check_at);
