//! Running the MCP server on stdio, with background upkeep of the database
//! and a clean shutdown on stdin EOF, SIGINT, SIGTERM or SIGHUP (unless started with SIGHUP ignored);
//! on Windows Ctrl-C, Ctrl-Break or the console window closing.

use std::sync::Arc;
use std::time::Duration;

use rmcp::ServiceExt;

use crate::error::{Error, Result};
use crate::gateway::Gateway;
pub use crate::gateway::ServeOptions;
pub use crate::http::Listening;
use crate::maintenance::Maintenance;
use crate::shutdown::Shutdown;
use crate::store::Store;
use crate::writer::Writer;

/// Whether the server was started with SIGHUP ignored (`nohup`), asked of
/// the kernel (sigaction) before any handler is set: on every Unix, where
/// /proc/self/status, read before, exists only on Linux (on macOS SIGHUP was
/// then always taken as ignored, and ended the server without its final
/// checkpoint). Where the question fails, SIGHUP is taken as ignored and
/// left alone. Public for the tests, which ask it of their own process.
#[cfg(unix)]
pub fn hangup_ignored() -> bool {
    // SAFETY: with a null new action, sigaction only writes the current
    // disposition of SIGHUP into `old`, a zeroed value of its own type.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(libc::SIGHUP, std::ptr::null(), &mut old) != 0 || old.sa_sigaction == libc::SIG_IGN
    }
}

/// Make the server's memory and environment unreadable to the other
/// processes of its user (a notebook cell's included): `/proc/<pid>/environ`
/// holds THOUGHTBOX_TOKEN when it came from there, and a process that may
/// be traced can be made to say anything. No core file either. Linux only;
/// root still reads them, so a server run as root has this from nothing.
pub fn keep_memory_private() {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    if let Err(e) = rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable) {
        tracing::warn!("could not make the server's memory private (PR_SET_DUMPABLE): {e}");
    }
}

/// The signals that stop a server. Their handlers are installed when this
/// is made, not when it is first awaited: a signal in between (sent by
/// whoever read that the server listens) would otherwise end the process
/// without its clean exit.
struct StopSignals {
    #[cfg(unix)]
    interrupt: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    terminate: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    hangup: Option<tokio::signal::unix::Signal>,
    /// Ctrl-C, Ctrl-Break and the console closed: Windows ends the
    /// process without its clean exit unless they are handled (tokio holds
    /// the closing one back until the process has exited, within the few
    /// seconds the system gives).
    #[cfg(windows)]
    ctrl_c: Option<tokio::signal::windows::CtrlC>,
    #[cfg(windows)]
    ctrl_break: Option<tokio::signal::windows::CtrlBreak>,
    #[cfg(windows)]
    ctrl_close: Option<tokio::signal::windows::CtrlClose>,
}

