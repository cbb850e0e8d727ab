-- A delivery may carry no notification: a test notification a user sends to one of their
-- endpoints goes through the outbox like any other (the same tries, the same hourly bound), so
-- `notification_id` becomes optional and the owner (`user_id`) is kept on every row. SQLite
-- cannot drop a NOT NULL, so the table is rebuilt with its rows.
CREATE TABLE deliveries_new (
    id              TEXT PRIMARY KEY,
    notification_id TEXT REFERENCES notifications (id) ON DELETE CASCADE,
    kind            INTEGER NOT NULL,             -- MessagingServiceType code
    target          TEXT NOT NULL,                -- a URL, or an e-mail address
    state           TEXT NOT NULL,                -- pending, delivered, failed
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    lease_until     BIGINT,
    last_error      TEXT,
    updated_at      BIGINT NOT NULL,
    user_id         TEXT REFERENCES users (id) ON DELETE CASCADE,
    released_at     BIGINT
);
INSERT INTO deliveries_new (id, notification_id, kind, target, state, attempts, next_attempt_at,
                            lease_until, last_error, updated_at, user_id, released_at)
    SELECT id, notification_id, kind, target, state, attempts, next_attempt_at, lease_until,
           last_error, updated_at, user_id, released_at
    FROM deliveries;
DROP TABLE deliveries;
ALTER TABLE deliveries_new RENAME TO deliveries;
CREATE INDEX deliveries_due ON deliveries (state, next_attempt_at);
CREATE INDEX deliveries_of_notification ON deliveries (notification_id);
CREATE INDEX deliveries_released ON deliveries (user_id, released_at)
    WHERE released_at IS NOT NULL;
CREATE INDEX deliveries_tests ON deliveries (user_id, state) WHERE notification_id IS NULL;

-- Atom feeds of a user's changes, each at a URL carrying a secret of its own (kept as its
-- SHA-256): of all their monitors (`scope` 'all', no target), of a folder's subtree or of one
-- monitor. Deleting the folder or monitor deletes its feed.
CREATE TABLE feeds (
    id          TEXT PRIMARY KEY,
    user_id     TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    scope       TEXT NOT NULL,                    -- all, folder, monitor
    folder_id   TEXT REFERENCES folders (id) ON DELETE CASCADE,
    task_id     TEXT REFERENCES tasks (id) ON DELETE CASCADE,
    secret_hash TEXT NOT NULL UNIQUE,
    created_at  BIGINT NOT NULL
);
-- One feed a scope and target per user, kept so by the store (a NULL target is no key).
CREATE INDEX feeds_of_user ON feeds (user_id, scope);
CREATE INDEX feeds_of_folder ON feeds (folder_id) WHERE folder_id IS NOT NULL;
CREATE INDEX feeds_of_task ON feeds (task_id) WHERE task_id IS NOT NULL;
