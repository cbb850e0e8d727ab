-- Fair share of the check slots and quotas per user.
--
-- A claim counts each user's checks in flight (monitors under a lease: a small partial index),
-- finds the users with monitors due from the due index (which carries the owner and the lease,
-- so no table row is read for it) and takes each such user's earliest due monitors from an
-- index of their own.
DROP INDEX tasks_due;
CREATE INDEX tasks_due ON tasks (dynamic, next_check_at, user_id, lease_until);
CREATE INDEX tasks_user_due ON tasks (user_id, dynamic, next_check_at);
CREATE INDEX tasks_leased ON tasks (dynamic, user_id, lease_until) WHERE lease_until IS NOT NULL;

-- What each user's history takes (`stored_bytes`), kept by triggers in the transactions that
-- write and delete entries, never recounted on read: each distinct value a monitor's history
-- (its own and its pages') names counts once, at its stored (compressed) size, and each entry
-- 160 bytes (what an entry row with its index takes) plus its error text. `task_contents`
-- counts the entries of a monitor naming each value, so a value goes from the count when the
-- last of them goes.
ALTER TABLE users ADD COLUMN stored_bytes BIGINT NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN stored_bytes BIGINT NOT NULL DEFAULT 0;
CREATE TABLE task_contents (
    task_id TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    hash    BLOB NOT NULL,
    refs    BIGINT NOT NULL,
    bytes   BIGINT NOT NULL,
    PRIMARY KEY (task_id, hash)
);

INSERT INTO task_contents (task_id, hash, refs, bytes)
SELECT e.task_id, e.content_hash, count(*), length(c.body)
FROM entries e JOIN contents c ON c.hash = e.content_hash
GROUP BY e.task_id, e.content_hash;
UPDATE tasks SET stored_bytes =
    (SELECT count(*) * 160 + coalesce(sum(length(CAST(e.error AS BLOB))), 0)
     FROM entries e WHERE e.task_id = tasks.id)
    + coalesce((SELECT sum(bytes) FROM task_contents tc WHERE tc.task_id = tasks.id), 0);
UPDATE users SET stored_bytes =
    coalesce((SELECT sum(stored_bytes) FROM tasks t WHERE t.user_id = users.id), 0);

CREATE TRIGGER entries_charged AFTER INSERT ON entries
BEGIN
    INSERT INTO task_contents (task_id, hash, refs, bytes)
        SELECT NEW.task_id, hash, 0, length(body) FROM contents WHERE hash = NEW.content_hash
        ON CONFLICT (task_id, hash) DO NOTHING;
    UPDATE tasks SET stored_bytes = stored_bytes + 160
            + coalesce(length(CAST(NEW.error AS BLOB)), 0)
            + coalesce((SELECT bytes FROM task_contents
                        WHERE task_id = NEW.task_id AND hash = NEW.content_hash AND refs = 0), 0)
        WHERE id = NEW.task_id;
    UPDATE task_contents SET refs = refs + 1
        WHERE task_id = NEW.task_id AND hash = NEW.content_hash;
END;

-- When a monitor is deleted its row is gone by the time the cascade deletes its entries, so
-- these updates find nothing and `tasks_uncharged` takes the monitor's whole count off.
CREATE TRIGGER entries_uncharged AFTER DELETE ON entries
BEGIN
    UPDATE task_contents SET refs = refs - 1
        WHERE task_id = OLD.task_id AND hash = OLD.content_hash;
    UPDATE tasks SET stored_bytes = stored_bytes - 160
            - coalesce(length(CAST(OLD.error AS BLOB)), 0)
            - coalesce((SELECT bytes FROM task_contents
                        WHERE task_id = OLD.task_id AND hash = OLD.content_hash AND refs = 0), 0)
        WHERE id = OLD.task_id;
    DELETE FROM task_contents
        WHERE task_id = OLD.task_id AND hash = OLD.content_hash AND refs = 0;
END;

CREATE TRIGGER tasks_charged AFTER UPDATE OF stored_bytes ON tasks
BEGIN
    UPDATE users SET stored_bytes = stored_bytes + NEW.stored_bytes - OLD.stored_bytes
        WHERE id = NEW.user_id;
END;

CREATE TRIGGER tasks_uncharged AFTER DELETE ON tasks
BEGIN
    UPDATE users SET stored_bytes = stored_bytes - OLD.stored_bytes WHERE id = OLD.user_id;
END;
