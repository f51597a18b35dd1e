//! The ledger writer: one dedicated OS thread that runs every write of the
//! server (thought appends, session and knowledge changes, full-text index
//! batches, the checkpoint that lets the WAL start over) one after another,
//! off the async runtime. One writer per process means these never wait for
//! each other's locks.
//!
//! Group commit: the requests' writes ([`Writer::write`]) that are waiting
//! when the thread takes one go into one transaction, each in a savepoint of
//! its own (a failed write takes back only itself), and one COMMIT makes
//! them all durable: under `--sync full` one disk flush for the group rather
//! than one per thought, and under either mode one commit's work. Each
//! caller is answered only after that commit. Upkeep jobs ([`Writer::run`]:
//! index batches, checkpoints) run alone, in queue order.
//!
//! The hand-off is plain blocking: the thread sleeps on its channel until a
//! job comes, and the request task awaits its answer on a oneshot. Neither
//! side polls. Polling for a millisecond before sleeping saved a wake-up per
//! side on an idle machine, but it burnt CPU on every thought (1.8x the
//! whole per-thought CPU time of an in-memory Node server) and, on busy
//! CPUs, held the very CPU the other side waited for (BENCHMARKS.md).
//!
//! A write that waits for another process's lock (busy_timeout) therefore
//! never stalls the protocol thread.
//!
//! Inline writes: where the protocol runs on one thread for one client
//! (stdio alone, `--sync normal`), a thought's append finds the writer idle
//! and the write lock free nearly every time, and then runs on the caller's
//! thread, on the writer's own connection, with no hand-off: two thread
//! wake-ups fewer per thought ([`Writer::write_short`], decision 0052).
//! When the writer has jobs queued (order is kept) or the lock is held (it
//! never waits for it), the write goes to the thread as above.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use crate::error::{Error, Result};
use crate::store::Store;

/// A job that runs alone.
type Solo = Box<dyn FnOnce(&Store) + Send>;
/// A write that may share a transaction: it runs, and leaves its answer to
/// be sent once its group has committed, or failed (`Some`).
type Grouped = Box<dyn FnOnce(&Store) -> Reply + Send>;
type Reply = Box<dyn FnOnce(Option<&Error>) + Send>;

enum Job {
    Solo(Solo),
    Grouped(Grouped),
}

/// The most writes one commit takes: a bound on how long the first of them
/// waits for its answer.
const MAX_GROUP: u64 = 64;

/// Handle to the writer thread, for sending it jobs.
#[derive(Clone)]
pub struct Writer {
    jobs: Sender<Job>,
    closed: Arc<AtomicBool>,
    counts: Arc<Counts>,
    /// The writer's turn: held by the thread while it runs a job, and by
    /// an inline write; holds the writer's store for inline writes (`None`
    /// where writes always go to the thread, and once it is closed).
    turn: Arc<Mutex<Option<Store>>>,
}

/// Whether callers may run their short writes themselves ([`crate::writer`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Every write goes to the thread: several protocol threads or
    /// clients, whose writes share commits (group commit), or commits that
    /// wait for the disk (`--sync full`).
    Thread,
    /// One protocol thread for one client: a short write runs on the
    /// caller's thread when the writer is idle and the lock free.
    Inline,
}

/// How many writes and how many commits of them the thread has made, for
/// the figures of group commit (writes per commit).
#[derive(Debug, Default)]
pub struct Counts {
    pub writes: std::sync::atomic::AtomicU64,
    pub commits: std::sync::atomic::AtomicU64,
    /// Jobs handed to the thread, of either kind.
    pub sent: std::sync::atomic::AtomicU64,
    /// Jobs handed to the thread that it has not started: an inline write
    /// waits its turn behind them.
    queued: AtomicU64,
}

/// Counts a queued job as started when dropped (run or, at the end,
/// dropped unrun).
struct Started(Arc<Counts>);

