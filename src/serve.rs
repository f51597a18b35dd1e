//! Running the MCP server on stdio, with background upkeep of the database
//! and a clean shutdown on stdin EOF, SIGINT, SIGTERM or SIGHUP (unless started with SIGHUP ignored).

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use tokio::sync::{Notify, watch};

use crate::error::{Error, Result};
use crate::events::EventTarget;
use crate::gateway::Gateway;
use crate::store::{Store, WAL_RESTART_BYTES};
use crate::writer::Writer;

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
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            stages: true,
            critique_timeout: Duration::from_secs(60),
            roots_timeout: Duration::from_secs(10),
            default_project: None,
            events: EventTarget::Off,
        }
    }
}

/// Indexing waits until writes pause for this long...
const INDEX_QUIET: Duration = Duration::from_millis(50);
/// ...but under a steady stream of writes it catches up at least this often.
const INDEX_MAX_DELAY: Duration = Duration::from_secs(5);
/// While writes keep coming, the WAL is copied into the database this often
/// (a PASSIVE checkpoint runs beside the writers, so appends never pay for
/// it; see [`Store::checkpoint_passive`] for how the WAL stays bounded).
/// With [`WAL_RESTART_BYTES`] this keeps the WAL under ~20 MiB in a burst,
/// and the pause in which the writer thread lets it start over at 3-5 ms
/// (at 250 ms and 32 MiB: 8-16 ms; BENCHMARKS.md).
const CHECKPOINT_EVERY: Duration = Duration::from_millis(100);
/// After this long without writes the WAL is checkpointed and truncated, so
/// that copying the file of an idle server gives the whole ledger.
const CHECKPOINT_QUIET: Duration = Duration::from_secs(1);
/// How long that checkpoint may hold the write lock waiting for readers of
/// older snapshots (other writers wait behind it meanwhile)...
const CHECKPOINT_WAIT: Duration = Duration::from_millis(200);
/// ...and the longest pause between tries while a reader keeps it from
/// finishing (the pause doubles from [`CHECKPOINT_QUIET`]).
const CHECKPOINT_RETRY_MAX: Duration = Duration::from_secs(30);
/// The size of a WAL kept from emptying at which the log warns, and again
/// at each doubling: a read transaction left open (a `sqlite3` shell inside
/// `BEGIN`) lets it grow by every write for as long as it stays (review
/// 15-b: 85 MB after 4,000 thoughts, said once at the info level).
const WAL_WARN_BYTES: u64 = 64 << 20;

/// At shutdown, indexing stops after this long (between two batches).
const SHUTDOWN_INDEXING: Duration = Duration::from_millis(500);

/// How the gateway tells the maintenance task that it wrote: a counter, and
/// a wake-up only when the task is idle, so a burst of writes costs one wake.
#[derive(Debug, Default)]
pub struct WriteSignal {
    count: AtomicU64,
    idle: AtomicBool,
    notify: Notify,
}

impl WriteSignal {
    pub fn wrote(&self) {
        self.count.fetch_add(1, Ordering::Release);
        if self.idle.swap(false, Ordering::AcqRel) {
            self.notify.notify_one();
        }
    }

    fn count(&self) -> u64 {
        self.count.load(Ordering::Acquire)
    }
}

/// Background upkeep after writes: full-text indexing and WAL checkpoints.
pub struct Maintenance {
    signal: Arc<WriteSignal>,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

async fn blocking<T: Send + 'static>(store: &Store, f: impl FnOnce(&Store) -> Result<T> + Send + 'static) -> Result<T> {
    let store = store.clone();
    tokio::task::spawn_blocking(move || f(&store))
        .await
        .map_err(|e| Error::Internal(e.to_string()))?
}

/// Index what is pending, in batches, until done or `stop` says so
/// between two batches.
async fn index_pending(writer: &Writer, stop: impl Fn() -> bool) {
    match writer.index_unless_locked_or(stop).await {
        Ok(()) => {}
        // Searches index the rest first, and so does the next pause.
        Err(Error::Cancelled) => tracing::debug!("full-text indexing stopped between two batches"),
        Err(e) => tracing::warn!("full-text indexing failed: {e}"),
    }
}

