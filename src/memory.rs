//! Giving freed memory back to the system once heavy work is over.
//!
//! glibc's allocator keeps what a thread frees in that thread's arena for
//! the thread's next allocations. A server answers a whole-session
//! analysis, an export or a long read on one of its blocking threads, and
//! each thread's arena kept the peak of the largest such work it ever did:
//! a soak test's server grew to 267 MiB in four arenas and stayed there,
//! idle, though it used 20 MiB (soak test 21; `malloc_trim` through a
//! debugger brought it back to 21 MiB). So after such work, once no more
//! has come for [`QUIET`], the free pages of every arena are returned
//! ([`release_freed`]). Other allocators (musl's, macOS's) return memory
//! by themselves; there this does nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// How long after the last heavy work the memory is returned: a burst of
/// exports or analyses is trimmed once, after it.
pub const QUIET: Duration = Duration::from_secs(1);

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
}

impl Release {
    /// Note that heavy work ended (or made a large answer).
    pub fn heavy_work_done(&self) {
        self.heavy.fetch_add(1, Ordering::Release);
        self.notify.notify_one();
    }

    /// Run until the runtime stops: after heavy work, once [`QUIET`] has
    /// passed without more, return the freed memory (on the blocking pool:
    /// it walks every arena).
    pub fn spawn(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let this = self.clone();
        tokio::spawn(async move {
            loop {
                this.notify.notified().await;
                loop {
                    let seen = this.heavy.load(Ordering::Acquire);
                    tokio::time::sleep(QUIET).await;
                    if this.heavy.load(Ordering::Acquire) == seen {
                        break;
                    }
                }
                let trimmed = tokio::task::spawn_blocking(|| {
                    let started = Instant::now();
                    release_freed();
                    started.elapsed()
                })
                .await;
                if let Ok(took) = trimmed {
                    tracing::debug!(?took, "returned the memory freed by heavy work to the system");
                }
            }
        })
    }
}
