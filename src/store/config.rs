//! The installation-wide settings kept in the ledger's `config` table
//! (`installId`, `disableThoughtLogging`, the export partitioning, ...):
//! reading and setting one, the [`Config`] model, and how the privacy
//! setting is read when it holds something unexpected.

use std::path::Path;

use rusqlite::OptionalExtension;

use super::Store;
use crate::domain::ConfigKey;
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
    pub fn config_value(&self, key: ConfigKey) -> Result<Option<String>> {
        let conn = self.conn()?;
        Ok(conn
            .query_row("SELECT value FROM config WHERE key = ?1", [key.name()], |r| r.get(0))
            .optional()?)
    }

    pub fn set_config_value(&self, key: ConfigKey, value: &str) -> Result<()> {
        self.write(|tx| {
            tx.execute(
                "INSERT INTO config (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key.name(), value),
            )?;
            Ok(())
        })
    }

    /// The Config model: settings from the `config` table plus the data directory.
    pub fn config(&self) -> Result<Config> {
        let get = |k: ConfigKey| -> Result<String> { Ok(self.config_value(k)?.unwrap_or_default()) };
        Ok(Config {
            install_id: get(ConfigKey::InstallId)?,
            data_dir: std::path::absolute(&self.path)
                .ok()
                .as_deref()
                .and_then(Path::parent)
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            disable_thought_logging: thought_logging_disabled(self.config_value(ConfigKey::DisableThoughtLogging)),
            session_partition_granularity: get(ConfigKey::SessionPartitionGranularity)?,
            created_at: get(ConfigKey::CreatedAt)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::store::test_support::temp_store;

    /// `config get` and a tree's `config.json` show the [`Config`] model:
    /// every setting under its stored name, and the data directory.
    #[test]
    fn the_model_shows_every_setting_under_its_name() {
        let (_dir, store) = temp_store();
        let shown = serde_json::to_value(store.config().unwrap()).unwrap();
        let mut keys: Vec<&str> = shown.as_object().unwrap().keys().map(String::as_str).collect();
        keys.sort_unstable();
        let mut expected: Vec<&str> = ConfigKey::ALL.iter().map(|k| k.name()).chain(["dataDir"]).collect();
        expected.sort_unstable();
        assert_eq!(keys, expected);
        for key in ConfigKey::ALL {
            let stored = store.config_value(key).unwrap().unwrap();
            assert!(key.accepts(&stored), "{key:?} = {stored:?}");
            let shown = &shown[key.name()];
            assert_eq!(shown.as_str().map_or_else(|| shown.to_string(), str::to_string), stored);
        }
    }

    /// The database's triggers check a hand edit of a setting; they and
    /// [`ConfigKey::accepts`] take the same values.
    #[test]
    fn the_database_takes_what_a_key_accepts() {
        let (_dir, store) = temp_store();
        let values = [
            "true",
            "false",
            "TRUE",
            "1",
            "monthly",
            "weekly",
            "daily",
            "none",
            "Monthly",
            "hourly",
            "2026-11-23T08:42:10.000Z",
            "2026-11-23T08:42:10Z",
            "2026-11-23 08:42:10.000Z",
            "yesterday",
            "0f0e0d0c-0b0a-4909-8807-060504030201",
            "",
            " \t\r\n",
        ];
        for key in ConfigKey::ALL {
            for value in values {
                let stored = store.write(|tx| {
                    tx.execute("UPDATE config SET value = ?2 WHERE key = ?1", (key.name(), value))?;
                    Ok(())
                });
                assert_eq!(stored.is_ok(), key.accepts(value), "{key:?} = {value:?}: {stored:?}");
            }
        }
    }

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
