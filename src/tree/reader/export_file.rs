//! Reading a SessionExport JSON file, what `thoughtbox export --session ID
//! --format json` and the gateway's session export write, for `import` and
//! `validate`. Each session it holds is converted into what the reader
//! checks in a session directory (its record into a manifest's metadata, its
//! nodes into the reader's nodes) and goes through the same checks: text
//! limits, NUL and invisible text, times, links, creation order.
//!
//! A file that is no SessionExport at all (other JSON, a Markdown or cipher
//! export, another version) is refused whole with an [`ExportFileError`]; a
//! SessionExport whose content fails the checks is an invalid session, with
//! its report, as a session directory would be.

use std::fs;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};

use super::{LoadedSession, Loader, Node, RawNode, canonical_session_id, canonical_time, parse_repairing};
use crate::domain::{json_kind as kind, validate_branch_id};
use crate::error::Error;
use crate::export::VERSION;
use crate::tree::integrity::{IntegrityValidationResult, SessionReport};
use crate::tree::{MANIFEST_VERSION, ManifestMetadata, SessionManifest, names_settings};

/// How the JSON export is written, for messages.
const HOW_TO_EXPORT: &str = "`thoughtbox export --session ID --format json --out FILE`";

/// Why a file given to `import` or `validate` is not read as a SessionExport.
#[derive(Debug, thiserror::Error)]
pub enum ExportFileError {
    #[error("reading {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error(
        "{path} is a Markdown or cipher export: only the JSON export (a SessionExport) can be imported; write it \
         with {HOW_TO_EXPORT}"
    )]
    TextExport { path: PathBuf },

    #[error(
        "{path} is not JSON ({reason}): import and validate take a directory of the layout (`thoughtbox export \
         --out DIR`) or a SessionExport JSON file ({HOW_TO_EXPORT})"
    )]
    NotJson { path: PathBuf, reason: String },

    #[error(
        "{path}{at} is not a SessionExport: expected a JSON object with version, session and nodes, as \
         {HOW_TO_EXPORT} writes it{found}"
    )]
    NotSessionExport { path: PathBuf, at: String, found: String },

    #[error("{path}{at} is a SessionExport of version {version}; this thoughtbox reads version \"{VERSION}\"")]
    UnknownVersion { path: PathBuf, at: String, version: String },

    /// A version that is no string: `1.0` as a JSON number read as the
    /// very version expected in the message of [`Self::UnknownVersion`].
    #[error(
        "{path}{at}: its version is {found}; a SessionExport's version is a string, \"{VERSION}\" (in quotes) for \
         the version this thoughtbox reads"
    )]
    VersionNotString { path: PathBuf, at: String, found: String },

    #[error("{path}{at}: its session is not a session record ({reason}), so the SessionExport cannot be read")]
    BadSession { path: PathBuf, at: String, reason: String },
}

impl From<ExportFileError> for Error {
    fn from(e: ExportFileError) -> Error {
        match e {
            ExportFileError::Io { path, source } => Error::io(format!("reading {}", path.display()), source),
            other => Error::invalid("file", other.to_string()),
        }
    }
}

/// Whether `path` is a file (following a symbolic link) that `import` and
/// `validate` read as a SessionExport rather than as a directory.
pub fn is_export_file(path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|m| m.is_file())
}

/// The session record of a SessionExport, with what an import keeps of it;
/// counts and the partition are worked out again from the nodes.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ExportedSession {
    id: String,
    title: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
    created_at: String,
    updated_at: String,
    #[serde(default)]
    last_accessed_at: Option<String>,
    #[serde(default)]
    completed_at: Option<String>,
    #[serde(default)]
    domain: Option<String>,
}

impl ExportedSession {
    /// The manifest a session directory of this session would have (its
    /// file lists are not needed: the nodes come with the record).
    fn manifest(self) -> SessionManifest {
        SessionManifest {
            id: self.id,
            version: MANIFEST_VERSION.to_string(),
            thought_files: Vec::new(),
            branch_files: Default::default(),
            metadata: ManifestMetadata {
                title: self.title,
                description: self.description,
                tags: self.tags,
                created_at: self.created_at,
                updated_at: self.updated_at,
                completed_at: self.completed_at,
                domain: self.domain,
            },
        }
    }
}

/// One SessionExport of a file, its shape checked.
struct Document {
    session: ExportedSession,
    nodes: Vec<Value>,
}

