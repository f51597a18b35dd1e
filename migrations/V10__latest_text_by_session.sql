-- thoughtbox schema, version 10: thought_latest_view as version 9 made it,
-- with two cases of links edited by hand put right (review 16-c):
--   * a revision whose revised thought is gone (its revises_node names no
--     thought of its session) was in the view neither as an original nor as
--     a revision; it is now an original of its own;
--   * a revision link set by hand to another session's thought pulled that
--     session's text into latest_thought; the walk now stays in the session.

DROP VIEW thought_latest_view;
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
