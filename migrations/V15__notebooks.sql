-- thoughtbox schema, version 15: notebooks (seed 000's Notebook and Cell),
-- their cells and every run of a cell, kept in the ledger like sessions.
--
-- Same conventions as before: STRICT tables; ids are server-minted UUIDs;
-- `created_at` / `updated_at` of notebooks are Unix milliseconds, as seed 000
-- types them; a run's `started_at` is ISO 8601 UTC like the rest of the ledger.

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

CREATE INDEX notebooks_by_session ON notebooks (session_id);
CREATE INDEX notebooks_by_updated ON notebooks (updated_at);

-- Cells in order (`position`, renumbered on insert). `content` is a title or
-- markdown cell's text and a code or package.json cell's source. `runner`
-- names the server process running it ("pid:start-time") while `status` is
-- 'running', so that a server started later can tell a run whose process
-- died (marked failed) from one still going in another process.
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

CREATE INDEX notebook_cells_by_notebook ON notebook_cells (notebook_id, position);
CREATE INDEX notebook_cells_running ON notebook_cells (status) WHERE status = 'running';

-- Every run of a code cell and every dependency install (on the
-- package.json cell): when, how long, how it ended, what it printed.
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

CREATE INDEX notebook_runs_by_cell ON notebook_runs (cell_id, seq);
CREATE INDEX notebook_runs_by_notebook ON notebook_runs (notebook_id);

-- Cell text and outputs in the full-text index, for `session search` with
-- include ["notebooks"].
CREATE VIRTUAL TABLE notebook_cells_fts USING fts5 (
    content,
    output,
    error,
    content = 'notebook_cells',
    content_rowid = 'seq',
    tokenize = 'unicode61 remove_diacritics 2'
);

CREATE TRIGGER notebook_cells_fts_insert AFTER INSERT ON notebook_cells BEGIN
    INSERT INTO notebook_cells_fts (rowid, content, output, error)
    VALUES (new.seq, new.content, new.output, new.error);
END;

CREATE TRIGGER notebook_cells_fts_delete AFTER DELETE ON notebook_cells BEGIN
    INSERT INTO notebook_cells_fts (notebook_cells_fts, rowid, content, output, error)
    VALUES ('delete', old.seq, old.content, old.output, old.error);
END;

CREATE TRIGGER notebook_cells_fts_update AFTER UPDATE OF content, output, error ON notebook_cells BEGIN
    INSERT INTO notebook_cells_fts (notebook_cells_fts, rowid, content, output, error)
    VALUES ('delete', old.seq, old.content, old.output, old.error);
    INSERT INTO notebook_cells_fts (rowid, content, output, error)
    VALUES (new.seq, new.content, new.output, new.error);
END;
