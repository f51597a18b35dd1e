//! docs/gateway.md against the binary: its parameter tables are rendered
//! from the tool's `inputSchema` as `tools/list` answers it, and its
//! example calls run and answer what the document shows.
//!
//! `UPDATE_DOCS=1 cargo test --test it gateway_doc` rewrites the generated
//! block. The renderer reads only the schema and the tool description, so
//! an operation added later gets its tables by that command alone.

use std::fmt::Write as _;

use serde_json::{Map, Value, json};

use crate::common::*;
use crate::schema::listed_tool;

const DOC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/gateway.md");
const BEGIN: &str = "<!-- generated: parameters -->\n";
const END: &str = "<!-- end generated -->\n";

/// The generated block, markers included.
fn render(tool: &Value) -> String {
    let schema = &tool["inputSchema"];
    let empty = Map::new();
    let defs = schema["$defs"].as_object().unwrap_or(&empty);
    let operations: Vec<&str> = schema["properties"]["operation"]["enum"]
        .as_array()
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();

    let mut out = String::from(BEGIN);
    out.push_str(
        "<!-- Rendered from the tool's inputSchema (tools/list) by tests/it/gateway_doc.rs; do not edit.\n     \
         Regenerate: UPDATE_DOCS=1 cargo test --test it gateway_doc -->\n\n",
    );
    out.push_str(&operations_table(
        tool["description"].as_str().unwrap_or(""),
        &operations,
    ));

    // Each operation's entries in the enum's order, then any entry no
    // operation of the enum owns.
    let mut keys: Vec<&String> = Vec::new();
    for op in &operations {
        let dotted = format!("{op}.");
        keys.extend(defs.keys().filter(|k| *k == op || k.starts_with(&dotted)));
    }
    let owned: Vec<&String> = keys.clone();
    keys.extend(defs.keys().filter(|k| !owned.contains(k)));

    for key in keys {
        let def = &defs[key.as_str()];
        let _ = write!(out, "\n### `{key}` parameters\n\n");
        if let Some(what) = def["description"].as_str() {
            let _ = write!(out, "{}\n\n", cell(what));
        }
        let mut rows = Vec::new();
        rows_of(def, "", &mut rows);
        if rows.is_empty() {
            out.push_str("No parameters.\n");
            continue;
        }
        out.push_str("| parameter | type | required | default | range / values | description |\n");
        out.push_str("| --- | --- | --- | --- | --- | --- |\n");
        for row in rows {
            out.push_str(&row);
        }
    }
    out.push('\n');
    out.push_str(END);
    out
}

/// The operations with their stage and summary, from the description's
/// lines `- <operation> [<stage>]: <what>`.
fn operations_table(description: &str, operations: &[&str]) -> String {
    let mut out = String::from("| operation | stage | what it does |\n| --- | --- | --- |\n");
    for op in operations {
        let prefix = format!("- {op} [");
        let line = description.lines().find(|l| l.starts_with(&prefix));
        let (stage, what) = line
            .and_then(|l| l[prefix.len()..].split_once("]: "))
            .unwrap_or(("", ""));
        let _ = writeln!(out, "| `{op}` | {stage} | {} |", cell(what));
    }
    out
}

