-- The service's schema on PostgreSQL, first part: accounts, monitors, folders, notifications and
-- feeds (history, the schedule and the outbox follow in 0002). The same data as the SQLite
-- schema: ids are text made by the service (UUIDv7), times are UTC milliseconds since the epoch
-- (BIGINT), JSON kept as the API writes it (TEXT: it is only ever read back whole).
--
-- What a check writes is kept out of `tasks` (its schedule, lease, latest entry and
-- confirmation state live in 0002's narrow tables), so a check does not rewrite the definition
-- row; the columns here a check may write (`failed`, `sample_noise`, `noise_notice`) change
-- rarely and are written only when they do.

-- Service-wide values, such as the key that signs continuation tokens.
CREATE TABLE settings (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE users (
    id                     TEXT PRIMARY KEY,
    email                  TEXT NOT NULL UNIQUE, -- lower-cased
    password_hash          TEXT NOT NULL,        -- argon2 PHC string
    api_key_hash           TEXT NOT NULL,        -- SHA-256, hex
    webhook_secret         TEXT NOT NULL,
    notification_endpoints TEXT NOT NULL,        -- JSON array of NotificationEndpoint
    created_at             BIGINT NOT NULL
);

-- Bearer tokens and browser sessions. A session ends after a time without use as well as at its
-- expiry: `last_seen_at` is written at most once a minute; API tokens keep NULL.
CREATE TABLE tokens (
    hash         TEXT PRIMARY KEY,                -- SHA-256 of the token, hex
    user_id      TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    issued_at    BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL,
    last_seen_at BIGINT
);
CREATE INDEX tokens_by_user ON tokens (user_id);
CREATE INDEX tokens_by_expiry ON tokens (expires_at);

-- E-mail addresses a user asked notifications to go to, other than the account's own, each
-- confirmed with a code mailed to it. `mail_due_at` is when the confirmation message is (re)sent
-- (NULL once sent or given up); `token_hash` is the SHA-256 of the code last mailed.
CREATE TABLE email_addresses (
    user_id       TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    address       TEXT NOT NULL,                  -- lower-cased
    token_hash    TEXT,
    confirmed_at  BIGINT,
    requested_at  BIGINT NOT NULL,
    mail_due_at   BIGINT,
    mail_attempts INTEGER NOT NULL DEFAULT 0,
    lease_until   BIGINT,
    last_error    TEXT,
    PRIMARY KEY (user_id, address)
);
CREATE INDEX email_addresses_mail_due ON email_addresses (mail_due_at)
    WHERE mail_due_at IS NOT NULL;
CREATE INDEX email_addresses_by_token ON email_addresses (token_hash)
    WHERE token_hash IS NOT NULL;

CREATE TABLE folders (
    id         TEXT PRIMARY KEY COLLATE "C",
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    parent_id  TEXT REFERENCES folders (id) ON DELETE CASCADE,
    name       TEXT,
    sort_key   TEXT NOT NULL COLLATE "C",         -- lower-cased name, for listing by name
    created_at BIGINT NOT NULL
);
CREATE INDEX folders_by_parent ON folders (parent_id);
CREATE INDEX folders_listing ON folders (user_id, parent_id, sort_key, id);

-- A monitor's definition. Sort keys and ids compare byte-wise ("C"), as SQLite compares them,
-- so listings and continuation tokens order alike on both backends.
CREATE TABLE tasks (
    id           TEXT PRIMARY KEY COLLATE "C",
    user_id      TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    folder_id    TEXT REFERENCES folders (id) ON DELETE CASCADE,
    name         TEXT,
    sort_key     TEXT NOT NULL COLLATE "C",
    url          TEXT NOT NULL,
    note         TEXT,
    search_text  TEXT NOT NULL,                   -- lower-cased name, URL and note, for search
    definition   TEXT NOT NULL,                   -- the Monitor as JSON, without id, folderId and data
    paused       BOOLEAN NOT NULL,
    dynamic      BOOLEAN NOT NULL,                -- checked in a browser
    failed       BOOLEAN NOT NULL DEFAULT false,  -- the latest check failed
    sample_noise BOOLEAN NOT NULL DEFAULT false,  -- the next check samples the value's noise
    noise_notice TEXT,                            -- what learning has to tell about its noise
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL
);
-- Also covers the folder counts, which read only these columns.
CREATE INDEX tasks_by_folder ON tasks (folder_id, paused, failed);
CREATE INDEX tasks_listing ON tasks (user_id, folder_id, sort_key, id);

CREATE TABLE notifications (
    id                   TEXT PRIMARY KEY COLLATE "C",
    user_id              TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    task_id              TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    page_id              TEXT,                    -- a crawled page (0002 adds its reference)
    job_type             INTEGER NOT NULL,        -- JobType code
    alert_type           INTEGER NOT NULL,        -- AlertType code
    alert                TEXT NOT NULL,           -- the Alert that fired, as JSON
    created_at           BIGINT NOT NULL,
    current_value        TEXT,
    comparand            TEXT,
    error                TEXT,
    task_name            TEXT,
    url                  TEXT,
    synthetic_expression TEXT,
    html                 TEXT,
    explanation          TEXT                     -- notify::Explanation as JSON
);
CREATE INDEX notifications_of_user ON notifications (user_id, created_at, id);
CREATE INDEX notifications_of_task ON notifications (task_id, created_at, id);
CREATE INDEX notifications_of_page ON notifications (page_id) WHERE page_id IS NOT NULL;

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
CREATE INDEX feeds_of_user ON feeds (user_id, scope);
CREATE INDEX feeds_of_folder ON feeds (folder_id) WHERE folder_id IS NOT NULL;
CREATE INDEX feeds_of_task ON feeds (task_id) WHERE task_id IS NOT NULL;
