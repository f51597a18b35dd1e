//! Progress on stderr: a bar redrawn in place when stderr is a terminal,
//! one plain line per step otherwise (logs, CI). A few lines of our own
//! rather than a progress-bar crate: one bar, no styles, no extra build time.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

const WIDTH: usize = 30;
const REDRAW: Duration = Duration::from_millis(80);

pub struct Progress {
    label: &'static str,
    bar: bool,
    drawn: Option<Instant>,
}

impl Progress {
    pub fn new(label: &'static str) -> Progress {
        Progress {
            label,
            bar: std::io::stderr().is_terminal(),
            drawn: None,
        }
    }

    /// Report that `done` of `total` steps are finished; `line` describes the
    /// step, for the plain form.
    pub fn step(&mut self, done: usize, total: usize, line: impl FnOnce() -> String) {
        let mut err = std::io::stderr().lock();
        if !self.bar {
            let _ = writeln!(err, "{}", line());
            return;
        }
        if self.drawn.is_some_and(|t| t.elapsed() < REDRAW) && done < total {
            return;
        }
        let filled = (done * WIDTH).checked_div(total).unwrap_or(WIDTH);
        let _ = write!(
            err,
            "\r{} [{}{}] {done}/{total}",
            self.label,
            "#".repeat(filled),
            "-".repeat(WIDTH - filled)
        );
        let _ = err.flush();
        self.drawn = Some(Instant::now());
    }

    /// End the bar's line.
    pub fn finish(&mut self) {
        if self.bar && self.drawn.is_some() {
            let _ = writeln!(std::io::stderr());
        }
    }
}
