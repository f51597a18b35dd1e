//! The ledger writer: one dedicated OS thread that runs every write of the
//! server (thought appends, session and knowledge changes, full-text index
//! batches, the checkpoint that lets the WAL start over) one after another,
//! off the async runtime. One writer per process means these never wait for
//! each other's locks.
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

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use crate::error::{Error, Result};
use crate::store::Store;

type Job = Box<dyn FnOnce(&Store) + Send>;

/// Handle to the writer thread, for sending it jobs.
#[derive(Clone)]
pub struct Writer {
    jobs: Sender<Job>,
    closed: Arc<AtomicBool>,
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
        let store = store.dedicated()?;
        let (jobs, queue) = mpsc::channel::<Job>();
        let closed = Arc::new(AtomicBool::new(false));
        let flag = closed.clone();
        let handle = std::thread::Builder::new()
            .name("ledger-writer".into())
            .spawn(move || serve(&store, &queue, &flag))
            .map_err(|e| Error::io("starting the writer thread", e))?;
        let thread = WriterThread {
            handle,
            closed: closed.clone(),
            wake: jobs.clone(),
        };
        Ok((Writer { jobs, closed }, thread))
    }

    /// Run `f` on the writer thread and wait for its result. Jobs run one
    /// at a time, in the order they were sent.
    pub async fn run<T: Send + 'static>(&self, f: impl FnOnce(&Store) -> Result<T> + Send + 'static) -> Result<T> {
        let (tx, rx) = oneshot::channel();
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
        rx.await
            .map_err(|_| Error::Internal("the write failed unexpectedly (see the server log)".into()))?
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

/// The thread's loop: asleep on the queue until a job comes; runs jobs
/// until the queue is empty after [`WriterThread::close_within`], or every
/// handle is gone.
fn serve(store: &Store, queue: &Receiver<Job>, closed: &AtomicBool) {
    while let Ok(job) = queue.recv() {
        run_job(store, job);
        if closed.load(Ordering::Acquire) {
            // What was accepted before the close is still done.
            while let Ok(job) = queue.try_recv() {
                run_job(store, job);
            }
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::test_support::temp_store;

    #[tokio::test(flavor = "current_thread")]
    async fn runs_jobs_in_order_on_its_own_thread() {
        let (_dir, store) = temp_store();
        let (writer, thread) = Writer::start(&store).expect("start");
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
        let (writer, thread) = Writer::start(&store).expect("start");
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
