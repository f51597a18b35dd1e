//! `install_deps`' `npm install`: under a run's limits and clean
//! environment, outside the permission model (it needs the network and
//! npm's cache), and reading nothing a cell can write. A cell may write
//! anything in its notebook's directory, an `.npmrc` (`git=./evil.sh`), a
//! lock file naming tarballs or folders anywhere, or links under
//! `node_modules`; so npm runs in a fresh private staging folder holding
//! only the checked package.json, with its user and global configuration
//! an empty file, and what it installed is moved into the notebook's
//! directory, where no link may lead out of it.

use std::path::{Path, PathBuf};

use tokio::process::Command;

use super::runner::{CELL_PATH, Limits, NODE_EXTRA_CA_CERTS, Node, run};
use super::{CellStatus, Outcome, check_package_json};
use crate::error::{Error, Result};

/// The variables `npm install` keeps of the server's: how to reach the
/// registry through a proxy, which registry, and which certificate
/// authorities to trust besides Node's own (a proxy that re-signs TLS:
/// Node from nodejs.org trusts only its bundled list, Debian's the
/// system's). Paths and addresses; a proxy address may hold a password,
/// which npm's output is cleaned of.
const NPM_PASSED: &[&str] = &[
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "npm_config_registry",
    "NPM_CONFIG_REGISTRY",
    "npm_config_cafile",
    "NPM_CONFIG_CAFILE",
    NODE_EXTRA_CA_CERTS,
];

/// `npm install` of `package_json` (checked again here: the notebook's
/// own file is a cell's to rewrite) for the notebook whose directory `dir`
/// is (absolute, resolved), with install scripts off and npm's cache in
/// `notebooks/.npm-cache`. Once it completes, its `node_modules` and
/// `package-lock.json` replace the notebook's; a failed install leaves the
/// notebook's as they were.
pub async fn npm_install(node: &Node, dir: &Path, package_json: &str, limits: Limits) -> Result<Outcome> {
    check_package_json(package_json)?;
    let npm = node.npm()?;
    let root = dir
        .parent()
        .ok_or_else(|| Error::Internal("a notebook directory has a parent".into()))?;
    let cache = root.join(".npm-cache");
    super::runner::create_private_dir(&cache)?;
    let staging = Staging::new(root, package_json)?;
    let mut cmd = Command::new(&npm);
    cmd.args([
        "install",
        "--no-audit",
        "--no-fund",
        "--ignore-scripts",
        "--no-update-notifier",
        // An unreachable registry fails in seconds, not after a minute of retries.
        "--fetch-retries=1",
        "--fetch-retry-mintimeout=1000",
        "--fetch-retry-maxtimeout=5000",
    ]);
    cmd.arg(format!("--cache={}", cache.display()));
    let mut env: Vec<(String, String)> = NPM_PASSED
        .iter()
        .filter_map(|k| std::env::var(k).ok().map(|v| (k.to_string(), v)))
        .collect();
    // Neither the user's `.npmrc` (tokens) nor a global one: only the
    // project's, which the staging folder does not have, and npm's own.
    // Two files, since npm refuses to load one file twice.
    for (var, file) in [("npm_config_userconfig", "user"), ("npm_config_globalconfig", "global")] {
        env.push((var.into(), staging.folder.join(file).display().to_string()));
    }
    // npm is a node script: it finds node through PATH.
    if let Some(d) = node.path.parent() {
        env.push(("PATH".into(), format!("{}:{CELL_PATH}", d.display())));
    }
    let mut outcome = run(cmd, &staging.project, limits, "process", &env).await?;
    // What npm printed is kept as the cell's output and shown to the agent:
    // a proxy or registry address it names may carry a password.
    outcome.output = without_userinfo(&outcome.output);
    outcome.error = outcome.error.as_deref().map(without_userinfo);
    if outcome.status == CellStatus::Completed {
        let (project, dir2) = (staging.project.clone(), dir.to_path_buf());
        // Swept where npm made it, before anything reaches the notebook:
        // a refused install leaves the notebook's packages as they were.
        let removed = tokio::task::spawn_blocking(move || {
            let removed = remove_links_outside(&project);
            if removed.is_empty() {
                move_in(&project, &dir2)?;
            }
            Ok::<_, Error>(removed)
        })
        .await
        .map_err(|e| Error::Internal(format!("moving the install in: {e}")))??;
        if !removed.is_empty() {
            outcome.status = CellStatus::Failed;
            outcome.error = Some(format!(
                "refused: npm installed links leading out of the notebook's directory ({}); the notebook's \
                 packages are as they were",
                removed.join(", ")
            ));
        }
    }
    Ok(outcome)
}