/// Whether the last background checkpoint failed (logged at warning level
/// once, then at debug level until one succeeds: on a full disk the retries
/// would write a warning every few seconds for as long as it lasts).
static CHECKPOINT_FAILING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn checkpoint_failed(e: &Error) {
    if CHECKPOINT_FAILING.swap(true, std::sync::atomic::Ordering::Relaxed) {
        tracing::debug!("checkpoint failed again: {e}");
    } else {
        tracing::warn!("checkpoint failed: {e} (retried in the background; logged again once it works)");
    }
}

fn checkpoint_worked() {
    if CHECKPOINT_FAILING.swap(false, std::sync::atomic::Ordering::Relaxed) {
        tracing::info!("checkpoints work again");
    }
}

/// Copy the WAL into the database beside the writers; once it has grown
/// past [`WAL_RESTART_BYTES`], copy the rest between two writes on the writer
/// thread, so that the next write starts the WAL over from its beginning.
async fn checkpoint(store: &Store, writer: &Writer) {
    let wal = match blocking(store, |s| s.checkpoint_passive()).await {
        Ok(bytes) => {
            checkpoint_worked();
            bytes
        }
        Err(e) => {
            checkpoint_failed(&e);
            return;
        }
    };
    if wal > WAL_RESTART_BYTES {
        // Once more beside the writers, for what they wrote during the first
        // pass, so that the writer thread has only a few frames left to copy.
        if let Err(e) = blocking(store, |s| s.checkpoint_passive()).await {
            checkpoint_failed(&e);
        }
        if let Err(e) = writer.run(|s| s.checkpoint_passive()).await {
            checkpoint_failed(&e);
        }
    }
}

/// Copy the whole WAL into the database and truncate it, unless a reader
/// in another connection keeps that from finishing within
/// [`CHECKPOINT_WAIT`]. Answers whether the WAL is empty, or why not.
async fn checkpoint_truncate(store: &Store) -> std::result::Result<(), String> {
    match blocking(store, |s| s.checkpoint_within(CHECKPOINT_WAIT)).await {
        Ok(true) => {
            checkpoint_worked();
            Ok(())
        }
        Ok(false) => {
            Err("another connection (a server, a shell, a browser) holds a read transaction on the database".into())
        }
        // Logged once, when first seen.
        Err(e @ Error::FilesChanged { .. }) => Err(e.to_string()),
        Err(e) => {
            checkpoint_failed(&e);
            Err(e.to_string())
        }
    }
}

