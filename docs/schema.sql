-- The schema the migrations build, as `SELECT sql FROM sqlite_schema` gives it.
-- Generated: UPDATE_DOCS=1 cargo test --test it schema_doc

-- table branches
CREATE TABLE branches (
    session_id    TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    branch_id     TEXT NOT NULL CHECK (branch_id GLOB '[a-z0-9-]*' AND length(branch_id) BETWEEN 1 AND 64
                                       AND branch_id NOT GLOB '*[^a-z0-9-]*'),
    from_thought  INTEGER NOT NULL CHECK (from_thought >= 1),
    origin_node   TEXT NOT NULL,
    created_at    TEXT NOT NULL, tail_node TEXT,
    PRIMARY KEY (session_id, branch_id)
) STRICT, WITHOUT ROWID;

-- table config
CREATE TABLE config (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) STRICT, WITHOUT ROWID;

-- table knowledge_pattern_tags
CREATE TABLE knowledge_pattern_tags (
    tag        TEXT NOT NULL,
    pattern_id TEXT NOT NULL REFERENCES knowledge_patterns (id) ON DELETE CASCADE,
    PRIMARY KEY (tag, pattern_id) ON CONFLICT IGNORE
) STRICT, WITHOUT ROWID;

-- table knowledge_patterns
CREATE TABLE knowledge_patterns (
    seq                   INTEGER PRIMARY KEY,
    id                    TEXT NOT NULL UNIQUE CHECK (length(id) BETWEEN 1 AND 80 AND id NOT GLOB '*[^a-z0-9-]*'),
    title                 TEXT NOT NULL CHECK (length(title) BETWEEN 1 AND 200),
    description           TEXT NOT NULL CHECK (length(description) >= 1),
    tags                  TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(tags) AND json_type(tags) = 'array'),
    content               TEXT NOT NULL CHECK (length(content) >= 1),
    derived_from_sessions TEXT NOT NULL DEFAULT '[]'
                          CHECK (json_valid(derived_from_sessions) AND json_type(derived_from_sessions) = 'array'),
    created_by            TEXT,
    created_at            TEXT NOT NULL,
    updated_at            TEXT NOT NULL
) STRICT;

-- table knowledge_patterns_fts
CREATE VIRTUAL TABLE knowledge_patterns_fts USING fts5 (
    title,
    description,
    tags,
    content,
    content = 'knowledge_patterns',
    content_rowid = 'seq',
    tokenize = 'unicode61 remove_diacritics 2'
);

-- table knowledge_patterns_fts_config
CREATE TABLE 'knowledge_patterns_fts_config'(k PRIMARY KEY, v) WITHOUT ROWID;

-- table knowledge_patterns_fts_data
CREATE TABLE 'knowledge_patterns_fts_data'(id INTEGER PRIMARY KEY, block BLOB);

-- table knowledge_patterns_fts_docsize
CREATE TABLE 'knowledge_patterns_fts_docsize'(id INTEGER PRIMARY KEY, sz BLOB);

-- table knowledge_patterns_fts_idx
CREATE TABLE 'knowledge_patterns_fts_idx'(segid, term, pgno, PRIMARY KEY(segid, term)) WITHOUT ROWID;

-- table notebook_cells
CREATE TABLE notebook_cells (
    seq         INTEGER PRIMARY KEY,
    id          TEXT NOT NULL UNIQUE,
    notebook_id TEXT NOT NULL REFERENCES notebooks (id) ON DELETE CASCADE,
    position    INTEGER NOT NULL,
    type        TEXT NOT NULL CHECK (type IN ('title', 'markdown', 'package.json', 'code')),
    content     TEXT NOT NULL,
    filename    TEXT CHECK ((type IN ('code', 'package.json')) = (filename IS NOT NULL)),
    language    TEXT CHECK (language IS NULL OR language IN ('javascript', 'typescript')),
    status      TEXT CHECK ((type IN ('code', 'package.json')) = (status IS NOT NULL)
                            AND (status IS NULL OR status IN ('idle', 'running', 'completed', 'failed'))),
    output      TEXT,
    error       TEXT,
    runner      TEXT
) STRICT;

-- table notebook_cells_fts
CREATE VIRTUAL TABLE notebook_cells_fts USING fts5 (
    content,
    output,
    error,
    content = 'notebook_cells',
    content_rowid = 'seq',
    tokenize = 'unicode61 remove_diacritics 2'
);

-- table notebook_cells_fts_config
CREATE TABLE 'notebook_cells_fts_config'(k PRIMARY KEY, v) WITHOUT ROWID;

-- table notebook_cells_fts_data
CREATE TABLE 'notebook_cells_fts_data'(id INTEGER PRIMARY KEY, block BLOB);

-- table notebook_cells_fts_docsize
CREATE TABLE 'notebook_cells_fts_docsize'(id INTEGER PRIMARY KEY, sz BLOB);

-- table notebook_cells_fts_idx
CREATE TABLE 'notebook_cells_fts_idx'(segid, term, pgno, PRIMARY KEY(segid, term)) WITHOUT ROWID;

-- table notebook_runs
CREATE TABLE notebook_runs (
    seq         INTEGER PRIMARY KEY,
    notebook_id TEXT NOT NULL REFERENCES notebooks (id) ON DELETE CASCADE,
    cell_id     TEXT NOT NULL REFERENCES notebook_cells (id) ON DELETE CASCADE,
    kind        TEXT NOT NULL CHECK (kind IN ('run', 'install')),
    started_at  TEXT NOT NULL,
    duration_ms INTEGER,
    exit_code   INTEGER,
    status      TEXT NOT NULL CHECK (status IN ('running', 'completed', 'failed')),
    output      TEXT,
    error       TEXT
) STRICT;

