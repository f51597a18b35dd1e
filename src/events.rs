//! The event stream (docs/gateway.md, "Events"): one ThoughtboxEvent JSON
//! object per line, `{ type, timestamp, sessionId?, data }`, for tools that
//! watch an agent reason. Off by default; `THOUGHTBOX_EVENTS=stderr` or
//! `=PATH` (or `--events`) turns it on. Never stdout, which carries JSON-RPC.
//! A file is opened for appending, so the stream survives restarts. Writing
//! is best effort: a failure is logged and never fails the operation that
//! caused it.

use std::fs::{DirBuilder, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;
use serde_json::{Value, json};

use crate::domain::{self, Session, Thought};

/// Where events go.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum EventTarget {
    #[default]
    Off,
    Stderr,
    File(PathBuf),
}

impl EventTarget {
    /// `stderr`; a file path (a leading `~` is the home directory); empty,
    /// `off`, `false`, `0` or `none` for off.
    /// `stdout` is refused: it carries the MCP protocol.
    pub fn parse(s: &str) -> Result<EventTarget, String> {
        let t = s.trim();
        match t.to_ascii_lowercase().as_str() {
            "" | "off" | "false" | "0" | "none" => Ok(EventTarget::Off),
            "stderr" => Ok(EventTarget::Stderr),
            "stdout" | "-" => {
                Err("events never go to stdout, which carries the MCP protocol; use stderr or a file path".into())
            }
            _ => crate::config::expand_operator_path(PathBuf::from(t))
                .map(EventTarget::File)
                .map_err(|e| e.to_string()),
        }
    }
}

/// ThoughtboxEvent `type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EventType {
    SessionStarted,
    SessionLoaded,
    ThoughtAdded,
    ThoughtRevised,
    BranchCreated,
    SessionExported,
    CipherLoaded,
    StageChanged,
    SessionCompleted,
}

#[derive(Serialize)]
struct Line<'a> {
    #[serde(rename = "type")]
    kind: EventType,
    timestamp: String,
    #[serde(rename = "sessionId", skip_serializing_if = "Option::is_none")]
    session_id: Option<&'a str>,
    data: &'a Value,
}

/// The event writer of one server process.
#[derive(Debug, Default)]
pub struct Events {
    target: EventTarget,
    file: Mutex<Option<File>>,
    /// A failure was already logged at warning level (later ones are debug).
    failing: AtomicBool,
    /// A write failed, perhaps part-way: the next event starts on a new
    /// line.
    torn: AtomicBool,
    hide_text: bool,
}

/// Write all of `bytes`; when it fails, say how many went out first.
fn write_counted(f: &mut File, bytes: &[u8]) -> Result<(), (usize, std::io::Error)> {
    let mut sent = 0;
    while sent < bytes.len() {
        match f.write(&bytes[sent..]) {
            Ok(0) => return Err((sent, std::io::ErrorKind::WriteZero.into())),
            Ok(n) => sent += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err((sent, e)),
        }
    }
    Ok(())
}

fn open_append(path: &Path) -> std::io::Result<File> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        DirBuilder::new().recursive(true).create(dir)?;
    }
    let mut opts = crate::private::file_options();
    opts.create(true).append(true);
    let file = opts.open(path)?;
    if crate::stdio::is_stdin_or_stdout(&file) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "it is the server's stdin or stdout, which carry the MCP protocol",
        ));
    }
    Ok(file)
}

impl Events {
    pub fn new(target: EventTarget) -> Events {
        // stderr that is stdout's own pipe or socket (inetd) is the protocol stream.
        let target = match target {
            EventTarget::Stderr if crate::stdio::stderr_is_stdout() => EventTarget::Off,
            other => other,
        };
        let events = Events {
            target,
            ..Events::default()
        };
        if let EventTarget::File(path) = &events.target {
            match open_append(path) {
                Ok(f) => *events.lock() = Some(f),
                Err(e) => events.failed(&format!("opening {}: {e}", path.display())),
            }
        }
        events
    }

