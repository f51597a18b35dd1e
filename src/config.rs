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
        return expand_operator_path(db);
    }
    if let Some(dir) = data_dir.filter(|p| !p.as_os_str().is_empty()) {
        return Ok(expand_operator_path(dir)?.join(DB_FILE));
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

/// A path an agent names (an export destination, a notebook import): `~`
/// and `~/...` name the home directory, as in a shell, and nothing else is
/// expanded, never an environment variable (the answer would show the
/// agent the server's environment). Also the last step of
/// [`expand_operator_path`]: client configs (JSON) pass environment values
/// without a shell, and a literal `~` would make a directory of that name
/// wherever the client starts us.
pub fn expand_agent_path(path: PathBuf) -> Result<PathBuf> {
    match path.strip_prefix("~") {
        Ok(rest) => Ok(home()?.join(rest)),
        Err(_) => Ok(path),
    }
}

/// A path the operator gave (a flag, an environment variable, a command's
/// argument): `~` as [`expand_agent_path`], and on Windows `%NAME%` too, as cmd.exe
/// would, since Claude Desktop passes `%USERPROFILE%\...` as written (else
/// a relative path under its own working directory). Never for a path an
/// agent names: the answer would show it the server's environment.
pub fn expand_operator_path(path: PathBuf) -> Result<PathBuf> {
    #[cfg(windows)]
    let path = match path.to_str() {
        Some(text) if text.contains('%') => PathBuf::from(
            expand_percent_vars(text, |name| std::env::var(name).ok())
                .map_err(|name| Error::invalid("path", unset_variable(text, &name)))?,
        ),
        _ => path,
    };
    expand_agent_path(path)
}

/// `text` with every `%NAME%` replaced by `lookup(NAME)`, as cmd.exe
/// expands it (names in any letter case: `lookup` decides). A `%` that
/// opens no name (`50%`, `%%`, `%a\b%`) stays as it is. Err: the first
/// name `lookup` does not know, since a path with it left in would name a
/// folder nobody meant.
#[cfg_attr(not(windows), allow(dead_code))]
fn expand_percent_vars(text: &str, lookup: impl Fn(&str) -> Option<String>) -> std::result::Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find('%') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        match after.find('%').map(|end| &after[..end]) {
            Some(name) if !name.is_empty() && !name.contains(['\\', '/', ':']) => {
                out.push_str(&lookup(name).ok_or_else(|| name.to_string())?);
                rest = &after[name.len() + 1..];
            }
            _ => {
                out.push('%');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg_attr(not(windows), allow(dead_code))]
fn unset_variable(path: &str, name: &str) -> String {
    format!("{path} names %{name}%, an environment variable that is not set")
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

    /// A path an agent names never has the server's environment put in
    /// it (the answer would show the agent its values).
    #[test]
    fn agent_paths_expand_no_environment_variable() {
        for given in ["%PATH%/x.json", "%USERPROFILE%\\x.json"] {
            assert_eq!(expand_agent_path(PathBuf::from(given)).unwrap(), PathBuf::from(given));
        }
    }

    #[test]
    fn percent_names_expand_as_cmd_expands_them() {
        let lookup = |name: &str| match name.to_ascii_uppercase().as_str() {
            "USERPROFILE" => Some(r"C:\Users\Ada".to_string()),
            "APPDATA" => Some(r"C:\Users\Ada\AppData\Roaming".to_string()),
            _ => None,
        };
        let expand = |s: &str| expand_percent_vars(s, lookup);
        assert_eq!(
            expand(r"%USERPROFILE%\.thoughtbox\t.db").unwrap(),
            r"C:\Users\Ada\.thoughtbox\t.db"
        );
        assert_eq!(
            expand(r"%appdata%\tb\%UserProfile%").unwrap(),
            r"C:\Users\Ada\AppData\Roaming\tb\C:\Users\Ada"
        );
        // A % that opens no name stays.
        for s in [r"C:\50%\t.db", r"C:\a%%b\t.db", r"C:\x%\y%\t.db", "%", r"C:\plain\t.db"] {
            assert_eq!(expand(s).unwrap(), s);
        }
        // An unknown name is refused, naming it, rather than kept as a folder name.
        assert_eq!(expand(r"%USERPROFIL%\t.db").unwrap_err(), "USERPROFIL");
        assert!(unset_variable(r"%X%\t.db", "X").contains("%X%, an environment variable that is not set"));
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
