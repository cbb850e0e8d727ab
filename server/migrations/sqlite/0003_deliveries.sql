-- The durable outbox: one row a notification and endpoint, written in the transaction that
-- stores the notification, so a crash loses no delivery; its last state is kept.
CREATE TABLE deliveries (
    id              TEXT PRIMARY KEY,
    notification_id TEXT NOT NULL REFERENCES notifications (id) ON DELETE CASCADE,
    kind            INTEGER NOT NULL,             -- MessagingServiceType code
    target          TEXT NOT NULL,                -- a URL, or an e-mail address
    state           TEXT NOT NULL,                -- pending, delivered, failed
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    lease_until     BIGINT,
    last_error      TEXT,
    updated_at      BIGINT NOT NULL
);
CREATE INDEX deliveries_due ON deliveries (state, next_attempt_at);
CREATE INDEX deliveries_of_notification ON deliveries (notification_id);