    /// Leave thought text out of every event (the ledger's
    /// `disableThoughtLogging`): events then say what happened, not what
    /// was thought.
    pub fn without_thought_text(mut self, hide: bool) -> Events {
        self.hide_text = hide;
        self
    }

    pub fn enabled(&self) -> bool {
        self.target != EventTarget::Off
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<File>> {
        match self.file.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    fn failed(&self, what: &str) {
        if self.failing.swap(true, Ordering::Relaxed) {
            tracing::debug!("event stream: {what}");
        } else {
            tracing::warn!("event stream: {what} (events are dropped until writing works again)");
        }
    }

    /// Write one event. Never fails; problems are logged.
    /// Write one event. `data` is only built when the stream is on, so a
    /// server without events pays nothing per call.
    pub fn emit(&self, kind: EventType, session_id: Option<&str>, data: impl FnOnce() -> Value) {
        if !self.enabled() {
            return;
        }
        let mut data = data();
        if self.hide_text
            && let Some(fields) = data.as_object_mut()
        {
            fields.remove("thought");
        }
        let line = Line {
            kind,
            timestamp: domain::now(),
            session_id,
            data: &data,
        };
        let mut text = match serde_json::to_string(&line) {
            Ok(t) => t,
            Err(e) => return self.failed(&format!("encoding an event: {e}")),
        };
        text.push('\n');
        let written = match &self.target {
            EventTarget::Off => return,
            EventTarget::Stderr => std::io::stderr().lock().write_all(text.as_bytes()),
            EventTarget::File(path) => {
                let mut file = self.lock();
                if file.is_none() {
                    match open_append(path) {
                        Ok(f) => *file = Some(f),
                        Err(e) => return self.failed(&format!("opening {}: {e}", path.display())),
                    }
                }
                match file.as_mut() {
                    Some(f) => {
                        let line = if self.torn.load(Ordering::Relaxed) {
                            format!("\n{text}")
                        } else {
                            text
                        };
                        match write_counted(f, line.as_bytes()) {
                            Ok(()) => {
                                self.torn.store(false, Ordering::Relaxed);
                                Ok(())
                            }
                            Err((sent, e)) => {
                                // A full disk may take part of a line: the
                                // next event starts a line of its own, so that
                                // only the fragment is no JSON. Not cut back
                                // out: another server may have appended to the
                                // same file meanwhile. Nothing written leaves
                                // things as they were (an empty line
                                // otherwise).
                                if sent > 0 {
                                    self.torn.store(line.as_bytes()[sent - 1] != b'\n', Ordering::Relaxed);
                                }
                                // Reopen on the next event (the file may have been moved).
                                *file = None;
                                Err(e)
                            }
                        }
                    }
                    None => return,
                }
            }
        };
        match written {
            Ok(()) => self.failing.store(false, Ordering::Relaxed),
            Err(e) => self.failed(&format!("writing an event: {e}")),
        }
    }
}

/// Thought text in events: at most 100 characters, the last one `…` when cut.
pub fn truncate_thought(text: &str) -> String {
    if text.chars().count() <= 100 {
        return text.to_string();
    }
    let mut s: String = text.chars().take(99).collect();
    s.push('…');
    s
}

/// SessionStartedEventData.
pub fn session_started(s: &Session) -> Value {
    json!({ "sessionId": s.id, "title": s.title, "tags": s.tags })
}

/// `session_loaded` data: the session reopened by load_context or resume.
pub fn session_loaded(s: &Session) -> Value {
    json!({ "sessionId": s.id, "title": s.title, "thoughtCount": s.thought_count, "branchCount": s.branch_count })
}

/// ThoughtAddedEventData (text truncated to 100 characters).
pub fn thought_added(t: &Thought) -> Value {
    let mut v = json!({
        "thoughtNumber": t.data.thought_number,
        "thought": truncate_thought(&t.data.thought),
        "nextThoughtNeeded": t.data.next_thought_needed,
    });
    if let Some(b) = &t.data.branch_id {
        v["branchId"] = json!(b);
    }
    v
}

/// `thought_revised` data: the revision and the thought it revises.
pub fn thought_revised(t: &Thought) -> Value {
    let mut v = thought_added(t);
    v["revisesThought"] = json!(t.data.revises_thought);
    v
}

/// `branch_created` data: the branch, its fork point and its first thought.
pub fn branch_created(t: &Thought) -> Value {
    json!({
        "branchId": t.data.branch_id,
        "fromThoughtNumber": t.data.branch_from_thought,
        "thoughtNumber": t.data.thought_number,
    })
}

/// `session_completed` data.
pub fn session_completed(s: &Session) -> Value {
    json!({ "sessionId": s.id, "finalThoughtCount": s.thought_count, "branchCount": s.branch_count })
}

/// StageChangedEventData.
pub fn stage_changed(previous: u8, new: u8, trigger: &str) -> Value {
    json!({ "previousStage": previous, "newStage": new, "trigger": trigger })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A write the device refuses outright counts nothing sent, so no line
    /// is left to end; one that goes out counts all of it.
    #[cfg(target_os = "linux")]
    #[test]
    fn writes_count_what_went_out() {
        let mut full = std::fs::OpenOptions::new().append(true).open("/dev/full").unwrap();
        let (sent, e) = write_counted(&mut full, b"{}\n").unwrap_err();
        assert_eq!((sent, e.kind()), (0, std::io::ErrorKind::StorageFull));
        let dir = tempfile::tempdir().unwrap();
        let mut f = open_append(&dir.path().join("events.jsonl")).unwrap();
        write_counted(&mut f, b"{}\n").unwrap();
        assert_eq!(std::fs::read(dir.path().join("events.jsonl")).unwrap(), b"{}\n");
    }

    #[test]
    fn targets() {
        assert_eq!(EventTarget::parse(""), Ok(EventTarget::Off));
        assert_eq!(EventTarget::parse("OFF"), Ok(EventTarget::Off));
        assert_eq!(EventTarget::parse("stderr"), Ok(EventTarget::Stderr));
        assert!(EventTarget::parse("stdout").is_err());
        assert_eq!(
            EventTarget::parse("/tmp/e.jsonl"),
            Ok(EventTarget::File("/tmp/e.jsonl".into()))
        );
        let Ok(EventTarget::File(home)) = EventTarget::parse("~/e.jsonl") else {
            panic!("a file target");
        };
        assert!(home.is_absolute() && home.ends_with("e.jsonl"), "{home:?}");
    }

    #[test]
    fn truncation_counts_characters() {
        assert_eq!(truncate_thought("short"), "short");
        let long = "é".repeat(150);
        let t = truncate_thought(&long);
        assert_eq!(t.chars().count(), 100);
        assert!(t.ends_with('…'));
        assert_eq!(truncate_thought(&"a".repeat(100)).chars().count(), 100);
    }

    #[test]
    fn file_lines_append_across_writers() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/events.jsonl");
        let e = Events::new(EventTarget::File(path.clone()));
        e.emit(EventType::CipherLoaded, None, || json!({ "stage": 2 }));
        drop(e);
        let e = Events::new(EventTarget::File(path.clone()));
        e.emit(EventType::StageChanged, Some("s1"), || stage_changed(1, 2, "cipher"));
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["type"], "cipher_loaded");
        assert!(lines[0].get("sessionId").is_none());
        assert_eq!(lines[1]["sessionId"], "s1");
        assert_eq!(lines[1]["data"]["trigger"], "cipher");
    }

    #[test]
    fn an_unwritable_path_never_panics() {
        let dir = tempfile::tempdir().unwrap();
        // A directory where the file should be.
        let e = Events::new(EventTarget::File(dir.path().to_path_buf()));
        e.emit(EventType::CipherLoaded, None, || json!({}));
        e.emit(EventType::CipherLoaded, None, || json!({}));
        // Failing, said once at warning level, and nothing written there.
        assert!(e.failing.load(Ordering::Relaxed));
        assert!(dir.path().is_dir());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
