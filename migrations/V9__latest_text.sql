-- thoughtbox schema, version 9: the text each thought has once its
-- revisions are taken into account, and thought text written by hand held to
-- the server's limit.
--
-- A thought longer than 1 MiB (1,048,576 bytes of UTF-8, the limit the
-- gateway and every import hold to) inserted or written by hand made its
-- session's export one that no import would take back (review 15-b).

CREATE TRIGGER thoughts_text_checked_insert BEFORE INSERT ON thoughts
WHEN length(CAST(new.thought AS BLOB)) > 1048576
BEGIN
    SELECT RAISE(ABORT, 'a thought is at most 1 MiB of text (1048576 bytes of UTF-8), as the server and imports require');
END;

CREATE TRIGGER thoughts_text_checked_update BEFORE UPDATE OF thought ON thoughts
WHEN length(CAST(new.thought AS BLOB)) > 1048576
BEGIN
    SELECT RAISE(ABORT, 'a thought is at most 1 MiB of text (1048576 bytes of UTF-8), as the server and imports require');
END;

-- thought_latest_view: each thought that is not itself a revision, with the
-- newest text recorded for it. A revision is a thought of its own (with its
-- own number) naming the thought it revises; a revision may be revised in
-- turn. The newest thought anywhere in that tree gives `latest_thought` and
-- `latest_node` (the thought itself when nothing revised it); `revisions`
-- counts the tree's revisions. Filter on session_id: the walk runs per row,
-- through the index on revises_node. (Each thought revises at most one, so
-- the walk from an original never meets a loop: revision links set by hand
-- into one leave those thoughts out of the view.)
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
    )
    SELECT max(id) FROM tree)
WHERE t.revises_node IS NULL;
