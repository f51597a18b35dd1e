-- thoughtbox schema, version 2: the knowledge garden (patterns and scratchpad
-- notes) and a record of critique requests.
--
-- Same conventions as version 1: STRICT tables, ISO 8601 UTC timestamps as
-- text, JSON arrays as text checked with json_valid.

-- A thought whose author asked for a critique (`critique: true`), whether or
-- not the client could give one. A stored critique implies a request.
ALTER TABLE thoughts ADD COLUMN critique_requested INTEGER NOT NULL DEFAULT 0
    CHECK (critique_requested IN (0, 1));
UPDATE thoughts SET critique_requested = 1 WHERE critique IS NOT NULL;

-- Reusable reasoning patterns (KnowledgePattern). `id` is a slug of the title
-- at creation and never changes, so URIs stay valid when the title does.
-- `seq` is the stable integer key used by the full-text index.
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

CREATE INDEX knowledge_patterns_by_updated ON knowledge_patterns (updated_at);
CREATE INDEX knowledge_patterns_by_created ON knowledge_patterns (created_at);
CREATE INDEX knowledge_patterns_by_title   ON knowledge_patterns (title COLLATE NOCASE);

-- Pattern tags, one row each, so that "has all of these tags" is an index lookup.
CREATE TABLE knowledge_pattern_tags (
    pattern_id TEXT NOT NULL REFERENCES knowledge_patterns (id) ON DELETE CASCADE,
    tag        TEXT NOT NULL,
    PRIMARY KEY (tag, pattern_id)
) STRICT, WITHOUT ROWID;

CREATE INDEX knowledge_pattern_tags_by_pattern ON knowledge_pattern_tags (pattern_id);

-- Scratchpad notes (ScratchpadNote): one per topic slug, overwritten in place.
CREATE TABLE scratchpad_notes (
    seq        INTEGER PRIMARY KEY,
    id         TEXT NOT NULL UNIQUE CHECK (length(id) BETWEEN 1 AND 80 AND id NOT GLOB '*[^a-z0-9-]*'),
    title      TEXT NOT NULL CHECK (length(title) BETWEEN 1 AND 200),
    content    TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
) STRICT;

CREATE INDEX scratchpad_notes_by_updated ON scratchpad_notes (updated_at);

-- Full-text indexes over both, kept in sync by triggers (knowledge is written
-- rarely, so the triggers cost nothing that matters).
CREATE VIRTUAL TABLE knowledge_patterns_fts USING fts5 (
    title,
    description,
    tags,
    content,
    content = 'knowledge_patterns',
    content_rowid = 'seq',
    tokenize = 'unicode61 remove_diacritics 2'
);

CREATE TRIGGER knowledge_patterns_fts_insert AFTER INSERT ON knowledge_patterns BEGIN
    INSERT INTO knowledge_patterns_fts (rowid, title, description, tags, content)
    VALUES (new.seq, new.title, new.description, new.tags, new.content);
END;

CREATE TRIGGER knowledge_patterns_fts_delete AFTER DELETE ON knowledge_patterns BEGIN
    INSERT INTO knowledge_patterns_fts (knowledge_patterns_fts, rowid, title, description, tags, content)
    VALUES ('delete', old.seq, old.title, old.description, old.tags, old.content);
END;

CREATE TRIGGER knowledge_patterns_fts_update AFTER UPDATE OF title, description, tags, content ON knowledge_patterns BEGIN
    INSERT INTO knowledge_patterns_fts (knowledge_patterns_fts, rowid, title, description, tags, content)
    VALUES ('delete', old.seq, old.title, old.description, old.tags, old.content);
    INSERT INTO knowledge_patterns_fts (rowid, title, description, tags, content)
    VALUES (new.seq, new.title, new.description, new.tags, new.content);
END;

CREATE VIRTUAL TABLE scratchpad_notes_fts USING fts5 (
    title,
    content,
    content = 'scratchpad_notes',
    content_rowid = 'seq',
    tokenize = 'unicode61 remove_diacritics 2'
);

CREATE TRIGGER scratchpad_notes_fts_insert AFTER INSERT ON scratchpad_notes BEGIN
    INSERT INTO scratchpad_notes_fts (rowid, title, content) VALUES (new.seq, new.title, new.content);
END;

CREATE TRIGGER scratchpad_notes_fts_delete AFTER DELETE ON scratchpad_notes BEGIN
    INSERT INTO scratchpad_notes_fts (scratchpad_notes_fts, rowid, title, content)
    VALUES ('delete', old.seq, old.title, old.content);
END;

CREATE TRIGGER scratchpad_notes_fts_update AFTER UPDATE OF title, content ON scratchpad_notes BEGIN
    INSERT INTO scratchpad_notes_fts (scratchpad_notes_fts, rowid, title, content)
    VALUES ('delete', old.seq, old.title, old.content);
    INSERT INTO scratchpad_notes_fts (rowid, title, content) VALUES (new.seq, new.title, new.content);
END;

-- Views for people using sqlite3.

-- Patterns with readable tag lists and how many sessions they came from.
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

-- Notes without their (possibly long) content.
CREATE VIEW note_view AS
SELECT id, title, length(content) AS content_chars, created_at, updated_at
FROM scratchpad_notes;
