//! The command line: `serve` (the default) runs the MCP server on stdio;
//! the other commands work on the same database, even while a server runs.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::parser::ValueSource;
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};

use crate::commands::{
    self, ConfigCommand, ExportArgs, ImportArgs, JsonArg, NotebooksCommand, RepairArgs, ReplicationCommand,
    SessionsCommand, ThreadsCommand, ValidateArgs,
};
use crate::config;
use crate::error::Result;
use crate::events::EventTarget;
use crate::serve::{self, ServeOptions};
use crate::store::{Access, Checkpoints, OpenOptionsStore, Store, SyncMode};

#[derive(Debug, Parser)]
#[command(
    name = "thoughtbox",
    version,
    about = "A durable reasoning ledger for AI agents: an MCP server on SQLite"
)]
pub struct Cli {
    #[command(flatten)]
    pub db: DbArgs,
    /// The server's options, also accepted without `serve` (client configs
    /// usually pass them straight to the binary).
    #[command(flatten)]
    pub serve: ServeArgs,
    #[command(subcommand)]
    pub command: Option<Command>,
    /// THOUGHTBOX_HTTP was set, and left unread (see `parse_from_args`).
    #[arg(skip)]
    http_variable_unread: bool,
}

impl Cli {
    /// Whether this command line runs the server.
    pub fn serves(&self) -> bool {
        matches!(self.command, None | Some(Command::Serve(_)))
    }

    /// Parse the command line. Server options may come before any command
    /// (as `thoughtbox --project p`) or after `serve`; given on the command
    /// line before another command, they would be ignored, so they are
    /// refused instead.
    pub fn parse_from_args<I, T>(args: I) -> std::result::Result<Cli, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let mut command = Cli::command();
        let matches = command.try_get_matches_from_mut(args)?;
        if let Some((name, _)) = matches.subcommand() {
            // ServeArgs' own options, as clap knows them.
            let serve = ServeArgs::augment_args(clap::Command::new("serve"));
            let misplaced: Vec<String> = serve
                .get_arguments()
                .filter(|a| matches.value_source(a.get_id().as_str()) == Some(ValueSource::CommandLine))
                .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
                .collect();
            if !misplaced.is_empty() {
                return Err(command.error(
                    clap::error::ErrorKind::ArgumentConflict,
                    format!(
                        "{} {} only for the server: give {} with no command, or after `serve`, not before `{name}`",
                        misplaced.join(", "),
                        if misplaced.len() == 1 { "is" } else { "are" },
                        if misplaced.len() == 1 { "it" } else { "them" },
                    ),
                ));
            }
        }
        let mut cli = Cli::from_arg_matches(&matches)?;
        // Only `thoughtbox serve` reads THOUGHTBOX_HTTP: a client starts the
        // bare binary for stdio and passes its environment on, so the
        // variable exported for a shared HTTP server would turn each stdio
        // server it starts into an HTTP one that its client cannot reach.
        if cli.command.is_none() && matches.value_source("http") == Some(ValueSource::EnvVariable) {
            // An empty one asks for nothing, so nothing is said of it.
            cli.http_variable_unread = cli.serve.http.as_deref().is_some_and(|v| !v.trim().is_empty());
            cli.serve.http = None;
        }
        // An empty flag is refused, not read as "not given" as an empty
        // variable is: `--db "$X"` with X unset in a client config would
        // otherwise put the thoughts in the default ledger (or the one
        // THOUGHTBOX_DB names), another ledger than the one meant, silently.
        for (id, flag, value) in [
            ("db", "--db", cli.db.db.as_deref()),
            ("data_dir", "--data-dir", cli.db.data_dir.as_deref()),
        ] {
            if given_on_command_line(&matches, id) && value.is_none_or(names_nothing) {
                return Err(command.error(
                    clap::error::ErrorKind::InvalidValue,
                    format!(
                        "{flag} is empty: give it a path, or leave {flag} out to use THOUGHTBOX_DB, \
                         THOUGHTBOX_DATA_DIR or ~/.thoughtbox/thoughtbox.db (in a client config, an empty {flag} is \
                         often a variable that is not set)"
                    ),
                ));
            }
        }
        // Flags win over variables: --data-dir given on the command line
        // beats a THOUGHTBOX_DB from the environment.
        if given_on_command_line(&matches, "data_dir") && !given_on_command_line(&matches, "db") {
            cli.db.db = None;
        }
        Ok(cli)
    }
}

