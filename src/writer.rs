//! The ledger writer: one dedicated OS thread that runs every write of the
//! server (thought appends, session and knowledge changes, full-text index
//! batches, the checkpoint that lets the WAL start over) one after another,
//! off the async runtime. One writer per process means these never wait for
//! each other's locks.
//!
//! Handing work to a sleeping thread and being woken when it is done costs
//! two cross-CPU wake-ups; on a virtual machine each one is tens of
//! microseconds, as much as the append itself. So both sides wait actively,
//! for a bounded time, before they sleep:
//!
//! - the writer thread polls its queue for [`WRITER_SPIN`] after each job,
//!   so a burst of thoughts finds it awake, then blocks on the channel;
//! - the request task checks for its answer between `yield_now`s for
//!   [`WAITER_SPIN`] (the runtime keeps serving other tasks and I/O
//!   meanwhile), then awaits the answer like any future.
//!
//! Polling pays only while the other side runs on another CPU. When the
//! CPUs are busy (a build, other tenants of the machine) the poller may
//! hold the very CPU the other side waits for, until its time slice ends:
//! with one CPU-bound program beside it on two CPUs, a server that always
//! polled recorded 756-1,100 thoughts/s with a p99 of 4.4 ms, against
//! 13,000/s and 0.2 ms without polling (BENCHMARKS.md). So each side polls
//! only while polling works ([`Backoff`]): a wait that outlasts its window
//! makes that side sleep straight away for the next 1, 2, 4 ... 256 waits,
//! and a wait that ends within it starts over. With one CPU (an affinity
//! mask, a container's quota) neither side polls.
//!
//! A write that waits for another process's lock (busy_timeout) therefore
//! never stalls the protocol thread.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use crate::error::{Error, Result};
use crate::store::Store;

/// How long the writer thread stays awake for the next job.
const WRITER_SPIN: Duration = Duration::from_millis(1);
/// How long a request task polls for its answer before it sleeps on it.
const WAITER_SPIN: Duration = Duration::from_millis(1);

/// Whether this process may run on two CPUs or more (its affinity mask and
/// cgroup CPU quota allowing). On one, polling can only hold up the side it
/// waits for: a thought took 2.2 ms (450/s) there when both sides polled.
fn several_cpus() -> bool {
    std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2)
}

/// The longest run of waits one side sleeps through without polling after
/// polling kept failing: a failed poll can cost a time slice, so on busy
/// CPUs the polls tried between runs must stay rarer than one wait in a
/// hundred for the p99 not to show them.
const MAX_SKIP: u32 = 256;

/// Whether one side of the handoff polls, learnt from how polling went.
/// Shared by the request tasks (relaxed atomics: a hint, not a lock).
///
/// A few failed polls happen anyway (a long job, a checkpoint, the odd
/// time slice lost); they cost a little each and say nothing. Only when
/// more than about one poll in five fails does this side stop polling:
/// each failure adds [`FAILURE_COST`] to a debt that each success pays
/// down by one, and a debt of [`DEBT_LIMIT`] starts a run of waits slept
/// through without polling (1, 2, 4 ... [`MAX_SKIP`] as runs follow
/// each other).
#[derive(Debug, Default)]
struct Backoff {
    /// Waits left to sleep through without polling.
    skip: AtomicU32,
    debt: AtomicU32,
    /// The length of the last such run (0 once polling works again).
    run: AtomicU32,
}

const FAILURE_COST: u32 = 4;
const DEBT_LIMIT: u32 = 16;

impl Backoff {
    /// Whether to poll for this wait.
    fn poll_now(&self) -> bool {
        let skip = self.skip.load(Ordering::Relaxed);
        if skip == 0 {
            return true;
        }
        self.skip.store(skip - 1, Ordering::Relaxed);
        false
    }

    /// Polling got what it waited for.
    fn worked(&self) {
        let debt = self.debt.load(Ordering::Relaxed).saturating_sub(1);
        self.debt.store(debt, Ordering::Relaxed);
        if debt == 0 {
            self.run.store(0, Ordering::Relaxed);
        }
    }

