//! The installation-wide settings kept in the ledger's `config` table
//! (`installId`, `disableThoughtLogging`, the export partitioning, ...):
//! reading and setting one, the [`Config`] model, and how the privacy
//! setting is read when it holds something unexpected.

use std::path::Path;

use rusqlite::OptionalExtension;

use super::Store;
use crate::error::Result;

/// Installation-wide settings kept in the `config` table.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Config {
    pub install_id: String,
    pub data_dir: String,
    pub disable_thought_logging: bool,
    pub session_partition_granularity: String,
    pub created_at: String,
}

/// Whether the ledger's `disableThoughtLogging` setting (as read, or the
/// error reading it) keeps thought text out of the event stream. A privacy
/// setting fails closed: only `false` (or no setting at all) lets the text
/// through; `true`, and anything else set by hand (`1`, `yes`, `TRUE`), or a
/// setting that cannot be read, keeps it out.
pub fn thought_logging_disabled(setting: Result<Option<String>>) -> bool {
    match setting {
        Ok(None) => false,
        Ok(Some(v)) => match v.trim().to_ascii_lowercase().as_str() {
            "false" => false,
            "true" => true,
            other => {
                tracing::warn!(
                    "the ledger's disableThoughtLogging is {other:?}, not true or false: thought text is kept out \
                     of events (set it with `thoughtbox config set disableThoughtLogging true|false`)"
                );
                true
            }
        },
        Err(e) => {
            tracing::warn!("reading disableThoughtLogging: {e}; thought text is kept out of events");
            true
        }
    }
}

impl Store {
    pub fn config_value(&self, key: &str) -> Result<Option<String>> {
        let conn = self.conn()?;
        Ok(conn
            .query_row("SELECT value FROM config WHERE key = ?1", [key], |r| r.get(0))
            .optional()?)
    }

    pub fn set_config_value(&self, key: &str, value: &str) -> Result<()> {
        self.write(|tx| {
            tx.execute(
                "INSERT INTO config (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, value),
            )?;
            Ok(())
        })
    }

    /// The Config model: settings from the `config` table plus the data directory.
    pub fn config(&self) -> Result<Config> {
        let get = |k: &str| -> Result<String> { Ok(self.config_value(k)?.unwrap_or_default()) };
        Ok(Config {
            install_id: get("installId")?,
            data_dir: std::path::absolute(&self.path)
                .ok()
                .as_deref()
                .and_then(Path::parent)
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            disable_thought_logging: thought_logging_disabled(self.config_value("disableThoughtLogging")),
            session_partition_granularity: get("sessionPartitionGranularity")?,
            created_at: get("createdAt")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    #[test]
    fn thought_logging_is_disabled_unless_plainly_allowed() {
        let setting = |v: Option<&str>| thought_logging_disabled(Ok(v.map(str::to_string)));
        assert!(!setting(None));
        assert!(!setting(Some("false")));
        assert!(!setting(Some(" FALSE ")));
        for on in ["true", "TRUE", "1", "yes", "on", "", "0"] {
            assert!(setting(Some(on)), "{on:?} lets thought text through");
        }
        assert!(thought_logging_disabled(Err(Error::Internal("unreadable".into()))));
    }
}