/// Whether argument `id` came from the command line, at any level of
/// subcommands (global arguments may be given after the command).
fn given_on_command_line(matches: &clap::ArgMatches, id: &str) -> bool {
    let here = matches
        .try_get_raw(id)
        .ok()
        .flatten()
        .is_some_and(|_| matches.value_source(id) == Some(ValueSource::CommandLine));
    here || matches
        .subcommand()
        .is_some_and(|(_, sub)| given_on_command_line(sub, id))
}

/// Whether a path flag's value is empty or only whitespace: no file a user
/// means to name.
fn names_nothing(path: &std::path::Path) -> bool {
    path.as_os_str().to_string_lossy().trim().is_empty()
}

/// A path from the command line or the environment. Unlike clap's own
/// path parser it takes an empty value (an unset `${VAR}` in a compose
/// file), which then counts as not given.
fn path_arg() -> impl clap::builder::TypedValueParser<Value = PathBuf> {
    use clap::builder::TypedValueParser;
    clap::builder::OsStringValueParser::new().map(PathBuf::from)
}

/// A path a command reads or writes (`backup DEST`, `export --out`,
/// `import PATH`, `validate PATH`): a leading `~` is the home directory, as
/// for `--db`, so a line run without a shell (a systemd unit, a client's
/// config) does not make a directory named `~` where it happens to run.
pub(crate) fn user_path() -> impl clap::builder::TypedValueParser<Value = PathBuf> {
    use clap::builder::TypedValueParser;
    clap::builder::OsStringValueParser::new()
        .try_map(|s| config::expand_operator_path(PathBuf::from(s)).map_err(|e| e.to_string()))
}

/// `--sync`, where an empty value means the default.
fn sync_arg(s: &str) -> std::result::Result<Sync, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "" | "normal" => Ok(Sync::Normal),
        "full" => Ok(Sync::Full),
        other => Err(format!("{other:?} is not a sync mode: use normal or full")),
    }
}

/// Seconds, where an empty value means `default`.
fn secs_or(
    default: u64,
) -> impl Fn(&str) -> std::result::Result<u64, String> + Clone + Send + std::marker::Sync + 'static {
    move |s: &str| {
        let s = s.trim();
        if s.is_empty() {
            return Ok(default);
        }
        s.parse::<u64>()
            .map_err(|_| format!("{s:?} is not a whole number of seconds"))
    }
}

#[derive(Debug, Clone, Args)]
pub struct DbArgs {
    /// Database file (default: ~/.thoughtbox/thoughtbox.db)
    #[arg(long, global = true, env = "THOUGHTBOX_DB", value_name = "PATH", value_parser = path_arg())]
    pub db: Option<PathBuf>,
    /// Directory holding thoughtbox.db when --db is not given
    #[arg(long, global = true, env = "THOUGHTBOX_DATA_DIR", value_name = "DIR", value_parser = path_arg())]
    pub data_dir: Option<PathBuf>,
    /// normal: an acknowledged write survives the process being killed;
    /// full: it also survives power loss (every commit is flushed)
    #[arg(
        long,
        global = true,
        env = "THOUGHTBOX_SYNC",
        value_name = "normal|full",
        value_parser = sync_arg,
        default_value = "normal"
    )]
    pub sync: Sync,
    /// Who checkpoints the WAL: auto (Litestream when its `.NAME-litestream`
    /// directory is beside the database, else thoughtbox), thoughtbox, or
    /// litestream (thoughtbox never checkpoints and keeps the WAL at exit)
    #[arg(
        long,
        global = true,
        env = "THOUGHTBOX_CHECKPOINTS",
        value_name = "auto|thoughtbox|litestream",
        value_parser = checkpoints_arg,
        default_value = "auto"
    )]
    pub checkpoints: Checkpoints,
}

