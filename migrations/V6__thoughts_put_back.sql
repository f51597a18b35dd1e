-- Version 6: a thought put back by hand (from a backup, under its old id)
-- takes its place in the chain again.
--
-- Deleting a thought links the one after it to the one before it
-- (thoughts_deleted). Inserting the thought again gave the one before it
-- two next thoughts, and left the re-inserted one a dead end. Now the
-- thought of the same chain that follows the same node as the one put back
-- follows the one put back instead. Appends never meet this: their id is
-- above every other (the WHEN clause), and nothing follows a chain's tail.
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
