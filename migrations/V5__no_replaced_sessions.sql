-- Version 5: two hand edits that lost data or made a session unreadable
-- are refused.

-- INSERT OR REPLACE of a session that exists (an "upsert" written by hand,
-- or a tool's way of saving an edit) first deletes the old row. With foreign
-- keys on, that delete cascades to the session's thoughts, branches and tag
-- rows, and no repair can bring them back. Such an insert is refused before
-- anything is deleted; UPDATE changes a session in place. The server only
-- ever inserts sessions that are new. (`new.seq` is -1 when the insert lets
-- SQLite choose it, which matches no session.)
CREATE TRIGGER sessions_never_replaced BEFORE INSERT ON sessions
WHEN EXISTS (SELECT 1 FROM sessions WHERE id = new.id)
  OR EXISTS (SELECT 1 FROM sessions WHERE seq = new.seq)
BEGIN
    SELECT RAISE(ABORT, 'a session with this id or seq exists: change it with UPDATE (INSERT OR REPLACE would delete it, and with foreign keys on its thoughts with it)');
END;

-- Thought numbers are whole numbers from 1 to 2^31 - 1 (what the server
-- accepts); one outside that range made every read of its session fail.
-- `thought_number` cannot change at all (thoughts_ids_fixed).
CREATE TRIGGER thoughts_numbers_in_range
BEFORE UPDATE OF total_thoughts, revises_thought, branch_from_thought ON thoughts
WHEN new.total_thoughts NOT BETWEEN 1 AND 2147483647
  OR coalesce(new.revises_thought NOT BETWEEN 1 AND 2147483647, 0)
  OR coalesce(new.branch_from_thought NOT BETWEEN 1 AND 2147483647, 0)
BEGIN
    SELECT RAISE(ABORT, 'total_thoughts, revises_thought and branch_from_thought are whole numbers from 1 to 2147483647 (the last two may be NULL)');
END;