/// Read the SessionExport in `path` (or each of a JSON array of them) and
/// check every session it holds as [`super::load_session`] checks a session
/// directory: its report, and the session when it is valid. Nothing is
/// written. A file that is not a SessionExport is refused.
pub fn load_export_file(path: &Path) -> Result<Vec<(SessionReport, Option<LoadedSession>)>, ExportFileError> {
    let bytes = fs::read(path).map_err(|source| ExportFileError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let (documents, repaired) = documents(path, &bytes)?;
    Ok(documents
        .into_iter()
        .map(|doc| load_document(path, doc, repaired))
        .collect())
}

/// The SessionExports of a file's bytes, and how many lone surrogate
/// escapes were replaced on parsing it.
fn documents(path: &Path, bytes: &[u8]) -> Result<(Vec<Document>, usize), ExportFileError> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let (value, repaired) = parse_repairing::<Value>(bytes).map_err(|e| {
        // Markdown and cipher exports both start with `# {title}`.
        if bytes.trim_ascii_start().starts_with(b"#") {
            ExportFileError::TextExport {
                path: path.to_path_buf(),
            }
        } else {
            ExportFileError::NotJson {
                path: path.to_path_buf(),
                reason: e.to_string(),
            }
        }
    })?;
    let documents = match value {
        Value::Array(items) if !items.is_empty() => items
            .into_iter()
            .enumerate()
            .map(|(i, item)| document(path, &format!(" at index {i}"), item))
            .collect::<Result<Vec<_>, _>>()?,
        other => vec![document(path, "", other)?],
    };
    Ok((documents, repaired))
}

/// `value` as a SessionExport. The gateway's answer to a JSON export,
/// `{ sessionId, format, content }`, saved whole, is read as its content.
fn document(path: &Path, at: &str, value: Value) -> Result<Document, ExportFileError> {
    let not_export = |found: String| ExportFileError::NotSessionExport {
        path: path.to_path_buf(),
        at: at.to_string(),
        found,
    };
    let mut map = match value {
        Value::Object(map) => map,
        Value::Array(_) => return Err(not_export("; it is an empty array".into())),
        other => return Err(not_export(format!("; it is {}", kind(&other)))),
    };
    if !map.contains_key("version") && map.get("format").and_then(Value::as_str).is_some() {
        match map.remove("content") {
            Some(Value::Object(content)) => map = content,
            Some(Value::String(_)) => {
                return Err(ExportFileError::TextExport {
                    path: path.to_path_buf(),
                });
            }
            _ => return Err(not_export(found_keys(&map))),
        }
    }
    let (Some(version), Some(session), Some(nodes)) =
        (map.remove("version"), map.remove("session"), map.remove("nodes"))
    else {
        return Err(not_export(found_keys(&map)));
    };
    // Only the string: no writer of SessionExports writes a number, so a
    // number is a hand edit or another program's file, and `1` or `1.00`
    // would each have to be guessed at.
    if !version.is_string() {
        return Err(ExportFileError::VersionNotString {
            path: path.to_path_buf(),
            at: at.to_string(),
            found: match &version {
                Value::Number(n) => format!("the number {n}"),
                other => kind(other).to_string(),
            },
        });
    }
    if version.as_str() != Some(VERSION) {
        return Err(ExportFileError::UnknownVersion {
            path: path.to_path_buf(),
            at: at.to_string(),
            version: version.to_string(),
        });
    }
    let Value::Array(nodes) = nodes else {
        return Err(not_export(format!("; its nodes are {}, not an array", kind(&nodes))));
    };
    let session = serde_json::from_value(session).map_err(|e| ExportFileError::BadSession {
        path: path.to_path_buf(),
        at: at.to_string(),
        reason: e.to_string(),
    })?;
    Ok(Document { session, nodes })
}

/// What an object that is no SessionExport holds, and what it may be.
fn found_keys(map: &Map<String, Value>) -> String {
    let hint = if map.contains_key("thoughtFiles") {
        ": it looks like a session's manifest.json; give the session's directory instead"
    } else if map.contains_key("data") && map.contains_key("id") {
        ": it looks like one thought file of the directory layout; give its session's directory instead"
    } else if names_settings(map) {
        ": it looks like a tree's config.json; give the tree's directory instead"
    } else {
        ""
    };
    let mut keys: Vec<&str> = map.keys().map(String::as_str).take(8).collect();
    if map.len() > keys.len() {
        keys.push("...");
    }
    match keys.as_slice() {
        [] => "; it is an empty object".to_string(),
        keys => format!("; its keys are {}{hint}", keys.join(", ")),
    }
}

