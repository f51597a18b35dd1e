//! The migrations in `migrations/` are compiled into the binary
//! (`refinery::embed_migrations!`), which cargo does not know: without this
//! a new or changed migration is left out until some Rust file changes.
fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
