-- thoughtbox schema, version 11: a thought's revision is kept twice, as
-- `revises_thought` (the number answers show: read_thoughts, revisesThought
-- in exports) and `revises_node` (the node id that structure, revisedBy,
-- deep_analysis and thought_latest_view follow). Rows written by hand must
-- keep the two naming the same thought.
--
-- Before this version `UPDATE thoughts SET revises_thought = 2 ...` (or a
-- `revises_node` set to another thought, another chain's or another
-- session's) was accepted: read_thoughts then showed one revision while the
-- structure and thought_latest_view followed another, and the session's
-- export no longer imported. The server writes `revises_node` as the node
-- id of thought `revises_thought` of the thought's own chain,
-- session_id:revises_thought on the main chain and
-- session_id:branch_id:revises_thought on a branch, both NULL when the
-- thought revises none, and never lets a thought revise itself. Inserts
-- and changes of either column are checked against that from the row
-- alone, with no lookup: every append of the server runs the insert
-- trigger. Whether the revised thought exists is not checked here
-- (thought_latest_view lists a revision of a missing thought as an
-- original of its own, and an import refuses it). Rows already in a ledger
-- are left as they are; `thoughtbox repair` names them.

CREATE TRIGGER thoughts_revision_checked_insert BEFORE INSERT ON thoughts
WHEN new.revises_node IS NOT new.session_id || ':' || coalesce(new.branch_id || ':', '') || new.revises_thought
  OR new.revises_thought IS new.thought_number
BEGIN
    SELECT RAISE(ABORT, 'revises_node names the thought revises_thought names, of the thought''s own chain: session_id:revises_thought on the main chain, session_id:branch_id:revises_thought on a branch (both NULL when it revises none); a thought cannot revise itself');
END;

-- A number out of range is left to version 5's trigger, whose message says so.
CREATE TRIGGER thoughts_revision_checked_update BEFORE UPDATE OF revises_thought, revises_node ON thoughts
WHEN (new.revises_node IS NOT new.session_id || ':' || coalesce(new.branch_id || ':', '') || new.revises_thought
      OR new.revises_thought IS new.thought_number)
 AND coalesce(new.revises_thought BETWEEN 1 AND 2147483647, 1)
BEGIN
    SELECT RAISE(ABORT, 'revises_node names the thought revises_thought names, of the thought''s own chain: session_id:revises_thought on the main chain, session_id:branch_id:revises_thought on a branch (both NULL when it revises none); a thought cannot revise itself');
END;