-- table notebooks
CREATE TABLE notebooks (
    seq        INTEGER PRIMARY KEY,
    id         TEXT NOT NULL UNIQUE,
    name       TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    language   TEXT NOT NULL CHECK (language IN ('javascript', 'typescript')),
    -- The notebook's tsconfig.json (JSON text), for TypeScript notebooks.
    tsconfig   TEXT CHECK (tsconfig IS NULL OR json_valid(tsconfig)),
    -- The session it was created in; kept when the session is deleted.
    session_id TEXT REFERENCES sessions (id) ON DELETE SET NULL,
    -- 1: its cells may start other processes (opted in at creation).
    allow_child_process INTEGER NOT NULL DEFAULT 0 CHECK (allow_child_process IN (0, 1)),
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT;

-- table refinery_schema_history
CREATE TABLE refinery_schema_history(
             version int4 PRIMARY KEY,
             name VARCHAR(255),
             applied_on VARCHAR(255),
             checksum VARCHAR(255));

-- table scratchpad_notes
CREATE TABLE scratchpad_notes (
    seq        INTEGER PRIMARY KEY,
    id         TEXT NOT NULL UNIQUE CHECK (length(id) BETWEEN 1 AND 80 AND id NOT GLOB '*[^a-z0-9-]*'),
    title      TEXT NOT NULL CHECK (length(title) BETWEEN 1 AND 200),
    content    TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
) STRICT;

-- table scratchpad_notes_fts
CREATE VIRTUAL TABLE scratchpad_notes_fts USING fts5 (
    title,
    content,
    content = 'scratchpad_notes',
    content_rowid = 'seq',
    tokenize = 'unicode61 remove_diacritics 2'
);

-- table scratchpad_notes_fts_config
CREATE TABLE 'scratchpad_notes_fts_config'(k PRIMARY KEY, v) WITHOUT ROWID;

-- table scratchpad_notes_fts_data
CREATE TABLE 'scratchpad_notes_fts_data'(id INTEGER PRIMARY KEY, block BLOB);

-- table scratchpad_notes_fts_docsize
CREATE TABLE 'scratchpad_notes_fts_docsize'(id INTEGER PRIMARY KEY, sz BLOB);

-- table scratchpad_notes_fts_idx
CREATE TABLE 'scratchpad_notes_fts_idx'(segid, term, pgno, PRIMARY KEY(segid, term)) WITHOUT ROWID;

-- table session_tags
CREATE TABLE session_tags (
    tag        TEXT NOT NULL,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    PRIMARY KEY (tag, session_id) ON CONFLICT IGNORE
) STRICT, WITHOUT ROWID;

-- table sessions
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
, tail_node TEXT, stage INTEGER NOT NULL DEFAULT 1 CHECK (stage BETWEEN 0 AND 3), objective TEXT, status TEXT NOT NULL DEFAULT 'active'
    CHECK (status IN ('active', 'frozen', 'archived')), parent_id TEXT REFERENCES sessions (id) ON DELETE SET NULL) STRICT;

-- table sessions_fts
CREATE VIRTUAL TABLE sessions_fts USING fts5 (
    title,
    description,
    tags,
    content = 'sessions',
    content_rowid = 'seq',
    tokenize = 'unicode61 remove_diacritics 2'
);

-- table sessions_fts_config
CREATE TABLE 'sessions_fts_config'(k PRIMARY KEY, v) WITHOUT ROWID;

-- table sessions_fts_data
CREATE TABLE 'sessions_fts_data'(id INTEGER PRIMARY KEY, block BLOB);

-- table sessions_fts_docsize
CREATE TABLE 'sessions_fts_docsize'(id INTEGER PRIMARY KEY, sz BLOB);

-- table sessions_fts_idx
CREATE TABLE 'sessions_fts_idx'(segid, term, pgno, PRIMARY KEY(segid, term)) WITHOUT ROWID;

-- table sqlite_sequence
CREATE TABLE sqlite_sequence(name,seq);