/// One table row per property of the object schema `def`, its object
/// properties' own fields after it (`options.compareWith`,
/// `keyMoments[].type`).
fn rows_of(def: &Value, prefix: &str, rows: &mut Vec<String>) {
    let Some(properties) = def["properties"].as_object() else {
        return;
    };
    let required: Vec<&str> = def["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    // Required names first, in the schema's order, then the others.
    let mut names: Vec<&String> = required
        .iter()
        .filter_map(|r| properties.keys().find(|k| k.as_str() == *r))
        .collect();
    names.extend(properties.keys().filter(|k| !required.contains(&k.as_str())));
    for name in names {
        let p = &properties[name.as_str()];
        let path = format!("{prefix}{name}");
        rows.push(format!(
            "| `{path}` | {} | {} | {} | {} | {} |\n",
            type_of(p),
            if required.contains(&name.as_str()) { "yes" } else { "" },
            p.get("default")
                .map(|d| format!("`{}`", cell(&d.to_string())))
                .unwrap_or_default(),
            cell(&range_of(p)),
            cell(p["description"].as_str().unwrap_or("")),
        ));
        if p["properties"].is_object() {
            rows_of(p, &format!("{path}."), rows);
        }
        if p["items"]["properties"].is_object() {
            rows_of(&p["items"], &format!("{path}[]."), rows);
        }
    }
}

fn type_of(p: &Value) -> String {
    let name = |v: &Value| v["type"].as_str().unwrap_or("any").to_string();
    match p["type"].as_str() {
        Some("array") => format!("array of {}", name(&p["items"])),
        _ => name(p),
    }
}

/// Enums, numeric ranges, list and text lengths, for a property and its
/// list's items.
fn range_of(p: &Value) -> String {
    let mut parts = Vec::new();
    for (v, of) in [(p, ""), (&p["items"], "each ")] {
        if let Some(names) = v["enum"].as_array() {
            let names: Vec<String> = names
                .iter()
                .map(|n| format!("`{}`", n.as_str().unwrap_or("")))
                .collect();
            parts.push(format!("{of}{}", names.join(" | ")));
        }
        if let Some(bounds) = bounds(&v["minimum"], &v["maximum"], "") {
            parts.push(format!("{of}{bounds}"));
        }
        if let Some(bounds) = bounds(&v["minLength"], &v["maxLength"], " characters") {
            parts.push(format!("{of}{bounds}"));
        }
    }
    if let Some(bounds) = bounds(&p["minItems"], &p["maxItems"], " items") {
        parts.push(bounds);
    }
    parts.join("; ")
}

fn bounds(min: &Value, max: &Value, unit: &str) -> Option<String> {
    match (min.as_f64(), max.as_f64()) {
        (Some(_), Some(_)) if min == max => Some(format!("{min}{unit}")),
        (Some(_), Some(_)) => Some(format!("{min}-{max}{unit}")),
        (Some(_), None) => Some(format!("≥ {min}{unit}")),
        (None, Some(_)) => Some(format!("≤ {max}{unit}")),
        (None, None) => None,
    }
}

/// `text` as a table cell: on one line, its `|` escaped, and its `<`
/// outside code spans written as an entity, so that `project:<name>` is not
/// read as an HTML tag (inside a code span an entity would show as typed).
fn cell(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_code = false;
    for c in text.chars() {
        match c {
            '`' => {
                in_code = !in_code;
                out.push(c);
            }
            '\n' => out.push(' '),
            '|' => out.push_str("\\|"),
            '<' if !in_code => out.push_str("&lt;"),
            c => out.push(c),
        }
    }
    out
}

/// The generated block of `doc`, markers included, and where it starts.
fn block_of(doc: &str) -> Option<(usize, &str)> {
    let start = doc.find(BEGIN)?;
    let end = doc[start..].find(END)? + start + END.len();
    Some((start, &doc[start..end]))
}

/// A line diff of `old` and `new` (longest common subsequence): the lines
/// only `old` has as `-`, those only `new` has as `+`, each with the line of
/// the document it is at or would go before.
fn diff(old: &str, new: &str, first_line: usize) -> String {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out, mut shown) = (0, 0, String::new(), 0);
    while (i < a.len() || j < b.len()) && shown < 80 {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            let _ = writeln!(out, "-{:>5} | {}", first_line + i, a[i]);
            i += 1;
            shown += 1;
        } else {
            let _ = writeln!(out, "+{:>5} | {}", first_line + i, b[j]);
            j += 1;
            shown += 1;
        }
    }
    if shown == 80 {
        out.push_str("... (more)\n");
    }
    out
}