impl StopSignals {
    /// Install the handlers (inside the runtime).
    fn install() -> StopSignals {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            StopSignals {
                interrupt: signal(SignalKind::interrupt()).ok(),
                terminate: signal(SignalKind::terminate()).ok(),
                // SIGHUP too (the terminal or session that started the
                // server went away): a clean exit checkpoints the WAL and
                // gives stdin and stdout back as they were, where the
                // default action would just end the process. Unless it came
                // ignored (`nohup`): a handler would undo that.
                hangup: if hangup_ignored() {
                    None
                } else {
                    signal(SignalKind::hangup()).ok()
                },
            }
        }
        #[cfg(windows)]
        {
            StopSignals {
                ctrl_c: tokio::signal::windows::ctrl_c().ok(),
                ctrl_break: tokio::signal::windows::ctrl_break().ok(),
                ctrl_close: tokio::signal::windows::ctrl_close().ok(),
            }
        }
        #[cfg(not(any(unix, windows)))]
        StopSignals {}
    }

    /// The next stop signal.
    async fn next(&mut self) {
        #[cfg(unix)]
        {
            async fn recv(signal: &mut Option<tokio::signal::unix::Signal>) {
                match signal {
                    Some(s) => {
                        s.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            }
            tokio::select! {
                _ = recv(&mut self.interrupt) => {}
                _ = recv(&mut self.terminate) => {}
                _ = recv(&mut self.hangup) => {}
            }
        }
        #[cfg(windows)]
        {
            async fn or_never(event: Option<impl std::future::Future>) {
                match event {
                    Some(event) => {
                        event.await;
                    }
                    None => std::future::pending::<()>().await,
                }
            }
            tokio::select! {
                _ = or_never(self.ctrl_c.as_mut().map(|s| s.recv())) => {}
                _ = or_never(self.ctrl_break.as_mut().map(|s| s.recv())) => {}
                _ = or_never(self.ctrl_close.as_mut().map(|s| s.recv())) => {}
            }
        }
        #[cfg(not(any(unix, windows)))]
        {
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }
}

/// How long HTTP requests in flight may still run once the server stops.
const HTTP_GRACE: Duration = Duration::from_secs(1);

/// How long the MCP session still waits for requests in flight after a
/// signal (reads are stopped at the signal; writes finish or not).
const SESSION_GRACE: Duration = Duration::from_millis(500);

/// A signal this soon after the one before it is taken as the same one.
const SIGNAL_ECHO: Duration = Duration::from_millis(300);

/// How long requests and the writer still run after a signal before the
/// shutdown goes on without them: a client sends SIGKILL a few seconds
/// after SIGTERM, and the final checkpoint (up to a second) must fit.
const SIGNAL_GRACE: Duration = Duration::from_secs(1);

/// Resolves once a shutdown signal has been received.
async fn signalled(seen: tokio::sync::watch::Receiver<u32>) {
    signalled_after(seen, 0).await
}

/// Wait for a signal after the first `before` ones.
async fn signalled_after(mut seen: tokio::sync::watch::Receiver<u32>, before: u32) {
    if seen.wait_for(|&n| n > before).await.is_err() {
        // The signal watcher is gone: no signal will come.
        std::future::pending::<()>().await;
    }
}

/// The client's input, noting its end: the client is gone, and the MCP
/// library's cancels of the requests still running from then on are the
/// shutdown's, not the client's (see [`Shutdown`]).
struct EndOfInput<R>(R, Arc<Shutdown>);

impl<R: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for EndOfInput<R> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let read = std::pin::Pin::new(&mut self.0).poll_read(cx, buf);
        if matches!(read, std::task::Poll::Ready(Ok(()))) && buf.filled().len() == before && buf.remaining() > 0 {
            self.1.begin();
        }
        read
    }
}

/// Count the shutdown signals as they come (see [`StopSignals`]), from
/// a task of the runtime.
fn watch_signals() -> (tokio::task::JoinHandle<()>, tokio::sync::watch::Receiver<u32>) {
    let (on_signal, signal_seen) = tokio::sync::watch::channel(0u32);
    let mut stop_signals = StopSignals::install();
    let signals = tokio::spawn(async move {
        let mut last: Option<tokio::time::Instant> = None;
        let mut n = 0u32;
        loop {
            stop_signals.next().await;
            // The same signal twice in a row is one request to stop: a
            // closing terminal sends SIGHUP to the job and the shell
            // sends it again, a launcher may forward the Ctrl-C its group
            // also got (a second signal 1-5 ms later must not skip the
            // final checkpoint).
            if last.is_some_and(|at| at.elapsed() < SIGNAL_ECHO) {
                continue;
            }
            last = Some(tokio::time::Instant::now());
            n += 1;
            // Acted on before it is logged, so that no logging trouble can
            // keep a server from stopping.
            let _ = on_signal.send(n);
            if n == 1 {
                tracing::info!("signal received, shutting down");
            } else {
                tracing::warn!("another signal received: exiting without waiting for what is still running");
            }
        }
    });
    (signals, signal_seen)
}

