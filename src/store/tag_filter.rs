//! "Carries every one of these tags", for a list sorted and cut to a page
//! (sessions, knowledge patterns).
//!
//! Which plan is fast depends on how many rows carry the tags. A rare tag's
//! rows are few: start from them and sort what they name. A common tag (a
//! server's `project:` tag is on most of its sessions) would make that sort
//! the whole table for every page; there it is faster to walk the rows in
//! the list's order and check each one's tags, stopping once the page is
//! full. The tag table's key (tag, owner) answers both "which rows carry
//! this tag" and "does this row carry it" from its index. Choosing counts
//! each tag's entries in that key, which costs a fraction of counting the
//! matches for the page's `total`.

use rusqlite::{Connection, params};

use crate::error::Result;

/// Where a kind of row keeps its tags.
pub(crate) struct TagTable {
    /// The table of (tag, owner) pairs, keyed by both.
    pub table: &'static str,
    /// Its column naming the owner.
    pub owner: &'static str,
    /// The owner's id in the listing query (`s.id`).
    pub id: &'static str,
    /// The owners' table and its INTEGER PRIMARY KEY, whose largest value
    /// estimates how many rows there are without counting them.
    pub rows: &'static str,
    pub seq: &'static str,
}

/// The clauses of a tag filter, one `?` each, for [`TagClauses::values`] in
/// order: `page` for the query that sorts and takes one page, `count` for
/// the one that counts every match, and `count_alone`, a whole query
/// counting the matches from the tag table only (when the tags are the
/// whole filter; `None` without tags).
pub(crate) struct TagClauses {
    pub page: Vec<String>,
    pub count: Vec<String>,
    pub count_alone: Option<CountAlone>,
    pub values: Vec<String>,
}

/// How many rows carry every tag, when the tags are the whole filter.
pub(crate) enum CountAlone {
    /// Already counted (a single tag).
    Known(i64),
    /// This query counts them, with [`TagClauses::values`].
    Query(String),
}

impl TagClauses {
    /// The number of matches: from the tag table alone when the tags are the
    /// whole filter (`others_empty`), else with `count_sql` (a count over
    /// the owners with [`TagClauses::count`] and the other clauses) and its
    /// parameters.
    pub fn total(
        &self,
        tx: &Connection,
        others_empty: bool,
        count_sql: &str,
        params: &[&dyn rusqlite::ToSql],
    ) -> Result<i64> {
        if others_empty && let Some(n) = self.count_alone(tx)? {
            return Ok(n);
        }
        Ok(tx.prepare_cached(count_sql)?.query_row(params, |r| r.get(0))?)
    }

    /// The number of matches, when the tags are the whole filter and this
    /// needs no owner row: `None` otherwise.
    pub fn count_alone(&self, tx: &Connection) -> Result<Option<i64>> {
        Ok(match &self.count_alone {
            None => None,
            Some(CountAlone::Known(n)) => Some(*n),
            Some(CountAlone::Query(sql)) => Some(
                tx.prepare_cached(sql)?
                    .query_row(rusqlite::params_from_iter(&self.values), |r| r.get(0))?,
            ),
        })
    }
}

impl TagTable {
    /// For each tag of `tags` that no row carries, the tags rows do carry
    /// that differ from it only in letter case (tags match exactly): what
    /// an agent that recalled `Q3 Plan` for `q3 plan` meant. Reads every
    /// distinct tag, so it is for a filter that matched nothing.
    pub fn other_spellings(&self, tx: &Connection, tags: &[String]) -> Result<Vec<(String, Vec<String>)>> {
        let mut exists = tx.prepare_cached(&format!("SELECT 1 FROM {} WHERE tag = ?1 LIMIT 1", self.table))?;
        let mut missing: Vec<(String, String)> = Vec::new();
        for t in tags {
            if !exists.exists([t])? && !missing.iter().any(|(m, _)| m == t) {
                missing.push((t.clone(), t.to_lowercase()));
            }
        }
        let mut out: Vec<(String, Vec<String>)> = missing.iter().map(|(t, _)| (t.clone(), Vec::new())).collect();
        if missing.is_empty() {
            return Ok(out);
        }
        let mut all = tx.prepare_cached(&format!("SELECT DISTINCT tag FROM {} ORDER BY tag", self.table))?;
        let mut rows = all.query([])?;
        while let Some(row) = rows.next()? {
            let tag: String = row.get(0)?;
            let lower = tag.to_lowercase();
            for (i, (_, want)) in missing.iter().enumerate() {
                if lower == *want {
                    out[i].1.push(tag.clone());
                }
            }
        }
        out.retain(|(_, found)| !found.is_empty());
        Ok(out)
    }

