-- The host a monitor's checks go to, as the engine's host slots key it (host and port), hashed
-- (`store::host_hash`): a claim leaves out the hosts that already have as many checks in flight
-- as their slots let through, so one slow host's backlog never holds every check slot. 0 until
-- the store computes it when it opens; the buckets are computed again with it.
ALTER TABLE schedules ADD COLUMN host BIGINT NOT NULL DEFAULT 0;
UPDATE schedules SET host_bucket = -1;
