//! The names the export layout gives sessions and projects, as rules of
//! the ledger: the store derives a thread's `storage_path` from them and
//! the tree writer its directories, so neither depends on the other.

use unicode_normalization::UnicodeNormalization;

/// Project used when neither an option nor a `project:` tag names one.
pub const DEFAULT_PROJECT: &str = "_default";

/// True for a lower-case hyphenated UUID (`8-4-4-4-12` hex digits), the only
/// form a session id may take in a path.
pub fn is_session_id(id: &str) -> bool {
    let b = id.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_digit() || (b'a'..=b'f').contains(c),
        })
}

/// Whether `c` may be part of a project directory name: a letter or digit
/// of any script, `.`, `_` or `-`.
fn project_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '.' | '_' | '-')
}

/// A project directory name: letters and digits of any script, `.`, `_`,
/// `-`; 1-64 characters (at most 256 bytes, within every file system's
/// limit for a name), not only dots.
pub fn is_project_name(p: &str) -> bool {
    !p.is_empty() && p.chars().count() <= 64 && p.chars().all(project_char) && !p.chars().all(|c| c == '.')
}

/// The project of a session: the first `project:<p>` tag, with characters
/// that cannot be part of a directory name replaced by `-`; `_default` when
/// there is none or nothing usable is left.
pub fn project_from_tags(tags: &[String]) -> String {
    tags.iter()
        .filter_map(|t| t.strip_prefix("project:"))
        .map(|p| {
            // Composed (NFC): the same name typed either way is one folder.
            p.trim()
                .nfc()
                .map(|c| if project_char(c) { c } else { '-' })
                .take(64)
                .collect::<String>()
        })
        .find(|p| is_project_name(p))
        .unwrap_or_else(|| DEFAULT_PROJECT.to_string())
}
