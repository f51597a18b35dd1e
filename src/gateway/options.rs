//! What the gateway is told when the server starts (command-line options
//! and their environment variables).

use std::time::Duration;

use crate::events::EventTarget;

/// How the gateway serves, as the command line set it.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Enforce progressive-disclosure stages.
    pub stages: bool,
    /// How long a critique (MCP sampling) may take before the thought is answered without it.
    pub critique_timeout: Duration,
    /// How long the client may take to answer `roots/list`.
    pub roots_timeout: Duration,
    /// The project of sessions created while no root is bound (`--project`).
    pub default_project: Option<String>,
    /// Where the event stream goes.
    pub events: EventTarget,
    /// A notebook cell's (and npm install's) time limit unless a call gives one.
    pub notebook_timeout: Duration,
    /// Honour a notebook's `allowChildProcesses` (`--notebook-child-processes`):
    /// its cells' processes are outside the sandbox, so the operator, not
    /// the agent, says whether they may run.
    pub notebook_child_processes: bool,
    /// Refuse every write (`serve --read-only`, a standby on a replica).
    pub read_only: bool,
    /// The folder (canonical) whose files HTTP agents may name
    /// (`--files-root`); `None`: they may name none.
    pub files_root: Option<std::path::PathBuf>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            stages: true,
            critique_timeout: Duration::from_secs(60),
            roots_timeout: Duration::from_secs(10),
            default_project: None,
            events: EventTarget::Off,
            notebook_timeout: crate::notebook::runner::DEFAULT_TIME_LIMIT,
            notebook_child_processes: false,
            read_only: false,
            files_root: None,
        }
    }
}
