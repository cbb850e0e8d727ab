-- The service's schema on PostgreSQL, second part: the schedule, history and the outbox. The
-- same data as the SQLite schema, shaped for PostgreSQL's MVCC: every row a check writes is
-- narrow and the monitor's own (its schedule, its series' state), never the definition in
-- `tasks` and never a row shared by many monitors, so concurrent checks neither contend on a
-- row nor leave wide dead tuples behind. Where SQLite keeps counts with triggers on every
-- entry (references to `contents`, a user's stored bytes), this schema counts otherwise:
-- values are found unreferenced by an anti-join over candidates the deletions leave, and a
-- user's stored bytes are spread over a few rows each monitor adds to.

-- When each monitor is next due and who holds it: one narrow row a monitor, the only row a
-- claim writes. `next_check_at` NULL: paused. `lease_until` is on the database's clock (UTC
-- milliseconds of `clock_timestamp()`), so processes whose clocks differ agree on when a lease
-- ran out. `token` grows with every claim: the fencing token a check carries.
CREATE TABLE schedules (
    task_id       TEXT PRIMARY KEY COLLATE "C" REFERENCES tasks (id) ON DELETE CASCADE,
    user_id       TEXT NOT NULL,
    dynamic       BOOLEAN NOT NULL,
    next_check_at BIGINT,
    lease_until   BIGINT,
    token         BIGINT NOT NULL DEFAULT 0
);
-- Every claim and check rewrites its monitor's row here (and, as the due time and lease are
-- indexed, its index entries): a small table whose dead rows autovacuum should take early
-- rather than at the default fifth of the table.
ALTER TABLE schedules SET (autovacuum_vacuum_scale_factor = 0.02,
                           autovacuum_analyze_scale_factor = 0.05);
-- The claim reads the due range with the owner and lease from the index alone (see
-- store/postgres/schedule.rs, `CLAIM`).
CREATE INDEX schedules_due ON schedules (dynamic, next_check_at, user_id, lease_until)
    WHERE next_check_at IS NOT NULL;
CREATE INDEX schedules_user_due ON schedules (user_id, dynamic, next_check_at)
    WHERE next_check_at IS NOT NULL;
CREATE INDEX schedules_leased ON schedules (dynamic, user_id, lease_until)
    WHERE lease_until IS NOT NULL;

-- Pages crawled by a Portal monitor, with their series' state (as `task_series` for the
-- monitor's own): the latest entry, the entries kept, the alerts' confirmation state.
CREATE TABLE pages (
    id              TEXT PRIMARY KEY COLLATE "C",
    task_id         TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    url             TEXT NOT NULL,
    name            TEXT,
    latest_entry_id BIGINT,
    entry_count     BIGINT NOT NULL DEFAULT 0,
    alert_state     TEXT,                         -- ConfirmState as JSON
    UNIQUE (task_id, url)
);
ALTER TABLE notifications ADD CONSTRAINT notifications_page
    FOREIGN KEY (page_id) REFERENCES pages (id) ON DELETE CASCADE;

-- A monitor's own series: its latest entry, how many entries it keeps (the retention prunes
-- only when over), the alerts' confirmation state, and what its history takes (`stored_bytes`)
-- with the shard of its owner's count it adds to.
CREATE TABLE task_series (
    task_id         TEXT PRIMARY KEY COLLATE "C" REFERENCES tasks (id) ON DELETE CASCADE,
    user_id         TEXT NOT NULL,
    latest_entry_id BIGINT,
    entry_count     BIGINT NOT NULL DEFAULT 0,
    stored_bytes    BIGINT NOT NULL DEFAULT 0,
    shard           SMALLINT NOT NULL,
    alert_state     TEXT
);

-- A user's stored bytes in a few shards: each monitor adds to one (`task_series.shard`), so
-- checks of many monitors of one user rarely wait on each other's row; the total is their sum.
CREATE TABLE user_storage (
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    shard   SMALLINT NOT NULL,
    bytes   BIGINT NOT NULL,
    PRIMARY KEY (user_id, shard)
);

-- A deleted monitor takes what its history took off its owner's count (its entries go by the
-- same cascade, so nothing counts them one by one).
CREATE FUNCTION task_series_uncharged() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE user_storage SET bytes = bytes - OLD.stored_bytes
        WHERE user_id = OLD.user_id AND shard = OLD.shard;
    RETURN OLD;
END $$;
CREATE TRIGGER task_series_uncharged AFTER DELETE ON task_series
    FOR EACH ROW EXECUTE FUNCTION task_series_uncharged();

-- Values stored once by content: `codec` 0 is the UTF-8 text as is, 1 a zstd frame of it.
CREATE TABLE contents (
    hash  BYTEA PRIMARY KEY,                      -- SHA-256 of the value
    codec INTEGER NOT NULL,
    body  BYTEA NOT NULL
);

-- History: one entry a check, of a monitor (page_id NULL) or of one of its pages. Ids come
-- from a sequence: a later entry, a higher id (as on SQLite).
CREATE TABLE entries (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    task_id      TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    page_id      TEXT REFERENCES pages (id) ON DELETE CASCADE,
    checked_at   BIGINT NOT NULL,
    changed_at   BIGINT,
    content_hash BYTEA REFERENCES contents (hash),
    error        TEXT
);
CREATE INDEX entries_of_task ON entries (task_id, page_id, checked_at, id);
CREATE INDEX entries_of_page ON entries (page_id, checked_at, id) WHERE page_id IS NOT NULL;
-- Whether a value is still named (garbage collection), and by this monitor (its quota).
CREATE INDEX entries_by_content ON entries (content_hash, task_id) WHERE content_hash IS NOT NULL;

-- Values whose entries went (pruned, or cascaded with a monitor, page, folder or user): the
-- candidates garbage collection looks at, so it never scans every value. Filled by one
-- statement-level trigger (one insert a deleting statement, not one update a check).
CREATE TABLE contents_unnamed (
    hash BYTEA PRIMARY KEY
);
CREATE FUNCTION entries_unnamed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO contents_unnamed (hash)
        SELECT DISTINCT content_hash FROM gone WHERE content_hash IS NOT NULL
        ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;
CREATE TRIGGER entries_unnamed AFTER DELETE ON entries
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION entries_unnamed();

-- The durable outbox: one row a notification (or test) and endpoint, written in the
-- transaction that stores the notification. `lease_until` on the database's clock, as above.
-- Deliveries per user are spread so that no hour holds more than the server allows: each is
-- released (`released_at`) no earlier than an hour after the one that many places before it.
CREATE TABLE deliveries (
    id              TEXT PRIMARY KEY COLLATE "C",
    notification_id TEXT REFERENCES notifications (id) ON DELETE CASCADE,
    user_id         TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    kind            INTEGER NOT NULL,             -- MessagingServiceType code
    target          TEXT NOT NULL,                -- a URL, or an e-mail address
    state           TEXT NOT NULL,                -- pending, delivered, failed
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    lease_until     BIGINT,
    last_error      TEXT,
    updated_at      BIGINT NOT NULL,
    released_at     BIGINT
);
CREATE INDEX deliveries_due ON deliveries (next_attempt_at) WHERE state = 'pending';
CREATE INDEX deliveries_of_notification ON deliveries (notification_id);
CREATE INDEX deliveries_released ON deliveries (user_id, released_at)
    WHERE released_at IS NOT NULL;
CREATE INDEX deliveries_tests ON deliveries (user_id, state) WHERE notification_id IS NULL;
