//! The crate's typed errors and their mapping to the error codes of the
//! specification's ErrorPayload (docs/gateway.md, "Errors"). The mapping
//! happens once, here; the gateway turns an [`Error`] into an ErrorPayload
//! with [`Error::payload`].

use serde_json::{Value, json};

/// Result alias used throughout the library.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What to do about an error that says the file is damaged: most often the
/// search index, out of step after edits made by hand, which `repair` mends.
fn repair_hint(e: &rusqlite::Error) -> &'static str {
    if let rusqlite::Error::IntegralValueOutOfRange(..) = e {
        return " (a number in the ledger is outside what thoughtbox writes, most likely after a hand edit: \
                 `thoughtbox repair` names the rows)";
    }
    match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::DatabaseCorrupt) => {
            " (run `thoughtbox repair` on the database: it rebuilds the search indexes and checks the file)"
        }
        Some(rusqlite::ErrorCode::DiskFull) => {
            " (the disk holding the ledger is full; nothing was written: free some space and try again, \
             the server goes on without a restart)"
        }
        Some(rusqlite::ErrorCode::ReadOnly) => {
            " (the ledger's file or its file system has become read-only; nothing was written)"
        }
        Some(rusqlite::ErrorCode::SystemIoFailure) => {
            " (the file system failed; on a full disk this is most often the ledger's -shm file that cannot \
             grow: free some space and try again)"
        }
        Some(rusqlite::ErrorCode::DatabaseBusy) => {
            " (another program held the ledger's write lock for longer than the 10 s this server waits: a \
             `sqlite3` shell inside a transaction, or `thoughtbox repair` of a large ledger; nothing was written, \
             try again once it is done)"
        }
        _ => "",
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("session not found: {session_id}")]
    SessionNotFound { session_id: String },

    /// The connection's active session no longer exists: another
    /// connection or process deleted it. It is no longer active.
    #[error(
        "the active session {session_id} no longer exists (it was deleted, perhaps by another process) and is no \
         longer active: the next thought starts a new session; use load_context or start_new to choose one"
    )]
    ActiveSessionGone { session_id: String },

    #[error("{message}")]
    ThoughtNotFound { message: String, details: Value },

    /// A field is missing, has the wrong type, or breaks a ledger rule.
    #[error("{message}")]
    InvalidPayload {
        field: String,
        message: String,
        details: Option<Value>,
    },

    /// Unknown operation or sub-operation, or mutually exclusive modes at once.
    #[error("{message}")]
    InvalidOperation { message: String, details: Option<Value> },

    #[error(
        "operation '{operation}' requires stage {required}, but this call is at stage {current} (its connection's or its session's, whichever is further)"
    )]
    StageRequirementNotMet {
        operation: String,
        current: u8,
        required: u8,
        suggestion: String,
    },

    /// A write asked of a server started with `--read-only` (a standby on a
    /// replica): refused before anything is written.
    #[error(
        "this thoughtbox serves the ledger read-only (serve --read-only, a standby on a replica): {operation} would \
         write, so nothing was done; reads, searches and exports work here, writes go to the primary server"
    )]
    ReadOnly { operation: String },

    #[error("no critique from the client (MCP sampling): {0}")]
    SamplingNotSupported(String),

    #[error("database error: {0}{hint}", hint = repair_hint(.0))]
    Database(#[from] rusqlite::Error),

    /// A write whose COMMIT failed with an I/O error. SQLite may have put
    /// the whole transaction in the WAL before the failure (say, the `-shm`
    /// could not grow on a full disk), and then it is in the ledger, at the
    /// latest after a restart: a client that retried would record it twice.
    #[error(
        "database error while committing: {0}; the write may or may not have been recorded (the file system \
         failed while SQLite was writing it): read it back (list_sessions, read_thoughts, session get) before trying again"
    )]
    CommitUncertain(rusqlite::Error),

    /// SQLite rolled back the transaction a write was grouped in (a full
    /// disk, an I/O error): nothing of it was written.
    #[error("a storage error rolled back this write{grouped}; nothing was written", grouped = if *.0 { " and the writes grouped with it" } else { "" })]
    RolledBack(bool),

    /// The server is stopping: the write was never run.
    #[error("the server is shutting down; nothing was written")]
    ShuttingDown,

    #[error("database pool error: {0}")]
    Pool(#[from] r2d2::Error),

    #[error("database migration failed: {0}")]
    Migration(#[from] refinery::Error),

    #[error(
        "the database {path} was written by a newer thoughtbox (schema version {found}, this binary knows up to {known}); upgrade thoughtbox to open it"
    )]
    SchemaTooNew { path: String, found: i64, known: i64 },

    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },

    #[error(
        "the ledger's file {file} was {how} while this server ran; nothing was written. Stop the server and \
         start it again (putting the file back first if it was moved): writing on would lose what is written, or \
         corrupt the ledger if another process opens it. Never delete, move or replace a running server's \
         database, -wal or -shm file"
    )]
    FilesChanged { file: String, how: String },

    /// The client cancelled the request (`notifications/cancelled`) and
    /// its read was stopped. The client no longer waits for an answer.
    #[error("the client cancelled this request: it was stopped before it finished (nothing in the ledger was changed)")]
    Cancelled,

    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Error::InvalidPayload {
            field: field.into(),
            message: message.into(),
            details: None,
        }
    }

    pub fn invalid_with(field: impl Into<String>, message: impl Into<String>, details: Value) -> Self {
        Error::InvalidPayload {
            field: field.into(),
            message: message.into(),
            details: Some(details),
        }
    }

    pub fn operation(message: impl Into<String>) -> Self {
        Error::InvalidOperation {
            message: message.into(),
            details: None,
        }
    }

    pub fn session_not_found(id: impl Into<String>) -> Self {
        Error::SessionNotFound { session_id: id.into() }
    }

    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    /// Whether another connection's lock outlasted the wait.
    pub fn is_busy(&self) -> bool {
        matches!(self, Error::Database(e) if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy))
    }

    /// Whether the file system refused a write: a full disk, a read-only
    /// file or file system, an I/O error (reads may still work).
    pub fn is_file_system_refusal(&self) -> bool {
        let code = match self {
            Error::Database(e) | Error::CommitUncertain(e) => e.sqlite_error_code(),
            _ => None,
        };
        matches!(
            code,
            Some(
                rusqlite::ErrorCode::DiskFull
                    | rusqlite::ErrorCode::ReadOnly
                    | rusqlite::ErrorCode::SystemIoFailure
                    | rusqlite::ErrorCode::CannotOpen
            )
        )
    }

    /// The specification's error code for this error.
    pub fn code(&self) -> &'static str {
        match self {
            Error::SessionNotFound { .. } | Error::ActiveSessionGone { .. } => "SESSION_NOT_FOUND",
            Error::ThoughtNotFound { .. } => "THOUGHT_NOT_FOUND",
            Error::InvalidPayload { .. } => "INVALID_PAYLOAD",
            Error::InvalidOperation { .. } | Error::ReadOnly { .. } => "INVALID_OPERATION",
            Error::StageRequirementNotMet { .. } => "STAGE_REQUIREMENT_NOT_MET",
            Error::SamplingNotSupported(_) => "SAMPLING_NOT_SUPPORTED",
            Error::Database(_)
            | Error::CommitUncertain(_)
            | Error::Pool(_)
            | Error::Migration(_)
            | Error::SchemaTooNew { .. }
            | Error::FilesChanged { .. }
            | Error::RolledBack(_)
            | Error::ShuttingDown
            | Error::Io { .. } => "STORAGE_ERROR",
            // Never sent: rmcp drops the answer of a request its client
            // cancelled. A stopped read is the storage layer's to report.
            Error::Cancelled => "STORAGE_ERROR",
            Error::Internal(_) => "INTERNAL_ERROR",
        }
    }

    /// Extra context for the ErrorPayload `details` field.
    pub fn details(&self) -> Option<Value> {
        match self {
            Error::SessionNotFound { session_id } => Some(json!({ "sessionId": session_id })),
            Error::ActiveSessionGone { session_id } => {
                Some(json!({ "sessionId": session_id, "activeSessionCleared": true }))
            }
            Error::ThoughtNotFound { details, .. } => Some(details.clone()),
            Error::InvalidPayload { field, details, .. } => {
                let mut d = match details {
                    Some(Value::Object(map)) => map.clone(),
                    _ => serde_json::Map::new(),
                };
                d.insert("field".into(), Value::String(field.clone()));
                Some(Value::Object(d))
            }
            Error::InvalidOperation { details, .. } => details.clone(),
            Error::CommitUncertain(_) => Some(json!({ "outcomeUnknown": true })),
            Error::ReadOnly { operation } => Some(json!({ "operation": operation, "readOnly": true })),
            Error::StageRequirementNotMet {
                current,
                required,
                suggestion,
                operation,
            } => Some(json!({
                "operation": operation,
                "currentStage": current,
                "requiredStage": required,
                "suggestion": suggestion,
            })),
            _ => None,
        }
    }

    /// The ErrorPayload `{ code, message, details? }` of the specification.
    pub fn payload(&self) -> Value {
        let mut payload = json!({ "code": self.code(), "message": self.message() });
        if let Some(details) = self.details() {
            payload["details"] = details;
        }
        payload
    }

    /// What a client is told: the error's text, except for a read the
    /// server's shutdown stopped, which is no storage failure.
    pub fn message(&self) -> String {
        if self.is_interrupted() {
            return "the server is shutting down: this request was stopped before it finished (nothing in the \
                    ledger was changed)"
                .to_string();
        }
        self.to_string()
    }

    /// A statement stopped by [`crate::store::Store::interrupt_running`].
    pub fn is_interrupted(&self) -> bool {
        matches!(self, Error::Database(e) if e.sqlite_error_code() == Some(rusqlite::ErrorCode::OperationInterrupted))
    }

    /// True when SQLite refused a row for a constraint of the schema.
    pub fn is_constraint_violation(&self) -> bool {
        matches!(self, Error::Database(e) if e.sqlite_error_code() == Some(rusqlite::ErrorCode::ConstraintViolation))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Another program's lock held past the busy timeout is named as such,
    /// with what to do.
    #[test]
    fn a_lock_held_too_long_says_whose_and_what_to_do() {
        let busy = Error::Database(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
            Some("database is locked".into()),
        ));
        assert!(busy.is_busy());
        assert_eq!(busy.code(), "STORAGE_ERROR");
        let m = busy.message();
        assert!(
            m.starts_with("database error: database is locked (another program"),
            "{m}"
        );
        assert!(m.contains("nothing was written"), "{m}");
    }

    /// A read the server's shutdown stopped says so, not that the storage
    /// failed.
    #[test]
    fn an_interrupted_read_is_told_as_the_shutdown() {
        let e = Error::Database(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_INTERRUPT),
            None,
        ));
        let p = e.payload();
        assert_eq!(p["code"], "STORAGE_ERROR");
        assert!(p["message"].as_str().unwrap().contains("shutting down"), "{p}");
        assert!(e.is_interrupted() && e.message() == p["message"]);
        assert!(!Error::Internal("x".into()).is_interrupted());
    }

    #[test]
    fn invalid_payload_names_the_field_in_details() {
        let e = Error::invalid_with("thoughtNumber", "taken", json!({ "nextThoughtNumber": 4 }));
        let p = e.payload();
        assert_eq!(p["code"], "INVALID_PAYLOAD");
        assert_eq!(p["details"]["field"], "thoughtNumber");
        assert_eq!(p["details"]["nextThoughtNumber"], 4);
    }

    /// A full disk says what to do; a commit the file system failed says
    /// the write may be there (a commit answered "failed" can be in the
    /// ledger after a restart).
    #[test]
    fn disk_failures_say_what_happened_to_the_write() {
        let sqlite = |code| rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), None);
        let full = Error::Database(sqlite(rusqlite::ffi::SQLITE_FULL)).message();
        assert!(
            full.contains("disk holding the ledger is full") && full.contains("nothing was written"),
            "{full}"
        );
        let unsure = Error::CommitUncertain(sqlite(rusqlite::ffi::SQLITE_IOERR));
        let p = unsure.payload();
        assert_eq!(p["code"], "STORAGE_ERROR");
        assert_eq!(p["details"]["outcomeUnknown"], true);
        assert!(
            p["message"]
                .as_str()
                .unwrap()
                .contains("may or may not have been recorded"),
            "{p}"
        );
    }

    #[test]
    fn storage_failures_map_to_storage_error() {
        let e = Error::io("reading", std::io::Error::other("boom"));
        assert_eq!(e.code(), "STORAGE_ERROR");
        assert!(e.payload().get("details").is_none());
    }
}
