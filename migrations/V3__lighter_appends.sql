-- thoughtbox schema, version 3: fewer pages written per thought.
--
-- A commit writes every page it changed to the WAL, whole. Version 1 made an
-- append change eight: the thought row, four thought indexes, the session
-- row, its updatedAt index and the AUTOINCREMENT counter in sqlite_sequence.
-- This version drops two of them:
--   * `thoughts.id` is a plain INTEGER PRIMARY KEY (new rows still get
--     max(id) + 1, so ids keep the creation order; deleting the newest rows
--     moves the full-text watermark back below the ids they free);
--   * the "newest node on this chain" lookup reads a `tail_node` column on
--     the chain's owner (the session row or the branch row) instead of an
--     index over (session, branch, id).
-- thoughtbox keeps the tails; rows appended by another writer on the same
-- file (an older thoughtbox still running, a person with sqlite3) leave a
-- tail behind, which the next append notices and looks past. A trigger
-- keeps the watermark right for every writer.

-- The node created last on the main chain: the next main-chain thought's prev_node.
ALTER TABLE sessions ADD COLUMN tail_node TEXT;
-- The node created last on this branch: the next branch thought's prev_node.
ALTER TABLE branches ADD COLUMN tail_node TEXT;

UPDATE sessions SET tail_node = (
    SELECT t.node_id FROM thoughts AS t
    WHERE t.session_id = sessions.id AND t.branch_id IS NULL
    ORDER BY t.id DESC LIMIT 1
);
UPDATE branches SET tail_node = (
    SELECT t.node_id FROM thoughts AS t
    WHERE t.session_id = branches.session_id AND t.branch_id = branches.branch_id
    ORDER BY t.id DESC LIMIT 1
);

-- Rebuild `thoughts` without AUTOINCREMENT (same columns, same ids; the
-- full-text index refers to rows by id and stays valid). Views naming the
-- table are dropped first and recreated unchanged.
DROP VIEW thought_view;
DROP VIEW thought_next;
DROP INDEX thoughts_by_chain_order;

CREATE TABLE thoughts_v3 (
    id                  INTEGER PRIMARY KEY,
    session_id          TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    node_id             TEXT NOT NULL UNIQUE,
    branch_id           TEXT,
    thought_number      INTEGER NOT NULL CHECK (thought_number >= 1),
    total_thoughts      INTEGER NOT NULL CHECK (total_thoughts >= 1),
    thought             TEXT NOT NULL CHECK (length(thought) >= 1),
    next_thought_needed INTEGER NOT NULL CHECK (next_thought_needed IN (0, 1)),
    is_revision         INTEGER NOT NULL DEFAULT 0 CHECK (is_revision IN (0, 1)),
    revises_thought     INTEGER,
    branch_from_thought INTEGER,
    needs_more_thoughts INTEGER CHECK (needs_more_thoughts IN (0, 1)),
    include_guide       INTEGER CHECK (include_guide IN (0, 1)),
    prev_node           TEXT,
    revises_node        TEXT,
    branch_origin       TEXT,
    critique            TEXT CHECK (critique IS NULL OR json_valid(critique)),
    created_at          TEXT NOT NULL,
    critique_requested  INTEGER NOT NULL DEFAULT 0 CHECK (critique_requested IN (0, 1))
) STRICT;

INSERT INTO thoughts_v3 (
    id, session_id, node_id, branch_id, thought_number, total_thoughts, thought,
    next_thought_needed, is_revision, revises_thought, branch_from_thought, needs_more_thoughts,
    include_guide, prev_node, revises_node, branch_origin, critique, created_at, critique_requested
)
SELECT
    id, session_id, node_id, branch_id, thought_number, total_thoughts, thought,
    next_thought_needed, is_revision, revises_thought, branch_from_thought, needs_more_thoughts,
    include_guide, prev_node, revises_node, branch_origin, critique, created_at, critique_requested
FROM thoughts;

DROP TABLE thoughts;
ALTER TABLE thoughts_v3 RENAME TO thoughts;
DELETE FROM sqlite_sequence WHERE name = 'thoughts';

-- Version 2 let the watermark stay above the ids of deleted thoughts (they
-- were never handed out again); now they are, so it must not.
UPDATE thoughts_fts_state
SET indexed_through = min(indexed_through, coalesce((SELECT max(id) FROM thoughts), 0))
WHERE id = 1;

-- Ids above the highest remaining one are handed out again, so the
-- full-text watermark must not stay above them (rows deleted from the
-- middle leave it where it is).
CREATE TRIGGER thoughts_watermark AFTER DELETE ON thoughts BEGIN
    UPDATE thoughts_fts_state
    SET indexed_through = coalesce((SELECT max(id) FROM thoughts), 0)
    WHERE id = 1 AND indexed_through > coalesce((SELECT max(id) FROM thoughts), 0);
END;

-- Reads by number and range, "highest number on this chain", duplicate checks.
CREATE INDEX thoughts_by_chain_number ON thoughts (session_id, branch_id, thought_number);
-- `next` pointers, derived from prev_node.
CREATE INDEX thoughts_by_prev ON thoughts (prev_node) WHERE prev_node IS NOT NULL;
CREATE INDEX thoughts_by_revises ON thoughts (revises_node) WHERE revises_node IS NOT NULL;

-- Every thought with its session title, readable flags and chain name.
CREATE VIEW thought_view AS
SELECT
    t.session_id,
    s.title                               AS session_title,
    coalesce(t.branch_id, 'main')         AS chain,
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

-- Each node with its `next` list (JSON array of node ids in creation order).
CREATE VIEW thought_next AS
SELECT
    t.node_id,
    (SELECT json_group_array(n.node_id)
       FROM (SELECT node_id FROM thoughts WHERE prev_node = t.node_id ORDER BY id) AS n) AS next
FROM thoughts AS t;
