//! The installation-wide settings the ledger keeps in its `config` table,
//! one [`ConfigKey`] each: the name it is stored under (which the
//! TypeScript server's `config.json` shares, so it never changes), whether
//! `thoughtbox config set` may change it, what it holds, the value a new
//! ledger starts with, and which values it accepts.

use super::Granularity;

/// A setting in the ledger's `config` table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConfigKey {
    InstallId,
    CreatedAt,
    SessionPartitionGranularity,
    DisableThoughtLogging,
}

/// The value a new ledger gives a setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigDefault {
    /// This value.
    Fixed(&'static str),
    /// A new random UUID, which tells this ledger from every other.
    NewUuid,
    /// The time the ledger is created, as [`super::now`] writes it.
    Now,
}

impl ConfigKey {
    /// Every setting, in the order a new ledger writes them.
    pub const ALL: [ConfigKey; 4] = [
        ConfigKey::InstallId,
        ConfigKey::CreatedAt,
        ConfigKey::SessionPartitionGranularity,
        ConfigKey::DisableThoughtLogging,
    ];

    /// The key the setting is stored under (and exported as, in a tree's
    /// `config.json`).
    pub const fn name(self) -> &'static str {
        match self {
            ConfigKey::InstallId => "installId",
            ConfigKey::CreatedAt => "createdAt",
            ConfigKey::SessionPartitionGranularity => "sessionPartitionGranularity",
            ConfigKey::DisableThoughtLogging => "disableThoughtLogging",
        }
    }

    /// The setting stored under `name`, exactly as spelled.
    pub fn from_name(name: &str) -> Option<ConfigKey> {
        ConfigKey::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Whether users may change it (`thoughtbox config set`); the others
    /// are set once, when the ledger is created.
    pub const fn settable(self) -> bool {
        match self {
            ConfigKey::InstallId | ConfigKey::CreatedAt => false,
            ConfigKey::SessionPartitionGranularity | ConfigKey::DisableThoughtLogging => true,
        }
    }

    /// What the setting is, in one line.
    pub const fn description(self) -> &'static str {
        match self {
            ConfigKey::InstallId => "the UUID that tells this ledger from others (a backup replaces only its own)",
            ConfigKey::CreatedAt => "when the ledger was created",
            ConfigKey::SessionPartitionGranularity => "how an export groups sessions into directories",
            ConfigKey::DisableThoughtLogging => "whether thought text is kept out of the event stream",
        }
    }

    /// The value a new ledger starts with.
    pub const fn default_value(self) -> ConfigDefault {
        match self {
            ConfigKey::InstallId => ConfigDefault::NewUuid,
            ConfigKey::CreatedAt => ConfigDefault::Now,
            ConfigKey::SessionPartitionGranularity => ConfigDefault::Fixed("monthly"),
            ConfigKey::DisableThoughtLogging => ConfigDefault::Fixed("false"),
        }
    }

    /// The values it accepts, as a message says them.
    pub const fn allowed(self) -> &'static str {
        match self {
            ConfigKey::InstallId => "a non-blank id",
            ConfigKey::CreatedAt => "a UTC timestamp with milliseconds, such as 2026-11-23T08:42:10.000Z",
            ConfigKey::SessionPartitionGranularity => "monthly, weekly, daily or none",
            ConfigKey::DisableThoughtLogging => "true or false",
        }
    }

    /// Whether `value` is one it accepts: the checks the database's own
    /// triggers make on a hand edit (migrations 8 and 12), so the two agree.
    pub fn accepts(self, value: &str) -> bool {
        match self {
            ConfigKey::InstallId => !value.trim_matches([' ', '\t', '\n', '\r']).is_empty(),
            ConfigKey::CreatedAt => is_ledger_time(value),
            ConfigKey::SessionPartitionGranularity => Granularity::parse(value).is_some(),
            ConfigKey::DisableThoughtLogging => matches!(value, "true" | "false"),
        }
    }
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ`, the form [`super::now`] writes, digit by
/// digit (what the trigger's GLOB checks; no calendar check).
fn is_ledger_time(s: &str) -> bool {
    const FORM: &[u8; 24] = b"0000-00-00T00:00:00.000Z";
    s.len() == FORM.len()
        && s.bytes().zip(FORM).all(|(c, f)| match f {
            b'0' => c.is_ascii_digit(),
            _ => c == *f,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_round_trips_through_its_name() {
        for key in ConfigKey::ALL {
            assert_eq!(ConfigKey::from_name(key.name()), Some(key), "{key:?}");
            assert!(
                !key.description().is_empty() && !key.description().contains('\n'),
                "{key:?}"
            );
        }
        let mut names: Vec<&str> = ConfigKey::ALL.iter().map(|k| k.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ConfigKey::ALL.len(), "names are distinct");
        for other in ["", "installid", "InstallId", " installId", "dataDir", "note"] {
            assert_eq!(ConfigKey::from_name(other), None, "{other:?}");
        }
    }

    /// Existing ledgers and the TypeScript server's `config.json` use
    /// these names: a rename would lose the setting.
    #[test]
    fn the_stored_names_never_change() {
        assert_eq!(
            ConfigKey::ALL.map(ConfigKey::name),
            [
                "installId",
                "createdAt",
                "sessionPartitionGranularity",
                "disableThoughtLogging"
            ]
        );
    }

    #[test]
    fn a_fixed_default_is_one_the_key_accepts() {
        for key in ConfigKey::ALL {
            match key.default_value() {
                ConfigDefault::Fixed(v) => assert!(key.accepts(v), "{key:?} = {v:?}"),
                ConfigDefault::NewUuid => assert!(key.accepts(&uuid::Uuid::new_v4().to_string()), "{key:?}"),
                ConfigDefault::Now => assert!(key.accepts(&super::super::now()), "{key:?}"),
            }
        }
    }

    #[test]
    fn values_are_checked() {
        use ConfigKey::*;
        for (key, good, bad) in [
            (InstallId, "0f0e0d0c-0b0a-4909-8807-060504030201", " \t\r\n"),
            (CreatedAt, "2026-11-23T08:42:10.000Z", "2026-11-23T08:42:10Z"),
            (CreatedAt, "2026-11-23T08:42:10.000Z", "yesterday"),
            (SessionPartitionGranularity, "none", "hourly"),
            (SessionPartitionGranularity, "weekly", "Weekly"),
            (DisableThoughtLogging, "true", "1"),
            (DisableThoughtLogging, "false", "TRUE"),
        ] {
            assert!(key.accepts(good), "{key:?} {good:?}");
            assert!(!key.accepts(bad), "{key:?} {bad:?}");
        }
    }
}
