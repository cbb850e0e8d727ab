-- Processes that check and deliver (`wachet serve` with the worker or deliver role), each with
-- the time of its last heartbeat: a beat also renews the leases of everything the process
-- holds, so what a process that stopped beating held is taken over once its leases run out.
CREATE TABLE workers (
    id           TEXT PRIMARY KEY,
    roles        TEXT NOT NULL,                  -- comma-separated: api, worker, deliver
    location     TEXT,                           -- a LocationCode name; NULL: the default
    kinds        TEXT NOT NULL,                  -- comma-separated: plain, browser
    host         TEXT NOT NULL,
    pid          INTEGER NOT NULL,
    started_at   BIGINT NOT NULL,
    heartbeat_at BIGINT NOT NULL
);

-- Fencing tokens: each claim of a monitor or a delivery raises its row's token, and only the
-- claim holding the current token may store what it did.
ALTER TABLE tasks ADD COLUMN lease_token BIGINT NOT NULL DEFAULT 0;
ALTER TABLE deliveries ADD COLUMN lease_token BIGINT NOT NULL DEFAULT 0;

-- The location a monitor is checked from (LocationCode), for the claims of the workers there;
-- it was only in the definition before.
ALTER TABLE tasks ADD COLUMN location INTEGER NOT NULL DEFAULT 0;
UPDATE tasks SET location = CASE json_extract(definition, '$.location')
    WHEN 'Us' THEN 1 WHEN 'Gb' THEN 2 WHEN 'De' THEN 3 WHEN 'Sg' THEN 4 WHEN 'Au' THEN 5
    ELSE 0 END;

-- Per-host politeness across workers: the host of each monitor's URL hashed into a bucket
-- (`store::host_bucket`; -1 until the store computes it when it opens), and which worker of
-- each location (`pool`, '' for the default one) holds each bucket, under a lease its beats
-- renew.
ALTER TABLE tasks ADD COLUMN host_bucket INTEGER NOT NULL DEFAULT -1;
CREATE INDEX tasks_unbucketed ON tasks (id) WHERE host_bucket < 0;
CREATE TABLE host_buckets (
    pool        TEXT NOT NULL,
    bucket      INTEGER NOT NULL,
    worker_id   TEXT,
    lease_until BIGINT,
    -- Handed back by `worker_id` (another worker joined): free once the lease runs out, so the
    -- checks it still runs of those hosts end first; at once when that worker leaves.
    draining    BOOLEAN NOT NULL DEFAULT FALSE,
    PRIMARY KEY (pool, bucket)
);