/// `--checkpoints`, where an empty value means the default.
fn checkpoints_arg(s: &str) -> std::result::Result<Checkpoints, String> {
    Checkpoints::parse(s).ok_or_else(|| {
        format!(
            "{:?} is not a checkpoint mode: use auto, thoughtbox or litestream",
            s.trim()
        )
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Sync {
    Normal,
    Full,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the MCP server on stdio (the default), or over HTTP with --http
    Serve(ServeArgs),
    /// Write a consistent copy of the database to DEST (a file, or a directory to put it in)
    Backup {
        /// Destination: a directory (a new timestamped file in it), a new
        /// file, or an earlier backup of this ledger or an empty file (replaced
        /// whole); never the database itself, a database in use, or any other file
        #[arg(value_parser = user_path())]
        dest: PathBuf,
    },
    /// Write sessions as the directory tree of JSON files (or one session as
    /// a file with --format)
    Export(ExportArgs),
    /// Bring a directory tree (ours or the TypeScript Thoughtbox's), or a
    /// SessionExport JSON file, into the database
    Import(ImportArgs),
    /// Check a directory tree or a SessionExport JSON file: an
    /// IntegrityValidationResult per session
    ///
    /// It reads only PATH: no database is opened or written, so --db,
    /// --data-dir and --sync (accepted by every command) change nothing here.
    Validate(ValidateArgs),
    /// List, show and search sessions
    Sessions {
        #[command(subcommand)]
        command: SessionsCommand,
    },
    /// List, show, export and import notebooks (Srcbook .src.md)
    Notebooks {
        #[command(subcommand)]
        command: NotebooksCommand,
    },
    /// The thread registry: list, show, tree, log, freeze,
    /// archive, export and import threads (changes are logged as the user's)
    Threads {
        #[command(subcommand)]
        command: ThreadsCommand,
    },
    /// Counts over the whole ledger
    Stats(JsonArg),
    /// The resolved database path, schema version, settings, counts and file sizes
    Info(JsonArg),
    /// Read or change the database's settings
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// Recompute what the ledger derives (search indexes, counts, chain
    /// tails, tag rows) and check the file: after hand edits made before
    /// schema version 4, or when searches fail; with --check, only check
    Repair(RepairArgs),
    /// Continuous replication with Litestream (docs/replication.md)
    Replication {
        #[command(subcommand)]
        command: ReplicationCommand,
    },
}

/// The server's options. The values of those that can come from the
/// environment are read when the server starts, not when the command line
/// is: a bad `THOUGHTBOX_CRITIQUE_TIMEOUT_SECS` stops the server with a
/// message, and leaves `info` or `backup` alone.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Let every operation run at any stage (for clients that cannot follow
    /// the staged flow); also THOUGHTBOX_STAGES=off
    #[arg(long)]
    pub no_stages: bool,
    /// Seconds to wait for the client's critique (MCP sampling) before
    /// answering the thought without it
    #[arg(
        long,
        env = "THOUGHTBOX_CRITIQUE_TIMEOUT_SECS",
        value_name = "SECS",
        default_value = "60"
    )]
    pub critique_timeout: String,
    /// Seconds to wait for the client's answer to roots/list
    #[arg(
        long,
        env = "THOUGHTBOX_ROOTS_TIMEOUT_SECS",
        value_name = "SECS",
        default_value = "10"
    )]
    pub roots_timeout: String,
    /// Project of new sessions while no root is bound (they get the tag `project:NAME`)
    #[arg(long, env = "THOUGHTBOX_PROJECT", value_name = "NAME")]
    pub project: Option<String>,
    /// Event stream (one JSON object per line): stderr, or a file to append to; off by default
    #[arg(long, env = "THOUGHTBOX_EVENTS", value_name = "stderr|PATH")]
    pub events: Option<String>,
    /// Seconds a notebook cell (or npm install) may run before it is killed
    /// with its processes, unless the call gives timeoutSecs
    #[arg(
        long,
        env = "THOUGHTBOX_NOTEBOOK_TIMEOUT_SECS",
        value_name = "SECS",
        default_value = "30"
    )]
    pub notebook_timeout: String,
    /// Let notebooks created with allowChildProcesses: true start processes
    /// (outside the sandbox: they can read what the server's user can); off
    /// by default, when such notebooks are refused; also
    /// THOUGHTBOX_NOTEBOOK_CHILD_PROCESSES=on
    #[arg(long)]
    pub notebook_child_processes: bool,
    /// Serve an existing ledger read-only (a standby on a restored replica):
    /// reads, searches and exports answer; every write is refused, and the
    /// file is never created, migrated, written or checkpointed
    #[arg(long)]
    pub read_only: bool,
    /// Serve MCP over Streamable HTTP at http://ADDR/mcp, and the
    /// Observatory at http://ADDR/ (default 127.0.0.1:1731), instead of stdio
    /// (with --stdio, beside it). THOUGHTBOX_HTTP is read by `serve` only
    #[arg(
        long,
        env = "THOUGHTBOX_HTTP",
        value_name = "ADDR",
        num_args = 0..=1,
        default_missing_value = crate::http::DEFAULT_ADDR
    )]
    pub http: Option<String>,
    /// With --http: serve stdio too, in the same process (it stops when the
    /// stdio client goes)
    #[arg(long, requires = "http")]
    pub stdio: bool,
    /// With --http: the file holding the bearer token (else THOUGHTBOX_TOKEN;
    /// on a loopback address, else a file beside the database)
    #[arg(long, env = "THOUGHTBOX_TOKEN_FILE", value_name = "PATH", value_parser = user_path())]
    pub token_file: Option<PathBuf>,
    /// With --http: a host name clients reach the server by, accepted in the
    /// Host header (localhost and IP addresses always are); repeatable
    #[arg(
        long = "allowed-host",
        env = "THOUGHTBOX_ALLOWED_HOSTS",
        value_name = "NAME",
        value_delimiter = ','
    )]
    pub allowed_hosts: Vec<String>,
    /// With --http: the folder whose files HTTP agents may name in export
    /// destinations and notebook import paths; without it, they may name
    /// none (stdio agents, the local user's, may name any)
    #[arg(long, env = "THOUGHTBOX_FILES_ROOT", value_name = "DIR", value_parser = user_path())]
    pub files_root: Option<PathBuf>,
}

