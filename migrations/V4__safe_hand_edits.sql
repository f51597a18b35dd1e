-- thoughtbox schema, version 4: the ledger stays consistent when a person
-- edits it with sqlite3 (or a database browser).
--
-- Before this version the server kept the derived data itself (search index
-- entries, session counters and chain tails, tag rows), so an edit made
-- outside it left them wrong: a deleted or rewritten thought stayed in the
-- search index (its id was then reused and searches matched the wrong text,
-- or failed as "database disk image is malformed"), deleting the newest
-- thought made the next one link to itself, and deleting a session with the
-- sqlite3 shell (where foreign keys are off by default) left its thoughts
-- behind. Triggers now keep all of it right for every writer:
--   * a thought a revision or a branch refers to cannot be deleted on its
--     own; deleting a thought removes it from the search index, links the
--     thoughts after it to the one before it, fixes its session's count and
--     chain tail, and removes a branch left empty (a branch row cannot be
--     deleted while thoughts are on it);
--   * changing a thought's text re-indexes it, and a thought put back by
--     hand under an id the index has passed is indexed at once;
--   * deleting a session or a pattern removes its rows, foreign keys on or off;
--   * `session_tags` and `knowledge_pattern_tags` follow the `tags` JSON of
--     their owner (edit `tags`; the tag rows are derived);
--   * ids that other rows and the indexes refer to cannot be changed.
-- Not covered: `INSERT OR REPLACE` / `REPLACE INTO` removes the old row
-- without running delete triggers (SQLite's recursive_triggers is off), and
-- a thought inserted by hand is not counted in its session's thought_count;
-- `thoughtbox repair` recomputes both.

-- Deleting a thought. One trigger for all of it, in this order: the search
-- index entry must be removed before the watermark moves below its id.
DROP TRIGGER thoughts_watermark;

-- A thought that a revision revises, or that a branch forks from, is part
-- of what those mean: it goes only with them (or with its whole session).
CREATE TRIGGER thoughts_kept_while_referred BEFORE DELETE ON thoughts
WHEN EXISTS (SELECT 1 FROM sessions WHERE id = old.session_id)
 AND (EXISTS (SELECT 1 FROM thoughts WHERE revises_node = old.node_id)
      OR EXISTS (SELECT 1 FROM branches WHERE session_id = old.session_id AND origin_node = old.node_id))
BEGIN
    SELECT RAISE(ABORT, 'a revision revises this thought or a branch forks from it: delete those first, or the whole session');
END;

CREATE TRIGGER thoughts_deleted AFTER DELETE ON thoughts BEGIN
    -- A thought already indexed leaves the index with the text it was indexed with.
    INSERT INTO thoughts_fts (thoughts_fts, rowid, thought)
    SELECT 'delete', old.id, old.thought
    WHERE old.id <= (SELECT indexed_through FROM thoughts_fts_state WHERE id = 1);
    -- Ids above the highest remaining one are handed out again: the
    -- watermark must not stay above them.
    UPDATE thoughts_fts_state
    SET indexed_through = coalesce((SELECT max(id) FROM thoughts), 0)
    WHERE id = 1 AND indexed_through > coalesce((SELECT max(id) FROM thoughts), 0);
    -- Thoughts that followed the deleted one now follow what it followed:
    -- the chain skips it rather than naming a node that is gone (not while
    -- its whole session goes).
    UPDATE thoughts SET prev_node = old.prev_node
    WHERE prev_node = old.node_id
      AND EXISTS (SELECT 1 FROM sessions WHERE id = old.session_id);
    -- The session's count, and its main-chain tail when that was this thought.
    UPDATE sessions
    SET thought_count = max(thought_count - 1, 0),
        tail_node = CASE
            WHEN tail_node = old.node_id THEN (
                SELECT t.node_id FROM thoughts AS t
                WHERE t.session_id = old.session_id AND t.branch_id IS NULL
                ORDER BY t.id DESC LIMIT 1)
            ELSE tail_node
        END
    WHERE id = old.session_id;
    -- The branch's tail; a branch without thoughts is no branch.
    UPDATE branches
    SET tail_node = (
        SELECT t.node_id FROM thoughts AS t
        WHERE t.session_id = old.session_id AND t.branch_id = old.branch_id
        ORDER BY t.id DESC LIMIT 1)
    WHERE old.branch_id IS NOT NULL
      AND session_id = old.session_id AND branch_id = old.branch_id AND tail_node = old.node_id;
    DELETE FROM branches
    WHERE old.branch_id IS NOT NULL
      AND session_id = old.session_id AND branch_id = old.branch_id
      AND NOT EXISTS (
          SELECT 1 FROM thoughts AS t WHERE t.session_id = old.session_id AND t.branch_id = old.branch_id);
END;

-- A branch row goes with the branch's last thought; deleted on its own it
-- would leave thoughts on a branch that no longer exists.
CREATE TRIGGER branches_kept_while_used BEFORE DELETE ON branches
WHEN EXISTS (SELECT 1 FROM sessions WHERE id = old.session_id)
 AND EXISTS (SELECT 1 FROM thoughts WHERE session_id = old.session_id AND branch_id = old.branch_id)
BEGIN
    SELECT RAISE(ABORT, 'a branch row goes with its last thought: delete the branch''s thoughts instead');
END;

CREATE TRIGGER branches_deleted AFTER DELETE ON branches BEGIN
    UPDATE sessions SET branch_count = max(branch_count - 1, 0) WHERE id = old.session_id;
END;

-- A thought's text changed (a typo fixed, a secret redacted): searches see
-- the new text, not the old.
CREATE TRIGGER thoughts_text_changed AFTER UPDATE OF thought ON thoughts
WHEN old.id <= (SELECT indexed_through FROM thoughts_fts_state WHERE id = 1)
BEGIN
    INSERT INTO thoughts_fts (thoughts_fts, rowid, thought) VALUES ('delete', old.id, old.thought);
    INSERT INTO thoughts_fts (rowid, thought) VALUES (new.id, new.thought);
END;

-- A thought inserted by hand with an id at or below the watermark (one put
-- back from a backup after it was deleted) would never be indexed, and
-- deleting it later would remove from the index an entry it never had.
CREATE TRIGGER thoughts_inserted_behind_watermark AFTER INSERT ON thoughts
WHEN new.id <= (SELECT indexed_through FROM thoughts_fts_state WHERE id = 1)
BEGIN
    INSERT INTO thoughts_fts (rowid, thought) VALUES (new.id, new.thought);
END;

-- The ids other rows and the indexes refer to, and what a node id is made of.
CREATE TRIGGER thoughts_ids_fixed
BEFORE UPDATE OF id, node_id, session_id, branch_id, thought_number ON thoughts
WHEN new.id IS NOT old.id OR new.node_id IS NOT old.node_id OR new.session_id IS NOT old.session_id
  OR new.branch_id IS NOT old.branch_id OR new.thought_number IS NOT old.thought_number
BEGIN
    SELECT RAISE(ABORT, 'a thought''s id, node_id, session_id, branch_id and thought_number cannot change: links, node ids and the search index refer to them');
END;

CREATE TRIGGER sessions_ids_fixed BEFORE UPDATE OF id, seq ON sessions
WHEN new.id IS NOT old.id OR new.seq IS NOT old.seq
BEGIN
    SELECT RAISE(ABORT, 'a session''s id and seq cannot change: its thoughts and the search index refer to them');
END;

CREATE TRIGGER branches_ids_fixed
BEFORE UPDATE OF session_id, branch_id, from_thought, origin_node ON branches
WHEN new.session_id IS NOT old.session_id OR new.branch_id IS NOT old.branch_id
  OR new.from_thought IS NOT old.from_thought OR new.origin_node IS NOT old.origin_node
BEGIN
    SELECT RAISE(ABORT, 'a branch''s session_id, branch_id, from_thought and origin_node cannot change: its thoughts and node ids refer to them');
END;

CREATE TRIGGER knowledge_patterns_ids_fixed BEFORE UPDATE OF id, seq ON knowledge_patterns
WHEN new.id IS NOT old.id OR new.seq IS NOT old.seq
BEGIN
    SELECT RAISE(ABORT, 'a pattern''s id and seq cannot change: its tags and the search index refer to them');
END;

-- Deleting a session or a pattern takes its rows with it, foreign keys on
-- or off (the sqlite3 shell starts with them off). With them on, the
-- cascade has done it already and these find nothing.
CREATE TRIGGER sessions_deleted AFTER DELETE ON sessions BEGIN
    DELETE FROM thoughts WHERE session_id = old.id;
    DELETE FROM branches WHERE session_id = old.id;
    DELETE FROM session_tags WHERE session_id = old.id;
END;

CREATE TRIGGER knowledge_patterns_deleted AFTER DELETE ON knowledge_patterns BEGIN
    DELETE FROM knowledge_pattern_tags WHERE pattern_id = old.id;
END;

-- Tag rows, rebuilt from the `tags` JSON they derive from (which also
-- mends any that an edit made before this version left different), with
-- the primary key's columns first: SQLite 3.40's `PRAGMA quick_check`
-- (Debian 12's sqlite3) reports NULLs that are not there in a WITHOUT
-- ROWID table whose key lists its columns in another order. ON CONFLICT
-- IGNORE: an older thoughtbox still running on the file inserts the tag
-- rows itself, after the trigger has.
DROP INDEX session_tags_by_session;
DROP TABLE session_tags;
CREATE TABLE session_tags (
    tag        TEXT NOT NULL,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    PRIMARY KEY (tag, session_id) ON CONFLICT IGNORE
) STRICT, WITHOUT ROWID;
CREATE INDEX session_tags_by_session ON session_tags (session_id);
INSERT OR IGNORE INTO session_tags (tag, session_id)
SELECT j.value, s.id FROM sessions AS s, json_each(s.tags) AS j WHERE j.type = 'text';

DROP INDEX knowledge_pattern_tags_by_pattern;
DROP TABLE knowledge_pattern_tags;
CREATE TABLE knowledge_pattern_tags (
    tag        TEXT NOT NULL,
    pattern_id TEXT NOT NULL REFERENCES knowledge_patterns (id) ON DELETE CASCADE,
    PRIMARY KEY (tag, pattern_id) ON CONFLICT IGNORE
) STRICT, WITHOUT ROWID;
CREATE INDEX knowledge_pattern_tags_by_pattern ON knowledge_pattern_tags (pattern_id);
INSERT OR IGNORE INTO knowledge_pattern_tags (tag, pattern_id)
SELECT j.value, p.id FROM knowledge_patterns AS p, json_each(p.tags) AS j WHERE j.type = 'text';

-- `tags` must hold strings only: the tag rows and every reader expect them.
CREATE TRIGGER sessions_tags_checked_insert BEFORE INSERT ON sessions
WHEN json_valid(new.tags) AND EXISTS (SELECT 1 FROM json_each(new.tags) WHERE type <> 'text')
BEGIN
    SELECT RAISE(ABORT, 'sessions.tags must be a JSON array of strings');
END;
CREATE TRIGGER sessions_tags_checked_update BEFORE UPDATE OF tags ON sessions
WHEN json_valid(new.tags) AND EXISTS (SELECT 1 FROM json_each(new.tags) WHERE type <> 'text')
BEGIN
    SELECT RAISE(ABORT, 'sessions.tags must be a JSON array of strings');
END;
CREATE TRIGGER sessions_tags_insert AFTER INSERT ON sessions BEGIN
    INSERT OR IGNORE INTO session_tags (tag, session_id) SELECT value, new.id FROM json_each(new.tags);
END;
CREATE TRIGGER sessions_tags_update AFTER UPDATE OF tags ON sessions BEGIN
    DELETE FROM session_tags WHERE session_id = new.id;
    INSERT OR IGNORE INTO session_tags (tag, session_id) SELECT value, new.id FROM json_each(new.tags);
END;

CREATE TRIGGER knowledge_patterns_tags_checked_insert BEFORE INSERT ON knowledge_patterns
WHEN json_valid(new.tags) AND EXISTS (SELECT 1 FROM json_each(new.tags) WHERE type <> 'text')
BEGIN
    SELECT RAISE(ABORT, 'knowledge_patterns.tags must be a JSON array of strings');
END;
CREATE TRIGGER knowledge_patterns_tags_checked_update BEFORE UPDATE OF tags ON knowledge_patterns
WHEN json_valid(new.tags) AND EXISTS (SELECT 1 FROM json_each(new.tags) WHERE type <> 'text')
BEGIN
    SELECT RAISE(ABORT, 'knowledge_patterns.tags must be a JSON array of strings');
END;
CREATE TRIGGER knowledge_patterns_tags_insert AFTER INSERT ON knowledge_patterns BEGIN
    INSERT OR IGNORE INTO knowledge_pattern_tags (tag, pattern_id) SELECT value, new.id FROM json_each(new.tags);
END;
CREATE TRIGGER knowledge_patterns_tags_update AFTER UPDATE OF tags ON knowledge_patterns BEGIN
    DELETE FROM knowledge_pattern_tags WHERE pattern_id = new.id;
    INSERT OR IGNORE INTO knowledge_pattern_tags (tag, pattern_id) SELECT value, new.id FROM json_each(new.tags);
END;

-- `chain` named a branch called "main" the way it names the main chain.
-- Branch ids cannot hold a colon, so "branch:<id>" is never "main".
DROP VIEW thought_view;
CREATE VIEW thought_view AS
SELECT
    t.session_id,
    s.title                                           AS session_title,
    coalesce('branch:' || t.branch_id, 'main')        AS chain,
    t.branch_id,
    t.thought_number,
    t.total_thoughts,
    t.thought,
    t.is_revision,
    t.revises_thought,
    t.branch_from_thought,
    t.next_thought_needed,
    t.node_id,
    t.prev_node,
    t.created_at
FROM thoughts AS t
JOIN sessions AS s ON s.id = t.session_id;
