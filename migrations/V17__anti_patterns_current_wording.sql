-- thoughtbox schema, version 17: learnings in their current wording, once.
--
-- Anti-patterns extract_learnings saved before their description read "An
-- anti-pattern" read "A anti-pattern"; saving one again matched both
-- spellings on every save. They now read the current way, and a save
-- compares descriptions exactly. (Anti-patterns headed "Avoid:" with the
-- correction or the moment's summary, or with the thought revised as their
-- source, were rewritten just before this migration, in Rust: their new
-- title is a cut of a quoted line, their file name a slug of it; see
-- src/store/knowledge/legacy.rs.) `updated_at` stays: nothing was learnt.
UPDATE knowledge_patterns
SET description = 'An anti-pattern ' || substr(description, 16)
WHERE created_by = 'extract_learnings' AND substr(description, 1, 15) = 'A anti-pattern ';
