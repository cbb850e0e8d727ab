-- Browser steps: a check that had to sign in again says so on its history entry, and the
-- browser session a monitor's login left is kept between checks, sealed with the server's key.
ALTER TABLE entries ADD COLUMN logged_in INTEGER NOT NULL DEFAULT 0;

CREATE TABLE task_sessions (
    task_id    TEXT PRIMARY KEY REFERENCES tasks (id) ON DELETE CASCADE,
    sealed     TEXT NOT NULL,                -- the session's JSON, sealed (secrets::Sealer)
    updated_at BIGINT NOT NULL
);