impl Drop for Started {
    fn drop(&mut self) {
        self.0.queued.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The writer thread itself, to close it at shutdown.
pub struct WriterThread {
    handle: std::thread::JoinHandle<()>,
    closed: Arc<AtomicBool>,
    wake: Sender<Job>,
}

impl WriterThread {
    /// Refuse new jobs, let the thread finish the ones it accepted and end
    /// (closing its connection), and wait for that for at most `timeout`.
    /// Answers whether it ended. Nothing is written after this returns true,
    /// so a final checkpoint leaves the whole ledger in the database file.
    pub async fn close_within(self, timeout: Duration) -> bool {
        self.closed.store(true, Ordering::Release);
        // Wakes the thread if it sleeps on an empty queue.
        let _ = self.wake.send(Job::Solo(Box::new(|_| {})));
        let deadline = Instant::now() + timeout;
        while !self.handle.is_finished() {
            if Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        self.handle.join().is_ok()
    }
}

impl Writer {
    /// Start the thread, with a connection of its own to `store`'s ledger
    /// ([`Store::dedicated`]), held until the thread ends.
    pub fn start(store: &Store, mode: Mode) -> Result<(Writer, WriterThread)> {
        let store = store.dedicated()?;
        let turn = Arc::new(Mutex::new((mode == Mode::Inline).then(|| store.clone())));
        let (jobs, queue) = mpsc::channel::<Job>();
        let closed = Arc::new(AtomicBool::new(false));
        let flag = closed.clone();
        let counts = Arc::new(Counts::default());
        let counting = counts.clone();
        let turns = turn.clone();
        let handle = std::thread::Builder::new()
            .name("ledger-writer".into())
            .spawn(move || {
                serve(&store, &queue, &flag, &counting, &turns);
                // The inline writes' handle on the connection goes with the
                // thread's (inline writes are refused once closed).
                take_turn(&turns).take();
            })
            .map_err(|e| Error::io("starting the writer thread", e))?;
        let thread = WriterThread {
            handle,
            closed: closed.clone(),
            wake: jobs.clone(),
        };
        Ok((
            Writer {
                jobs,
                closed,
                counts,
                turn,
            },
            thread,
        ))
    }

    /// Run `f` alone on the writer thread and wait for its result. Jobs run
    /// one at a time, in the order they were sent.
    pub async fn run<T: Send + 'static>(&self, f: impl FnOnce(&Store) -> Result<T> + Send + 'static) -> Result<T> {
        let (tx, rx) = oneshot::channel();
        self.send(Job::Solo(Box::new(move |store| {
            // The receiver is gone only when the request was cancelled.
            let _ = tx.send(f(store));
        })))?;
        answer(rx).await
    }

    /// Run `f`, one transaction's worth of writing (its [`Store::write`]
    /// calls), on the writer thread, in one commit with the other writes
    /// waiting then; answered once that commit is done. `f` must not
    /// checkpoint or back up (those cannot run inside a transaction).
    pub async fn write<T: Send + 'static>(&self, f: impl FnOnce(&Store) -> Result<T> + Send + 'static) -> Result<T> {
        let (tx, rx) = oneshot::channel();
        self.send(Job::Grouped(Box::new(move |store| {
            let value = f(store);
            Box::new(move |failed: Option<&Error>| {
                let value = match (failed, value) {
                    (Some(e), Ok(_)) => Err(retold(e)),
                    (_, value) => value,
                };
                let _ = tx.send(value);
            })
        })))?;
        answer(rx).await
    }

    /// [`Writer::write`] for a write known to be short (one thought's
    /// append: a few statements, bounded text): with [`Mode::Inline`] it
    /// runs on the caller's thread when it can ([`crate::writer`]). Long
    /// writes (a session's deletion, an import) always go to the thread,
    /// so that the protocol thread keeps serving other requests meanwhile.
    pub async fn write_short<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Store) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        match self.inline(f) {
            Ok(answer) => answer,
            Err(f) => self.write(f).await,
        }
    }

    /// Run write `f` here, in a transaction of its own on the writer's
    /// connection, if this writer takes inline writes, nothing is queued
    /// before it, and the write lock is free now; `f` back otherwise.
    fn inline<T, F: FnOnce(&Store) -> Result<T>>(&self, f: F) -> std::result::Result<Result<T>, F> {
        if self.closed.load(Ordering::Acquire) || self.counts.queued.load(Ordering::Acquire) != 0 {
            return Err(f);
        }
        let turn = match self.turn.try_lock() {
            Ok(turn) => turn,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return Err(f),
        };
        let Some(store) = turn.as_ref() else {
            return Err(f);
        };
        // Held by another program, or the files changed: the thread waits
        // for the lock, or says what changed.
        if store.begin_group_now().is_err() {
            return Err(f);
        }
        self.counts.writes.fetch_add(1, Ordering::Relaxed);
        self.counts.commits.fetch_add(1, Ordering::Relaxed);
        let value = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(store))).unwrap_or_else(|_| {
            tracing::error!("a write panicked; what it was writing was rolled back");
            Err(Error::Internal(
                "the write failed unexpectedly (see the server log)".into(),
            ))
        });
        // As in a group: what `f` wrote before an error stays, as it would
        // in transactions of its own; unless SQLite rolled it all back.
        Ok(match (store.group_open(), value) {
            (Ok(true), value) => store.commit_group().and(value),
            (_, Err(e)) => Err(e),
            (_, Ok(_)) => Err(Error::RolledBack(false)),
        })
    }

    /// The writes ([`Writer::write`]) done so far, and the commits they took.
    pub fn counts(&self) -> (u64, u64) {
        (
            self.counts.writes.load(Ordering::Relaxed),
            self.counts.commits.load(Ordering::Relaxed),
        )
    }

    /// Jobs handed to the thread so far.
    #[cfg(test)]
    fn jobs_sent_so_far(&self) -> u64 {
        self.counts.sent.load(Ordering::Relaxed)
    }

    fn send(&self, job: Job) -> Result<()> {
        let stopped = || Error::ShuttingDown;
        if self.closed.load(Ordering::Acquire) {
            return Err(stopped());
        }
        self.counts.queued.fetch_add(1, Ordering::AcqRel);
        let started = Started(self.counts.clone());
        let job = match job {
            Job::Solo(f) => Job::Solo(Box::new(move |store| {
                drop(started);
                f(store)
            })),
            Job::Grouped(f) => Job::Grouped(Box::new(move |store| {
                drop(started);
                f(store)
            })),
        };
        self.jobs.send(job).map_err(|_| stopped())?;
        self.counts.sent.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

/// The writer's turn, also after a panic elsewhere (the store it guards
/// holds no state a panic could leave half-changed: transactions roll back).
fn take_turn(turn: &Mutex<Option<Store>>) -> MutexGuard<'_, Option<Store>> {
    turn.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

async fn answer<T>(rx: oneshot::Receiver<Result<T>>) -> Result<T> {
    // The answer's sender is dropped unused only if the job panicked.
    rx.await
        .map_err(|_| Error::Internal("the write failed unexpectedly (see the server log)".into()))?
}

/// The group's failure, told to one of its writes (errors are not `Clone`).
fn retold(e: &Error) -> Error {
    let copy = |r: &rusqlite::Error| match r {
        rusqlite::Error::SqliteFailure(code, message) => rusqlite::Error::SqliteFailure(*code, message.clone()),
        other => rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ERROR),
            Some(other.to_string()),
        ),
    };
    match e {
        Error::CommitUncertain(r) => Error::CommitUncertain(copy(r)),
        Error::Database(r) => Error::Database(copy(r)),
        Error::RolledBack(grouped) => Error::RolledBack(*grouped),
        Error::ShuttingDown => Error::ShuttingDown,
        other => Error::Internal(format!("nothing was written: {other}")),
    }
}