impl ServeArgs {
    /// The HTTP address asked for, if any (an empty THOUGHTBOX_HTTP is none).
    fn http_addr(&self) -> Result<Option<std::net::SocketAddr>> {
        use std::net::ToSocketAddrs;
        let Some(text) = self.http.as_deref().map(str::trim).filter(|t| !t.is_empty()) else {
            return Ok(None);
        };
        let bad = |why: String| crate::Error::invalid("http", format!("--http / THOUGHTBOX_HTTP {text:?}: {why}"));
        if let Ok(addr) = text.parse() {
            return Ok(Some(addr));
        }
        text.to_socket_addrs()
            .map_err(|e| bad(format!("{e} (give HOST:PORT, e.g. 127.0.0.1:1731)")))?
            .next()
            .map(Some)
            .ok_or_else(|| bad("names no address".into()))
    }

    /// Bind the HTTP listener, with its token (read, or created beside the
    /// database `db`), to say where both are once serving.
    fn http_listening(&self, db: &std::path::Path) -> Result<Option<crate::http::Listening>> {
        let Some(addr) = self.http_addr()? else {
            return Ok(None);
        };
        let env_token = std::env::var("THOUGHTBOX_TOKEN").ok();
        let (token, source) = crate::http::resolve_token(addr, env_token, self.token_file.as_deref(), db)?;
        let hosts = self
            .allowed_hosts
            .iter()
            .map(|h| h.trim().to_string())
            .filter(|h| !h.is_empty())
            .collect();
        let listening = crate::http::Listening::bind(addr, crate::http::Guard::new(token, hosts)?)?;
        // Not beside stdio when stderr is stdout's own pipe: that carries the protocol.
        if self.stdio && crate::stdio::stderr_is_stdout() {
            return Ok(Some(listening));
        }
        Ok(Some(listening.announcing(source)))
    }
}

