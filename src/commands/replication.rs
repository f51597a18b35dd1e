//! `thoughtbox replication config`: a `litestream.yml` for this ledger, so
//! that Litestream streams its WAL to a directory or an S3-compatible
//! bucket (docs/replication.md). thoughtbox replicates nothing itself.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};

use super::out;
use crate::cli::DbArgs;
use crate::error::{Error, Result};

#[derive(Debug, Clone, Subcommand)]
pub enum ReplicationCommand {
    /// Print a litestream.yml that replicates this ledger (to a directory
    /// with --dir, to S3 or an S3-compatible store with --s3)
    Config(ConfigArgs),
}

#[derive(Debug, Clone, Args)]
pub struct ConfigArgs {
    /// Replicate into this directory (another disk, a mounted share)
    #[arg(long, value_name = "PATH", value_parser = crate::cli::user_path(), required_unless_present = "s3", conflicts_with = "s3")]
    pub dir: Option<PathBuf>,
    /// Replicate to this S3 URL, s3://BUCKET/PATH (credentials come from
    /// LITESTREAM_ACCESS_KEY_ID and LITESTREAM_SECRET_ACCESS_KEY, or AWS_*:
    /// never written into the file)
    #[arg(long, value_name = "URL")]
    pub s3: Option<String>,
    /// Endpoint of an S3-compatible store (MinIO, R2, B2...)
    #[arg(long, value_name = "URL", requires = "s3")]
    pub endpoint: Option<String>,
    /// How often Litestream ships new WAL frames to the replica: the most
    /// an acknowledged thought can be behind
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = duration)]
    pub sync_interval: String,
}

/// A Go duration as Litestream reads it: digits then ms, s, m or h.
fn duration(s: &str) -> std::result::Result<String, String> {
    let s = s.trim();
    let unit = s.trim_start_matches(|c: char| c.is_ascii_digit());
    let digits = &s[..s.len() - unit.len()];
    if digits.is_empty() || !matches!(unit, "ms" | "s" | "m" | "h") {
        return Err(format!(
            "{s:?} is not a duration: give a number with ms, s, m or h (1s, 500ms, 1m)"
        ));
    }
    Ok(s.to_string())
}

