//! docs/schema.md against the ledger the migrations build: its example
//! queries return rows, and docs/schema.sql is the schema itself.

use serde_json::json;

use crate::common::*;

const SCHEMA_MD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/schema.md");
const SCHEMA_SQL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/schema.sql");

fn example_queries() -> Vec<String> {
    let doc = std::fs::read_to_string(SCHEMA_MD).expect("docs/schema.md");
    doc.split("```sql")
        .skip(1)
        .map(|block| block.split("```").next().unwrap_or("").trim().to_string())
        .collect()
}

/// Every table, index, view and trigger, as `SELECT sql FROM sqlite_schema`
/// gives them, in a stable order.
fn schema_of(db: &std::path::Path) -> String {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT type, name, sql FROM sqlite_schema WHERE sql IS NOT NULL \
             ORDER BY CASE type WHEN 'table' THEN 0 WHEN 'index' THEN 1 WHEN 'view' THEN 2 ELSE 3 END, name",
        )
        .unwrap();
    let rows = stmt
        .query_map([], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?))
        })
        .unwrap()
        .map(Result::unwrap);
    let mut out = String::from(
        "-- The schema the migrations build, as `SELECT sql FROM sqlite_schema` gives it.\n\
         -- Generated: UPDATE_DOCS=1 cargo test --test it schema_doc\n",
    );
    for (kind, name, sql) in rows {
        out.push_str(&format!("\n-- {kind} {name}\n{sql};\n"));
    }
    out
}

async fn small_ledger() -> (tempfile::TempDir, std::path::PathBuf) {
    let (d, db) = temp_db();
    let s = start(&db).await;
    s.ready("schema ledger").await;
    for n in 1..=3 {
        s.thought(t(&format!("main thought {n}"))).await;
    }
    s.thought(json!({ "thought": "a branch", "branchId": "alt", "branchFromThought": 2, "nextThoughtNeeded": true }))
        .await;
    s.thought(json!({ "thought": "a revision of 1", "revisesThought": 1, "nextThoughtNeeded": false }))
        .await;
    s.stop().await;
    (d, db)
}

#[tokio::test]
async fn the_documented_schema_is_what_the_migrations_build() {
    let (_d, db) = small_ledger().await;
    let built = schema_of(&db);
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::write(SCHEMA_SQL, &built).unwrap();
        return;
    }
    let documented = std::fs::read_to_string(SCHEMA_SQL).unwrap_or_default();
    if documented != built {
        let first = documented
            .lines()
            .zip(built.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(documented.lines().count().min(built.lines().count()));
        panic!(
            "docs/schema.sql differs from the schema the migrations build, from line {}:\n  documented: {:?}\n  built:      {:?}\n\
             regenerate it with UPDATE_DOCS=1 cargo test --test it schema_doc",
            first + 1,
            documented.lines().nth(first),
            built.lines().nth(first),
        );
    }
}

#[tokio::test]
async fn the_example_queries_work() {
    let (_d, db) = small_ledger().await;
    let blocks = example_queries();
    assert!(
        blocks.len() >= 5,
        "docs/schema.md shows {} example queries",
        blocks.len()
    );
    let conn = rusqlite::Connection::open(&db).unwrap();
    for sql in blocks {
        let mut stmt = conn.prepare(&sql).unwrap_or_else(|e| panic!("{sql}\n{e}"));
        let rows = stmt.query_map([], |_| Ok(())).unwrap().count();
        assert!(rows > 0, "no rows from:\n{sql}");
    }
}