#[tokio::test]
async fn parameter_tables_match_the_tool_schema() {
    let rendered = render(&listed_tool().await);
    let doc = std::fs::read_to_string(DOC).expect("docs/gateway.md");
    let Some((start, written)) = block_of(&doc) else {
        panic!("docs/gateway.md has no block between {BEGIN:?} and {END:?}");
    };
    if written == rendered {
        return;
    }
    if std::env::var("UPDATE_DOCS").is_ok_and(|v| v == "1") {
        let updated = format!("{}{rendered}{}", &doc[..start], &doc[start + written.len()..]);
        std::fs::write(DOC, updated).expect("write docs/gateway.md");
        return;
    }
    let first_line = doc[..start].lines().count() + 1;
    panic!(
        "docs/gateway.md's parameter tables differ from the tool's schema (- document, + schema):\n{}\n\
         Regenerate them with: UPDATE_DOCS=1 cargo test --test it gateway_doc",
        diff(written, &rendered, first_line)
    );
}

/// The session id the examples are written with; the test puts the real
/// one in its place.
const EXAMPLE_ID: &str = "8f14e45f-ceea-467f-a8f3-5b1b7f5a2c10";

/// The fenced blocks of `doc` whose info string is `info`, in order.
fn blocks(doc: &str, info: &str) -> Vec<String> {
    let fence = format!("```{info}\n");
    doc.split(fence.as_str())
        .skip(1)
        .map(|b| b.split("```").next().unwrap_or("").to_string())
        .collect()
}

/// Whether `actual` has every field `shown` shows, with the same JSON type,
/// at any depth (a list is compared by its first item); values differ from
/// run to run (ids, times), so they are not compared. The first difference
/// is named by its path.
fn has_shape(shown: &Value, actual: &Value, path: &str) -> Result<(), String> {
    let kind = |v: &Value| match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    if kind(shown) != kind(actual) {
        return Err(format!(
            "{path}: shown as {}, answered as {}: {actual}",
            kind(shown),
            kind(actual)
        ));
    }
    match (shown, actual) {
        (Value::Object(s), Value::Object(a)) => {
            for (k, v) in s {
                let at = format!("{path}.{k}");
                let Some(got) = a.get(k) else {
                    return Err(format!("{at}: shown, but not in the answer {actual}"));
                };
                has_shape(v, got, &at)?;
            }
            Ok(())
        }
        (Value::Array(s), Value::Array(a)) => match (s.first(), a.first()) {
            (Some(s), Some(a)) => has_shape(s, a, &format!("{path}[0]")),
            (Some(_), None) => Err(format!("{path}: shown with items, answered empty")),
            _ => Ok(()),
        },
        _ => Ok(()),
    }
}

#[tokio::test]
async fn example_calls_answer_as_shown() {
    let doc = std::fs::read_to_string(DOC).expect("docs/gateway.md");
    let calls = blocks(&doc, "json call");
    let answers = blocks(&doc, "json answer");
    assert!(
        calls.len() >= 4,
        "the examples of thought, read_thoughts, session search, load_context"
    );
    assert_eq!(calls.len(), answers.len(), "each example call has its answer");

    // The session the examples read: two thoughts, cipher loaded.
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let started = s
        .ok(
            "start_new",
            json!({ "sessionTitle": "Debug authentication flow", "tags": ["auth"] }),
        )
        .await;
    let id = started["sessionId"].as_str().unwrap().to_string();
    s.ok("cipher", json!({ "brief": true })).await;
    for text in [
        "Users report 401 errors after token refresh",
        "The old token stays valid after refresh",
    ] {
        s.thought(json!({ "sessionId": id, "thought": text, "nextThoughtNeeded": true }))
            .await;
    }

    for (call, shown) in calls.iter().zip(&answers) {
        let arguments: Map<String, Value> = serde_json::from_str(&call.replace(EXAMPLE_ID, &id))
            .unwrap_or_else(|e| panic!("example call is not a JSON object ({e}):\n{call}"));
        let shown: Value =
            serde_json::from_str(shown).unwrap_or_else(|e| panic!("example answer is not JSON ({e}):\n{shown}"));
        // An answer shown as an ErrorPayload is an error with its code.
        let actual = match (s.call_raw(arguments).await, shown.get("code")) {
            (Ok(v), None) | (Err(v), Some(_)) => v,
            (Ok(v), Some(code)) => panic!("{call}: shown failing with {code}, answered {v}"),
            (Err(e), None) => panic!("{call}: failed: {e}"),
        };
        if let Some(code) = shown.get("code") {
            assert_eq!(&actual["code"], code, "{call}");
        }
        if let Err(e) = has_shape(&shown, &actual, "answer") {
            panic!("{call}\n{e}");
        }
    }

    // The other JSON examples are calls, one a line, of operations the tool lists.
    let operations = listed_tool().await["inputSchema"]["properties"]["operation"]["enum"].clone();
    for block in blocks(&doc, "json") {
        for line in block.lines().filter(|l| !l.trim().is_empty()) {
            let call: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
            assert!(
                operations.as_array().unwrap().contains(&call["operation"]),
                "{line}: no such operation"
            );
        }
    }
    s.stop().await;
}

