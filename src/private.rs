//! Files and folders only their owner may read. The ledger, its lock,
//! backups, exports, event files, the HTTP token and notebook locks hold
//! an agent's reasoning or a secret: under a umask of 022 they would be
//! world-readable. One place says how, so a new writer cannot forget it.

use std::fs::{DirBuilder, OpenOptions};

/// The mode of every file thoughtbox creates.
#[cfg_attr(not(unix), allow(dead_code))]
pub const FILE: u32 = 0o600;

/// The mode of every folder thoughtbox creates (folders that were there
/// already, the user's, keep theirs).
#[cfg_attr(not(unix), allow(dead_code))]
pub const DIR: u32 = 0o700;

/// `OpenOptions` whose created file gets mode [`FILE`] (on Unix; on
/// Windows a file takes its folder's access rules). The caller sets the rest.
pub fn file_options() -> OpenOptions {
    #[allow(unused_mut)] // Changed on Unix only.
    let mut opts = OpenOptions::new();
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, FILE);
    opts
}

/// A `DirBuilder` whose created folders get mode [`DIR`] (on Unix).
pub fn dir_builder() -> DirBuilder {
    #[allow(unused_mut)] // Changed on Unix only.
    let mut builder = DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, DIR);
    builder
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn files_and_folders_made_here_are_the_owners_alone() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("a").join("b");
        dir_builder().recursive(true).create(&dir).unwrap();
        let file = dir.join("f");
        file_options().write(true).create_new(true).open(&file).unwrap();
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!((mode(&dir), mode(&file)), (DIR, FILE));
    }
}
