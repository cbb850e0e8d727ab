-- E-mail addresses a user asked notifications to go to, other than the account's own: each is
-- confirmed with a code mailed to it before it gets any notification, so the server's sender
-- cannot be pointed at strangers. `mail_due_at` is when the confirmation message is (re)sent
-- (null once sent or given up); `token_hash` is the SHA-256 of the code last mailed.
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

-- Addresses in use before confirmation existed keep getting notifications.
INSERT INTO email_addresses (user_id, address, confirmed_at, requested_at)
SELECT DISTINCT u.id, lower(json_extract(e.value, '$.value')),
       CAST(strftime('%s', 'now') AS BIGINT) * 1000, CAST(strftime('%s', 'now') AS BIGINT) * 1000
FROM users u, json_each(u.notification_endpoints) e
WHERE json_extract(e.value, '$.type') IN ('Email', 0)
  AND json_extract(e.value, '$.value') IS NOT NULL
ON CONFLICT DO NOTHING;
INSERT INTO email_addresses (user_id, address, confirmed_at, requested_at)
SELECT DISTINCT t.user_id, lower(json_extract(e.value, '$.value')),
       CAST(strftime('%s', 'now') AS BIGINT) * 1000, CAST(strftime('%s', 'now') AS BIGINT) * 1000
FROM tasks t, json_each(t.definition, '$.notificationEndpoints') e
WHERE json_extract(e.value, '$.type') IN ('Email', 0)
  AND json_extract(e.value, '$.value') IS NOT NULL
ON CONFLICT DO NOTHING;

-- Deliveries per user are spread so that no hour holds more than the server allows: each is
-- released (`released_at`) no earlier than an hour after the one that many places before it.
ALTER TABLE deliveries ADD COLUMN user_id TEXT;
ALTER TABLE deliveries ADD COLUMN released_at BIGINT;
UPDATE deliveries SET user_id =
    (SELECT n.user_id FROM notifications n WHERE n.id = deliveries.notification_id);
CREATE INDEX deliveries_released ON deliveries (user_id, released_at)
    WHERE released_at IS NOT NULL;