/// `text` as a double-quoted YAML string.
fn quoted(text: &str) -> String {
    let mut q = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            c if c.is_control() => q.push_str(&format!("\\u{:04x}", c as u32)),
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

/// The litestream.yml for the ledger at `db`.
pub fn litestream_yml(db: &std::path::Path, args: &ConfigArgs) -> Result<String> {
    let replica = match (&args.dir, &args.s3) {
        (Some(dir), None) => {
            let dir = std::path::absolute(dir).map_err(|e| Error::io(format!("resolving {}", dir.display()), e))?;
            format!("      type: file\n      path: {}\n", quoted(&dir.display().to_string()))
        }
        (None, Some(url)) => {
            if !url.starts_with("s3://") || url.len() <= "s3://".len() {
                // Not echoed: a URL given by mistake may hold a secret.
                return Err(Error::invalid("s3", "--s3 is not an S3 URL: give s3://BUCKET/PATH"));
            }
            // A key or secret in the query (`?secret-access-key=...`) too.
            let query = url
                .split_once('?')
                .map(|(_, q)| q.to_ascii_lowercase())
                .unwrap_or_default();
            if url.contains('@') || ["key", "secret", "token", "password"].iter().any(|w| query.contains(w)) {
                return Err(Error::invalid(
                    "s3",
                    "put no credentials in the URL: set LITESTREAM_ACCESS_KEY_ID and LITESTREAM_SECRET_ACCESS_KEY \
                     (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY) where Litestream runs",
                ));
            }
            let mut r = format!("      url: {}\n", quoted(url));
            if let Some(endpoint) = &args.endpoint {
                // The file is meant to be kept, and shared: no secret in it.
                if endpoint.contains('@') {
                    return Err(Error::invalid(
                        "endpoint",
                        "put no credentials in the endpoint URL: set LITESTREAM_ACCESS_KEY_ID and \
                         LITESTREAM_SECRET_ACCESS_KEY (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY) where \
                         Litestream runs",
                    ));
                }
                r.push_str(&format!(
                    "      endpoint: {}\n      force-path-style: true\n",
                    quoted(endpoint)
                ));
            }
            r
        }
        _ => return Err(Error::invalid("dir", "give one of --dir PATH and --s3 URL")),
    };
    Ok(format!(
        "# litestream.yml for the thoughtbox ledger {db}\n\
         # Start it with:   litestream replicate -config litestream.yml\n\
         # Restore with:    litestream restore -config litestream.yml -o NEW.db {db}\n\
         # While Litestream's directory {meta} exists, thoughtbox\n\
         # leaves every checkpoint to Litestream (--checkpoints auto); see docs/replication.md.\n\
         dbs:\n  \
           - path: {path}\n    \
             replica:\n{replica}      \
               sync-interval: {interval}\n",
        db = db.display(),
        meta = crate::store::litestream_meta_dir(db).display(),
        path = quoted(&db.display().to_string()),
        interval = args.sync_interval,
    ))
}

pub fn replication(db: &DbArgs, command: ReplicationCommand) -> Result<ExitCode> {
    match command {
        ReplicationCommand::Config(args) => {
            let path = db.path()?;
            let path = std::path::absolute(&path).map_err(|e| Error::io(format!("resolving {}", path.display()), e))?;
            out(&litestream_yml(&path, &args)?)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(dir: Option<&str>, s3: Option<&str>) -> ConfigArgs {
        ConfigArgs {
            dir: dir.map(PathBuf::from),
            s3: s3.map(String::from),
            endpoint: None,
            sync_interval: "1s".into(),
        }
    }

    #[test]
    fn a_directory_replica_names_the_ledger_and_the_directory() {
        let yml = litestream_yml(
            std::path::Path::new("/data/my \"tb\".db"),
            &args(Some("/backup/tb"), None),
        )
        .unwrap();
        assert!(yml.contains("  - path: \"/data/my \\\"tb\\\".db\"\n"), "{yml}");
        // Made absolute as the system reads it (Windows adds the current drive).
        let dir = quoted(&std::path::absolute("/backup/tb").unwrap().display().to_string());
        assert!(yml.contains(&format!("      type: file\n      path: {dir}\n")), "{yml}");
        assert!(yml.contains("      sync-interval: 1s\n"), "{yml}");
    }

    #[test]
    fn an_s3_url_with_credentials_or_another_scheme_is_refused() {
        let db = std::path::Path::new("/d/t.db");
        assert!(
            litestream_yml(db, &args(None, Some("s3://bucket/tb")))
                .unwrap()
                .contains("url: \"s3://bucket/tb\"")
        );
        for bad in [
            "http://key:secret@bucket/tb",
            "s3://",
            "s3://key:secret@bucket/tb",
            "s3://bucket/tb?secret-access-key=secret",
        ] {
            let e = litestream_yml(db, &args(None, Some(bad))).unwrap_err().to_string();
            assert!(!e.contains("secret"), "{e}");
        }
        let mut with_endpoint = args(None, Some("s3://bucket/tb"));
        with_endpoint.endpoint = Some("https://key:secret@minio.local:9000".into());
        let e = litestream_yml(db, &with_endpoint).unwrap_err().to_string();
        assert!(e.contains("no credentials") && !e.contains("secret@"), "{e}");
        with_endpoint.endpoint = Some("https://minio.local:9000".into());
        assert!(
            litestream_yml(db, &with_endpoint)
                .unwrap()
                .contains("endpoint: \"https://minio.local:9000\"")
        );
        assert!(duration("1s").is_ok() && duration("250ms").is_ok());
        assert!(duration("1").is_err() && duration("s").is_err() && duration("1d").is_err());
    }
}