impl ServeArgs {
    fn options(&self) -> Result<ServeOptions> {
        let secs = |value: &str, default: u64, flag: &str, var: &str| {
            secs_or(default)(value).map_err(|e| crate::Error::invalid(flag, format!("--{flag} / {var}: {e}")))
        };
        let events = match self.events.as_deref() {
            None => EventTarget::Off,
            Some(text) => {
                let target = EventTarget::parse(text)
                    .map_err(|e| crate::Error::invalid("events", format!("--events / THOUGHTBOX_EVENTS: {e}")))?;
                if let EventTarget::File(path) = &target
                    && crate::stdio::path_is_stdin_or_stdout(path)
                {
                    return Err(crate::Error::invalid(
                        "events",
                        format!(
                            "--events / THOUGHTBOX_EVENTS: {} is the server's stdin or stdout, which carry the MCP \
                             protocol; use stderr or a file path",
                            path.display()
                        ),
                    ));
                }
                target
            }
        };
        let files_root = match &self.files_root {
            Some(dir) => Some(std::fs::canonicalize(dir).ok().filter(|d| d.is_dir()).ok_or_else(|| {
                crate::Error::invalid(
                    "files-root",
                    format!(
                        "--files-root / THOUGHTBOX_FILES_ROOT {} is not an existing folder",
                        dir.display()
                    ),
                )
            })?),
            None => None,
        };
        Ok(ServeOptions {
            files_root,
            read_only: self.read_only,
            stages: !(self.no_stages || config::stages_disabled_by_env()?),
            critique_timeout: Duration::from_secs(secs(
                &self.critique_timeout,
                60,
                "critique-timeout",
                "THOUGHTBOX_CRITIQUE_TIMEOUT_SECS",
            )?),
            roots_timeout: Duration::from_secs(secs(
                &self.roots_timeout,
                10,
                "roots-timeout",
                "THOUGHTBOX_ROOTS_TIMEOUT_SECS",
            )?),
            default_project: match self.project.as_deref().map(str::trim).filter(|p| !p.is_empty()) {
                Some(p) => match crate::domain::project_problem(p) {
                    // Every session the server creates would be refused.
                    Some(why) => {
                        return Err(crate::Error::invalid(
                            "project",
                            format!("--project / THOUGHTBOX_PROJECT cannot name a project: {why}"),
                        ));
                    }
                    None => Some(p.to_string()),
                },
                None => None,
            },
            events,
            notebook_timeout: {
                let limit = secs(
                    &self.notebook_timeout,
                    30,
                    "notebook-timeout",
                    "THOUGHTBOX_NOTEBOOK_TIMEOUT_SECS",
                )?;
                let max = crate::notebook::runner::MAX_TIME_LIMIT.as_secs();
                if !(1..=max).contains(&limit) {
                    return Err(crate::Error::invalid(
                        "notebook-timeout",
                        format!("--notebook-timeout / THOUGHTBOX_NOTEBOOK_TIMEOUT_SECS must be 1 to {max} seconds"),
                    ));
                }
                Duration::from_secs(limit)
            },
            notebook_child_processes: self.notebook_child_processes || config::notebook_child_processes_by_env()?,
        })
    }
}

impl DbArgs {
    /// The database's path, as the flags and the environment say.
    pub fn path(&self) -> Result<PathBuf> {
        config::resolve_db_path(self.db.clone(), self.data_dir.clone())
    }

    /// Open the database, creating it if it does not exist yet.
    pub fn open(&self) -> Result<Store> {
        self.open_as(false, Access::Create)
    }

    /// Open a database that must exist already, for a command that only
    /// reads: it would otherwise create an empty ledger at a mistyped path
    /// and report on it as if nothing were wrong.
    pub fn open_existing(&self) -> Result<Store> {
        self.open_present(Access::Read)
    }

    /// [`DbArgs::open_existing`] with another [`Access`]: `repair` upgrades
    /// an older ledger, `backup` copies it as it is.
    pub fn open_present(&self, access: Access) -> Result<Store> {
        let path = self.path()?;
        if !path.exists() {
            return Err(crate::Error::invalid(
                "db",
                format!(
                    "no database at {} (check --db, --data-dir, THOUGHTBOX_DB and THOUGHTBOX_DATA_DIR; the server, `import` and `config set` create one)",
                    path.display()
                ),
            ));
        }
        self.open_as(false, access)
    }

