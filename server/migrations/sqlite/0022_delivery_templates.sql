-- The title and body templates and the format of the endpoint a delivery goes to (JSON), as the
-- endpoint had them when the notification was written; NULL: the channel's own message.
ALTER TABLE deliveries ADD COLUMN template TEXT;
