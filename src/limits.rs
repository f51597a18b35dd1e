//! The process's limit on open files (`ulimit -n`), checked before
//! anything opens one.
//!
//! A server holds about 30 descriptors: two per SQLite connection (the
//! database and its WAL; up to eight pooled readers and the writer), the
//! shared `-shm`, the runtime's epoll, event and signal descriptors, the
//! three standard streams and the event stream. Under a limit too low for
//! that, a connection the pool opens under load fails with "unable to open
//! database file" and the pool retries it for 30 s before the call fails, and
//! under a lower one still the runtime cannot set up its signal handlers and
//! the process panics.

use crate::error::{Error, Result};

/// Threads of the runtime's blocking pool, and the pooled read connections
/// they use: every SQLite read runs on one of them.
pub const BLOCKING_THREADS: usize = 8;

/// The fewest open files thoughtbox runs with: room for every connection
/// of a busy server and the files an export or import keeps open at once.
pub const MIN_OPEN_FILES: u64 = 64;

/// The soft limit is raised this far (or to the hard limit, if lower)
/// when it is below; nothing needs more.
#[cfg_attr(not(unix), allow(dead_code))]
const WANTED_OPEN_FILES: u64 = 4096;

/// Raise the soft limit on open files towards the hard one when it is
/// below [`WANTED_OPEN_FILES`] (what runtimes such as Go's do at start-up),
/// and refuse to run, saying why, when even that leaves fewer than
/// [`MIN_OPEN_FILES`]. Returns the limit in force.
pub fn ensure_open_files() -> Result<u64> {
    #[cfg(unix)]
    {
        use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
        let limit = getrlimit(Resource::Nofile);
        // `None` is unlimited.
        let Some(soft) = limit.current else {
            return Ok(u64::MAX);
        };
        let hard = limit.maximum.unwrap_or(u64::MAX);
        let mut now = soft;
        if soft < WANTED_OPEN_FILES && hard > soft {
            let raised = hard.min(WANTED_OPEN_FILES);
            let wanted = Rlimit {
                current: Some(raised),
                maximum: limit.maximum,
            };
            match setrlimit(Resource::Nofile, wanted) {
                Ok(()) => now = raised,
                Err(e) => tracing::debug!("could not raise the open-file limit from {soft} to {raised}: {e}"),
            }
        }
        check(now, hard)
    }
    #[cfg(not(unix))]
    Ok(u64::MAX)
}

/// The soft limit on open files in force (`ulimit -n`), once
/// [`ensure_open_files`] has raised it: the HTTP server keeps its
/// connections to half of it.
pub fn open_files() -> u64 {
    #[cfg(unix)]
    {
        rustix::process::getrlimit(rustix::process::Resource::Nofile)
            .current
            .unwrap_or(u64::MAX)
    }
    #[cfg(not(unix))]
    u64::MAX
}

/// The refusal for a limit of `now` open files (hard limit `hard`).
#[cfg_attr(not(unix), allow(dead_code))]
fn check(now: u64, hard: u64) -> Result<u64> {
    if now >= MIN_OPEN_FILES {
        return Ok(now);
    }
    Err(Error::invalid(
        "ulimit",
        format!(
            "this process may open only {now} files (ulimit -n; the hard limit is {hard}), and thoughtbox needs \
             {MIN_OPEN_FILES}: run it where `ulimit -n` allows at least {MIN_OPEN_FILES} (for example `ulimit -n 1024` \
             in the shell or the service file that starts it)"
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn too_few_open_files_is_refused_saying_how_many() {
        assert_eq!(check(1024, 4096).unwrap(), 1024);
        assert_eq!(check(MIN_OPEN_FILES, MIN_OPEN_FILES).unwrap(), MIN_OPEN_FILES);
        let e = check(16, 16).unwrap_err().to_string();
        assert!(e.contains("only 16 files") && e.contains("ulimit -n"), "{e}");
    }

    #[cfg(unix)]
    #[test]
    fn the_limit_in_force_is_at_least_the_minimum_here() {
        // Raising the soft limit only ever moves it up, within the hard one.
        let before = rustix::process::getrlimit(rustix::process::Resource::Nofile);
        let now = ensure_open_files().unwrap();
        assert!(now >= before.current.unwrap_or(u64::MAX).min(WANTED_OPEN_FILES));
        assert!(before.maximum.is_none_or(|hard| now <= hard));
    }
}
