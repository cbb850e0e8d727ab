-- What the alerts of a monitor (and of each crawled page) remember between checks once changes
-- and failures must be confirmed (`wachet::alerts::confirm::ConfirmState` as JSON): the last
-- confirmed value, values waiting for confirmation, failed checks in a row. Written with each
-- check in the same transaction, so a restart between a changed check and its confirmation
-- still confirms. NULL (rows from before, monitors without alerts): read from the history.
ALTER TABLE tasks ADD COLUMN alert_state TEXT;
ALTER TABLE pages ADD COLUMN alert_state TEXT;
