-- What a notification carries for its deliveries beside the API's ClientNotification
-- (`wachet_server::notify::Explanation` as JSON): when what it reports was first seen, the
-- change in key form with noise masked (the webhook's `firstSeen` and `change`), and the content
-- as plain text (the e-mail's alternative part). NULL for notifications from before: their
-- deliveries go without them, as they did.
ALTER TABLE notifications ADD COLUMN explanation TEXT;