/// Check one SessionExport of `path`, as a session directory is checked.
fn load_document(path: &Path, doc: Document, repaired: usize) -> (SessionReport, Option<LoadedSession>) {
    let mut report = SessionReport {
        session_id: doc.session.id.clone(),
        path: path.to_path_buf(),
        // The file and its session record stand for the directory and its
        // manifest: both are there, and the record was read.
        result: IntegrityValidationResult {
            session_exists: true,
            manifest_exists: true,
            manifest_valid: true,
            ..Default::default()
        },
        warnings: Vec::new(),
    };
    let file = path
        .file_name()
        .map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
    let loaded = Loader {
        dir: path,
        report: &mut report,
        converted_time: None,
    }
    .load_export(&file, doc, repaired);
    report.result.settle();
    let loaded = loaded.filter(|_| report.result.valid);
    (report, loaded)
}

impl Loader<'_> {
    fn load_export(&mut self, file: &str, mut doc: Document, repaired: usize) -> Option<LoadedSession> {
        self.repaired(file, repaired);
        let Some(sid) = canonical_session_id(&doc.session.id) else {
            self.error(format!("session.id {:?} is not a UUID", doc.session.id));
            return None;
        };
        self.report.session_id = sid.clone();
        doc.session.id = sid.clone();
        let last_accessed = doc.session.last_accessed_at.clone();
        let mut session = self.session(&doc.session.manifest(), "session");
        // A session directory has no last-access time; the record has.
        if let (Some(row), Some(given)) = (&mut session, last_accessed) {
            match canonical_time(&given) {
                Some(stored) => {
                    self.converted(&given, &stored);
                    row.last_accessed_at = stored;
                }
                None => self.report.warnings.push(format!(
                    "session.lastAccessedAt {given:?} is not an ISO 8601 date-time in the years 0000-9999 (UTC); \
                     updatedAt stands for it"
                )),
            }
        }
        let nodes = doc
            .nodes
            .into_iter()
            .enumerate()
            .filter_map(|(i, node)| self.exported_node(i, node, &sid))
            .collect();
        self.finish(&sid, session, nodes)
    }

    /// `nodes[i]` of a SessionExport, checked as a thought file is. Its
    /// chain is the one it names (a thought file's is its folder's).
    fn exported_node(&mut self, i: usize, value: Value, sid: &str) -> Option<Node> {
        let shown = format!("nodes[{i}]");
        let raw: RawNode = match serde_json::from_value(value) {
            Ok(n) => n,
            Err(e) => {
                self.error(format!("{shown} is not a valid ThoughtNode: {e}"));
                return None;
            }
        };
        let branch = match (&raw.branch_id, &raw.data.branch_id) {
            (Some(node), Some(data)) if node != data => {
                self.error(format!(
                    "{shown}: branchId {node:?} and data.branchId {data:?} name different branches"
                ));
                return None;
            }
            (node, data) => node.clone().or_else(|| data.clone()),
        };
        if let Some(b) = &branch
            && validate_branch_id("branchId", b).is_err()
        {
            self.error(format!(
                "{shown}: branchId {b:?} is not a valid branch id ([a-z0-9-], 1-64 characters)"
            ));
            return None;
        }
        self.check_node(raw, &shown, None, branch.as_ref(), sid)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::domain::{Session, Thought, ThoughtData};
    use crate::export::{NextLinks, SessionExport};

    const SID: &str = "1b9d6bcd-bbfd-4b2d-9b5d-ab8dfbbd4bed";

    fn data(n: u32, secs: u32, branch: Option<&str>) -> ThoughtData {
        ThoughtData {
            thought: format!("thought {n}"),
            thought_number: n,
            total_thoughts: 3,
            next_thought_needed: true,
            is_revision: false,
            revises_thought: None,
            branch_from_thought: branch.map(|_| 1),
            branch_id: branch.map(str::to_string),
            needs_more_thoughts: None,
            include_guide: None,
            timestamp: format!("2026-03-01T08:00:{secs:02}.000Z"),
            critique: None,
            critique_requested: None,
        }
    }

    /// Main chain 1-2-3 (3 revising 1), branch `alt` 2 from 1, tagged: what
    /// the exporter writes of such a session.
    fn export() -> Value {
        let id = |b: Option<&str>, n: u32| crate::domain::node_id(SID, b, n);
        let thought = |seq: i64, b: Option<&str>, n: u32, prev: Option<String>| Thought {
            seq,
            session_id: SID.into(),
            node_id: id(b, n),
            prev_node: prev,
            revises_node: None,
            branch_origin: b.map(|_| id(None, 1)),
            data: data(n, seq as u32, b),
        };
        let mut thoughts = vec![
            thought(0, None, 1, None),
            thought(1, None, 2, Some(id(None, 1))),
            thought(2, Some("alt"), 2, Some(id(None, 1))),
            thought(3, None, 3, Some(id(None, 2))),
        ];
        thoughts[3].revises_node = Some(id(None, 1));
        thoughts[3].data.revises_thought = Some(1);
        thoughts[3].data.is_revision = true;
        let next = NextLinks::new(
            thoughts
                .iter()
                .filter_map(|t| Some((t.prev_node.clone()?, t.node_id.clone())))
                .collect(),
        );
        let doc = SessionExport {
            version: VERSION.into(),
            session: Session {
                id: SID.into(),
                title: "Cache design".into(),
                description: Some("which cache".into()),
                tags: vec!["perf".into(), "project:api".into()],
                thought_count: 4,
                branch_count: 1,
                partition_path: None,
                created_at: "2026-03-01T08:00:00.000Z".into(),
                updated_at: "2026-03-01T08:00:03.000Z".into(),
                last_accessed_at: "2026-03-02T08:00:00.000Z".into(),
                completed_at: None,
                domain: None,
            },
            nodes: thoughts.into_iter().map(|t| next.node(t)).collect(),
            exported_at: "2026-03-03T08:00:00.000Z".into(),
        };
        serde_json::to_value(doc).expect("a SessionExport serializes")
    }

    fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
        let path = dir.join(name);
        fs::write(&path, bytes).expect("write the test file");
        path
    }

    fn load(v: &Value) -> Vec<(SessionReport, Option<LoadedSession>)> {
        let tmp = tempfile::tempdir().expect("tempdir");
        let path = write(tmp.path(), "s.json", &serde_json::to_vec(v).expect("json"));
        load_export_file(&path).expect("a SessionExport")
    }

    fn refused(name: &str, bytes: &[u8]) -> ExportFileError {
        let tmp = tempfile::tempdir().expect("tempdir");
        let path = write(tmp.path(), name, bytes);
        match load_export_file(&path) {
            Ok(_) => panic!("{name} should be refused"),
            Err(e) => {
                assert!(e.to_string().contains(&path.display().to_string()), "{e}");
                e
            }
        }
    }

    #[test]
    fn an_export_becomes_the_session_it_was_made_from() {
        let loaded = load(&export());
        let [(report, Some(l))] = &loaded[..] else {
            panic!("{loaded:?}")
        };
        assert!(report.result.valid && report.warnings.is_empty(), "{report:?}");
        assert_eq!(report.session_id, SID);
        let s = &l.session;
        assert_eq!(
            (s.title.as_str(), s.description.as_deref(), &s.tags[..]),
            (
                "Cache design",
                Some("which cache"),
                &["perf".to_string(), "project:api".into()][..]
            )
        );
        assert_eq!((s.thought_count, s.branch_count), (4, 1));
        assert_eq!(s.last_accessed_at, "2026-03-02T08:00:00.000Z");
        let ids: Vec<&str> = l.thoughts.iter().map(|t| t.node_id.as_str()).collect();
        assert_eq!(
            ids,
            [
                format!("{SID}:1"),
                format!("{SID}:2"),
                format!("{SID}:alt:2"),
                format!("{SID}:3")
            ]
        );
        let alt = &l.thoughts[2];
        assert_eq!(alt.branch_origin.as_deref(), Some(format!("{SID}:1").as_str()));
        assert_eq!(alt.data.branch_from_thought, Some(1));
        assert_eq!(alt.data.branch_id.as_deref(), Some("alt"));
        let three = &l.thoughts[3];
        assert_eq!(three.revises_node.as_deref(), Some(format!("{SID}:1").as_str()));
        assert!(three.data.is_revision);
    }

    #[test]
    fn an_array_of_exports_is_each_of_them() {
        let mut other = export();
        let sid2 = "2b9d6bcd-bbfd-4b2d-9b5d-ab8dfbbd4bed";
        let text = serde_json::to_string(&other).expect("json").replace(SID, sid2);
        other = serde_json::from_str(&text).expect("json");
        let loaded = load(&json!([export(), other]));
        let ids: Vec<&str> = loaded.iter().map(|(r, _)| r.session_id.as_str()).collect();
        assert_eq!(ids, [SID, sid2]);
        assert!(loaded.iter().all(|(r, l)| r.result.valid && l.is_some()));
    }

    #[test]
    fn the_gateways_answer_saved_whole_is_its_content() {
        let answer = json!({ "sessionId": SID, "format": "json", "content": export() });
        assert!(load(&answer)[0].1.is_some());
        let markdown = json!({ "sessionId": SID, "format": "markdown", "content": "# Cache design\n" });
        let e = refused("answer.json", &serde_json::to_vec(&markdown).expect("json"));
        assert!(matches!(e, ExportFileError::TextExport { .. }), "{e}");
    }

    /// What the tree reader refuses or repairs in a thought file, it
    /// refuses or repairs in a node of an export.
    #[test]
    fn nodes_get_the_checks_of_thought_files() {
        let mut doc = export();
        doc["nodes"][1]["prev"] = json!(format!("{SID}:9"));
        doc["nodes"][3]["data"]["thought"] = json!("\u{200B}");
        let (report, loaded) = load(&doc).remove(0);
        assert!(loaded.is_none() && !report.result.valid);
        let errors = report.result.errors.join("\n");
        assert!(errors.contains("nodes[3]: the thought text is empty"), "{errors}");

        let mut doc = export();
        doc["nodes"][1]["prev"] = json!(format!("{SID}:9"));
        let (report, _) = load(&doc).remove(0);
        let errors = report.result.errors.join("\n");
        assert!(
            errors.contains(&format!(
                "nodes[1]: prev names {SID}:9, which is not a node of this session"
            )),
            "{errors}"
        );

        // Two thoughts numbered 2 on the main chain.
        let mut doc = export();
        doc["nodes"][3] = doc["nodes"][1].clone();
        let (report, _) = load(&doc).remove(0);
        assert!(report.result.errors.join("\n").contains("appears twice"), "{report:?}");

        for (field, value, says) in [
            ("branchId", json!("../x"), "not a valid branch id"),
            ("id", json!(format!("{SID}:alt:7")), "should be"),
            (
                "branchOrigin",
                json!(format!("{SID}:9")),
                "does not fork from a main-chain thought",
            ),
        ] {
            let mut doc = export();
            doc["nodes"][2][field] = value.clone();
            if field == "branchId" {
                doc["nodes"][2]["data"]["branchId"] = value;
            }
            let (report, loaded) = load(&doc).remove(0);
            assert!(loaded.is_none(), "{field}");
            assert!(report.result.errors.join("\n").contains(says), "{field}: {report:?}");
        }

        // Thought 3 revises thought 1, but its revisesNode names thought 2.
        let mut doc = export();
        doc["nodes"][3]["revisesNode"] = json!(format!("{SID}:2"));
        let (report, loaded) = load(&doc).remove(0);
        assert!(loaded.is_none());
        assert!(
            report.result.errors.join("\n").contains(&format!(
                "nodes[3]: revisesThought 1 and revisesNode {SID}:2 (thought 2) disagree"
            )),
            "{report:?}"
        );

        let mut doc = export();
        doc["nodes"][2]["data"]["branchId"] = json!("other");
        let (report, _) = load(&doc).remove(0);
        assert!(
            report.result.errors.join("\n").contains("name different branches"),
            "{report:?}"
        );

        let mut doc = export();
        doc["nodes"][0]["data"]["thoughtNumber"] = json!(-1);
        doc["nodes"][1]["data"]
            .as_object_mut()
            .expect("object")
            .remove("thought");
        let (report, _) = load(&doc).remove(0);
        let errors = report.result.errors.join("\n");
        assert!(
            errors.contains("nodes[0]: thoughtNumber -1") && errors.contains("nodes[1] is not a valid ThoughtNode"),
            "{errors}"
        );

        // Repaired, with a warning: NUL in the text, times in another form.
        let mut doc = export();
        doc["nodes"][0]["data"]["thought"] = json!("a\u{0}b");
        doc["nodes"][0]["data"]["timestamp"] = json!("2026-03-01T10:00:00+02:00");
        doc["session"]["lastAccessedAt"] = json!("yesterday");
        let (report, loaded) = load(&doc).remove(0);
        let l = loaded.expect("valid");
        assert_eq!(l.thoughts[0].data.thought, "a\u{FFFD}b");
        assert_eq!(l.thoughts[0].data.timestamp, "2026-03-01T08:00:00.000Z");
        assert_eq!(l.session.last_accessed_at, l.session.updated_at);
        let warnings = report.warnings.join("\n");
        for says in ["nodes[0]: NUL", "converted to UTC", "lastAccessedAt"] {
            assert!(warnings.contains(says), "{says}: {warnings}");
        }
    }

    #[test]
    fn the_session_record_gets_the_checks_of_a_manifest() {
        for (field, value, says) in [
            ("title", json!(" "), "the title must be"),
            ("createdAt", json!("soon"), "session.createdAt \"soon\""),
            ("id", json!("not-a-uuid"), "session.id \"not-a-uuid\" is not a UUID"),
        ] {
            let mut doc = export();
            doc["session"][field] = value;
            let (report, loaded) = load(&doc).remove(0);
            assert!(loaded.is_none() && !report.result.valid, "{field}");
            assert!(report.result.errors.join("\n").contains(says), "{field}: {report:?}");
        }
    }

    #[test]
    fn a_lone_surrogate_costs_that_character() {
        let mut doc = export();
        doc["nodes"][0]["data"]["thought"] = json!("cut SURROGATE here");
        let text = serde_json::to_string(&doc)
            .expect("json")
            .replace("SURROGATE", "\\ud83d");
        let tmp = tempfile::tempdir().expect("tempdir");
        let path = write(tmp.path(), "s.json", text.as_bytes());
        let (report, loaded) = load_export_file(&path).expect("read").remove(0);
        assert_eq!(loaded.expect("valid").thoughts[0].data.thought, "cut \u{FFFD} here");
        assert!(
            report.warnings[0].starts_with("s.json: 1 unpaired surrogate escape "),
            "{report:?}"
        );
    }

    #[test]
    fn files_that_are_no_session_export_are_refused() {
        let e = refused("s.md", b"# Cache design\n\n- **Session:** x\n");
        assert!(matches!(e, ExportFileError::TextExport { .. }), "{e}");
        assert!(e.to_string().contains("only the JSON export"), "{e}");
        let e = refused("garbage.bin", b"SQLite format 3\0");
        assert!(matches!(e, ExportFileError::NotJson { .. }), "{e}");
        let e = refused("other.json", br#"{"name": "web-app"}"#);
        assert!(
            matches!(&e, ExportFileError::NotSessionExport { found, .. } if found == "; its keys are name"),
            "{e}"
        );
        let e = refused("manifest.json", br#"{"id": "x", "thoughtFiles": []}"#);
        assert!(e.to_string().contains("looks like a session's manifest.json"), "{e}");
        for (name, text) in [("n.json", "3"), ("e.json", "[]"), ("o.json", "{}")] {
            let e = refused(name, text.as_bytes());
            assert!(matches!(e, ExportFileError::NotSessionExport { .. }), "{name}: {e}");
        }
        let mut doc = export();
        doc["version"] = json!("2.0");
        let e = refused("v2.json", &serde_json::to_vec(&doc).expect("json"));
        assert!(
            matches!(&e, ExportFileError::UnknownVersion { version, .. } if version == "\"2.0\""),
            "{e}"
        );
        // A number, even 1.0, is no version: said so, not "version 1.0;
        // this thoughtbox reads version 1.0".
        for (version, found) in [
            (json!(1.0), "the number 1.0"),
            (json!(1), "the number 1"),
            (json!(null), "null"),
        ] {
            let mut doc = export();
            doc["version"] = version;
            let e = refused("r4.json", &serde_json::to_vec(&doc).expect("json"));
            assert!(
                matches!(&e, ExportFileError::VersionNotString { found: f, .. } if f == found),
                "{e}"
            );
            assert!(
                e.to_string().contains(&format!(
                    "r4.json: its version is {found}; a SessionExport's version is a string, \"1.0\""
                )),
                "{e}"
            );
        }
        let mut doc = export();
        doc["nodes"] = json!({});
        let e = refused("nodes.json", &serde_json::to_vec(&doc).expect("json"));
        assert!(e.to_string().contains("its nodes are an object"), "{e}");
        let mut doc = export();
        doc["session"].as_object_mut().expect("object").remove("title");
        let e = refused(
            "session.json",
            &serde_json::to_vec(&json!([export(), doc])).expect("json"),
        );
        assert!(
            matches!(&e, ExportFileError::BadSession { at, .. } if at == " at index 1"),
            "{e}"
        );
        // Refusals are errors of the file given, not of storage.
        assert!(matches!(Error::from(e), Error::InvalidPayload { ref field, .. } if field == "file"));
        let missing = load_export_file(Path::new("/nonexistent/s.json"));
        assert!(matches!(missing, Err(ExportFileError::Io { .. })));
    }
}