/// A private folder `notebooks/.install/<random>/` holding `project/`
/// (the package.json npm installs from) and empty configuration files
/// `user` and `global`; removed with what is in it when dropped.
struct Staging {
    folder: PathBuf,
    project: PathBuf,
}

/// A staging folder older than this is a server's killed mid-install
/// (an install lasts at most ten minutes), and is removed.
const STALE: std::time::Duration = std::time::Duration::from_secs(3600);

impl Staging {
    fn new(root: &Path, package_json: &str) -> Result<Staging> {
        use std::io::Write;
        let all = root.join(".install");
        remove_stale(&all);
        let folder = all.join(uuid::Uuid::new_v4().simple().to_string());
        let project = folder.join("project");
        super::runner::create_private_dir(&project)?;
        let staging = Staging { project, folder };
        let write = |path: &Path, bytes: &[u8]| {
            crate::private::file_options()
                .write(true)
                .create_new(true)
                .open(path)
                .and_then(|mut f| f.write_all(bytes))
                .map_err(|e| Error::io(format!("writing {}", path.display()), e))
        };
        write(&staging.folder.join("user"), b"")?;
        write(&staging.folder.join("global"), b"")?;
        write(&staging.project.join("package.json"), package_json.as_bytes())?;
        Ok(staging)
    }
}

/// Remove what installs of a server killed mid-install left under the
/// notebooks' folder `root` (called at start; also before each install).
pub fn remove_stale_installs(root: &Path) {
    remove_stale(&root.join(".install"));
}

/// Remove the folders in `all` last changed over [`STALE`] ago.
fn remove_stale(all: &Path) {
    let Ok(entries) = std::fs::read_dir(all) else { return };
    for entry in entries.flatten() {
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| t.elapsed().is_ok_and(|age| age > STALE));
        if old && let Err(e) = std::fs::remove_dir_all(entry.path()) {
            tracing::warn!(
                "could not remove the old install folder {}: {e}",
                entry.path().display()
            );
        }
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir_all(&self.folder)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!("could not remove the install folder {}: {e}", self.folder.display());
        }
    }
}

/// Replace the notebook's `node_modules` and `package-lock.json` with
/// those npm made in `project` (the same file system: a rename).
fn move_in(project: &Path, dir: &Path) -> Result<()> {
    for name in ["node_modules", "package-lock.json"] {
        let (from, to) = (project.join(name), dir.join(name));
        // A link is removed, not followed.
        let removed = match std::fs::symlink_metadata(&to) {
            Ok(m) if m.is_dir() => std::fs::remove_dir_all(&to),
            Ok(_) => std::fs::remove_file(&to),
            Err(_) => Ok(()),
        };
        removed.map_err(|e| Error::io(format!("removing {}", to.display()), e))?;
        if std::fs::symlink_metadata(&from).is_ok() {
            std::fs::rename(&from, &to).map_err(|e| Error::io(format!("moving {} in", to.display()), e))?;
            // npm made them under the umask; what is below is private once they are.
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                let mode = if name == "node_modules" {
                    crate::private::DIR
                } else {
                    crate::private::FILE
                };
                let _ = std::fs::set_permissions(&to, std::fs::Permissions::from_mode(mode));
            }
        }
    }
    Ok(())
}

