use std::process::ExitCode;

use tracing_subscriber::EnvFilter;

fn main() -> ExitCode {
    let cli = thoughtbox::cli::Cli::parse_from_args(std::env::args_os()).unwrap_or_else(|e| e.exit());
    // Logs go to stderr: in serve mode stdout carries only JSON-RPC. When
    // stderr is that same pipe or socket (inetd), nothing is logged at all.
    let quiet = cli.serves() && thoughtbox::stdio::stderr_is_stdout();
    let filter = if quiet {
        EnvFilter::new("off")
    } else {
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("thoughtbox=info"))
    };
    // A log line that cannot be written (the terminal closed, a log pipe
    // went away) is dropped: reporting that failure would panic in
    // `eprintln!`, in whichever task logged, the signal watcher included.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .log_internal_errors(false)
        .with_ansi(false)
        .with_env_filter(filter)
        .init();
    let outcome = thoughtbox::cli::run(cli);
    // Let the last connections close, so that the database's -wal and -shm
    // files go away with them (unless another process has it open).
    thoughtbox::store::wait_until_closed(std::time::Duration::from_secs(2));
    match outcome {
        Ok(code) => code,
        Err(e) => {
            if !quiet {
                use std::io::Write;
                // Nothing is left to tell when stderr is gone.
                let _ = writeln!(std::io::stderr(), "thoughtbox: {e}");
            }
            ExitCode::FAILURE
        }
    }
}
