-- thoughtbox schema, version 16: the thread registry of seed 004.
--
-- Every session is a thread (CONTRACT section 10): the thread fields are
-- columns of `sessions`, so that every existing session is an active thread
-- without a parent the moment this runs, with no step by the user.
--   objective  NULL means the default: the description, else the title
--   status     active -> frozen -> archived, active -> archived (unrelated to
--              completed_at, which stays what it was)
--   parent_id  the thread it was spawned from
-- References and dependencies are rows of their own; the relations of the
-- registry (children, references_to, referenced_by, depends_on) are read
-- from these columns and rows, never stored a second time.
ALTER TABLE sessions ADD COLUMN objective TEXT;
ALTER TABLE sessions ADD COLUMN status TEXT NOT NULL DEFAULT 'active'
    CHECK (status IN ('active', 'frozen', 'archived'));
ALTER TABLE sessions ADD COLUMN parent_id TEXT REFERENCES sessions (id) ON DELETE SET NULL;

CREATE INDEX sessions_by_parent ON sessions (parent_id) WHERE parent_id IS NOT NULL;
CREATE INDEX sessions_by_status ON sessions (status) WHERE status <> 'active';

-- A thread citing another, or one of its assets: a thought node id, a
-- notebook, or a path in the export layout ('' for the thread as a whole).
CREATE TABLE thread_references (
    from_id    TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    to_id      TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    asset_path TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    PRIMARY KEY (from_id, to_id, asset_path),
    CHECK (from_id <> to_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX thread_references_by_target ON thread_references (to_id);

-- `from_id` depends on `to_id`; the writer refuses a row that closes a cycle.
CREATE TABLE thread_dependencies (
    from_id    TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    to_id      TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    created_at TEXT NOT NULL,
    PRIMARY KEY (from_id, to_id),
    CHECK (from_id <> to_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX thread_dependencies_by_target ON thread_dependencies (to_id);

-- The operations log: who changed the registry, how, and when. Each row is
-- written in the transaction of the change it describes. `seq` orders it.
CREATE TABLE thread_operations (
    seq       INTEGER PRIMARY KEY AUTOINCREMENT,
    id        TEXT NOT NULL UNIQUE,
    timestamp TEXT NOT NULL,
    command   TEXT NOT NULL CHECK (command IN ('spawn', 'reference', 'depend', 'freeze', 'archive', 'update')),
    operator  TEXT NOT NULL CHECK (operator IN ('user', 'system', 'agent')),
    params    TEXT NOT NULL CHECK (json_valid(params) AND json_type(params) = 'object')
) STRICT;
CREATE INDEX thread_operations_by_time ON thread_operations (timestamp);

-- Append-only, also for a person with the sqlite3 shell: the log is the
-- audit trail, and a trail that can be rewritten proves nothing.
CREATE TRIGGER thread_operations_no_update BEFORE UPDATE ON thread_operations
BEGIN
    SELECT RAISE(ABORT, 'thread_operations is append-only: its rows cannot be changed');
END;
CREATE TRIGGER thread_operations_no_delete BEFORE DELETE ON thread_operations
BEGIN
    SELECT RAISE(ABORT, 'thread_operations is append-only: its rows cannot be deleted');
END;

-- With foreign keys off (the sqlite3 shell's default), deleting a session
-- still takes its references and dependencies, and frees its children.
CREATE TRIGGER sessions_threads_deleted AFTER DELETE ON sessions BEGIN
    DELETE FROM thread_references WHERE from_id = old.id OR to_id = old.id;
    DELETE FROM thread_dependencies WHERE from_id = old.id OR to_id = old.id;
    UPDATE sessions SET parent_id = NULL WHERE parent_id = old.id;
END;
