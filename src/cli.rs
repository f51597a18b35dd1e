//! The command line: `serve` (the default) runs the MCP server on stdio;
//! the other commands work on the same database, even while a server runs.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, FromArgMatches, Parser, Subcommand, ValueEnum};

use crate::commands::{self, ConfigCommand, ExportArgs, ImportArgs, JsonArg, SessionsCommand, ValidateArgs};
use crate::config;
use crate::error::{Error, Result};
use crate::events::EventTarget;
use crate::serve::{self, ServeOptions};
use crate::store::{OpenOptionsStore, Store, SyncMode};

#[derive(Debug, Parser)]
#[command(
    name = "thoughtbox",
    version,
    about = "A durable reasoning ledger for AI agents: an MCP server on SQLite"
)]
pub struct Cli {
    #[command(flatten)]
    pub db: DbArgs,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Clone, Args)]
pub struct DbArgs {
    /// Database file (default: ~/.thoughtbox/thoughtbox.db)
    #[arg(long, global = true, env = "THOUGHTBOX_DB", value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// Directory holding thoughtbox.db when --db is not given
    #[arg(long, global = true, env = "THOUGHTBOX_DATA_DIR", value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// normal: an acknowledged write survives the process being killed;
    /// full: it also survives power loss (every commit is flushed)
    #[arg(long, global = true, env = "THOUGHTBOX_SYNC", value_enum, default_value_t = Sync::Normal)]
    pub sync: Sync,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Sync {
    Normal,
    Full,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the MCP server on stdio (the default)
    Serve(ServeArgs),
    /// Write a consistent copy of the database to DEST (a file, or a directory to put it in)
    Backup {
        /// Destination file or directory
        dest: PathBuf,
    },
    /// Write sessions as the directory tree of JSON files (or one session as
    /// a file with --format)
    Export(ExportArgs),
    /// Bring a directory tree (ours or the TypeScript Thoughtbox's) into the database
    Import(ImportArgs),
    /// Check a directory tree: an IntegrityValidationResult per session
    Validate(ValidateArgs),
    /// List, show and search sessions
    Sessions {
        #[command(subcommand)]
        command: SessionsCommand,
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
}

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
        default_value_t = 60
    )]
    pub critique_timeout: u64,
    /// Seconds to wait for the client's answer to roots/list
    #[arg(
        long,
        env = "THOUGHTBOX_ROOTS_TIMEOUT_SECS",
        value_name = "SECS",
        default_value_t = 10
    )]
    pub roots_timeout: u64,
    /// Project of new sessions while no root is bound (they get the tag `project:NAME`)
    #[arg(long, env = "THOUGHTBOX_PROJECT", value_name = "NAME")]
    pub project: Option<String>,
    /// Event stream (one JSON object per line): stderr, or a file to append to; off by default
    #[arg(long, env = "THOUGHTBOX_EVENTS", value_name = "stderr|PATH", value_parser = EventTarget::parse)]
    pub events: Option<EventTarget>,
}

impl ServeArgs {
    /// The serve options when no `serve` command was given: defaults and
    /// environment variables, as `thoughtbox serve` would read them.
    fn from_env() -> Result<ServeArgs> {
        let command = ServeArgs::augment_args(clap::Command::new("serve"));
        command
            .try_get_matches_from(["serve"])
            .and_then(|m| ServeArgs::from_arg_matches(&m))
            .map_err(|e| Error::invalid("serve", e.to_string().trim().to_string()))
    }

    fn options(&self) -> ServeOptions {
        ServeOptions {
            stages: !(self.no_stages || config::stages_disabled_by_env()),
            critique_timeout: Duration::from_secs(self.critique_timeout),
            roots_timeout: Duration::from_secs(self.roots_timeout),
            default_project: self
                .project
                .as_deref()
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .map(str::to_string),
            events: self.events.clone().unwrap_or_default(),
        }
    }
}

impl DbArgs {
    pub fn open(&self) -> Result<Store> {
        self.open_with(false)
    }

    /// Open for serving: WAL checkpoints run in the background.
    pub fn open_for_serving(&self) -> Result<Store> {
        self.open_with(true)
    }

    fn open_with(&self, background_checkpoints: bool) -> Result<Store> {
        let path = config::resolve_db_path(self.db.clone(), self.data_dir.clone())?;
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
            },
        )
    }
}

/// Run the command line. Errors are returned for `main` to print.
pub fn run(cli: Cli) -> Result<ExitCode> {
    let command = match cli.command {
        Some(c) => c,
        None => Command::Serve(ServeArgs::from_env()?),
    };
    match command {
        Command::Serve(args) => {
            let options = args.options();
            let store = cli.db.open_for_serving()?;
            serve::run_stdio(store, options)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Backup { dest } => {
            let store = cli.db.open()?;
            let written = store.backup_to(&dest)?;
            eprintln!("backup written to {}", written.display());
            Ok(ExitCode::SUCCESS)
        }
        Command::Export(args) => commands::export(&cli.db, args),
        Command::Import(args) => commands::import(&cli.db, args),
        Command::Validate(args) => commands::validate(args),
        Command::Sessions { command } => commands::sessions(&cli.db, command),
        Command::Stats(args) => commands::stats(&cli.db, args.json),
        Command::Info(args) => commands::info(&cli.db, args.json),
        Command::Config { command } => commands::config(&cli.db, command),
    }
}
