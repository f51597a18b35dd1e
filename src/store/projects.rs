//! Project navigation over session tags (`project:`, `task:`, `aspect:`).

use rusqlite::ToSql;

use super::Store;
use crate::error::Result;

impl Store {
    /// The values of tags starting with `prefix` (e.g. `task:`) among the
    /// sessions that carry every tag of `within`, with how many sessions
    /// carry each, most common first.
    pub fn tag_values(&self, within: &[String], prefix: &str) -> Result<Vec<(String, u64)>> {
        let mut within = within.to_vec();
        within.sort();
        within.dedup();
        // Tags are compared as text: [prefix, prefix with its last byte + 1) is
        // exactly "starts with prefix", and uses the (tag, session) index.
        let mut upper = prefix.as_bytes().to_vec();
        if let Some(last) = upper.last_mut() {
            *last = last.saturating_add(1);
        }
        let upper = String::from_utf8_lossy(&upper).into_owned();
        // Each tag row under the prefix, checked for the tags it must be
        // within through the (session, tag) index: the cost follows the
        // rows under the prefix, not how many sessions the scope holds.
        let scope: String = (1..=within.len())
            .map(|i| {
                format!(
                    " AND EXISTS (SELECT 1 FROM session_tags AS w WHERE w.tag = ?{i} AND w.session_id = t.session_id)"
                )
            })
            .collect();
        let sql = format!(
            "SELECT substr(t.tag, ?{a}), count(*) AS n FROM session_tags AS t
             WHERE t.tag >= ?{b} AND t.tag < ?{c}{scope}
             GROUP BY t.tag ORDER BY n DESC, t.tag",
            a = within.len() + 1,
            b = within.len() + 2,
            c = within.len() + 3,
        );
        let start = (prefix.chars().count() + 1) as i64;
        let mut params: Vec<&dyn ToSql> = within.iter().map(|t| t as &dyn ToSql).collect();
        params.push(&start);
        params.push(&prefix);
        params.push(&upper);
        self.read(|tx| {
            Ok(tx
                .prepare_cached(&sql)?
                .query_map(params.as_slice(), |r| {
                    Ok((r.get(0)?, r.get::<_, i64>(1)?.max(0) as u64))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::domain::NewSession;
    use crate::store::test_support::temp_store;

    #[test]
    fn task_values_within_a_project() {
        let (_d, store) = temp_store();
        for tags in [
            vec!["project:a", "task:x"],
            vec!["project:a", "task:x", "aspect:perf"],
            vec!["project:a", "task:y"],
            vec!["project:b", "task:z"],
        ] {
            store
                .create_session(NewSession {
                    title: "s".into(),
                    tags: tags.into_iter().map(String::from).collect(),
                    ..Default::default()
                })
                .unwrap();
        }
        let tasks = store.tag_values(&["project:a".into()], "task:").unwrap();
        assert_eq!(tasks, [("x".to_string(), 2), ("y".to_string(), 1)]);
        let aspects = store
            .tag_values(&["project:a".into(), "task:x".into()], "aspect:")
            .unwrap();
        assert_eq!(aspects, [("perf".to_string(), 1)]);
        assert_eq!(store.tag_values(&[], "project:").unwrap().len(), 2);
    }
}
