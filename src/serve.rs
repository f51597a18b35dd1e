//! Running the MCP server on stdio, with background upkeep of the database
//! and a clean shutdown on stdin EOF, SIGINT or SIGTERM.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use tokio::sync::{Notify, watch};

use crate::error::{Error, Result};
use crate::events::EventTarget;
use crate::gateway::Gateway;
use crate::store::Store;

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

/// Indexing is deferred until writes pause for this long...
const INDEX_QUIET: Duration = Duration::from_millis(50);
/// ...but never for longer than this under a steady stream of writes.
const INDEX_MAX_DELAY: Duration = Duration::from_secs(5);
/// Rows indexed per transaction, so that an append waits at most one batch.
const INDEX_BATCH: i64 = 128;
/// After this long without writes the WAL is checkpointed into the database
/// file, so that copying the file of an idle server gives the whole ledger.
const CHECKPOINT_QUIET: Duration = Duration::from_secs(1);

/// Background upkeep after writes: full-text indexing and WAL checkpoints.
pub struct Maintenance {
    writes: Arc<Notify>,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

async fn blocking<T: Send + 'static>(store: &Store, f: impl FnOnce(&Store) -> Result<T> + Send + 'static) -> Result<T> {
    let store = store.clone();
    tokio::task::spawn_blocking(move || f(&store))
        .await
        .map_err(|e| Error::Internal(e.to_string()))?
}

impl Maintenance {
    pub fn start(store: Store) -> Maintenance {
        let writes = Arc::new(Notify::new());
        let (stop, mut stopped) = watch::channel(false);
        let w = writes.clone();
        let task = tokio::spawn(async move {
            'outer: loop {
                tokio::select! {
                    _ = w.notified() => {}
                    _ = stopped.changed() => break,
                }
                let first = Instant::now();
                loop {
                    tokio::select! {
                        _ = tokio::time::sleep(INDEX_QUIET) => break,
                        _ = w.notified() => if first.elapsed() > INDEX_MAX_DELAY { break },
                        _ = stopped.changed() => break 'outer,
                    }
                }
                loop {
                    match blocking(&store, |s| s.index_pending(INDEX_BATCH)).await {
                        Ok(0) => break,
                        Ok(_) => tokio::task::yield_now().await,
                        Err(e) => {
                            tracing::warn!("full-text indexing failed: {e}");
                            break;
                        }
                    }
                }
                tokio::select! {
                    _ = tokio::time::sleep(CHECKPOINT_QUIET) => {
                        if let Err(e) = blocking(&store, |s| s.checkpoint()).await {
                            tracing::warn!("checkpoint failed: {e}");
                        }
                    }
                    // More writes: the permit stays stored, so the loop starts over.
                    _ = w.notified() => w.notify_one(),
                    _ = stopped.changed() => break,
                }
            }
            if let Err(e) = blocking(&store, |s| s.index_all_pending().map(|_| ())).await {
                tracing::warn!("full-text indexing at shutdown failed: {e}");
            }
        });
        Maintenance { writes, stop, task }
    }

    /// A handle the gateway pokes after every write.
    pub fn writes(&self) -> Arc<Notify> {
        self.writes.clone()
    }

    /// Finish pending upkeep and stop.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        if let Err(e) = self.task.await {
            tracing::warn!("maintenance task ended badly: {e}");
        }
    }
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match (signal(SignalKind::interrupt()), signal(SignalKind::terminate())) {
            (Ok(mut int), Ok(mut term)) => {
                tokio::select! {
                    _ = int.recv() => {}
                    _ = term.recv() => {}
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

/// Serve MCP on stdin/stdout until the client closes stdin or a signal
/// arrives, then index, checkpoint and close the database so that the
/// database file alone holds the whole ledger.
pub fn run_stdio(store: Store, options: ServeOptions) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(8)
        .enable_all()
        .build()
        .map_err(|e| Error::io("starting the async runtime", e))?;
    let result = runtime.block_on(async move {
        tracing::info!(db = %store.path().display(), "thoughtbox serving MCP on stdio");
        let maintenance = Maintenance::start(store.clone());
        let gateway = Gateway::new(store.clone(), options, maintenance.writes());
        let served = async {
            let service = gateway
                .serve(rmcp::transport::stdio())
                .await
                .map_err(|e| Error::Internal(format!("MCP initialization failed: {e}")))?;
            let cancel = service.cancellation_token();
            let signals = tokio::spawn(async move {
                shutdown_signal().await;
                tracing::info!("signal received, shutting down");
                cancel.cancel();
            });
            let quit = service.waiting().await;
            signals.abort();
            tracing::info!(?quit, "MCP session ended");
            Ok::<(), Error>(())
        };
        let outcome = tokio::select! {
            r = served => r,
            // A signal before the client finished initializing.
            _ = shutdown_signal() => Ok(()),
        };
        maintenance.stop().await;
        let closed = tokio::task::spawn_blocking(move || {
            let r = store.checkpoint();
            drop(store);
            r
        })
        .await
        .map_err(|e| Error::Internal(e.to_string()))?;
        outcome.and(closed)
    });
    // stdin may still be held by a blocking read; do not wait for it.
    runtime.shutdown_timeout(Duration::from_millis(100));
    result
}