    /// Polling ran out its window.
    fn failed(&self) {
        let debt = self.debt.load(Ordering::Relaxed) + FAILURE_COST;
        if debt < DEBT_LIMIT {
            self.debt.store(debt, Ordering::Relaxed);
            return;
        }
        // Half the debt stays: failing again soon after the run starts a
        // longer one.
        self.debt.store(DEBT_LIMIT / 2, Ordering::Relaxed);
        let run = (self.run.load(Ordering::Relaxed) * 2).clamp(1, MAX_SKIP);
        self.run.store(run, Ordering::Relaxed);
        self.skip.store(run, Ordering::Relaxed);
    }
}

type Job = Box<dyn FnOnce(&Store) + Send>;

/// Handle to the writer thread, for sending it jobs.
#[derive(Clone)]
pub struct Writer {
    jobs: Sender<Job>,
    closed: Arc<AtomicBool>,
    /// How long a request polls for its answer ([`WAITER_SPIN`], or zero
    /// on one CPU).
    spin: Duration,
    /// Whether requests poll at all, lately.
    polling: Arc<Backoff>,
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
        let _ = self.wake.send(Box::new(|_| {}));
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
    pub fn start(store: &Store) -> Result<(Writer, WriterThread)> {
        Writer::start_polling(store, several_cpus())
    }

    /// [`Writer::start`], with both sides polling before they sleep or not.
    fn start_polling(store: &Store, polling: bool) -> Result<(Writer, WriterThread)> {
        let (writer_spin, spin) = if polling {
            (WRITER_SPIN, WAITER_SPIN)
        } else {
            (Duration::ZERO, Duration::ZERO)
        };
        let store = store.dedicated()?;
        let (jobs, queue) = mpsc::channel::<Job>();
        let closed = Arc::new(AtomicBool::new(false));
        let flag = closed.clone();
        let handle = std::thread::Builder::new()
            .name("ledger-writer".into())
            .spawn(move || serve(&store, &queue, &flag, writer_spin))
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
                spin,
                polling: Arc::default(),
            },
            thread,
        ))
    }

    /// Run `f` on the writer thread and wait for its result. Jobs run one
    /// at a time, in the order they were sent.
    pub async fn run<T: Send + 'static>(&self, f: impl FnOnce(&Store) -> Result<T> + Send + 'static) -> Result<T> {
        let (tx, mut rx) = oneshot::channel();
        let job: Job = Box::new(move |store| {
            // The receiver is gone only when the request was cancelled.
            let _ = tx.send(f(store));
        });
        let stopped = || Error::Internal("the server is shutting down; nothing was written".into());
        if self.closed.load(Ordering::Acquire) {
            return Err(stopped());
        }
        self.jobs.send(job).map_err(|_| stopped())?;
        // The answer's sender is dropped unused only if the job panicked.
        let failed = || Error::Internal("the write failed unexpectedly (see the server log)".into());
        if !self.spin.is_zero() && self.polling.poll_now() {
            let start = Instant::now();
            loop {
                match rx.try_recv() {
                    Ok(result) => {
                        self.polling.worked();
                        return result;
                    }
                    Err(oneshot::error::TryRecvError::Closed) => return Err(failed()),
                    Err(oneshot::error::TryRecvError::Empty) => {}
                }
                if start.elapsed() >= self.spin {
                    self.polling.failed();
                    break;
                }
                tokio::task::yield_now().await;
            }
        }
        rx.await.map_err(|_| failed())?
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

/// Run one job; a panic fails that job (its caller gets an error) and
/// leaves the thread serving the next.
fn run_job(store: &Store, job: Job) {
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(store))).is_err() {
        tracing::error!("a write on the ledger writer thread panicked; its transaction was rolled back");
    }
}

