-- Delta history: a value a newer one replaced may be stored as a zstd frame made with another
-- value of its series as the dictionary (codec 2, `base_hash` names that base, always a whole
-- value). Each series remembers the whole value its older values are stored against
-- (`keyframe_hash`, a hint: it is checked to be whole and present before each use). A base is
-- kept while a delta names it (the foreign key, and garbage collection's anti-join); a delta
-- collected makes its base a candidate again.
ALTER TABLE contents ADD COLUMN base_hash BYTEA REFERENCES contents (hash);
CREATE INDEX contents_by_base ON contents (base_hash) WHERE base_hash IS NOT NULL;
ALTER TABLE task_series ADD COLUMN keyframe_hash BYTEA;
ALTER TABLE pages ADD COLUMN keyframe_hash BYTEA;
