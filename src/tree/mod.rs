//! The filesystem layout (docs/operations.md, "Export to the directory
//! layout"): the ledger as a directory tree of JSON files, which the
//! TypeScript Thoughtbox keeps and other tools read.
//!
//! ```text
//! DIR/config.json
//! DIR/projects/{project}/sessions/{partition}/{sessionId}/manifest.json
//!                                                        /001.json 002.json ...
//!                                                        /{branchId}/004.json ...
//! ```
//!
//! A thought file is named after its thought number (zero-padded to three
//! digits, wider past 999) and holds one ThoughtNode. [`writer`] rebuilds the
//! tree from the database, [`reader`] loads and checks one session directory
//! of our layout or the TypeScript Thoughtbox's (`branches/{branchId}/`, flat
//! or partitioned sessions) or a SessionExport JSON file through the same
//! checks, [`integrity`] holds the IntegrityValidationResult, and
//! [`importer`] brings whole trees (or such a file) into the database.
//!
//! Every name that becomes part of a path is checked here first: session ids
//! must be UUIDs, branch ids `[a-z0-9-]{1,64}`, thought files `<digits>.json`,
//! so nothing read from a tree or the database can point outside it.

pub mod bounded;
pub mod importer;
pub mod integrity;
pub mod reader;
pub mod threads;
pub mod writer;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::domain::ConfigKey;
use crate::error::{Error, Result};

/// Version written into every manifest.
pub const MANIFEST_VERSION: &str = "1.0.0";
/// Manifest file name inside a session directory.
pub const MANIFEST: &str = "manifest.json";
/// Configuration file at the root of a tree.
pub const CONFIG: &str = "config.json";
pub use crate::domain::layout::{DEFAULT_PROJECT, is_project_name, is_session_id, project_from_tags};
/// The TypeScript Thoughtbox keeps branch folders under this directory.
pub const REFERENCE_BRANCH_DIR: &str = "branches";

/// A session folder's `manifest.json` (SessionManifest). `metadata` also
/// carries `completedAt` and `domain` when the session has them, so that a
/// round trip keeps them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionManifest {
    pub id: String,
    pub version: String,
    pub thought_files: Vec<String>,
    /// Optional on reading: a session without branches may leave it out.
    #[serde(default)]
    pub branch_files: BTreeMap<String, Vec<String>>,
    pub metadata: ManifestMetadata,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManifestMetadata {
    pub title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub tags: Vec<String>,
    pub created_at: String,
    pub updated_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
}

/// Reject a session id that is not a UUID before it becomes a path.
pub fn check_session_id(id: &str) -> Result<()> {
    if is_session_id(id) {
        Ok(())
    } else {
        Err(Error::invalid(
            "sessionId",
            format!("session id {id:?} is not a lower-case UUID; refusing to use it as a directory name"),
        ))
    }
}

/// The file holding thought `n`: `001.json`, ..., `999.json`, `1000.json`.
pub fn thought_file(n: u32) -> String {
    format!("{n:03}.json")
}