/// The thread's loop: run jobs until the queue is empty after
/// [`WriterThread::close_within`], or every handle is gone. After each job
/// it polls for the next for `spin` (see [`Backoff`]).
fn serve(store: &Store, queue: &Receiver<Job>, closed: &AtomicBool, spin: Duration) {
    let polling = Backoff::default();
    // When polling last ran out its window.
    let mut gave_up: Option<Instant> = None;
    // Asleep until a job arrives.
    while let Ok(job) = queue.recv() {
        // A job that comes right after polling gave up was on its way: the
        // other side ran late, which is what busy CPUs do (and polling may
        // have held up). One that comes after a pause ends a quiet spell,
        // which says nothing about polling.
        if gave_up.take().is_some_and(|at| at.elapsed() < 2 * spin) {
            polling.failed();
        }
        run_job(store, job);
        if closed.load(Ordering::Acquire) {
            // What was accepted before the close is still done.
            while let Ok(job) = queue.try_recv() {
                run_job(store, job);
            }
            return;
        }
        if spin.is_zero() || !polling.poll_now() {
            continue;
        }
        // Awake for the rest of a burst.
        let mut idle_since = Instant::now();
        loop {
            match queue.try_recv() {
                Ok(job) => {
                    polling.worked();
                    run_job(store, job);
                    idle_since = Instant::now();
                }
                Err(TryRecvError::Disconnected) => return,
                Err(TryRecvError::Empty) if closed.load(Ordering::Acquire) => return,
                Err(TryRecvError::Empty) if idle_since.elapsed() >= spin => {
                    gave_up = Some(Instant::now());
                    break;
                }
                Err(TryRecvError::Empty) => std::hint::spin_loop(),
            }
        }
        if closed.load(Ordering::Acquire) {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::test_support::temp_store;

    /// Both ways of waiting: polling (two CPUs or more) and sleeping (one).
    #[tokio::test(flavor = "current_thread")]
    async fn runs_jobs_in_order_on_its_own_thread() {
        for polling in [true, false] {
            let (_dir, store) = temp_store();
            let (writer, thread) = Writer::start_polling(&store, polling).expect("start");
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
            assert!(
                thread.close_within(Duration::from_secs(5)).await,
                "polling {polling}: not closed"
            );
        }
    }

    /// The odd failed poll changes nothing; failures in a row stop polling
    /// for runs of 1, 2, 4 ... waits; polls that work again end that.
    #[test]
    fn polling_stops_only_while_it_keeps_failing() {
        let b = Backoff::default();
        let polls = |b: &Backoff, n: usize| (0..n).filter(|_| b.poll_now()).count();
        // One failure in eight (a long job now and then): polling goes on.
        for _ in 0..100 {
            b.failed();
            for _ in 0..7 {
                assert!(b.poll_now());
                b.worked();
            }
        }
        // Failing every time: runs without polling, each twice as long.
        let mut runs = Vec::new();
        for _ in 0..40 {
            if b.poll_now() {
                b.failed();
                let run = b.skip.load(Ordering::Relaxed);
                if run > 0 {
                    runs.push(run);
                }
            }
        }
        assert_eq!(runs[..4], [1, 2, 4, 8], "{runs:?}");
        assert!(runs.iter().all(|&r| r <= MAX_SKIP));
        // Working again: once the run ends, polling resumes for good.
        let left = b.skip.load(Ordering::Relaxed) as usize;
        assert_eq!(polls(&b, left), 0);
        for _ in 0..DEBT_LIMIT {
            assert!(b.poll_now());
            b.worked();
        }
        b.failed();
        assert!(b.poll_now(), "one failure after a clean run stops nothing");
    }

    /// A search whose client gave up stops indexing between two batches
    /// (review 9-c: a cancelled search over a backlog of a million thoughts
    /// indexed on for 10 s); what is left is indexed later.
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
        let (writer, _thread) = Writer::start(&store).expect("start");
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

    #[tokio::test(flavor = "current_thread")]
    async fn errors_and_slow_jobs_come_back() {
        let (_dir, store) = temp_store();
        let (writer, _thread) = Writer::start(&store).expect("start");
        let err = writer
            .run(|_| -> Result<()> { Err(Error::Internal("boom".into())) })
            .await
            .expect_err("an error");
        assert!(err.to_string().contains("boom"));
        // Longer than both spins: the task sleeps and is woken.
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
        for polling in [true, false] {
            closing_finishes_accepted_jobs(polling).await;
        }
    }

    async fn closing_finishes_accepted_jobs(polling: bool) {
        let (_dir, store) = temp_store();
        let (writer, thread) = Writer::start_polling(&store, polling).expect("start");
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
        assert!(err.to_string().contains("shutting down"), "{err}");
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
        let (writer, _thread) = Writer::start(&store).expect("start");
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
        let (writer, _thread) = Writer::start(&store).expect("start");
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
        let (writer, _thread) = Writer::start(&store).expect("start");
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
}