/// Thoughts indexed per writer job, so that an append waits at most one batch.
const INDEX_BATCH: i64 = 128;

impl Writer {
    /// Bring the full-text index up to date, one batch per job so that
    /// appends interleave with a long backlog. Each batch waits only briefly
    /// ([`crate::store::SEARCH_INDEX_WAIT`]) for another program's write lock
    /// (a `sqlite3` shell inside `BEGIN IMMEDIATE`) and gives up while it is
    /// held, rather than holding up this thread, and every request queued
    /// behind it, for the whole busy timeout; searches read what is still
    /// pending themselves, and the next pause in writes tries again.
    pub async fn index_unless_locked(&self) -> Result<()> {
        self.index_unless_locked_or(|| false).await
    }

    /// [`Writer::index_unless_locked`] for a request that may be cancelled:
    /// `stop` is asked between two batches, and once it says so the rest is
    /// left to the next pause in writes ([`Error::Cancelled`]).
    pub async fn index_unless_locked_or(&self, stop: impl Fn() -> bool) -> Result<()> {
        loop {
            if stop() {
                return Err(Error::Cancelled);
            }
            // None: not now; searches read what is pending, and the next
            // pause in writes tries again.
            match self.run(|s| s.index_pending_for_search(INDEX_BATCH)).await? {
                Some(0) | None => return Ok(()),
                Some(_) => {}
            }
            tokio::task::yield_now().await;
        }
    }
}

