//! thoughtbox: a durable reasoning ledger for AI agents, served over MCP.
//!
//! Data flows one way: the MCP [`gateway`] parses `thoughtbox_gateway`
//! calls, checks the connection's stage and calls the [`domain`] rules
//! through the [`store`], which keeps the whole ledger in one SQLite file.
//! [`export`] renders sessions as SessionExport JSON, Markdown or the compact
//! cipher form; [`tree`] writes and reads the directory layout of JSON
//! files that the TypeScript Thoughtbox keeps, and checks its integrity.
//!
//! Around the ledger: [`analysis`] computes SessionAnalysis, learnings and
//! deep analyses as pure functions over a session's thoughts; [`knowledge`]
//! holds the pattern and scratchpad types of the knowledge garden (stored by
//! `store::knowledge`); [`models`] embeds the mental model prompts; [`events`]
//! writes the optional JSONL event stream. The server's request-path writes,
//! full-text indexing and WAL upkeep go through one [`writer`] thread; [`memory`]
//! gives what heavy reads freed back to the system.

pub mod analysis;
pub mod cli;
pub mod commands;
pub mod config;
pub mod content;
pub mod domain;
pub mod error;
pub mod events;
pub mod export;
pub mod files;
pub mod gateway;
pub mod http;
pub mod json_text;
pub mod knowledge;
pub mod limits;
pub mod maintenance;
pub mod memory;
pub mod models;
pub mod notebook;
pub mod private;
pub mod serve;
pub mod shutdown;
pub mod stdio;
pub mod store;
pub mod tree;
pub mod writer;

pub use error::{Error, Result};
