//! That the server is stopping (a signal, stdin closed, stdout gone): one
//! value per server, handed to what must know, rather than a flag of the
//! process. The MCP library then cancels every request in flight, which is
//! the shutdown's doing, not a client's, and is handled as such; and a
//! wait for the client's answer ends, since it can no longer come.

use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::Notify;

#[derive(Debug, Default)]
pub struct Shutdown {
    begun: AtomicBool,
    notify: Notify,
}

impl Shutdown {
    /// Note that the server is stopping.
    pub fn begin(&self) {
        self.begun.store(true, Ordering::Relaxed);
        self.notify.notify_waiters();
    }

    /// Whether the server is stopping.
    pub fn begun(&self) -> bool {
        self.begun.load(Ordering::Relaxed)
    }

    /// Resolves once the server is stopping (at once if it already is).
    pub async fn wait(&self) {
        let notified = self.notify.notified();
        tokio::pin!(notified);
        // Registered before the flag is read, so a shutdown in between is seen.
        notified.as_mut().enable();
        if self.begun() {
            return;
        }
        notified.await;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[tokio::test]
    async fn a_wait_ends_when_the_shutdown_begins_or_at_once_after() {
        let shutdown = Arc::new(Shutdown::default());
        assert!(!shutdown.begun());
        let waiting = tokio::spawn({
            let shutdown = shutdown.clone();
            async move { shutdown.wait().await }
        });
        tokio::task::yield_now().await;
        shutdown.begin();
        waiting.await.unwrap();
        assert!(shutdown.begun());
        shutdown.wait().await;
    }
}
