//! Reading a tree: finding its session directories, and loading one session
//! directory into ledger rows, checking everything on the way.
//!
//! A session is loaded completely or not at all: any missing file, corrupt
//! file, bad name or dangling link makes it invalid, and its report says why.
//! Two habits of the TypeScript Thoughtbox (1.2.x) are repaired instead, with
//! a warning, because its trees always have them:
//! - `prev` links that do not form one chain per branch (every node of a
//!   branch pointing at the fork point: a star), or a main chain forked after
//!   a restart: that chain is relinked in timestamp order, as our ledger
//!   would have linked it;
//! - `next` lists that disagree with `prev` (written once, never updated):
//!   `next` is derived from `prev`, so it is only used, where it agrees, to
//!   recover the creation order of siblings.
//!
//! The manifest decides which files belong to the session; numbered files it
//! does not list are reported and left out.
//!
//! This file reads a session directory's files into nodes; finding the
//! directories is in `find`, checking and repairing the nodes' links and
//! their creation order in `links`, and single-file exports in
//! `export_file`.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

use chrono::DateTime;
use serde::Deserialize;

use super::bounded::{self, Unread};
use super::integrity::{IntegrityValidationResult, SessionReport};
use super::{MANIFEST, REFERENCE_BRANCH_DIR, SessionManifest, is_session_id, sort_files, thought_file_number};
use crate::domain::{
    self, Critique, MAX_CRITIQUE_BYTES, MAX_CRITIQUE_MODEL_CHARS, MAX_THOUGHT_BYTES, MAX_THOUGHT_NUMBER,
    MAX_TITLE_CHARS, Session, Thought, ThoughtData, validate_branch_id,
};
use crate::error::Result;

mod export_file;
mod find;
mod links;
pub use export_file::{ExportFileError, is_export_file, load_export_file};
pub use find::{find_session_dirs, session_dirs_to_read};

/// A session read from a tree, ready to insert: thoughts in creation order.
#[derive(Debug, Clone)]
pub struct LoadedSession {
    pub session: Session,
    pub thoughts: Vec<Thought>,
}

/// The first of `candidates` that exists (a symbolic link, dangling or
/// not, counts: reading it is refused, saying why).
fn locate<const N: usize>(candidates: [PathBuf; N]) -> Option<PathBuf> {
    candidates.into_iter().find(|p| fs::symlink_metadata(p).is_ok())
}

/// A ThoughtNode as found on disk: numbers as plain integers so that zero or
/// negative values are reported rather than failing the parse, and every
/// link optional.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawNode {
    id: String,
    data: RawData,
    #[serde(default)]
    prev: Option<String>,
    #[serde(default)]
    next: Option<Vec<String>>,
    #[serde(default)]
    revises_node: Option<String>,
    #[serde(default)]
    branch_origin: Option<String>,
    #[serde(default)]
    branch_id: Option<String>,
    /// Creation order, written by our exporter; absent from other trees.
    #[serde(default)]
    seq: Option<i64>,
}

impl RawNode {
    /// The node with every node id it holds in the form the ledger keeps
    /// for session `sid` ([`canonical_node_id`]).
    fn in_session(self, sid: &str) -> RawNode {
        let id = |v: String| canonical_node_id(sid, v);
        RawNode {
            id: id(self.id),
            prev: self.prev.map(id),
            next: self.next.map(|next| next.into_iter().map(id).collect()),
            revises_node: self.revises_node.map(id),
            branch_origin: self.branch_origin.map(id),
            ..self
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawData {
    thought: String,
    thought_number: i64,
    #[serde(default)]
    total_thoughts: Option<i64>,
    next_thought_needed: bool,
    #[serde(default)]
    is_revision: Option<bool>,
    #[serde(default)]
    revises_thought: Option<i64>,
    #[serde(default)]
    branch_from_thought: Option<i64>,
    #[serde(default)]
    branch_id: Option<String>,
    #[serde(default)]
    needs_more_thoughts: Option<bool>,
    #[serde(default)]
    include_guide: Option<bool>,
    #[serde(default)]
    timestamp: Option<String>,
    #[serde(default)]
    critique: Option<Critique>,
    #[serde(default)]
    critique_requested: Option<bool>,
}

/// A node that passed the per-file checks.
struct Node {
    /// Where it was read from, for messages (`alt/004.json`).
    file: String,
    branch: Option<String>,
    id: String,
    prev: Option<String>,
    next: Option<Vec<String>>,
    revises_node: Option<String>,
    branch_origin: Option<String>,
    /// Milliseconds since the epoch, for ordering.
    millis: i64,
    /// Creation order from the file, when it has one.
    seq: Option<i64>,
    data: ThoughtData,
}

/// `s` as milliseconds since the epoch (for ordering) and in the ledger's
/// one form, UTC with milliseconds (`2026-03-01T08:00:00.000Z`), which
/// sorts as text in time order: a tree written by another tool may carry
/// offsets (`+02:00`) or another precision. None also for a time whose UTC
/// year is not 0000-9999: its text would not be RFC 3339 (`+10000-...`),
/// and the next export of it would not import.
fn parse_time(s: &str) -> Option<(i64, String)> {
    use chrono::Datelike;
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&chrono::Utc))
        .filter(|t| (0..=9999).contains(&t.year()))
        .map(|t| {
            (
                t.timestamp_millis(),
                t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            )
        })
}

/// Parse JSON as written by another program. Node.js writes text cut in the
/// middle of a character as half a surrogate pair (`"\ud83d"`), which no
/// JSON parser takes: such escapes become U+FFFD, as on the server's stdin.
/// Answers the value and how many escapes were replaced.
fn parse_repairing<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> serde_json::Result<(T, usize)> {
    match serde_json::from_slice(bytes) {
        Ok(v) => Ok((v, 0)),
        Err(e) => match crate::json_text::repair_surrogates(bytes) {
            Some((fixed, n)) => serde_json::from_slice(&fixed).map(|v| (v, n)).map_err(|_| e),
            None => Err(e),
        },
    }
}

/// A session id as the ledger keeps it: a UUID in lower case. UUIDs are
/// case-insensitive, and the server takes one in upper case (as some tools
/// write it) as the same session: so does a tree or a SessionExport.
fn canonical_session_id(id: &str) -> Option<String> {
    Some(id.to_ascii_lowercase()).filter(|sid| is_session_id(sid))
}

/// `id`, a node id (`{sessionId}:...`), with its session part as `sid`
/// (canonical) writes it when it names `sid` in another case.
fn canonical_node_id(sid: &str, id: String) -> String {
    match id.get(..sid.len()) {
        Some(head) if head != sid && head.eq_ignore_ascii_case(sid) && id[sid.len()..].starts_with(':') => {
            format!("{sid}{}", &id[sid.len()..])
        }
        _ => id,
    }
}

/// [`parse_time`]'s text alone.
fn canonical_time(s: &str) -> Option<String> {
    parse_time(s).map(|(_, text)| text)
}

fn small_number(v: i64) -> Option<u32> {
    u32::try_from(v).ok().filter(|n| (1..=MAX_THOUGHT_NUMBER).contains(n))
}

/// Load one session directory. Returns its report, and the session when it
/// is valid.
pub fn load_session(dir: &Path) -> (SessionReport, Option<LoadedSession>) {
    let mut report = SessionReport {
        session_id: dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        path: dir.to_path_buf(),
        result: IntegrityValidationResult::default(),
        warnings: Vec::new(),
    };
    let loaded = Loader {
        dir,
        report: &mut report,
        converted_time: None,
    }
    .load();
    report.result.settle();
    let loaded = loaded.filter(|_| report.result.valid);
    (report, loaded)
}

struct Loader<'a> {
    /// The session directory (for a SessionExport, the file: not read here).
    dir: &'a Path,
    report: &'a mut SessionReport,
    /// The first time given in another form than the ledger's, and the
    /// form it was stored in: the example the warning shows.
    converted_time: Option<(String, String)>,
}

