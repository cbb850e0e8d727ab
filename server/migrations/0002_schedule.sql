-- The scheduler's state lives in the database, so a restart neither loses nor bunches checks and
-- several processes can share the work: when each active monitor is next due (null: paused),
-- and until when a check in flight holds it (a lease, so a check lost in a crash runs again).
ALTER TABLE tasks ADD COLUMN next_check_at BIGINT;
ALTER TABLE tasks ADD COLUMN lease_until BIGINT;
UPDATE tasks SET next_check_at = updated_at WHERE paused = 0;
CREATE INDEX tasks_due ON tasks (next_check_at);
