-- Each folder's own monitors counted (all, failed, paused), kept by the writes that change them
-- (a trigger, in the same transaction), so a listing adds up its subtree's folders instead of
-- counting their monitors on every read. A check writes its folder's row only when the
-- monitor's failed state flips.
ALTER TABLE folders ADD COLUMN own_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE folders ADD COLUMN own_failed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE folders ADD COLUMN own_paused INTEGER NOT NULL DEFAULT 0;
UPDATE folders f SET
    own_count = c.n, own_failed = c.failed, own_paused = c.paused
FROM (SELECT folder_id, count(*) AS n, count(*) FILTER (WHERE failed) AS failed,
             count(*) FILTER (WHERE paused) AS paused
      FROM tasks WHERE folder_id IS NOT NULL GROUP BY folder_id) c
WHERE c.folder_id = f.id;

CREATE FUNCTION tasks_count_folders() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') AND OLD.folder_id IS NOT NULL THEN
        UPDATE folders SET own_count = own_count - 1, own_failed = own_failed - OLD.failed::int,
            own_paused = own_paused - OLD.paused::int WHERE id = OLD.folder_id;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.folder_id IS NOT NULL THEN
        UPDATE folders SET own_count = own_count + 1, own_failed = own_failed + NEW.failed::int,
            own_paused = own_paused + NEW.paused::int WHERE id = NEW.folder_id;
    END IF;
    RETURN NULL;
END;
$$;
CREATE TRIGGER tasks_counted_in AFTER INSERT OR DELETE ON tasks
    FOR EACH ROW EXECUTE FUNCTION tasks_count_folders();
CREATE TRIGGER tasks_counted_again AFTER UPDATE OF folder_id, failed, paused ON tasks
    FOR EACH ROW WHEN (OLD.folder_id IS DISTINCT FROM NEW.folder_id
        OR OLD.failed IS DISTINCT FROM NEW.failed OR OLD.paused IS DISTINCT FROM NEW.paused)
    EXECUTE FUNCTION tasks_count_folders();