impl Loader<'_> {
    /// Note a time stored in another form than the tree gave it.
    fn converted(&mut self, given: &str, stored: &str) {
        if given != stored && self.converted_time.is_none() {
            self.converted_time = Some((given.to_string(), stored.to_string()));
        }
    }

    fn error(&mut self, message: String) {
        self.report.result.errors.push(message);
    }

    /// Parse one JSON file of the tree, as [`parse_repairing`] does, with a
    /// warning for each repair.
    fn parse<T: serde::de::DeserializeOwned>(&mut self, shown: &str, bytes: &[u8]) -> Result<T, String> {
        let (v, repaired) = parse_repairing(bytes).map_err(|e| e.to_string())?;
        self.repaired(shown, repaired);
        Ok(v)
    }

    /// Warn that `repaired` lone surrogate escapes of `shown` became U+FFFD.
    fn repaired(&mut self, shown: &str, repaired: usize) {
        if repaired > 0 {
            self.report.warnings.push(format!(
                "{shown}: {repaired} unpaired surrogate escape{} (text cut in the middle of a character by \
                 the program that wrote it) replaced by U+FFFD",
                if repaired == 1 { "" } else { "s" }
            ));
        }
    }

    fn load(&mut self) -> Option<LoadedSession> {
        let r = &mut self.report.result;
        r.session_exists = self.dir.is_dir();
        if !r.session_exists {
            self.error("the session directory does not exist".into());
            return None;
        }
        let bytes = match bounded::read_regular(&self.dir.join(MANIFEST), bounded::MAX_MANIFEST_BYTES) {
            Ok(b) => b,
            Err(e) => {
                self.report.result.manifest_exists = !matches!(e, Unread::Missing);
                self.error(format!("{MANIFEST} {e}"));
                return None;
            }
        };
        self.report.result.manifest_exists = true;
        let mut manifest: SessionManifest = match self.parse(MANIFEST, &bytes) {
            Ok(m) => m,
            Err(e) => {
                self.error(format!("manifest.json is not a valid SessionManifest: {e}"));
                return None;
            }
        };
        self.report.result.manifest_valid = true;
        let Some(sid) = canonical_session_id(&manifest.id) else {
            self.error(format!("manifest id {:?} is not a UUID", manifest.id));
            return None;
        };
        manifest.id = sid.clone();
        self.report.session_id = sid.clone();
        let dir_name = self.dir.file_name().and_then(|n| n.to_str());
        if !dir_name.is_some_and(|n| n.eq_ignore_ascii_case(&sid)) {
            self.error(format!("the directory is not named after the manifest id {sid}"));
        }
        let session = self.session(&manifest, "metadata");
        let nodes = self.read_files(&manifest);
        self.warn_unlisted(&manifest);
        self.finish(&sid, session, nodes)
    }

    /// The checks common to a session directory and a SessionExport, once
    /// the session row and every node have been read: the links, then the
    /// creation order.
    fn finish(&mut self, sid: &str, session: Option<Session>, nodes: Vec<Node>) -> Option<LoadedSession> {
        if !self.report.result.errors.is_empty() || !self.missing_nothing() {
            return None;
        }
        let session = session?;
        if let Some((given, stored)) = &self.converted_time {
            self.report.warnings.push(format!(
                "times were converted to UTC with milliseconds, the form the ledger sorts by ({given} became {stored})"
            ));
        }
        let nodes = self.check_links(sid, nodes)?;
        let thoughts = self.creation_order(sid, nodes);
        Some(LoadedSession {
            session: Session {
                thought_count: thoughts.len() as u64,
                branch_count: thoughts
                    .iter()
                    .filter_map(|t| t.data.branch_id.as_deref())
                    .collect::<HashSet<_>>()
                    .len() as u64,
                ..session
            },
            thoughts,
        })
    }

    fn missing_nothing(&self) -> bool {
        let r = &self.report.result;
        r.missing_thought_files.is_empty() && r.missing_branch_files.values().all(Vec::is_empty)
    }

    /// The session row from the manifest's metadata; `fields` names where
    /// its times were read in messages (`metadata`, or `session` for a
    /// SessionExport's session record).
    fn session(&mut self, m: &SessionManifest, fields: &str) -> Option<Session> {
        let md = &m.metadata;
        let mut ok = true;
        let chars = md.title.chars().count();
        if domain::is_blank(&md.title) || md.title.contains('\0') || chars > MAX_TITLE_CHARS {
            self.error(format!(
                "the title must be 1 to {MAX_TITLE_CHARS} characters, not blank, without NUL (it has {chars})"
            ));
            ok = false;
        }
        let times = [
            ("createdAt", Some(&md.created_at)),
            ("updatedAt", Some(&md.updated_at)),
            ("completedAt", md.completed_at.as_ref()),
        ];
        let mut canonical = Vec::with_capacity(times.len());
        for (name, value) in times {
            canonical.push(value.and_then(|v| canonical_time(v)));
            if let Some(v) = value
                && canonical.last().is_some_and(Option::is_none)
            {
                self.error(format!(
                    "{fields}.{name} {v:?} is not an ISO 8601 date-time in the years 0000-9999 (UTC)"
                ));
                ok = false;
            }
        }
        for ((_, given), stored) in times.iter().zip(&canonical) {
            if let (Some(given), Some(stored)) = (given, stored) {
                self.converted(given, stored);
            }
        }
        let with_nul = md
            .description
            .iter()
            .chain(&md.tags)
            .chain(&md.domain)
            .any(|t| t.contains('\0'));
        if with_nul {
            self.error(format!(
                "{fields} holds a NUL character (U+0000) in its description, tags or domain"
            ));
            ok = false;
        }
        let mut tags: Vec<String> = Vec::new();
        for t in &md.tags {
            if !t.trim().is_empty() && !tags.contains(t) {
                tags.push(t.clone());
            }
        }
        if tags.len() != md.tags.len() {
            self.report
                .warnings
                .push("empty or repeated tags were dropped".to_string());
        }
        // The limits the server sets on new sessions (every list and search
        // answer carries these fields): what is over them is cut, with a
        // warning, rather than losing the session.
        let long = tags
            .iter()
            .filter(|t| t.chars().count() > domain::MAX_TAG_CHARS)
            .count();
        if long > 0 {
            tags.retain(|t| t.chars().count() <= domain::MAX_TAG_CHARS);
            self.report.warnings.push(format!(
                "{long} tag(s) longer than {} characters were dropped",
                domain::MAX_TAG_CHARS
            ));
        }
        if tags.len() > domain::MAX_TAGS {
            self.report
                .warnings
                .push(format!("{} tags: the first {} were kept", tags.len(), domain::MAX_TAGS));
            tags.truncate(domain::MAX_TAGS);
        }
        let mut cut = |field: &str, value: &Option<String>, max: usize| -> Option<String> {
            let value = value.as_ref()?;
            let chars = value.chars().count();
            if chars <= max {
                return Some(value.clone());
            }
            self.report
                .warnings
                .push(format!("the {field} has {chars} characters: cut to the first {max}"));
            Some(value.chars().take(max).collect())
        };
        let description = cut("description", &md.description, domain::MAX_DESCRIPTION_CHARS);
        let session_domain = cut("domain", &md.domain, domain::MAX_TAG_CHARS);
        let mut canonical = canonical.into_iter();
        let (Some(Some(created_at)), Some(Some(updated_at)), Some(completed_at)) =
            (canonical.next(), canonical.next(), canonical.next())
        else {
            return None;
        };
        ok.then(|| Session {
            id: m.id.clone(),
            title: md.title.clone(),
            description,
            tags,
            thought_count: 0,
            branch_count: 0,
            partition_path: None,
            // Not kept in the tree; the last change is the closest known value.
            last_accessed_at: updated_at.clone(),
            created_at,
            updated_at,
            completed_at,
            domain: session_domain,
        })
    }

    /// Read every file the manifest lists. Missing files are recorded in the
    /// result; unreadable or invalid ones as errors.
    fn read_files(&mut self, m: &SessionManifest) -> Vec<Node> {
        let mut nodes = Vec::new();
        for f in &m.thought_files {
            if thought_file_number(f).is_none() {
                self.error(format!(
                    "thoughtFiles lists {f:?}, which is not a thought file name (NNN.json)"
                ));
                continue;
            }
            let Some(path) = locate([self.dir.join(f)]) else {
                self.report.result.missing_thought_files.push(f.clone());
                continue;
            };
            if let Some(n) = self.read_node(&path, f, None, &m.id) {
                nodes.push(n);
            }
        }
        for (branch, files) in &m.branch_files {
            if validate_branch_id("branchId", branch).is_err() {
                self.error(format!(
                    "branchFiles names branch {branch:?}, which is not a valid branch id ([a-z0-9-], 1-64 characters); its files were not read"
                ));
                continue;
            }
            let ours = self.dir.join(branch);
            let reference = self.dir.join(REFERENCE_BRANCH_DIR).join(branch);
            // As for thought files: a folder linked from elsewhere would
            // import files from outside the session folder.
            let linked = [ours.clone(), self.dir.join(REFERENCE_BRANCH_DIR), reference.clone()]
                .into_iter()
                .find(|d| bounded::is_link(d));
            if let Some(link) = linked {
                let shown = link.strip_prefix(self.dir).unwrap_or(&link).display().to_string();
                self.error(format!(
                    "the branch folder {shown} is a symbolic link; import and validate follow no links inside a \
                     tree, so branch {branch:?} was not read"
                ));
                continue;
            }
            for f in files {
                if thought_file_number(f).is_none() {
                    self.error(format!(
                        "branchFiles[{branch}] lists {f:?}, which is not a thought file name (NNN.json)"
                    ));
                    continue;
                }
                let Some(path) = locate([ours.join(f), reference.join(f)]) else {
                    self.report
                        .result
                        .missing_branch_files
                        .entry(branch.clone())
                        .or_default()
                        .push(f.clone());
                    continue;
                };
                let shown = path
                    .strip_prefix(self.dir)
                    .map(|p| p.display().to_string())
                    .unwrap_or_else(|_| f.clone());
                if let Some(n) = self.read_node(&path, &shown, Some(branch), &m.id) {
                    nodes.push(n);
                }
            }
        }
        nodes
    }

    /// Parse and check one thought file.
    fn read_node(&mut self, path: &Path, shown: &str, branch: Option<&String>, sid: &str) -> Option<Node> {
        let bytes = match bounded::read_regular(path, bounded::MAX_THOUGHT_FILE_BYTES) {
            Ok(b) => b,
            Err(e) => {
                self.error(format!("{shown} {e}"));
                return None;
            }
        };
        let raw: RawNode = match self.parse(shown, &bytes) {
            Ok(n) => n,
            Err(e) => {
                self.error(format!("{shown} is not a valid ThoughtNode: {e}"));
                return None;
            }
        };
        let file_name = Path::new(shown).file_name().and_then(|n| n.to_str()).unwrap_or(shown);
        self.check_node(raw, shown, Some(file_name), branch, sid)
    }

    /// Check one ThoughtNode of session `sid`, stored on `branch` (None: the
    /// main chain); `shown` names it in messages, and `file_name`, for a
    /// node read from a file, is the name its number must match.
    fn check_node(
        &mut self,
        raw: RawNode,
        shown: &str,
        file_name: Option<&str>,
        branch: Option<&String>,
        sid: &str,
    ) -> Option<Node> {
        let before = self.report.result.errors.len();
        let raw = raw.in_session(sid);
        let mut d = raw.data;
        // The server refuses a NUL in new text; one in a tree written by
        // another program costs that character, not the session.
        if d.thought.contains('\0') {
            d.thought = d.thought.replace('\0', "\u{FFFD}");
            self.report.warnings.push(format!(
                "{shown}: NUL characters (U+0000) in the thought text replaced by U+FFFD"
            ));
        }
        let number = small_number(d.thought_number);
        if number.is_none() {
            self.error(format!(
                "{shown}: thoughtNumber {} is not between 1 and {MAX_THOUGHT_NUMBER}",
                d.thought_number
            ));
        }
        if let (Some(n), Some(file_name)) = (number, file_name)
            && thought_file_number(file_name) != Some(n)
        {
            self.error(format!(
                "{shown} holds thought {n}; its file name should be {:03}.json",
                n
            ));
        }
        for stated in [raw.branch_id.as_ref(), d.branch_id.as_ref()].into_iter().flatten() {
            if Some(stated) != branch {
                self.error(format!(
                    "{shown} says branchId {stated:?} but is stored as {}",
                    branch.map_or("a main-chain thought".to_string(), |b| format!(
                        "a thought of branch {b:?}"
                    ))
                ));
            }
        }
        if let Some(n) = number {
            let expected = domain::node_id(sid, branch.map(String::as_str), n);
            if raw.id != expected {
                self.error(format!("{shown}: node id {:?} should be {expected:?}", raw.id));
            }
        }
        if domain::is_blank(&d.thought) {
            self.error(format!("{shown}: the thought text is empty"));
        }
        if d.thought.len() > MAX_THOUGHT_BYTES {
            self.error(format!(
                "{shown}: the thought text is {} bytes; the limit is {MAX_THOUGHT_BYTES}",
                d.thought.len()
            ));
        }
        let total = match d.total_thoughts {
            None => number,
            Some(t) => {
                let t = small_number(t);
                if t.is_none() {
                    self.error(format!(
                        "{shown}: totalThoughts is not between 1 and {MAX_THOUGHT_NUMBER}"
                    ));
                }
                t
            }
        };
        let parsed = d.timestamp.as_deref().and_then(parse_time);
        if parsed.is_none() {
            self.error(format!(
                "{shown}: timestamp is missing or not an ISO 8601 date-time in the years 0000-9999 (UTC)"
            ));
        }
        let revises = d.revises_thought.map(|r| small_number(r).ok_or(r)).transpose();
        let from = d.branch_from_thought.map(|f| small_number(f).ok_or(f)).transpose();
        if let Err(bad) = revises {
            self.error(format!("{shown}: revisesThought {bad} is not a thought number"));
        }
        if let Err(bad) = from {
            self.error(format!("{shown}: branchFromThought {bad} is not a thought number"));
        }
        let mut critique = d.critique;
        if let Some(c) = &mut critique {
            // The server's limits on a client's critique: more would make
            // the thought too long to read back through the gateway.
            if c.text.len() > MAX_CRITIQUE_BYTES {
                self.error(format!(
                    "{shown}: the critique text is {} bytes; the limit is {MAX_CRITIQUE_BYTES}",
                    c.text.len()
                ));
            }
            // Earlier versions stored a client's model name uncut, and
            // exported it so: cut, as the server now cuts it, not refused.
            let model_chars = c.model.chars().count();
            if let Some((at, _)) = c.model.char_indices().nth(MAX_CRITIQUE_MODEL_CHARS) {
                c.model.truncate(at);
                self.report.warnings.push(format!(
                    "{shown}: the critique's model name ({model_chars} characters) cut to its first \
                     {MAX_CRITIQUE_MODEL_CHARS}"
                ));
            }
            // As in the thought text: the server keeps no NUL.
            if c.text.contains('\0') || c.model.contains('\0') {
                c.text = c.text.replace('\0', "\u{FFFD}");
                c.model = c.model.replace('\0', "\u{FFFD}");
                self.report.warnings.push(format!(
                    "{shown}: NUL characters (U+0000) in the critique replaced by U+FFFD"
                ));
            }
            match canonical_time(&c.timestamp) {
                Some(t) => {
                    self.converted(&c.timestamp, &t);
                    c.timestamp = t;
                }
                None => self.error(format!(
                    "{shown}: the critique's timestamp is not an ISO 8601 date-time in the years 0000-9999 (UTC)"
                )),
            }
        }
        let (millis, timestamp) = parsed.map_or((None, None), |(m, t)| (Some(m), Some(t)));
        if let (Some(given), Some(stored)) = (&d.timestamp, &timestamp) {
            self.converted(given, stored);
        }
        if self.report.result.errors.len() > before {
            return None;
        }
        let (Some(number), Some(total), Some(millis), Some(timestamp), Ok(revises), Ok(from)) =
            (number, total, millis, timestamp, revises, from)
        else {
            return None;
        };
        Some(Node {
            file: shown.to_string(),
            branch: branch.cloned(),
            id: raw.id,
            prev: raw.prev,
            next: raw.next,
            revises_node: raw.revises_node,
            branch_origin: raw.branch_origin,
            millis,
            seq: raw.seq,
            data: ThoughtData {
                thought: d.thought,
                thought_number: number,
                total_thoughts: total,
                next_thought_needed: d.next_thought_needed,
                is_revision: d.is_revision.unwrap_or(false) || revises.is_some(),
                revises_thought: revises,
                branch_from_thought: from,
                branch_id: branch.cloned(),
                needs_more_thoughts: d.needs_more_thoughts,
                include_guide: d.include_guide,
                timestamp,
                // Kept only where it says something: asked for, none received.
                critique_requested: (d.critique_requested == Some(true) && critique.is_none()).then_some(true),
                critique,
            },
        })
    }

    /// Warn about numbered files in the session's folders that the manifest
    /// does not list: they are not imported.
    fn warn_unlisted(&mut self, m: &SessionManifest) {
        let mut folders: Vec<(PathBuf, String, HashSet<&String>)> =
            vec![(self.dir.to_path_buf(), String::new(), m.thought_files.iter().collect())];
        for (branch, files) in &m.branch_files {
            if validate_branch_id("branchId", branch).is_ok() {
                let listed: HashSet<&String> = files.iter().collect();
                folders.push((self.dir.join(branch), format!("{branch}/"), listed.clone()));
                folders.push((
                    self.dir.join(REFERENCE_BRANCH_DIR).join(branch),
                    format!("{REFERENCE_BRANCH_DIR}/{branch}/"),
                    listed,
                ));
            }
        }
        let mut unlisted = Vec::new();
        for (folder, prefix, listed) in folders {
            let Ok(entries) = fs::read_dir(&folder) else { continue };
            let mut names: Vec<String> = entries
                .filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().to_str().map(str::to_string))
                .filter(|n| thought_file_number(n).is_some() && !listed.contains(n))
                .collect();
            sort_files(&mut names);
            unlisted.extend(names.into_iter().map(|n| format!("{prefix}{n}")));
        }
        if !unlisted.is_empty() {
            self.report.warnings.push(format!(
                "thought files not listed in the manifest were left out: {}",
                unlisted.join(", ")
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::links::{number_on_chain, revision_link};
    use super::*;

    const SID: &str = "1b9d6bcd-bbfd-4b2d-9b5d-ab8dfbbd4bed";

    /// Times as the ledger keeps them: UTC, milliseconds, four-digit years.
    #[test]
    fn times_are_converted_to_the_ledgers_form() {
        for (given, kept) in [
            ("2026-03-01T10:00:00+02:00", Some("2026-03-01T08:00:00.000Z")),
            ("2026-03-01T08:00:00Z", Some("2026-03-01T08:00:00.000Z")),
            ("2026-03-01T08:00:00.123456Z", Some("2026-03-01T08:00:00.123Z")),
            ("2026-03-01T08:00:00-00:00", Some("2026-03-01T08:00:00.000Z")),
            ("2026-03-01t08:00:00z", Some("2026-03-01T08:00:00.000Z")),
            ("2016-12-31T23:59:60Z", Some("2016-12-31T23:59:60.000Z")),
            ("0999-01-01T00:00:00.000Z", Some("0999-01-01T00:00:00.000Z")),
            // Out of the four-digit years once in UTC.
            ("0000-01-01T00:30:00+01:00", None),
            ("9999-12-31T23:30:00-01:00", None),
            ("yesterday", None),
        ] {
            assert_eq!(canonical_time(given).as_deref(), kept, "{given}");
        }
    }

    fn put(path: &Path, v: &Value) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, serde_json::to_vec(v).unwrap()).unwrap();
    }

    fn node(id: &str, n: u32, secs: u32, prev: Option<&str>, branch: Option<&str>) -> Value {
        json!({
            "id": id, "prev": prev, "next": [], "branchId": branch,
            "data": { "thought": format!("t{n}"), "thoughtNumber": n, "totalThoughts": n, "nextThoughtNeeded": true,
                      "timestamp": format!("2025-01-01T00:00:{secs:02}.000Z"), "branchId": branch,
                      "branchFromThought": branch.map(|_| 1) }
        })
    }

    fn session(dir: &Path, main: &[(u32, u32, Option<&str>)], branch: &[(u32, u32, Option<&str>)]) {
        let files: Vec<String> = main.iter().map(|(n, _, _)| format!("{n:03}.json")).collect();
        let bfiles: Vec<String> = branch.iter().map(|(n, _, _)| format!("{n:03}.json")).collect();
        put(
            &dir.join(MANIFEST),
            &json!({ "id": SID, "version": "1.0.0", "thoughtFiles": files, "branchFiles": { "alt": bfiles },
                     "metadata": { "title": "t", "tags": [], "createdAt": "2025-01-01T00:00:00Z", "updatedAt": "2025-01-01T00:00:00Z" } }),
        );
        for (n, secs, prev) in main {
            put(
                &dir.join(format!("{n:03}.json")),
                &node(&format!("{SID}:{n}"), *n, *secs, *prev, None),
            );
        }
        for (n, secs, prev) in branch {
            put(
                &dir.join("branches/alt").join(format!("{n:03}.json")),
                &node(&format!("{SID}:alt:{n}"), *n, *secs, *prev, Some("alt")),
            );
        }
    }

    #[test]
    fn backward_chains_keep_their_links_and_order() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join(SID);
        let p3 = format!("{SID}:3");
        let p2 = format!("{SID}:2");
        // Created 3, 2, 1, all in the same millisecond: only the links tell the order.
        session(&dir, &[(1, 0, Some(&p2)), (2, 0, Some(&p3)), (3, 0, None)], &[]);
        let (report, loaded) = load_session(&dir);
        assert!(report.result.valid, "{report:?}");
        let order: Vec<u32> = loaded.unwrap().thoughts.iter().map(|t| t.data.thought_number).collect();
        assert_eq!(order, [3, 2, 1]);
        assert!(
            report.warnings.iter().all(|w| !w.contains("relinked")),
            "{:?}",
            report.warnings
        );
    }

    /// Set fields of the ThoughtNode in `path`.
    fn edit(path: &Path, fields: Value) {
        let mut v: Value = serde_json::from_slice(&fs::read(path).unwrap()).unwrap();
        for (k, x) in fields.as_object().unwrap() {
            v[k] = x.clone();
        }
        put(path, &v);
    }

    #[test]
    fn seq_orders_thoughts_that_links_and_timestamps_leave_open() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join(SID);
        let (p1, p2) = (format!("{SID}:1"), format!("{SID}:2"));
        // Main thought 2 and the branch's first thought in one second; main
        // thought 3 stamped before both (the clock went back).
        session(
            &dir,
            &[(1, 0, None), (2, 5, Some(&p1)), (3, 1, Some(&p2))],
            &[(2, 5, Some(&p1))],
        );
        let branch = dir.join("branches/alt/002.json");
        edit(&branch, json!({ "branchOrigin": p1 }));
        let order = |dir: &Path| {
            let (report, loaded) = load_session(dir);
            assert!(report.result.valid, "{report:?}");
            assert!(report.warnings.iter().all(|w| !w.contains("relinked")), "{report:?}");
            loaded
                .unwrap()
                .thoughts
                .into_iter()
                .map(|t| t.node_id)
                .collect::<Vec<_>>()
        };
        let alt = format!("{SID}:alt:2");
        let p3 = format!("{SID}:3");
        // Without `seq`: timestamps, then the order of the files.
        assert_eq!(order(&dir), [&p1, &p2, &p3, &alt].map(String::clone));
        // Recorded 1, the branch, 2, 3.
        for (file, seq) in [("001.json", 10), ("002.json", 12), ("003.json", 13)] {
            edit(&dir.join(file), json!({ "seq": seq }));
        }
        edit(&branch, json!({ "seq": 11 }));
        assert_eq!(order(&dir), [&p1, &alt, &p2, &p3].map(String::clone));
    }

    #[test]
    fn star_shaped_branches_become_chains() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join(SID);
        let p1 = format!("{SID}:1");
        session(
            &dir,
            &[(1, 0, None), (2, 5, Some(&p1))],
            &[(3, 4, Some(&p1)), (2, 2, Some(&p1))],
        );
        let (report, loaded) = load_session(&dir);
        assert!(report.result.valid, "{report:?}");
        assert!(report.warnings.iter().any(|w| w.contains("relinked")));
        let thoughts = loaded.unwrap().thoughts;
        let by_id = |id: &str| thoughts.iter().find(|t| t.node_id == id).unwrap();
        assert_eq!(by_id(&format!("{SID}:alt:2")).prev_node.as_deref(), Some(p1.as_str()));
        assert_eq!(by_id(&format!("{SID}:alt:3")).prev_node, Some(format!("{SID}:alt:2")));
        // Creation order follows the timestamps where nothing else decides.
        let order: Vec<&str> = thoughts.iter().map(|t| t.node_id.as_str()).collect();
        assert_eq!(order.first(), Some(&p1.as_str()));
        assert_eq!(order.last(), Some(&format!("{SID}:2").as_str()));
    }

    #[test]
    fn a_thought_linked_to_itself_is_relinked() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join(SID);
        let (p1, p2, p3) = (format!("{SID}:1"), format!("{SID}:2"), format!("{SID}:3"));
        // Thought 3 recorded twice: 1.2.2 left it pointing at itself.
        session(&dir, &[(1, 0, None), (2, 1, Some(&p1)), (3, 2, Some(&p3))], &[]);
        let mut three = node(&p3, 3, 2, Some(&p3), None);
        three["next"] = json!([p3]);
        put(&dir.join("003.json"), &three);
        let (report, loaded) = load_session(&dir);
        assert!(report.result.valid, "{report:?}");
        assert!(
            report
                .warnings
                .iter()
                .any(|w| w.contains("003.json: prev named the node itself"))
        );
        let thoughts = loaded.unwrap().thoughts;
        let prev: Vec<Option<&str>> = thoughts.iter().map(|t| t.prev_node.as_deref()).collect();
        assert_eq!(prev, [None, Some(p1.as_str()), Some(p2.as_str())]);
    }

    #[test]
    fn invisible_text_is_refused_as_the_gateway_refuses_it() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join(SID);
        session(&dir, &[(1, 0, None), (2, 1, Some(&format!("{SID}:1")))], &[]);
        let mut bad = node(&format!("{SID}:2"), 2, 1, Some(&format!("{SID}:1")), None);
        bad["data"]["thought"] = json!("\u{200B}\u{FEFF}");
        put(&dir.join("002.json"), &bad);
        let (report, loaded) = load_session(&dir);
        assert!(loaded.is_none() && !report.result.valid);
        assert!(report.result.errors.join("\n").contains("empty"), "{report:?}");
    }

    /// Node.js writes text cut in the middle of an emoji as a lone surrogate
    /// escape, and a NUL as it is: that character becomes U+FFFD, with a
    /// warning, rather than making the whole session invalid.
    #[test]
    fn lone_surrogates_and_nul_in_a_thought_cost_that_character_only() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join(SID);
        session(&dir, &[(1, 0, None), (2, 1, Some(&format!("{SID}:1")))], &[]);
        let mut two = node(&format!("{SID}:2"), 2, 1, Some(&format!("{SID}:1")), None);
        two["data"]["thought"] = json!("cut here SURROGATE and a NUL\u{0}there");
        let text = serde_json::to_string(&two).unwrap().replace("SURROGATE", "\\ud83d");
        fs::write(dir.join("002.json"), text).unwrap();
        let (report, loaded) = load_session(&dir);
        assert!(report.result.valid, "{report:?}");
        let warnings = report.warnings.join("\n");
        assert!(
            warnings.contains("002.json: 1 unpaired surrogate escape "),
            "{warnings}"
        );
        assert!(warnings.contains("002.json: NUL characters"), "{warnings}");
        let thoughts = loaded.unwrap().thoughts;
        assert_eq!(thoughts[1].data.thought, "cut here \u{FFFD} and a NUL\u{FFFD}there");
    }

    #[test]
    fn nul_in_the_metadata_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join(SID);
        session(&dir, &[(1, 0, None)], &[]);
        let mut manifest: Value = serde_json::from_slice(&fs::read(dir.join(MANIFEST)).unwrap()).unwrap();
        manifest["metadata"]["tags"] = json!(["a\u{0}b"]);
        put(&dir.join(MANIFEST), &manifest);
        let (report, loaded) = load_session(&dir);
        assert!(loaded.is_none() && !report.result.valid);
        assert!(report.result.errors.join("\n").contains("NUL"), "{report:?}");
    }

    /// An import must not take 3 MiB descriptions the server refuses, which
    /// make every list and search answer too long: what is over the server's
    /// limits is cut, with a warning; the session is kept.
    #[test]
    fn metadata_over_the_limits_is_cut_with_a_warning() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join(SID);
        session(&dir, &[(1, 0, None)], &[]);
        let mut manifest: Value = serde_json::from_slice(&fs::read(dir.join(MANIFEST)).unwrap()).unwrap();
        let mut tags: Vec<String> = (0..105).map(|i| format!("t{i}")).collect();
        tags.push("x".repeat(201));
        manifest["metadata"]["tags"] = json!(tags);
        manifest["metadata"]["description"] = json!("é".repeat(3 << 20));
        manifest["metadata"]["domain"] = json!("d".repeat(300));
        put(&dir.join(MANIFEST), &manifest);
        let (report, loaded) = load_session(&dir);
        assert!(report.result.valid, "{report:?}");
        let session = loaded.unwrap().session;
        assert_eq!(
            session.description.unwrap().chars().count(),
            domain::MAX_DESCRIPTION_CHARS
        );
        assert_eq!(session.domain.unwrap().len(), domain::MAX_TAG_CHARS);
        assert_eq!(session.tags.len(), domain::MAX_TAGS);
        assert_eq!(session.tags[0], "t0");
        let warnings = report.warnings.join("\n");
        for says in [
            "1 tag(s) longer than 200",
            "105 tags: the first 100",
            "description has 3145728",
            "domain has 300",
        ] {
            assert!(warnings.contains(says), "{says}: {warnings}");
        }
    }

    #[test]
    fn dangling_links_and_bad_numbers_are_errors() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join(SID);
        let ghost = format!("{SID}:7");
        session(&dir, &[(1, 0, None), (2, 1, Some(&ghost))], &[]);
        let (report, loaded) = load_session(&dir);
        assert!(loaded.is_none() && !report.result.valid);
        assert!(
            report.result.errors[0].contains("not a node of this session"),
            "{report:?}"
        );

        let mut bad = node(&format!("{SID}:1"), 1, 0, None, None);
        bad["data"]["thoughtNumber"] = json!(0);
        bad["data"]["thought"] = json!("  ");
        put(&dir.join("001.json"), &bad);
        let (report, _) = load_session(&dir);
        let errors = report.result.errors.join("\n");
        assert!(
            errors.contains("thoughtNumber 0") && errors.contains("empty"),
            "{errors}"
        );
    }

    /// `revisesThought` and `revisesNode` name one thought of the node's own
    /// chain: files where they disagree are refused with both values and
    /// what each would have to be; `revisesNode` alone gives the number.
    #[test]
    fn revision_links_must_agree() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join(SID);
        let (p1, p2, alt2) = (format!("{SID}:1"), format!("{SID}:2"), format!("{SID}:alt:2"));
        session(
            &dir,
            &[(1, 0, None), (2, 1, Some(&p1)), (3, 2, Some(&p2))],
            &[(2, 3, Some(&p1)), (3, 4, Some(&alt2))],
        );
        let three = dir.join("003.json");
        let alt3 = dir.join("branches/alt/003.json");
        // As messages name it: with the system's separator.
        let alt3_name = Path::new("branches").join("alt").join("003.json").display().to_string();
        let set = |path: &Path, number: Value, node: Value| {
            let mut v: Value = serde_json::from_slice(&fs::read(path).unwrap()).unwrap();
            v["data"]["revisesThought"] = number;
            v["revisesNode"] = node;
            put(path, &v);
        };
        let errors = |dir: &Path| {
            let (report, loaded) = load_session(dir);
            assert!(loaded.is_none() && !report.result.valid, "{report:?}");
            report.result.errors.join("\n")
        };

        // As the server and Thoughtbox 1.2.x write them.
        set(&three, json!(1), json!(p1));
        set(&alt3, json!(2), json!(alt2));
        let (report, loaded) = load_session(&dir);
        assert!(report.result.valid, "{report:?}");
        assert!(!report.warnings.join("\n").contains("revises"), "{report:?}");
        let loaded = loaded.unwrap();
        let revising = |id: &str| {
            let t = loaded.thoughts.iter().find(|t| t.node_id == id).unwrap();
            (t.data.revises_thought, t.revises_node.clone(), t.data.is_revision)
        };
        assert_eq!(revising(&format!("{SID}:3")), (Some(1), Some(p1.clone()), true));
        assert_eq!(revising(&format!("{SID}:alt:3")), (Some(2), Some(alt2.clone()), true));

        // Another thought of the same chain.
        set(&three, json!(1), json!(p2));
        let e = errors(&dir);
        assert!(
            e.contains(&format!(
                "003.json: revisesThought 1 and revisesNode {p2} (thought 2) disagree: they must name one thought, \
                 either revisesThought 1 with revisesNode {p1} or revisesThought 2 with revisesNode {p2}"
            )),
            "{e}"
        );
        assert!(!e.contains("not a node of this session"), "one error for the link: {e}");
        set(&three, json!(1), json!(p1));

        // A thought of another chain: the main chain's thought 2 from the branch.
        set(&alt3, json!(2), json!(p2));
        let e = errors(&dir);
        assert!(
            e.contains(&format!(
                "{alt3_name}: revisesThought 2 and revisesNode {p2} disagree: a thought of branch \
                 \"alt\" revises one of branch \"alt\", so revisesThought 2 goes with revisesNode {alt2}"
            )),
            "{e}"
        );

        // revisesNode alone, of another chain: no number to take.
        set(&alt3, Value::Null, json!(p1));
        let e = errors(&dir);
        assert!(
            e.contains(&format!(
                "{alt3_name}: revisesNode {p1} is not a thought of branch \"alt\", and revisesThought \
                 is not given"
            )) && e.contains(&format!("revisesNode {SID}:alt:N")),
            "{e}"
        );

        // revisesNode alone, of its own chain: the number comes from it.
        set(&alt3, Value::Null, json!(alt2));
        let (report, loaded) = load_session(&dir);
        assert!(report.result.valid, "{report:?}");
        let taken = format!("{alt3_name}: revisesThought was missing; 2 was taken from revisesNode {alt2}");
        assert!(report.warnings.contains(&taken), "{report:?}");
        let alt3 = loaded
            .unwrap()
            .thoughts
            .into_iter()
            .find(|t| t.node_id.ends_with(":alt:3"))
            .unwrap();
        assert_eq!(
            (alt3.data.revises_thought, alt3.revises_node, alt3.data.is_revision),
            (Some(2), Some(alt2), true)
        );
    }

    /// Only the ledger's own form of a node id gives a number: no other
    /// session, chain, padding or sign.
    #[test]
    fn a_revised_node_is_read_in_the_ledgers_form_only() {
        const OTHER: &str = "2b9d6bcd-bbfd-4b2d-9b5d-ab8dfbbd4bed";
        for (branch, node, number) in [
            (None, format!("{SID}:12"), Some(12)),
            (Some("alt"), format!("{SID}:alt:12"), Some(12)),
            (None, format!("{SID}:alt:12"), None),
            (Some("alt"), format!("{SID}:12"), None),
            (Some("alt"), format!("{SID}:alt-2:12"), None),
            (None, format!("{OTHER}:12"), None),
            (None, format!("{SID}:012"), None),
            (None, format!("{SID}:+12"), None),
            (None, format!("{SID}:0"), None),
            (None, format!("{SID}:"), None),
            (None, "12".to_string(), None),
        ] {
            assert_eq!(number_on_chain(SID, branch, &node), number, "{branch:?} {node}");
        }
        assert_eq!(revision_link(SID, None, None, None), Ok(None));
        assert_eq!(
            revision_link(SID, Some("alt"), Some(4), None),
            Ok(Some((4, format!("{SID}:alt:4"))))
        );
    }
}
