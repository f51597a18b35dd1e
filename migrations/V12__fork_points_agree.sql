-- thoughtbox schema, version 12: a branch's fork point, the install id and
-- critiques written by hand keep the form every reader, export and import
-- relies on (review 19).
--
-- Found by writing rows with `sqlite3`:
--   * `UPDATE thoughts SET branch_origin = ...` on a branch thought (or on a
--     main-chain thought), and a branch thought inserted without
--     branch_origin, were accepted; `repair` passed them and `export` wrote
--     sessions that `import` refuses ("a branch has one fork point", "a
--     main-chain thought cannot have branchOrigin", "fork point: none
--     given");
--   * a branch thought inserted by hand, fully linked, was invisible until
--     `repair` (no branch row). It still is (see below why); `repair`
--     gives the branch its row;
--   * `DELETE FROM config WHERE key = 'installId'` made two ledgers look
--     like the same one to `backup`, which then replaced the other one;
--   * a critique of another shape (`{"text": 1}`) was accepted and then
--     silently left out of every read and export.
--
-- The fork point is kept in three places, as the server writes them: a
-- branch thought's `branch_from_thought` (the number of the main-chain
-- thought its branch forks from) and `branch_origin` (that thought's node
-- id, session_id:branch_from_thought), on every thought of the branch, and
-- the branch row's `from_thought` and `origin_node`. A main-chain thought has
-- neither. The triggers below refuse any row that disagrees; their
-- conditions exclude one another, so that each row gets the one message that
-- says what is wrong with it.
--
-- Cost on the append path. SQLite runs every trigger of an INSERT as a
-- sub-program, WHEN clause included, and allocates its registers and
-- cursor slots even when its WHEN is false: the checks of an insert are
-- therefore one trigger (thoughts_fork_checked_insert), a statement per
-- message, with a WHEN clause a main-chain append does not meet, and none
-- runs after an insert: five checking triggers and one giving a branch its
-- row had cost ~11,500 instructions per append (callgrind over the store
-- bench's appends). A main-chain append
-- evaluates the WHEN clause on the new row alone (no lookup); a branch
-- append adds lookups of its branch row by primary key (pages the append
-- reads anyway). The server writes a new branch's row before its first
-- thought (as imports do), so the lookups of other thoughts and of the fork
-- thought run only for rows written by hand. Rows already in a ledger are
-- left as they are; `thoughtbox repair` names them with the statements that
-- mend them.


-- On insert: each statement refuses one kind of row, with its message.
--   * A main-chain thought forks from nothing.
--   * A branch thought names its fork point both ways, and the two agree.
--   * A branch has one fork point: the branch row's, or (a branch whose row
--     is missing, in a ledger from before this version) that of its first
--     thought that names one.
--   * A new branch forks from a thought of its session's main chain.
--   * A critique is what the server stores (crate::domain::Critique): an
--     object with the text, the model that wrote it and the time, as
--     strings, the time in the server's form; any other shape was left out
--     of reads and exports. (Invalid JSON is left to the column's CHECK.)
--     Appends store none: the server adds a critique by UPDATE.
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

-- A branch thought inserted by hand without its branch row (the first
-- thought of a new branch, or a branch put back from a backup) gets no row
-- from a trigger: an AFTER INSERT trigger costs every append its frame (a
-- sub-program's registers and cursor slots are allocated before its WHEN
-- clause is tested), ~4,000 instructions for a case only `sqlite3` meets.
-- `thoughtbox repair` gives such a branch its row (and the session its
-- count), as it did before this version.

-- The same checks on a change of either column, in one trigger as on
-- insert. An out-of-range number is left to
-- version 5's trigger, whose message says so. A thought of a branch whose
-- row is missing (a ledger from before this version) is not compared with
-- the branch's other thoughts, which may name fork points that are gone: the
-- first one given a sound fork point gives the branch its row
-- (thoughts_branch_begun_update below), and the others are then held to it,
-- so that one UPDATE of the whole branch mends it.
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

-- A branch row written by hand names its fork point as its thoughts do.
-- (Its columns cannot change afterwards: branches_ids_fixed.)
CREATE TRIGGER branches_checked_insert BEFORE INSERT ON branches
WHEN new.origin_node IS NOT new.session_id || ':' || new.from_thought
  OR NOT EXISTS (SELECT 1 FROM thoughts WHERE node_id = new.origin_node AND branch_id IS NULL)
BEGIN
    SELECT RAISE(ABORT, 'a branch forks from a thought of its session''s main chain, named by from_thought (its number) and origin_node (session_id:from_thought)');
END;


-- A thought of a branch whose row is missing (a ledger from before this
-- version), given its fork point by hand, gives the branch its row: the
-- branch's first thought's time and its newest thought as the tail.
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

-- The install id tells this ledger from every other: `backup` replaces a
-- file only when it holds an earlier backup of the same ledger. Missing or
-- blank, two ledgers looked alike.
CREATE TRIGGER config_install_id_kept BEFORE DELETE ON config
WHEN old.key = 'installId'
BEGIN
    SELECT RAISE(ABORT, 'installId cannot be deleted: it tells this ledger from others (a backup replaces only an earlier backup of the same ledger)');
END;

CREATE TRIGGER config_install_id_checked_insert BEFORE INSERT ON config
WHEN new.key = 'installId' AND trim(new.value, ' ' || char(9, 10, 13)) = ''
BEGIN
    SELECT RAISE(ABORT, 'installId cannot be blank: it tells this ledger from others (a backup replaces only an earlier backup of the same ledger)');
END;

CREATE TRIGGER config_install_id_checked_update BEFORE UPDATE OF key, value ON config
WHEN (old.key = 'installId' AND new.key IS NOT 'installId')
  OR (new.key = 'installId' AND trim(new.value, ' ' || char(9, 10, 13)) = '')
BEGIN
    SELECT RAISE(ABORT, 'installId cannot be blank or renamed: it tells this ledger from others (a backup replaces only an earlier backup of the same ledger)');
END;


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