impl Maintenance {
    pub fn start(store: Store, writer: Writer) -> Maintenance {
        let signal = Arc::new(WriteSignal::default());
        let (stop, mut stopped) = watch::channel(false);
        let sig = signal.clone();
        let task = tokio::spawn(async move {
            // Indexing a large backlog (thousands of batches) stops between
            // two batches once the server is stopping.
            let stopping_flag = stopped.clone();
            let stopping = || *stopping_flag.borrow();
            let mut seen = sig.count();
            // Whether the log said the WAL could not be emptied, and has not
            // yet said that it was: said once, however many bursts pass
            // while a reader stays (review 10-c saw it once per write, about
            // 1,200 lines an hour, and the all-clear never came).
            let mut told = false;
            let mut warn_at = WAL_WARN_BYTES;
            'outer: loop {
                // Sleep until the next write (re-checking after announcing idleness).
                sig.idle.store(true, Ordering::Release);
                if sig.count() == seen {
                    tokio::select! {
                        _ = sig.notify.notified() => {}
                        _ = stopped.changed() => break,
                    }
                }
                sig.idle.store(false, Ordering::Release);
                // A burst: wait for a pause, checkpointing (and, in long bursts, indexing) meanwhile.
                let mut burst = Instant::now();
                let mut checkpointed = Instant::now();
                loop {
                    seen = sig.count();
                    tokio::select! {
                        _ = tokio::time::sleep(INDEX_QUIET) => {}
                        _ = stopped.changed() => break 'outer,
                    }
                    if sig.count() == seen {
                        break;
                    }
                    if checkpointed.elapsed() >= CHECKPOINT_EVERY {
                        checkpoint(&store, &writer).await;
                        checkpointed = Instant::now();
                    }
                    if burst.elapsed() >= INDEX_MAX_DELAY {
                        index_pending(&writer, stopping).await;
                        burst = Instant::now();
                    }
                }
                index_pending(&writer, stopping).await;
                // Writes paused: empty the WAL once they have stayed away for
                // CHECKPOINT_QUIET. While another connection's read
                // transaction keeps that from finishing, try again, less
                // and less often, until it does or writes resume.
                let mut wait = CHECKPOINT_QUIET;
                // Any write since the burst ended (`seen`) ends the idle
                // time and is handled as a burst, including one made during
                // the indexing above or a checkpoint.
                loop {
                    sig.idle.store(true, Ordering::Release);
                    let mut woken = false;
                    if sig.count() == seen {
                        tokio::select! {
                            _ = tokio::time::sleep(wait) => {}
                            _ = sig.notify.notified() => woken = true,
                            _ = stopped.changed() => break 'outer,
                        }
                    }
                    sig.idle.store(false, Ordering::Release);
                    if sig.count() != seen {
                        continue 'outer;
                    }
                    if woken {
                        // A wake-up left over from an earlier write.
                        continue;
                    }
                    let emptied = checkpoint_truncate(&store).await;
                    if sig.count() != seen {
                        continue 'outer;
                    }
                    let why = match emptied {
                        Ok(()) => {
                            if std::mem::take(&mut told) {
                                tracing::info!("the WAL is empty again: the database file holds the whole ledger");
                            }
                            warn_at = WAL_WARN_BYTES;
                            break;
                        }
                        Err(why) => why,
                    };
                    let wal = crate::store::FileSizes::of(store.path()).wal;
                    if wal >= warn_at {
                        tracing::warn!(
                            "the WAL has grown to {} MiB and cannot be emptied: {why}. Every write adds to it \
                             until that transaction ends (COMMIT or ROLLBACK in the shell, or close the program)",
                            wal >> 20
                        );
                        warn_at = wal.saturating_mul(2);
                    }
                    if !told {
                        tracing::info!(
                            "could not empty the WAL ({why}); retrying while idle (until then the database file \
                             alone is not the whole ledger)"
                        );
                        told = true;
                    }
                    wait = (wait * 2).min(CHECKPOINT_RETRY_MAX);
                }
            }
            // What is still pending is indexed too, within a bound: the
            // backlog of a ledger filled by other means (an import, a
            // script, an older build) can take seconds to index, and an MCP
            // client kills a server that is slow to exit (3 s after SIGTERM
            // for rmcp's), which would leave the `-wal` file behind. Searches
            // index the rest first.
            let deadline = Instant::now() + SHUTDOWN_INDEXING;
            index_pending(&writer, || Instant::now() >= deadline).await;
        });
        Maintenance { signal, stop, task }
    }

    /// The handle the gateway signals after every write.
    pub fn signal(&self) -> Arc<WriteSignal> {
        self.signal.clone()
    }

    /// Finish pending upkeep and stop.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        if let Err(e) = self.task.await {
            tracing::warn!("maintenance task ended badly: {e}");
        }
    }
}

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

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        // SIGHUP too (the terminal or session that started the server went
        // away): a clean exit checkpoints the WAL and gives stdin and stdout
        // back as they were, where the default action would just end the
        // process. Unless it came ignored (`nohup`): a handler would undo that.
        let hangup = if hangup_ignored() {
            None
        } else {
            signal(SignalKind::hangup()).ok()
        };
        let hangup = async move {
            match hangup {
                Some(mut hup) => {
                    hup.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        match (signal(SignalKind::interrupt()), signal(SignalKind::terminate())) {
            (Ok(mut int), Ok(mut term)) => {
                tokio::select! {
                    _ = int.recv() => {}
                    _ = term.recv() => {}
                    _ = hangup => {}
                }
            }
            _ => std::future::pending::<()>().await,
        }
    }
    #[cfg(not(unix))]
    {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

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
/// shutdown's, not the client's (see [`crate::store::cancel::shutting_down`]).
struct EndOfInput<R>(R);

impl<R: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for EndOfInput<R> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let read = std::pin::Pin::new(&mut self.0).poll_read(cx, buf);
        if matches!(read, std::task::Poll::Ready(Ok(()))) && buf.filled().len() == before && buf.remaining() > 0 {
            crate::store::cancel::begin_shutdown();
        }
        read
    }
}

/// Serve MCP on stdin/stdout until the client closes stdin or a signal
/// arrives, then index, checkpoint and close the database so that the
/// database file alone holds the whole ledger.
pub fn run_stdio(store: Store, options: ServeOptions) -> Result<()> {
    // One client: the protocol runs on one thread, so requests never hop
    // between executor threads. SQLite work runs off the runtime: appends,
    // indexing and the WAL restart on the writer thread, reads and the rest
    // on the blocking pool. Eight of those: review 9-c saw a one-thought
    // read wait 19 s behind four long analyses with four.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .max_blocking_threads(8)
        .enable_all()
        .build()
        .map_err(|e| Error::io("starting the async runtime", e))?;
    let result = runtime.block_on(async move {
        tracing::info!(db = %store.path().display(), "thoughtbox serving MCP on stdio");
        let store = store.watching_files()?;
        let (writer, writer_thread) = Writer::start(&store)?;
        let maintenance = Maintenance::start(store.clone(), writer.clone());
        let release = Arc::new(crate::memory::Release::default());
        let releasing = release.spawn();
        let gateway = Gateway::new(store.clone(), writer, options, maintenance.signal(), release);
        let (input, output, stdout_gone) = crate::stdio::streams();
        let transport = crate::stdio::StdioTransport::new(EndOfInput(input), output);
        let stopped_reading = stdout_gone.clone();
        let gone_before_initialize = stdout_gone.clone();
        // How many signals have come. The wait for `initialize`, the session
        // after it, and the shutdown after that watch this: once a handler
        // is set, a signal nobody watches would do nothing at all.
        let (on_signal, signal_seen) = tokio::sync::watch::channel(0u32);
        let signals = tokio::spawn(async move {
            let mut last: Option<tokio::time::Instant> = None;
            let mut n = 0u32;
            loop {
                shutdown_signal().await;
                // The same signal twice in a row is one request to stop: a
                // closing terminal sends SIGHUP to the job and the shell
                // sends it again, a launcher may forward the Ctrl-C its group
                // also got (review 13-f: a second signal 1-5 ms later
                // skipped the final checkpoint).
                if last.is_some_and(|at| at.elapsed() < SIGNAL_ECHO) {
                    continue;
                }
                last = Some(tokio::time::Instant::now());
                n += 1;
                if n == 1 {
                    tracing::info!("signal received, shutting down");
                } else {
                    tracing::warn!("another signal received: exiting without waiting for what is still running");
                }
                let _ = on_signal.send(n);
            }
        });
        let signal_at_exit = signal_seen.clone();
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
            let stopper = tokio::spawn(async move {
                tokio::select! {
                    _ = signalled(signal_in_session) => {}
                    _ = stopped_reading.wait() => {
                        tracing::info!("the client stopped reading stdout; shutting down")
                    }
                }
                // Told to stop: long reads in flight end now (with an
                // error answer) rather than hold up the exit.
                crate::store::cancel::begin_shutdown();
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
        // Requests still running once the session has ended (the MCP
        // library waits a few seconds for their answers after stdin
        // closes), and those still queued for the blocking pool, hold read
        // transactions that would keep the final checkpoint from emptying
        // the WAL, and would hold up the maintenance task's last jobs
        // behind them (review 13-d: 30 s behind 500 queued analyses): stop
        // them first, then wait until they have let go of the store, since
        // the pool's connections close (and the last of them removes the
        // WAL) only with its last clone.
        crate::store::cancel::begin_shutdown();
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
    });
    // stdin may still be held by a blocking read; do not wait for it.
    runtime.shutdown_timeout(Duration::from_millis(100));
    crate::stdio::restore();
    result
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;

    use super::*;

    /// The input's end, not before, marks the server as stopping.
    #[tokio::test]
    async fn the_end_of_input_marks_the_shutdown() {
        let mut input = EndOfInput(&b"{\"jsonrpc\":\"2.0\"}\n"[..]);
        let mut first = [0u8; 4];
        input.read_exact(&mut first).await.expect("read");
        assert!(!crate::store::cancel::shutting_down());
        let mut rest = Vec::new();
        input.read_to_end(&mut rest).await.expect("read");
        assert!(crate::store::cancel::shutting_down());
    }
}
