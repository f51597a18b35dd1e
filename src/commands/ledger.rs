//! `sessions`, `stats`, `info` and `config`: looking at the ledger without SQL.

use std::io::Write;
use std::process::ExitCode;

use serde_json::{Value, json};

use super::{ConfigCommand, SessionsCommand, clip, out, out_json, table};
use crate::cli::DbArgs;
use crate::domain::{ConfigKey, Session, SessionFilter, SortOrder};
use crate::error::{Error, Result};
use crate::export::{self, Format, Layout};
use crate::store::{Access, FileSizes, SEARCH_CANDIDATES};

fn status(s: &Session) -> &'static str {
    if s.completed_at.is_some() {
        "completed"
    } else {
        "active"
    }
}

/// `2026-11-22T01:12:02.123Z` as `2026-11-22 01:12`.
fn minute(ts: &str) -> String {
    ts.get(..16)
        .map(|t| t.replace('T', " "))
        .unwrap_or_else(|| ts.to_string())
}

pub fn sessions(db: &DbArgs, command: SessionsCommand) -> Result<ExitCode> {
    let store = db.open_existing()?;
    sessions_on(&store, command).map_err(|e| super::name_sessions_meant(&store, e))
}

fn sessions_on(store: &crate::store::Store, command: SessionsCommand) -> Result<ExitCode> {
    match command {
        SessionsCommand::List {
            tags,
            search,
            limit,
            offset,
            status: only,
            sort,
            asc,
            json,
        } => {
            if let Some(text) = &search {
                crate::domain::check_search("search", text)?;
            }
            crate::domain::check_tag_filter(&tags)?;
            let filter = SessionFilter {
                tags,
                search,
                status: only.map(Into::into),
                limit,
                offset,
                sort_by: sort.into(),
                sort_order: if asc { SortOrder::Asc } else { SortOrder::Desc },
            };
            let page = store.list_sessions(&filter)?;
            // Tags match exactly: say which spellings sessions carry.
            let spelled = if page.total == 0 {
                store.session_tag_spellings(&filter.tags)?
            } else {
                Vec::new()
            };
            for (tag, other) in &spelled {
                let other: Vec<String> = other.iter().map(|o| format!("{o:?}")).collect();
                eprintln!(
                    "no session has the tag {tag:?} (tags match exactly, letter case too); sessions have {}",
                    other.join(" or ")
                );
            }
            if json {
                return out_json(&page).map(|()| ExitCode::SUCCESS);
            }
            let rows: Vec<Vec<String>> = page
                .sessions
                .iter()
                .map(|s| {
                    vec![
                        s.id.clone(),
                        clip(&s.title, 48),
                        s.thought_count.to_string(),
                        s.branch_count.to_string(),
                        status(s).to_string(),
                        minute(&s.updated_at),
                    ]
                })
                .collect();
            let mut text = table(&["ID", "TITLE", "THOUGHTS", "BRANCHES", "STATUS", "UPDATED"], &rows);
            text.push_str(&if page.count == 0 {
                format!("no sessions ({} in total)\n", page.total)
            } else {
                format!(
                    "sessions {}-{} of {}\n",
                    offset as usize + 1,
                    offset as usize + page.count,
                    page.total
                )
            });
            out(&text)?;
        }
        SessionsCommand::Show { id, json } => {
            let format = if json { Format::Json } else { Format::Markdown };
            store.with_session(id.trim(), |session| {
                // On a terminal, text from the ledger cannot drive it (a
                // pasted page's escape sequences); to a file or a pipe, the
                // bytes are the export's.
                let stdout = std::io::stdout().lock();
                let stdout: Box<dyn Write> = if std::io::IsTerminal::is_terminal(&stdout) {
                    Box::new(super::Printable::new(stdout))
                } else {
                    Box::new(stdout)
                };
                let mut stdout = std::io::BufWriter::new(stdout);
                export::write_to_stream(&mut stdout, format, session, true, Layout::Pretty)?;
                if json {
                    stdout.write_all(b"\n").map_err(|e| Error::io("writing to stdout", e))?;
                }
                stdout.flush().map_err(|e| Error::io("writing to stdout", e))
            })?;
        }
        SessionsCommand::Search {
            text,
            limit,
            matches_per_session,
            json,
        } => {
            crate::domain::check_search("text", &text)?;
            let (hits, more) = store.search(&text, limit, matches_per_session)?;
            // As the gateway's limitReached: sessions may have been left out.
            let stopped_short = format!(
                "more sessions may match (the answer stopped at --limit {limit}, or the words are in more thoughts \
                 than the ranking looks at, the newest {SEARCH_CANDIDATES}): raise --limit (up to 100) or add words"
            );
            if json {
                // The JSON stays the list of session hits; the note goes
                // where it cannot break a reader of that list.
                if more {
                    eprintln!("{stopped_short}");
                }
                return out_json(&hits).map(|()| ExitCode::SUCCESS);
            }
            let mut s = String::new();
            if hits.is_empty() {
                s.push_str(&format!("nothing matches {text:?}\n"));
            }
            for h in &hits {
                s.push_str(&format!(
                    "{}  {}{}\n",
                    h.session.id,
                    clip(&h.session.title, 60),
                    if h.matched_session {
                        "  (title, description or tags match)"
                    } else {
                        ""
                    }
                ));
                let rows: Vec<Vec<String>> = h
                    .matches
                    .iter()
                    .map(|m| {
                        vec![
                            format!(
                                "    #{}{}",
                                m.thought_number,
                                m.branch_id.as_deref().map(|b| format!(" [{b}]")).unwrap_or_default()
                            ),
                            clip(&m.snippet, 100),
                        ]
                    })
                    .collect();
                if !rows.is_empty() {
                    // Skip the header line: the session line above says what these are.
                    let t = table(&["", ""], &rows);
                    s.push_str(t.split_once('\n').map_or("", |(_, rest)| rest));
                }
                if let Some(n) = h.more_matches {
                    s.push_str(&more_matches_line(n, h.more_matches_at_least));
                }
            }
            if more {
                s.push_str(&stopped_short);
                s.push('\n');
            }
            out(&s)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The line under a session's matches that counts those not shown (as
/// `moreMatches` and `moreMatchesAtLeast` do in JSON).
fn more_matches_line(n: usize, at_least: bool) -> String {
    let plural = if n == 1 { "" } else { "es" };
    let counted = format!(
        "only the newest {SEARCH_CANDIDATES} matching thoughts were counted (of the newest 100,000 for words of \
         scripts written without spaces), and this session may have older ones"
    );
    match (n, at_least) {
        (0, true) => format!("    ... maybe more matches ({counted})\n"),
        (n, true) => format!("    ... at least {n} more match{plural} ({counted})\n"),
        (n, false) => format!("    ... {n} more match{plural} (--matches-per-session shows up to 100)\n"),
    }
}

pub fn stats(db: &DbArgs, json: bool) -> Result<ExitCode> {
    let store = db.open_existing()?;
    let st = store.stats(10)?;
    if json {
        out_json(&st)?;
        return Ok(ExitCode::SUCCESS);
    }
    let rows = vec![
        vec!["sessions".into(), st.sessions.to_string()],
        vec!["  completed".into(), st.completed_sessions.to_string()],
        vec![
            "  active".into(),
            (st.sessions - st.completed_sessions.min(st.sessions)).to_string(),
        ],
        vec!["thoughts".into(), st.thoughts.to_string()],
        vec!["  main chain".into(), st.main_chain_thoughts.to_string()],
        vec!["  on branches".into(), st.branch_thoughts.to_string()],
        vec!["branches".into(), st.branches.to_string()],
        vec!["revisions".into(), st.revisions.to_string()],
        vec!["critiques".into(), st.critiques.to_string()],
        vec!["knowledge patterns".into(), st.patterns.to_string()],
        vec!["scratchpad notes".into(), st.notes.to_string()],
        vec!["not yet searchable".into(), st.unindexed_thoughts.to_string()],
        vec![
            "first thought".into(),
            st.first_thought_at.clone().unwrap_or_else(|| "-".into()),
        ],
        vec![
            "last thought".into(),
            st.last_thought_at.clone().unwrap_or_else(|| "-".into()),
        ],
    ];
    let mut text = table(&["LEDGER", "COUNT"], &rows);
    if !st.top_tags.is_empty() {
        let tags: Vec<Vec<String>> = st
            .top_tags
            .iter()
            .map(|(t, n)| vec![t.clone(), n.to_string()])
            .collect();
        text.push('\n');
        text.push_str(&table(&["TAG", "SESSIONS"], &tags));
    }
    out(&text)?;
    Ok(ExitCode::SUCCESS)
}

fn human(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut v = bytes as f64;
    let mut unit = "B";
    for u in UNITS {
        if v < 1024.0 {
            break;
        }
        v /= 1024.0;
        unit = u;
    }
    format!("{v:.1} {unit}")
}

pub fn repair(db: &DbArgs, json: bool) -> Result<ExitCode> {
    let store = db.open_present(Access::Existing)?;
    eprintln!(
        "repairing {} (writes wait meanwhile: about a second per 100,000 thoughts; the search index is then rebuilt in small steps)",
        store.path().display()
    );
    let report = store.repair()?;
    let sound = report.integrity == ["ok"] && report.failed.is_none() && report.left_for_you.is_empty();
    if json {
        out_json(&report)?;
    } else {
        let rows = [
            ("orphan rows removed", report.orphans_removed.to_string()),
            ("empty branches removed", report.empty_branches_removed.to_string()),
            ("tag rows fixed", report.tag_rows_fixed.to_string()),
            ("sessions recounted", report.sessions_fixed.to_string()),
            ("branch tails fixed", report.branch_tails_fixed.to_string()),
            ("branches restored", report.branches_restored.to_string()),
            ("links fixed", report.links_fixed.to_string()),
            ("critique flags set", report.critique_flags_set.to_string()),
            (
                "blank installId replaced",
                if report.install_id_set { "yes" } else { "no" }.to_string(),
            ),
            ("thoughts indexed", report.thoughts_indexed.to_string()),
            ("integrity check", report.integrity.join("; ")),
        ];
        let rows: Vec<Vec<String>> = rows.iter().map(|(k, v)| vec![k.to_string(), v.clone()]).collect();
        out(&table(&["REPAIR", ""], &rows))?;
    }
    if !report.left_for_you.is_empty() {
        eprintln!(
            "{} has rows repair leaves to you (reads of their sessions fail or pick one of two thoughts, or their \
             exports cannot be imported):",
            store.path().display()
        );
        for line in &report.left_for_you {
            eprintln!("  {line}");
        }
    }
    if let Some(why) = &report.failed {
        eprintln!(
            "could not repair {}: {why}; nothing was changed",
            store.path().display()
        );
    }
    if report.integrity != ["ok"] {
        eprintln!(
            "SQLite's integrity check found damage in {} that repair cannot mend; `thoughtbox backup` or \
             sqlite3's `.recover` can save what is readable",
            store.path().display()
        );
    }
    Ok(if sound { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// `repair --check`: the ledger checked, nothing written.
pub fn check(db: &DbArgs, json: bool) -> Result<ExitCode> {
    let store = db.open_existing()?;
    let report = store.check()?;
    if json {
        out_json(&report)?;
    } else {
        let rows = [
            ("thoughts", report.thoughts.to_string()),
            ("sessions", report.sessions.to_string()),
            ("branches", report.branches.to_string()),
            ("integrity check", report.integrity.join("; ")),
            ("foreign key violations", report.foreign_key_violations.to_string()),
            ("orphan rows", report.orphan_rows.to_string()),
            ("sessions miscounted", report.sessions_miscounted.to_string()),
            ("branch tails wrong", report.branch_tails_wrong.to_string()),
            ("links to missing thoughts", report.dangling_links.to_string()),
            ("left for you", report.left_for_you.len().to_string()),
            ("sound", if report.sound { "yes" } else { "no" }.to_string()),
        ];
        let rows: Vec<Vec<String>> = rows.iter().map(|(k, v)| vec![k.to_string(), v.clone()]).collect();
        out(&table(&["CHECK", ""], &rows))?;
    }
    if !report.sound {
        eprintln!(
            "{} is not whole: `thoughtbox repair` mends what is derived (counts, tails, links, indexes); run it on \
             a copy if this one must not change",
            store.path().display()
        );
    }
    Ok(if report.sound {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

pub fn info(db: &DbArgs, json: bool) -> Result<ExitCode> {
    // The files as they are before this command opens the database (which
    // makes a -shm of its own): a -wal or -shm then means a server (or
    // another program) has it open.
    let sizes = FileSizes::of(&db.path()?);
    let store = db.open_existing()?;
    let config = store.config()?;
    let st = store.stats(0)?;
    let path = std::path::absolute(store.path()).unwrap_or_else(|_| store.path().to_path_buf());
    let value = json!({
        "database": path,
        "schemaVersion": store.schema_version()?,
        "sqliteVersion": rusqlite::version(),
        "thoughtboxVersion": env!("CARGO_PKG_VERSION"),
        "config": config,
        "counts": { "sessions": st.sessions, "thoughts": st.thoughts, "branches": st.branches },
        "sizes": sizes,
        // Who empties the WAL now (docs/replication.md).
        "checkpoints": if store.checkpoints_left_to_litestream() { "litestream" } else { "thoughtbox" },
    });
    if json {
        out_json(&value)?;
        return Ok(ExitCode::SUCCESS);
    }
    let rows = vec![
        vec!["database".into(), path.display().to_string()],
        vec!["schema version".into(), value["schemaVersion"].to_string()],
        vec!["sqlite".into(), rusqlite::version().to_string()],
        vec!["thoughtbox".into(), env!("CARGO_PKG_VERSION").to_string()],
        vec!["install id".into(), config.install_id.clone()],
        vec!["created".into(), config.created_at.clone()],
        vec!["partitions".into(), config.session_partition_granularity.clone()],
        vec![
            "checkpoints".into(),
            value["checkpoints"].as_str().unwrap_or_default().to_string(),
        ],
        vec![
            "thought text in events".into(),
            if config.disable_thought_logging {
                "left out (disableThoughtLogging)"
            } else {
                "kept"
            }
            .into(),
        ],
        vec!["sessions".into(), st.sessions.to_string()],
        vec!["thoughts".into(), st.thoughts.to_string()],
        vec!["branches".into(), st.branches.to_string()],
        vec!["database file".into(), human(sizes.database)],
        vec!["wal file".into(), human(sizes.wal)],
        vec!["shm file".into(), human(sizes.shm)],
        vec!["total size".into(), human(sizes.total)],
    ];
    out(&table(&["", ""], &rows)
        .split_once('\n')
        .map_or(String::new(), |(_, r)| r.to_string()))?;
    Ok(ExitCode::SUCCESS)
}

/// Every setting's name, those users may change first, then those that
/// are only read: the order a message lists them in.
fn setting_names() -> Vec<&'static str> {
    let (settable, read_only): (Vec<ConfigKey>, Vec<ConfigKey>) =
        ConfigKey::ALL.into_iter().partition(|k| k.settable());
    settable.into_iter().chain(read_only).map(ConfigKey::name).collect()
}

/// The setting `key` names, if users may set it to `value`.
fn check_setting(key: &str, value: &str) -> Result<ConfigKey> {
    let Some(setting) = ConfigKey::from_name(key) else {
        return Err(Error::invalid(
            key,
            format!("unknown setting {key:?}; settings: {}", setting_names().join(", ")),
        ));
    };
    if !setting.settable() {
        return Err(Error::invalid(
            key,
            format!("{key} is set once when the database is created"),
        ));
    }
    if setting.accepts(value) {
        Ok(setting)
    } else {
        Err(Error::invalid(
            key,
            format!("{key} must be {} (got {value:?})", setting.allowed()),
        ))
    }
}

pub fn config(db: &DbArgs, command: ConfigCommand) -> Result<ExitCode> {
    let store = match command {
        ConfigCommand::Get { .. } => db.open_existing()?,
        ConfigCommand::Set { .. } => db.open()?,
    };
    match command {
        ConfigCommand::Get { key, json } => {
            let all = serde_json::to_value(store.config()?).map_err(|e| Error::Internal(e.to_string()))?;
            let Value::Object(all) = all else {
                return Err(Error::Internal("config is not an object".into()));
            };
            match key {
                Some(k) => {
                    let Some(v) = all.get(&k) else {
                        return Err(Error::invalid(
                            k.clone(),
                            format!(
                                "unknown setting {k:?}; settings: {}",
                                all.keys().cloned().collect::<Vec<_>>().join(", ")
                            ),
                        ));
                    };
                    if json {
                        out_json(&json!({ k: v }))?;
                    } else {
                        out(&format!(
                            "{}\n",
                            v.as_str().map_or_else(|| v.to_string(), str::to_string)
                        ))?;
                    }
                }
                None if json => out_json(&all)?,
                None => {
                    let rows: Vec<Vec<String>> = all
                        .iter()
                        .map(|(k, v)| vec![k.clone(), v.as_str().map_or_else(|| v.to_string(), str::to_string)])
                        .collect();
                    out(&table(&["KEY", "VALUE"], &rows))?;
                }
            }
        }
        ConfigCommand::Set { key, value } => {
            let value = value.trim().to_ascii_lowercase();
            let setting = check_setting(&key, &value)?;
            store.set_config_value(setting, &value)?;
            // Into the database file itself, so that copying the file now
            // carries the change.
            store.checkpoint_settled(std::time::Duration::from_millis(500))?;
            out(&format!(
                "{key} = {value}\n(a server already running keeps its settings until it restarts)\n"
            ))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::ConfigDefault;

    #[test]
    fn settings_are_checked() {
        assert_eq!(
            check_setting("sessionPartitionGranularity", "weekly").unwrap(),
            ConfigKey::SessionPartitionGranularity
        );
        let refused = |key: &str, value: &str| check_setting(key, value).unwrap_err().to_string();
        assert_eq!(
            refused("sessionPartitionGranularity", "yearly"),
            "sessionPartitionGranularity must be monthly, weekly, daily or none (got \"yearly\")"
        );
        assert_eq!(
            refused("disableThoughtLogging", "yes"),
            "disableThoughtLogging must be true or false (got \"yes\")"
        );
        assert_eq!(
            refused("installId", "x"),
            "installId is set once when the database is created"
        );
        assert_eq!(
            refused("nope", "x"),
            "unknown setting \"nope\"; settings: sessionPartitionGranularity, disableThoughtLogging, installId, \
             createdAt"
        );
        assert_eq!(human(512), "512 B");
        assert_eq!(human(1536), "1.5 KiB");
        assert_eq!(minute("2026-11-22T01:12:02.123Z"), "2026-11-22 01:12");
    }

    /// The help of `config get` and `config set` is written by hand (doc
    /// comments cannot be derived): it names every key, and for `set`
    /// every settable key with the values it takes, and no other.
    #[test]
    fn the_config_help_names_the_keys() {
        use clap::Subcommand;
        let config = ConfigCommand::augment_subcommands(clap::Command::new("config"));
        let help = |sub: &str, arg: &str| {
            let sub = config.find_subcommand(sub).unwrap();
            let arg = sub.get_arguments().find(|a| a.get_id() == arg).unwrap();
            let about = sub.get_about().map(ToString::to_string).unwrap_or_default();
            (about, arg.get_help().map(ToString::to_string).unwrap_or_default())
        };
        let (_, get_key) = help("get", "key");
        let (set_about, set_key) = help("set", "key");
        let (_, set_value) = help("set", "value");
        for key in ConfigKey::ALL {
            assert!(get_key.contains(key.name()), "{key:?}: {get_key}");
            assert_eq!(set_key.contains(key.name()), key.settable(), "{key:?}: {set_key}");
            assert_eq!(set_about.contains(key.name()), key.settable(), "{key:?}: {set_about}");
            if key.settable() {
                assert!(set_value.contains(key.allowed()), "{key:?}: {set_value}");
            }
        }
    }

    /// What `config set` takes and refuses follows [`ConfigKey`]: every key
    /// is listed once, a settable one takes its default and a read-only one
    /// is refused whatever the value.
    #[test]
    fn the_settable_and_read_only_lists_come_from_the_keys() {
        let names = setting_names();
        assert_eq!(names.len(), ConfigKey::ALL.len());
        let settable = names
            .iter()
            .take_while(|n| ConfigKey::from_name(n).is_some_and(ConfigKey::settable));
        assert_eq!(settable.count(), ConfigKey::ALL.iter().filter(|k| k.settable()).count());
        for key in ConfigKey::ALL {
            assert!(names.contains(&key.name()), "{key:?}");
            match key.default_value() {
                ConfigDefault::Fixed(v) if key.settable() => {
                    assert_eq!(check_setting(key.name(), v).unwrap(), key);
                }
                _ => {
                    assert!(!key.settable(), "{key:?}: a setting users change has a fixed default");
                    let err = check_setting(key.name(), "2026-11-23T08:42:10.000Z")
                        .unwrap_err()
                        .to_string();
                    assert!(err.ends_with("is set once when the database is created"), "{err}");
                }
            }
        }
    }
}
