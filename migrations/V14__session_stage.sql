-- thoughtbox schema, version 14: the stage travels with the session.
--
-- MCP 2026-07-28 has no protocol sessions: a client may open a new
-- connection (or interleave conversations on one) and carry only the
-- session id it was given. The stage a session has reached (CORE-CONCEPTS'
-- four stages) is therefore kept on the session too, so that an agent
-- returning with its sessionId need not walk the staged flow again. It never
-- goes down: writers raise it with max().
--
-- Every existing session was opened by start_new, load_context or its first
-- thought (stage 1 at least); one with thoughts had the cipher (stage 2).
ALTER TABLE sessions ADD COLUMN stage INTEGER NOT NULL DEFAULT 1 CHECK (stage BETWEEN 0 AND 3);
UPDATE sessions SET stage = 2 WHERE thought_count > 0;