/// Run one job alone; a panic fails that job (its caller gets an error)
/// and leaves the thread serving the next.
fn run_job(store: &Store, job: Job, counts: &Counts) {
    if matches!(job, Job::Grouped(_)) {
        counts.writes.fetch_add(1, Ordering::Relaxed);
        counts.commits.fetch_add(1, Ordering::Relaxed);
    }
    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match job {
        Job::Solo(f) => f(store),
        Job::Grouped(f) => f(store)(None),
    }));
    if ran.is_err() {
        tracing::error!("a write on the ledger writer thread panicked; its transaction was rolled back");
    }
}

/// Run `first` and the grouped writes queued behind it in one transaction,
/// answering each after the commit. Answers the job that ended the group
/// (an upkeep job found in the queue), to be run next.
fn run_group(store: &Store, first: Grouped, queue: &Receiver<Job>, counts: &Counts) -> Option<Job> {
    let second = match queue.try_recv() {
        Ok(Job::Grouped(next)) => next,
        // Nothing else waits: no group (its own transaction is the same commit).
        Ok(solo) => {
            run_job(store, Job::Grouped(first), counts);
            return Some(solo);
        }
        Err(_) => {
            run_job(store, Job::Grouped(first), counts);
            return None;
        }
    };
    if let Err(e) = store.begin_group() {
        // Another program holds the lock past the busy timeout, or the files
        // changed: each write finds that out alone and says so.
        tracing::debug!("could not open a group's transaction: {e}");
        run_job(store, Job::Grouped(first), counts);
        run_job(store, Job::Grouped(second), counts);
        return None;
    }
    let mut replies: Vec<Reply> = Vec::new();
    let mut next = Some(second);
    let mut job = first;
    let mut after = None;
    let mut ran = 0u64;
    loop {
        ran += 1;
        let reply = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(store)));
        if reply.is_err() {
            tracing::error!("a write on the ledger writer thread panicked; its part of the group was rolled back");
        }
        if !store.group_open().unwrap_or(false) {
            // SQLite rolled the whole transaction back (a full disk, an I/O
            // error): the group's earlier writes went with it.
            let lost = Error::RolledBack(true);
            for r in replies.drain(..).chain(reply.ok()) {
                r(Some(&lost));
            }
            // What was taken from the queue is still to run.
            if let Some(next) = next {
                run_job(store, Job::Grouped(next), counts);
            }
            return None;
        }
        replies.extend(reply.ok());
        job = match next.take() {
            Some(j) => j,
            None if ran >= MAX_GROUP => break,
            None => match queue.try_recv() {
                Ok(Job::Grouped(j)) => j,
                Ok(solo) => {
                    after = Some(solo);
                    break;
                }
                Err(_) => break,
            },
        };
    }
    let committed = store.commit_group();
    counts.writes.fetch_add(ran, Ordering::Relaxed);
    counts.commits.fetch_add(1, Ordering::Relaxed);
    if let Err(e) = &committed {
        tracing::error!("committing a group of {ran} writes failed: {e}");
    }
    for r in replies {
        r(committed.as_ref().err());
    }
    after
}

