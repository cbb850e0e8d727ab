-- Deliveries held for a digest or for quiet hours wait pending until their time
-- (next_attempt_at); those of one message share digest_key (the endpoint and that time). When
-- one of them is claimed it carries the others, which wait as 'grouped' under digest_of until
-- it ends, then take its state.
ALTER TABLE deliveries ADD COLUMN digest_key TEXT;
ALTER TABLE deliveries ADD COLUMN digest_of TEXT;
CREATE INDEX deliveries_digest ON deliveries (digest_key) WHERE digest_key IS NOT NULL;
CREATE INDEX deliveries_digest_of ON deliveries (digest_of) WHERE digest_of IS NOT NULL;
