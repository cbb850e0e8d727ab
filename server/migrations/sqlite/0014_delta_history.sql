-- Delta history: a value a newer one replaced may be stored as a zstd frame made with another
-- value of its series as the dictionary (codec 2, `base_hash` names that base, always a whole
-- value). Each series remembers the whole value its older values are stored against
-- (`keyframe_hash`, a hint: it is checked to be whole and present before each use).
ALTER TABLE contents ADD COLUMN base_hash BLOB REFERENCES contents (hash);
-- The deltas of a base: whether it may be collected, and how many it already carries.
CREATE INDEX contents_by_base ON contents (base_hash) WHERE base_hash IS NOT NULL;
ALTER TABLE tasks ADD COLUMN keyframe_hash BLOB;
ALTER TABLE pages ADD COLUMN keyframe_hash BLOB;

-- A value whose body is rewritten (made a delta, or whole again) costs each monitor whose
-- history names it its new size, in the same transaction.
CREATE INDEX task_contents_by_hash ON task_contents (hash);
CREATE TRIGGER contents_resized AFTER UPDATE OF body ON contents
    WHEN length(NEW.body) != length(OLD.body)
BEGIN
    UPDATE tasks SET stored_bytes = stored_bytes + length(NEW.body)
            - (SELECT tc.bytes FROM task_contents tc
               WHERE tc.task_id = tasks.id AND tc.hash = NEW.hash)
        WHERE id IN (SELECT task_id FROM task_contents WHERE hash = NEW.hash AND refs > 0);
    UPDATE task_contents SET bytes = length(NEW.body) WHERE hash = NEW.hash;
END;
