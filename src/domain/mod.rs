//! The ledger's rules and types: sessions, thoughts, numbering and linking,
//! stages, partitions. No SQL and no MCP here; the store supplies facts about
//! existing chains through [`ChainFacts`] and persists what [`plan_thought`]
//! decides.

mod partition;
mod stage;
mod thought;
mod types;

pub use partition::{Granularity, partition_path};
pub use stage::Stage;
pub use thought::{ChainFacts, PlannedThought, ThoughtInput, node_id, plan_thought, validate_branch_id};
pub use types::{Branch, Critique, NewSession, Session, SessionFilter, SortBy, SortOrder, Thought, ThoughtData};

/// The current time as the ledger writes it: ISO 8601 UTC with milliseconds.
pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Largest thought number (and totalThoughts) the ledger accepts.
pub const MAX_THOUGHT_NUMBER: u32 = i32::MAX as u32;

/// Largest thought text accepted, in bytes (1 MiB).
pub const MAX_THOUGHT_BYTES: usize = 1 << 20;

/// Longest session title, in characters (Session schema).
pub const MAX_TITLE_CHARS: usize = 200;
