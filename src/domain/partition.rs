use chrono::{DateTime, Datelike, Utc};

/// How exported sessions are grouped into directories (TimePartitionGranularity).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Granularity {
    #[default]
    Monthly,
    Weekly,
    Daily,
    None,
}

impl Granularity {
    pub const NAMES: &'static [&'static str] = &["monthly", "weekly", "daily", "none"];

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "monthly" => Some(Granularity::Monthly),
            "weekly" => Some(Granularity::Weekly),
            "daily" => Some(Granularity::Daily),
            "none" => Some(Granularity::None),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Granularity::Monthly => "monthly",
            Granularity::Weekly => "weekly",
            Granularity::Daily => "daily",
            Granularity::None => "none",
        }
    }
}

/// The partition directory for a session created at `created_at` (UTC):
/// `YYYY-MM`, ISO week `YYYY-Www` (with the ISO week-year, so 2024-12-30 is
/// `2025-W01`), `YYYY-MM-DD`, or none.
pub fn partition_path(granularity: Granularity, created_at: &str) -> Option<String> {
    let t: DateTime<Utc> = DateTime::parse_from_rfc3339(created_at).ok()?.with_timezone(&Utc);
    match granularity {
        Granularity::Monthly => Some(format!("{:04}-{:02}", t.year(), t.month())),
        Granularity::Weekly => {
            let w = t.iso_week();
            Some(format!("{:04}-W{:02}", w.year(), w.week()))
        }
        Granularity::Daily => Some(format!("{:04}-{:02}-{:02}", t.year(), t.month(), t.day())),
        Granularity::None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_week_uses_the_week_year() {
        assert_eq!(
            partition_path(Granularity::Weekly, "2024-12-30T10:00:00Z").as_deref(),
            Some("2025-W01")
        );
        assert_eq!(
            partition_path(Granularity::Weekly, "2021-01-03T10:00:00Z").as_deref(),
            Some("2020-W53")
        );
    }

    #[test]
    fn partitions_use_utc() {
        // 23:30 at -05:00 is already the next day and month in UTC.
        assert_eq!(
            partition_path(Granularity::Monthly, "2025-01-31T23:30:00-05:00").as_deref(),
            Some("2025-02")
        );
        assert_eq!(
            partition_path(Granularity::Daily, "2025-01-31T23:30:00-05:00").as_deref(),
            Some("2025-02-01")
        );
        assert_eq!(partition_path(Granularity::None, "2025-01-31T23:30:00Z"), None);
    }
}
