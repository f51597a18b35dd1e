-- thoughtbox schema, version 1.
--
-- The database file is the whole ledger. Tables are STRICT so that what a
-- person reads with sqlite3 is what the server wrote. Timestamps are ISO 8601
-- UTC strings with millisecond precision ("2026-11-22T01:12:02.123Z"), which
-- sort correctly as text. Booleans are 0/1 integers.

-- Installation-wide settings (the Config model of the specification).
CREATE TABLE config (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) STRICT, WITHOUT ROWID;

-- One row per reasoning session. `seq` is a stable integer key used by the
-- full-text index; `id` is the public UUID.
CREATE TABLE sessions (
    seq              INTEGER PRIMARY KEY,
    id               TEXT NOT NULL UNIQUE,
    title            TEXT NOT NULL CHECK (length(title) BETWEEN 1 AND 200),
    description      TEXT,
    tags             TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(tags) AND json_type(tags) = 'array'),
    domain           TEXT,
    thought_count    INTEGER NOT NULL DEFAULT 0 CHECK (thought_count >= 0),
    branch_count     INTEGER NOT NULL DEFAULT 0 CHECK (branch_count >= 0),
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL,
    last_accessed_at TEXT NOT NULL,
    completed_at     TEXT
) STRICT;

CREATE INDEX sessions_by_updated ON sessions (updated_at);
CREATE INDEX sessions_by_created ON sessions (created_at);
CREATE INDEX sessions_by_title   ON sessions (title COLLATE NOCASE);

-- Tags again, one row each, so that "has all of these tags" is an index lookup.
CREATE TABLE session_tags (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    tag        TEXT NOT NULL,
    PRIMARY KEY (tag, session_id)
) STRICT, WITHOUT ROWID;

CREATE INDEX session_tags_by_session ON session_tags (session_id);

-- Branches: one row per (session, branch id), created with the branch's first thought.
CREATE TABLE branches (
    session_id    TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    branch_id     TEXT NOT NULL CHECK (branch_id GLOB '[a-z0-9-]*' AND length(branch_id) BETWEEN 1 AND 64
                                       AND branch_id NOT GLOB '*[^a-z0-9-]*'),
    from_thought  INTEGER NOT NULL CHECK (from_thought >= 1),
    origin_node   TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    PRIMARY KEY (session_id, branch_id)
) STRICT, WITHOUT ROWID;

-- The ledger. Rows are appended and never rewritten (only a session delete
-- removes them). The linked-node structure lives in adjacency columns that
-- hold node ids: main chain "{sessionId}:{n}", branch "{sessionId}:{branchId}:{n}".
--   prev_node     the node created just before this one on the same chain
--                 (for a branch's first thought: its fork point)
--   revises_node  the node this thought revises
--   branch_origin the main-chain node a branch thought forks from
-- `next` is not stored: it is every node whose prev_node is this node, in id
-- order (see the thought_next view).
CREATE TABLE thoughts (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
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
    created_at          TEXT NOT NULL
) STRICT;

-- Reads by number and range, and "highest number on this chain".
CREATE INDEX thoughts_by_chain_number ON thoughts (session_id, branch_id, thought_number);
-- "Last node created on this chain" (the next thought's prev_node).
CREATE INDEX thoughts_by_chain_order ON thoughts (session_id, branch_id, id);
-- `next` pointers, derived from prev_node.
CREATE INDEX thoughts_by_prev ON thoughts (prev_node) WHERE prev_node IS NOT NULL;
CREATE INDEX thoughts_by_revises ON thoughts (revises_node) WHERE revises_node IS NOT NULL;

-- Full-text search. Thought text is indexed by the server in small batches
-- right after commits (and always before a search runs), so the append path
-- does not pay for index merges. `thoughts_fts_state` records how far it got.
CREATE VIRTUAL TABLE thoughts_fts USING fts5 (
    thought,
    content = 'thoughts',
    content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 2'
);

CREATE TABLE thoughts_fts_state (
    id               INTEGER PRIMARY KEY CHECK (id = 1),
    indexed_through  INTEGER NOT NULL
) STRICT;
INSERT INTO thoughts_fts_state (id, indexed_through) VALUES (1, 0);

-- Session titles, descriptions and tags, kept in sync by triggers.
CREATE VIRTUAL TABLE sessions_fts USING fts5 (
    title,
    description,
    tags,
    content = 'sessions',
    content_rowid = 'seq',
    tokenize = 'unicode61 remove_diacritics 2'
);

CREATE TRIGGER sessions_fts_insert AFTER INSERT ON sessions BEGIN
    INSERT INTO sessions_fts (rowid, title, description, tags)
    VALUES (new.seq, new.title, new.description, new.tags);
END;

CREATE TRIGGER sessions_fts_delete AFTER DELETE ON sessions BEGIN
    INSERT INTO sessions_fts (sessions_fts, rowid, title, description, tags)
    VALUES ('delete', old.seq, old.title, old.description, old.tags);
END;

CREATE TRIGGER sessions_fts_update AFTER UPDATE OF title, description, tags ON sessions BEGIN
    INSERT INTO sessions_fts (sessions_fts, rowid, title, description, tags)
    VALUES ('delete', old.seq, old.title, old.description, old.tags);
    INSERT INTO sessions_fts (rowid, title, description, tags)
    VALUES (new.seq, new.title, new.description, new.tags);
END;

-- Views for people using sqlite3.

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

-- Sessions with their tags as a comma-separated list and a status word.
CREATE VIEW session_view AS
SELECT
    s.id,
    s.title,
    s.description,
    (SELECT group_concat(value, ', ') FROM json_each(s.tags)) AS tags,
    s.thought_count,
    s.branch_count,
    CASE WHEN s.completed_at IS NULL THEN 'active' ELSE 'completed' END AS status,
    s.created_at,
    s.updated_at,
    s.completed_at
FROM sessions AS s;
