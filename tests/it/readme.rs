//! The README's example SQL queries run against a real ledger and return rows.

use serde_json::json;

use crate::common::*;

fn readme_sql_blocks() -> Vec<String> {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).expect("README.md");
    let section = readme.split("## Database and schema").nth(1).expect("schema section");
    let section = section.split("\n## ").next().unwrap_or(section);
    section
        .split("```sql")
        .skip(1)
        .map(|block| block.split("```").next().unwrap_or("").trim().to_string())
        .collect()
}

#[tokio::test]
async fn readme_queries_work() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    s.ready("README ledger").await;
    for n in 1..=3 {
        s.thought(t(&format!("main thought {n}"))).await;
    }
    s.thought(json!({ "thought": "a branch", "branchId": "alt", "branchFromThought": 2, "nextThoughtNeeded": true }))
        .await;
    s.thought(json!({ "thought": "a revision of 1", "revisesThought": 1, "nextThoughtNeeded": false }))
        .await;
    s.stop().await;

    let blocks = readme_sql_blocks();
    assert_eq!(blocks.len(), 5, "the README shows five example queries");
    let conn = rusqlite::Connection::open(&db).unwrap();
    for sql in blocks {
        let mut stmt = conn.prepare(&sql).unwrap_or_else(|e| panic!("{sql}\n{e}"));
        let rows = stmt.query_map([], |_| Ok(())).unwrap().count();
        assert!(rows > 0, "no rows from:\n{sql}");
    }
}
