-- The lane a delivery counts against: the receiving host and port of its target, or the
-- endpoint itself where the target names no host (store/shape/outbox.rs `lane`). A claim
-- leaves only a few deliveries of one lane in flight, so a receiver that hangs holds only a
-- few of the deliverer's slots. Rows written before lanes existed, that may still be sent, get
-- their endpoint (kind and target) as their lane: a cap per endpoint.
ALTER TABLE deliveries ADD COLUMN lane TEXT NOT NULL DEFAULT '';
UPDATE deliveries SET lane = kind || ':' || target WHERE state <> 'delivered';
-- The deliveries in flight, by lane: a claim counts them.
CREATE INDEX deliveries_in_flight ON deliveries (lane, lease_until) WHERE lease_until IS NOT NULL;