#[test]
fn a_shape_names_the_first_field_missing_or_of_another_type() {
    let answer = json!({ "a": 1, "b": [{ "c": "x", "d": true }], "e": null });
    assert_eq!(has_shape(&json!({ "b": [{ "c": "y" }] }), &answer, "answer"), Ok(()));
    assert!(
        has_shape(&json!({ "z": 1 }), &answer, "answer")
            .unwrap_err()
            .starts_with("answer.z:")
    );
    assert!(
        has_shape(&json!({ "b": [{ "d": 1 }] }), &answer, "answer")
            .unwrap_err()
            .starts_with("answer.b[0].d:")
    );
    assert!(has_shape(&json!({ "e": "x" }), &answer, "answer").is_err());
}

#[test]
fn the_renderer_reads_nested_fields_ranges_and_enums() {
    let tool = json!({
        "description": "Intro.\n- op [2]: Does a | b.\n",
        "inputSchema": {
            "properties": { "operation": { "enum": ["op", "grp"] } },
            "$defs": {
                "op": { "type": "object", "required": ["b"], "properties": {
                    "a": { "type": "integer", "minimum": 1, "maximum": 100, "default": 20, "description": "A." },
                    "b": { "type": "object", "description": "B <x> `<y>`.", "properties": {
                        "c": { "type": "array", "items": { "type": "string", "enum": ["p", "q"] }, "maxItems": 3,
                               "description": "C." } } },
                    "k": { "type": "array", "description": "K.", "items": { "type": "object", "required": ["n"],
                           "properties": { "n": { "type": "integer", "minimum": 1, "description": "N." } } } },
                } },
                "grp.x": { "type": "object", "description": "X.", "properties": {} },
                "stray": { "type": "object" },
            },
        },
    });
    let block = render(&tool);
    for line in [
        "| `op` | 2 | Does a \\| b. |",
        "| `grp` |  |  |",
        "| `b` | object | yes |  |  | B &lt;x> `<y>`. |",
        "| `b.c` | array of string |  |  | each `p` \\| `q`; ≤ 3 items | C. |",
        "| `a` | integer |  | `20` | 1-100 | A. |",
        "| `k[].n` | integer | yes |  | ≥ 1 | N. |",
        "### `grp.x` parameters\n\nX.\n\nNo parameters.",
        "### `stray` parameters",
    ] {
        assert!(block.contains(line), "{line:?} not in:\n{block}");
    }
    // Required first: `b` before `a`.
    assert!(block.find("| `b` |") < block.find("| `a` |"));
    assert_eq!(
        block_of(&format!("x\n{block}y\n")).map(|(at, b)| (at, b == block)),
        Some((2, true))
    );
}

#[test]
fn the_diff_names_changed_lines() {
    let d = diff("a\nb\nc\n", "a\nB\nc\nd\n", 10);
    assert_eq!(d, "-   11 | b\n+   12 | B\n+   13 | d\n");
}
