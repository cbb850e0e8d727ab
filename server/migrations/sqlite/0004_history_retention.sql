-- History retention and garbage collection of values, and a smaller history.
--
-- Entries get integer ids (the row id): an entry's id is only ever used inside the service (its
-- monitor's latest entry, continuation tokens), and a 36-character text id in the table and in
-- each of its indexes made up half of what an entry cost. The table is rebuilt in time order,
-- and the monitors' and pages' latest entries are mapped to the new ids.
CREATE TABLE entries_new (
    id           INTEGER PRIMARY KEY,
    task_id      TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    page_id      TEXT REFERENCES pages (id) ON DELETE CASCADE,
    checked_at   BIGINT NOT NULL,
    changed_at   BIGINT,
    content_hash BLOB REFERENCES contents (hash),
    error        TEXT,
    old_id       TEXT
);
INSERT INTO entries_new (task_id, page_id, checked_at, changed_at, content_hash, error, old_id)
SELECT task_id, page_id, checked_at, changed_at, content_hash, error, id FROM entries
ORDER BY checked_at, id;
CREATE INDEX entries_by_old_id ON entries_new (old_id);
UPDATE tasks SET latest_entry_id =
    (SELECT CAST(n.id AS TEXT) FROM entries_new n WHERE n.old_id = tasks.latest_entry_id)
WHERE latest_entry_id IS NOT NULL;
UPDATE pages SET latest_entry_id =
    (SELECT CAST(n.id AS TEXT) FROM entries_new n WHERE n.old_id = pages.latest_entry_id)
WHERE latest_entry_id IS NOT NULL;
DROP TABLE entries;
DROP INDEX entries_by_old_id;
ALTER TABLE entries_new DROP COLUMN old_id;
ALTER TABLE entries_new RENAME TO entries;
CREATE INDEX entries_of_task ON entries (task_id, page_id, checked_at, id);
-- A monitor's own entries have no page and stay out of the pages' index (a lookup by page
-- implies a page, so the partial index still serves it and the cascade of a deleted page).
CREATE INDEX entries_of_page ON entries (page_id, checked_at, id) WHERE page_id IS NOT NULL;

-- Each value in `contents` counts the
-- entries that name it (`refs`), and each series (a monitor's own history, a crawled page's)
-- counts its entries (`entry_count`), both kept by triggers so that every way an entry goes
-- (pruning, or the cascade of a deleted monitor or folder) is counted. A value no entry names
-- any more is found through a small partial index and deleted later, in bounded batches.
ALTER TABLE contents ADD COLUMN refs BIGINT NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN entry_count BIGINT NOT NULL DEFAULT 0;
ALTER TABLE pages ADD COLUMN entry_count BIGINT NOT NULL DEFAULT 0;

UPDATE contents SET refs = r.n
FROM (SELECT content_hash, count(*) AS n FROM entries
      WHERE content_hash IS NOT NULL GROUP BY content_hash) AS r
WHERE r.content_hash = contents.hash;
UPDATE tasks SET entry_count =
    (SELECT count(*) FROM entries e WHERE e.task_id = tasks.id AND e.page_id IS NULL);
UPDATE pages SET entry_count = (SELECT count(*) FROM entries e WHERE e.page_id = pages.id);

CREATE INDEX contents_unreferenced ON contents (hash) WHERE refs = 0;

CREATE TRIGGER entries_counted AFTER INSERT ON entries
BEGIN
    UPDATE contents SET refs = refs + 1 WHERE hash = NEW.content_hash;
    UPDATE tasks SET entry_count = entry_count + 1
        WHERE id = NEW.task_id AND NEW.page_id IS NULL;
    UPDATE pages SET entry_count = entry_count + 1 WHERE id = NEW.page_id;
END;

CREATE TRIGGER entries_uncounted AFTER DELETE ON entries
BEGIN
    UPDATE contents SET refs = refs - 1 WHERE hash = OLD.content_hash;
    UPDATE tasks SET entry_count = entry_count - 1
        WHERE id = OLD.task_id AND OLD.page_id IS NULL;
    UPDATE pages SET entry_count = entry_count - 1 WHERE id = OLD.page_id;
END;