/// The thought number a file name stands for, when it is `<digits>.json`.
pub fn thought_file_number(name: &str) -> Option<u32> {
    let digits = name.strip_suffix(".json")?;
    if digits.is_empty() || digits.len() > 10 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Sort thought file names by number (the TypeScript Thoughtbox sorted them
/// as strings, which puts `1000.json` before `101.json`).
pub fn sort_files(files: &mut [String]) {
    files.sort_by_key(|f| (thought_file_number(f), f.clone()));
}

/// Check a project name given on the command line.
pub fn check_project(p: &str) -> Result<()> {
    if is_project_name(p) {
        Ok(())
    } else {
        Err(Error::invalid(
            "project",
            format!("project {p:?} must be 1-64 characters of letters, digits, '.', '_' and '-' (and not only dots)"),
        ))
    }
}

/// The folder of a project named on the command line (`export --project`):
/// made the way a `project:<p>` tag's is (`my app/v2` is `my-app-v2`), so
/// the flag puts sessions where the tag would; refused when nothing usable
/// is left (`..`, only punctuation).
pub fn project_folder(p: &str) -> Result<String> {
    let folder = project_from_tags(&[format!("project:{p}")]);
    if folder == DEFAULT_PROJECT && p.trim() != DEFAULT_PROJECT {
        return Err(Error::invalid(
            "project",
            format!("project {p:?} leaves no folder name: use letters or digits (other characters become '-')"),
        ));
    }
    Ok(folder)
}

/// `DIR/projects/{project}/sessions/{partition?}/{sessionId}`.
pub fn session_dir(root: &Path, project: &str, partition: Option<&str>, session_id: &str) -> PathBuf {
    let mut p = root.join("projects").join(project).join("sessions");
    if let Some(part) = partition {
        p.push(part);
    }
    p.push(session_id);
    p
}

fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
    let context = context.into();
    move |e| Error::io(context, e)
}

/// Whether `bytes` are a Thoughtbox tree's `config.json`: a JSON object
/// with `installId` or `sessionPartitionGranularity` (a byte-order mark
/// allowed). A project folder's own `config.json` is not.
pub fn is_our_config(bytes: &[u8]) -> bool {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(bytes).is_ok_and(|m| names_settings(&m))
}

/// Whether a JSON object has a key only a tree's `config.json` has:
/// `installId` or `sessionPartitionGranularity`.
pub(crate) fn names_settings(map: &serde_json::Map<String, serde_json::Value>) -> bool {
    [ConfigKey::InstallId, ConfigKey::SessionPartitionGranularity]
        .iter()
        .any(|k| map.contains_key(k.name()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_must_be_uuids() {
        assert!(is_session_id("a1b2c3d4-e5f6-7890-abcd-ef1234567890"));
        for bad in [
            "",
            "..",
            "../../etc",
            "A1B2C3D4-E5F6-7890-ABCD-EF1234567890",
            "a1b2c3d4-e5f6-7890-abcd-ef123456789",
            "a1b2c3d4/e5f6-7890-abcd-ef1234567890",
            "a1b2c3d4-e5f6-7890-abcd-ef12345678901",
        ] {
            assert!(!is_session_id(bad), "{bad}");
            assert!(check_session_id(bad).is_err());
        }
    }

    #[test]
    fn file_names_sort_numerically() {
        assert_eq!(thought_file(7), "007.json");
        assert_eq!(thought_file(1000), "1000.json");
        assert_eq!(thought_file_number("0042.json"), Some(42));
        for bad in [
            "x.json",
            ".json",
            "1.json.tmp",
            "../1.json",
            "-1.json",
            "99999999999.json",
        ] {
            assert_eq!(thought_file_number(bad), None, "{bad}");
        }
        let mut files = vec!["1000.json".to_string(), "101.json".into(), "002.json".into()];
        sort_files(&mut files);
        assert_eq!(files, ["002.json", "101.json", "1000.json"]);
    }

    #[test]
    fn projects_never_escape() {
        assert_eq!(project_from_tags(&["x".into(), "project:api".into()]), "api");
        assert_eq!(project_from_tags(&["project:my app/v2".into()]), "my-app-v2");
        assert_eq!(project_from_tags(&["project:..".into()]), DEFAULT_PROJECT);
        assert_eq!(project_from_tags(&["project:../..".into()]), "..-..");
        assert_eq!(project_from_tags(&[]), DEFAULT_PROJECT);
        assert!(check_project("../x").is_err());
        assert!(check_project("..").is_err());
        assert!(check_project("ok_1.2").is_ok());
        // Names in other scripts are kept, not turned into dashes, so
        // different projects do not share one folder.
        assert_eq!(project_from_tags(&["project:数据库".into()]), "数据库");
        assert_eq!(project_from_tags(&["project:проект сервис".into()]), "проект-сервис");
        assert_eq!(project_from_tags(&["project:cafe\u{301}".into()]), "café");
        assert!(check_project("数据库").is_ok());
        assert!(check_project("数据/库").is_err());
        // The command line's --project names the folder the tag would.
        assert_eq!(project_folder("my app/v2").unwrap(), "my-app-v2");
        assert_eq!(project_folder("api").unwrap(), "api");
        assert_eq!(project_folder("_default").unwrap(), DEFAULT_PROJECT);
        for bad in ["..", "", "  ", "..."] {
            assert!(project_folder(bad).is_err(), "{bad:?}");
        }
    }
}
