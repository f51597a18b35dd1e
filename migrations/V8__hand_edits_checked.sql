-- thoughtbox schema, version 8: rows written by hand must have the form the
-- server gives its own, so that every reader, export and import can rely on it.
--
-- Found by writing rows with `sqlite3` (review 15-b): a second thought 2 on a
-- chain made the directory export write both into one file, losing one; a
-- timestamp such as `datetime('now')`, 'tomorrow' or a Unix time sorted a
-- session first, gave it no partition folder and made its export unreadable;
-- a session id in upper case was listed but could not be opened; `INSERT OR
-- REPLACE` of a thought left the search index answering with the old text;
-- a setting of `disableThoughtLogging = '1'` let thought text into the event
-- stream. Each is now refused with a message saying what the form is. These
-- triggers check new rows and changes only: rows already in a ledger are
-- left as they are (`thoughtbox repair` reports them).
--
-- Timestamps are UTC with milliseconds, 'YYYY-MM-DDTHH:MM:SS.mmmZ': the one
-- form the server writes and imports convert to, so that comparing them as
-- text orders them in time. Session ids are lower-case hyphenated UUIDs.

CREATE TRIGGER sessions_checked_insert BEFORE INSERT ON sessions
WHEN new.id NOT GLOB '[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]'
BEGIN
    SELECT RAISE(ABORT, 'sessions.id must be a lower-case UUID such as 0b6f2c1e-8d4a-4c5e-9f3b-2a7d1e6c8b90');
END;