/// What a server runs besides its connections, to stop at the end.
struct Running {
    store: Store,
    shutdown: Arc<Shutdown>,
    maintenance: Maintenance,
    writer_thread: crate::writer::WriterThread,
    releasing: tokio::task::JoinHandle<()>,
    signals: tokio::task::JoinHandle<()>,
    signal_seen: tokio::sync::watch::Receiver<u32>,
}

/// Once the connections have ended: stop what still runs, let the writer
/// finish, and checkpoint, so that the database file alone holds the whole
/// ledger. `outcome` is the serving's own result.
async fn wind_down(running: Running, outcome: Result<()>) -> Result<()> {
    let Running {
        store,
        shutdown,
        maintenance,
        writer_thread,
        releasing,
        signals,
        signal_seen: signal_at_exit,
    } = running;
    // Requests still running once the session has ended (the MCP
    // library waits a few seconds for their answers after stdin
    // closes), and those still queued for the blocking pool, hold read
    // transactions that would keep the final checkpoint from emptying
    // the WAL, and would hold up the maintenance task's last jobs
    // behind them (30 s behind 500 queued analyses): stop them first,
    // then wait until they have let go of the store, since the pool's
    // connections close (and the last of them removes the WAL) only with
    // its last clone.
    shutdown.begin();
    store.interrupt_running();
    // A second signal ends the waits below and skips the final
    // checkpoint: what was acknowledged is committed already. After one
    // signal they get SIGNAL_GRACE in all, instead of the whole wait for
    // another program's lock that a write (and the maintenance task's
    // last jobs behind it on the writer) may be in.
    let signal_count = signal_at_exit.clone();
    let hurry = signalled_after(signal_at_exit.clone(), 1);
    let grace = async {
        signalled(signal_at_exit).await;
        tokio::time::sleep(SIGNAL_GRACE).await;
    };
    // Nothing to give back at exit.
    releasing.abort();
    let waits = async {
        maintenance.stop().await;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
        while store.connections_in_use() > 0 || store.other_clones() > 0 {
            if tokio::time::Instant::now() >= deadline {
                tracing::warn!(
                    "requests still running at shutdown did not stop; the -wal file may stay beside the database \
                     until the next start"
                );
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        // Nothing may be written after the final checkpoint, and the
        // WAL file goes away only when the writer's connection has
        // closed too. A write waiting for another process's lock may
        // take BUSY_TIMEOUT.
        writer_thread.close_within(Duration::from_secs(15)).await
    };
    let finished = tokio::select! {
        writer_closed = waits => writer_closed,
        _ = grace => false,
        _ = hurry => false,
    };
    signals.abort();
    if !finished {
        // The writer or a request still holds a connection, and with it
        // the -wal file: the process will not wait for it to close.
        tracing::warn!("exiting while the ledger writer, the maintenance task or a request is still busy");
        crate::store::leave_open();
        if *signal_count.borrow() >= 2 {
            // Told twice: no final checkpoint; the next start finds the
            // WAL (nothing acknowledged is lost with it).
            drop(store);
            return outcome;
        }
    }
    let closed = tokio::task::spawn_blocking(move || {
        // Not the whole busy timeout: a reader elsewhere would hold up
        // the exit. It is the last connection to close that removes
        // the WAL then. After the grace ran out, a short try: it still
        // copies the WAL into the file when nothing holds it (a request
        // busy with its own computation, its reads done).
        let patience = if finished {
            Duration::from_secs(1)
        } else {
            Duration::from_millis(300)
        };
        // Litestream copies the WAL itself, once it has read it.
        if store.checkpoints_left_to_litestream() || !store.may_write() {
            tracing::debug!("no checkpoint at exit: Litestream's to make, or the ledger is open read-only");
            drop(store);
            return Ok(());
        }
        let r = match store.checkpoint_within(patience) {
            Ok(emptied) => {
                if !emptied {
                    tracing::warn!(
                        "could not empty the WAL at exit: another connection holds a read transaction on the \
                         database; the last connection to close empties it"
                    );
                }
                Ok(())
            }
            // A full disk or a read-only file system: what was
            // acknowledged is in the WAL, which stays for the next
            // start. Not a failed run (an exit code of 1 reads as a
            // crash to MCP clients).
            Err(e) if e.is_file_system_refusal() => {
                tracing::warn!(
                    "could not copy the WAL into the database file at exit ({e}); it stays beside the \
                     database and nothing is lost: the next start copies it"
                );
                Ok(())
            }
            Err(e) => Err(e),
        };
        drop(store);
        r
    })
    .await
    .map_err(|e| Error::Internal(e.to_string()))?;
    outcome.and(closed)
}

/// Serve MCP on stdin/stdout until the client closes stdin or a signal
/// arrives, then index, checkpoint and close the database so that the
/// database file alone holds the whole ledger.
///
/// With `http`, the same process also serves MCP over HTTP (and the
/// Observatory) on that listener, until the stdio client goes.
/// What both modes run before they serve, started in the runtime.
struct Started {
    gateway: Gateway,
    release: Arc<crate::memory::Release>,
    /// What [`wind_down`] stops once the connections have ended.
    running: Running,
}

/// Watch the ledger's files, fail notebook runs a killed server left, and
/// start the writer thread, the maintenance and memory tasks, the gateway
/// on them, and the watch for signals.
fn start(store: Store, options: ServeOptions) -> Result<Started> {
    let store = store.watching_files()?;
    fail_orphaned_runs(&store, &options);
    // One protocol thread (stdio alone) and commits that do not wait for
    // the disk: a thought's append runs on that thread when it can.
    let one_thread = tokio::runtime::Handle::current().runtime_flavor() == tokio::runtime::RuntimeFlavor::CurrentThread;
    let mode = match (one_thread, store.sync_mode()) {
        (true, crate::store::SyncMode::Normal) => crate::writer::Mode::Inline,
        _ => crate::writer::Mode::Thread,
    };
    let (writer, writer_thread) = Writer::start(&store, mode)?;
    let maintenance = Maintenance::start(store.clone(), writer.clone());
    let release = Arc::new(crate::memory::Release::default());
    let releasing = release.spawn();
    let shutdown = Arc::new(Shutdown::default());
    let gateway = Gateway::new(
        store.clone(),
        writer,
        options,
        maintenance.signal(),
        release.clone(),
        shutdown.clone(),
    );
    let (signals, signal_seen) = watch_signals();
    Ok(Started {
        gateway,
        release,
        running: Running {
            store,
            shutdown,
            maintenance,
            writer_thread,
            releasing,
            signals,
            signal_seen,
        },
    })
}

/// Cells left running by a server that was killed: failed, not stuck; and
/// the install folders it left, removed once an hour old (a read-only
/// standby leaves both to the ledger's own servers).
fn fail_orphaned_runs(store: &Store, options: &ServeOptions) {
    if options.read_only {
        return;
    }
    match store.fail_orphaned_runs() {
        Ok(0) => {}
        Ok(n) => tracing::info!("{n} notebook cell(s) left running by a stopped server marked failed"),
        Err(e) => tracing::warn!("could not check for notebook cells left running: {e}"),
    }
    crate::notebook::install::remove_stale_installs(&crate::notebook::runner::notebooks_root(store.path()));
}

pub fn run_stdio(store: Store, options: ServeOptions, http: Option<Listening>) -> Result<()> {
    crate::memory::large_blocks_own_pages();
    // One client: the protocol runs on one thread, so requests never hop
    // between executor threads. SQLite work runs off the runtime: appends,
    // indexing and the WAL restart on the writer thread, reads and the rest
    // on the blocking pool. Eight of those: with four, a one-thought read
    // waited 19 s behind four long analyses. HTTP clients
    // beside it get the worker threads of every core.
    let runtime = match http {
        None => tokio::runtime::Builder::new_current_thread(),
        Some(_) => tokio::runtime::Builder::new_multi_thread(),
    }
    .max_blocking_threads(crate::limits::BLOCKING_THREADS)
    .enable_all()
    .build()
    .map_err(|e| Error::io("starting the async runtime", e))?;
    let result = runtime.block_on(async move {
        tracing::info!(db = %store.path().display(), "thoughtbox serving MCP on stdio");
        // Someone who ran it by hand sees a server that seems to hang.
        if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
            tracing::info!(
                "waiting for an MCP client on stdin; configure one to start thoughtbox (see the README), \
                 or press Ctrl-D or Ctrl-C to stop"
            );
        }
        let Started {
            gateway,
            release,
            running,
        } = start(store, options)?;
        // Said once a signal would stop it cleanly.
        if let Some(listening) = &http {
            listening.announce();
        }
        // Borrowed, not cloned: wind_down waits for every clone of the
        // store to be dropped, and would wait for these.
        let (store, shutdown) = (&running.store, &running.shutdown);
        // How many signals have come. The wait for `initialize`, the session
        // after it, and the shutdown after that watch this: once a handler
        // is set, a signal nobody watches would do nothing at all.
        let signal_seen = running.signal_seen.clone();
        let (input, output, stdout_gone) = crate::stdio::streams();
        let transport = crate::stdio::StdioTransport::new(EndOfInput(input, shutdown.clone()), output)
            .releasing(release.clone())
            .supporting(rmcp::ServerHandler::supported_protocol_versions(&gateway));
        let stopped_reading = stdout_gone.clone();
        let gone_before_initialize = stdout_gone.clone();
        let http_task = http.map(|listening| tokio::spawn(listening.serve(gateway.clone(), shutdown.clone())));
        let signal_in_session = signal_seen.clone();
        let second_signal = signal_seen.clone();
        let session_started = std::cell::Cell::new(false);
        let served = async {
            let service = match gateway.serve(transport).await {
                Ok(service) => service,
                // stdin closed before any request: nothing to serve, not a failure.
                Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => {
                    tracing::info!("the client closed stdin before initializing");
                    return Ok(());
                }
                // The answer to initialize could not be written.
                Err(_) if stdout_gone.is_gone() => {
                    tracing::info!("the client stopped reading stdout before initializing");
                    return Ok(());
                }
                Err(e) => return Err(Error::Internal(format!("MCP initialization failed: {e}"))),
            };
            session_started.set(true);
            let cancel = service.cancellation_token();
            let reads = store.clone();
            let stopping = shutdown.clone();
            let stopper = tokio::spawn(async move {
                tokio::select! {
                    _ = signalled(signal_in_session) => {}
                    _ = stopped_reading.wait() => {
                        tracing::info!("the client stopped reading stdout; shutting down")
                    }
                }
                // Told to stop: long reads in flight end now (with an
                // error answer) rather than hold up the exit.
                stopping.begin();
                reads.interrupt_running();
                cancel.cancel();
            });
            // After a signal the library still waits for requests in flight,
            // and a write may wait seconds for another program's lock: the
            // session ends at most SESSION_GRACE later (a client sends
            // SIGKILL a few seconds after SIGTERM), or at a second signal.
            // Reads have been stopped by then; what is left is writes.
            let quit = tokio::select! {
                quit = service.waiting() => Some(quit),
                _ = async {
                    signalled(second_signal.clone()).await;
                    tokio::time::sleep(SESSION_GRACE).await;
                } => None,
                _ = signalled_after(second_signal.clone(), 1) => None,
            };
            stopper.abort();
            tracing::info!(?quit, "MCP session ended");
            Ok::<(), Error>(())
        };
        let outcome = tokio::select! {
            r = served => r,
            // A signal, or the client closing stdout (no answer can reach
            // it), while `initialize` is awaited. Once the session runs, its
            // own stopper ends it gracefully instead.
            _ = async {
                tokio::select! {
                    _ = signalled(signal_seen) => {}
                    _ = gone_before_initialize.wait() => {
                        tracing::info!("the client stopped reading stdout before initializing")
                    }
                }
                if session_started.get() {
                    std::future::pending::<()>().await;
                }
            } => Ok(()),
        };
        if let Some(task) = http_task {
            // The HTTP side stops with the stdio client: its connections
            // get a moment to finish, then go.
            shutdown.begin();
            if tokio::time::timeout(HTTP_GRACE, task).await.is_err() {
                tracing::warn!("HTTP requests still running at shutdown were dropped");
            }
        }
        wind_down(running, outcome).await
    });
    // stdin may still be held by a blocking read; do not wait for it.
    runtime.shutdown_timeout(Duration::from_millis(100));
    crate::stdio::restore();
    result
}

/// Serve MCP over Streamable HTTP (and the Observatory) on `listening`
/// alone, until SIGINT, SIGTERM or SIGHUP; then the same clean shutdown as
/// [`run_stdio`].
pub fn run_http(store: Store, options: ServeOptions, listening: Listening) -> Result<()> {
    crate::memory::large_blocks_own_pages();
    // Many clients: every core runs requests; SQLite work runs off the
    // runtime as in stdio mode.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .max_blocking_threads(crate::limits::BLOCKING_THREADS)
        .enable_all()
        .build()
        .map_err(|e| Error::io("starting the async runtime", e))?;
    let result = runtime.block_on(async move {
        let Started {
            gateway,
            // Answers over HTTP are noted as heavy work where they are built.
            release: _,
            running,
        } = start(store, options)?;
        listening.announce();
        // Borrowed: see run_stdio.
        let (store, shutdown, signal_seen) = (&running.store, &running.shutdown, running.signal_seen.clone());
        let mut serving = tokio::spawn(listening.serve(gateway, shutdown.clone()));
        let outcome = tokio::select! {
            served = &mut serving => served.map_err(|e| Error::Internal(format!("the HTTP server failed: {e}")))?,
            () = signalled(signal_seen.clone()) => {
                // Long reads in flight end now; the listener stops taking
                // connections and the rest get HTTP_GRACE.
                shutdown.begin();
                store.interrupt_running();
                if tokio::time::timeout(HTTP_GRACE, &mut serving).await.is_err() {
                    tracing::warn!("HTTP requests still running at shutdown were dropped");
                    serving.abort();
                }
                Ok(())
            }
        };
        wind_down(running, outcome).await
    });
    runtime.shutdown_timeout(Duration::from_millis(100));
    result
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;

    use super::*;

    /// The server's process cannot be traced or read by its user's others.
    /// Checked in a child test process, since the flag is the whole
    /// process's and would stay on the other unit tests.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_servers_memory_is_private() {
        const CHILD: &str = "THOUGHTBOX_TEST_PRIVATE_MEMORY_CHILD";
        if std::env::var_os(CHILD).is_some() {
            keep_memory_private();
            assert_eq!(
                rustix::process::dumpable_behavior().unwrap(),
                rustix::process::DumpableBehavior::NotDumpable
            );
            return;
        }
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "serve::tests::the_servers_memory_is_private",
                "--test-threads=1",
            ])
            .env(CHILD, "1")
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success() && said.contains("1 passed"), "{said}");
        assert_eq!(
            rustix::process::dumpable_behavior().unwrap(),
            rustix::process::DumpableBehavior::Dumpable,
            "this process is left as it was"
        );
    }

    /// The input's end, not before, marks the server as stopping.
    #[tokio::test]
    async fn the_end_of_input_marks_the_shutdown() {
        let shutdown = Arc::new(Shutdown::default());
        let mut input = EndOfInput(&b"{\"jsonrpc\":\"2.0\"}\n"[..], shutdown.clone());
        let mut first = [0u8; 4];
        input.read_exact(&mut first).await.expect("read");
        assert!(!shutdown.begun());
        let mut rest = Vec::new();
        input.read_to_end(&mut rest).await.expect("read");
        assert!(shutdown.begun());
    }
}
