-- Whether a monitor's name was given by the service (after its URL, then its page's title) and
-- may still follow the page, or chosen by a person (never renamed).
ALTER TABLE tasks ADD COLUMN name_auto BOOLEAN NOT NULL DEFAULT FALSE;
-- A feed's secret sealed with the service's key (AES-256-GCM, nonce first, base64), so its page
-- can show the feed's address again; the hash stays what a request is looked up by. NULL for a
-- feed made before: its secret cannot be shown, only renewed.
ALTER TABLE feeds ADD COLUMN secret_sealed TEXT;
