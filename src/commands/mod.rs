//! The command-line tools around the database (everything but `serve`):
//! exporting, importing and validating directory trees (and SessionExport
//! files), and looking at the ledger. They print readable text, or JSON with
//! `--json`, to stdout; progress goes to stderr, and errors reach `main`,
//! which prints them to stderr and exits non-zero.

mod ledger;
mod notebooks;
mod progress;
mod replication;
mod threads;
mod tree;

use std::io::Write;

use clap::{Args, Subcommand, ValueEnum};
use serde::Serialize;
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

pub use ledger::{check, config, info, repair, sessions, stats};
pub use notebooks::{NotebooksCommand, notebooks};
pub use replication::{ReplicationCommand, replication};
pub use threads::{ThreadsCommand, threads};
pub use tree::{export, import, validate};

use crate::domain::{Granularity, SessionId};
use crate::error::{Error, Result};
use crate::export::Format;

#[derive(Debug, Clone, Args)]
pub struct ExportArgs {
    /// Destination: the tree's root directory; with --format, a file (default: stdout)
    #[arg(long, value_name = "PATH", value_parser = crate::cli::user_path())]
    pub out: Option<std::path::PathBuf>,
    /// A session to export (repeat for several); every session when none is given
    #[arg(long = "session", value_name = "ID")]
    pub sessions: Vec<SessionId>,
    /// Project directory for every session, named as a `project:<p>` tag would name it (default:
    /// the session's `project:<p>` tag, else `_default`)
    #[arg(long, value_name = "P", conflicts_with = "format")]
    pub project: Option<String>,
    /// Partition directories (default: the database's sessionPartitionGranularity)
    #[arg(long, value_enum, conflicts_with = "format")]
    pub partition: Option<PartitionArg>,
    /// Write one session as a single file in this format instead of the tree
    #[arg(long, value_enum)]
    pub format: Option<FormatArg>,
    /// Print the summary as JSON
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PartitionArg {
    Monthly,
    Weekly,
    Daily,
    None,
}

impl From<PartitionArg> for Granularity {
    fn from(p: PartitionArg) -> Granularity {
        match p {
            PartitionArg::Monthly => Granularity::Monthly,
            PartitionArg::Weekly => Granularity::Weekly,
            PartitionArg::Daily => Granularity::Daily,
            PartitionArg::None => Granularity::None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    Json,
    Markdown,
    Cipher,
}

impl From<FormatArg> for Format {
    fn from(f: FormatArg) -> Format {
        match f {
            FormatArg::Json => Format::Json,
            FormatArg::Markdown => Format::Markdown,
            FormatArg::Cipher => Format::Cipher,
        }
    }
}

#[derive(Debug, Clone, Args)]
pub struct ImportArgs {
    /// Root of the tree (or a sessions directory, or one session directory),
    /// or a SessionExport JSON file (export --session ID --format json)
    #[arg(value_name = "PATH", value_parser = crate::cli::user_path())]
    pub dir: std::path::PathBuf,
    /// Print the summary as JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Args)]
pub struct ValidateArgs {
    /// Root of the tree (or a sessions directory, or one session directory),
    /// or a SessionExport JSON file (export --session ID --format json)
    #[arg(value_name = "PATH", value_parser = crate::cli::user_path())]
    pub dir: std::path::PathBuf,
    /// Check only this session
    #[arg(long = "session", value_name = "ID")]
    pub session: Option<SessionId>,
    /// Print the results as JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Subcommand)]
pub enum SessionsCommand {
    /// List sessions, most recently updated first
    List {
        /// Only sessions with this tag (repeat: all of them, at most 100)
        #[arg(long = "tag", value_name = "TAG")]
        tags: Vec<String>,
        /// Only sessions whose title, description or tags contain these words
        #[arg(long)]
        search: Option<String>,
        /// Sessions per page (1-1000)
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=1000))]
        limit: u32,
        /// Sessions to skip
        #[arg(long, default_value_t = 0)]
        offset: u32,
        /// Only active (open) or only completed sessions
        #[arg(long, value_enum)]
        status: Option<StatusArg>,
        /// Sort key
        #[arg(long, value_enum, default_value_t = SortArg::Updated)]
        sort: SortArg,
        /// Oldest (or A to Z) first
        #[arg(long)]
        asc: bool,
        /// Print the page as JSON ({ sessions, count, total, hasMore })
        #[arg(long)]
        json: bool,
    },
    /// Show one session with all its thoughts, branches included
    Show {
        /// Session id
        id: SessionId,
        /// Print SessionExport JSON
        #[arg(long)]
        json: bool,
    },
    /// Search titles, descriptions, tags and thought text
    Search {
        /// Words to look for (all of them)
        #[arg(value_parser = search_text)]
        text: String,
        /// Sessions to answer (1-100)
        #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=100))]
        limit: u32,
        /// Matches shown of each session, its best (1-100); the others are counted
        #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100))]
        matches_per_session: u32,
        /// Print the matches as JSON
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StatusArg {
    Active,
    Completed,
}

impl From<StatusArg> for crate::domain::SessionStatus {
    fn from(s: StatusArg) -> Self {
        match s {
            StatusArg::Active => Self::Active,
            StatusArg::Completed => Self::Completed,
        }
    }
}

/// Shorter than the gateway's names (`updatedAt`) for typing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SortArg {
    Created,
    Updated,
    Title,
}

impl From<SortArg> for crate::domain::SortBy {
    fn from(s: SortArg) -> Self {
        match s {
            SortArg::Created => Self::CreatedAt,
            SortArg::Updated => Self::UpdatedAt,
            SortArg::Title => Self::Title,
        }
    }
}

#[derive(Debug, Clone, Args)]
pub struct JsonArg {
    /// Print JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Args)]
pub struct RepairArgs {
    /// Print JSON
    #[arg(long)]
    pub json: bool,
    /// Only check, writing nothing (a restored replica, a backup, a ledger
    /// in use): exits non-zero when anything is wrong
    #[arg(long)]
    pub check: bool,
}

#[derive(Debug, Clone, Subcommand)]
pub enum ConfigCommand {
    /// Print one setting, or all of them
    Get {
        /// installId, dataDir, disableThoughtLogging, sessionPartitionGranularity or createdAt
        key: Option<String>,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Change a setting: sessionPartitionGranularity (monthly|weekly|daily|none)
    /// or disableThoughtLogging (true|false)
    Set {
        /// sessionPartitionGranularity or disableThoughtLogging
        key: String,
        /// monthly, weekly, daily or none (sessionPartitionGranularity);
        /// true or false (disableThoughtLogging)
        value: String,
    },
}

/// `n` and the noun, singular for one: "1 session", "2 sessions".
pub(crate) fn counted(n: u64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// Write text to stdout (an error, not a panic, when stdout is closed).
fn out(text: &str) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .map_err(|e| Error::io("writing to stdout", e))
}

/// Print a value as pretty JSON on stdout.
fn out_json(value: &impl Serialize) -> Result<()> {
    let mut text = serde_json::to_string_pretty(value).map_err(|e| Error::Internal(e.to_string()))?;
    text.push('\n');
    out(&text)
}

/// Text safe to print on a terminal: line breaks and tabs become spaces,
/// other control characters (ESC, BEL...: escape sequences that could clear
/// the screen or retitle the window) become U+FFFD.
fn printable(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\n' | '\r' | '\t' => ' ',
            c if c.is_control() => '\u{FFFD}',
            c => c,
        })
        .collect()
}

/// A writer for a terminal: every control character but line feed and tab
/// (ESC, BEL, CR, DEL, and C1 controls such as CSI) becomes U+FFFD, so that
/// text in the ledger cannot move the cursor, clear the screen or set the
/// clipboard. Text passes through as bytes; C1 controls are recognised by
/// their two-byte UTF-8 form across writes.
struct Printable<W: Write> {
    inner: W,
    after_c2: bool,
}

impl<W: Write> Printable<W> {
    fn new(inner: W) -> Self {
        Printable { inner, after_c2: false }
    }
}

impl<W: Write> Write for Printable<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        const REPLACEMENT: &[u8] = "\u{FFFD}".as_bytes();
        let mut out = Vec::with_capacity(buf.len());
        for &b in buf {
            if std::mem::take(&mut self.after_c2) {
                if (0x80..=0x9f).contains(&b) {
                    out.extend_from_slice(REPLACEMENT);
                    continue;
                }
                out.push(0xc2);
            }
            match b {
                0xc2 => self.after_c2 = true,
                b'\n' | b'\t' => out.push(b),
                0..=0x1f | 0x7f => out.extend_from_slice(REPLACEMENT),
                _ => out.push(b),
            }
        }
        self.inner.write_all(&out)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Columns padded to their widest cell, two spaces apart, by terminal
/// columns (CJK and most emoji take two, combining marks none), so that a
/// wide title does not push the columns after it out of line.
fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let rows: Vec<Vec<String>> = rows.iter().map(|r| r.iter().map(|c| printable(c)).collect()).collect();
    let rows = &rows;
    let width = |s: &str| UnicodeWidthStr::width(s);
    let mut widths: Vec<usize> = headers.iter().map(|h| width(h)).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(width(cell));
        }
    }
    let line = |cells: Vec<&str>| {
        let mut s = String::new();
        for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            if i + 1 == cells.len() {
                s.push_str(cell);
            } else {
                s.push_str(cell);
                s.push_str(&" ".repeat(w - width(cell) + 2));
            }
        }
        s.truncate(s.trim_end().len());
        s.push('\n');
        s
    };
    let mut s = line(headers.to_vec());
    for row in rows {
        s.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    s
}