-- table thoughts
CREATE TABLE "thoughts" (
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

-- table thoughts_fts
CREATE VIRTUAL TABLE thoughts_fts USING fts5 (
    thought,
    content = 'thoughts',
    content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 2'
);

-- table thoughts_fts_config
CREATE TABLE 'thoughts_fts_config'(k PRIMARY KEY, v) WITHOUT ROWID;

-- table thoughts_fts_data
CREATE TABLE 'thoughts_fts_data'(id INTEGER PRIMARY KEY, block BLOB);

-- table thoughts_fts_docsize
CREATE TABLE 'thoughts_fts_docsize'(id INTEGER PRIMARY KEY, sz BLOB);

-- table thoughts_fts_idx
CREATE TABLE 'thoughts_fts_idx'(segid, term, pgno, PRIMARY KEY(segid, term)) WITHOUT ROWID;

-- table thoughts_fts_state
CREATE TABLE thoughts_fts_state (
    id               INTEGER PRIMARY KEY CHECK (id = 1),
    indexed_through  INTEGER NOT NULL
) STRICT;

-- table thread_dependencies
CREATE TABLE thread_dependencies (
    from_id    TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    to_id      TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    created_at TEXT NOT NULL,
    PRIMARY KEY (from_id, to_id),
    CHECK (from_id <> to_id)
) STRICT, WITHOUT ROWID;

-- table thread_operations
CREATE TABLE thread_operations (
    seq       INTEGER PRIMARY KEY AUTOINCREMENT,
    id        TEXT NOT NULL UNIQUE,
    timestamp TEXT NOT NULL,
    command   TEXT NOT NULL CHECK (command IN ('spawn', 'reference', 'depend', 'freeze', 'archive', 'update')),
    operator  TEXT NOT NULL CHECK (operator IN ('user', 'system', 'agent')),
    params    TEXT NOT NULL CHECK (json_valid(params) AND json_type(params) = 'object')
) STRICT;

-- table thread_references
CREATE TABLE thread_references (
    from_id    TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    to_id      TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    asset_path TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    PRIMARY KEY (from_id, to_id, asset_path),
    CHECK (from_id <> to_id)
) STRICT, WITHOUT ROWID;

-- index knowledge_pattern_tags_by_pattern
CREATE INDEX knowledge_pattern_tags_by_pattern ON knowledge_pattern_tags (pattern_id);

-- index knowledge_patterns_by_created
CREATE INDEX knowledge_patterns_by_created ON knowledge_patterns (created_at);

-- index knowledge_patterns_by_title
CREATE INDEX knowledge_patterns_by_title   ON knowledge_patterns (title COLLATE NOCASE);

-- index knowledge_patterns_by_updated
CREATE INDEX knowledge_patterns_by_updated ON knowledge_patterns (updated_at);

-- index notebook_cells_by_notebook
CREATE INDEX notebook_cells_by_notebook ON notebook_cells (notebook_id, position);

-- index notebook_cells_running
CREATE INDEX notebook_cells_running ON notebook_cells (status) WHERE status = 'running';

-- index notebook_runs_by_cell
CREATE INDEX notebook_runs_by_cell ON notebook_runs (cell_id, seq);

-- index notebook_runs_by_notebook
CREATE INDEX notebook_runs_by_notebook ON notebook_runs (notebook_id);

-- index notebooks_by_session
CREATE INDEX notebooks_by_session ON notebooks (session_id);

-- index notebooks_by_updated
CREATE INDEX notebooks_by_updated ON notebooks (updated_at);

-- index scratchpad_notes_by_updated
CREATE INDEX scratchpad_notes_by_updated ON scratchpad_notes (updated_at);

-- index session_tags_by_session
CREATE INDEX session_tags_by_session ON session_tags (session_id);

-- index sessions_by_created
CREATE INDEX sessions_by_created ON sessions (created_at);

-- index sessions_by_parent
CREATE INDEX sessions_by_parent ON sessions (parent_id) WHERE parent_id IS NOT NULL;

-- index sessions_by_status
CREATE INDEX sessions_by_status ON sessions (status) WHERE status <> 'active';

-- index sessions_by_title
CREATE INDEX sessions_by_title   ON sessions (title COLLATE NOCASE);

-- index sessions_by_updated
CREATE INDEX sessions_by_updated ON sessions (updated_at);

-- index sessions_completed
CREATE INDEX sessions_completed ON sessions (updated_at) WHERE completed_at IS NOT NULL;

-- index thoughts_by_chain_number
CREATE INDEX thoughts_by_chain_number ON thoughts (session_id, branch_id, thought_number);

-- index thoughts_by_prev
CREATE INDEX thoughts_by_prev ON thoughts (prev_node, branch_id) WHERE prev_node IS NOT NULL;

-- index thoughts_by_revises
CREATE INDEX thoughts_by_revises ON thoughts (revises_node) WHERE revises_node IS NOT NULL;

-- index thoughts_revising
CREATE INDEX thoughts_revising ON thoughts (session_id, id) WHERE revises_thought IS NOT NULL;

-- index thread_dependencies_by_target
CREATE INDEX thread_dependencies_by_target ON thread_dependencies (to_id);

-- index thread_operations_by_time
CREATE INDEX thread_operations_by_time ON thread_operations (timestamp);

-- index thread_references_by_target
CREATE INDEX thread_references_by_target ON thread_references (to_id);

-- view note_view
CREATE VIEW note_view AS
SELECT id, title, length(content) AS content_chars, created_at, updated_at
FROM scratchpad_notes;

-- view pattern_view
CREATE VIEW pattern_view AS
SELECT
    p.id,
    p.title,
    p.description,
    (SELECT group_concat(value, ', ') FROM json_each(p.tags)) AS tags,
    json_array_length(p.derived_from_sessions)                AS source_sessions,
    p.created_by,
    length(p.content)                                          AS content_chars,
    p.created_at,
    p.updated_at
FROM knowledge_patterns AS p;

-- view session_view
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
    s.completed_at,
    (SELECT substr(value, 9) FROM json_each(s.tags)
      WHERE substr(value, 1, 8) = 'project:' ORDER BY key LIMIT 1) AS project
FROM sessions AS s;

-- view thought_latest_view
CREATE VIEW thought_latest_view AS
SELECT
    t.session_id,
    s.title                                           AS session_title,
    coalesce('branch:' || t.branch_id, 'main')        AS chain,
    t.branch_id,
    t.thought_number,
    t.node_id,
    t.thought                                         AS original_thought,
    l.thought                                         AS latest_thought,
    l.node_id                                         AS latest_node,
    l.thought_number                                  AS latest_number,
    (WITH RECURSIVE tree (node_id) AS (
         SELECT t.node_id
         UNION ALL
         SELECT r.node_id FROM thoughts AS r JOIN tree ON r.revises_node = tree.node_id
          WHERE r.session_id = t.session_id
     )
     SELECT count(*) - 1 FROM tree)                   AS revisions,
    t.created_at,
    l.created_at                                      AS latest_created_at,
    t.id
FROM thoughts AS t
JOIN sessions AS s ON s.id = t.session_id
JOIN thoughts AS l ON l.id = (
    WITH RECURSIVE tree (id, node_id) AS (
        SELECT t.id, t.node_id
        UNION ALL
        SELECT r.id, r.node_id FROM thoughts AS r JOIN tree ON r.revises_node = tree.node_id
         WHERE r.session_id = t.session_id
    )
    SELECT max(id) FROM tree)
WHERE t.revises_node IS NULL
   OR NOT EXISTS (SELECT 1 FROM thoughts AS o
                  WHERE o.node_id = t.revises_node AND o.session_id = t.session_id);

-- view thought_next
CREATE VIEW thought_next AS
SELECT
    t.node_id,
    (SELECT json_group_array(n.node_id)
       FROM (SELECT node_id FROM thoughts WHERE prev_node = t.node_id ORDER BY id) AS n) AS next
FROM thoughts AS t;

-- view thought_view
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
    t.created_at,
    t.id,
    t.revises_node,
    t.branch_origin
FROM thoughts AS t
JOIN sessions AS s ON s.id = t.session_id;

-- trigger branches_checked_insert
CREATE TRIGGER branches_checked_insert BEFORE INSERT ON branches
WHEN new.origin_node IS NOT new.session_id || ':' || new.from_thought
  OR NOT EXISTS (SELECT 1 FROM thoughts WHERE node_id = new.origin_node AND branch_id IS NULL)
BEGIN
    SELECT RAISE(ABORT, 'a branch forks from a thought of its session''s main chain, named by from_thought (its number) and origin_node (session_id:from_thought)');
END;

-- trigger branches_deleted
CREATE TRIGGER branches_deleted AFTER DELETE ON branches BEGIN
    UPDATE sessions SET branch_count = max(branch_count - 1, 0) WHERE id = old.session_id;
END;

-- trigger branches_ids_fixed
CREATE TRIGGER branches_ids_fixed
BEFORE UPDATE OF session_id, branch_id, from_thought, origin_node ON branches
WHEN new.session_id IS NOT old.session_id OR new.branch_id IS NOT old.branch_id
  OR new.from_thought IS NOT old.from_thought OR new.origin_node IS NOT old.origin_node
BEGIN
    SELECT RAISE(ABORT, 'a branch''s session_id, branch_id, from_thought and origin_node cannot change: its thoughts and node ids refer to them');
END;

-- trigger branches_kept_while_used
CREATE TRIGGER branches_kept_while_used BEFORE DELETE ON branches
WHEN EXISTS (SELECT 1 FROM sessions WHERE id = old.session_id)
 AND EXISTS (SELECT 1 FROM thoughts WHERE session_id = old.session_id AND branch_id = old.branch_id)
BEGIN
    SELECT RAISE(ABORT, 'a branch row goes with its last thought: delete the branch''s thoughts instead');
END;

-- trigger config_checked_insert
CREATE TRIGGER config_checked_insert BEFORE INSERT ON config
WHEN (new.key = 'disableThoughtLogging' AND new.value NOT IN ('true', 'false'))
  OR (new.key = 'sessionPartitionGranularity' AND new.value NOT IN ('monthly', 'weekly', 'daily', 'none'))
  OR (new.key = 'createdAt' AND new.value NOT GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z')
BEGIN
    SELECT RAISE(ABORT, 'disableThoughtLogging is true or false; sessionPartitionGranularity is monthly, weekly, daily or none; createdAt is a timestamp such as 2026-11-23T08:42:10.000Z');
END;

-- trigger config_checked_update
CREATE TRIGGER config_checked_update BEFORE UPDATE OF key, value ON config
WHEN (new.key = 'disableThoughtLogging' AND new.value NOT IN ('true', 'false'))
  OR (new.key = 'sessionPartitionGranularity' AND new.value NOT IN ('monthly', 'weekly', 'daily', 'none'))
  OR (new.key = 'createdAt' AND new.value NOT GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z')
BEGIN
    SELECT RAISE(ABORT, 'disableThoughtLogging is true or false; sessionPartitionGranularity is monthly, weekly, daily or none; createdAt is a timestamp such as 2026-11-23T08:42:10.000Z');
END;

-- trigger config_install_id_checked_insert
CREATE TRIGGER config_install_id_checked_insert BEFORE INSERT ON config
WHEN new.key = 'installId' AND trim(new.value, ' ' || char(9, 10, 13)) = ''
BEGIN
    SELECT RAISE(ABORT, 'installId cannot be blank: it tells this ledger from others (a backup replaces only an earlier backup of the same ledger)');
END;

-- trigger config_install_id_checked_update
CREATE TRIGGER config_install_id_checked_update BEFORE UPDATE OF key, value ON config
WHEN (old.key = 'installId' AND new.key IS NOT 'installId')
  OR (new.key = 'installId' AND trim(new.value, ' ' || char(9, 10, 13)) = '')
BEGIN
    SELECT RAISE(ABORT, 'installId cannot be blank or renamed: it tells this ledger from others (a backup replaces only an earlier backup of the same ledger)');
END;

-- trigger config_install_id_kept
CREATE TRIGGER config_install_id_kept BEFORE DELETE ON config
WHEN old.key = 'installId'
BEGIN
    SELECT RAISE(ABORT, 'installId cannot be deleted: it tells this ledger from others (a backup replaces only an earlier backup of the same ledger)');
END;

-- trigger knowledge_patterns_deleted
CREATE TRIGGER knowledge_patterns_deleted AFTER DELETE ON knowledge_patterns BEGIN
    DELETE FROM knowledge_pattern_tags WHERE pattern_id = old.id;
END;

-- trigger knowledge_patterns_fts_delete
CREATE TRIGGER knowledge_patterns_fts_delete AFTER DELETE ON knowledge_patterns BEGIN
    INSERT INTO knowledge_patterns_fts (knowledge_patterns_fts, rowid, title, description, tags, content)
    VALUES ('delete', old.seq, old.title, old.description, old.tags, old.content);
END;

-- trigger knowledge_patterns_fts_insert
CREATE TRIGGER knowledge_patterns_fts_insert AFTER INSERT ON knowledge_patterns BEGIN
    INSERT INTO knowledge_patterns_fts (rowid, title, description, tags, content)
    VALUES (new.seq, new.title, new.description, new.tags, new.content);
END;

-- trigger knowledge_patterns_fts_update
CREATE TRIGGER knowledge_patterns_fts_update AFTER UPDATE OF title, description, tags, content ON knowledge_patterns BEGIN
    INSERT INTO knowledge_patterns_fts (knowledge_patterns_fts, rowid, title, description, tags, content)
    VALUES ('delete', old.seq, old.title, old.description, old.tags, old.content);
    INSERT INTO knowledge_patterns_fts (rowid, title, description, tags, content)
    VALUES (new.seq, new.title, new.description, new.tags, new.content);
END;

-- trigger knowledge_patterns_ids_fixed
CREATE TRIGGER knowledge_patterns_ids_fixed BEFORE UPDATE OF id, seq ON knowledge_patterns
WHEN new.id IS NOT old.id OR new.seq IS NOT old.seq
BEGIN
    SELECT RAISE(ABORT, 'a pattern''s id and seq cannot change: its tags and the search index refer to them');
END;

-- trigger knowledge_patterns_tags_checked_insert
CREATE TRIGGER knowledge_patterns_tags_checked_insert BEFORE INSERT ON knowledge_patterns
WHEN json_valid(new.tags) AND EXISTS (SELECT 1 FROM json_each(new.tags) WHERE type <> 'text')
BEGIN
    SELECT RAISE(ABORT, 'knowledge_patterns.tags must be a JSON array of strings');
END;

-- trigger knowledge_patterns_tags_checked_update
CREATE TRIGGER knowledge_patterns_tags_checked_update BEFORE UPDATE OF tags ON knowledge_patterns
WHEN json_valid(new.tags) AND EXISTS (SELECT 1 FROM json_each(new.tags) WHERE type <> 'text')
BEGIN
    SELECT RAISE(ABORT, 'knowledge_patterns.tags must be a JSON array of strings');
END;

-- trigger knowledge_patterns_tags_insert
CREATE TRIGGER knowledge_patterns_tags_insert AFTER INSERT ON knowledge_patterns BEGIN
    INSERT OR IGNORE INTO knowledge_pattern_tags (tag, pattern_id) SELECT value, new.id FROM json_each(new.tags);
END;

-- trigger knowledge_patterns_tags_update
CREATE TRIGGER knowledge_patterns_tags_update AFTER UPDATE OF tags ON knowledge_patterns BEGIN
    DELETE FROM knowledge_pattern_tags WHERE pattern_id = new.id;
    INSERT OR IGNORE INTO knowledge_pattern_tags (tag, pattern_id) SELECT value, new.id FROM json_each(new.tags);
END;

-- trigger knowledge_patterns_times_checked_insert
CREATE TRIGGER knowledge_patterns_times_checked_insert BEFORE INSERT ON knowledge_patterns
WHEN new.created_at NOT GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z' OR new.updated_at NOT GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'
BEGIN
    SELECT RAISE(ABORT, 'pattern timestamps are UTC with milliseconds, such as 2026-11-23T08:42:10.000Z');
END;

-- trigger knowledge_patterns_times_checked_update
CREATE TRIGGER knowledge_patterns_times_checked_update
BEFORE UPDATE OF created_at, updated_at ON knowledge_patterns
WHEN new.created_at NOT GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z' OR new.updated_at NOT GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'
BEGIN
    SELECT RAISE(ABORT, 'pattern timestamps are UTC with milliseconds, such as 2026-11-23T08:42:10.000Z');
END;

-- trigger notebook_cells_fts_delete
CREATE TRIGGER notebook_cells_fts_delete AFTER DELETE ON notebook_cells BEGIN
    INSERT INTO notebook_cells_fts (notebook_cells_fts, rowid, content, output, error)
    VALUES ('delete', old.seq, old.content, old.output, old.error);
END;

-- trigger notebook_cells_fts_insert
CREATE TRIGGER notebook_cells_fts_insert AFTER INSERT ON notebook_cells BEGIN
    INSERT INTO notebook_cells_fts (rowid, content, output, error)
    VALUES (new.seq, new.content, new.output, new.error);
END;

-- trigger notebook_cells_fts_update
CREATE TRIGGER notebook_cells_fts_update AFTER UPDATE OF content, output, error ON notebook_cells BEGIN
    INSERT INTO notebook_cells_fts (notebook_cells_fts, rowid, content, output, error)
    VALUES ('delete', old.seq, old.content, old.output, old.error);
    INSERT INTO notebook_cells_fts (rowid, content, output, error)
    VALUES (new.seq, new.content, new.output, new.error);
END;

-- trigger scratchpad_notes_fts_delete
CREATE TRIGGER scratchpad_notes_fts_delete AFTER DELETE ON scratchpad_notes BEGIN
    INSERT INTO scratchpad_notes_fts (scratchpad_notes_fts, rowid, title, content)
    VALUES ('delete', old.seq, old.title, old.content);
END;

-- trigger scratchpad_notes_fts_insert
CREATE TRIGGER scratchpad_notes_fts_insert AFTER INSERT ON scratchpad_notes BEGIN
    INSERT INTO scratchpad_notes_fts (rowid, title, content) VALUES (new.seq, new.title, new.content);
END;

-- trigger scratchpad_notes_fts_update
CREATE TRIGGER scratchpad_notes_fts_update AFTER UPDATE OF title, content ON scratchpad_notes BEGIN
    INSERT INTO scratchpad_notes_fts (scratchpad_notes_fts, rowid, title, content)
    VALUES ('delete', old.seq, old.title, old.content);
    INSERT INTO scratchpad_notes_fts (rowid, title, content) VALUES (new.seq, new.title, new.content);
END;

-- trigger scratchpad_notes_times_checked_insert
CREATE TRIGGER scratchpad_notes_times_checked_insert BEFORE INSERT ON scratchpad_notes
WHEN new.created_at NOT GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z' OR new.updated_at NOT GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'
BEGIN
    SELECT RAISE(ABORT, 'note timestamps are UTC with milliseconds, such as 2026-11-23T08:42:10.000Z');
END;

-- trigger scratchpad_notes_times_checked_update
CREATE TRIGGER scratchpad_notes_times_checked_update
BEFORE UPDATE OF created_at, updated_at ON scratchpad_notes
WHEN new.created_at NOT GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z' OR new.updated_at NOT GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'
BEGIN
    SELECT RAISE(ABORT, 'note timestamps are UTC with milliseconds, such as 2026-11-23T08:42:10.000Z');
END;

-- trigger sessions_checked_insert
CREATE TRIGGER sessions_checked_insert BEFORE INSERT ON sessions
WHEN new.id NOT GLOB '[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]'
BEGIN
    SELECT RAISE(ABORT, 'sessions.id must be a lower-case UUID such as 0b6f2c1e-8d4a-4c5e-9f3b-2a7d1e6c8b90');
END;

-- trigger sessions_deleted
CREATE TRIGGER sessions_deleted AFTER DELETE ON sessions BEGIN
    DELETE FROM thoughts WHERE session_id = old.id;
    DELETE FROM branches WHERE session_id = old.id;
    DELETE FROM session_tags WHERE session_id = old.id;
END;

-- trigger sessions_fts_delete
CREATE TRIGGER sessions_fts_delete AFTER DELETE ON sessions BEGIN
    INSERT INTO sessions_fts (sessions_fts, rowid, title, description, tags)
    VALUES ('delete', old.seq, old.title, old.description, old.tags);
END;

-- trigger sessions_fts_insert
CREATE TRIGGER sessions_fts_insert AFTER INSERT ON sessions BEGIN
    INSERT INTO sessions_fts (rowid, title, description, tags)
    VALUES (new.seq, new.title, new.description, new.tags);
END;

-- trigger sessions_fts_update
CREATE TRIGGER sessions_fts_update AFTER UPDATE OF title, description, tags ON sessions BEGIN
    INSERT INTO sessions_fts (sessions_fts, rowid, title, description, tags)
    VALUES ('delete', old.seq, old.title, old.description, old.tags);
    INSERT INTO sessions_fts (rowid, title, description, tags)
    VALUES (new.seq, new.title, new.description, new.tags);
END;

-- trigger sessions_ids_fixed
CREATE TRIGGER sessions_ids_fixed BEFORE UPDATE OF id, seq ON sessions
WHEN new.id IS NOT old.id OR new.seq IS NOT old.seq
BEGIN
    SELECT RAISE(ABORT, 'a session''s id and seq cannot change: its thoughts and the search index refer to them');
END;

-- trigger sessions_never_replaced
CREATE TRIGGER sessions_never_replaced BEFORE INSERT ON sessions
WHEN EXISTS (SELECT 1 FROM sessions WHERE id = new.id)
  OR EXISTS (SELECT 1 FROM sessions WHERE seq = new.seq)
BEGIN
    SELECT RAISE(ABORT, 'a session with this id or seq exists: change it with UPDATE (INSERT OR REPLACE would delete it, and with foreign keys on its thoughts with it)');
END;

-- trigger sessions_tags_checked_insert
CREATE TRIGGER sessions_tags_checked_insert BEFORE INSERT ON sessions
WHEN json_valid(new.tags) AND EXISTS (SELECT 1 FROM json_each(new.tags) WHERE type <> 'text')
BEGIN
    SELECT RAISE(ABORT, 'sessions.tags must be a JSON array of strings');
END;

-- trigger sessions_tags_checked_update
CREATE TRIGGER sessions_tags_checked_update BEFORE UPDATE OF tags ON sessions
WHEN json_valid(new.tags) AND EXISTS (SELECT 1 FROM json_each(new.tags) WHERE type <> 'text')
BEGIN
    SELECT RAISE(ABORT, 'sessions.tags must be a JSON array of strings');
END;

-- trigger sessions_tags_insert
CREATE TRIGGER sessions_tags_insert AFTER INSERT ON sessions BEGIN
    INSERT OR IGNORE INTO session_tags (tag, session_id) SELECT value, new.id FROM json_each(new.tags);
END;

-- trigger sessions_tags_update
CREATE TRIGGER sessions_tags_update AFTER UPDATE OF tags ON sessions BEGIN
    DELETE FROM session_tags WHERE session_id = new.id;
    INSERT OR IGNORE INTO session_tags (tag, session_id) SELECT value, new.id FROM json_each(new.tags);
END;

-- trigger sessions_threads_deleted
CREATE TRIGGER sessions_threads_deleted AFTER DELETE ON sessions BEGIN
    DELETE FROM thread_references WHERE from_id = old.id OR to_id = old.id;
    DELETE FROM thread_dependencies WHERE from_id = old.id OR to_id = old.id;
    UPDATE sessions SET parent_id = NULL WHERE parent_id = old.id;
END;

-- trigger sessions_times_checked_insert
CREATE TRIGGER sessions_times_checked_insert BEFORE INSERT ON sessions
WHEN new.created_at NOT GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'
  OR new.updated_at NOT GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'
  OR new.last_accessed_at NOT GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'
  OR coalesce(new.completed_at NOT GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z', 0)
BEGIN
    SELECT RAISE(ABORT, 'session timestamps are UTC with milliseconds, such as 2026-11-23T08:42:10.000Z (strftime(''%Y-%m-%dT%H:%M:%fZ'', ''now'') in SQL)');
END;

-- trigger sessions_times_checked_update
CREATE TRIGGER sessions_times_checked_update
BEFORE UPDATE OF created_at, updated_at, last_accessed_at, completed_at ON sessions
WHEN new.created_at NOT GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'
  OR new.updated_at NOT GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'
  OR new.last_accessed_at NOT GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'
  OR coalesce(new.completed_at NOT GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z', 0)
BEGIN
    SELECT RAISE(ABORT, 'session timestamps are UTC with milliseconds, such as 2026-11-23T08:42:10.000Z (strftime(''%Y-%m-%dT%H:%M:%fZ'', ''now'') in SQL)');
END;

-- trigger thoughts_branch_begun_update
CREATE TRIGGER thoughts_branch_begun_update
AFTER UPDATE OF branch_origin, branch_from_thought ON thoughts
WHEN new.branch_id IS NOT NULL AND new.branch_from_thought IS NOT NULL
 AND NOT EXISTS (SELECT 1 FROM branches WHERE session_id = new.session_id AND branch_id = new.branch_id)
BEGIN
    INSERT INTO branches (session_id, branch_id, from_thought, origin_node, created_at, tail_node)
    VALUES (new.session_id, new.branch_id, new.branch_from_thought, new.branch_origin,
            (SELECT created_at FROM thoughts WHERE session_id = new.session_id AND branch_id = new.branch_id
             ORDER BY id LIMIT 1),
            (SELECT node_id FROM thoughts WHERE session_id = new.session_id AND branch_id = new.branch_id
             ORDER BY id DESC LIMIT 1));
    UPDATE sessions SET branch_count = branch_count + 1 WHERE id = new.session_id;
END;

-- trigger thoughts_checked_insert
CREATE TRIGGER thoughts_checked_insert BEFORE INSERT ON thoughts
WHEN EXISTS (SELECT 1 FROM thoughts
             WHERE session_id = new.session_id AND branch_id IS new.branch_id
               AND thought_number = new.thought_number)
BEGIN
    SELECT RAISE(ABORT, 'this chain of the session has a thought with this number (a thought is never replaced: UPDATE its text instead)');
END;

-- trigger thoughts_critique_checked_update
CREATE TRIGGER thoughts_critique_checked_update BEFORE UPDATE OF critique ON thoughts
WHEN new.critique IS NOT NULL AND json_valid(new.critique)
 AND NOT (json_type(new.critique) = 'object'
          AND coalesce(json_type(new.critique, '$.text') = 'text', 0)
          AND coalesce(json_type(new.critique, '$.model') = 'text', 0)
          AND coalesce(json_type(new.critique, '$.timestamp') = 'text', 0)
          AND json_extract(new.critique, '$.timestamp') GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z')
BEGIN
    SELECT RAISE(ABORT, 'a critique is a JSON object {"text": "...", "model": "...", "timestamp": "2026-11-23T08:42:10.000Z"} (three strings, the time UTC with milliseconds), or NULL');
END;

-- trigger thoughts_deleted
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

-- trigger thoughts_fork_checked_insert
CREATE TRIGGER thoughts_fork_checked_insert BEFORE INSERT ON thoughts
WHEN new.branch_id IS NOT NULL OR new.branch_origin IS NOT NULL OR new.branch_from_thought IS NOT NULL
  OR new.critique IS NOT NULL
BEGIN
    SELECT RAISE(ABORT, 'a main-chain thought forks from nothing: its branch_origin and branch_from_thought are NULL (they name the fork point of a branch''s thoughts)')
    WHERE new.branch_id IS NULL AND (new.branch_origin IS NOT NULL OR new.branch_from_thought IS NOT NULL);

    SELECT RAISE(ABORT, 'a branch thought names the main-chain thought its branch forks from twice: branch_from_thought (its number) and branch_origin (session_id:branch_from_thought), both set on every thought of the branch')
    WHERE new.branch_id IS NOT NULL
      AND (new.branch_from_thought IS NULL
           OR new.branch_origin IS NOT new.session_id || ':' || new.branch_from_thought);

    SELECT RAISE(ABORT, 'a branch has one fork point: branch_from_thought and branch_origin must be those of the branch''s other thoughts (branches.from_thought and origin_node); a new branch_id starts a new branch')
    WHERE new.branch_id IS NOT NULL
      AND new.branch_from_thought IS NOT NULL
      AND new.branch_origin IS new.session_id || ':' || new.branch_from_thought
      AND coalesce(
            (SELECT b.origin_node IS NOT new.branch_origin OR b.from_thought IS NOT new.branch_from_thought
             FROM branches AS b WHERE b.session_id = new.session_id AND b.branch_id = new.branch_id),
            (SELECT t.branch_origin IS NOT new.branch_origin
             FROM thoughts AS t
             WHERE t.session_id = new.session_id AND t.branch_id = new.branch_id AND t.branch_origin IS NOT NULL
             ORDER BY t.thought_number LIMIT 1),
            0);

    SELECT RAISE(ABORT, 'a branch forks from a thought of its session''s main chain: branch_origin (session_id:branch_from_thought) names no such thought')
    WHERE new.branch_id IS NOT NULL
      AND new.branch_from_thought IS NOT NULL
      AND new.branch_origin IS new.session_id || ':' || new.branch_from_thought
      AND NOT EXISTS (SELECT 1 FROM branches WHERE session_id = new.session_id AND branch_id = new.branch_id)
      AND NOT EXISTS (SELECT 1 FROM thoughts WHERE node_id = new.branch_origin AND branch_id IS NULL);

    SELECT RAISE(ABORT, 'a critique is a JSON object {"text": "...", "model": "...", "timestamp": "2026-11-23T08:42:10.000Z"} (three strings, the time UTC with milliseconds), or NULL')
    WHERE new.critique IS NOT NULL AND json_valid(new.critique)
      AND NOT (json_type(new.critique) = 'object'
               AND coalesce(json_type(new.critique, '$.text') = 'text', 0)
               AND coalesce(json_type(new.critique, '$.model') = 'text', 0)
               AND coalesce(json_type(new.critique, '$.timestamp') = 'text', 0)
               AND json_extract(new.critique, '$.timestamp') GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z');
END;

-- trigger thoughts_fork_checked_update
CREATE TRIGGER thoughts_fork_checked_update
BEFORE UPDATE OF branch_origin, branch_from_thought ON thoughts
WHEN coalesce(new.branch_from_thought BETWEEN 1 AND 2147483647, 1)
BEGIN
    SELECT RAISE(ABORT, 'a main-chain thought forks from nothing: its branch_origin and branch_from_thought are NULL (they name the fork point of a branch''s thoughts)')
    WHERE new.branch_id IS NULL AND (new.branch_origin IS NOT NULL OR new.branch_from_thought IS NOT NULL);

    SELECT RAISE(ABORT, 'a branch thought names the main-chain thought its branch forks from twice: branch_from_thought (its number) and branch_origin (session_id:branch_from_thought), both set on every thought of the branch')
    WHERE new.branch_id IS NOT NULL
      AND (new.branch_from_thought IS NULL
           OR new.branch_origin IS NOT new.session_id || ':' || new.branch_from_thought);

    SELECT RAISE(ABORT, 'a branch has one fork point: branch_from_thought and branch_origin must be those of the branch''s other thoughts (branches.from_thought and origin_node); a new branch_id starts a new branch')
    WHERE new.branch_id IS NOT NULL
      AND new.branch_from_thought IS NOT NULL
      AND new.branch_origin IS new.session_id || ':' || new.branch_from_thought
      AND coalesce(
            (SELECT b.origin_node IS NOT new.branch_origin OR b.from_thought IS NOT new.branch_from_thought
             FROM branches AS b WHERE b.session_id = new.session_id AND b.branch_id = new.branch_id),
            0);

    SELECT RAISE(ABORT, 'a branch forks from a thought of its session''s main chain: branch_origin (session_id:branch_from_thought) names no such thought')
    WHERE new.branch_id IS NOT NULL
      AND new.branch_from_thought IS NOT NULL
      AND new.branch_origin IS new.session_id || ':' || new.branch_from_thought
      AND NOT EXISTS (SELECT 1 FROM branches WHERE session_id = new.session_id AND branch_id = new.branch_id)
      AND NOT EXISTS (SELECT 1 FROM thoughts WHERE node_id = new.branch_origin AND branch_id IS NULL);
END;

-- trigger thoughts_ids_fixed
CREATE TRIGGER thoughts_ids_fixed
BEFORE UPDATE OF id, node_id, session_id, branch_id, thought_number ON thoughts
WHEN new.id IS NOT old.id OR new.node_id IS NOT old.node_id OR new.session_id IS NOT old.session_id
  OR new.branch_id IS NOT old.branch_id OR new.thought_number IS NOT old.thought_number
BEGIN
    SELECT RAISE(ABORT, 'a thought''s id, node_id, session_id, branch_id and thought_number cannot change: links, node ids and the search index refer to them');
END;

-- trigger thoughts_inserted_behind_watermark
CREATE TRIGGER thoughts_inserted_behind_watermark AFTER INSERT ON thoughts
WHEN new.id <= (SELECT indexed_through FROM thoughts_fts_state WHERE id = 1)
BEGIN
    INSERT INTO thoughts_fts (rowid, thought) VALUES (new.id, new.thought);
END;

-- trigger thoughts_kept_while_referred
CREATE TRIGGER thoughts_kept_while_referred BEFORE DELETE ON thoughts
WHEN EXISTS (SELECT 1 FROM sessions WHERE id = old.session_id)
 AND (EXISTS (SELECT 1 FROM thoughts WHERE revises_node = old.node_id)
      OR EXISTS (SELECT 1 FROM branches WHERE session_id = old.session_id AND origin_node = old.node_id))
BEGIN
    SELECT RAISE(ABORT, 'a revision revises this thought or a branch forks from it: delete those first, or the whole session');
END;

-- trigger thoughts_node_id_checked
CREATE TRIGGER thoughts_node_id_checked BEFORE INSERT ON thoughts
WHEN new.node_id IS NOT new.session_id || ':' || coalesce(new.branch_id || ':', '') || new.thought_number
  OR coalesce(new.branch_id = '' OR length(new.branch_id) > 64 OR new.branch_id GLOB '*[^a-z0-9-]*', 0)
  OR NOT EXISTS (SELECT 1 FROM sessions WHERE id = new.session_id)
BEGIN
    SELECT RAISE(ABORT, 'a thought belongs to an existing session, its node_id is session_id:thought_number on the main chain and session_id:branch_id:thought_number on a branch, and a branch_id is 1 to 64 characters of a-z, 0-9 and -');
END;

-- trigger thoughts_numbers_in_range
CREATE TRIGGER thoughts_numbers_in_range
BEFORE UPDATE OF total_thoughts, revises_thought, branch_from_thought ON thoughts
WHEN new.total_thoughts NOT BETWEEN 1 AND 2147483647
  OR coalesce(new.revises_thought NOT BETWEEN 1 AND 2147483647, 0)
  OR coalesce(new.branch_from_thought NOT BETWEEN 1 AND 2147483647, 0)
BEGIN
    SELECT RAISE(ABORT, 'total_thoughts, revises_thought and branch_from_thought are whole numbers from 1 to 2147483647 (the last two may be NULL)');
END;

-- trigger thoughts_put_back
CREATE TRIGGER thoughts_put_back AFTER INSERT ON thoughts
WHEN EXISTS (SELECT 1 FROM thoughts WHERE id > new.id)
BEGIN
    UPDATE thoughts SET prev_node = new.node_id
    WHERE new.prev_node IS NOT NULL AND prev_node = new.prev_node
      AND session_id = new.session_id AND branch_id IS new.branch_id AND id <> new.id;
    UPDATE thoughts SET prev_node = new.node_id
    WHERE new.prev_node IS NULL AND prev_node IS NULL
      AND session_id = new.session_id AND branch_id IS new.branch_id AND id <> new.id;
END;

-- trigger thoughts_revision_checked_insert
CREATE TRIGGER thoughts_revision_checked_insert BEFORE INSERT ON thoughts
WHEN new.revises_node IS NOT new.session_id || ':' || coalesce(new.branch_id || ':', '') || new.revises_thought
  OR new.revises_thought IS new.thought_number
BEGIN
    SELECT RAISE(ABORT, 'revises_node names the thought revises_thought names, of the thought''s own chain: session_id:revises_thought on the main chain, session_id:branch_id:revises_thought on a branch (both NULL when it revises none); a thought cannot revise itself');
END;

-- trigger thoughts_revision_checked_update
CREATE TRIGGER thoughts_revision_checked_update BEFORE UPDATE OF revises_thought, revises_node ON thoughts
WHEN (new.revises_node IS NOT new.session_id || ':' || coalesce(new.branch_id || ':', '') || new.revises_thought
      OR new.revises_thought IS new.thought_number)
 AND coalesce(new.revises_thought BETWEEN 1 AND 2147483647, 1)
BEGIN
    SELECT RAISE(ABORT, 'revises_node names the thought revises_thought names, of the thought''s own chain: session_id:revises_thought on the main chain, session_id:branch_id:revises_thought on a branch (both NULL when it revises none); a thought cannot revise itself');
END;

-- trigger thoughts_text_changed
CREATE TRIGGER thoughts_text_changed AFTER UPDATE OF thought ON thoughts
WHEN old.id <= (SELECT indexed_through FROM thoughts_fts_state WHERE id = 1)
BEGIN
    INSERT INTO thoughts_fts (thoughts_fts, rowid, thought) VALUES ('delete', old.id, old.thought);
    INSERT INTO thoughts_fts (rowid, thought) VALUES (new.id, new.thought);
END;

-- trigger thoughts_text_checked_insert
CREATE TRIGGER thoughts_text_checked_insert BEFORE INSERT ON thoughts
WHEN length(CAST(new.thought AS BLOB)) > 1048576
BEGIN
    SELECT RAISE(ABORT, 'a thought is at most 1 MiB of text (1048576 bytes of UTF-8), as the server and imports require');
END;

-- trigger thoughts_text_checked_update
CREATE TRIGGER thoughts_text_checked_update BEFORE UPDATE OF thought ON thoughts
WHEN length(CAST(new.thought AS BLOB)) > 1048576
BEGIN
    SELECT RAISE(ABORT, 'a thought is at most 1 MiB of text (1048576 bytes of UTF-8), as the server and imports require');
END;

-- trigger thoughts_times_checked_insert
CREATE TRIGGER thoughts_times_checked_insert BEFORE INSERT ON thoughts
WHEN new.created_at NOT GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'
BEGIN
    SELECT RAISE(ABORT, 'thoughts.created_at is UTC with milliseconds, such as 2026-11-23T08:42:10.000Z (strftime(''%Y-%m-%dT%H:%M:%fZ'', ''now'') in SQL)');
END;

-- trigger thoughts_times_checked_update
CREATE TRIGGER thoughts_times_checked_update BEFORE UPDATE OF created_at ON thoughts
WHEN new.created_at NOT GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'
BEGIN
    SELECT RAISE(ABORT, 'thoughts.created_at is UTC with milliseconds, such as 2026-11-23T08:42:10.000Z (strftime(''%Y-%m-%dT%H:%M:%fZ'', ''now'') in SQL)');
END;

-- trigger thread_operations_no_delete
CREATE TRIGGER thread_operations_no_delete BEFORE DELETE ON thread_operations
BEGIN
    SELECT RAISE(ABORT, 'thread_operations is append-only: its rows cannot be deleted');
END;

-- trigger thread_operations_no_update
CREATE TRIGGER thread_operations_no_update BEFORE UPDATE ON thread_operations
BEGIN
    SELECT RAISE(ABORT, 'thread_operations is append-only: its rows cannot be changed');
END;
