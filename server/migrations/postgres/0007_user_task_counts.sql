-- Each user's monitors counted, kept by the writes that add or remove one (a trigger, in the
-- same transaction; deletes cascading from a folder or the user included), so a creation's
-- quota check reads the owner's row (which it locks anyway) instead of counting the user's
-- monitors on every creation.
ALTER TABLE users ADD COLUMN task_count INTEGER NOT NULL DEFAULT 0;
UPDATE users u SET task_count = c.n
FROM (SELECT user_id, count(*) AS n FROM tasks GROUP BY user_id) c
WHERE c.user_id = u.id;

CREATE FUNCTION tasks_count_users() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        UPDATE users SET task_count = task_count - 1 WHERE id = OLD.user_id;
    ELSE
        UPDATE users SET task_count = task_count + 1 WHERE id = NEW.user_id;
    END IF;
    RETURN NULL;
END;
$$;
CREATE TRIGGER tasks_counted_for_user AFTER INSERT OR DELETE ON tasks
    FOR EACH ROW EXECUTE FUNCTION tasks_count_users();