    /// Open for serving: WAL checkpoints run in the background.
    pub fn open_for_serving(&self) -> Result<Store> {
        self.open_as(true, Access::Create)
    }

    /// Open for `serve --read-only`: an existing ledger at this schema,
    /// opened read-only by SQLite too.
    pub fn open_read_only(&self) -> Result<Store> {
        let path = self.path()?;
        if !path.exists() {
            return Err(crate::Error::invalid(
                "db",
                format!(
                    "no database at {} to serve read-only (check --db, --data-dir, THOUGHTBOX_DB and \
                     THOUGHTBOX_DATA_DIR; `litestream restore -o PATH` makes one from a replica)",
                    path.display()
                ),
            ));
        }
        Store::open(
            path,
            OpenOptionsStore {
                access: Access::Read,
                checkpoints: self.checkpoints,
                read_only: true,
                ..Default::default()
            },
        )
    }

    fn open_as(&self, background_checkpoints: bool, access: Access) -> Result<Store> {
        let path = self.path()?;
        let sync = match self.sync {
            Sync::Normal => SyncMode::Normal,
            Sync::Full => SyncMode::Full,
        };
        Store::open(
            path,
            OpenOptionsStore {
                sync,
                pool_size: None,
                background_checkpoints,
                access,
                checkpoints: self.checkpoints,
                read_only: false,
            },
        )
    }
}

