//! Background upkeep of the database while serving: full-text indexing
//! after writes pause, and WAL checkpoints so that the file alone holds the
//! ledger once writes are quiet. The gateway tells it of each write through
//! a [`WriteSignal`].

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::{Notify, watch};

use crate::error::{Error, Result};
use crate::store::{Store, WAL_RESTART_BYTES};
use crate::writer::Writer;

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
/// `BEGIN`) lets it grow by every write for as long as it stays (85 MB after
/// 4,000 thoughts, too much for one line at the info level).
const WAL_WARN_BYTES: u64 = 64 << 20;

/// How often, during a burst of writes, the WAL Litestream has not copied
/// yet is measured (also once writes pause).
const WAL_WATCH_EVERY: Duration = Duration::from_secs(10);

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

/// Whether the last background checkpoint failed: logged at warning level
/// once, then at debug level until one succeeds (on a full disk the retries
/// would write a warning every few seconds for as long as it lasts).
#[derive(Default)]
struct CheckpointHealth {
    failing: bool,
}

impl CheckpointHealth {
    fn failed(&mut self, e: &Error) {
        // Stopped by a shutdown (interrupt_running): nothing failed.
        if e.is_interrupted() {
            tracing::debug!("checkpoint interrupted: {e}");
            return;
        }
        if std::mem::replace(&mut self.failing, true) {
            tracing::debug!("checkpoint failed again: {e}");
        } else {
            tracing::warn!("checkpoint failed: {e} (retried in the background; logged again once it works)");
        }
    }

    fn worked(&mut self) {
        if std::mem::take(&mut self.failing) {
            tracing::info!("checkpoints work again");
        }
    }
}

/// Copy the WAL into the database beside the writers; once it has grown
/// past [`WAL_RESTART_BYTES`], copy the rest between two writes on the writer
/// thread, so that the next write starts the WAL over from its beginning.
async fn checkpoint(store: &Store, writer: &Writer, health: &mut CheckpointHealth) {
    let wal = match blocking(store, |s| s.checkpoint_passive()).await {
        Ok(bytes) => {
            health.worked();
            bytes
        }
        Err(e) => {
            health.failed(&e);
            return;
        }
    };
    if wal > WAL_RESTART_BYTES {
        // Once more beside the writers, for what they wrote during the first
        // pass, so that the writer thread has only a few frames left to copy.
        if let Err(e) = blocking(store, |s| s.checkpoint_passive()).await {
            health.failed(&e);
        }
        if let Err(e) = writer.run(|s| s.checkpoint_passive()).await {
            health.failed(&e);
        }
    }
}

/// Copy the whole WAL into the database and truncate it, unless a reader
/// in another connection keeps that from finishing within
/// [`CHECKPOINT_WAIT`]. Answers whether the WAL is empty, or why not.
async fn checkpoint_truncate(store: &Store, health: &mut CheckpointHealth) -> std::result::Result<(), String> {
    match blocking(store, |s| s.checkpoint_within(CHECKPOINT_WAIT)).await {
        Ok(true) => {
            health.worked();
            Ok(())
        }
        Ok(false) => {
            Err("another connection (a server, a shell, a browser) holds a read transaction on the database".into())
        }
        // Logged once, when first seen.
        Err(e @ Error::FilesChanged { .. }) => Err(e.to_string()),
        Err(e) => {
            health.failed(&e);
            Err(e.to_string())
        }
    }
}

/// Where Litestream checkpoints, the server watches what Litestream has not
/// yet copied out of the WAL: it grows while Litestream is not running, or
/// cannot keep up (on a full disk it backs off for minutes while the
/// server's writes still commit). Said at [`WAL_WARN_BYTES`], at each
/// doubling, and once it is back under; answers the next size to speak at.
fn litestream_wal_check(store: &Store, warn_at: u64) -> u64 {
    let backlog = store.wal_backlog();
    if backlog < WAL_WARN_BYTES {
        if warn_at > WAL_WARN_BYTES {
            tracing::info!(
                "Litestream has copied the WAL again (less than {} MiB left)",
                WAL_WARN_BYTES >> 20
            );
        }
        return WAL_WARN_BYTES;
    }
    if backlog < warn_at {
        return warn_at;
    }
    tracing::warn!(
        "{} MiB of the WAL are not yet copied into the database: checkpoints are left to Litestream ({} is \
         beside the database, or --checkpoints litestream was given), which copies them once it has replicated \
         them, so the replica is behind too; is Litestream running, and has its disk room? If it no longer \
         replicates this ledger, remove that directory or pass --checkpoints thoughtbox",
        backlog >> 20,
        crate::store::litestream_meta_dir(store.path()).display()
    );
    backlog.saturating_mul(2)
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
            // while a reader stays (once per write was about 1,200 lines an
            // hour), so that the all-clear can follow.
            let mut told = false;
            let mut warn_at = WAL_WARN_BYTES;
            let mut health = CheckpointHealth::default();
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
                let mut watched = Instant::now();
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
                        checkpoint(&store, &writer, &mut health).await;
                        checkpointed = Instant::now();
                    }
                    // A steady stream of writes never pauses for the check below.
                    if store.checkpoints_left_to_litestream() && watched.elapsed() >= WAL_WATCH_EVERY {
                        warn_at = litestream_wal_check(&store, warn_at);
                        watched = Instant::now();
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
                    // Opened read-only (`serve --read-only`): nothing to empty.
                    if !store.may_write() {
                        break;
                    }
                    if store.checkpoints_left_to_litestream() {
                        warn_at = litestream_wal_check(&store, warn_at);
                        break;
                    }
                    let emptied = checkpoint_truncate(&store, &mut health).await;
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
