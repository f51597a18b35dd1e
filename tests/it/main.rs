//! Integration tests: every test spawns the real `thoughtbox` binary on a
//! temporary database and talks MCP to it through an rmcp client over stdio.

mod bad_input;
mod cli;
mod common;
mod core_flow;
mod durability;
mod stdout;
mod tree;
