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
        return expand_home(db);
    }
    if let Some(dir) = data_dir.filter(|p| !p.as_os_str().is_empty()) {
        return Ok(expand_home(dir)?.join(DB_FILE));
    }
    Ok(home()?.join(".thoughtbox").join(DB_FILE))
}

fn home() -> Result<PathBuf> {
    directories::BaseDirs::new()
        .map(|d| d.home_dir().to_path_buf())
        .ok_or_else(|| {
            Error::io(
                "finding the home directory (set THOUGHTBOX_DB or --db to an absolute path)",
                std::io::Error::from(std::io::ErrorKind::NotFound),
            )
        })
}

/// `~` and `~/...` name the home directory, as in a shell. Client configs
/// (JSON) pass environment values without a shell, and a literal `~`
/// would make a directory of that name wherever the client starts us.
pub fn expand_home(path: PathBuf) -> Result<PathBuf> {
    match path.strip_prefix("~") {
        Ok(rest) => Ok(home()?.join(rest)),
        Err(_) => Ok(path),
    }
}

/// Whether `THOUGHTBOX_STAGES` turns stage gating off: `off` (or `0`,
/// `false`, `no`) does, `on` (`1`, `true`, `yes`) or unset does not, and
/// anything else is refused rather than silently ignored.
pub fn stages_disabled_by_env() -> Result<bool> {
    stages_disabled(std::env::var("THOUGHTBOX_STAGES").ok().as_deref())
}

fn stages_disabled(value: Option<&str>) -> Result<bool> {
    let Some(value) = value else { return Ok(false) };
    match value.trim().to_ascii_lowercase().as_str() {
        "off" | "0" | "false" | "no" => Ok(true),
        "" | "on" | "1" | "true" | "yes" => Ok(false),
        _ => Err(Error::invalid(
            "THOUGHTBOX_STAGES",
            format!("THOUGHTBOX_STAGES must be `off` or `on`, not {value:?}"),
        )),
    }
}

/// Whether `THOUGHTBOX_NOTEBOOK_CHILD_PROCESSES` turns the opt-in on
/// (`on`, `1`, `true`, `yes`; unset, empty or `off` leave it off).
pub fn notebook_child_processes_by_env() -> Result<bool> {
    on_off(
        "THOUGHTBOX_NOTEBOOK_CHILD_PROCESSES",
        std::env::var("THOUGHTBOX_NOTEBOOK_CHILD_PROCESSES").ok().as_deref(),
    )
}

fn on_off(var: &str, value: Option<&str>) -> Result<bool> {
    let Some(value) = value else { return Ok(false) };
    match value.trim().to_ascii_lowercase().as_str() {
        "on" | "1" | "true" | "yes" => Ok(true),
        "" | "off" | "0" | "false" | "no" => Ok(false),
        _ => Err(Error::invalid(
            var,
            format!("{var} must be `on` or `off`, not {value:?}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn switches_are_on_or_off() {
        let var = "THOUGHTBOX_NOTEBOOK_CHILD_PROCESSES";
        assert!(!on_off(var, None).unwrap());
        assert!(on_off(var, Some(" ON ")).unwrap());
        assert!(!on_off(var, Some("off")).unwrap());
        assert!(!on_off(var, Some("")).unwrap());
        assert!(on_off(var, Some("maybe")).unwrap_err().to_string().contains(var));
    }

    #[test]
    fn flag_wins_over_data_dir() {
        let p = resolve_db_path(Some("/a/x.db".into()), Some("/b".into())).unwrap();
        assert_eq!(p, PathBuf::from("/a/x.db"));
        let p = resolve_db_path(None, Some("/b".into())).unwrap();
        assert_eq!(p, PathBuf::from("/b/thoughtbox.db"));
        let p = resolve_db_path(None, None).unwrap();
        assert!(p.ends_with(".thoughtbox/thoughtbox.db"));
        // Empty values count as not given.
        assert_eq!(resolve_db_path(Some("".into()), Some("".into())).unwrap(), p);
    }

    #[test]
    fn a_leading_tilde_is_the_home_directory() {
        let home = home().unwrap();
        let p = resolve_db_path(Some("~/.thoughtbox/x.db".into()), None).unwrap();
        assert_eq!(p, home.join(".thoughtbox/x.db"));
        let p = resolve_db_path(None, Some("~".into())).unwrap();
        assert_eq!(p, home.join("thoughtbox.db"));
        // Only `~` itself: a name that starts with it is a name.
        let p = resolve_db_path(Some("~backup/x.db".into()), None).unwrap();
        assert_eq!(p, PathBuf::from("~backup/x.db"));
    }

    #[test]
    fn stages_variable_is_off_on_or_refused() {
        for v in ["off", "OFF", " 0 ", "false", "no"] {
            assert!(stages_disabled(Some(v)).unwrap(), "{v}");
        }
        for v in [None, Some(""), Some("on"), Some("1"), Some("TRUE"), Some("yes")] {
            assert!(!stages_disabled(v).unwrap(), "{v:?}");
        }
        let err = stages_disabled(Some("bogus")).unwrap_err().to_string();
        assert!(err.contains("THOUGHTBOX_STAGES must be `off` or `on`"), "{err}");
    }
}
