//! IntegrityValidationResult (one per session checked) and the report made
//! for each session directory by `validate` and `import`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;

/// The specification's IntegrityValidationResult, field for field.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IntegrityValidationResult {
    /// Every check passed.
    pub valid: bool,
    pub session_exists: bool,
    pub manifest_exists: bool,
    /// The manifest parses as a SessionManifest.
    pub manifest_valid: bool,
    /// Thought files the manifest lists but the directory lacks.
    pub missing_thought_files: Vec<String>,
    /// Branch id to the branch files the manifest lists but the directory lacks.
    pub missing_branch_files: BTreeMap<String, Vec<String>>,
    pub errors: Vec<String>,
}

impl IntegrityValidationResult {
    /// Set `valid` from the other fields.
    pub fn settle(&mut self) {
        self.valid = self.session_exists
            && self.manifest_exists
            && self.manifest_valid
            && self.missing_thought_files.is_empty()
            && self.missing_branch_files.values().all(Vec::is_empty)
            && self.errors.is_empty();
    }
}

/// One session directory's result, as `validate` and `import` print it: the
/// IntegrityValidationResult plus which session and directory it is about and
/// what was repaired on reading (`warnings`, which do not make it invalid).
/// For a session of a SessionExport file, `path` is the file, and the file
/// and its session record stand for the directory and its manifest.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionReport {
    /// The manifest's id, else the directory name.
    pub session_id: String,
    pub path: PathBuf,
    #[serde(flatten)]
    pub result: IntegrityValidationResult,
    pub warnings: Vec<String>,
}

impl SessionReport {
    /// The report as indented lines for people.
    pub fn describe(&self) -> String {
        let r = &self.result;
        let mut s = format!(
            "{} {}  {}\n",
            if r.valid { "valid  " } else { "INVALID" },
            self.session_id,
            self.path.display()
        );
        if !r.session_exists {
            s.push_str("    session directory missing\n");
        }
        if !r.manifest_exists {
            s.push_str("    manifest.json missing\n");
        } else if !r.manifest_valid {
            s.push_str("    manifest.json is not a valid SessionManifest\n");
        }
        if !r.missing_thought_files.is_empty() {
            s.push_str(&format!(
                "    missing thought files: {}\n",
                r.missing_thought_files.join(", ")
            ));
        }
        for (branch, files) in r.missing_branch_files.iter().filter(|(_, f)| !f.is_empty()) {
            s.push_str(&format!("    missing files of branch {branch}: {}\n", files.join(", ")));
        }
        for e in &r.errors {
            s.push_str(&format!("    error: {e}\n"));
        }
        for w in &self.warnings {
            s.push_str(&format!("    warning: {w}\n"));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_needs_every_check() {
        let mut r = IntegrityValidationResult {
            session_exists: true,
            manifest_exists: true,
            manifest_valid: true,
            ..Default::default()
        };
        r.settle();
        assert!(r.valid);
        r.missing_branch_files.insert("alt".into(), vec!["004.json".into()]);
        r.settle();
        assert!(!r.valid);
        let json = serde_json::to_value(&r).unwrap();
        for key in [
            "valid",
            "sessionExists",
            "manifestExists",
            "manifestValid",
            "missingThoughtFiles",
            "missingBranchFiles",
            "errors",
        ] {
            assert!(json.get(key).is_some(), "{key}");
        }
    }
}