/// Run the command line. Errors are returned for `main` to print.
pub fn run(cli: Cli) -> Result<ExitCode> {
    crate::limits::ensure_open_files()?;
    if cli.http_variable_unread {
        tracing::info!("THOUGHTBOX_HTTP is read by `thoughtbox serve` only: serving stdio");
    }
    let command = match cli.command {
        Some(c) => c,
        None => Command::Serve(cli.serve),
    };
    match command {
        Command::Serve(args) => {
            crate::serve::keep_memory_private();
            let options = args.options()?;
            let store = if options.read_only {
                cli.db.open_read_only()?
            } else {
                cli.db.open_for_serving()?
            };
            match args.http_listening(store.path())? {
                None => serve::run_stdio(store, options, None)?,
                Some(listening) if args.stdio => serve::run_stdio(store, options, Some(listening))?,
                Some(listening) => serve::run_http(store, options, listening)?,
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Backup { dest } => {
            let store = cli.db.open_present(Access::Copy)?;
            let written = store.backup_to(&dest)?;
            // The file written on stdout, for a script to capture (a
            // directory DEST gets a name with the time in it).
            println!("{}", written.display());
            Ok(ExitCode::SUCCESS)
        }
        Command::Export(args) => commands::export(&cli.db, args),
        Command::Import(args) => commands::import(&cli.db, args),
        Command::Validate(args) => commands::validate(args),
        Command::Sessions { command } => commands::sessions(&cli.db, command),
        Command::Notebooks { command } => commands::notebooks(&cli.db, command),
        Command::Threads { command } => commands::threads(&cli.db, command),
        Command::Stats(args) => commands::stats(&cli.db, args.json),
        Command::Info(args) => commands::info(&cli.db, args.json),
        Command::Config { command } => commands::config(&cli.db, command),
        Command::Repair(args) if args.check => commands::check(&cli.db, args.json),
        Command::Repair(args) => commands::repair(&cli.db, args.json),
        Command::Replication { command } => commands::replication(&cli.db, command),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> std::result::Result<Cli, clap::Error> {
        Cli::parse_from_args(std::iter::once("thoughtbox").chain(args.iter().copied()))
    }

    #[test]
    fn session_ids_are_read_in_the_ledger_form() {
        let given = " 0F8E2D9C-1B2A-4C3D-9E8F-A1B2C3D4E5F6\n";
        let id = "0f8e2d9c-1b2a-4c3d-9e8f-a1b2c3d4e5f6";
        // `notebooks` once lowered its `--session` by hand; every flag and
        // argument that names a session now does so through its type.
        match parse(&["notebooks", "list", "--session", given])
            .expect("parse")
            .command
        {
            Some(Command::Notebooks {
                command: NotebooksCommand::List { session, .. },
            }) => assert_eq!(session.as_deref(), Some(id)),
            other => panic!("parsed as {other:?}"),
        }
        match parse(&["export", "--session", given, "--session", "Imported-1"])
            .expect("parse")
            .command
        {
            Some(Command::Export(args)) => assert_eq!(args.sessions, [id, "Imported-1"]),
            other => panic!("parsed as {other:?}"),
        }
        match parse(&["threads", "show", given]).expect("parse").command {
            Some(Command::Threads {
                command: ThreadsCommand::Show { id: shown, .. },
            }) => assert_eq!(shown, id),
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn child_processes_are_the_operators_to_allow() {
        let off = parse(&[]).expect("parse").serve.options().expect("options");
        assert!(!off.notebook_child_processes);
        for args in [
            &["--notebook-child-processes"][..],
            &["serve", "--notebook-child-processes"][..],
        ] {
            let cli = parse(args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
            let serve = match cli.command {
                None => cli.serve,
                Some(Command::Serve(s)) => s,
                Some(other) => panic!("{args:?} parsed as {other:?}"),
            };
            assert!(serve.options().expect("options").notebook_child_processes, "{args:?}");
        }
    }

    #[test]
    fn server_options_work_with_and_without_serve() {
        for args in [
            &["--project", "myapp", "--no-stages", "--critique-timeout", "5"][..],
            &["serve", "--project", "myapp", "--no-stages", "--critique-timeout", "5"][..],
            &[
                "--db",
                "/tmp/x.db",
                "--project",
                "myapp",
                "--no-stages",
                "--critique-timeout",
                "5",
            ][..],
        ] {
            let cli = parse(args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
            let serve = match cli.command {
                None => cli.serve,
                Some(Command::Serve(s)) => s,
                Some(other) => panic!("{args:?} parsed as {other:?}"),
            };
            assert_eq!(serve.project.as_deref(), Some("myapp"), "{args:?}");
            assert!(serve.no_stages, "{args:?}");
            let options = serve.options().unwrap_or_else(|e| panic!("{args:?}: {e}"));
            assert_eq!(options.critique_timeout, Duration::from_secs(5), "{args:?}");
        }
        // A project no session could be tagged with is refused at start,
        // not at every start_new.
        let long = "p".repeat(300);
        for bad in [long.as_str(), "a\u{0}b"] {
            let cli = parse(&["--project", bad]).expect("parse");
            let e = cli.serve.options().expect_err(bad);
            assert!(e.to_string().contains("--project"), "{e}");
        }
    }

    #[test]
    fn database_options_reach_every_command() {
        let cli = parse(&["backup", "--db", "/tmp/x.db", "/tmp/b.db"]).expect("parse");
        assert_eq!(cli.db.db.as_deref(), Some(std::path::Path::new("/tmp/x.db")));
        let cli = parse(&["--db", "/tmp/x.db", "--sync", "full", "stats"]).expect("parse");
        assert_eq!(cli.db.db.as_deref(), Some(std::path::Path::new("/tmp/x.db")));
        assert_eq!(cli.db.sync, Sync::Full);
        // export has its own --project.
        let cli = parse(&["export", "--out", "/tmp/t", "--project", "p"]).expect("parse");
        assert!(matches!(cli.command, Some(Command::Export(_))));
    }

    /// `--db ''` used to fall back to THOUGHTBOX_DB or the default ledger;
    /// an empty or blank database flag is refused with every command.
    #[test]
    fn an_empty_database_flag_is_refused() {
        for args in [
            &["--db", ""][..],
            &["serve", "--db", " "],
            &["--db", "", "stats"],
            &["stats", "--db="],
            &["--data-dir", "", "info"],
            &["export", "--out", "/tmp/t", "--data-dir", "\t"],
        ] {
            let err = parse(args).expect_err(&format!("{args:?}"));
            assert_eq!(err.kind(), clap::error::ErrorKind::InvalidValue, "{args:?}");
            assert_eq!(err.exit_code(), 2, "{args:?}");
            let flag = if args.contains(&"--data-dir") {
                "--data-dir"
            } else {
                "--db"
            };
            assert!(err.to_string().contains(&format!("{flag} is empty")), "{args:?}: {err}");
        }
        // A path is still a path, and --data-dir alone still drops --db.
        let cli = parse(&["--data-dir", "/tmp/d", "stats"]).expect("parse");
        assert_eq!(cli.db.path().expect("path"), PathBuf::from("/tmp/d/thoughtbox.db"));
    }

    #[test]
    fn the_checkpoint_mode_and_read_only_are_read() {
        let cli = parse(&["--checkpoints", "litestream", "info"]).expect("parse");
        assert_eq!(cli.db.checkpoints, Checkpoints::Litestream);
        assert_eq!(parse(&["info"]).expect("parse").db.checkpoints, Checkpoints::Auto);
        let err = parse(&["--checkpoints", "never", "info"]).expect_err("a mode that is none");
        assert!(err.to_string().contains("auto, thoughtbox or litestream"), "{err}");
        let cli = parse(&["serve", "--read-only"]).expect("parse");
        let Some(Command::Serve(serve)) = cli.command else {
            panic!("serve")
        };
        assert!(serve.options().expect("options").read_only);
        // Only for the server.
        assert!(parse(&["--read-only", "info"]).is_err());
    }

    #[test]
    fn the_files_root_is_an_existing_folder_made_canonical() {
        let options = |args: &[&str]| {
            let Some(Command::Serve(serve)) = parse(args).expect("parse").command else {
                panic!("serve")
            };
            serve.options()
        };
        let dir = tempfile::tempdir().expect("dir");
        let given = dir.path().join(".");
        let root = options(&["serve", "--files-root", given.to_str().expect("utf-8")]).expect("options");
        assert_eq!(
            root.files_root,
            Some(std::fs::canonicalize(dir.path()).expect("canonical"))
        );
        let missing = dir.path().join("missing");
        let refused = options(&["serve", "--files-root", missing.to_str().expect("utf-8")]);
        assert!(
            matches!(&refused, Err(crate::Error::InvalidPayload { field, .. }) if field == "files-root"),
            "{refused:?}"
        );
    }

    #[test]
    fn http_takes_an_optional_address_and_stdio_only_beside_it() {
        let serve = |args: &[&str]| match parse(args).expect("parse").command {
            Some(Command::Serve(s)) => s,
            other => panic!("{other:?}"),
        };
        let default = serve(&["serve", "--http"]);
        assert_eq!(
            default.http_addr().expect("addr"),
            Some(crate::http::DEFAULT_ADDR.parse().unwrap())
        );
        let open = serve(&[
            "serve",
            "--http",
            "0.0.0.0:9000",
            "--stdio",
            "--allowed-host",
            "a.example,b.example",
        ]);
        assert_eq!(open.http_addr().expect("addr"), Some("0.0.0.0:9000".parse().unwrap()));
        assert!(open.stdio);
        assert_eq!(open.allowed_hosts, ["a.example", "b.example"]);
        assert_eq!(serve(&["serve"]).http_addr().expect("none"), None);
        let bad = serve(&["serve", "--http", "not an address"])
            .http_addr()
            .expect_err("bad");
        assert!(bad.to_string().contains("HOST:PORT"), "{bad}");
        assert!(parse(&["serve", "--stdio"]).is_err(), "--stdio needs --http");
    }

    #[test]
    fn server_options_before_another_command_are_refused() {
        let err =
            parse(&["--no-stages", "--project", "p", "backup", "/tmp/b.db"]).expect_err("server flags with backup");
        let message = err.to_string();
        assert!(
            message.contains("--no-stages, --project are only for the server"),
            "{message}"
        );
        assert!(message.contains("not before `backup`"), "{message}");
        let err = parse(&["--project", "p", "serve"]).expect_err("server flags before serve");
        assert!(err.to_string().contains("after `serve`"), "{err}");
    }
}
