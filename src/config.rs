//! Where the database lives and how the server behaves, resolved once:
//! command-line flag, then environment variable, then default.

use std::path::PathBuf;

use crate::error::{Error, Result};

/// File name of the ledger inside the data directory.
pub const DB_FILE: &str = "thoughtbox.db";

/// Resolve the database path: `--db` / `THOUGHTBOX_DB`, else
/// `THOUGHTBOX_DATA_DIR/thoughtbox.db`, else `~/.thoughtbox/thoughtbox.db`.
/// (clap already merges each flag with its environment variable.)
pub fn resolve_db_path(db: Option<PathBuf>, data_dir: Option<PathBuf>) -> Result<PathBuf> {
    if let Some(db) = db.filter(|p| !p.as_os_str().is_empty()) {
        return Ok(db);
    }
    if let Some(dir) = data_dir.filter(|p| !p.as_os_str().is_empty()) {
        return Ok(dir.join(DB_FILE));
    }
    let home = directories::BaseDirs::new()
        .map(|d| d.home_dir().to_path_buf())
        .ok_or_else(|| {
            Error::io(
                "finding the home directory for the default database (set THOUGHTBOX_DB or --db)",
                std::io::Error::from(std::io::ErrorKind::NotFound),
            )
        })?;
    Ok(home.join(".thoughtbox").join(DB_FILE))
}

/// `THOUGHTBOX_STAGES=off` (or `0`, `false`, `no`) disables stage gating.
pub fn stages_disabled_by_env() -> bool {
    std::env::var("THOUGHTBOX_STAGES")
        .map(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "off" | "0" | "false" | "no"))
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_wins_over_data_dir() {
        let p = resolve_db_path(Some("/a/x.db".into()), Some("/b".into())).unwrap();
        assert_eq!(p, PathBuf::from("/a/x.db"));
        let p = resolve_db_path(None, Some("/b".into())).unwrap();
        assert_eq!(p, PathBuf::from("/b/thoughtbox.db"));
        let p = resolve_db_path(None, None).unwrap();
        assert!(p.ends_with(".thoughtbox/thoughtbox.db"));
    }
}