    /// The clauses for rows carrying every tag of `tags` (deduplicated),
    /// when the page ends `wanted` rows into the list (offset + limit).
    pub fn clauses(&self, tx: &Connection, tags: &[String], wanted: u64) -> Result<TagClauses> {
        let mut tags = tags.to_vec();
        tags.sort();
        tags.dedup();
        // Walking the list in order meets a row carrying a tag held by m of
        // n rows every n / m rows, so filling the page reads about
        // wanted * n / m rows; starting from the tag's rows sorts m of them.
        // The walk wins once m * m > wanted * n.
        let rows: i64 = tx
            .prepare_cached(&format!("SELECT max({}) FROM {}", self.seq, self.rows))?
            .query_row([], |r| r.get::<_, Option<i64>>(0))?
            .unwrap_or(0);
        let common = ((wanted.max(1) as f64) * (rows.max(1) as f64)).sqrt().ceil() as i64 + 1;
        // Each tag's rows counted along the key, without reading the rows
        // they name: the rarest starts the count of matches, which reads
        // that many rows anyway. Beside another tag, a tag is counted only
        // up to `common` at first: past it, it is not the one to start from
        // unless they all are (a server's `project:` tag on every one of
        // its sessions was counted whole for every list). Alone, its count is
        // the list's total.
        let mut counted = Vec::with_capacity(tags.len());
        {
            let mut count = tx.prepare_cached(&format!(
                "SELECT count(*) FROM (SELECT 1 FROM {} WHERE tag = ?1 LIMIT ?2)",
                self.table
            ))?;
            let cap = if tags.len() == 1 { -1 } else { common };
            for tag in tags {
                let n: i64 = count.query_row(params![tag, cap], |r| r.get(0))?;
                counted.push((n, tag));
            }
            // Every one common: the rarest of them drives the count, found
            // counting each no further than the rarest so far.
            if counted.len() > 1 && counted.iter().all(|(n, _)| *n >= common) {
                let mut rarest = i64::MAX;
                for (n, tag) in &mut counted {
                    // One past: a tag cut short there counts as rarer
                    // than none that was counted whole.
                    let cap = if rarest == i64::MAX { -1 } else { rarest + 1 };
                    *n = count.query_row(params![&*tag, cap], |r| r.get(0))?;
                    rarest = rarest.min(*n);
                }
            }
        }
        // Rarest first: the counting query starts from its rows.
        counted.sort();
        let drive = format!(
            "{} IN (SELECT {} FROM {} WHERE tag = ?)",
            self.id, self.owner, self.table
        );
        let probe = format!(
            "EXISTS (SELECT 1 FROM {t} AS tf WHERE tf.tag = ? AND tf.{o} = {id})",
            t = self.table,
            o = self.owner,
            id = self.id
        );
        let walk = counted.first().is_some_and(|(n, _)| *n >= common);
        // Counting needs no owner row: the rarest tag's rows, each checked
        // for the other tags.
        // One tag: its entries were just counted.
        let count_alone = (!counted.is_empty()).then(|| {
            if let [(n, _)] = counted.as_slice() {
                return CountAlone::Known(*n);
            }
            let others = format!(
                "EXISTS (SELECT 1 FROM {t} AS tf WHERE tf.tag = ? AND tf.{o} = tr.{o})",
                t = self.table,
                o = self.owner
            );
            let mut sql = format!("SELECT count(*) FROM {} AS tr WHERE tr.tag = ?", self.table);
            for _ in 1..counted.len() {
                sql.push_str(" AND ");
                sql.push_str(&others);
            }
            CountAlone::Query(sql)
        });
        let mut clauses = TagClauses {
            page: Vec::new(),
            count: Vec::new(),
            count_alone,
            values: Vec::new(),
        };
        for (i, (_, tag)) in counted.into_iter().enumerate() {
            let first = i == 0;
            clauses.count.push(if first { drive.clone() } else { probe.clone() });
            clauses
                .page
                .push(if first && !walk { drive.clone() } else { probe.clone() });
            clauses.values.push(tag);
        }
        Ok(clauses)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SESSIONS: TagTable = TagTable {
        table: "session_tags",
        owner: "session_id",
        id: "s.id",
        rows: "sessions",
        seq: "seq",
    };

    fn ledger(tagged: &[(&str, &[&str])]) -> Connection {
        let c = Connection::open_in_memory().unwrap();
        c.execute_batch(
            "CREATE TABLE sessions (seq INTEGER PRIMARY KEY, id TEXT UNIQUE);
             CREATE TABLE session_tags (tag TEXT, session_id TEXT, PRIMARY KEY (tag, session_id)) WITHOUT ROWID;",
        )
        .unwrap();
        for (id, tags) in tagged {
            c.execute("INSERT INTO sessions (id) VALUES (?1)", [id]).unwrap();
            for t in *tags {
                c.execute("INSERT INTO session_tags VALUES (?1, ?2)", [t, id]).unwrap();
            }
        }
        c
    }

    fn tags(t: &[&str]) -> Vec<String> {
        t.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_rarest_tag_comes_first_and_a_common_one_is_walked() {
        let mut rows: Vec<(String, Vec<&str>)> = (0..400).map(|i| (format!("s{i}"), vec!["common"])).collect();
        rows[7].1.push("rare");
        let owned: Vec<(&str, &[&str])> = rows.iter().map(|(id, t)| (id.as_str(), t.as_slice())).collect();
        let c = ledger(&owned);
        // rare (1 of 400) drives; common is checked row by row.
        let k = SESSIONS.clauses(&c, &tags(&["common", "rare", "rare"]), 20).unwrap();
        assert_eq!(k.values, tags(&["rare", "common"]));
        assert!(k.page[0].starts_with("s.id IN"), "{:?}", k.page);
        assert!(k.page[1].starts_with("EXISTS"), "{:?}", k.page);
        // common alone (400 of 400 > sqrt(20 * 400) = 90): walked for the
        // page, counted from its rows.
        let k = SESSIONS.clauses(&c, &tags(&["common"]), 20).unwrap();
        assert!(k.page[0].starts_with("EXISTS"), "{:?}", k.page);
        assert!(k.count[0].starts_with("s.id IN"), "{:?}", k.count);
    }

    /// Counting stops early where the count cannot matter, and still finds
    /// the rarest tag to start from, whichever name sorts first.
    #[test]
    fn the_rarest_of_common_tags_drives_the_count() {
        for (more, fewer) in [("a-many", "b-fewer"), ("b-many", "a-fewer")] {
            let rows: Vec<(String, Vec<&str>)> = (0..400)
                .map(|i| {
                    let mut t = vec![more];
                    if i % 4 != 0 {
                        t.push(fewer);
                    }
                    (format!("s{i}"), t)
                })
                .collect();
            let owned: Vec<(&str, &[&str])> = rows.iter().map(|(id, t)| (id.as_str(), t.as_slice())).collect();
            let c = ledger(&owned);
            // 300 and 400 of 400, both past sqrt(20 * 400) = 90: both walked
            // for the page, the count starting from the 300.
            let k = SESSIONS.clauses(&c, &tags(&[more, fewer]), 20).unwrap();
            assert_eq!(k.values, tags(&[fewer, more]));
            assert!(k.page.iter().all(|p| p.starts_with("EXISTS")), "{:?}", k.page);
            assert!(k.count[0].starts_with("s.id IN"), "{:?}", k.count);
            assert_eq!(k.count_alone(&c).unwrap(), Some(300));
            // Beside a tag under the bar, the common one is not counted whole,
            // and the rare one drives both.
            c.execute("INSERT INTO session_tags VALUES ('rare', 's9')", []).unwrap();
            let k = SESSIONS.clauses(&c, &tags(&[more, "rare", fewer]), 20).unwrap();
            assert_eq!(k.values[0], "rare");
            assert!(k.page[0].starts_with("s.id IN"), "{:?}", k.page);
            assert_eq!(k.count_alone(&c).unwrap(), Some(1));
        }
    }

    #[test]
    fn tags_that_differ_only_in_letter_case_are_found_for_a_missing_one() {
        let c = ledger(&[
            ("s1", &["q3 plan", "Äpfel"]),
            ("s2", &["Q3 plan", "db"]),
            ("s3", &["q3 plan"]),
        ]);
        let found = SESSIONS
            .other_spellings(&c, &tags(&["Q3 PLAN", "db", "äpfel", "nothing"]))
            .unwrap();
        assert_eq!(
            found,
            [
                ("Q3 PLAN".to_string(), tags(&["Q3 plan", "q3 plan"])),
                ("äpfel".to_string(), tags(&["Äpfel"]))
            ]
        );
        assert!(
            SESSIONS
                .other_spellings(&c, &tags(&["db", "q3 plan"]))
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn both_forms_select_the_same_rows() {
        let rows: Vec<(String, Vec<&str>)> = (0..300)
            .map(|i| {
                let mut t = vec!["a"];
                if i % 3 == 0 {
                    t.push("b");
                }
                if i % 50 == 0 {
                    t.push("c");
                }
                (format!("s{i:03}"), t)
            })
            .collect();
        let owned: Vec<(&str, &[&str])> = rows.iter().map(|(id, t)| (id.as_str(), t.as_slice())).collect();
        let c = ledger(&owned);
        for (wanted, filter) in [
            (20, vec!["a", "b"]),
            (20, vec!["c", "a"]),
            (1000, vec!["b"]),
            (5, vec!["zzz", "a"]),
        ] {
            let k = SESSIONS.clauses(&c, &tags(&filter), wanted).unwrap();
            let select = |clauses: &[String]| -> Vec<String> {
                let sql = format!(
                    "SELECT s.id FROM sessions AS s WHERE {} ORDER BY s.id",
                    clauses.join(" AND ")
                );
                let mut stmt = c.prepare(&sql).unwrap();
                stmt.query_map(rusqlite::params_from_iter(&k.values), |r| r.get(0))
                    .unwrap()
                    .collect::<rusqlite::Result<_>>()
                    .unwrap()
            };
            let expected: Vec<String> = rows
                .iter()
                .filter(|(_, t)| filter.iter().all(|f| t.contains(f)))
                .map(|(id, _)| id.clone())
                .collect();
            assert_eq!(select(&k.page), expected, "{filter:?}");
            assert_eq!(select(&k.count), expected, "{filter:?}");
            let alone = k.count_alone(&c).unwrap().unwrap();
            assert_eq!(alone as usize, expected.len(), "{filter:?}");
        }
    }
}
