use std::process::ExitCode;

use tracing_subscriber::EnvFilter;

fn main() -> ExitCode {
    let cli = thoughtbox::cli::Cli::parse_from_args(std::env::args_os()).unwrap_or_else(|e| e.exit());
    // Logs go to stderr: in serve mode stdout carries only JSON-RPC.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("thoughtbox=info")))
        .init();
    match thoughtbox::cli::run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("thoughtbox: {e}");
            ExitCode::FAILURE
        }
    }
}