/// At most `max` terminal columns, with an ellipsis when cut; one line.
/// A cut never keeps half of a wide character, nor a combining mark
/// without its letter.
fn clip(text: &str, max: usize) -> String {
    let one_line = printable(text).split_whitespace().collect::<Vec<_>>().join(" ");
    if UnicodeWidthStr::width(one_line.as_str()) <= max {
        return one_line;
    }
    let room = max.saturating_sub(1);
    let mut used = 0;
    let mut cut = String::new();
    for c in one_line.chars() {
        used += UnicodeWidthChar::width(c).unwrap_or(0);
        if used > room {
            break;
        }
        cut.push(c);
    }
    format!("{cut}…")
}

/// Search text: blank text searches for nothing, as the gateway's
/// `session search` refuses it too.
fn search_text(s: &str) -> std::result::Result<String, String> {
    if s.trim().is_empty() {
        return Err("give the words to search for".into());
    }
    Ok(s.to_string())
}

/// A session id not found that is the start of one or more (ids are often
/// shown cut): the error names them, as the gateway's answer does, rather
/// than a bare "session not found".
pub(crate) fn name_sessions_meant(store: &crate::store::Store, e: Error) -> Error {
    let Error::SessionNotFound { session_id } = &e else {
        return e;
    };
    let given = session_id.trim();
    let Ok(found) = store.sessions_meant(given, 5) else {
        return e;
    };
    let how = match found {
        crate::store::SessionsMeant::ByIdStart(_) => "id starts",
        crate::store::SessionsMeant::ByTitle(_) => "title reads",
    };
    let message = match found.found() {
        [] => return e,
        [(id, title)] => format!(
            "session not found: {given}; did you mean {id} ({})?",
            serde_json::Value::from(title.as_str())
        ),
        many => format!(
            "session not found: {given}; sessions whose {how} so, newest first: {}",
            many.iter()
                .map(|(id, title)| format!("{id} ({})", serde_json::Value::from(title.as_str())))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    Error::invalid("session", message)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each value the ledger has can be given on the command line: the
    /// flags' enums are kept beside the domain's, so a value added there
    /// must be added here.
    #[test]
    fn every_domain_value_has_a_flag_value() {
        fn covers<A, D>(names: &[&str], parse: fn(&str) -> Option<D>)
        where
            A: ValueEnum + Into<D> + Clone,
            D: PartialEq + std::fmt::Debug,
        {
            let given: Vec<D> = A::value_variants().iter().cloned().map(Into::into).collect();
            for name in names {
                let value = parse(name).unwrap_or_else(|| panic!("{name} does not parse"));
                assert!(given.contains(&value), "{value:?} cannot be given as a flag value");
            }
        }
        use crate::domain::thread::ThreadStatus;
        use crate::domain::{Granularity, SessionStatus, SortBy};
        covers::<SortArg, _>(SortBy::NAMES, SortBy::parse);
        covers::<StatusArg, _>(SessionStatus::NAMES, SessionStatus::parse);
        covers::<FormatArg, _>(Format::NAMES, Format::parse);
        covers::<PartitionArg, _>(Granularity::NAMES, Granularity::parse);
        covers::<threads::ThreadStatusArg, _>(ThreadStatus::NAMES, ThreadStatus::parse);
    }

    /// A thought's escape sequences (clear the screen, OSC 52 to set the
    /// clipboard) must not reach the terminal `sessions show` writes to.
    #[test]
    fn text_for_a_terminal_cannot_drive_it() {
        let text = "clear\u{1b}[2J\u{1b}]52;c;ZWNobw==\u{7} csi\u{9b}31m é\u{85}ü\r\n\tend\u{7f}";
        // One byte per write: a C1 control split across two writes is still one.
        let mut out = Printable::new(Vec::new());
        for b in text.as_bytes() {
            out.write_all(std::slice::from_ref(b)).unwrap();
        }
        let shown = String::from_utf8(out.inner).unwrap();
        assert_eq!(
            shown,
            "clear\u{FFFD}[2J\u{FFFD}]52;c;ZWNobw==\u{FFFD} csi\u{FFFD}31m é\u{FFFD}ü\u{FFFD}\n\tend\u{FFFD}"
        );
    }

    /// Cells are padded by display width: padded by characters, a CJK or
    /// emoji title (two columns a character) would push the columns after it
    /// out of line.
    #[test]
    fn tables_align_on_terminal_columns() {
        let t = table(
            &["ID", "TITLE", "N"],
            &[
                vec!["1".into(), "漢字".into(), "2".into()],
                vec!["22".into(), "x".into(), "3".into()],
                vec!["3".into(), "🙂e\u{301}".into(), "4".into()],
            ],
        );
        assert_eq!(t, "ID  TITLE  N\n1   漢字   2\n22  x      3\n3   🙂e\u{301}    4\n");
        // Clipped by columns too, never half of a wide character.
        assert_eq!(clip("漢字漢字", 8), "漢字漢字");
        assert_eq!(clip("漢字漢字x", 8), "漢字漢…");
        assert_eq!(clip("ab漢字", 4), "ab…");
        assert_eq!(clip("e\u{301}e\u{301}e\u{301}", 2), "e\u{301}…");
        let long = clip(&"漢".repeat(40), 48);
        assert_eq!(long, format!("{}…", "漢".repeat(23)));
        assert!(UnicodeWidthStr::width(long.as_str()) <= 48);
    }

    #[test]
    fn tables_align_on_characters() {
        let t = table(
            &["ID", "TITLE"],
            &[vec!["1".into(), "héllo".into()], vec!["22".into(), "x".into()]],
        );
        assert_eq!(t, "ID  TITLE\n1   héllo\n22  x\n");
        assert_eq!(clip("a  b\nc", 10), "a b c");
        assert_eq!(clip("abcdef", 4), "abc…");
        assert_eq!(clip("\u{1b}[31mred", 20), "\u{FFFD}[31mred");
        let t = table(&["T"], &[vec!["\u{1b}[2Jevil\u{7}\nx".into()]]);
        assert_eq!(t, "T\n\u{FFFD}[2Jevil\u{FFFD} x\n");
    }
}