CREATE TRIGGER sessions_times_checked_insert BEFORE INSERT ON sessions
WHEN new.created_at NOT GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'
  OR new.updated_at NOT GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'
  OR new.last_accessed_at NOT GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'
  OR coalesce(new.completed_at NOT GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z', 0)
BEGIN
    SELECT RAISE(ABORT, 'session timestamps are UTC with milliseconds, such as 2026-11-23T08:42:10.000Z (strftime(''%Y-%m-%dT%H:%M:%fZ'', ''now'') in SQL)');
END;

CREATE TRIGGER sessions_times_checked_update
BEFORE UPDATE OF created_at, updated_at, last_accessed_at, completed_at ON sessions
WHEN new.created_at NOT GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'
  OR new.updated_at NOT GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'
  OR new.last_accessed_at NOT GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'
  OR coalesce(new.completed_at NOT GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z', 0)
BEGIN
    SELECT RAISE(ABORT, 'session timestamps are UTC with milliseconds, such as 2026-11-23T08:42:10.000Z (strftime(''%Y-%m-%dT%H:%M:%fZ'', ''now'') in SQL)');
END;

-- A thought's node id is made of its session, branch and number; each number
-- is used once on a chain. This also refuses INSERT OR REPLACE of a thought,
-- which would delete the row it replaces without telling the search index.
CREATE TRIGGER thoughts_checked_insert BEFORE INSERT ON thoughts
WHEN EXISTS (SELECT 1 FROM thoughts
             WHERE session_id = new.session_id AND branch_id IS new.branch_id
               AND thought_number = new.thought_number)
BEGIN
    SELECT RAISE(ABORT, 'this chain of the session has a thought with this number (a thought is never replaced: UPDATE its text instead)');
END;

CREATE TRIGGER thoughts_node_id_checked BEFORE INSERT ON thoughts
WHEN new.node_id IS NOT new.session_id || ':' || coalesce(new.branch_id || ':', '') || new.thought_number
  OR coalesce(new.branch_id = '' OR length(new.branch_id) > 64 OR new.branch_id GLOB '*[^a-z0-9-]*', 0)
  OR NOT EXISTS (SELECT 1 FROM sessions WHERE id = new.session_id)
BEGIN
    SELECT RAISE(ABORT, 'a thought belongs to an existing session, its node_id is session_id:thought_number on the main chain and session_id:branch_id:thought_number on a branch, and a branch_id is 1 to 64 characters of a-z, 0-9 and -');
END;

CREATE TRIGGER thoughts_times_checked_insert BEFORE INSERT ON thoughts
WHEN new.created_at NOT GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'
BEGIN
    SELECT RAISE(ABORT, 'thoughts.created_at is UTC with milliseconds, such as 2026-11-23T08:42:10.000Z (strftime(''%Y-%m-%dT%H:%M:%fZ'', ''now'') in SQL)');
END;

CREATE TRIGGER thoughts_times_checked_update BEFORE UPDATE OF created_at ON thoughts
WHEN new.created_at NOT GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'
BEGIN
    SELECT RAISE(ABORT, 'thoughts.created_at is UTC with milliseconds, such as 2026-11-23T08:42:10.000Z (strftime(''%Y-%m-%dT%H:%M:%fZ'', ''now'') in SQL)');
END;

CREATE TRIGGER knowledge_patterns_times_checked_insert BEFORE INSERT ON knowledge_patterns
WHEN new.created_at NOT GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z' OR new.updated_at NOT GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'
BEGIN
    SELECT RAISE(ABORT, 'pattern timestamps are UTC with milliseconds, such as 2026-11-23T08:42:10.000Z');
END;

CREATE TRIGGER knowledge_patterns_times_checked_update
BEFORE UPDATE OF created_at, updated_at ON knowledge_patterns
WHEN new.created_at NOT GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z' OR new.updated_at NOT GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'
BEGIN
    SELECT RAISE(ABORT, 'pattern timestamps are UTC with milliseconds, such as 2026-11-23T08:42:10.000Z');
END;

CREATE TRIGGER scratchpad_notes_times_checked_insert BEFORE INSERT ON scratchpad_notes
WHEN new.created_at NOT GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z' OR new.updated_at NOT GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'
BEGIN
    SELECT RAISE(ABORT, 'note timestamps are UTC with milliseconds, such as 2026-11-23T08:42:10.000Z');
END;

CREATE TRIGGER scratchpad_notes_times_checked_update
BEFORE UPDATE OF created_at, updated_at ON scratchpad_notes
WHEN new.created_at NOT GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z' OR new.updated_at NOT GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'
BEGIN
    SELECT RAISE(ABORT, 'note timestamps are UTC with milliseconds, such as 2026-11-23T08:42:10.000Z');
END;

-- The settings the server reads take the values it understands.
CREATE TRIGGER config_checked_insert BEFORE INSERT ON config
WHEN (new.key = 'disableThoughtLogging' AND new.value NOT IN ('true', 'false'))
  OR (new.key = 'sessionPartitionGranularity' AND new.value NOT IN ('monthly', 'weekly', 'daily', 'none'))
  OR (new.key = 'createdAt' AND new.value NOT GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z')
BEGIN
    SELECT RAISE(ABORT, 'disableThoughtLogging is true or false; sessionPartitionGranularity is monthly, weekly, daily or none; createdAt is a timestamp such as 2026-11-23T08:42:10.000Z');
END;

CREATE TRIGGER config_checked_update BEFORE UPDATE OF key, value ON config
WHEN (new.key = 'disableThoughtLogging' AND new.value NOT IN ('true', 'false'))
  OR (new.key = 'sessionPartitionGranularity' AND new.value NOT IN ('monthly', 'weekly', 'daily', 'none'))
  OR (new.key = 'createdAt' AND new.value NOT GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z')
BEGIN
    SELECT RAISE(ABORT, 'disableThoughtLogging is true or false; sessionPartitionGranularity is monthly, weekly, daily or none; createdAt is a timestamp such as 2026-11-23T08:42:10.000Z');
END;

-- The views gain what questions at the sqlite3 prompt kept needing.
-- thought_view: `id`, the order thoughts were recorded in (timestamps tie
-- within a millisecond), and the revision and branch links.
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
    t.created_at,
    t.id,
    t.revises_node,
    t.branch_origin
FROM thoughts AS t
JOIN sessions AS s ON s.id = t.session_id;

-- session_view: the session's project (the name of its first `project:` tag).
DROP VIEW session_view;
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