/// Run `job`, and the group it starts.
fn dispatch(store: &Store, job: Job, queue: &Receiver<Job>, counts: &Counts) -> Option<Job> {
    match job {
        Job::Grouped(first) => run_group(store, first, queue, counts),
        solo => {
            run_job(store, solo, counts);
            None
        }
    }
}

/// The thread's loop: asleep on the queue until a job comes; runs jobs
/// until the queue is empty after [`WriterThread::close_within`], or every
/// handle is gone.
fn serve(store: &Store, queue: &Receiver<Job>, closed: &AtomicBool, counts: &Counts, turn: &Mutex<Option<Store>>) {
    let run = |job| {
        let _turn = take_turn(turn);
        dispatch(store, job, queue, counts)
    };
    let mut held: Option<Job> = None;
    loop {
        let job = match held.take() {
            Some(job) => job,
            None => match queue.recv() {
                Ok(job) => job,
                Err(_) => return,
            },
        };
        held = run(job);
        if closed.load(Ordering::Acquire) {
            // What was accepted before the close is still done.
            loop {
                let job = match held.take() {
                    Some(job) => job,
                    None => match queue.try_recv() {
                        Ok(job) => job,
                        Err(_) => return,
                    },
                };
                held = run(job);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::ConfigKey;
    use crate::store::test_support::{has_config_row, temp_store};

    #[tokio::test(flavor = "current_thread")]
    async fn runs_jobs_in_order_on_its_own_thread() {
        let (_dir, store) = temp_store();
        let (writer, thread) = Writer::start(&store, Mode::Thread).expect("start");
        let here = std::thread::current().id();
        let mut seen = Vec::new();
        for i in 0..50 {
            let (n, thread) = writer
                .run(move |_| Ok((i, std::thread::current().id())))
                .await
                .expect("job");
            assert_ne!(thread, here, "the job ran on the runtime thread");
            seen.push(n);
        }
        assert_eq!(seen, (0..50).collect::<Vec<_>>());
        assert!(thread.close_within(Duration::from_secs(5)).await, "not closed");
    }

    /// A search whose client gave up stops indexing between two batches
    /// (a cancelled search over a backlog of a million thoughts indexed on
    /// for 10 s); what is left is indexed later.
    #[tokio::test(flavor = "current_thread")]
    async fn indexing_for_a_cancelled_request_stops_between_batches() {
        use crate::domain::{NewSession, ThoughtInput};
        use crate::store::Target;
        let (_dir, store) = temp_store();
        let s = store.create_session(NewSession::titled("backlog")).expect("session").id;
        for i in 0..(INDEX_BATCH * 3) {
            let input = ThoughtInput {
                thought: format!("pending thought {i}"),
                next_thought_needed: true,
                ..Default::default()
            };
            store.append_thought(Target::Session(s.clone()), input).expect("append");
        }
        let (writer, _thread) = Writer::start(&store, Mode::Thread).expect("start");
        let asked = std::cell::Cell::new(0);
        let stopped = writer
            .index_unless_locked_or(|| {
                asked.set(asked.get() + 1);
                asked.get() > 1
            })
            .await;
        assert!(matches!(stopped, Err(Error::Cancelled)), "{stopped:?}");
        let indexed = |store: &Store| -> i64 {
            store
                .conn()
                .expect("conn")
                .query_row("SELECT indexed_through FROM thoughts_fts_state WHERE id = 1", [], |r| {
                    r.get(0)
                })
                .expect("state")
        };
        assert_eq!(indexed(&store), INDEX_BATCH, "one batch, then stopped");
        writer.index_unless_locked().await.expect("the rest");
        assert_eq!(indexed(&store), INDEX_BATCH * 3);
    }

    /// Hold the writer thread in an upkeep job until the returned sender
    /// is used, so that the writes sent meanwhile queue up behind it.
    async fn hold(writer: &Writer) -> (std::sync::mpsc::Sender<()>, tokio::task::JoinHandle<Result<()>>) {
        let (release, held) = std::sync::mpsc::channel::<()>();
        let (started, running) = oneshot::channel();
        let w = writer.clone();
        let job = tokio::spawn(async move {
            w.run(move |_| {
                let _ = started.send(());
                let _ = held.recv_timeout(Duration::from_secs(60));
                Ok(())
            })
            .await
        });
        running.await.expect("the holding job started");
        (release, job)
    }

    fn put(store: &Store, key: &str) -> Result<()> {
        store.write(|tx| {
            tx.prepare_cached("INSERT INTO config (key, value) VALUES (?1, 'x')")?
                .execute([key])?;
            Ok(())
        })
    }

    /// Writes waiting together commit together, each answered after the
    /// commit; one that fails (a duplicate key) or panics takes back only
    /// itself.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn waiting_writes_share_one_commit_and_fail_alone() {
        let (_dir, store) = temp_store();
        let (writer, _thread) = Writer::start(&store, Mode::Thread).expect("start");
        let (release, held) = hold(&writer).await;
        let mut tasks = Vec::new();
        for i in 0..20 {
            let w = writer.clone();
            tasks.push(tokio::spawn(async move {
                match i {
                    7 => w.write(|s| put(s, ConfigKey::InstallId.name())).await,
                    11 => w.write(|_| -> Result<()> { panic!("a bug in a grouped write") }).await,
                    _ => w.write(move |s| put(s, &format!("grouped-{i}"))).await,
                }
            }));
            // Sent in this order, so that the failing ones sit mid-group.
            while writer.jobs_sent_so_far() < i as u64 + 2 {
                tokio::task::yield_now().await;
            }
        }
        release.send(()).expect("release");
        held.await.expect("task").expect("holding job");
        for (i, task) in tasks.into_iter().enumerate() {
            let answer = task.await.expect("task");
            match i {
                7 => assert!(answer.is_err(), "a duplicate key is refused"),
                11 => assert!(
                    answer
                        .expect_err("a panic is an error")
                        .to_string()
                        .contains("unexpectedly")
                ),
                _ => answer.unwrap_or_else(|e| panic!("write {i}: {e}")),
            }
        }
        for i in 0..20 {
            let kept = has_config_row(&store, &format!("grouped-{i}"));
            assert_eq!(kept, i != 7 && i != 11, "write {i}");
        }
        let (writes, commits) = writer.counts();
        assert_eq!(writes, 20);
        assert_eq!(commits, 1, "twenty waiting writes, one commit");
    }

    /// A write sent alone is committed alone, and answered.
    #[tokio::test(flavor = "current_thread")]
    async fn a_lone_write_is_its_own_commit() {
        let (_dir, store) = temp_store();
        let (writer, _thread) = Writer::start(&store, Mode::Thread).expect("start");
        for i in 0..3 {
            writer
                .write(move |s| put(s, &format!("alone-{i}")))
                .await
                .expect("write");
        }
        assert_eq!(writer.counts(), (3, 3));
        assert!(has_config_row(&store, "alone-2"));
    }

    #[tokio::test(flavor = "current_thread")]
    async fn errors_and_slow_jobs_come_back() {
        let (_dir, store) = temp_store();
        let (writer, _thread) = Writer::start(&store, Mode::Thread).expect("start");
        let err = writer
            .run(|_| -> Result<()> { Err(Error::Internal("boom".into())) })
            .await
            .expect_err("an error");
        assert!(err.to_string().contains("boom"));
        // The task sleeps until the thread answers.
        let v = writer
            .run(|_| {
                std::thread::sleep(Duration::from_millis(20));
                Ok(7)
            })
            .await
            .expect("slow job");
        assert_eq!(v, 7);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn closing_finishes_accepted_jobs_and_refuses_new_ones() {
        let (_dir, store) = temp_store();
        let (writer, thread) = Writer::start(&store, Mode::Thread).expect("start");
        let done = Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        // A job still running when shutdown starts (a handle stays alive, as
        // a request task may hold one).
        let slow = writer.clone();
        let running = tokio::spawn(async move {
            slow.run(move |_| {
                std::thread::sleep(Duration::from_millis(50));
                flag.store(true, Ordering::Release);
                Ok(())
            })
            .await
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(thread.close_within(Duration::from_secs(5)).await, "the thread ended");
        assert!(done.load(Ordering::Acquire), "the accepted job ran to the end");
        running.await.expect("task").expect("its answer arrived");
        let err = writer.run(|_| Ok(())).await.expect_err("refused after close");
        assert!(matches!(err, Error::ShuttingDown), "{err}");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn writes_never_wait_for_the_shared_pool() {
        use crate::domain::NewSession;
        let dir = tempfile::tempdir().expect("dir");
        let opts = crate::store::OpenOptionsStore {
            pool_size: Some(2),
            ..Default::default()
        };
        let store = Store::open(dir.path().join("t.db"), opts).expect("open");
        let (writer, _thread) = Writer::start(&store, Mode::Thread).expect("start");
        // Long reads hold every pooled connection.
        let held = (store.conn().expect("conn"), store.conn().expect("conn"));
        let session = writer
            .run(|s| s.create_session(NewSession::titled("written while the pool is busy")))
            .await
            .expect("write");
        drop(held);
        assert_eq!(
            store.session(&session.id).expect("read").title,
            "written while the pool is busy"
        );
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_panicking_job_fails_alone() {
        let (_dir, store) = temp_store();
        let (writer, _thread) = Writer::start(&store, Mode::Thread).expect("start");
        let err = writer
            .run(|_| -> Result<()> { panic!("bug in a write") })
            .await
            .expect_err("the panic is an error");
        assert!(err.to_string().contains("failed unexpectedly"), "{err}");
        assert_eq!(writer.run(|_| Ok(1)).await.expect("still serving"), 1);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn the_runtime_keeps_serving_while_a_job_waits() {
        let (_dir, store) = temp_store();
        let (writer, _thread) = Writer::start(&store, Mode::Thread).expect("start");
        // The job waits for a task of the runtime to finish: were the
        // runtime blocked while the job is in flight, it would wait in vain
        // (a wait for the other side, not for a time, so that a loaded
        // machine cannot fail it).
        let (done, finished) = std::sync::mpsc::channel();
        let ticker = tokio::spawn(async move {
            let mut ticks = 0;
            for _ in 0..5 {
                tokio::time::sleep(Duration::from_millis(5)).await;
                ticks += 1;
            }
            let _ = done.send(());
            ticks
        });
        let ran = writer
            .run(move |_| Ok(finished.recv_timeout(Duration::from_secs(60)).is_ok()))
            .await
            .expect("job");
        assert!(ran, "other tasks ran while the job was in flight");
        assert_eq!(ticker.await.expect("ticker"), 5);
    }

    fn written(store: &Store, key: &str) -> bool {
        has_config_row(store, key)
    }

    /// With the writer idle, a write runs on the caller's thread, as its
    /// own commit; one that fails or panics is answered with an error, and
    /// the next one works.
    #[tokio::test(flavor = "current_thread")]
    async fn inline_writes_run_here_when_the_writer_is_idle() {
        let (_dir, store) = temp_store();
        let (writer, thread) = Writer::start(&store, Mode::Inline).expect("start");
        let here = std::thread::current().id();
        for i in 0..3 {
            let ran_on = writer
                .write_short(move |s| put(s, &format!("inline-{i}")).map(|()| std::thread::current().id()))
                .await
                .expect("write");
            assert_eq!(ran_on, here, "write {i} went to the thread");
        }
        assert_eq!(writer.counts(), (3, 3));
        assert_eq!(writer.jobs_sent_so_far(), 0);
        let duplicate = writer.write_short(|s| put(s, "inline-0")).await;
        assert!(duplicate.is_err(), "a duplicate key is refused");
        let panicked = writer
            .write_short(|_| -> Result<()> { panic!("a bug in an inline write") })
            .await
            .expect_err("a panic is an error");
        assert!(panicked.to_string().contains("unexpectedly"), "{panicked}");
        writer.write_short(|s| put(s, "after")).await.expect("the next write");
        assert!(written(&store, "inline-2") && written(&store, "after"));
        assert!(thread.close_within(Duration::from_secs(5)).await, "not closed");
        let err = writer
            .write_short(|s| put(s, "late"))
            .await
            .expect_err("refused after close");
        assert!(matches!(err, Error::ShuttingDown), "{err}");
    }

    /// A write never overtakes a job queued before it, nor runs while the
    /// thread runs one: it goes to the thread, in order.
    #[tokio::test(flavor = "current_thread")]
    async fn inline_writes_keep_their_place_behind_queued_jobs() {
        let (_dir, store) = temp_store();
        let (writer, _thread) = Writer::start(&store, Mode::Inline).expect("start");
        let here = std::thread::current().id();
        let (release, held) = hold(&writer).await;
        let order = Arc::new(Mutex::new(Vec::new()));
        let (o1, w1) = (order.clone(), writer.clone());
        let queued = tokio::spawn(async move {
            w1.run(move |_| {
                note_turn(&o1, "queued job");
                Ok(())
            })
            .await
        });
        while writer.jobs_sent_so_far() < 2 {
            tokio::task::yield_now().await;
        }
        let (o2, w2) = (order.clone(), writer.clone());
        let write = tokio::spawn(async move {
            w2.write_short(move |s| {
                put(s, "behind")?;
                note_turn(&o2, "write");
                Ok(std::thread::current().id())
            })
            .await
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!write.is_finished(), "the write ran while the thread held a job");
        release.send(()).expect("release");
        held.await.expect("task").expect("holding job");
        queued.await.expect("task").expect("queued job");
        let ran_on = write.await.expect("task").expect("write");
        assert_ne!(ran_on, here, "the write ran here, out of its turn");
        assert_eq!(*order.lock().expect("order"), ["queued job", "write"]);
        assert!(written(&store, "behind"));
    }

    fn note_turn(order: &Mutex<Vec<&'static str>>, what: &'static str) {
        order.lock().expect("order").push(what);
    }

    /// While another program holds the write lock, a write does not wait
    /// for it on the caller's thread: the runtime goes on, and the thread
    /// writes once the lock is free.
    #[tokio::test(flavor = "current_thread")]
    async fn an_inline_write_never_waits_for_another_programs_lock() {
        let (_dir, store) = temp_store();
        let (writer, _thread) = Writer::start(&store, Mode::Inline).expect("start");
        let other = store.dedicated().expect("another connection");
        let conn = other.conn().expect("conn");
        conn.execute_batch("BEGIN IMMEDIATE").expect("lock");
        let w = writer.clone();
        let started = Instant::now();
        let write = tokio::spawn(async move { w.write_short(|s| put(s, "after-the-lock")).await });
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "the runtime was held while the lock was taken"
        );
        assert!(!write.is_finished(), "written through another program's lock");
        conn.execute_batch("COMMIT").expect("unlock");
        write.await.expect("task").expect("written once the lock was free");
        assert!(written(&store, "after-the-lock"));
        assert_eq!(writer.jobs_sent_so_far(), 1, "the write went to the thread");
    }
}