/// Remove every symbolic link under `dir/node_modules` that does not
/// resolve to a path under `dir` (absolute and resolved): Node's permission
/// model checks the path a cell names, not where it leads. Answers them,
/// relative to `dir`, with their targets.
fn remove_links_outside(dir: &Path) -> Vec<String> {
    let mut removed = Vec::new();
    let mut folders = vec![dir.join("node_modules")];
    while let Some(folder) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else { continue };
            if kind.is_dir() {
                folders.push(path);
                continue;
            }
            if !kind.is_symlink() {
                continue;
            }
            // A link that resolves nowhere is removed too: it cannot be
            // told apart from one to a place that does not exist yet.
            if std::fs::canonicalize(&path).is_ok_and(|to| to.starts_with(dir)) {
                continue;
            }
            let target = std::fs::read_link(&path)
                .map(|t| t.display().to_string())
                .unwrap_or_default();
            let shown = path.strip_prefix(dir).unwrap_or(&path).display().to_string();
            if let Err(e) = std::fs::remove_file(&path) {
                tracing::warn!("could not remove the link {}: {e}", path.display());
            }
            removed.push(format!("{shown} -> {target}"));
        }
    }
    removed.sort();
    removed
}

/// `text` with the user and password of every URL in it (`://user:pw@`)
/// replaced by `***`.
fn without_userinfo(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let (head, tail) = rest.split_at(at + 3);
        out.push_str(head);
        // The authority ends at a path, a query, a space or a quote.
        let end = tail
            .find(|c: char| matches!(c, '/' | '?' | '#') || c.is_whitespace() || c == '"' || c == '\'')
            .unwrap_or(tail.len());
        match tail[..end].rfind('@') {
            Some(user_end) => {
                out.push_str("***");
                rest = &tail[user_end..];
            }
            None => rest = tail,
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npm_output_is_cleaned_of_passwords_in_urls() {
        let said = "npm ERR! request to https://registry.example/x failed via http://bob:s3cret@proxy:3128 \
                    (proxy 'https://tok@proxy/') at ftp://a@b and user@host stays";
        let clean = without_userinfo(said);
        assert!(
            !clean.contains("s3cret") && !clean.contains("bob") && !clean.contains("tok@"),
            "{clean}"
        );
        assert!(
            clean.contains("http://***@proxy:3128") && clean.contains("https://***@proxy/"),
            "{clean}"
        );
        assert!(
            clean.contains("https://registry.example/x") && clean.contains("user@host stays"),
            "{clean}"
        );
        assert_eq!(without_userinfo("no address"), "no address");
    }

    #[cfg(unix)]
    #[test]
    fn links_leading_out_of_the_notebook_are_removed() {
        let d = tempfile::tempdir().unwrap();
        let dir = std::fs::canonicalize(d.path()).unwrap().join("nb");
        let modules = dir.join("node_modules");
        std::fs::create_dir_all(modules.join("a/bin")).unwrap();
        std::fs::create_dir_all(modules.join(".bin")).unwrap();
        std::fs::write(modules.join("a/bin/a.js"), "").unwrap();
        let link = std::os::unix::fs::symlink;
        link("../a/bin/a.js", modules.join(".bin/a")).unwrap();
        link("../src", modules.join("own")).unwrap();
        std::fs::create_dir_all(dir.join("src")).unwrap();
        link("../..", modules.join("up")).unwrap();
        link("/", modules.join("a/root")).unwrap();
        link("nowhere", modules.join("dangling")).unwrap();
        let removed = remove_links_outside(&dir);
        assert_eq!(
            removed,
            [
                "node_modules/a/root -> /",
                "node_modules/dangling -> nowhere",
                "node_modules/up -> ../.."
            ]
        );
        assert!(modules.join(".bin/a").exists() && modules.join("own").exists());
        assert!(std::fs::symlink_metadata(modules.join("up")).is_err());
    }
}
