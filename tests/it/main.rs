//! Integration tests: every test spawns the real `thoughtbox` binary on a
//! temporary database and talks MCP to it through an rmcp client over stdio.

mod analysis;
mod anchors;
mod bad_input;
mod browser;
mod cli;
mod common;
mod core_flow;
mod critique;
mod durability;
mod events;
mod files_root;
mod gateway_doc;
mod hand_edits;
mod handles;
mod http;
mod http_limits;
mod knowledge;
mod models;
mod notebooks;
mod observatory;
mod replication;
mod roots;
mod schema;
mod schema_doc;
#[cfg(unix)]
mod stdio_kinds;
mod stdout;
mod threads;
mod tree;
