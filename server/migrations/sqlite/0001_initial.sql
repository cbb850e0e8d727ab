-- The service's schema. Standard SQL that PostgreSQL runs too: ids are text made by the service
-- (UUIDv7), times are UTC milliseconds since the epoch (BIGINT), booleans are 0/1 integers.

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

CREATE TABLE tokens (
    hash       TEXT PRIMARY KEY,                  -- SHA-256 of the token, hex
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    issued_at  BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX tokens_by_user ON tokens (user_id);
CREATE INDEX tokens_by_expiry ON tokens (expires_at);

CREATE TABLE folders (
    id         TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    parent_id  TEXT REFERENCES folders (id) ON DELETE CASCADE,
    name       TEXT,
    sort_key   TEXT NOT NULL,                     -- lower-cased name, for listing by name
    created_at BIGINT NOT NULL
);
CREATE INDEX folders_by_parent ON folders (parent_id);
CREATE INDEX folders_listing ON folders (user_id, parent_id, sort_key, id);

-- The latest check's fields are kept on the monitor (and the page) so that listings and folder
-- counts need no join with the history.
CREATE TABLE tasks (
    id              TEXT PRIMARY KEY,
    user_id         TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    folder_id       TEXT REFERENCES folders (id) ON DELETE CASCADE,
    name            TEXT,
    sort_key        TEXT NOT NULL,
    url             TEXT NOT NULL,
    note            TEXT,
    search_text     TEXT NOT NULL,                -- lower-cased name, URL and note, for search
    definition      TEXT NOT NULL,                -- the Monitor as JSON, without id, folderId and data
    paused          INTEGER NOT NULL,
    failed          INTEGER NOT NULL DEFAULT 0,
    latest_entry_id TEXT,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL
);
-- Also covers the folder counts, which read only these columns.
CREATE INDEX tasks_by_folder ON tasks (folder_id, paused, failed);
CREATE INDEX tasks_listing ON tasks (user_id, folder_id, sort_key, id);

-- Pages crawled by a Portal monitor.
CREATE TABLE pages (
    id              TEXT PRIMARY KEY,
    task_id         TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    url             TEXT NOT NULL,
    name            TEXT,
    latest_entry_id TEXT,
    UNIQUE (task_id, url)
);

-- Values stored once by content: `codec` 0 is the UTF-8 text as is.
CREATE TABLE contents (
    hash  BLOB PRIMARY KEY,                       -- SHA-256 of the value
    codec INTEGER NOT NULL,
    body  BLOB NOT NULL
);

-- History: one entry a check, of a monitor (page_id null) or of one of its pages.
CREATE TABLE entries (
    id           TEXT PRIMARY KEY,
    task_id      TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    page_id      TEXT REFERENCES pages (id) ON DELETE CASCADE,
    checked_at   BIGINT NOT NULL,
    changed_at   BIGINT,
    content_hash BLOB REFERENCES contents (hash),
    error        TEXT
);
CREATE INDEX entries_of_task ON entries (task_id, page_id, checked_at, id);
CREATE INDEX entries_of_page ON entries (page_id, checked_at, id);

CREATE TABLE notifications (
    id                   TEXT PRIMARY KEY,
    user_id              TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    task_id              TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    page_id              TEXT REFERENCES pages (id) ON DELETE CASCADE,
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
    html                 TEXT
);
CREATE INDEX notifications_of_user ON notifications (user_id, created_at, id);
CREATE INDEX notifications_of_task ON notifications (task_id, created_at, id);
CREATE INDEX notifications_of_page ON notifications (page_id);
