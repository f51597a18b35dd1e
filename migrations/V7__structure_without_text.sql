-- thoughtbox schema, version 7: reads of a session's shape that never touch
-- the thought rows (and the text inside them).
--
-- `get_structure` lists a session's revisions: with no index naming them it
-- read every thought row of the session, text and all (10 ms for 20,000
-- thoughts, growing with the session). `thoughts_revising` holds an entry
-- for revisions only, so an append that revises nothing writes nothing more.
CREATE INDEX thoughts_revising ON thoughts (session_id, id) WHERE revises_thought IS NOT NULL;

-- "Does a thought of this chain follow this node?" (an append checking the
-- chain's tail; a thought put back by hand) read every thought following the
-- node, of every branch forked from it. With the branch in the index the
-- answer is one lookup; the node's next thoughts (what `next` lists) are
-- still found by the index's first column.
DROP INDEX thoughts_by_prev;
CREATE INDEX thoughts_by_prev ON thoughts (prev_node, branch_id) WHERE prev_node IS NOT NULL;
