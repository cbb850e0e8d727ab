-- Each folder's own monitors counted (all, failed, paused), kept by the writes that change them
-- (triggers, in the same transaction), so a listing adds up its subtree's folders instead of
-- counting their monitors on every read.
ALTER TABLE folders ADD COLUMN own_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE folders ADD COLUMN own_failed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE folders ADD COLUMN own_paused INTEGER NOT NULL DEFAULT 0;
UPDATE folders SET
    own_count = (SELECT count(*) FROM tasks t WHERE t.folder_id = folders.id),
    own_failed = (SELECT count(*) FROM tasks t WHERE t.folder_id = folders.id AND t.failed != 0),
    own_paused = (SELECT count(*) FROM tasks t WHERE t.folder_id = folders.id AND t.paused != 0);

CREATE TRIGGER tasks_counted_in AFTER INSERT ON tasks WHEN NEW.folder_id IS NOT NULL
BEGIN
    UPDATE folders SET own_count = own_count + 1, own_failed = own_failed + (NEW.failed != 0),
        own_paused = own_paused + (NEW.paused != 0) WHERE id = NEW.folder_id;
END;
CREATE TRIGGER tasks_counted_out AFTER DELETE ON tasks WHEN OLD.folder_id IS NOT NULL
BEGIN
    UPDATE folders SET own_count = own_count - 1, own_failed = own_failed - (OLD.failed != 0),
        own_paused = own_paused - (OLD.paused != 0) WHERE id = OLD.folder_id;
END;
CREATE TRIGGER tasks_counted_again AFTER UPDATE OF folder_id, failed, paused ON tasks
    WHEN OLD.folder_id IS NOT NEW.folder_id OR OLD.failed != NEW.failed
        OR OLD.paused != NEW.paused
BEGIN
    UPDATE folders SET own_count = own_count - 1, own_failed = own_failed - (OLD.failed != 0),
        own_paused = own_paused - (OLD.paused != 0) WHERE id = OLD.folder_id;
    UPDATE folders SET own_count = own_count + 1, own_failed = own_failed + (NEW.failed != 0),
        own_paused = own_paused + (NEW.paused != 0) WHERE id = NEW.folder_id;
END;
