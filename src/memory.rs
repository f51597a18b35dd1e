//! Giving freed memory back to the system once heavy work is over.
//!
//! glibc's allocator keeps what a thread frees in that thread's arena for
//! the thread's next allocations. A server answers a whole-session
//! analysis, an export or a long read on one of its blocking threads, and
//! each thread's arena kept the peak of the largest such work it ever did:
//! a server driven by `benches/soak` grew to 267 MiB in four arenas and stayed
//! there, idle, though it used 20 MiB (`malloc_trim` through a debugger
//! brought it back to 21 MiB). So after such work, once no more has come for
//! [`QUIET`], the free pages of every arena are returned ([`release_freed`]).
//! Other allocators (musl's, macOS's) return memory by themselves; there this
//! does nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// How long after the last heavy work the memory is returned: a burst of
/// exports or analyses is trimmed once, after it.
pub const QUIET: Duration = Duration::from_secs(1);

/// ...or at the latest this long after heavy work began, for a client
/// whose heavy reads come less than [`QUIET`] apart for minutes (a soak
/// test's reads came every 0.95 s, and its server held 124-169 MiB for up
/// to 30 s at a time). A trim of that much takes milliseconds.
pub const MAX_DELAY: Duration = Duration::from_secs(10);

/// An answer this long (bytes of JSON) counts as heavy work: building and
/// sending it took several times that.
pub const LARGE_ANSWER: usize = 1 << 20;

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod glibc {
    unsafe extern "C" {
        /// malloc_trim(3): return the free memory at the top of the main
        /// arena, and the free whole pages inside every arena, to the
        /// system. Takes each arena's lock in turn; no precondition.
        pub safe fn malloc_trim(pad: usize) -> std::ffi::c_int;
        /// mallopt(3): set one of the allocator's parameters.
        pub safe fn mallopt(param: std::ffi::c_int, value: std::ffi::c_int) -> std::ffi::c_int;
    }
    /// malloc.h's M_MMAP_THRESHOLD.
    pub const M_MMAP_THRESHOLD: std::ffi::c_int = -3;
}

/// Blocks of this many bytes or more get pages of their own, returned to
/// the system the moment they are freed.
pub const OWN_PAGES: usize = 1 << 20;

/// Serve large blocks (an answer of megabytes, a session's texts) from
/// pages of their own, at a fixed threshold: glibc otherwise raises its
/// threshold to the largest block freed so far (up to 32 MiB), after which
/// such blocks come from the arenas and stay there until a trim.
pub fn large_blocks_own_pages() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if glibc::mallopt(glibc::M_MMAP_THRESHOLD, OWN_PAGES as std::ffi::c_int) != 1 {
        tracing::debug!("the allocator kept its own threshold for large blocks");
    }
}

/// Return the allocator's free memory to the system (glibc); a no-op
/// elsewhere.
pub fn release_freed() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    glibc::malloc_trim(0);
}

/// Heavy work done, to be followed by [`release_freed`] once it stops.
#[derive(Debug, Default)]
pub struct Release {
    /// How many times heavy work was reported.
    heavy: AtomicU64,
    notify: Notify,
    /// How many times the memory was returned.
    trims: AtomicU64,
}

impl Release {
    /// Note that heavy work ended (or made a large answer).
    pub fn heavy_work_done(&self) {
        self.heavy.fetch_add(1, Ordering::Release);
        self.notify.notify_one();
    }

    /// Heavy work, noted as done when the guard is dropped: when it
    /// returns, and when a cancelled call drops it half-way.
    pub fn heavy_work(&self) -> HeavyWork<'_> {
        HeavyWork(self)
    }

    /// Run until the runtime stops: after heavy work, once [`QUIET`] has
    /// passed without more, return the freed memory (on the blocking pool:
    /// it walks every arena).
    pub fn spawn(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let this = self.clone();
        tokio::spawn(async move {
            // The count of heavy work at the last trim: a wake-up left by
            // work that trim came after (the notification is kept while the
            // task sleeps) trims nothing new.
            let mut trimmed_after = 0;
            loop {
                this.notify.notified().await;
                let began = tokio::time::Instant::now();
                loop {
                    let seen = this.heavy.load(Ordering::Acquire);
                    tokio::time::sleep(QUIET).await;
                    if this.heavy.load(Ordering::Acquire) == seen || began.elapsed() >= MAX_DELAY {
                        break;
                    }
                }
                let done = this.heavy.load(Ordering::Acquire);
                if done == trimmed_after {
                    continue;
                }
                trimmed_after = done;
                let trimmed = tokio::task::spawn_blocking(|| {
                    let started = Instant::now();
                    release_freed();
                    started.elapsed()
                })
                .await;
                this.trims.fetch_add(1, Ordering::Release);
                if let Ok(took) = trimmed {
                    tracing::debug!(?took, "returned the memory freed by heavy work to the system");
                }
            }
        })
    }
}

/// See [`Release::heavy_work`].
pub struct HeavyWork<'a>(&'a Release);

impl Drop for HeavyWork<'_> {
    fn drop(&mut self) {
        self.0.heavy_work_done();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn trims_after(release: &Arc<Release>, wait: Duration) -> u64 {
        tokio::time::sleep(wait).await;
        release.trims.load(Ordering::Acquire)
    }

    /// A burst of heavy work is followed by one trim, once it has stopped
    /// for QUIET; a wake-up it left behind trims nothing more.
    #[tokio::test(start_paused = true)]
    async fn a_burst_is_trimmed_once_after_it() {
        let release = Arc::new(Release::default());
        let task = release.spawn();
        for _ in 0..5 {
            release.heavy_work_done();
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        assert_eq!(release.trims.load(Ordering::Acquire), 0, "trimmed during the burst");
        assert_eq!(trims_after(&release, QUIET * 2).await, 1);
        assert_eq!(trims_after(&release, QUIET * 5).await, 1);
        // A cancelled call's guard counts as work done.
        drop(release.heavy_work());
        assert_eq!(trims_after(&release, QUIET * 3).await, 2);
        task.abort();
    }

    /// Heavy work that never pauses for QUIET is trimmed all the same,
    /// every MAX_DELAY (else one call each 700 ms would keep it from ever
    /// trimming).
    #[tokio::test(start_paused = true)]
    async fn work_that_never_pauses_is_trimmed_all_the_same() {
        let release = Arc::new(Release::default());
        let task = release.spawn();
        let started = tokio::time::Instant::now();
        while started.elapsed() < MAX_DELAY * 2 + QUIET * 3 {
            release.heavy_work_done();
            tokio::time::sleep(Duration::from_millis(700)).await;
        }
        let trims = release.trims.load(Ordering::Acquire);
        assert!(trims >= 2, "{trims}");
        task.abort();
    }
}
