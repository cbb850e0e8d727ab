-- A browser session ends after a time without use as well as at its expiry. The last use is
-- kept on the token (written at most once a minute, so reading a page is rarely a write);
-- tokens used only through the API's header keep NULL and are not touched.
ALTER TABLE tokens ADD COLUMN last_seen_at BIGINT;
